"""Schema evolution in Dagster: the ``ddl_sensor`` and the ``schema_change`` op job.

``<pipeline>_schema_change`` is a graph of four ops, each one visible in the UI with its own
log and metadata::

    quiesce ──► flush ──► apply ──► resume

* **quiesce** pauses the stream (``flags/binlog_paused``, read by ``binlog_sensor``,
  ``incremental_schedule`` and ``binlog_stream`` itself) and waits for in-flight stream runs;
* **flush** commits the binlog up to the DDL with the old schema;
* **apply** derives the Doris changes per ``schema.change.behavior`` and applies them; after
  partition maintenance that removed rows without row events it reloads the table
  (``cdc_core/pipeline/reload.py``);
* **resume** moves the committed offset past the DDL and lifts the pause.

The coordinator's state (``cdc_core.schema_evolution.registry``) lives in the pipeline's state store, so
re-executing a failed or killed run (or launching a new one) resumes exactly where it stopped;
every op is a no-op once the registry is past it. Runs carry the pipeline's stream tag, so
dagster.yaml never lets one overlap a ``binlog_stream`` run.

``<pipeline>_ddl_sensor`` scans the binlog between the committed offset and the server's
position for DDL on captured tables (``SHOW BINLOG EVENTS``, no rows decoded) and requests a
``schema_change`` run keyed by the DDL's offset; an unfinished schema change (a failed run) is
requested again, a few times, like the binlog sensor's retries.
"""


from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster import (
    Config,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    Definitions,
    In,
    JobDefinition,
    MetadataValue,
    Nothing,
    OpExecutionContext,
    Output,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SkipReason,
    in_process_executor,
    job,
    op,
    sensor,
)

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.purge import BinlogPurgedError
from cdc_core.pipeline.schema_change import SchemaChangeSteps
from cdc_core.state.leases import Scope
from orchestration.defs.assets import take_lease
from orchestration.defs.failures import one_line_failures
from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.runs import EXECUTING_STATUSES, IN_FLIGHT_STATUSES, next_run_key, runs_in_flight

# Dequeued before the binlog_stream runs queued earlier: the stream is paused until it is done.
PRIORITY_TAG, PRIORITY = "dagster/priority", "10"
SENSOR_INTERVAL_S = 1  # the daemon evaluates sensors at most every few seconds anyway
DDL_TAG = "tidemark/ddl_offset"


def schema_change_job_name(handle: PipelineHandle) -> str:
    return f"{handle.slug}_schema_change"


def ddl_sensor_name(handle: PipelineHandle) -> str:
    return f"{handle.slug}_ddl_sensor"


class SchemaChangeConfig(Config):
    """The DDL to carry over: its binlog offset (file and end position). Empty: the next DDL."""

    ddl_file: str = ""
    ddl_position: int = 0
    # The failovers the pipeline had followed when the DDL was found (BinlogOffset.epoch): offsets
    # order by epoch first, and without it a DDL found after a failover ordered before the stream's
    # committed offset, so the flush took it for one already passed (found by the soak).
    ddl_epoch: int = 0

    def offset(self) -> BinlogOffset | None:
        return BinlogOffset(self.ddl_file, self.ddl_position, epoch=self.ddl_epoch) if self.ddl_file else None


def _json(value: Any) -> Any:
    import json

    return MetadataValue.json(json.loads(json.dumps(value, default=str)))


def build_schema_change_job(handle: PipelineHandle) -> JobDefinition:
    resource_key = handle.resource_key

    def steps(context: OpExecutionContext) -> SchemaChangeSteps:
        service = getattr(context.resources, resource_key).service()

        def in_flight() -> list[str]:
            # Only runs that are executing: a queued binlog_stream run cannot start before this run
            # ends (dagster.yaml: one stream-tagged run per pipeline), so waiting for it would deadlock.
            runs = runs_in_flight(context.instance, asset_keys={handle.binlog_key}, exclude_run_id=context.run_id)
            return [r.run_id for r in runs if r.status in EXECUTING_STATUSES]

        return service.schema_change_steps(run_id=context.run_id, in_flight=in_flight, log_fn=context.log.info)

    @contextmanager
    def holding_the_stream(context: OpExecutionContext, *, last: bool = False) -> Iterator[None]:
        """The stream's lease (``cdc_core/state/leases.py``) from the end of ``quiesce`` to the end of
        ``resume``: no other run, here or on another machine (a ``tidemark run`` finishing the same
        schema change), writes the stream meanwhile. Given back when the run ends or an op fails
        (the pause flag stays: re-executing the run, or the next ``tidemark run``, goes on)."""
        service = getattr(context.resources, resource_key).service()
        take_lease(context, service, [Scope.STREAM])
        try:
            yield
        except BaseException:
            service.give_back_lease(run_id=context.run_id)
            raise
        if last:
            service.give_back_lease(run_id=context.run_id)

    @op(name="quiesce", required_resource_keys={resource_key},
        description="Pause binlog_stream (its sensor and schedule skip) and wait for in-flight stream runs.")
    @one_line_failures
    def quiesce(context: OpExecutionContext, config: SchemaChangeConfig):
        result = steps(context).quiesce(config.offset())
        with holding_the_stream(context):  # the stream runs in flight have ended: take it for the change
            pass
        yield Output(None, metadata={"status": result["status"], "detail": _json(result)})

    @op(name="flush", ins={"after": In(Nothing)}, required_resource_keys={resource_key},
        description="Apply and commit the binlog up to the DDL with the old schema (the FlushEvent).")
    @one_line_failures
    def flush(context: OpExecutionContext):
        with holding_the_stream(context):
            result = steps(context).flush()
        yield Output(None, metadata={"status": result["status"], "detail": _json(result)})

    @op(name="apply", ins={"after": In(Nothing)}, required_resource_keys={resource_key},
        description="Derive the Doris changes per schema.change.behavior and apply them (the MetadataApplier).")
    @one_line_failures
    def apply(context: OpExecutionContext):
        with holding_the_stream(context):
            result = steps(context).apply()
        yield Output(None, metadata={"status": result["status"], "detail": _json(result)})

    @op(name="resume", ins={"after": In(Nothing)}, required_resource_keys={resource_key},
        description="Move the committed offset past the DDL, lift the pause and apply the first batch after it.")
    @one_line_failures
    def resume(context: OpExecutionContext):
        with holding_the_stream(context, last=True):
            result = steps(context).resume(first_batch=True)
        yield Output(None, metadata={"status": result["status"], "detail": _json(result)})

    @job(name=schema_change_job_name(handle), executor_def=in_process_executor,
         tags={**handle.run_tags(stream=True), PRIORITY_TAG: PRIORITY},
         description=(f"Carry a DDL of {handle.slug}'s source over to Doris: quiesce → flush → apply → resume "
                      "(resumable: re-execute a failed run, it continues where it stopped)."))
    def schema_change():
        resume(after=apply(after=flush(after=quiesce())))

    return schema_change


