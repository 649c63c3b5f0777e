"""The pipeline's assets: split assignment, the chunked snapshot, and the binlog stream.

Built per pipeline (``build_assets``) under the asset key prefix of the pipeline's name. Every
asset that writes takes the pipeline's pool, so two runs of one pipeline never overlap (see
dagster.yaml), and starts with ``resolve_pending``: whatever an earlier failed commit left
behind is finished before new work is prepared.
"""


import json
import logging
import time
import warnings
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetObservation,
    AssetsDefinition,
    BackfillPolicy,
    BetaWarning,
    DynamicPartitionsDefinition,
    Failure,
    MaterializeResult,
    MetadataValue,
    asset,
)

from cdc_core.model.offsets import BinlogOffset
from cdc_core.pipeline.results import BatchResult, ChunkResult, ResolveReport
from cdc_core.pipeline.service import PipelineService
from cdc_core.pipeline.stream_run import StreamRunEnd
from cdc_core.state.leases import LeaseHeld, Scope, snapshot_scope
from orchestration.defs import live_run
from orchestration.defs.failures import one_line_failures
from orchestration.defs.hooks import PipelineHooks, run_checks_parity
from orchestration.defs.pipelines import BINLOG_RUN_SECONDS_TAG, PipelineHandle
from orchestration.defs.runs import fail_runs_of_dead_holders

logger = logging.getLogger(__name__)

# BackfillPolicy is "beta" in 1.13; it is what puts many chunks into one run, so we use it knowingly.
warnings.filterwarnings("ignore", category=BetaWarning, message=r".*backfill_policy.*")

# The cap on partitions (chunks) per asset is the pipeline's tidemark.snapshot.max-partitions,
# applied by the planning itself (cdc_core/pipeline/planning.py), so `tidemark splits` keeps it too.
# A backfill of N chunks becomes ceil(N / CHUNKS_PER_RUN) runs; each run starts Spark once.
CHUNKS_PER_RUN = 500
# Splitting steps per planning round: partitions appear in the UI round by round, and a crash
# mid-plan loses at most one round (the splitter's cursor is committed with the steps:
# cdc_core/mysql/snapshot_assigner.py, assign_into_store).
PLAN_STEPS_PER_ROUND = 2_000
# A run tag: plan at most this many split steps in this run, then stop (the plan stays incomplete,
# its cursor in the state); ``tidemark run`` loads what is planned and runs the job again.
PLAN_STEPS_TAG = "tidemark/plan_steps"


@dataclass(frozen=True)
class PipelineAssets:
    partitions: DynamicPartitionsDefinition
    snapshot_splits: AssetsDefinition
    snapshot_chunks: AssetsDefinition
    binlog_stream: AssetsDefinition

    @property
    def all(self) -> list[AssetsDefinition]:
        return [self.snapshot_splits, self.snapshot_chunks, self.binlog_stream]


def pipeline_of(context: Any, handle: PipelineHandle) -> Any:
    return getattr(context.resources, handle.resource_key)


def step_key_of(context: AssetExecutionContext) -> str:
    return context.op_execution_context.get_step_execution_context().step.key


def resolve_first(context: Any, service: PipelineService) -> dict[str, Any]:
    """Finish what an earlier run left PREPARED; report it in the metadata."""
    report: ResolveReport = service.resolve_pending()
    if report.committed or report.aborted:
        context.log.warning(
            f"Finished earlier work first: committed {len(report.committed)}, aborted {len(report.aborted)} "
            "transaction(s) left by an earlier run"
        )
    if report.redo:
        context.log.warning(
            f"Doris lost the loads of {len(report.redo)} chunk(s)/batch(es) before their commit (it aborted them on "
            f"its own): {list(report.redo)[:5]}; they are read again"
        )
    if report.failed:
        context.log.error(f"Could not resolve {len(report.failed)} pending transaction(s): {list(report.failed)[:5]}")
    return {
        "resolved_committed": len(report.committed),
        "resolved_aborted": len(report.aborted),
        "resolved_failed": len(report.failed),
        "resolved_redo": len(report.redo),
    }


