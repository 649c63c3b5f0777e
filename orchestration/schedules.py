"""``incremental_schedule``: the binlog sensor's decision on a cron, for those who prefer schedules.

Same rules as ``binlog_sensor`` (pause flag, one run at a time, snapshot first, pending commits
resolved first, run key from the offset range). The cron defaults to every minute and can be
set with ``TIDEMARK_INCREMENTAL_CRON``.
"""


import os

from dagster import (
    DefaultScheduleStatus,
    JobDefinition,
    ScheduleDefinition,
    ScheduleEvaluationContext,
    schedule,
)
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

from orchestration.pipelines import PipelineHandle
from orchestration.sensors import decide_binlog_run

DEFAULT_CRON = "* * * * *"


def build_incremental_schedule(handle: PipelineHandle,
                               job: JobDefinition | UnresolvedAssetJobDefinition) -> ScheduleDefinition:
    resource_key = handle.resource_key

    @schedule(
        name=handle.schedule_name,
        job=job,
        cron_schedule=os.environ.get("TIDEMARK_INCREMENTAL_CRON", DEFAULT_CRON),
        execution_timezone="UTC",
        default_status=DefaultScheduleStatus.RUNNING,
        required_resource_keys={resource_key},
        description=f"Applies the {handle.slug} binlog on a cron (same rules as the binlog sensor).",
    )
    def incremental_schedule(context: ScheduleEvaluationContext):
        service = getattr(context.resources, resource_key).service()
        return decide_binlog_run(handle, service, context.instance, context.log)

    return incremental_schedule
