"""Issue 29, item 2: a Dagster run that fails because a server is down prints one line, no stack trace.

The run's step raises what a step raises when Doris does not answer; the definitions' console logger
(``orchestration/defs/console_logger.py``) prints the failure as one line with the cause, and the
failure (``orchestration/defs/failures.py``) carries the cause and the fix as its description and
metadata, the stack trace only in the run's debug log.
"""

import pickle

import dagster as dg
from dagster import OpExecutionContext

from cdc_core.pipeline.preflight import ConnectionCheckError
from orchestration.defs.console_logger import FAILURE_EXTRA, one_line_console_logger, one_line_message
from orchestration.defs.failures import failure_for, one_line_failures

DOWN = ("the Doris FE at 127.0.0.1:8030 does not answer: check sink.fenodes in /p/shop.yaml (the FE's HTTP "
        "address, host:8030), and that the FE is up (connection refused)")


@dg.op
@one_line_failures
def binlog_stream(context: OpExecutionContext) -> None:
    raise ConnectionCheckError("doris", DOWN)


@dg.op
@one_line_failures
def a_bug(context: OpExecutionContext) -> None:
    raise KeyError("not an expected failure")


@dg.op
@one_line_failures
def yields_then_fails(context: OpExecutionContext):
    yield dg.Output(1)
    raise ConnectionCheckError("doris", DOWN)


@dg.op
@one_line_failures
def its_own_failure(context: OpExecutionContext) -> None:
    raise dg.Failure(description="The snapshot of pipeline 'shop' is not finished: materialize shop/snapshot_splits\n"
                     "first", metadata={"chunks_left": 3})


def _run(op: dg.OpDefinition, instance: dg.DagsterInstance) -> dg.ExecuteInProcessResult:
    job = dg.GraphDefinition("g", node_defs=[op]).to_job(name="shop_binlog_job",
                                                         logger_defs={"console": one_line_console_logger})
    # A run config that names the logger, as `tidemark run --once`'s does (orchestration/cli/run_once.py).
    return job.execute_in_process(instance=instance, raise_on_error=False,
                                  run_config={"loggers": {"console": {"config": {"log_level": "INFO"}}}})


def test_a_server_down_fails_the_run_in_one_line_with_cause_and_fix(capfd):
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(binlog_stream, instance)
        assert not result.success
        [failure] = [e for e in result.all_events if e.is_step_failure]
        data = failure.step_failure_data
        assert data.user_failure_data.description == DOWN
        metadata = data.user_failure_data.metadata
        assert metadata["cause"].value == "the Doris FE at 127.0.0.1:8030 does not answer"
        assert metadata["fix"].value.startswith("check sink.fenodes in /p/shop.yaml")
        assert metadata["error"].value == "ConnectionCheckError"
        assert data.error.cause is None  # raised from None: no chain of wrapped exceptions
        # what the run page prints under the failure: the line, no "Stack Trace: File …" (failures.py)
        assert data.error.message == DOWN and data.error.stack == []
        [run_failure] = instance.all_logs(result.run_id, of_type=dg.DagsterEventType.RUN_FAILURE)
        assert run_failure.dagster_event.event_specific_data.error.stack == []
        logs = instance.all_logs(result.run_id)
        assert any("Traceback" in (e.user_message or "") and "ConnectionCheckError" in (e.user_message or "")
                   for e in logs if e.level == 10)  # DEBUG: the stack trace stays in the debug log
    err = capfd.readouterr().err
    assert "Stack Trace" not in err and "Traceback" not in err and 'File "' not in err
    failed = [line for line in err.splitlines() if "STEP_FAILURE" in line]
    assert len(failed) == 1 and DOWN in failed[0], err


def test_a_bug_keeps_dagsters_full_report():
    with dg.DagsterInstance.ephemeral() as instance:
        result = _run(a_bug, instance)
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_failure_data.user_failure_data is None
    assert "KeyError" in failure.step_failure_data.error.cause.cls_name