def take_lease(context: AssetExecutionContext, service: PipelineService, scopes: list[str]) -> None:
    """Hold ``scopes`` of the pipeline for this run (``cdc_core/state/leases.py``) before anything
    is resolved or prepared: another live run holding them makes this one wait up to the lease's
    time to live (a run queued behind it starts as it ends), then fail with one line, having done
    nothing. The commit and abort hooks give the lease back; a run that dies leaves it to expire."""
    run = context.run
    try:
        dead = service.take_lease(scopes, purpose=f"Dagster run {run.run_id[:8]} ({run.job_name})", run_id=run.run_id,
                                  wait_s=service.definition.pipeline.run_lease_ttl_s)
    except LeaseHeld as exc:
        raise Failure(description=str(exc)) from exc
    fail_runs_of_dead_holders(context.instance, dead)
    for record in dead:
        context.log.warning(f"The lease on {record.scope} was a dead run's ({record.purpose} on {record.host}, pid "
                            f"{record.pid}: {record.death()}); what it left prepared is resolved by this run")


def _stream(context: AssetExecutionContext, service: PipelineService) -> tuple[list[BatchResult], StreamRunEnd]:
    """Batch after batch while the binlog moves on (``cdc_core/pipeline/stream_run.py``).

    Each batch is recorded in the step ledger as soon as it is PREPARED. Whether another follows
    is decided before its commit: every batch but the last is committed here, before the next is
    read; the last is left to the commit hook (or the abort hook), exactly as a single-batch run's.
    A batch that has caught up is committed here too when the run may wait for more
    (``tidemark.binlog.idle-wait-s``): if nothing comes, the run ends with no batch left to its hook.
    The ledger lists the batches committed here, so the hook reports the Doris tables all of them
    wrote. A stop request (``tidemark run``'s Ctrl-C, ``orchestration/defs/live_run.py``) ends the
    run with the batch in flight, which the hook commits."""
    override = context.run.tags.get(BINLOG_RUN_SECONDS_TAG)
    policy = service.stream_run_policy(float(override) if override is not None else None)
    ledger, run_id, step_key = service.step_ledger(), context.run.run_id, step_key_of(context)
    run_started = time.monotonic()
    batches: list[BatchResult] = []
    committed: list[str] = []
    while True:
        batch_started = time.monotonic()
        batch = service.run_binlog_batch()
        batches.append(batch)
        ledger.record(run_id, step_key, batch_id=batch.batch_id, committed_batch_ids=committed)
        end = policy.before_commit(batch, run_started, time.monotonic())
        if end is None and live_run.stop_requested():
            end = StreamRunEnd.STOPPED
        if end is not None:
            return batches, end
        ahead = BinlogOffset.from_dict(service.server_offset()) > BinlogOffset.from_dict(batch.end_offset)
        decision = policy.next_batch(ahead, bool(service.binlog_paused()), batch_started, run_started,
                                     time.monotonic())
        idle_until = None
        if decision is StreamRunEnd.CAUGHT_UP:
            # caught up: commit this batch here and wait a while for more (tidemark.binlog.idle-wait-s)
            idle_until = policy.idle_deadline(run_started, time.monotonic())
            decision = decision if idle_until is None else 0.0
        if isinstance(decision, StreamRunEnd):
            return batches, decision  # the commit hook commits the last batch
        try:
            committed_now = service.commit_batch(batch.batch_id)
        except Exception as exc:  # noqa: BLE001 - the hook retries; the batch stays PREPARED, never aborted
            context.log.warning(f"Committing binlog batch {batch.batch_id} failed ({exc}); the run ends and its "
                                "commit hook tries again (the batch stays PREPARED until it is committed)")
            return batches, StreamRunEnd.COMMIT_FAILED
        if not committed_now:
            context.log.warning(f"Doris lost a load of binlog batch {batch.batch_id} before the commit (it aborted "
                                "it on its own); the offset stays, and the next batch reads the same range again")
            ledger.record(run_id, step_key, batch_id=None, committed_batch_ids=committed)
            return batches, StreamRunEnd.LOST_LOAD
        committed = [*committed, batch.batch_id]
        ledger.record(run_id, step_key, batch_id=None, committed_batch_ids=committed)
        live_run.batch_committed(batch)
        context.log.info(f"Committed binlog batch {batch.batch_id} ({sum(batch.events_per_table.values())} "
                         f"change(s)); the stream is at {offset_text(batch.end_offset)}")
        if idle_until is not None:
            try:
                idle_end = _wait_for_binlog(service, batch.end_offset, idle_until)
            except Exception as exc:  # noqa: BLE001 - every batch is committed; the next run meets the error
                context.log.warning(f"Waiting for more binlog failed ({exc!r}); the run ends with every batch "
                                    "committed")
                return batches, StreamRunEnd.CAUGHT_UP
            if idle_end is not None:
                return batches, idle_end  # every batch is committed: the hook has none left
            decision = max(0.0, batch_started + policy.batch_interval_s - time.monotonic())
        if live_run.wait_unless_stopped(decision):
            return batches, StreamRunEnd.STOPPED  # every batch is committed: the hook has none left


