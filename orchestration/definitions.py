"""The code location: one ``Definitions`` with every pipeline's assets under its name.

``dagster dev -w workspace.yaml`` (or ``tidemark dev``) loads ``defs`` from here. Pipelines come
from ``TIDEMARK_PIPELINES`` (default ``pipelines/*.yaml``); each is built by
``build_pipeline_defs`` and the results are merged. The Doris table assets of a pipeline come from
its state store when the location loads (``orchestration/defs/doris_tables.py``): reload the location
after a split plan discovered new tables.
"""

from __future__ import annotations

from pathlib import Path

from dagster import AssetKey, AssetSpec, Definitions, definitions, in_process_executor

from orchestration.defs.assets import build_assets
from orchestration.defs.checks import build_checks
from orchestration.defs.console_logger import one_line_console_logger
from orchestration.defs.doris_tables import doris_table_specs
from orchestration.defs.heal_jobs import build_heal_defs
from orchestration.defs.hooks import build_hooks
from orchestration.defs.jobs import build_jobs
from orchestration.defs.pipelines import PipelineHandle, load_handles, pipeline_paths
from orchestration.defs.resources import TidemarkPipelineResource, pipeline_resource
from orchestration.defs.schedules import build_incremental_schedule
from orchestration.defs.schema_change_job import build_schema_change_defs
from orchestration.defs.sensors import build_binlog_sensor


def build_pipeline_defs(handle: PipelineHandle, resource: TidemarkPipelineResource | None = None) -> Definitions:
    """One pipeline's assets, checks, jobs, sensor, schedule and resource (no executor: see below)."""
    hooks = build_hooks(handle)
    assets = build_assets(handle, hooks)
    checks = build_checks(handle)
    jobs = build_jobs(handle, assets, checks)
    resource = resource or pipeline_resource(str(handle.path), handle.definition)
    tables = doris_table_specs(handle, resource.doris_targets_at_load())
    return Definitions.merge(Definitions(
        assets=[*assets.all, *tables],
        asset_checks=checks.all,
        jobs=jobs.all,
        sensors=[build_binlog_sensor(handle, jobs.binlog_job)],
        schedules=[build_incremental_schedule(handle, jobs.binlog_job)],
        resources={handle.resource_key: resource},
    ), build_schema_change_defs(handle), build_heal_defs(handle))


def build_definitions(handles: list[PipelineHandle],
                      resources: dict[str, TidemarkPipelineResource] | None = None) -> Definitions:
    """All pipelines in one Definitions. Every run executes in process, so UI materializations
    (the implicit asset job) also run the commit hook before the checks, with one Spark session."""
    resources = resources or {}
    parts = [build_pipeline_defs(h, resources.get(h.slug)) for h in handles]
    writers: dict[AssetKey, str] = {}
    for handle, part in zip(handles, parts, strict=True):
        for spec in part.assets or ():
            if isinstance(spec, AssetSpec) and spec.key in writers:
                raise ValueError(
                    f"pipelines '{writers[spec.key]}' and '{handle.slug}' both load the Doris table "
                    f"{'.'.join(spec.key.path[1:])}; two pipelines must not write one table (their sequence "
                    "columns would fight): route one of them to another table"
                )
            if isinstance(spec, AssetSpec):
                writers[spec.key] = handle.slug
    # The console logger: one line per record (orchestration/defs/console_logger.py).
    return Definitions.merge(*parts, Definitions(executor=in_process_executor,
                                                 loggers={"console": one_line_console_logger}))


def definitions_for_paths(paths: list[Path]) -> Definitions:
    return build_definitions(load_handles(paths))


@definitions
def defs() -> Definitions:
    return definitions_for_paths(pipeline_paths())
