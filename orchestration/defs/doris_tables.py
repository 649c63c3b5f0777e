"""The Doris tables as assets: one ``doris/<db>.<table>`` asset per table a pipeline writes.

Which tables those are is known only after discovery (the ``tables`` selector against the server,
then the ``route:`` rules), so the assets are built when the code location loads, from the state
store (``PipelineService.doris_targets``: the schema history the split plan recorded; no MySQL,
no Doris). A pipeline that has not planned yet has none; after ``snapshot_splits`` (or a schema
change that brings in a table), reloading the code location (the UI's Reload, or restarting
``tidemark dev``) shows them. Reading the state store beats asking MySQL at load time: loading
stays fast and works while MySQL is down, and it lists exactly the tables the pipeline loads.

They are external assets (``AssetSpec``): no Dagster step computes them, the pipeline's own
assets load them, and Dagster's UI offers no Materialize button that could not do anything. The
commit hooks (``orchestration/defs/hooks.py``) report an ``AssetMaterialization`` for every table a
snapshot run or a binlog batch made rows visible in, after the commit and never before it,
carrying Dagster's standard ``dagster/column_schema`` and ``dagster/row_count``. Downstream
assets (dbt models, exports) can therefore depend on a Doris table and be automated on it.

How they look in the asset graph: the graph names a node by the last component of its key, so
the key is ``["doris", "<db>.<table>"]`` and the node reads ``shop.orders`` (with ``["doris",
"<db>", "<table>"]``, the key of earlier versions, 300 tables read ``t149`` without their
database). Each table sits in the asset group of its Doris database, ``<pipeline>__<db>``
(``PipelineHandle.database_group_name``), beside the pipeline's own group: the global asset graph
shows one collapsed box per database until it is opened. A table depends on ``binlog_stream`` alone, which
depends on ``snapshot_chunks``: the lineage is the same, with one edge per table instead of two.

Each table has a time-window ``FreshnessPolicy`` (Dagster's successor of the freshness checks
``build_last_update_freshness_checks`` made, which 1.13 marks superseded): it fails when no
commit touched the table for ``TIDEMARK_FRESHNESS_FAIL_MINUTES`` (default 1440) and warns after
``TIDEMARK_FRESHNESS_WARN_MINUTES`` (default 60). A table whose MySQL source is not written
goes stale too: the policy says when the table last changed, not whether the stream runs.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from datetime import timedelta

from dagster import (
    AssetKey,
    AssetMaterialization,
    AssetSpec,
    DagsterInstance,
    FreshnessPolicy,
    MetadataValue,
    TableColumn,
    TableColumnConstraints,
    TableSchema,
)

from cdc_core.pipeline.targets import DorisTarget, TargetColumn, TargetUpdate
from orchestration.defs.pipelines import PipelineHandle

logger = logging.getLogger(__name__)

FAIL_ENV = "TIDEMARK_FRESHNESS_FAIL_MINUTES"
WARN_ENV = "TIDEMARK_FRESHNESS_WARN_MINUTES"
DEFAULT_FAIL_MINUTES = 24 * 60
DEFAULT_WARN_MINUTES = 60


def doris_table_key(table_id: str) -> AssetKey:
    """``doris/<db>.<table>``: the key names the Doris table, not the pipeline, so a downstream
    asset depends on the table wherever it comes from; its last component, ``<db>.<table>``, is
    what the asset graph writes on the node."""
    return AssetKey(["doris", table_id])


def _minutes(env: str, default: int) -> int:
    text = os.environ.get(env)
    if not text:
        return default
    try:
        value = int(text)
    except ValueError as exc:
        raise ValueError(f"{env}={text!r} is not a whole number of minutes; set it like {env}={default}") from exc
    if value <= 0:
        raise ValueError(f"{env}={text!r} must be a positive number of minutes; set it like {env}={default}")
    return value


def freshness_policy() -> FreshnessPolicy:
    fail = _minutes(FAIL_ENV, DEFAULT_FAIL_MINUTES)
    warn = _minutes(WARN_ENV, DEFAULT_WARN_MINUTES)
    if warn >= fail:
        raise ValueError(f"{WARN_ENV}={warn} must be less than {FAIL_ENV}={fail}; lower the warning window")
    return FreshnessPolicy.time_window(fail_window=timedelta(minutes=fail), warn_window=timedelta(minutes=warn))


def column_schema(columns: Sequence[TargetColumn]) -> TableSchema:
    """Dagster's ``dagster/column_schema`` of a table's columns."""
    return _column_schema(tuple(columns))


@functools.lru_cache(maxsize=4096)
def _column_schema(columns: tuple[TargetColumn, ...]) -> TableSchema:
    """Built once per set of columns (a ``TableSchema`` is immutable): a commit reports every table
    it wrote, and building Dagster's checked records for each column of each table was ~15 % of
    the report's CPU, the tables of a database often sharing their columns."""
    return TableSchema(columns=[
        TableColumn(c.name, c.type, description="key" if c.key else None,
                    constraints=TableColumnConstraints(nullable=c.nullable, unique=False))
        for c in columns
    ])


