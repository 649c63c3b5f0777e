"""What the orchestration calls: one ``PipelineService`` per pipeline definition.

Dagster assets, hooks, sensors, checks and ``tidemark run --once`` go through this facade and
nothing else — they never open the state store — so the orchestration never needs to know how
a chunk is read or a load is committed. Creating a service is cheap: it opens the state store
and starts no Spark session; the executor it is given (``jobs/spark_executor.py``) starts one only
when a step needs Spark (reading chunks, a large binlog batch).

The exactly-once protocol (docs/ARCHITECTURE.md, three rules) lives behind these methods:
``run_*`` prepare Doris transactions and record them as PREPARED in the state store;
``commit_*`` / ``abort_*`` finish them (idempotent); ``resolve_pending`` finishes whatever a crash
left behind and runs before anything else that prepares work.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.sink import DorisSink
from cdc_core.instrumentation.phases import phase
from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.purge import BinlogPurgedError
from cdc_core.pipeline import (
    binlog_batch,
    planning,
    purged_schemas,
    recovery,
    reload,
    resnapshot,
    snapshot,
    snapshot_estimate,
    targets,
)
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.executor import NoExecutor, PipelineExecutor
from cdc_core.pipeline.ledger import StepLedger
from cdc_core.pipeline.parity import chunk_parity, doris_ahead, overlap, repair, table_verify
from cdc_core.pipeline.results import (
    BatchResult,
    BinlogLag,
    ChunkResult,
    NextPlan,
    ParityResult,
    PlanResult,
    ResolveReport,
)
from cdc_core.pipeline.schema_change import SchemaChangeSteps
from cdc_core.pipeline.status import PipelineStatus, pipeline_status
from cdc_core.pipeline.stream_run import StreamRunPolicy
from cdc_core.pipeline.targets import DorisTarget, TargetUpdate
from cdc_core.schema_evolution.registry import SchemaRegistry
from cdc_core.state import ChunkStatus, StateStore
from cdc_core.state.keys import BINLOG_PAUSED, COMMITTED_OFFSET
from cdc_core.state.leases import (
    LeaseKeeper,
    LeaseRecord,
    find_keeper,
    keeper_for,
    live_holders,
    process_owner,
    snapshot_scope,
)

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

    def plan_splits(self, max_steps: int | None = None) -> PlanResult:
        """Check the server (first round), discover tables and split them into chunks (resumable)."""
        with phase("planning"):
            return planning.plan_splits(self.context, max_steps)

    @staticmethod
    def next_plan(definition: PipelineDefinition) -> NextPlan:
        """The chunks the next run of ``definition`` loads, recording nothing (``tidemark
        splits``): the plan in its state, else the one ``plan_splits`` makes now, in memory."""
        return planning.next_plan(definition)

    def chunk_keys(self) -> list[str]:
        """Every planned chunk, in assignment order."""
        return planning.chunk_keys(self.context)

    def chunk_statuses(self) -> dict[str, ChunkStatus]:
        """Every planned chunk's key and status."""
        return snapshot.chunk_statuses(self.context)

    def chunk_row_estimates(self) -> dict[str, int]:
        """Each planned chunk's rows as the plan estimated them (its table's, shared evenly)."""
        return snapshot_estimate.chunk_rows(self.context.store)

    def committed_chunk_keys(self) -> list[str]:
        """The chunks whose loads are visible in Doris (what a chunk parity check can compare)."""
        return [key for key, status in self.chunk_statuses().items() if status is ChunkStatus.COMMITTED]

    def captured_tables(self) -> list[str]:
        """The tables the pipeline holds in Doris: every table with a chunk record (snapshotted,
        or streamed since a schema change brought it in)."""
        return sorted({key.rpartition("#")[0] for key in self.chunk_statuses()})

    def run_chunks(self, keys: list[str], *, parity_run_id: str | None = None) -> list[ChunkResult]:
        """Read and load these chunks with the executor; their transactions end up PREPARED (more
        chunks than ``tidemark.doris.max-running-txns-per-db`` allows at once: those committed early
        to make room are COMMITTED already, ``snapshot.run_chunks_bounded``).

        ``parity_run_id``: the run whose ``chunk_parity`` check follows; MySQL's side of that check
        is computed meanwhile (``parity/overlap.py``): the reads leave MySQL mostly idle, and the
        commits that follow are short (Doris writes a load's rows when it loads them)."""
        if not keys:
            return []
        self.resolve_pending()
        with phase("read_load"), self._parity_alongside(keys, parity_run_id), \
                self._doris_side_ahead(parity_run_id) as after_group:
            return snapshot.run_chunks_bounded(self.context, self.executor, keys, after_group=after_group)

    @contextmanager
    def _doris_side_ahead(self, parity_run_id: str | None) -> Iterator[Callable[[list[str]], None] | None]:
        """Doris's side of the ``chunk_parity`` check of ``parity_run_id`` (None: none follows) for
        the whole-table chunks committed early, computed on a thread while the reads go on
        (``parity/doris_ahead.py``)."""
        if parity_run_id is None:
            yield None
            return
        with doris_ahead.alongside(self.context, parity_run_id) as submit:
            def after_group(committed: list[str]) -> None:
                try:
                    submit(chunk_parity.whole_chunk_tables(self.context, committed))
                except Exception:  # noqa: BLE001 - the reads go on; the check asks Doris itself
                    logger.warning("parity: could not plan Doris's side of a committed group", exc_info=True)
            yield after_group

    @contextmanager
    def _parity_alongside(self, keys: list[str], parity_run_id: str | None) -> Iterator[None]:
        """MySQL's side of the ``chunk_parity`` check of ``parity_run_id`` (None: none follows),
        computed on a thread while the block runs."""
        if parity_run_id is None:
            yield
            return
        try:
            work = chunk_parity.range_work(self.context, keys)
            whole = chunk_parity.whole_chunk_tables(self.context, keys)
        except Exception:  # noqa: BLE001 - the block must not wait on it: the check reads MySQL itself
            logger.warning("parity: could not plan MySQL's side; the check computes it", exc_info=True)
            work, whole = [], {}
        with overlap.alongside(self.context, parity_run_id, work, whole):
            yield

    def commit_chunks(self, keys: list[str], *, parity_run_id: str | None = None) -> list[str]:
        """Commit the prepared loads of these chunks (idempotent); they become COMMITTED. Returns
        the chunks whose loads Doris lost before the commit: PENDING again, to be read again.

        ``parity_run_id``: the run whose ``chunk_parity`` check follows; MySQL's side of that check
        is computed meanwhile, on the core the commits leave idle (``parity/overlap.py``)."""
        self.check_lease()
        with phase("commit"), self._parity_alongside(keys, parity_run_id):
            return snapshot.commit_chunks(self.context, keys)

    def sweep_reloads(self) -> list[reload.SweepResult]:
        """Delete from Doris the rows MySQL no longer has, for each table reloaded after partition
        maintenance whose chunks are all committed again (``cdc_core/pipeline/reload.py``). The
        schema change runs it after the reads; every binlog batch runs it first, so a sweep a crash
        interrupted is finished before the stream goes on."""
        if not reload.pending_reloads(self.context):
            return []
        with phase("reload_sweep"):
            return reload.sweep_pending(self.context)

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

    def server_offset(self) -> dict[str, Any]:
        """The server's binlog position now (one ``SHOW MASTER STATUS``), in the pipeline's epoch on
        that server (after a failover, comparable with the batches' offsets there), e.g. to see
        whether the binlog has moved past a batch; ``binlog_lag`` also reads the state store."""
        return self.context.aligned_offset().to_dict()

    def binlog_paused(self) -> Any:
        """The pause flag (set by a schema change, or by hand); falsy when the stream may run."""
        return BINLOG_PAUSED.get(self.context.store)

    def run_binlog_batch(self, max_events: int | None = None, *, stop: BinlogOffset | None = None) -> BatchResult:
        """Apply one micro-batch (see ``binlog_batch.run_batch``); its loads end up PREPARED."""
        self.resolve_pending()
        if not self.binlog_ready():
            raise RuntimeError(
                "the snapshot is not finished: every chunk must be committed before the binlog stream starts "
                "(backfill snapshot_chunks, or run `tidemark run --once`)"
            )
        self.sweep_reloads()
        try:
            return binlog_batch.run_batch(self.context, self.executor, max_events, stop=stop)
        except BinlogPurgedError as exc:
            if self.definition.pipeline.binlog_on_purged != "resnapshot":
                raise
            logger.warning("%s: %s; tidemark.binlog.on-purged is 'resnapshot': every captured table is read "
                           "again now", self.definition.name, str(exc).split(". ")[0])
            healed = self.resnapshot()
        batch = binlog_batch.run_batch(self.context, self.executor, max_events, stop=stop)
        return dataclasses.replace(batch, healed=healed)

    # -- resnapshot and repair ----------------------------------------------------------------

    def request_resnapshot(self, tables: Sequence[str] | None = None) -> resnapshot.ResnapshotRequest:
        """Mark the tables (default: all) for reading again from now, with a sweep of the rows MySQL
        no longer has; when the binlog to resume from was purged the stream restarts at the new
        chunks' watermarks (``cdc_core/pipeline/resnapshot.py``). An unfinished one is continued.
        The chunks are then read by the snapshot path (``tidemark run`` / the snapshot job)."""
        self.resolve_pending()
        request = resnapshot.request_resnapshot(self.context, tables)
        if COMMITTED_OFFSET.get(self.context.store) is None:
            # the stream starts again at the new chunks' watermarks (the binlog was purged, or no batch
            # was committed yet): the DDLs before them are never read, so their schema changes are
            # carried over before any chunk is read (cdc_core/pipeline/purged_schemas.py)
            purged_schemas.carry_schema_drift(self, request.tables)
        return request

    def resnapshot_in_progress(self) -> list[str]:
        """The tables of an unfinished resnapshot (empty: none); reads the state store only."""
        return resnapshot.in_progress(self.context)

    def resnapshot(self, tables: Sequence[str] | None = None, *, chunks_per_round: int = 64) -> dict[str, Any]:
        """The whole resnapshot in this process: request it, read and commit its chunks (a round of
        ``chunks_per_round`` at a time, each committed before the next is read), then the sweep.
        What ``resnapshot_job`` and ``tidemark.binlog.on-purged: resnapshot`` run."""
        request = self.request_resnapshot(tables)
        for _ in range(3):  # a chunk whose load Doris lost before its commit is PENDING again
            todo = [k for k, st in self.chunk_statuses().items()
                    if st is not ChunkStatus.COMMITTED and k.rpartition("#")[0] in request.tables]
            if not todo:
                break
            for i in range(0, len(todo), chunks_per_round):
                keys = todo[i: i + chunks_per_round]
                self.run_chunks(keys)
                self.commit_chunks(keys)
        sweeps = self.sweep_reloads()
        waiting = [s for s in sweeps if s.waiting]
        if waiting:
            raise RuntimeError(f"the resnapshot of {waiting[0].table_id} is not finished ({waiting[0].waiting}); "
                               "run it again")
        return {"tables": list(request.tables), "chunks": len(request.chunk_keys),
                "stream_restarted": request.restarts_stream, "purged_offset": request.purged_offset,
                "continued": request.resumed,
                "deleted": {s.table_id: sum(s.deleted.values()) for s in sweeps},
                "skipped": [x for s in sweeps for x in s.skipped]}

    def repair_scopes(self, tables: Sequence[str] | None = None) -> list[str]:
        """The leases a repair of ``tables`` (default: all) holds: each table's snapshot scope
        (``cdc_core/state/leases.py``). A ``tidemark run`` (the whole pipeline) or a run loading
        chunks of the same table excludes it, and it excludes them: it would verify and "mend" a
        table half loaded, and resolve work they have in flight. The stream's scope does not
        overlap: a repair is safe beside the stream (its rows' sequence)."""
        return sorted(snapshot_scope(t) for t in self._chosen_tables(tables))

    def repair(self, tables: Sequence[str] | None = None, *, max_keys: int = repair.MAX_KEYS_PER_ROUND,
               rounds: int = 5) -> list[repair.TableRepair]:
        """``tidemark verify --repair``: the rows that differ, re-read from MySQL between watermarks and
        loaded (upserts, deletes) with the high watermark as their sequence, then verified again
        (``cdc_core/pipeline/parity/repair.py``); safe while the stream runs."""
        chosen = self._chosen_tables(tables)
        self.resolve_pending()
        with phase("repair"), self.context.connection():
            return [repair.repair_table(self.context, t, max_keys=max_keys, rounds=rounds) for t in chosen]

    def stream_run_policy(self, budget_s: float | None = None) -> StreamRunPolicy:
        """How long one binlog run keeps applying batches (``cdc_core/pipeline/stream_run.py``):
        the pipeline's ``tidemark.binlog.run-seconds`` unless ``budget_s`` overrides it."""
        options = self.definition.pipeline
        return StreamRunPolicy(options.binlog_run_seconds if budget_s is None else budget_s,
                               options.binlog_batch_interval_s, options.binlog_idle_wait_s)

    def commit_batch(self, batch_id: str) -> bool:
        """Commit the batch's loads (idempotent); only then does the committed offset advance.
        False: Doris lost one of its loads; the next batch reads the same range again."""
        self.check_lease()
        return binlog_batch.commit_batch(self.context, batch_id)

    def abort_batch(self, batch_id: str) -> None:
        """Abort the batch's loads; the committed offset stays where it was."""
        binlog_batch.abort_batch(self.context, batch_id)

    # -- the Doris tables ---------------------------------------------------------------------

    def doris_targets(self) -> list[DorisTarget]:
        """Every Doris table the pipeline writes and its expected columns, from the state store
        alone (no MySQL, no Doris): what a code location can afford at load time. Empty until
        the split plan has discovered the captured tables."""
        return targets.doris_targets(self.context)

    def written_targets(self, *, chunk_keys: Sequence[str] = (), batch_id: str | None = None,
                        batch_ids: Sequence[str] = (), run_id: str | None = None) -> list[TargetUpdate]:
        """The Doris tables these chunks or batches loaded, as Doris has them now (columns and
        row count: a schema request per table, one COUNT statement for many). Call it after the commit.
        ``run_id``: the run that committed the chunks; the counts its early groups' parity already
        took, still valid, are not asked again (``parity/doris_ahead.py:counts_after_commit``)."""
        chosen = {t.table_id: t for t in targets.targets_of_chunks(self.context, chunk_keys)}
        for batch in [*batch_ids, *([batch_id] if batch_id is not None else [])]:
            chosen.update({t.table_id: t for t in targets.targets_of_batch(self.context, batch)})
        counted = doris_ahead.counts_after_commit(self.context, run_id, chunk_keys) if run_id else {}
        return targets.target_updates(self.context, [t for _, t in sorted(chosen.items())], counted)

    # -- recovery and checks ----------------------------------------------------------------

    def resolve_pending(self) -> ResolveReport:
        """Finish what a crash or a failed hook left (commit complete records, abort the rest)."""
        with phase("resolve_pending"):
            return recovery.resolve_pending(self.context)

    def pending_transactions(self) -> list[dict[str, Any]]:
        """PREPARED-but-not-finished transactions (for the ``no_pending_transactions`` check)."""
        return recovery.pending_transactions(self.context)

    def chunk_parity(self, key: str) -> ParityResult:
        """Row count and checksum of the chunk's key range, MySQL against Doris."""
        with phase("parity"):
            return chunk_parity.chunk_parity(self.context, key)

    def chunks_parity(self, keys: list[str], run_id: str | None = None) -> list[ParityResult]:
        """``chunk_parity`` of many chunks, batched: one statement per table and side where it can;
        MySQL's side reused where ``run_id``'s commits computed it (``commit_chunks``)."""
        with phase("parity"):
            return chunk_parity.chunks_parity(self.context, keys, run_id)

    def table_parity(self, table_id: str) -> ParityResult:
        """Row count and checksum of the whole table, MySQL against Doris."""
        return chunk_parity.table_parity(self.context, table_id)

    def verify(self, tables: Sequence[str] | None = None, *, max_keys: int = table_verify.MAX_KEYS) -> list[table_verify.TableVerdict]:
        """Compare these captured tables (default: all) in MySQL and Doris; list differing keys."""
        chosen = self._chosen_tables(tables)
        with phase("verify"), self.context.connection():
            return table_verify.verify_tables(self.context, chosen, max_keys=max_keys)

    def _chosen_tables(self, tables: Sequence[str] | None) -> list[str]:
        chosen = list(tables) if tables else self.captured_tables()
        unknown = sorted(set(chosen) - set(self.captured_tables()))
        if unknown:
            raise ValueError(f"table(s) {', '.join(unknown)} are not captured by pipeline '{self.definition.name}' "
                             f"(captured: {', '.join(self.captured_tables()) or 'none yet: run the snapshot first'})")
        return chosen

    @contextmanager
    def session(self) -> Iterator[None]:
        """Hold one MySQL connection for the steps inside (a check over many chunks opens one, not one each)."""
        with self.context.connection():
            yield

    def status(self) -> PipelineStatus:
        """Where the pipeline stands (``tidemark status``), read without changing anything; a server
        that does not answer is named in its ``unreachable`` (its fields None)."""
        return pipeline_status(self.context)

    # -- run leases (cdc_core/state/leases.py) --------------------------------------------------

    def lease_keeper(self) -> LeaseKeeper:
        """This process's keeper of the pipeline's leases (one per state database)."""
        return keeper_for(self.store, self.definition.pipeline.run_lease_ttl_s, self.definition.name)

    def take_lease(self, scopes: Sequence[str], *, purpose: str, run_id: str | None = None,
                   wait_s: float = 0.0) -> list[LeaseRecord]:
        """Hold ``scopes`` of the pipeline for this process (all or none, atomically in the state
        store), or raise ``LeaseHeld`` naming the live holder; returns the dead holders' expired
        leases it took over. Take it before ``resolve_pending``: that then leaves alone only the
        work of live holders."""
        return self.lease_keeper().acquire(scopes, purpose=purpose, run_id=run_id, wait_s=wait_s)

    def give_back_lease(self, scopes: Sequence[str] = (), *, run_id: str | None = None) -> None:
        """Release ``scopes`` (or everything taken for the Dagster run ``run_id``)."""
        keeper = self.lease_keeper()
        if scopes:
            keeper.release(scopes)
        if run_id is not None:
            keeper.release_run(run_id)

    def check_lease(self) -> None:
        """Raise ``LeaseLost`` when a lease this process holds was taken over: before a commit."""
        keeper = find_keeper(self.store)
        if keeper is not None:
            keeper.check()

    def lease_holders(self) -> list[LeaseRecord]:
        """The live leases of other processes (a sensor skips its tick while one holds the stream)."""
        return live_holders(self.store, other_than=process_owner())

    def live_leases(self) -> list[LeaseRecord]:
        """Every live lease of the pipeline, this process's too (which Dagster runs hold one)."""
        return live_holders(self.store)

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
