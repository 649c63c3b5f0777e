"""What the pipeline service's operations return: plain frozen values for the orchestration
to turn into metadata, checks and progress lines (no store records leak through them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cdc_core.mysql.splits import SnapshotSplit


@dataclass(frozen=True)
class PlanResult:
    """The split plan after ``plan_splits``: every chunk key in assignment order."""

    chunk_keys: tuple[str, ...]
    tables: tuple[str, ...]
    complete: bool  # False while a huge table is still being split (call plan_splits again)
    notes: tuple[str, ...] = ()  # e.g. "shop.big: chunk size grown to 20000 to stay under 100000 partitions"


class PlanSource(StrEnum):
    """Where the plan ``PipelineService.next_plan`` shows comes from (``cdc_core/pipeline/planning.py``)."""

    RECORDED = "recorded"  # the pipeline's state holds the whole plan: the next run loads these chunks
    RESUMED = "resumed"  # the state holds part of it: the rest split now from its cursor, not recorded
    COMPUTED = "computed"  # no plan yet: made now by plan_splits in a throw-away store


@dataclass(frozen=True)
class NextPlan:
    """The chunks the next run loads, in assignment order, and where they come from."""

    splits: tuple[SnapshotSplit, ...]
    tables: tuple[str, ...]
    source: PlanSource
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class ChunkResult:
    key: str
    table_id: str
    index: int
    rows: int
    low_watermark: dict[str, Any]  # BinlogOffset.to_dict()
    high_watermark: dict[str, Any]
    transactions: tuple[dict[str, Any], ...]  # prepared Doris transactions (label, txn_id, db, table, rows)
    duration_s: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.duration_s if self.duration_s > 0 else 0.0


@dataclass(frozen=True)
class BatchResult:
    batch_id: str
    start_offset: dict[str, Any]
    end_offset: dict[str, Any]
    events_per_table: dict[str, int]
    transactions: tuple[dict[str, Any], ...]
    stopped_at_ddl: dict[str, Any] | None = None  # the first DDL on a captured table, if the batch stopped there
    lag_s: float | None = None  # server time now minus the last event's commit time
    healed: dict[str, Any] | None = None  # the resnapshot a purged binlog led to (tidemark.binlog.on-purged)


@dataclass(frozen=True)
class BinlogLag:
    committed_offset: dict[str, Any] | None
    server_offset: dict[str, Any]
    behind: bool  # the server has moved past the committed offset
    bytes_behind: int | None = None


@dataclass(frozen=True)
class ResolveReport:
    committed: tuple[str, ...] = ()  # labels committed while finishing PREPARED records
    aborted: tuple[str, ...] = ()  # labels aborted (incomplete records, lingering transactions)
    failed: tuple[str, ...] = ()  # "label: cause" of what could not be resolved now (the check shows them)
    redo: tuple[str, ...] = ()  # chunks and batches whose loads Doris lost: read again by the next run

    def __add__(self, other: ResolveReport) -> ResolveReport:
        return ResolveReport(self.committed + other.committed, self.aborted + other.aborted,
                             self.failed + other.failed, self.redo + other.redo)


@dataclass(frozen=True)
class ParityResult:
    table_id: str
    key_range: tuple[Any, Any] | None
    mysql_rows: int
    doris_rows: int
    mysql_checksum: str
    doris_checksum: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.mysql_rows == self.doris_rows and self.mysql_checksum == self.doris_checksum
