"""Asset jobs per pipeline: what the sensor, the schedule and ``tidemark run`` launch.

All run in process (one process per run: one resource set-up, one Spark session, and the commit
hook runs before the checks that read Doris). Runs of the binlog job carry the stream tag that
dagster.yaml limits to one run per pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from dagster import AssetSelection, define_asset_job, in_process_executor
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from orchestration.defs.assets import PipelineAssets
from orchestration.defs.checks import PipelineChecks
from orchestration.defs.pipelines import PipelineHandle


@dataclass(frozen=True)
class PipelineJobs:
    splits_job: UnresolvedAssetJobDefinition
    snapshot_job: UnresolvedAssetJobDefinition
    binlog_job: UnresolvedAssetJobDefinition
    verify_job: UnresolvedAssetJobDefinition

    @property
    def all(self) -> list[UnresolvedAssetJobDefinition]:
        return [self.splits_job, self.snapshot_job, self.binlog_job, self.verify_job]


def build_jobs(handle: PipelineHandle, assets: PipelineAssets, checks: PipelineChecks) -> PipelineJobs:
    splits_job = define_asset_job(
        handle.splits_job_name,
        selection=AssetSelection.assets(assets.snapshot_splits),
        executor_def=in_process_executor,
        tags=handle.run_tags(),
        description="Plan the snapshot chunks and register their partitions.",
    )
    snapshot_job = define_asset_job(
        handle.snapshot_job_name,
        selection=AssetSelection.assets(assets.snapshot_chunks).without_checks()
        | AssetSelection.checks(checks.chunk_parity, checks.chunks_no_pending),
        executor_def=in_process_executor,
        tags=handle.run_tags(),
        description="Snapshot chunks (a partition range per run), then check their parity.",
    )
    binlog_job = define_asset_job(
        handle.binlog_job_name,
        selection=AssetSelection.assets(assets.binlog_stream).without_checks()
        | AssetSelection.checks(checks.binlog_no_pending),
        executor_def=in_process_executor,
        tags=handle.run_tags(stream=True),
        description="One binlog micro-batch (what binlog_sensor and incremental_schedule launch).",
    )
    verify_job = define_asset_job(
        handle.verify_job_name,
        selection=AssetSelection.checks(checks.table_parity),
        executor_def=in_process_executor,
        tags=handle.run_tags(),
        description="binlog_stream's table_parity check alone: every captured table, MySQL against Doris "
        "(`tidemark run --once` runs it at its end).",
    )
    return PipelineJobs(splits_job, snapshot_job, binlog_job, verify_job)