IDLE_POLL_S = 0.25


def _wait_for_binlog(service: PipelineService, end_offset: dict[str, Any], until: float) -> StreamRunEnd | None:
    """Wait for the server's binlog to move past ``end_offset``: None once it has, else why the
    run ends (nothing came before ``until``, or a schema change asked the stream to pause)."""
    end = BinlogOffset.from_dict(end_offset)
    with service.session():  # one MySQL connection for every poll
        while True:
            if live_run.stop_requested():
                return StreamRunEnd.STOPPED
            if service.binlog_paused():
                return StreamRunEnd.PAUSED
            if BinlogOffset.from_dict(service.server_offset()) > end:
                return None
            if time.monotonic() >= until:
                return StreamRunEnd.CAUGHT_UP
            time.sleep(IDLE_POLL_S)


def offset_text(offset: dict[str, Any] | None) -> str:
    if not offset:
        return "-"
    return f"{offset.get('file')}:{offset.get('position')}"


def chunk_metadata(result: ChunkResult) -> dict[str, Any]:
    return {
        "rows": result.rows,
        "low_watermark": offset_text(result.low_watermark),
        "high_watermark": offset_text(result.high_watermark),
        "duration_s": round(result.duration_s, 3),
        "rows_per_s": round(result.rows_per_s, 1),
        "transactions": len(result.transactions),
    }


def add_partition_metadata(context: AssetExecutionContext, keys: list[str],
                           metadata: dict[str, dict[str, Any]]) -> None:
    """Each chunk's metadata on its own partition's materialization, as
    ``context.add_asset_metadata(md, partition_key=key)`` would put it. That call checks the key
    against the run's partition range by reading the partitions from the instance (every partition
    of the asset, and the range's ends) each time: for a run of 300 one-chunk tables, 300 reads of
    300 partitions, seconds of the driver's CPU (docs/performance.md, the estate). The keys are
    checked here once, against the run's own ``keys``, and added to the step's metadata as that
    call does after its check; on a Dagster without that step state, the public call is used."""
    unknown = sorted(set(metadata) - set(keys))
    if unknown:
        raise ValueError(f"metadata for partition(s) not in this run: {', '.join(unknown[:5])}")
    step = getattr(context, "_step_execution_context", None)
    accumulator = getattr(step, "_metadata_accumulator", None)
    if accumulator is None or not hasattr(accumulator, "with_additional_asset_metadata"):
        for key, md in metadata.items():
            context.add_asset_metadata(md, partition_key=key)
        return
    asset_key = context.assets_def.key
    for key, md in metadata.items():
        accumulator = accumulator.with_additional_asset_metadata(asset_key=asset_key, partition_key=key, metadata=md)
    step._metadata_accumulator = accumulator


