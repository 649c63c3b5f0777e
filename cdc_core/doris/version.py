"""Which Doris a sink talks to, asked once per process: it decides the default stream-load format.

Doris reads a stream load in the ``arrow`` format (an Arrow IPC stream) from 2.1 on; an older
cluster refuses it. Arrow costs Tidemark less than JSON lines (no text per value; ~0.4-0.9 s of a
1M-row snapshot: docs/performance.md), so a load whose pipeline names no ``sink.properties.format``
travels as Arrow when the cluster is 2.1 or later and as JSON otherwise.

The FE says its version at ``GET /api/fe_version_info`` (Doris's "Fe Version Info Action"):
``{"code": 0, "data": {"feVersionInfo": {"dorisBuildVersionMajor": 2, "dorisBuildVersionMinor": 1,
"dorisBuildVersionPatch": 7, "dorisBuildVersion": "doris-2.1.7-rc03", ...}}}``. One HTTP request,
no SQL: it is asked once per process and FE list (:func:`cluster_version`), never per load, and a
Spark task or local worker gets the driver's answer in its spec (``jobs/specs.py:SinkSpec``).

An FE without that endpoint (older than the action) or a version it cannot tell (a build from
source reports ``doris-0.0.0-trunk``) counts as unknown, and unknown means JSON: the format every
Doris reads.
"""

from __future__ import annotations

import logging
import re
import threading
from dataclasses import dataclass
from typing import Any

from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.errors import DorisResponseError

log = logging.getLogger(__name__)

VERSION_PATH = "/api/fe_version_info"
ARROW_SINCE = (2, 1)
"""The first Doris release whose stream load reads ``format: arrow``."""

_TEXT = re.compile(r"(?:^|[^0-9])(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True, order=True)
class DorisVersion:
    """A Doris release, as the FE reports it (``text``: its ``dorisBuildVersion``)."""

    major: int
    minor: int
    patch: int = 0
    text: str = ""

    @property
    def reads_arrow(self) -> bool:
        """Whether its stream load takes ``format: arrow`` (Doris 2.1 and later)."""
        return (self.major, self.minor) >= ARROW_SINCE

    @classmethod
    def from_answer(cls, body: Any) -> DorisVersion | None:
        """From ``/api/fe_version_info``'s JSON; None when it names no release (0.0.0, a trunk build)."""
        data = body.get("data") if isinstance(body, dict) else None
        info = data.get("feVersionInfo") if isinstance(data, dict) else None
        if not isinstance(info, dict):
            return None
        text = str(info.get("dorisBuildVersion") or "")
        try:
            version = cls(int(info["dorisBuildVersionMajor"]), int(info["dorisBuildVersionMinor"]),
                          int(info.get("dorisBuildVersionPatch") or 0), text)
        except (KeyError, TypeError, ValueError):
            version = cls.parse(text)
        if version is None or (version.major, version.minor, version.patch) == (0, 0, 0):
            return None
        return version

    @classmethod
    def parse(cls, text: str) -> DorisVersion | None:
        """``doris-2.1.7-rc03`` (or ``2.1.7``) → 2.1.7; None without a version number."""
        match = _TEXT.search(text or "")
        if match is None:
            return None
        return cls(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0), text)


_CACHE: dict[tuple[str, tuple[str, ...]], DorisVersion | None] = {}
_LOCK = threading.Lock()


def cluster_version(client: DorisHttpClient) -> DorisVersion | None:
    """The version of the cluster behind ``client``'s FEs, asked once per process (None: unknown).

    An FE that does not know the endpoint (HTTP 404, or an answer without a version) is unknown;
    an FE that cannot be reached raises as every other request to it does."""
    key = (client.scheme, tuple(client.fenodes))
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    resp = client.request("GET", VERSION_PATH)
    version: DorisVersion | None = None
    if resp.status_code == 200:
        try:
            version = DorisVersion.from_answer(client.json_of(resp, VERSION_PATH))
        except DorisResponseError:  # not JSON: no version said
            version = None
    said = (version.text or f"{version.major}.{version.minor}.{version.patch}") if version is not None \
        else f"no version (HTTP {resp.status_code} from {VERSION_PATH})"
    log.info("Doris at %s reports %s", ",".join(client.fenodes), said)
    with _LOCK:
        _CACHE[key] = version
    return version


def forget_versions() -> None:
    """Ask again next time (a test that restarts its stand-in as another version)."""
    with _LOCK:
        _CACHE.clear()
