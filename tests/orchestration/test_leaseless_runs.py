"""``fail_leaseless_runs`` (``orchestration/defs/runs.py``) on a real Dagster instance: a run marked
started that holds no lease and whose event log has been silent past the lease's time to live is
marked failed; one holding a lease, one heard from lately, and (for a sensor, which holds no lease)
one that started a step are left alone. The two-host case with a real ``kill -9`` is
``tests/orchestration/test_run_guard.py``."""

from __future__ import annotations

import dagster as dg
import pytest
from dagster import DagsterInstance, DagsterRunStatus
from dagster._core.events import DagsterEvent, DagsterEventType

from orchestration.defs.runs import LeaseView, fail_leaseless_runs

TTL = 30.0


@dg.op
def work() -> None:
    pass


@dg.job
def some_job() -> None:
    work()


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as instance:
        yield instance


def _started(instance: DagsterInstance, step: bool = False):
    run = instance.create_run_for_job(job_def=some_job)
    instance.report_dagster_event(DagsterEvent(DagsterEventType.PIPELINE_START.value, job_name=some_job.name),
                                  run.run_id)
    if step:
        instance.report_dagster_event(DagsterEvent(DagsterEventType.STEP_START.value, job_name=some_job.name,
                                                   step_key="work"), run.run_id)
    return instance.get_run_by_id(run.run_id)


def _last(instance: DagsterInstance, run) -> float:
    return instance.get_records_for_run(run.run_id, limit=1, ascending=False).records[0].event_log_entry.timestamp


def test_a_silent_run_without_a_lease_is_marked_failed_with_one_line(instance):
    run = _started(instance)
    later = _last(instance, run) + TTL + 5
    alive, failed = fail_leaseless_runs(instance, [run], LeaseView(frozenset(), TTL, any_steps=True), now=later)
    assert alive == [] and [f.run_id for f in failed] == [run.run_id]
    assert "died before taking a lease; marked it failed" in failed[0].line
    assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE


def test_a_run_holding_a_lease_or_heard_from_lately_is_left_alone(instance):
    leased, recent = _started(instance), _started(instance)
    now = _last(instance, leased) + TTL + 5
    view = LeaseView(frozenset({leased.run_id}), TTL, any_steps=True)
    alive, failed = fail_leaseless_runs(instance, [leased], view, now=now)
    assert alive == [leased] and failed == []
    alive, failed = fail_leaseless_runs(instance, [recent], view, now=_last(instance, recent) + TTL - 1)
    assert alive == [recent] and failed == []
    assert {instance.get_run_by_id(r.run_id).status for r in (leased, recent)} == {DagsterRunStatus.STARTED}


def test_a_sensor_judges_only_runs_that_never_started_a_step(instance):
    stepping, in_setup = _started(instance, step=True), _started(instance)
    now = max(_last(instance, stepping), _last(instance, in_setup)) + TTL + 5
    alive, failed = fail_leaseless_runs(instance, [stepping, in_setup], LeaseView(frozenset(), TTL, any_steps=False),
                                        now=now)
    assert alive == [stepping] and [f.run_id for f in failed] == [in_setup.run_id]
