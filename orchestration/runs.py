"""Run bookkeeping the sensors, the schema-change job and ``tidemark run --once`` share.

(What a step prepared, for its hooks, is kept by the pipeline service:
``PipelineService.step_ledger``, ``cdc_core/pipeline/ledger.py``.)

* ``runs_in_flight``: the runs of a pipeline that have not finished, whatever launched them
  (sensor, schedule, backfill, the UI's Materialize button), found by the asset keys they
  select rather than by tags, because UI launches carry no Tidemark tags.
"""

from __future__ import annotations

from typing import Any

from dagster import AssetKey, DagsterInstance, DagsterRunStatus, RunsFilter

IN_FLIGHT_STATUSES = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]


def runs_in_flight(instance: DagsterInstance, asset_keys: set[AssetKey] | None = None,
                   prefix: tuple[str, ...] | None = None, exclude_run_id: str | None = None) -> list[Any]:
    """Unfinished runs that materialize any of ``asset_keys`` or any asset under ``prefix``."""
    out = []
    for run in instance.get_runs(filters=RunsFilter(statuses=IN_FLIGHT_STATUSES), limit=500):
        if run.run_id == exclude_run_id:
            continue
        selected = set(run.asset_selection or ()) | {k.asset_key for k in (run.asset_check_selection or ())}
        if not selected:
            # A run of an op job, or an asset job without a stored selection: look at its plan.
            selected = _planned_asset_keys(instance, run)
        by_key = asset_keys is not None and bool(selected & asset_keys)
        by_prefix = prefix is not None and any(tuple(k.path[: len(prefix)]) == prefix for k in selected)
        if by_key or by_prefix:
            out.append(run)
    return out


def _planned_asset_keys(instance: DagsterInstance, run: Any) -> set[AssetKey]:
    snapshot_id = getattr(run, "execution_plan_snapshot_id", None)
    if not snapshot_id:
        return set()
    try:
        plan = instance.get_execution_plan_snapshot(snapshot_id)
    except Exception:  # noqa: BLE001 - a missing snapshot means we cannot tell; treat as unrelated
        return set()
    keys: set[AssetKey] = set()
    for step in plan.steps:
        for output in step.outputs:
            info = getattr(output, "properties", None)
            key = getattr(info, "asset_key", None) if info is not None else None
            if key is not None:
                keys.add(key)
    return keys
