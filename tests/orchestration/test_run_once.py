"""``tidemark run --once`` logic (OnceRun) against the recording runner."""

from __future__ import annotations

import pytest
from rich.console import Console

from cdc_core.state import ChunkStatus
from cdc_core.state.keys import BINLOG_PAUSED
from orchestration.cli.run_once import OnceRun, RunOnceError, _contiguous_ranges, summary_table
from tests.orchestration.fakes import recording_resource


def once(harness, **kwargs) -> OnceRun:
    return OnceRun(harness.handle, harness.instance, Console(file=open("/dev/null", "w")),  # noqa: SIM115
                   resource=recording_resource(harness.handle), **kwargs)


def test_contiguous_ranges():
    keys = [f"t#{i:05d}" for i in range(10)]
    assert _contiguous_ranges(keys, {keys[0], keys[1], keys[2], keys[5], keys[9]}, 2) == [
        ("t#00000", "t#00001", 2), ("t#00002", "t#00002", 1), ("t#00005", "t#00005", 1), ("t#00009", "t#00009", 1)]
    assert _contiguous_ranges(keys, set(), 4) == []
    # small chunks: a run takes more than `limit` of them while their rows fit, up to `max_limit`
    rows = {k: 10 for k in keys}
    assert _contiguous_ranges(keys, set(keys), 2, rows, 60, 5) == [("t#00000", "t#00004", 5), ("t#00005", "t#00009", 5)]
    assert _contiguous_ranges(keys, set(keys), 2, rows, 35, 9) == [
        ("t#00000", "t#00002", 3), ("t#00003", "t#00005", 3), ("t#00006", "t#00008", 3), ("t#00009", "t#00009", 1)]
    big = {**rows, "t#00001": 1_000}  # a big chunk ends the run of small ones past `limit`
    assert _contiguous_ranges(keys, set(keys), 2, big, 60, 9)[0] == ("t#00000", "t#00001", 2)
    assert _contiguous_ranges(keys, set(keys), 2, big, 60, 9)[1] == ("t#00002", "t#00007", 6)


def test_snapshot_then_binlog_up_to_the_start_offset(harness):
    run = once(harness)
    runner = run.service
    runner.script.server_offset = {"file": "binlog.000001", "position": 400}
    summary = run.run()
    assert runner.snapshot_done()
    assert summary.chunks_total == 5 and summary.chunks_loaded == 5 and summary.rows == 50
    assert summary.batches == 1 and summary.events == 5
    assert runner.script.committed_offset == {"file": "binlog.000001", "position": 400}
    names = runner.names()
    assert names.index("plan_splits") < names.index("run_chunks") < names.index("run_binlog_batch")
    assert runner.pending_transactions(log=False) == []
    assert "5 of 5 chunks" in str(summary_table(harness.handle, summary).columns[1]._cells)
    # a second run finds everything done: no snapshot, no batch, and no binlog run (nothing to read: the
    # server's position is where the stream stands); binlog_stream is materialized all the same, at the
    # offset where the stream stands, with its no_pending_transactions check evaluated against it
    runner.calls.clear()
    before = harness.instance.fetch_materializations(harness.handle.binlog_key, limit=1).records[0]
    binlog_runs = lambda: [r for r in harness.instance.get_run_records()  # noqa: E731
                           if r.dagster_run.job_name == harness.handle.binlog_job_name]
    runs_before = len(binlog_runs())
    again = once(harness).run()
    assert again.chunks_loaded == 0 and again.batches == 0 and again.events == 0
    assert "run_chunks" not in runner.names() and "run_binlog_batch" not in runner.names()
    assert len(binlog_runs()) == runs_before == 1
    after = harness.instance.fetch_materializations(harness.handle.binlog_key, limit=1).records[0]
    assert after.storage_id > before.storage_id
    assert after.asset_materialization.metadata["end_offset"].value == "binlog.000001:400"
    pending = harness.instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [harness.handle.check_key(harness.handle.binlog_key, "no_pending_transactions")])
    evaluation = next(iter(pending.values()))
    assert evaluation.status.value == "SUCCEEDED" and evaluation.event.timestamp >= after.timestamp
    # issue 29, item 10: the re-run's summary says the snapshot is done, not "0 of 0 chunks loaded"
    assert again.snapshot_done_before and again.chunks_total == 5
    text = str(summary_table(harness.handle, again).columns[1]._cells)
    assert "done before this run (5 chunk(s) committed); nothing to load" in text and "0 of 0" not in text


