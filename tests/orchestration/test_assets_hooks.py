"""Orchestration logic of the assets and their commit hooks, against the recording runner."""

from __future__ import annotations

import logging
import os

import dagster as dg
import pytest
from dagster import DagsterEventType

from cdc_core.state.keys import BINLOG_PAUSED
from orchestration.defs.assets import CHUNKS_PER_RUN, PLAN_STEPS_PER_ROUND


def partitions(h):
    return h.instance.get_dynamic_partitions(h.handle.partitions_name)


def test_definitions_shape(harness):
    repo = harness.defs.get_repository_def()
    p = harness.handle.slug
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert keys == {f"{p}/snapshot_splits", f"{p}/snapshot_chunks", f"{p}/binlog_stream"}
    assert {s.name for s in repo.sensor_defs} == {f"{p}_binlog_sensor", f"{p}_ddl_sensor"}
    assert {s.name for s in repo.schedule_defs} == {f"{p}_incremental_schedule"}
    assert {f"{p}_splits_job", f"{p}_snapshot_job", f"{p}_binlog_job"} <= set(repo.job_names)
    chunks = repo.assets_defs_by_key[harness.handle.chunks_key]
    assert chunks.backfill_policy == dg.BackfillPolicy.multi_run(CHUNKS_PER_RUN)
    # hooks sit on the assets, so UI launches (the implicit asset job) commit too
    assert {h.name for h in chunks.hook_defs} == {f"{p}_commit_chunks_hook", f"{p}_abort_chunks_hook"}
    binlog = repo.assets_defs_by_key[harness.handle.binlog_key]
    assert {h.name for h in binlog.hook_defs} == {f"{p}_commit_batch_hook", f"{p}_abort_batch_hook"}
    for assets_def in (chunks, binlog, repo.assets_defs_by_key[harness.handle.splits_key]):
        assert assets_def.op.pool == f"tidemark_{p}"
    # every run executes in process (the hook commits before the checks read Doris)
    assert repo.get_implicit_global_asset_job_def().executor_def.name == "in_process"
    binlog_job = harness.job(f"{p}_binlog_job")
    assert binlog_job.tags["tidemark/stream"] == p


def test_splits_register_one_partition_per_chunk(harness):
    harness.runner.script.notes = ("shop.orders: chunk size grown to 20000 to stay under 100000 partitions",)
    result = harness.run_splits()
    assert result.success
    assert partitions(harness) == ["shop.orders#00000", "shop.orders#00001", "shop.orders#00002",
                                   "shop.items#00000", "shop.items#00001"]
    assert ("plan_splits", PLAN_STEPS_PER_ROUND) in harness.runner.calls
    assert harness.runner.names()[0] == "resolve_pending"
    md = result.asset_materializations_for_node(f"{harness.handle.slug}__snapshot_splits")[0].metadata
    assert md["chunks"].value == 5 and md["tables"].value == 2
    assert "chunk size grown" in md["notes"].value
    assert md["chunks_per_table"].value == {"shop.orders": 3, "shop.items": 2}


def test_splits_resume_over_rounds_and_drop_stale_partitions(harness):
    harness.runner.script.plan_rounds = 3
    harness.instance.add_dynamic_partitions(harness.handle.partitions_name, ["shop.gone#00000"])
    result = harness.run_splits()
    assert harness.runner.names().count("plan_splits") == 3
    md = result.asset_materializations_for_node(f"{harness.handle.slug}__snapshot_splits")[0].metadata
    assert md["planning_rounds"].value == 3 and md["stale_partitions_removed"].value == 1
    assert "shop.gone#00000" not in partitions(harness)
    assert len(partitions(harness)) == 5


def test_chunk_range_runs_in_one_run_then_hook_commits_then_checks(harness):
    harness.run_splits()
    runner = harness.runner
    runner.calls.clear()
    result = harness.run_chunks("shop.orders#00000", "shop.orders#00002")
    assert result.success
    keys = ["shop.orders#00000", "shop.orders#00001", "shop.orders#00002"]
    names = runner.names()
    assert names[0] == "resolve_pending"
    assert runner.calls[names.index("run_chunks")] == ("run_chunks", keys)
    assert runner.calls[names.index("commit_chunks")] == ("commit_chunks", keys)
    # the commit hook ran before the parity check read Doris
    assert names.index("run_chunks") < names.index("commit_chunks") < names.index("chunk_parity")
    assert "abort_chunks" not in names
    mats = result.asset_materializations_for_node(f"{harness.handle.slug}__snapshot_chunks")
    assert sorted(m.partition for m in mats) == keys
    for m in mats:
        assert m.metadata["rows"].value == 10
        assert m.metadata["high_watermark"].value.startswith("binlog.000001:")
        assert m.metadata["rows_per_s"].value == 20.0
        assert "duration_s" in m.metadata and "low_watermark" in m.metadata
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["chunk_parity"].passed and checks["no_pending_transactions"].passed
    assert checks["chunk_parity"].metadata["checked"].value == 3