def plan_and_register(instance: Any, partitions_name: str, service: PipelineService, limit: int | None,
                      log: Any = logger.info) -> dict[str, Any]:
    """Plan the snapshot's split (``limit`` steps, or rounds to the end), register one
    snapshot_chunks partition per new chunk as each round ends, and drop the partitions of chunks a
    complete plan no longer has; the metadata of snapshot_splits' materialization. Shared by the
    asset and by ``tidemark run --once``, which plans in its own process without a Dagster run
    (``orchestration/cli/run_once.py``): the same steps, so a crash between any two resumes alike."""
    known = set(instance.get_dynamic_partitions(partitions_name))
    rounds = 0
    while True:
        plan = service.plan_splits(max_steps=limit or PLAN_STEPS_PER_ROUND)
        rounds += 1
        new = [k for k in plan.chunk_keys if k not in known]
        if new:
            instance.add_dynamic_partitions(partitions_name, new)
            known.update(new)
            log(f"Registered {len(new)} chunk partition(s) ({len(known)} in all)")
        if plan.complete or limit:
            break
    planned = set(plan.chunk_keys)
    stale = sorted(known - planned) if plan.complete else []
    for key in stale:
        instance.delete_dynamic_partition(partitions_name, key)
    per_table: dict[str, int] = {}
    for key in plan.chunk_keys:
        table = key.rpartition("#")[0]
        per_table[table] = per_table.get(table, 0) + 1
    notes = "\n".join(f"- {n}" for n in plan.notes) or "(none)"
    return {
        "tables": len(plan.tables),
        "chunks": len(plan.chunk_keys),
        "chunks_per_table": MetadataValue.json(per_table),
        "planning_rounds": rounds,
        "complete": plan.complete,
        "stale_partitions_removed": len(stale),
        "notes": MetadataValue.md(notes),
    }