def test_a_run_right_after_the_snapshot_materializes_binlog_stream_and_evaluates_table_parity(harness):
    """The demo's `tidemark run --once`: nothing changed since the snapshot; binlog_stream still reads
    materialized (not "Never materialized") and its table_parity check evaluated (not "Not evaluated")."""
    run = once(harness)
    run.service.script.committed_offset = None
    run.service.script.server_offset = {"file": "binlog.000001", "position": 100}  # nothing after the snapshot
    summary = run.run()
    assert summary.batches == 0
    assert harness.instance.get_latest_materialization_event(harness.handle.binlog_key) is not None
    check = harness.instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [harness.handle.check_key(harness.handle.binlog_key, "table_parity")])
    evaluation = next(iter(check.values()))
    assert evaluation.status.value == "SUCCEEDED"


def _table_parity(harness):
    check = harness.instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [harness.handle.check_key(harness.handle.binlog_key, "table_parity")])
    return next(iter(check.values()))


def test_a_snapshot_whose_every_chunk_passed_with_nothing_after_it_is_not_compared_twice(harness):
    """issue 30: every chunk of this run compared equal and the binlog brought nothing since: the
    tables are known equal, table_parity is recorded as implied (passed, why in its metadata) and
    neither database is read again."""
    run = once(harness)
    run.service.script.committed_offset = None
    run.service.script.server_offset = {"file": "binlog.000001", "position": 100}
    summary = run.run()
    assert summary.table_parity == "implied" and summary.chunks_checked == summary.chunks_total == 5
    assert "verify" not in run.service.names()
    evaluation = _table_parity(harness)
    assert evaluation.status.value == "SUCCEEDED"
    metadata = evaluation.event.dagster_event.event_specific_data.metadata
    assert metadata["implied_by"].value == "chunk_parity" and metadata["chunks"].value == 5
    assert "not compared a second time" in str(summary_table(harness.handle, summary).columns[1]._cells)


def test_the_tables_are_compared_when_the_binlog_changed_them_or_a_chunk_differed_or_the_snapshot_was_earlier(harness):
    """Anything the chunk checks did not see makes the end-of-run table_parity compare the tables."""
    run = once(harness)
    run.service.script.server_offset = {"file": "binlog.000001", "position": 400}  # the binlog brings 5 events
    summary = run.run()
    assert summary.events == 5 and summary.table_parity == "compared" and "verify" in run.service.names()
    run.service.calls.clear()
    again = once(harness).run()  # the snapshot was an earlier run's
    assert again.snapshot_done_before and again.table_parity == "compared"


def test_a_chunk_that_differed_makes_the_tables_compared(harness):
    run = once(harness)
    run.service.script.committed_offset = None
    run.service.script.server_offset = {"file": "binlog.000001", "position": 100}
    run.service.script.parity_ok = False
    summary = run.run()
    assert summary.chunk_parity_failed and summary.table_parity == "compared"
    assert "verify" in run.service.names()


def test_the_commit_computes_mysqls_side_of_parity_only_for_a_run_that_checks_it(harness):
    """The snapshot step hands the run's id to the reads and the commit hook to the commit (MySQL's
    side of the parity check is computed meanwhile) and the check asks with the same id; without the
    check, neither computes anything."""
    run = once(harness)
    run.run()
    ids = dict(run.service.parity_run_ids)
    assert ids["commit_chunks"] and ids["commit_chunks"] == ids["chunks_parity"] == ids["run_chunks"]



def test_without_the_parity_check_the_commit_computes_nothing_for_it(harness):
    run = once(harness, parity_checks=False)
    run.run()
    ids = run.service.parity_run_ids
    assert {name for name, _ in ids} == {"run_chunks", "commit_chunks"} and all(i is None for _, i in ids)


def test_resumes_only_the_chunks_not_committed(harness):
    harness.run_splits()
    runner = harness.runner
    runner.run_chunks(["shop.orders#00001"])
    runner.commit_chunks(["shop.orders#00001"])
    runner.calls.clear()
    summary = once(harness).run()
    loaded = [k for name, keys in runner.calls if name == "run_chunks" for k in keys]
    assert "shop.orders#00001" not in loaded and len(loaded) == 4
    assert summary.chunks_loaded == 4


