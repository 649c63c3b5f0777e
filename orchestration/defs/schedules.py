"""``incremental_schedule``: the binlog sensor's decision on a cron, an opt-in fallback.

Same rules as ``binlog_sensor`` (pause flag, one run at a time, snapshot first, pending commits
resolved first, run key from the offset range). The cron defaults to every minute and can be
set with ``TIDEMARK_INCREMENTAL_CRON``.

It is **stopped by default**: the sensor, running by default, reacts to new binlog data within
seconds, while a cron fires at most once a minute; both would launch the same job. Turn the
schedule on (Dagster UI → Automation) where sensors are not wanted, e.g. to apply the binlog
in fixed windows, and stop the sensor then.
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

from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.sensors import decide_binlog_run

DEFAULT_CRON = "* * * * *"
CRON_ENV = "TIDEMARK_INCREMENTAL_CRON"


def build_incremental_schedule(handle: PipelineHandle,
                               job: JobDefinition | UnresolvedAssetJobDefinition) -> ScheduleDefinition:
    resource_key = handle.resource_key

    @schedule(
        name=handle.schedule_name,
        job=job,
        cron_schedule=os.environ.get(CRON_ENV, DEFAULT_CRON),
        execution_timezone="UTC",
        default_status=DefaultScheduleStatus.STOPPED,
        required_resource_keys={resource_key},
        description=(f"Applies the {handle.slug} binlog on a cron (same rules as the binlog sensor). Stopped by "
                     "default: the binlog sensor, running by default, launches the same job within seconds."),
    )
    def incremental_schedule(context: ScheduleEvaluationContext):
        service = getattr(context.resources, resource_key).service()
        return decide_binlog_run(handle, service, context.instance, context.log)

    return incremental_schedule
