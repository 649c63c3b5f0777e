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


def read_current_offset(cursor: Any) -> BinlogOffset:
    """The server's current binlog end, by whichever statement the server understands.

    MySQL 8.4 dropped ``SHOW MASTER STATUS`` for ``SHOW BINARY LOG STATUS``; MariaDB 10.5.2+
    calls it ``SHOW BINLOG STATUS``. Both still accept ``SHOW MASTER STATUS`` on older releases.
    """
    last_error: Exception | None = None
    for statement in ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS", "SHOW BINLOG STATUS"):
        try:
            cursor.execute(statement)
            row = cursor.fetchone()
        except Exception as exc:  # noqa: BLE001 - try the next spelling; report the last failure
            last_error = exc
            continue
        if not row:
            raise RuntimeError(
                "The MySQL server has no binary log (SHOW MASTER STATUS is empty): start it with "
                "log_bin enabled (e.g. --log-bin=binlog) and binlog_format=ROW"
            )
        values = list(row.values()) if isinstance(row, dict) else list(row)
        gtid = None
        if isinstance(row, dict):
            gtid = row.get("Executed_Gtid_Set") or None
        elif len(values) >= 5:
            gtid = values[4] or None
        if gtid is None:
            gtid = _mariadb_gtid(cursor)
        return BinlogOffset(str(values[0]), int(values[1]), gtid)
    raise RuntimeError(f"Cannot read the binlog position: {last_error}")


def _mariadb_gtid(cursor: Any) -> str | None:
    try:
        cursor.execute("SELECT @@gtid_binlog_pos")
        row = cursor.fetchone()
    except Exception:  # noqa: BLE001 - MySQL has no such variable; GTID then comes from the status row
        return None
    if not row:
        return None
    value = next(iter(row.values())) if isinstance(row, dict) else row[0]
    return value or None
