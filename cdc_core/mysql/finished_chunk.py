"""A snapshot chunk read up to its high watermark: Flink's ``FinishedSnapshotSplitInfo``.

The binlog filter judges each change against the finished chunk that holds its key; the value
is saved in the state store and restored from it, so it has its own small module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId

Bound = tuple[Any, ...] | None


@dataclass(frozen=True)
class FinishedChunk:
    """A chunk read up to its high watermark: Flink's ``FinishedSnapshotSplitInfo``."""

    table_id: TableId
    index: int
    start: Bound
    end: Bound
    high_watermark: BinlogOffset
    key_columns: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "table": str(self.table_id), "index": self.index,
            "start": None if self.start is None else list(self.start),
            "end": None if self.end is None else list(self.end),
            "high_watermark": self.high_watermark.to_dict(), "key_columns": list(self.key_columns),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FinishedChunk:
        return cls(
            TableId.parse(data["table"]), int(data["index"]),
            None if data.get("start") is None else tuple(data["start"]),
            None if data.get("end") is None else tuple(data["end"]),
            BinlogOffset.from_dict(data["high_watermark"]), tuple(data.get("key_columns", ())),
        )

    @classmethod
    def from_split(cls, split: Any, high_watermark: BinlogOffset) -> FinishedChunk:
        """From a ``cdc_core.mysql.splits.SnapshotSplit`` and the HW its read ended at."""
        return cls(split.table_id, split.index, split.start, split.end, high_watermark,
                   tuple(getattr(split, "key_columns", ()) or ()))

    @classmethod
    def from_state(cls, record: Any) -> FinishedChunk:
        """From a chunk record of the state store (a ``ChunkRecord`` of ``tx.chunks()``, or its
        dict) that has a high watermark."""
        if not isinstance(record, dict):
            record = record.to_dict()
        hw = record.get("high_watermark")
        if hw is None:
            raise ValueError(f"chunk {record.get('table_id')}#{record.get('chunk_index')} has no high watermark yet")
        table = record.get("table_id") or record.get("table")
        index = record.get("chunk_index", record.get("index"))
        start, end = record.get("start"), record.get("end")
        detail = record.get("detail") or {}
        return cls(TableId.parse(str(table)), int(index), None if start is None else tuple(start),
                   None if end is None else tuple(end), BinlogOffset.from_dict(hw),
                   tuple(detail.get("key_columns", ())) if isinstance(detail, dict) else ())
