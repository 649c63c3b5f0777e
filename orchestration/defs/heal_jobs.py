"""Healing jobs from the UI: ``<pipeline>_resnapshot_job`` and ``<pipeline>_repair_job``.

* **resnapshot_job** re-reads every (or the configured) captured table from now and deletes from
  Doris the rows MySQL lost meanwhile (``cdc_core/pipeline/resnapshot.py``); when the binlog the
  stream resumes from was purged, the stream restarts at the new chunks' watermarks. What
  ``tidemark resnapshot`` does, and what ``tidemark.binlog.on-purged: resnapshot`` runs unattended
  inside ``binlog_stream``.
* **repair_job** mends the rows ``verify`` finds different (``cdc_core/pipeline/parity/repair.py``):
  what ``tidemark verify --repair`` does; the ``table_parity`` check's failure names it.

Both are one op over the pipeline service, resumable by re-executing them (a resnapshot under
way is continued, a repair verifies again). They carry the pipeline's stream tag and pool, so
dagster.yaml never lets one overlap a ``binlog_stream`` or schema-change run.
"""

import json
from typing import Any

from dagster import (
    Config,
    Definitions,
    Failure,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    Output,
    in_process_executor,
    job,
    op,
)

from orchestration.defs.failures import one_line_failures
from orchestration.defs.pipelines import PipelineHandle


class TablesConfig(Config):
    """The tables as ``db.table``; empty: every captured table."""

    tables: list[str] = []


def resnapshot_job_name(handle: PipelineHandle) -> str:
    return f"{handle.slug}_resnapshot_job"


def repair_job_name(handle: PipelineHandle) -> str:
    return f"{handle.slug}_repair_job"


def _json(value: Any) -> Any:
    return MetadataValue.json(json.loads(json.dumps(value, default=str)))


def build_resnapshot_job(handle: PipelineHandle) -> JobDefinition:
    resource_key = handle.resource_key

    @op(name="resnapshot", required_resource_keys={resource_key}, pool=handle.pool,
        description=("Read the tables again from now (the snapshot's watermark algorithm), then delete from Doris "
                     "the rows MySQL no longer has; a purged binlog's stream restarts at the new watermarks."))
    @one_line_failures
    def resnapshot(context: OpExecutionContext, config: TablesConfig):
        service = getattr(context.resources, resource_key).service()
        try:
            result = service.resnapshot(config.tables or None)
        except ValueError as exc:
            raise Failure(description=str(exc)) from exc
        context.log.info(f"resnapshot of {', '.join(result['tables'])}: {result['chunks']} chunk(s) read, rows "
                         f"deleted {result['deleted']}")
        yield Output(None, metadata={"tables": _json(result["tables"]), "chunks": result["chunks"],
                                     "deleted": _json(result["deleted"]), "detail": _json(result)})

    @job(name=resnapshot_job_name(handle), executor_def=in_process_executor, tags=handle.run_tags(stream=True),
         description=(f"Re-snapshot {handle.slug}'s tables (config: tables, empty = all): after a purged binlog, or "
                      "rows changed without binlog. Re-execute a failed run: it continues."))
    def resnapshot_job():
        resnapshot()

    return resnapshot_job


def build_repair_job(handle: PipelineHandle) -> JobDefinition:
    resource_key = handle.resource_key

    @op(name="repair", required_resource_keys={resource_key}, pool=handle.pool,
        description=("Verify the tables, re-read the rows that differ from MySQL and load them (upserts, deletes) "
                     "with a sequence no newer binlog change loses to, then verify again."))
    @one_line_failures
    def repair(context: OpExecutionContext, config: TablesConfig):
        service = getattr(context.resources, resource_key).service()
        try:
            results = service.repair(config.tables or None)
        except ValueError as exc:
            raise Failure(description=str(exc)) from exc
        detail = [r.as_dict() for r in results]
        different = [r.table_id for r in results if not r.equal]
        if different:
            raise Failure(description=f"still different after the repair: {', '.join(different)} "
                          f"({'; '.join(r.not_repaired or '' for r in results if not r.equal)})",
                          metadata={"tables": _json(detail)})
        yield Output(None, metadata={"upserted": sum(r.upserted for r in results),
                                     "deleted": sum(r.deleted for r in results), "tables": _json(detail)})

    @job(name=repair_job_name(handle), executor_def=in_process_executor, tags=handle.run_tags(stream=True),
         description=(f"Mend the rows of {handle.slug}'s tables that differ from MySQL (config: tables, empty = "
                      "all); safe while the stream runs."))
    def repair_job():
        repair()

    return repair_job


def build_heal_defs(handle: PipelineHandle) -> Definitions:
    return Definitions(jobs=[build_resnapshot_job(handle), build_repair_job(handle)])


__all__ = ["TablesConfig", "build_heal_defs", "build_repair_job", "build_resnapshot_job", "repair_job_name",
           "resnapshot_job_name"]
