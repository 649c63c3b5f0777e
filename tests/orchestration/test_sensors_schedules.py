"""binlog_sensor and incremental_schedule decisions, against the recording runner."""

from __future__ import annotations

import datetime as dt

import dagster as dg
from dagster._core.storage.tags import RUN_KEY_TAG

from cdc_core.state.keys import BINLOG_PAUSED
from tests.orchestration.test_assets_hooks import all_chunks_committed


def sensor_of(h):
    return h.defs.resolve_sensor_def(h.handle.sensor_name)


def schedule_of(h):
    return h.defs.resolve_schedule_def(h.handle.schedule_name)


def tick(h):
    with dg.build_sensor_context(instance=h.instance, resources=resources_of(h)) as context:
        data = sensor_of(h).evaluate_tick(context)  # what the sensor daemon calls
    if data.run_requests:
        assert len(data.run_requests) == 1
        return data.run_requests[0]
    return dg.SkipReason(data.skip_message)


def resources_of(h):
    key = h.handle.resource_key
    return {key: h.defs.resources[key]}


def test_sensor_runs_by_default_the_schedule_is_opt_in_and_both_target_the_binlog_job(harness):
    """One of the two on by default: both launch the same job."""
    sensor = sensor_of(harness)
    schedule = schedule_of(harness)
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED
    assert sensor.job_name == harness.handle.binlog_job_name == schedule.job_name
    assert sensor.minimum_interval_seconds <= 5


def test_sensor_waits_for_the_snapshot(harness):
    harness.run_splits()
    result = tick(harness)
    assert isinstance(result, dg.SkipReason)
    assert "snapshot" in result.skip_message and "not finished" in result.skip_message


def test_sensor_requests_a_run_keyed_by_the_offset_range(harness):
    all_chunks_committed(harness)
    runner = harness.runner
    runner.script.committed_offset = {"file": "binlog.000001", "position": 100}
    request = tick(harness)
    assert isinstance(request, dg.RunRequest)
    slug = harness.handle.slug
    assert request.run_key == f"{slug}:binlog.000001:100..binlog.000001:400"
    assert request.tags["tidemark/stream"] == slug and request.tags["tidemark/pipeline"] == slug
    # caught up: nothing to do
    runner.script.committed_offset = dict(runner.script.server_offset)
    skip = tick(harness)
    assert isinstance(skip, dg.SkipReason) and "caught up at binlog.000001:400" in skip.skip_message


def test_sensor_never_requests_while_a_run_of_the_pipeline_is_in_flight(harness):
    all_chunks_committed(harness)
    job = harness.job(harness.handle.binlog_job_name)
    run = harness.instance.create_run_for_job(job_def=job, asset_selection=frozenset({harness.handle.binlog_key}))
    assert run.status == dg.DagsterRunStatus.NOT_STARTED
    skip = tick(harness)
    assert isinstance(skip, dg.SkipReason) and "never two runs" in skip.skip_message
    harness.instance.report_run_canceled(run)
    assert isinstance(tick(harness), dg.RunRequest)


def test_sensor_retries_a_failed_range_under_a_new_key_a_few_times(harness):
    all_chunks_committed(harness)
    job = harness.job(harness.handle.binlog_job_name)
    base = f"{harness.handle.slug}:-..binlog.000001:400"
    keys = []
    for _ in range(4):
        request = tick(harness)
        assert isinstance(request, dg.RunRequest)
        keys.append(request.run_key)
        run = harness.instance.create_run_for_job(
            job_def=job, asset_selection=frozenset({harness.handle.binlog_key}), tags={RUN_KEY_TAG: request.run_key})
        harness.instance.report_run_failed(run)
    assert keys == [base, f"{base}~retry1", f"{base}~retry2", f"{base}~retry3"]
    skip = tick(harness)
    assert isinstance(skip, dg.SkipReason) and "failed 4 times" in skip.skip_message


def test_sensor_resolves_pending_commits_before_anything_else(harness):
    all_chunks_committed(harness)
    runner = harness.runner
    runner.script.fail_commit = True
    failed = harness.run_binlog(raise_on_error=False)  # the hook fails: the batch stays PREPARED
    assert not failed.success  # ... and the blocking no_pending_transactions check fails the run
    assert runner.pending_transactions(log=False)
    runner.script.fail_commit = False
    runner.calls.clear()
    result = tick(harness)
    assert "resolve_pending" in runner.names()
    assert runner.pending_transactions(log=False) == []
    assert isinstance(result, dg.SkipReason) and "caught up" in result.skip_message


