"""Typed records of the state store: a snapshot chunk and a binlog micro-batch.

The store keeps statuses as plain strings; the ``StrEnum`` values are those same strings, so a
state file written before these types existed opens unchanged. Records are frozen: a change of
status is written through the transaction (``update_chunk`` / ``put_batch``) and read back, never
made by mutating a record in memory.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ChunkStatus(StrEnum):
    """A chunk's place in the exactly-once protocol (see docs/ARCHITECTURE.md).

    PENDING: planned or abandoned, nothing prepared; RUNNING: a read is under way (a crash here
    leaves loads only recovery can find, by label); PREPARED: its Doris transactions are
    precommitted and recorded; COMMITTED: they are visible.
    """

    PENDING = "PENDING"
    RUNNING = "RUNNING"
    PREPARED = "PREPARED"
    COMMITTED = "COMMITTED"


class BatchStatus(StrEnum):
    """A binlog batch's place in the protocol; ABORTED batches are kept as history."""

    RUNNING = "RUNNING"
    PREPARED = "PREPARED"
    COMMITTED = "COMMITTED"
    ABORTED = "ABORTED"


@dataclass(frozen=True)
class ChunkRecord:
    """One snapshot chunk of the split plan: its key range, status and what its load prepared."""

    table_id: str
    chunk_index: int
    start: list[Any] | None  # None: unbounded below
    end: list[Any] | None  # None: unbounded above
    status: ChunkStatus = ChunkStatus.PENDING
    generation: int = 0  # moves on at every re-read of a committed chunk (new labels)
    low_watermark: dict[str, Any] | None = None  # BinlogOffset.to_dict()
    high_watermark: dict[str, Any] | None = None
    transactions: list[dict[str, Any]] | None = None  # prepared Doris transactions (label, txn_id, ...)
    rows: int | None = None
    detail: dict[str, Any] | None = None  # duration, backfill events, key columns, ...

    @classmethod
    def planned(cls, table_id: str, chunk_index: int, start: list[Any] | None = None,
                end: list[Any] | None = None) -> ChunkRecord:
        """A chunk as the splitter plans it: PENDING, generation 0, nothing read yet."""
        return cls(table_id, chunk_index, start, end)

    @property
    def key(self) -> tuple[str, int]:
        return self.table_id, self.chunk_index

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkRecord:
        values = {f.name: data.get(f.name) for f in dataclasses.fields(cls)}
        values["status"] = ChunkStatus(data.get("status") or ChunkStatus.PENDING)
        values["generation"] = int(data.get("generation") or 0)
        return cls(**values)


@dataclass(frozen=True)
class BatchRecord:
    """One binlog micro-batch: its offset range, status and prepared transactions."""

    batch_id: str
    start_offset: dict[str, Any]
    end_offset: dict[str, Any]
    status: BatchStatus
    transactions: list[dict[str, Any]] | None = None
    detail: dict[str, Any] | None = None  # events per table, the DDL it stopped at, probes, lag

    def with_status(self, status: BatchStatus, **changes: Any) -> BatchRecord:
        return dataclasses.replace(self, status=status, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BatchRecord:
        values = {f.name: data.get(f.name) for f in dataclasses.fields(cls)}
        values["status"] = BatchStatus(data["status"])
        return cls(**values)