def doris_table_specs(handle: PipelineHandle, targets: Sequence[DorisTarget]) -> list[AssetSpec]:
    """One external asset per Doris table, downstream of ``binlog_stream`` (and so of the snapshot
    before it), in the asset group of its database."""
    policy = freshness_policy()
    specs = []
    for target in targets:
        metadata: dict[str, object] = {
            "dagster/table_name": target.table_id,
            "sources": MetadataValue.json(list(target.sources)),
            "pipeline": handle.slug,
        }
        if target.columns:
            metadata["dagster/column_schema"] = column_schema(target.columns)
        specs.append(AssetSpec(
            key=doris_table_key(target.table_id),
            deps=[handle.binlog_key],
            group_name=handle.database_group_name(target.database),
            kinds={"doris"},
            metadata=metadata,
            freshness_policy=policy,
            description=(f"The Doris table {target.table_id}, loaded by pipeline '{handle.slug}' from "
                         f"{', '.join(target.sources)}. Materialized when a snapshot run or a binlog batch "
                         "commits rows into it."),
        ))
    return specs


def report_written(instance: DagsterInstance, updates: Sequence[TargetUpdate], *, run_id: str, by: str) -> None:
    """Record a materialization of each Doris table a commit made rows visible in: run-less events,
    written together where Dagster's batches are on (``DAGSTER_EVENT_BATCH_SIZE``, as Tidemark's
    commands set it): Tidemark's SQLite event log takes them as one batch, a PostgreSQL one in one
    transaction (``orchestration/defs/event_storage.py``); any other storage one by one."""
    from dagster._core.events import (
        DagsterEvent,
        DagsterEventBatchMetadata,
        DagsterEventType,
        StepMaterializationData,
        generate_event_batch_id,
    )
    from dagster._core.events.log import EventLogEntry
    from dagster._core.instance.utils import RUNLESS_JOB_NAME, RUNLESS_RUN_ID
    from dagster._time import get_current_timestamp

    from orchestration.defs.event_storage import BatchingSqliteEventLogStorage, store_together_on_postgres

    # what report_runless_asset_event records, one event per table
    events = [DagsterEvent(event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value,
                           event_specific_data=StepMaterializationData(_materialization(update, run_id=run_id, by=by)),
                           job_name=RUNLESS_JOB_NAME) for update in updates]
    entries = [EventLogEntry(user_message="", level=logging.INFO, job_name=RUNLESS_JOB_NAME, run_id=RUNLESS_RUN_ID,
                             error_info=None, timestamp=get_current_timestamp(), step_key=None, dagster_event=event)
               for event in events]
    # One batch for every table only where the storage keeps each event's asset whole: Dagster's
    # batches are of one asset's partitions, and dagster-postgres's store_event_batch records only
    # the batch's last event as its asset's latest (the other tables would read "never
    # materialized"), hence its own path.
    if not store_together_on_postgres(instance, entries):
        batched = isinstance(instance.event_log_storage, BatchingSqliteEventLogStorage)
        batch_id = generate_event_batch_id()
        for n, entry in enumerate(entries):
            instance.handle_new_event(
                entry, batch_metadata=DagsterEventBatchMetadata(batch_id, n == len(entries) - 1) if batched else None)
    if updates:
        logger.info("reported %d Doris table materialization(s) after %s", len(updates), by)


def _materialization(update: TargetUpdate, *, run_id: str, by: str) -> AssetMaterialization:
    metadata: dict[str, object] = {
        "dagster/row_count": MetadataValue.int(update.rows),
        "committed_by": by,
        "committing_run": MetadataValue.dagster_run(run_id),
    }
    if update.target.columns:
        metadata["dagster/column_schema"] = column_schema(update.target.columns)
    return AssetMaterialization(
        asset_key=doris_table_key(update.target.table_id),
        description=f"{by} committed rows into {update.target.table_id}",
        metadata=metadata,
    )


__all__ = ["doris_table_key", "doris_table_specs", "freshness_policy", "report_written"]