def test_failed_chunk_run_aborts_and_commits_nothing(harness):
    harness.run_splits()
    runner = harness.runner
    runner.calls.clear()
    runner.script.fail_run_chunks = True
    result = harness.run_chunks("shop.items#00000", "shop.items#00001", raise_on_error=False)
    assert not result.success
    assert ("abort_chunks", ["shop.items#00000", "shop.items#00001"]) in runner.calls
    assert "commit_chunks" not in runner.names()


def test_failed_commit_is_not_silent(harness):
    """Dagster keeps the run green when a hook raises; the blocking pending check fails it, and the
    next run finishes the commit."""
    harness.run_splits()
    runner = harness.runner
    runner.script.fail_commit = True
    result = harness.run_chunks("shop.items#00000", "shop.items#00000", raise_on_error=False)
    assert any(e.event_type == DagsterEventType.HOOK_ERRORED for e in result.all_events)
    assert not result.success  # the blocking no_pending_transactions check fails the run
    failed = [e.step_key for e in result.all_events if e.event_type == DagsterEventType.STEP_FAILURE]
    assert any("no_pending_transactions" in (key or "") for key in failed), failed
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["no_pending_transactions"].passed
    assert checks["no_pending_transactions"].metadata["pending"].value == 1
    # the next run finishes it before doing anything else
    runner.script.fail_commit = False
    runner.calls.clear()
    harness.run_chunks("shop.items#00001", "shop.items#00001")
    assert runner.names()[0] == "resolve_pending"
    assert runner.pending_transactions(log=False) == []


def test_binlog_waits_for_the_snapshot(harness):
    harness.run_splits()
    runner = harness.runner
    runner.calls.clear()
    result = harness.run_binlog(raise_on_error=False)
    assert not result.success
    failure = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_FAILURE][0]
    assert f"snapshot of pipeline '{harness.handle.slug}' is not finished" in failure.step_failure_data.error.message
    assert "run_binlog_batch" not in runner.names()


def all_chunks_committed(harness):
    """The snapshot done, straight through the double (tests above run it through Dagster)."""
    runner = harness.runner
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()


def test_binlog_batch_commits_after_success_and_reports_metadata(harness):
    all_chunks_committed(harness)
    runner = harness.runner
    runner.calls.clear()
    result = harness.run_binlog()
    assert result.success
    names = runner.names()
    assert names.index("resolve_pending") < names.index("run_binlog_batch") < names.index("commit_batch")
    assert runner.script.committed_offset == {"file": "binlog.000001", "position": 400}
    md = result.asset_materializations_for_node(f"{harness.handle.slug}__binlog_stream")[0].metadata
    assert md["start_offset"].value == "binlog.000001:100"
    assert md["end_offset"].value == "binlog.000001:400"
    assert md["events"].value == 5 and md["events_per_table"].value == {"shop.orders": 4, "shop.items": 1}
    assert md["lag_s"].value == 1.5


def _moving_server(runner, monkeypatch, positions: list[int]) -> None:
    """After each batch the server has moved on to the next position (a live write load), and a
    run waits for nothing between batches."""
    from cdc_core.pipeline.stream_run import StreamRunPolicy

    read = runner.run_binlog_batch
    upcoming = iter(positions)

    def run_binlog_batch(max_events=None):
        batch = read(max_events)
        following = next(upcoming, None)
        if following is not None:
            runner.script.server_offset = {"file": "binlog.000001", "position": following}
        return batch

    monkeypatch.setattr(runner, "run_binlog_batch", run_binlog_batch)
    monkeypatch.setattr(runner, "stream_run_policy", lambda budget_s=None: StreamRunPolicy(
        60.0 if budget_s is None else budget_s, batch_interval_s=0.0))