def test_one_line_message_and_the_cause_fix_split():
    text = ('shop_binlog_job - 1f2e - STEP_FAILURE - Execution of step "x" failed.\n\n'
            "dagster._core.definitions.events.Failure: the FE does not answer: check sink.fenodes\n\n"
            'Stack Trace:\n  File "/x.py", line 1, in y\n')
    assert one_line_message(text) == ('shop_binlog_job - 1f2e - STEP_FAILURE - Execution of step "x" failed. '
                                      "the FE does not answer: check sink.fenodes")
    failure = failure_for(ValueError("source.tables: 'a.b' matches no table: nothing to capture; fix source.tables"))
    assert failure.metadata["cause"].value == "source.tables: 'a.b' matches no table: nothing to capture"
    assert failure.metadata["fix"].value == "fix source.tables"


def test_a_body_that_yields_and_a_bodys_own_failure_are_one_line_too():
    with dg.DagsterInstance.ephemeral() as instance:
        [yielded] = [e for e in _run(yields_then_fails, instance).all_events if e.is_step_failure]
        [own] = [e for e in _run(its_own_failure, instance).all_events if e.is_step_failure]
    assert yielded.step_failure_data.error.message == DOWN and yielded.step_failure_data.error.stack == []
    error, user = own.step_failure_data.error, own.step_failure_data.user_failure_data
    line = "The snapshot of pipeline 'shop' is not finished: materialize shop/snapshot_splits first"
    assert error.message == user.description == line and error.stack == []
    assert user.metadata["cause"].value == "The snapshot of pipeline 'shop' is not finished"
    assert user.metadata["fix"].value == "materialize shop/snapshot_splits first"
    assert user.metadata["chunks_left"].value == 3


def test_a_one_line_failure_is_a_failure_that_pickles():
    failure = failure_for(ConnectionCheckError("doris", DOWN))
    assert isinstance(failure, dg.Failure) and failure.description == DOWN
    again = pickle.loads(pickle.dumps(failure))
    assert type(again) is type(failure) and again.description == DOWN and again.metadata == failure.metadata


@dg.op
def commit_check(context: OpExecutionContext, loaded: int) -> None:
    pass


@dg.failure_hook
def failing_abort_hook(context) -> None:
    raise RuntimeError("abort of the loads failed too: No backend alive.")


@dg.op
@one_line_failures
def failing_load(context: OpExecutionContext) -> int:
    context.log.error("the load failed; its loads stay prepared", extra=FAILURE_EXTRA)  # as a commit hook says it
    raise ConnectionCheckError("doris", DOWN)


def test_a_caller_that_reports_the_failure_itself_gets_none_of_its_consequences(capfd):
    """``show_failures: false`` (``tidemark run --once``): no step or run failure, no hook error and
    no "Dependencies for step … Not executing." for the steps after the failed one — the caller's
    one line is the failure on the terminal."""
    graph = dg.GraphDefinition("g", node_defs=[failing_load, commit_check], dependencies={
        "commit_check": {"loaded": dg.DependencyDefinition("failing_load")}})
    job = graph.to_job(name="shop_snapshot_job", logger_defs={"console": one_line_console_logger},
                       hooks={failing_abort_hook})
    with dg.DagsterInstance.ephemeral() as instance:
        result = job.execute_in_process(instance=instance, raise_on_error=False, run_config={
            "loggers": {"console": {"config": {"log_level": "WARNING", "show_failures": False}}}})
    assert not result.success
    assert any(e.event_type == dg.DagsterEventType.HOOK_ERRORED for e in result.all_events)
    err = capfd.readouterr().err
    assert "Not executing" not in err and "HOOK_ERRORED" not in err and "No backend alive" not in err, err
    assert "STEP_FAILURE" not in err and DOWN not in err and "stay prepared" not in err, err
