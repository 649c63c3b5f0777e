"""The release the stand-in says it is, as a Doris FE says it: ``GET /api/fe_version_info``.

By default a Doris 2.1 release, whose stream load reads ``format: arrow`` (the stand-in models the
protocol of 2.1 and later). ``--doris-version 2.0.15`` (or ``$DORIS_STANDIN_VERSION``) makes it an
older Doris: the FE reports that release and the BE refuses an ``arrow`` load as Doris 2.0 does
(``unknown data format``), so a client's JSON fallback can be tested.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

VERSION_ENV = "DORIS_STANDIN_VERSION"
DEFAULT_VERSION = "doris-2.1.7-rc03"
ARROW_SINCE = (2, 1)


@dataclass(frozen=True)
class StandInVersion:
    """``text`` as Doris's ``dorisBuildVersion`` (``doris-2.1.7-rc03``) and its numbers."""

    text: str
    major: int
    minor: int
    patch: int
    rc: str

    @classmethod
    def parse(cls, text: str) -> StandInVersion:
        match = re.fullmatch(r"(?:doris-)?(\d+)\.(\d+)\.(\d+)(?:-(\w+))?", text.strip())
        if match is None:
            raise ValueError(f"a Doris version is written 2.1.7 or doris-2.1.7-rc03, not {text!r}")
        major, minor, patch, rc = int(match[1]), int(match[2]), int(match[3]), match[4] or "rc01"
        return cls(f"doris-{major}.{minor}.{patch}-{rc}", major, minor, patch, rc)

    @property
    def reads_arrow(self) -> bool:
        return (self.major, self.minor) >= ARROW_SINCE

    def fe_version_info(self) -> dict[str, Any]:
        """The ``data`` of ``/api/fe_version_info``, field for field as Doris's FeVersionInfoAction."""
        return {"feVersionInfo": {
            "dorisBuildVersionPrefix": "doris",
            "dorisBuildVersionMajor": self.major,
            "dorisBuildVersionMinor": self.minor,
            "dorisBuildVersionPatch": self.patch,
            "dorisBuildVersionRcVersion": self.rc,
            "dorisBuildVersion": self.text,
            "dorisBuildHash": "git://standin@0000000000000000000000000000000000000000",
            "dorisBuildShortHash": "0000000",
            "dorisBuildTime": "Thu, 01 Jan 1970 00:00:00 UTC",
            "dorisBuildInfo": "devstack",
            "dorisJavaCompileVersion": "none: the stand-in is Python",
        }}