def test_sensor_and_schedule_respect_the_pause_flag(harness):
    all_chunks_committed(harness)
    BINLOG_PAUSED.put(harness.runner.store, "schema change on shop.orders")
    skip = tick(harness)
    assert isinstance(skip, dg.SkipReason) and "paused" in skip.skip_message
    schedule = schedule_of(harness)
    when = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)
    with dg.build_schedule_context(instance=harness.instance, resources=resources_of(harness),
                                   scheduled_execution_time=when) as context:
        data = schedule.evaluate_tick(context)
    assert not data.run_requests and "paused" in data.skip_message
    BINLOG_PAUSED.put(harness.runner.store, None)
    with dg.build_schedule_context(instance=harness.instance, resources=resources_of(harness),
                                   scheduled_execution_time=when) as context:
        data = schedule.evaluate_tick(context)
    assert len(data.run_requests) == 1
    assert data.run_requests[0].run_key.startswith(f"{harness.handle.slug}:-..binlog.000001:400")


def test_queue_ahead_allows_one_queued_behind_one_running_stream_run(harness):
    """Opt-in: the next binlog run may wait in the queue behind the running one (the stream tag
    limit and the pool start it afterwards); never behind a snapshot run, never two queued."""
    from orchestration.defs.sensors import decide_binlog_run

    all_chunks_committed(harness)
    job = harness.job(harness.handle.binlog_job_name)
    running = harness.instance.create_run_for_job(job_def=job, asset_selection=frozenset({harness.handle.binlog_key}),
                                                  tags=harness.handle.run_tags(stream=True))
    harness.instance.handle_run_event(running.run_id, dg.DagsterEvent(
        event_type_value="PIPELINE_START", job_name=job.name, message="started"))
    assert harness.instance.get_run_by_id(running.run_id).status == dg.DagsterRunStatus.STARTED
    runner = harness.runner
    assert isinstance(decide_binlog_run(harness.handle, runner, harness.instance, queue_ahead=False), dg.SkipReason)
    request = decide_binlog_run(harness.handle, runner, harness.instance, queue_ahead=True)
    assert isinstance(request, dg.RunRequest) and request.tags["tidemark/stream"] == harness.handle.slug
    queued = harness.instance.create_run_for_job(job_def=job, asset_selection=frozenset({harness.handle.binlog_key}),
                                                 tags=harness.handle.run_tags(stream=True))
    assert queued.status == dg.DagsterRunStatus.NOT_STARTED
    assert isinstance(decide_binlog_run(harness.handle, runner, harness.instance, queue_ahead=True), dg.SkipReason)


def test_next_run_key_skips_spent_keys_and_returns_the_run_of_a_live_one(harness):
    """The helper both sensors use: a failed or canceled run spends its key, a run in flight does
    not (re-requesting its key is a no-op for Dagster); a caller may count any run as spent."""
    from orchestration.defs.runs import next_run_key

    job = harness.job(harness.handle.binlog_job_name)
    base = f"{harness.handle.slug}:unit"

    def launch(key: str):
        return harness.instance.create_run_for_job(job_def=job, asset_selection=frozenset({harness.handle.binlog_key}),
                                                   tags={RUN_KEY_TAG: key})

    fresh = next_run_key(harness.instance, base)
    assert (fresh.run_key, fresh.run, fresh.attempts) == (base, None, 1)
    harness.instance.report_run_failed(launch(base))
    done = launch(f"{base}~retry1")
    harness.instance.report_run_canceled(done)
    choice = next_run_key(harness.instance, base)
    assert (choice.run_key, choice.run) == (f"{base}~retry2", None)
    every_run_spends = next_run_key(harness.instance, base, spent=lambda run: True, max_retries=1)
    assert every_run_spends.run_key is None and every_run_spends.run.run_id == done.run_id
    live = launch(f"{base}~retry2")
    choice = next_run_key(harness.instance, base)
    assert choice.run_key == f"{base}~retry2" and choice.run.run_id == live.run_id
