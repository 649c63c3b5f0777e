"""Per-table buffers for the stream: flush by rows, bytes or time (``sink.buffer-flush.*``).

The binlog reader adds rows as it decodes events and asks :meth:`TableBuffers.should_flush`;
when it says yes the reader ends its batch there, so one binlog batch is exactly one load per
Doris table (one label per table per batch). With a key, a later change of the same row
replaces the earlier one in the buffer (Flink CDC sends every change; the sequence column makes
both equivalent, but one row is cheaper than many).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from cdc_core.model.schema import TableId


def estimate_bytes(row: Mapping[str, Any]) -> int:
    """A cheap estimate of a row's JSON size (key, quotes, value), without serializing it."""
    size = 2
    for k, v in row.items():
        size += len(k) + 4
        size += len(v) + 2 if isinstance(v, str) else len(str(v)) if v is not None else 4
    return size


class TableBuffers:
    def __init__(self, max_rows: int = 50_000, max_bytes: int = 10 * 1024 * 1024, interval_s: float = 10.0,
                 clock: Callable[[], float] = time.monotonic):
        if max_rows <= 0 or max_bytes <= 0 or interval_s < 0:
            raise ValueError("sink.buffer-flush.max-rows/max-bytes must be > 0 and interval ≥ 0")
        self.max_rows, self.max_bytes, self.interval_s = max_rows, max_bytes, interval_s
        self.clock = clock
        self._rows: dict[TableId, dict[Hashable, dict[str, Any]]] = {}
        self._bytes: dict[TableId, int] = {}
        self._serial = 0
        self._started: float | None = None

    def add(self, table: TableId, row: dict[str, Any], key: Hashable | None = None) -> None:
        if self._started is None:
            self._started = self.clock()
        buf = self._rows.setdefault(table, {})
        if key is None:
            self._serial += 1
            key = ("__row__", self._serial)
        size = estimate_bytes(row)
        old = buf.pop(key, None)
        if old is not None:
            self._bytes[table] -= estimate_bytes(old)
        buf[key] = row
        self._bytes[table] = self._bytes.get(table, 0) + size

    def rows(self, table: TableId) -> int:
        return len(self._rows.get(table, {}))

    def bytes(self, table: TableId) -> int:
        return self._bytes.get(table, 0)

    def __len__(self) -> int:
        return sum(len(b) for b in self._rows.values())

    def full(self) -> bool:
        return any(len(b) >= self.max_rows or self._bytes[t] >= self.max_bytes for t, b in self._rows.items())

    def due(self) -> bool:
        return self._started is not None and self.clock() - self._started >= self.interval_s

    def should_flush(self) -> bool:
        return bool(self._rows) and (self.full() or self.due())

    def drain(self) -> dict[TableId, list[dict[str, Any]]]:
        """Every buffered table's rows (one load each), emptying the buffers."""
        out = {t: list(b.values()) for t, b in self._rows.items() if b}
        self._rows.clear()
        self._bytes.clear()
        self._started = None
        return out
