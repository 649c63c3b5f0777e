"""What the orchestration calls: one ``PipelineService`` per pipeline definition.

Dagster assets, hooks, sensors, checks and ``tidemark run --once`` go through this facade and
nothing else — they never open the state store — so the orchestration never needs to know how
a chunk is read or a load is committed. Creating a service is cheap: it opens the state store
and starts no Spark session; the executor it is given (``jobs/executor.py``) starts one only
when a step needs Spark (reading chunks, a large binlog batch).

The exactly-once protocol (docs/ARCHITECTURE.md, three rules) lives behind these methods:
``run_*`` prepare Doris transactions and record them as PREPARED in the state store;
``commit_*`` / ``abort_*`` finish them (idempotent); ``resolve_pending`` finishes whatever a crash
left behind and runs before anything else that prepares work.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.sink import DorisSink
from cdc_core.mysql.offsets import BinlogOffset
from cdc_core.pipeline import binlog_batch, planning, recovery, snapshot, verification
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.executor import NoExecutor, PipelineExecutor
from cdc_core.pipeline.ledger import StepLedger
from cdc_core.pipeline.results import (
    BatchResult,
    BinlogLag,
    ChunkResult,
    ParityResult,
    PlanResult,
    ResolveReport,
)
from cdc_core.pipeline.schema_change import SchemaChangeSteps
from cdc_core.schema_registry import PAUSE_KEY, PAUSE_NAMESPACE, SchemaRegistry
from cdc_core.state import ChunkStatus, StateStore

logger = logging.getLogger(__name__)


class PipelineService:
    """The operations of one pipeline, over its state store."""

    def __init__(self, definition: PipelineDefinition, store: StateStore | None = None,
                 executor: PipelineExecutor | None = None):
        self.context = PipelineContext(definition, store)
        self.executor: PipelineExecutor = executor or NoExecutor()

    @property
    def definition(self) -> PipelineDefinition:
        return self.context.definition

    @property
    def store(self) -> StateStore:
        """The state store, for tests and tools; the orchestration goes through the methods."""
        return self.context.store

    @property
    def sink(self) -> DorisSink:
        """The Doris sink, for tests and tools; the orchestration goes through the methods."""
        return self.context.sink

    # -- snapshot ---------------------------------------------------------------------------

    def plan_splits(self, max_partitions: int = 100_000, max_steps: int | None = None) -> PlanResult:
        """Check the server (first round), discover tables and split them into chunks (resumable)."""
        return planning.plan_splits(self.context, max_partitions, max_steps)

    def chunk_keys(self) -> list[str]:
        """Every planned chunk, in assignment order."""
        return planning.chunk_keys(self.context)

    def chunk_statuses(self) -> dict[str, ChunkStatus]:
        """Every planned chunk's key and status."""
        return snapshot.chunk_statuses(self.context)

    def committed_chunk_keys(self) -> list[str]:
        """The chunks whose loads are visible in Doris (what a chunk parity check can compare)."""
        return [key for key, status in self.chunk_statuses().items() if status is ChunkStatus.COMMITTED]

    def captured_tables(self) -> list[str]:
        """The tables the pipeline holds in Doris: every table with a chunk record (snapshotted,
        or streamed since a schema change brought it in)."""
        return sorted({key.rpartition("#")[0] for key in self.chunk_statuses()})

    def run_chunks(self, keys: list[str]) -> list[ChunkResult]:
        """Read and load these chunks with the executor; their transactions end up PREPARED."""
        if not keys:
            return []
        self.resolve_pending()
        return snapshot.run_chunks(self.context, self.executor, keys)

    def commit_chunks(self, keys: list[str]) -> list[str]:
        """Commit the prepared loads of these chunks (idempotent); they become COMMITTED. Returns
        the chunks whose loads Doris lost before the commit: PENDING again, to be read again."""
        return snapshot.commit_chunks(self.context, keys)

    def abort_chunks(self, keys: list[str]) -> None:
        """Abort their prepared loads; the chunks go back to PENDING."""
        snapshot.abort_chunks(self.context, keys)

    def snapshot_done(self) -> bool:
        """The plan is complete and every planned chunk is COMMITTED."""
        return snapshot.snapshot_done(self.context)

    # -- binlog -----------------------------------------------------------------------------

    def binlog_ready(self) -> bool:
        """The stream may run: no snapshot is needed, or the snapshot is committed."""
        return binlog_batch.binlog_ready(self.context)

    def binlog_lag(self) -> BinlogLag:
        """Cheap (no Spark): the committed offset against the server's current position."""
        return binlog_batch.binlog_lag(self.context)

    def binlog_paused(self) -> Any:
        """The pause flag (set by a schema change, or by hand); falsy when the stream may run."""
        return self.context.store.get(PAUSE_NAMESPACE, PAUSE_KEY)

    def run_binlog_batch(self, max_events: int | None = None, *, stop: BinlogOffset | None = None) -> BatchResult:
        """Apply one micro-batch (see ``binlog_batch.run_batch``); its loads end up PREPARED."""
        self.resolve_pending()
        if not self.binlog_ready():
            raise RuntimeError(
                "the snapshot is not finished: every chunk must be committed before the binlog stream starts "
                "(backfill snapshot_chunks, or run `tidemark run --once`)"
            )
        return binlog_batch.run_batch(self.context, self.executor, max_events, stop=stop)

    def commit_batch(self, batch_id: str) -> bool:
        """Commit the batch's loads (idempotent); only then does the committed offset advance.
        False: Doris lost one of its loads; the next batch reads the same range again."""
        return binlog_batch.commit_batch(self.context, batch_id)

    def abort_batch(self, batch_id: str) -> None:
        """Abort the batch's loads; the committed offset stays where it was."""
        binlog_batch.abort_batch(self.context, batch_id)

    # -- recovery and checks ----------------------------------------------------------------

    def resolve_pending(self) -> ResolveReport:
        """Finish what a crash or a failed hook left (commit complete records, abort the rest)."""
        return recovery.resolve_pending(self.context)

    def pending_transactions(self) -> list[dict[str, Any]]:
        """PREPARED-but-not-finished transactions (for the ``no_pending_transactions`` check)."""
        return recovery.pending_transactions(self.context)

    def chunk_parity(self, key: str) -> ParityResult:
        """Row count and checksum of the chunk's key range, MySQL against Doris."""
        return verification.chunk_parity(self.context, key)

    def table_parity(self, table_id: str) -> ParityResult:
        """Row count and checksum of the whole table, MySQL against Doris."""
        return verification.table_parity(self.context, table_id)

    # -- orchestration bookkeeping ----------------------------------------------------------

    def step_ledger(self) -> StepLedger:
        """What each orchestration step prepared, for its commit and abort hooks."""
        return StepLedger(self.context.store)

    def schema_registry(self) -> SchemaRegistry:
        """The schema-change coordinator's persisted state machine."""
        return SchemaRegistry(self.context.store)

    def schema_change_steps(self, *, run_id: str = "", in_flight: Callable[[], Sequence[str]] | None = None,
                            log_fn: Callable[[str], None] | None = None, **options: Any) -> SchemaChangeSteps:
        """The four steps of a schema change over this pipeline."""
        return SchemaChangeSteps(self, run_id=run_id, in_flight=in_flight, log_fn=log_fn, **options)

    def close(self) -> None:
        self.context.close()


__all__ = ["PipelineService"]