def test_a_binlog_run_streams_batches_while_the_server_moves_on(harness, monkeypatch):
    """Each batch is committed before the next is read; the last by the hook, the earlier ones by
    the run itself; the run ends once the committed offset has caught up with the server."""
    all_chunks_committed(harness)
    runner = harness.runner
    _moving_server(runner, monkeypatch, [600, 800])
    runner.calls.clear()
    result = harness.run_binlog()
    assert result.success
    batches = [arg for name, arg in runner.calls if name == "commit_batch"]
    assert batches == ["b0001", "b0002", "b0003"]
    order = [(name, arg) for name, arg in runner.calls if name in ("run_binlog_batch", "commit_batch")]
    assert order == [("run_binlog_batch", None), ("commit_batch", "b0001"), ("run_binlog_batch", None),
                     ("commit_batch", "b0002"), ("run_binlog_batch", None), ("commit_batch", "b0003")]
    assert runner.script.committed_offset == {"file": "binlog.000001", "position": 800}
    md = result.asset_materializations_for_node(f"{harness.handle.slug}__binlog_stream")[0].metadata
    assert md["batches"].value == 3 and md["run_ended"].value == "caught up"
    assert md["start_offset"].value == "binlog.000001:100" and md["end_offset"].value == "binlog.000001:800"
    assert md["events"].value == 15 and md["events_per_table"].value == {"shop.orders": 12, "shop.items": 3}
    assert runner.pending_transactions(log=False) == []


def test_a_caught_up_run_commits_its_batch_and_waits_for_more(harness, monkeypatch):
    """tidemark.binlog.idle-wait-s: a run that has caught up commits its batch itself and waits for
    the binlog to move; a commit arriving meanwhile is the next batch of the same run, and when
    nothing comes the run ends with every batch committed (the hook has none left)."""
    from cdc_core.pipeline.stream_run import StreamRunPolicy
    from orchestration.defs import assets

    all_chunks_committed(harness)
    runner = harness.runner
    monkeypatch.setattr(runner, "stream_run_policy", lambda budget_s=None: StreamRunPolicy(
        60.0, batch_interval_s=0.0, idle_wait_s=2.0))
    monkeypatch.setattr(assets, "IDLE_POLL_S", 0.01)
    offset = runner.server_offset
    polls = {"n": 0}

    def server_offset():
        polls["n"] += 1
        if polls["n"] == 3:  # a write arrives while the run waits after its first batch
            runner.script.server_offset = {"file": "binlog.000001", "position": 700}
        return offset()

    monkeypatch.setattr(runner, "server_offset", server_offset)
    runner.calls.clear()
    result = harness.run_binlog()
    assert result.success
    order = [(name, arg) for name, arg in runner.calls if name in ("run_binlog_batch", "commit_batch")]
    assert order == [("run_binlog_batch", None), ("commit_batch", "b0001"),
                     ("run_binlog_batch", None), ("commit_batch", "b0002")]
    assert runner.script.committed_offset == {"file": "binlog.000001", "position": 700}
    md = result.asset_materializations_for_node(f"{harness.handle.slug}__binlog_stream")[0].metadata
    assert md["batches"].value == 2 and md["run_ended"].value == "caught up"
    assert runner.pending_transactions(log=False) == []


def test_a_binlog_run_with_no_budget_applies_one_batch(harness, monkeypatch):
    from orchestration.defs.pipelines import BINLOG_RUN_SECONDS_TAG

    all_chunks_committed(harness)
    runner = harness.runner
    _moving_server(runner, monkeypatch, [600, 800])
    runner.calls.clear()
    result = harness.run_binlog(tags={BINLOG_RUN_SECONDS_TAG: "0"})
    assert result.success
    assert [arg for name, arg in runner.calls if name == "commit_batch"] == ["b0001"]
    assert runner.script.committed_offset == {"file": "binlog.000001", "position": 400}
    md = result.asset_materializations_for_node(f"{harness.handle.slug}__binlog_stream")[0].metadata
    assert md["batches"].value == 1 and md["run_ended"].value == "one batch per run"