def run_config_for(offset: BinlogOffset | None) -> dict[str, Any]:
    config: dict[str, Any] = {} if offset is None else {"ddl_file": offset.file, "ddl_position": offset.position}
    if offset is not None and offset.epoch:
        config["ddl_epoch"] = offset.epoch
    return {"ops": {"quiesce": {"config": config}}}


def decide_schema_change_run(handle: PipelineHandle, service: Any, instance: Any) -> RunRequest | SkipReason:
    """What ``ddl_sensor`` does on a tick (also usable from a schedule or a test)."""
    job_name = schema_change_job_name(handle)
    in_flight = instance.get_runs(filters=RunsFilter(job_name=job_name, statuses=IN_FLIGHT_STATUSES), limit=1)
    if in_flight:
        return SkipReason(f"schema_change run {in_flight[0].run_id[:8]} of '{handle.slug}' is in flight")
    registry = service.schema_registry()
    current = registry.current()
    offset: BinlogOffset | None
    if current is not None:
        # An unfinished schema change (a failed or killed run): it is the first pending DDL.
        raw = current.get("ddl_offset") or current.get("requested_offset")
        offset = BinlogOffset.from_dict(raw) if raw else None
    else:
        try:
            found = service.schema_change_steps().next_ddl()
        except BinlogPurgedError as exc:
            # Not this sensor's to heal: the binlog stream's run meets the same purge and resnapshots
            # (tidemark.binlog.on-purged: resnapshot) or stops with the message naming the fix.
            return SkipReason(f"the binlog '{handle.slug}' would resume from ({exc.offset.file}) was purged; "
                              "binlog_stream heals it (tidemark.binlog.on-purged: resnapshot) or stops naming "
                              "`tidemark resnapshot`; no DDL to look for until then")
        if found is None:
            return SkipReason(f"no DDL on a captured table of '{handle.slug}' ahead of the committed offset")
        offset = found.offset
    base = f"{handle.slug}:ddl:{offset.file}:{offset.position}" if offset else f"{handle.slug}:ddl:next"


    def spent(run: DagsterRun) -> bool:
        """Any run under a key spends it, except one that carried this DDL over (nothing is left to do)."""
        done = run.status == DagsterRunStatus.SUCCESS and (offset is None or registry.handled(offset) is not None)
        return current is not None or not done

    choice = next_run_key(instance, base, spent=spent)
    if choice.run_key is None:
        last = choice.run.run_id[:8] if choice.run is not None else "?"
        return SkipReason(f"schema_change for {base} failed {choice.attempts} times (last run "
                          f"{last}: see its log); fix the cause and re-execute it")
    if choice.run is not None:
        return SkipReason(f"the DDL at {offset} was carried over by run {choice.run.run_id[:8]}")
    tags = {**handle.run_tags(stream=True), PRIORITY_TAG: PRIORITY}
    if offset is not None:
        tags[DDL_TAG] = f"{offset.file}:{offset.position}"
    return RunRequest(run_key=choice.run_key, run_config=run_config_for(offset), tags=tags)


def build_ddl_sensor(handle: PipelineHandle, schema_change_job: JobDefinition) -> SensorDefinition:
    resource_key = handle.resource_key

    @sensor(name=ddl_sensor_name(handle), job=schema_change_job, minimum_interval_seconds=SENSOR_INTERVAL_S,
            default_status=DefaultSensorStatus.RUNNING, required_resource_keys={resource_key},
            description=(f"Watches {handle.slug}'s binlog between the committed offset and the server's position for "
                         "DDL on captured tables and launches schema_change for it (binlog_stream never reads past "
                         "a DDL)."))
    def ddl_sensor(context: SensorEvaluationContext):
        service = getattr(context.resources, resource_key).service()
        if not service.binlog_ready():
            return SkipReason(f"the snapshot of '{handle.slug}' is not finished")
        return decide_schema_change_run(handle, service, context.instance)

    return ddl_sensor


def build_schema_change_defs(handle: PipelineHandle) -> Definitions:
    """The schema-change job and the DDL sensor of one pipeline (the pipeline's resource is
    registered by ``build_pipeline_defs``)."""
    schema_change = build_schema_change_job(handle)
    return Definitions(jobs=[schema_change], sensors=[build_ddl_sensor(handle, schema_change)])


__all__ = ["SchemaChangeConfig", "build_ddl_sensor", "build_schema_change_defs", "build_schema_change_job",
           "decide_schema_change_run", "ddl_sensor_name", "run_config_for", "schema_change_job_name"]
