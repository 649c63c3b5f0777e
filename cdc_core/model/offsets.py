"""Binlog offsets: a position in the source's change history, with a total order.

Conventions every module relies on:

* An offset is ``(file, position)`` where ``position`` is the byte offset **just after** an
  event (what the server reports as ``end_log_pos`` and what ``SHOW MASTER STATUS`` returns).
  A low or high watermark is therefore the end of the last event before it, and an event
  belongs *after* a watermark iff its end position is greater: ``event.offset > hw``.
* The order is by file index (the numeric suffix of ``binlog.000042``), then position. Across
  a rotation the next file starts over at a small position but sorts after the previous file.
* ``gtid_set`` is carried along (for GTID resume and for humans) but not ordered: on one
  server, file and position are a total order already.
* ``sequence`` maps an offset onto one integer that grows with it — file index × 2³² +
  position — which is what Doris's sequence column receives, so a late or replayed load can
  never overwrite a newer row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache, total_ordering
from typing import Any

_FILE_INDEX = re.compile(r"\.(\d+)$")


@lru_cache(maxsize=1024)  # a pure function of the name, asked for every event the stream reads
def file_index(filename: str) -> int:
    match = _FILE_INDEX.search(filename)
    if not match:
        raise ValueError(f"binlog file name {filename!r} has no numeric suffix (expected like 'binlog.000001')")
    return int(match.group(1))


@total_ordering
@dataclass(frozen=True)
class BinlogOffset:
    """A resumable position in the binlog: ``file`` and the byte ``position`` after an event."""

    file: str
    position: int
    gtid_set: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.position < 0:
            raise ValueError(f"binlog position must be ≥ 0, got {self.position}")
        file_index(self.file)

    @property
    def file_index(self) -> int:
        return file_index(self.file)

    def _key(self) -> tuple[int, int]:
        return (self.file_index, self.position)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinlogOffset):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: BinlogOffset) -> bool:
        if not isinstance(other, BinlogOffset):
            return NotImplemented
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @property
    def sequence(self) -> int:
        """One integer that orders offsets: file index × 2³² + position (fits Doris BIGINT)."""
        return (self.file_index << 32) + self.position

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "position": self.position}
        if self.gtid_set:
            out["gtid_set"] = self.gtid_set
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BinlogOffset:
        return cls(str(data["file"]), int(data["position"]), data.get("gtid_set"))

    def __str__(self) -> str:
        return f"{self.file}:{self.position}" + (f" [{self.gtid_set}]" if self.gtid_set else "")