def test_a_binlog_run_ends_when_paused_between_batches(harness, monkeypatch):
    """A schema change sets the pause flag and waits for in-flight runs: the run ends with the
    batch it is applying, which its commit hook commits."""
    all_chunks_committed(harness)
    runner = harness.runner
    _moving_server(runner, monkeypatch, [600, 800])
    commit = runner.commit_batch

    def commit_then_pause(batch_id):
        done = commit(batch_id)
        BINLOG_PAUSED.put(runner.store, {"reason": "ALTER TABLE shop.orders"})
        return done

    monkeypatch.setattr(runner, "commit_batch", commit_then_pause)
    result = harness.run_binlog()
    assert result.success
    md = result.asset_materializations_for_node(f"{harness.handle.slug}__binlog_stream")[0].metadata
    assert md["batches"].value == 2 and md["run_ended"].value == "paused"
    assert runner.script.committed_offset == {"file": "binlog.000001", "position": 600}
    assert runner.pending_transactions(log=False) == []


def test_a_failed_commit_inside_a_run_leaves_the_batch_prepared(harness, monkeypatch):
    """As when a single-batch run's commit hook fails: the batch stays PREPARED (for the hook's
    retry and ``resolve_pending``), never aborted, and the run goes no further."""
    all_chunks_committed(harness)
    runner = harness.runner
    _moving_server(runner, monkeypatch, [600, 800])
    runner.script.fail_commit = True
    runner.calls.clear()
    result = harness.run_binlog(raise_on_error=False)
    assert not result.success  # the hook's retry failed too: the blocking check fails the run
    assert runner.names().count("run_binlog_batch") == 1 and "abort_batch" not in runner.names()
    assert [t["label"] for t in runner.pending_transactions(log=False)] == ["l-b0001"]


def test_binlog_failure_aborts_nothing_committed(harness):
    all_chunks_committed(harness)
    runner = harness.runner
    runner.script.fail_batch = True
    runner.calls.clear()
    result = harness.run_binlog(raise_on_error=False)
    assert not result.success
    assert "commit_batch" not in runner.names()
    assert runner.script.committed_offset is None


def test_binlog_respects_the_pause_flag(harness):
    all_chunks_committed(harness)
    runner = harness.runner
    BINLOG_PAUSED.put(runner.store, {"reason": "ALTER TABLE shop.orders"})
    runner.calls.clear()
    result = harness.run_binlog(raise_on_error=False)
    assert not result.success
    assert "run_binlog_batch" not in runner.names()


def test_table_parity_is_authoritative_only_when_quiet(harness):
    all_chunks_committed(harness)
    harness.run_binlog()  # caught up: committed == server
    runner = harness.runner
    runner.script.parity_ok = False
    job = harness.defs.resolve_implicit_global_asset_job_def()
    check_key = dg.AssetCheckKey(harness.handle.binlog_key, "table_parity")
    result = job.get_subset(asset_check_selection={check_key}, asset_selection=set()).execute_in_process(
        instance=harness.instance, raise_on_error=False)
    evaluation = result.get_asset_check_evaluations()[0]
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    assert evaluation.metadata["mismatched"].value == 2
    assert set(evaluation.metadata["differing_keys"].value) == set(runner.captured_tables())  # named by key
    # MySQL moved on: a difference is not (yet) an error
    runner.script.server_offset = {"file": "binlog.000001", "position": 900}
    result = job.get_subset(asset_check_selection={check_key}, asset_selection=set()).execute_in_process(
        instance=harness.instance, raise_on_error=False)
    evaluation = result.get_asset_check_evaluations()[0]
    assert not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN


def test_materialize_splits_directly(harness):
    """The plain ``materialize`` API, as a user would call it in a notebook."""
    from orchestration.defs.assets import build_assets
    from orchestration.defs.hooks import build_hooks

    splits = build_assets(harness.handle, build_hooks(harness.handle)).snapshot_splits
    key = harness.handle.resource_key
    result = dg.materialize([splits], instance=harness.instance, resources={key: harness.defs.resources[key]})
    assert result.success
    assert len(partitions(harness)) == 5


