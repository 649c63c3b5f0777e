"""``tidemark run`` without ``--once`` (LoopRun) against the recording runner: the snapshot, then binlog
runs as the binlog moves, until a stop request; the stop ends the run in flight with its batch
committed, and nothing is left prepared."""

from __future__ import annotations

import threading
import time

from rich.console import Console

from orchestration.cli.run_loop import LiveStatus, LoopRun, Phase, run_until_stopped
from orchestration.defs import live_run
from tests.orchestration.fakes import recording_resource


def _until(predicate, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_the_pipeline_keeps_going_until_a_stop_request(harness):
    live_run.reset()
    console = Console(file=open("/dev/null", "w"))  # noqa: SIM115
    live = LiveStatus(harness.handle.slug)
    run = LoopRun(harness.handle, harness.instance, console, resource=recording_resource(harness.handle),
                  live=live)
    runner = run.service
    runner.script.server_offset = {"file": "binlog.000001", "position": 400}
    seen: list[str] = []

    def the_user() -> None:
        _until(lambda: "in 1 batch(es)" in live.line())  # the first batch committed, counted on the live line
        seen.append(live.line())
        runner.script.server_offset = {"file": "binlog.000001", "position": 700}  # a change in MySQL
        _until(lambda: "in 2 batch(es)" in live.line())
        seen.append(live.line())
        live_run.request_stop()  # what Ctrl-C does

    user = threading.Thread(target=the_user, daemon=True)
    user.start()
    try:
        summary = run_until_stopped(run, console)
    finally:
        live_run.reset()
    user.join(5)
    assert summary.chunks_loaded == 5 and summary.rows == 50
    assert summary.batches == 2 and summary.events == 10
    assert runner.script.committed_offset == {"file": "binlog.000001", "position": 700}
    assert runner.pending_transactions(log=False) == []
    # both batches ran in one binlog run (tidemark.binlog.idle-wait-s: it waited for the change), which the
    # stop request ended; binlog_stream is materialized by it
    runs = [r for r in harness.instance.get_runs() if r.job_name == harness.handle.binlog_job_name]
    assert len(runs) == 1 and runs[0].is_success
    md = harness.instance.get_latest_materialization_event(harness.handle.binlog_key).asset_materialization.metadata
    assert md["run_ended"].value == "stop requested" and md["batches"].value == 2
    assert "5 rows applied from the binlog in 1 batch(es)" in seen[0]
    assert "10 rows applied from the binlog in 2 batch(es)" in seen[1]
    assert live.phase in (Phase.CAUGHT_UP, Phase.STREAMING)


def test_a_stop_during_the_snapshot_loads_no_further_chunk_run(harness):
    live_run.reset()
    console = Console(file=open("/dev/null", "w"))  # noqa: SIM115
    run = LoopRun(harness.handle, harness.instance, console, resource=recording_resource(harness.handle),
                  live=LiveStatus(harness.handle.slug))
    live_run.request_stop()
    try:
        summary = run_until_stopped(run, console)
    finally:
        live_run.reset()
    assert summary.chunks_loaded == 0 and summary.batches == 0
    assert "run_binlog_batch" not in run.service.names()
    assert run.service.pending_transactions(log=False) == []