def build_assets(handle: PipelineHandle, hooks: PipelineHooks) -> PipelineAssets:
    resource_key = handle.resource_key
    partitions = DynamicPartitionsDefinition(name=handle.partitions_name)

    @asset(
        key=handle.splits_key,
        group_name=handle.group_name,
        kinds={"mysql"},
        pool=handle.pool,
        required_resource_keys={resource_key},
        description=(
            "Split assignment: discovers the captured tables, splits each into key-range chunks "
            "(resumably: a huge table is split in rounds) and registers one snapshot_chunks "
            "partition per chunk."
        ),
    )
    @one_line_failures
    def snapshot_splits(context: AssetExecutionContext) -> MaterializeResult:
        service = pipeline_of(context, handle).service()
        take_lease(context, service, [Scope.PLAN])
        try:
            return _plan(context, service)
        finally:
            service.give_back_lease(run_id=context.run.run_id)

    def _plan(context: AssetExecutionContext, service: PipelineService) -> MaterializeResult:
        resolved = resolve_first(context, service)
        # `tidemark run` plans a slice, loads it, plans the next (PLAN_STEPS_TAG); a run without the
        # tag (the UI, a schedule) plans to the end, registering each round's chunks as it goes
        limit = context.run.tags.get(PLAN_STEPS_TAG)
        metadata = plan_and_register(context.instance, partitions.name, service, int(limit) if limit else None,
                                     context.log.info)
        return MaterializeResult(metadata={**metadata, **resolved})

    @asset(
        key=handle.chunks_key,
        deps=[handle.splits_key],
        group_name=handle.group_name,
        kinds={"spark", "doris"},
        partitions_def=partitions,
        backfill_policy=BackfillPolicy.multi_run(max_partitions_per_run=CHUNKS_PER_RUN),
        pool=handle.pool,
        hooks={hooks.commit_chunks, hooks.abort_chunks},
        required_resource_keys={resource_key},
        description=(
            "The snapshot, one partition per chunk: each run reads its chunks between low and "
            "high binlog watermarks on Spark and stream-loads them into Doris (prepared; the "
            "commit hook makes them visible). Backfill a range or all of them from the UI."
        ),
    )
    @one_line_failures
    def snapshot_chunks(context: AssetExecutionContext) -> MaterializeResult:
        pipeline = pipeline_of(context, handle)
        service = pipeline.service()
        keys = list(context.partition_keys)
        take_lease(context, service, sorted({snapshot_scope(k.rpartition("#")[0]) for k in keys}))
        resolved = resolve_first(context, service)
        ledger = service.step_ledger()
        step_key = step_key_of(context)
        ledger.record(context.run.run_id, step_key, chunk_keys=keys)
        started = time.monotonic()
        parity = run_checks_parity(context.instance, context.run.run_id, handle)
        results = service.run_chunks(keys, parity_run_id=context.run.run_id if parity else None)
        ledger.record(context.run.run_id, step_key, prepared=[r.key for r in results])
        elapsed = time.monotonic() - started
        add_partition_metadata(context, keys, {r.key: chunk_metadata(r) for r in results})
        total = sum(r.rows for r in results)
        return MaterializeResult(
            metadata={
                "run_chunks": len(results),
                "run_rows": total,
                "run_duration_s": round(elapsed, 3),
                "run_rows_per_s": round(total / elapsed, 1) if elapsed > 0 else 0.0,
                **resolved,
            }
        )

    @asset(
        key=handle.binlog_key,
        deps=[handle.chunks_key],
        group_name=handle.group_name,
        kinds={"mysql", "doris"},
        pool=handle.pool,
        hooks={hooks.commit_batch, hooks.abort_batch},
        required_resource_keys={resource_key},
        description=(
            "The binlog stream: each materialization applies one micro-batch from the committed "
            "offset up to the server's position when it started (stopping at a DDL). Waits until "
            "every snapshot chunk is committed. binlog_sensor and incremental_schedule drive it."
        ),
    )
    @one_line_failures
    def binlog_stream(context: AssetExecutionContext) -> MaterializeResult:
        service = pipeline_of(context, handle).service()
        take_lease(context, service, [Scope.STREAM])
        resolved = resolve_first(context, service)
        paused = service.binlog_paused()
        if paused:
            raise Failure(
                description=f"The binlog of pipeline '{handle.slug}' is paused ({paused!r}): a schema change is "
                "being applied. The stream resumes when the schema_change job clears the flag."
            )
        if not service.binlog_ready() and service.resnapshot_in_progress():
            raise Failure(
                description=f"A resnapshot of pipeline '{handle.slug}' is under way "
                f"({', '.join(service.resnapshot_in_progress())}): re-execute {handle.slug}_resnapshot_job or run "
                "`tidemark resnapshot PIPELINE.yaml` to finish it; the stream goes on from its watermarks."
            )
        if not service.binlog_ready():
            raise Failure(
                description=f"The snapshot of pipeline '{handle.slug}' is not finished: materialize "
                f"{handle.slug}/snapshot_splits and backfill all partitions of {handle.slug}/snapshot_chunks "
                "first; binlog_stream starts at the chunks' lowest high watermark once every chunk is committed."
            )
        batches, end = _stream(context, service)
        batch = batches[-1]
        events = sum(sum(b.events_per_table.values()) for b in batches)
        per_table: dict[str, int] = {}
        for b in batches:
            for table, count in b.events_per_table.items():
                per_table[table] = per_table.get(table, 0) + count
        metadata: dict[str, Any] = {
            "batch_id": batch.batch_id,
            "start_offset": offset_text(batches[0].start_offset),
            "end_offset": offset_text(batch.end_offset),
            "events": events,
            "events_per_table": MetadataValue.json(per_table),
            "transactions": sum(len(b.transactions) for b in batches),
            "batches": len(batches),
            "run_ended": end.value,
            **resolved,
        }
        if batch.lag_s is not None:
            metadata["lag_s"] = round(batch.lag_s, 3)
        for healed in (b.healed for b in batches if b.healed):
            # tidemark.binlog.on-purged: resnapshot: the binlog to resume from was purged and the
            # pipeline re-read its tables (cdc_core/pipeline/resnapshot.py) before this batch.
            detail = json.loads(json.dumps(healed, default=str))
            context.log.warning(f"The binlog to resume from ({healed.get('purged_offset')}) was purged; "
                                f"tidemark.binlog.on-purged is 'resnapshot': {len(healed['tables'])} table(s) read "
                                f"again ({healed['chunks']} chunk(s)), rows MySQL lost meanwhile deleted: "
                                f"{healed['deleted']}; the stream goes on from the new watermarks")
            context.log_event(AssetObservation(asset_key=handle.binlog_key, description=(
                "binlog purged: the pipeline re-snapshotted its tables (tidemark.binlog.on-purged: resnapshot)"),
                metadata={"resnapshot": MetadataValue.json(detail)}))
            metadata["resnapshot_after_purge"] = MetadataValue.json(detail)
        if batch.stopped_at_ddl:
            metadata["stopped_at_ddl"] = MetadataValue.json(json.loads(json.dumps(batch.stopped_at_ddl, default=str)))
            context.log.warning(f"Stopped at a DDL on a captured table: {batch.stopped_at_ddl}")
        return MaterializeResult(metadata=metadata)

    return PipelineAssets(partitions, snapshot_splits, snapshot_chunks, binlog_stream)