def test_hooks_invoked_directly_commit_and_abort_what_the_ledger_names(harness):
    from orchestration.defs.hooks import build_hooks, step_key_of
    harness.run_splits()
    runner = harness.runner
    runner.run_chunks(["shop.items#00000"])
    hooks = build_hooks(harness.handle)
    key = harness.handle.resource_key
    op = dg.OpDefinition(name="step_a", compute_fn=lambda context: None)
    ledger = runner.step_ledger()
    resources = {key: harness.defs.resources[key]}
    with dg.build_hook_context(resources=resources, op=op, run_id="run-1") as context:
        ledger.record("run-1", step_key_of(context), chunk_keys=["shop.items#00000"], prepared=["shop.items#00000"])
        runner.calls.clear()
        hooks.commit_chunks(context)
        assert runner.calls == [("commit_chunks", ["shop.items#00000"])]
        assert ledger.read("run-1", step_key_of(context)) == {}  # forgotten once done
    with dg.build_hook_context(resources=resources, op=op, run_id="run-2", op_exception=RuntimeError("x")) as context:
        ledger.record("run-2", step_key_of(context), chunk_keys=["shop.items#00001"])
        hooks.abort_chunks(context)
        assert runner.calls[-1] == ("abort_chunks", ["shop.items#00001"])


COMMIT_DOWN = ("the Doris FE at 127.0.0.1:8030 does not answer (ConnectionError ([Errno 111] Connection refused); "
               "4 attempts at PUT /api/shop/_stream_load_2pc); check that the FE is up and that sink.fenodes names "
               "its HTTP address (host:8030)")


@pytest.mark.parametrize("half", ["snapshot", "binlog"])
def test_doris_down_at_the_commit_fails_the_run_on_one_line(half, harness):
    """Issue 29 build 2: the Doris FE down when the hook commits. The hook does not raise (a hook
    that raises is a HOOK_ERRORED stack trace on the run page): it says the line at ERROR and the
    blocking no_pending_transactions check fails the run with it — cause and fix, no stack."""
    from orchestration.defs.runs import failure_message

    harness.run_splits()
    runner = harness.runner
    if half == "binlog":
        harness.run_chunks("shop.orders#00000", "shop.items#00001")
    runner.script.commit_outage = COMMIT_DOWN
    result = (harness.run_chunks("shop.orders#00000", "shop.orders#00000", raise_on_error=False) if half == "snapshot"
              else harness.run_binlog(raise_on_error=False))
    assert not result.success
    assert not [e for e in result.all_events if e.event_type == DagsterEventType.HOOK_ERRORED]
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_key.endswith("no_pending_transactions")
    error, user = failure.step_failure_data.error, failure.step_failure_data.user_failure_data
    assert error.stack == [] and error.cause is None and error.message == user.description
    assert user.description == (f"1 Doris transaction(s) prepared but not committed, as the commit failed: "
                                f"{COMMIT_DOWN}; the next run or sensor tick commits them first (resolve_pending)")
    assert user.metadata["cause"].value.endswith("as the commit failed: the Doris FE at 127.0.0.1:8030 does not "
                                                 "answer (ConnectionError ([Errno 111] Connection refused); 4 attempts "
                                                 "at PUT /api/shop/_stream_load_2pc)")
    assert user.metadata["fix"].value.startswith("check that the FE is up and that sink.fenodes names")
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["no_pending_transactions"].passed  # the evaluation is recorded before the run fails
    logs = harness.instance.all_logs(result.run_id)
    said = [e.user_message for e in logs if e.level == logging.ERROR and e.dagster_event is None]
    assert any(m.endswith(f"its loads stay prepared and the next run commits them first: {COMMIT_DOWN}") for m in said)
    assert any("Traceback" in e.user_message for e in logs if e.level == logging.DEBUG)  # the stack: debug log
    run = harness.instance.get_run_by_id(result.run_id)
    assert COMMIT_DOWN in failure_message(harness.instance, run)  # what `tidemark status` shows
    [run_failure] = harness.instance.all_logs(result.run_id, of_type=DagsterEventType.RUN_FAILURE)
    assert run_failure.dagster_event.event_specific_data.error.stack == []


def test_a_runs_process_is_one_hidden_tag_not_three_on_its_row(harness):
    """Issue 29, item 9: run rows were cluttered with tidemark/host, tidemark/pid and tidemark/pid_start
    tags. The process (for fail_dead_runs) is one tag under ``.dagster/``, which the UI does not show."""
    from orchestration.defs.runs import RUN_PROCESS_TAG, RunProcess

    result = harness.run_splits()
    run = harness.instance.get_run_by_id(result.run_id)
    assert RUN_PROCESS_TAG.startswith(".dagster/") and RUN_PROCESS_TAG in run.tags
    assert RunProcess.of(run).pid == os.getpid()
    assert not [key for key in run.tags if key in ("tidemark/host", "tidemark/pid", "tidemark/pid_start")]
