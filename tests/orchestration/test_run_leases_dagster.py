"""The run leases in Dagster's runs (``orchestration/defs/assets.py:take_lease``), against the recording runner:
a binlog run while another process holds the stream fails with the holder's one line having prepared
nothing, and the sensor does not launch one; chunk runs of one table exclude each other, of different
tables do not; the hooks give the lease back; ``resolve_pending`` leaves a live holder's work alone."""

from __future__ import annotations

import itertools
import time

import dagster as dg
import pytest

from cdc_core.pipeline.service import PipelineService
from cdc_core.state import BatchRecord, BatchStatus
from cdc_core.state.leases import Scope, live_holders, release, snapshot_scope, try_acquire
from orchestration.definitions import build_definitions
from orchestration.defs.pipelines import PipelineHandle
from tests.orchestration.conftest import Harness
from tests.orchestration.fakes import RUNNERS, recording_resource, write_pipeline
from tests.orchestration.test_assets_hooks import all_chunks_committed
from tests.orchestration.test_sensors_schedules import tick

OTHER = "host-b:4242:0a0b0c0d"  # another machine's process
_names = itertools.count()


@pytest.fixture
def harness(tmp_path, dagster_instance):
    """The recording harness with a 3 s lease: a run waits that long for a holder before it fails."""
    RUNNERS.clear()
    path = write_pipeline(tmp_path, name=f"lease{next(_names)}")
    path.write_text(path.read_text() + "  tidemark.run.lease-ttl-s: 3\n")
    handle = PipelineHandle.load(path)
    defs = build_definitions([handle], resources={handle.slug: recording_resource(handle)})
    yield Harness(handle, defs, dagster_instance)
    for runner in RUNNERS.values():
        runner.store.close()
    RUNNERS.clear()


def _failure(result: dg.ExecuteInProcessResult) -> str:
    (event,) = [e for e in result.all_events if e.is_step_failure]
    return event.step_failure_data.user_failure_data.description


def test_a_binlog_run_while_another_process_holds_the_stream_fails_with_one_line_and_prepares_nothing(harness):
    all_chunks_committed(harness)
    runner = harness.runner
    runner.script.committed_offset = {"file": "binlog.000001", "position": 100}
    try_acquire(runner.store, [Scope.STREAM], owner=OTHER, purpose="tidemark run --once", ttl_s=60)
    runner.calls.clear()
    result = harness.run_binlog(raise_on_error=False)
    assert not result.success
    line = _failure(result)
    assert line.startswith(f"another run of pipeline '{harness.handle.slug}' holds its stream: tidemark run --once on ")
    assert "\n" not in line and "this run wrote nothing" in line
    assert "run_binlog_batch" not in runner.names() and "resolve_pending" not in runner.names()
    # the sensor does not even launch a run meanwhile
    skip = tick(harness)
    assert isinstance(skip, dg.SkipReason) and "is being run by tidemark run --once on " in skip.skip_message
    # once the holder is done, the next run goes on, and its hook gives the lease back
    release(runner.store, [Scope.STREAM], owner=OTHER)
    assert harness.run_binlog().success
    assert "run_binlog_batch" in runner.names()
    assert live_holders(runner.store) == []


def test_chunk_runs_of_one_table_exclude_each_other_of_different_tables_do_not(harness):
    harness.run_splits()
    runner = harness.runner
    orders = [k for k in runner.chunk_keys() if k.startswith("shop.orders#")]
    items = [k for k in runner.chunk_keys() if k.startswith("shop.items#")]
    try_acquire(runner.store, [snapshot_scope("shop.orders")], owner=OTHER, purpose="a backfill run", ttl_s=60)
    busy = harness.run_chunks(orders[0], orders[-1], raise_on_error=False)
    assert not busy.success and "holds its snapshot:shop.orders: a backfill run on " in _failure(busy)
    assert harness.run_chunks(items[0], items[-1]).success  # another table's chunks load meanwhile
    assert ("run_chunks", items) in runner.calls and not any(c == ("run_chunks", orders) for c in runner.calls)
    assert [r.owner for r in live_holders(runner.store)] == [OTHER]  # the items run's lease given back


def test_resolve_pending_leaves_a_live_holders_work_alone_and_finishes_a_dead_ones(harness):
    """A PREPARED batch of a live stream holder is its own to commit; once its lease expired it is the
    next run's (here: Doris is not there, so the commit is tried and reported failed — not skipped)."""
    all_chunks_committed(harness)
    runner = harness.runner
    store = runner.store
    with store.transaction() as tx:
        tx.put_batch(BatchRecord("b-live", {"file": "binlog.000001", "position": 100},
                                 {"file": "binlog.000001", "position": 200}, BatchStatus.PREPARED,
                                 [{"label": "l-b-live", "txn_id": 7}]))
    try_acquire(store, [Scope.STREAM], owner=OTHER, purpose="a live stream", ttl_s=3)
    report = PipelineService.resolve_pending(runner)  # the real one, not the double's
    assert report.committed == report.aborted == report.failed == ()
    with store.transaction(readonly=True) as tx:
        assert tx.batch("b-live").status is BatchStatus.PREPARED
    holder = live_holders(store)[0]
    time.sleep(max(0.0, holder.expires_at - holder.heartbeat_at) + 0.2)  # its heartbeat stopped: expired
    report = PipelineService.resolve_pending(runner)
    assert len(report.failed) == 1 and report.failed[0].startswith("l-b-live: ")  # tried now: Doris is not there
