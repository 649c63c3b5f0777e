"""``binlog_sensor``: launch a ``binlog_stream`` run whenever the server's binlog has moved on.

The decision (shared with ``incremental_schedule``) is, in order:

1. the pause flag (``flags/binlog_paused``, set by the schema-change job) → skip, saying why;
2. a run of this pipeline still in flight (any launch path) → skip: never two at once;
3. the snapshot not finished → skip: the stream starts once every chunk is committed;
4. transactions left prepared by a failed commit hook → finish them now (``resolve_pending``;
   safe, nothing of this pipeline is running);
5. the binlog not past the committed offset → skip;
6. otherwise request a run, keyed by the offset range, so a range is requested once. A range
   whose run failed gets a numbered retry key (``orchestration.defs.runs.next_run_key``), up to
   ``MAX_RETRIES`` times (``orchestration.defs.runs``), then the sensor stops asking and says so
   (the failed run's log has the cause).

The sensor runs by default; ``incremental_schedule`` is the opt-in alternative (see its module).
"""


import os
import warnings
from typing import Any

from dagster import (
    BetaWarning,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    JobDefinition,
    RunRequest,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from cdc_core.pipeline.service import PipelineService
from cdc_core.state.leases import Scope, overlaps
from orchestration.defs.assets import offset_text
from orchestration.defs.pipelines import STREAM_TAG, PipelineHandle
from orchestration.defs.runs import LeaseView, next_run_key, runs_in_flight

# Dagster 1.13 copies every sensor definition it loads through its own beta ``owners`` parameter
# and warns about it (sensor_definition.py), at each code server start; nothing of ours uses it.
warnings.filterwarnings("ignore", category=BetaWarning, message=r"Parameter `owners` of initializer `SensorDefinition")

SENSOR_INTERVAL_S = 1  # the daemon evaluates sensors at most every ~5 s anyway
# Opt-in (=1): while one binlog run of the pipeline is executing, queue the next one, which the
# stream tag limit and the pool start only when the first has finished. Saves the sensor tick
# and the dequeue wait per cycle (freshness), at the price of "one running + one queued".
QUEUE_AHEAD_ENV = "TIDEMARK_BINLOG_QUEUE_AHEAD"


def _may_queue_behind(handle: PipelineHandle, in_flight: list[Any]) -> bool:
    """One sensor/schedule binlog run executing and nothing else of the pipeline in flight."""
    if len(in_flight) != 1:
        return False
    run = in_flight[0]
    return run.status == DagsterRunStatus.STARTED and run.tags.get(STREAM_TAG) == handle.slug


def decide_binlog_run(handle: PipelineHandle, service: PipelineService, instance: DagsterInstance,
                      log: Any = None, queue_ahead: bool | None = None) -> RunRequest | SkipReason:
    if queue_ahead is None:
        queue_ahead = os.environ.get(QUEUE_AHEAD_ENV) == "1"
    paused = service.binlog_paused()
    if paused:
        return SkipReason(f"binlog of '{handle.slug}' is paused by a schema change ({paused!r})")
    live = service.live_leases()
    # A run that died in its setup, before its first step took a lease, is marked failed here (a
    # sensor holds no lease, so it judges only runs that never started a step: runs.py:LeaseView).
    leases = LeaseView(frozenset(r.run_id for r in live if r.run_id), service.definition.pipeline.run_lease_ttl_s,
                       any_steps=False)
    in_flight = runs_in_flight(instance, prefix=handle.owns_asset_prefix, leases=leases,
                               on_failed=(lambda gone: log.warning(gone.line)) if log is not None else None)
    holders = [h for h in service.lease_holders() if overlaps(Scope.STREAM, h.scope)]
    if holders and not (queue_ahead and in_flight and _may_queue_behind(handle, in_flight)):
        # a run on another machine or instance, or `tidemark run` (cdc_core/state/leases.py)
        return SkipReason(f"'{handle.slug}' is being run by {holders[0].purpose} on {holders[0].host} "
                          f"(pid {holders[0].pid}); never two runs of a pipeline's stream at once")
    if in_flight and not (queue_ahead and _may_queue_behind(handle, in_flight)):
        run = in_flight[0]
        return SkipReason(f"run {run.run_id[:8]} of '{handle.slug}' is {run.status.value.lower()}; "
                          "never two runs of a pipeline at once")
    if not service.binlog_ready():
        if service.resnapshot_in_progress():
            return SkipReason(f"a resnapshot of '{handle.slug}' is under way: the stream goes on once it is done "
                              f"(re-execute {handle.slug}_resnapshot_job if it failed)")
        return SkipReason(f"the snapshot of '{handle.slug}' is not finished (backfill all snapshot_chunks partitions)")
    # Resolving is safe only when nothing of the pipeline runs (it would finish a live run's work).
    if not in_flight and service.pending_transactions():
        report = service.resolve_pending()
        if log is not None:
            log.warning(f"resolved transactions a failed commit left: committed {len(report.committed)}, "
                        f"aborted {len(report.aborted)}, still failing {len(report.failed)}")
        if report.failed:
            return SkipReason(f"{len(report.failed)} prepared transaction(s) of '{handle.slug}' could not be "
                              "resolved yet (Doris unreachable?); retrying next tick")
    lag = service.binlog_lag()
    if not lag.behind:
        return SkipReason(f"'{handle.slug}' is caught up at {offset_text(lag.committed_offset)}")
    base = f"{handle.slug}:{offset_text(lag.committed_offset)}..{offset_text(lag.server_offset)}"
    choice = next_run_key(instance, base)
    if choice.run_key is None:
        last = choice.run.run_id[:8] if choice.run is not None else "?"
        return SkipReason(f"the binlog range {base} failed {choice.attempts} times (last run "
                          f"{last}); fix the cause, then materialize binlog_stream by hand")
    return RunRequest(
        run_key=choice.run_key,
        tags={**handle.run_tags(stream=True), "tidemark/binlog_range": base},
    )


def build_binlog_sensor(handle: PipelineHandle, job: JobDefinition | UnresolvedAssetJobDefinition) -> SensorDefinition:
    resource_key = handle.resource_key

    @sensor(
        name=handle.sensor_name,
        job=job,
        minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        required_resource_keys={resource_key},
        description=(f"Requests a {handle.slug}/binlog_stream run when the MySQL binlog has moved past the "
                     "committed offset (one at a time; skips while paused or while the snapshot runs)."),
    )
    def binlog_sensor(context: SensorEvaluationContext):
        service = getattr(context.resources, resource_key).service()
        return decide_binlog_run(handle, service, context.instance, context.log)

    return binlog_sensor
