"""Binlog offsets: a position in the source's change history, with a total order.

Conventions every module relies on:

* An offset is ``(file, position)`` where ``position`` is the byte offset **just after** an
  event (what the server reports as ``end_log_pos`` and what ``SHOW MASTER STATUS`` returns).
  A low or high watermark is therefore the end of the last event before it, and an event
  belongs *after* a watermark iff its end position is greater: ``event.offset > hw``.
* The order is by file index (the numeric suffix of ``binlog.000042``), then position. Across
  a rotation the next file starts over at a small position but sorts after the previous file.
* ``gtid_set`` is the GTID position after the last transaction before the offset (MariaDB's
  ``domain-server-seq`` list, MySQL's executed set): what a failover resumes from. It is not
  ordered: on one server, file and position are a total order already.
* ``server`` names the server the file and position belong to (``cdc_core/mysql/source_identity.py``);
  ``epoch`` counts the failovers the pipeline has followed. File positions of two servers cannot be
  compared, so the order is by epoch first: every offset on the server the pipeline failed over to
  sorts after every offset on the one before, whatever its files are numbered
  (``docs/mysql.md``, "Failover by GTID").
* ``sequence`` maps an offset onto one integer that grows with it — epoch × 2⁵² + file index ×
  2³² + position — which is what Doris's sequence column receives, so a late or replayed load
  can never overwrite a newer row, also across a failover to a server with lower-numbered files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache, total_ordering
from typing import Any

_FILE_INDEX = re.compile(r"\.(\d+)$")
EPOCH_SHIFT = 52  # the sequence's bits above the file index (< 2²⁰) and the position (< 2³²)
MAX_EPOCH = (1 << (63 - EPOCH_SHIFT)) - 1  # the sequence stays a positive Doris BIGINT


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
    epoch: int = 0
    server: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.position < 0:
            raise ValueError(f"binlog position must be ≥ 0, got {self.position}")
        if not 0 <= self.epoch <= MAX_EPOCH:
            raise ValueError(f"binlog offset epoch must be within 0..{MAX_EPOCH}, got {self.epoch}")
        index = file_index(self.file)
        if self.epoch and index >= 1 << (EPOCH_SHIFT - 32):
            raise ValueError(f"binlog file {self.file!r} is numbered beyond what an offset after a failover "
                             f"can order ({(1 << (EPOCH_SHIFT - 32)) - 1})")

    @property
    def file_index(self) -> int:
        return file_index(self.file)

    def _key(self) -> tuple[int, int, int]:
        return (self.epoch, self.file_index, self.position)

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
        """One integer that orders offsets: epoch × 2⁵² + file index × 2³² + position (fits Doris BIGINT)."""
        return (self.epoch << EPOCH_SHIFT) + (self.file_index << 32) + self.position

    def on_server(self, server: str | None, epoch: int) -> BinlogOffset:
        """The same place, stamped with the server it belongs to and the pipeline's epoch there."""
        return BinlogOffset(self.file, self.position, self.gtid_set, epoch, server)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"file": self.file, "position": self.position}
        if self.gtid_set:
            out["gtid_set"] = self.gtid_set
        if self.epoch:
            out["epoch"] = self.epoch
        if self.server:
            out["server"] = self.server
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BinlogOffset:
        return cls(str(data["file"]), int(data["position"]), data.get("gtid_set"), int(data.get("epoch") or 0),
                   data.get("server"))

    def __str__(self) -> str:
        return (f"{self.file}:{self.position}" + (f" [{self.gtid_set}]" if self.gtid_set else "")
                + (f" (epoch {self.epoch})" if self.epoch else ""))
