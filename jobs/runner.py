"""What the orchestration calls: one ``PipelineRunner`` per pipeline definition.

Dagster assets, hooks, sensors, checks and ``tidemark run --once`` go through this facade and
nothing else, so that the orchestration never needs to know how a chunk is read or a load is
committed. Creating a runner is cheap: it opens the state store and starts no Spark session;
only ``run_chunks`` and ``run_binlog_batch`` (when a batch is large) need Spark.

The exactly-once protocol (design.md, three rules) lives behind these methods:
``run_*`` prepare Doris transactions and record them as PREPARED in the state store;
``commit_*`` / ``abort_*`` finish them (idempotent); ``resolve_pending`` finishes whatever a crash
left behind and must run before anything else in a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.state import StateStore


def chunk_key(table_id: str, index: int) -> str:
    """A snapshot chunk's partition key: table and chunk index, e.g. ``shop.orders#00012``."""
    return f"{table_id}#{index:05d}"


def parse_chunk_key(key: str) -> tuple[str, int]:
    table_id, sep, index = key.rpartition("#")
    if not sep or not index.isdigit():
        raise ValueError(f"not a chunk key: {key!r} (expected 'db.table#00012')")
    return table_id, int(index)


@dataclass(frozen=True)
class PlanResult:
    """The split plan after ``plan_splits``: every chunk key in assignment order."""

    chunk_keys: tuple[str, ...]
    tables: tuple[str, ...]
    complete: bool  # False while a huge table is still being split (call plan_splits again)
    notes: tuple[str, ...] = ()  # e.g. "shop.big: chunk size grown to 20000 to stay under 100000 partitions"


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
    failed: tuple[str, ...] = ()  # labels that could not be resolved now (the check shows them)


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


class PipelineRunner:
    """The operations of one pipeline, over its state store."""

    def __init__(self, definition: PipelineDefinition, store: StateStore | None = None):
        self.definition = definition
        self.store = store or StateStore.for_pipeline(definition)

    # -- snapshot ---------------------------------------------------------------------------

    def plan_splits(self, max_partitions: int = 100_000) -> PlanResult:
        """Discover tables and split them into chunks (resumable), recording the plan."""
        raise NotImplementedError("PipelineRunner.plan_splits arrives with issue 7")

    def chunk_keys(self) -> list[str]:
        """Every planned chunk, in assignment order."""
        raise NotImplementedError("PipelineRunner.chunk_keys arrives with issue 7")

    def run_chunks(self, keys: list[str]) -> list[ChunkResult]:
        """Read and load these chunks on Spark; their transactions end up PREPARED (not visible)."""
        raise NotImplementedError("PipelineRunner.run_chunks arrives with issue 7")

    def commit_chunks(self, keys: list[str]) -> None:
        """Commit the prepared loads of these chunks (idempotent); they become COMMITTED."""
        raise NotImplementedError

    def abort_chunks(self, keys: list[str]) -> None:
        """Abort their prepared loads; the chunks go back to PENDING."""
        raise NotImplementedError

    def snapshot_done(self) -> bool:
        """Every planned chunk is COMMITTED (and the plan is complete)."""
        raise NotImplementedError

    # -- binlog -----------------------------------------------------------------------------

    def binlog_lag(self) -> BinlogLag:
        """Cheap (no Spark): the committed offset against the server's current position."""
        raise NotImplementedError

    def run_binlog_batch(self, max_events: int | None = None) -> BatchResult:
        """Apply one micro-batch from the committed offset to the server's position at the start
        (stopping early at the first DDL on a captured table); its loads end up PREPARED."""
        raise NotImplementedError

    def commit_batch(self, batch_id: str) -> None:
        """Commit the batch's loads (idempotent); only then does the committed offset advance."""
        raise NotImplementedError

    def abort_batch(self, batch_id: str) -> None:
        raise NotImplementedError

    # -- recovery and checks ----------------------------------------------------------------

    def resolve_pending(self) -> ResolveReport:
        """Finish what a crash or a failed hook left: commit complete PREPARED records, abort the
        rest and any lingering transaction of our label prefix that no record names."""
        raise NotImplementedError

    def pending_transactions(self) -> list[dict[str, Any]]:
        """PREPARED-but-not-finished transactions (for the ``no_pending_transactions`` check)."""
        raise NotImplementedError

    def chunk_parity(self, key: str) -> ParityResult:
        """Row count and checksum of the chunk's key range, MySQL against Doris."""
        raise NotImplementedError

    def table_parity(self, table_id: str) -> ParityResult:
        raise NotImplementedError

    def close(self) -> None:
        self.store.close()