def test_paused_binlog_stops_with_a_clear_message(harness):
    run = once(harness)
    BINLOG_PAUSED.put(run.service.store, "ALTER TABLE shop.orders ADD COLUMN x INT")
    with pytest.raises(RunOnceError, match="paused by a schema change") as caught:
        run.run()
    assert caught.value.code == 3
    assert run.service.snapshot_done()  # the snapshot still went through


def test_failed_chunk_load_is_a_clear_error(harness):
    run = once(harness)
    run.service.script.fail_run_chunks = True
    with pytest.raises(RunOnceError, match="boom: the chunk read failed"):
        run.run()
    assert "abort_chunks" in run.service.names()


def test_doris_down_at_a_commit_the_loads_are_committed_afterwards(harness):
    """The commit hook's outage is not a HOOK_ERRORED (orchestration/defs/hooks.py) but the failed
    no_pending_transactions check: `run --once` resolves the prepared loads at once all the same."""
    run = once(harness)
    runner = run.service
    runner.script.commit_outage = "Doris commit of txn 9: the Doris FE at 127.0.0.1:8030 does not answer"
    summary = run.run()
    assert runner.snapshot_done() and summary.chunks_loaded == summary.chunks_total == 5
    assert summary.batches == 1
    names = runner.names()
    assert names.index("resolve_pending", names.index("commit_chunks")) > names.index("commit_chunks")
    assert runner.pending_transactions(log=False) == []


def test_the_plan_is_made_in_process_and_shows_materialized_without_a_run(harness):
    """issue 30: ``tidemark run --once`` plans without a Dagster run of the planning job; the UI still
    shows snapshot_splits materialized, with the plan's metadata, and its partitions registered."""
    summary = once(harness).run()
    assert summary.chunks_loaded == 5
    jobs = {r.dagster_run.job_name for r in harness.instance.get_run_records()}
    assert harness.handle.snapshot_job_name in jobs and harness.handle.splits_job_name not in jobs
    record = harness.instance.fetch_materializations(harness.handle.splits_key, limit=1).records[0]
    metadata = record.asset_materialization.metadata
    assert metadata["chunks"].value == 5 and metadata["complete"].value is True and metadata["tables"].value == 2
    assert len(harness.instance.get_dynamic_partitions(harness.handle.partitions_name)) == 5


def test_a_plan_that_fails_in_process_is_made_again_as_a_dagster_run(harness, monkeypatch):
    """A planning that fails in the command's process is done again by the planning job's run, as
    before: a failure stays visible in the UI (a failed run) and is said the run's way; a passing
    second attempt (the first met a moment's outage) goes on."""
    run = once(harness)
    runner = run.service
    plan_splits = type(runner).plan_splits
    calls = []

    def flaky(self, max_steps=None):
        calls.append(max_steps)
        if len(calls) == 1:
            raise ConnectionError("MySQL at 127.0.0.1:3306 does not answer: check source.hostname")
        return plan_splits(self, max_steps)

    monkeypatch.setattr(type(runner), "plan_splits", flaky)
    summary = run.run()
    assert summary.chunks_loaded == 5 and len(calls) == 2
    runs = [r for r in harness.instance.get_run_records() if r.dagster_run.job_name == harness.handle.splits_job_name]
    assert len(runs) == 1 and runs[0].dagster_run.is_success

    def down(self, max_steps=None):
        raise ConnectionError("MySQL at 127.0.0.1:3306 does not answer: check source.hostname")

    monkeypatch.setattr(type(runner), "plan_splits", down)
    runner.script.tables = {**runner.script.tables, "shop.extra": 1}
    with runner.store.transaction() as tx:  # the snapshot to do again: a plan is needed
        for chunk in tx.chunks():
            tx.update_chunk(chunk.table_id, chunk.chunk_index, status=ChunkStatus.PENDING)
    with pytest.raises(RunOnceError, match=r"__snapshot_splits: MySQL at 127.0.0.1:3306 does not answer"):
        once(harness).run()
    failed = [r for r in harness.instance.get_run_records()
              if r.dagster_run.job_name == harness.handle.splits_job_name and r.dagster_run.is_failure]
    assert len(failed) == 1
