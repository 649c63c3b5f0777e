"""Every command's exit codes, as ``docs/cli.md`` tabulates them: one case per command and code.

A code that needs a server down is run for real against a port where nothing listens; a code that
needs the outcome of a long run (a snapshot, a verify that differs, a paused binlog) takes the
outcome from a stand-in of the step that produces it, since what is under test here is the
command's mapping of outcomes to codes (the outcomes themselves are the end-to-end tests'). A bad
command line is 2 for every command.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cdc_core.pipeline.parity.table_verify import TableVerdict
from cdc_core.pipeline.status import Phase, PipelineStatus, StreamPosition
from devstack.procs import free_port
from orchestration.cli.tidemark import main
from tests.orchestration.fakes import write_pipeline

COMMANDS = {
    "validate": ["validate"],
    "run": ["run", "--once"],
    "run (continuous)": ["run"],
    "sql": ["sql", "SELECT 1"],
    "verify": ["verify"],
    "status": ["status"],
    "splits": ["splits"],
    "dev": ["dev"],
}


@pytest.fixture
def pipeline(tmp_path, monkeypatch) -> Path:
    """A valid pipeline whose MySQL and Doris are ports where nothing listens."""
    monkeypatch.setenv("TIDEMARK_DAGSTER_HOME", str(tmp_path / "dagster"))
    path = write_pipeline(tmp_path, name="codes")
    text = path.read_text().replace("port: 3306", f"port: {free_port()}")
    path.write_text(text.replace("127.0.0.1:8030", f"127.0.0.1:{free_port()}"))
    return path


@pytest.fixture
def invalid(tmp_path) -> Path:
    path = tmp_path / "invalid.yaml"
    path.write_text("source: {type: mysql}\nsink: {type: doris}\n")
    return path


def argv(command: str, path: Path, *more: str) -> list[str]:
    first, *rest = COMMANDS[command]
    return [first, str(path), *rest, *more]


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_invalid_or_missing_file_exits_2(command, invalid, tmp_path, capsys):
    assert main(argv(command, invalid)) == 2
    assert f"{invalid}: source.hostname: missing required option" in capsys.readouterr().err
    assert main(argv(command, tmp_path / "missing.yaml")) == 2
    assert "no such pipeline file" in capsys.readouterr().err


@pytest.mark.parametrize("command", [*sorted(COMMANDS), "devstack", "demo"])
def test_a_bad_command_line_exits_2(command, capsys):
    with pytest.raises(SystemExit) as caught:
        main([command, "--no-such-option"])
    assert caught.value.code == 2


# -- validate ------------------------------------------------------------------------------------


def test_validate_0_for_a_valid_file(pipeline, capsys):
    assert main(["validate", str(pipeline)]) == 0
    assert f"{pipeline}: ok" in capsys.readouterr().out


def test_validate_1_when_connect_finds_a_server_that_does_not_answer(pipeline, capsys):
    assert main(["validate", "--connect", str(pipeline)]) == 1
    assert "does not answer" in capsys.readouterr().err


# -- run --once ----------------------------------------------------------------------------------


@pytest.fixture
def run_steps(monkeypatch):
    """`tidemark run` without Spark's early start; the servers' check and the run are the test's."""
    from orchestration.cli import spark_prestart

    monkeypatch.setattr(spark_prestart.SparkPrestart, "start", lambda self: None)


def test_run_1_when_a_server_does_not_answer(pipeline, run_steps, capsys):
    assert main(["run", str(pipeline), "--once"]) == 1
    assert "does not answer" in capsys.readouterr().err
    assert not (pipeline.parent / "state").exists()


@pytest.mark.parametrize("outcome, code", [("done", 0), ("failed", 1), ("paused", 3)])
def test_run_codes_by_outcome(outcome, code, pipeline, run_steps, monkeypatch, capsys):
    from cdc_core.pipeline import preflight
    from orchestration.cli import run_once

    def run(self: Any) -> run_once.Summary:
        if outcome == "failed":
            raise run_once.RunOnceError("codes__snapshot_chunks: a load failed")
        if outcome == "paused":
            raise run_once.RunOnceError("the binlog of 'codes' is paused by a schema change", code=3)
        return run_once.Summary(chunks_total=1, chunks_loaded=1, rows=2)

    monkeypatch.setattr(preflight, "check_connections", lambda definition: None)
    monkeypatch.setattr(run_once.OnceRun, "run", run)
    assert main(["run", str(pipeline), "--once"]) == code
    err = capsys.readouterr().err
    assert ("1 of 1 chunks loaded" in err) if code == 0 else ("tidemark run codes: " in err)


@pytest.mark.parametrize("outcome, code", [("stopped", 0), ("failed", 1), ("paused", 3)])
def test_run_without_once_codes_by_outcome(outcome, code, pipeline, run_steps, monkeypatch, capsys):
    from cdc_core.pipeline import preflight
    from orchestration.cli import run_loop, run_once

    def run(self: Any) -> run_once.Summary:
        if outcome == "failed":
            raise run_once.RunOnceError("codes__binlog_stream: 8 binlog runs failed in a row; stopped")
        if outcome == "paused":
            raise run_once.RunOnceError("the binlog of 'codes' is paused by a schema change", code=3)
        return run_once.Summary(chunks_total=1, chunks_loaded=1, rows=2, batches=3, events=7)

    monkeypatch.setattr(preflight, "check_connections", lambda definition: None)
    monkeypatch.setattr(run_loop.LoopRun, "run", run)
    assert main(["run", str(pipeline)]) == code
    err = capsys.readouterr().err
    assert ("3 batch(es), 7 events" in err) if code == 0 else ("tidemark run codes: " in err)


def test_run_without_once_1_when_a_server_does_not_answer(pipeline, run_steps, capsys):
    assert main(["run", str(pipeline)]) == 1
    assert "does not answer" in capsys.readouterr().err
    assert not (pipeline.parent / "state").exists()


def test_run_without_once_2_for_two_pipelines(pipeline, tmp_path, capsys):
    other = write_pipeline(tmp_path, name="other")
    assert main(["run", str(pipeline), str(other)]) == 2
    assert "one pipeline per command" in capsys.readouterr().err


# -- sql -----------------------------------------------------------------------------------------


def test_sql_1_when_doris_does_not_answer(pipeline, capsys):
    assert main(["sql", str(pipeline), "SELECT 1"]) == 1
    err = capsys.readouterr().err
    assert "does not answer" in err and len(err.strip().splitlines()) == 1


def test_sql_2_for_a_limit_beyond_the_query_api(pipeline, capsys):
    assert main(["sql", str(pipeline), "SELECT 1", "--limit", "20000"]) == 2
    assert "--limit must be between 1 and 10000" in capsys.readouterr().err


# -- verify --------------------------------------------------------------------------------------


def test_verify_2_without_a_snapshot(pipeline, capsys):
    assert main(["verify", str(pipeline)]) == 2
    assert "has no snapshot yet" in capsys.readouterr().err


def test_verify_2_when_a_server_does_not_answer(pipeline, monkeypatch, capsys):
    from cdc_core.pipeline.service import PipelineService

    monkeypatch.setattr(PipelineService, "captured_tables", lambda self: ["shop.orders"])
    assert main(["verify", str(pipeline)]) == 2  # not 1: that says the tables differ
    err = capsys.readouterr().err
    assert err.startswith("tidemark verify: MySQL at 127.0.0.1:") and "does not answer" in err


@pytest.mark.parametrize("equal, code", [(True, 0), (False, 1)])
def test_verify_0_when_equal_1_when_a_table_differs(equal, code, pipeline, monkeypatch, capsys):
    from cdc_core.pipeline import preflight
    from cdc_core.pipeline.service import PipelineService

    verdict = TableVerdict("shop.orders", "shop.orders", equal, 3, 3 if equal else 2, 1, 0 if equal else 1,
                           () if equal else ((7,),))
    monkeypatch.setattr(PipelineService, "captured_tables", lambda self: ["shop.orders"])
    monkeypatch.setattr(PipelineService, "verify", lambda self, tables, max_keys: [verdict])
    monkeypatch.setattr(preflight, "check_connections", lambda definition: None)
    assert main(["verify", str(pipeline)]) == code
    assert ("equal" if equal else "DIFFERENT") in capsys.readouterr().out


# -- status --------------------------------------------------------------------------------------


def test_status_0_when_both_servers_answer(pipeline, monkeypatch, capsys):
    from cdc_core.pipeline.service import PipelineService

    answered = PipelineStatus(
        pipeline="codes", phase=Phase.NOT_STARTED, plan_complete=False, snapshot_done=False, tables=(),
        stream=StreamPosition("initial", None, {"file": "binlog.000001", "position": 4}, False, None, None,
                              "the snapshot is not finished"),
        pending_transactions=(), binlog_paused=None, pending_ddl=None, schema_registry="IDLE",
        schema_change_error=None, doris_fe="127.0.0.1:8030")
    monkeypatch.setattr(PipelineService, "status", lambda self: answered)
    assert main(["status", str(pipeline)]) == 0
    assert "binlog.000001:4" in capsys.readouterr().out


def test_status_1_when_a_server_does_not_answer_and_the_status_is_shown(pipeline, capsys):
    assert main(["status", str(pipeline), "--json"]) == 1
    captured = capsys.readouterr()
    assert '"unreachable": {"mysql": ' in captured.out and len(captured.err.splitlines()) == 2


# -- splits --------------------------------------------------------------------------------------


def test_splits_0_with_a_plan(pipeline, monkeypatch, capsys):
    from cdc_core.pipeline.results import NextPlan, PlanSource
    from cdc_core.pipeline.service import PipelineService

    monkeypatch.setattr(PipelineService, "next_plan", staticmethod(lambda definition: NextPlan(
        (), ("shop.orders",), PlanSource.COMPUTED)))
    assert main(["splits", str(pipeline)]) == 0
    assert "0 chunk(s)" in capsys.readouterr().out


def test_splits_1_when_mysql_does_not_answer(pipeline, capsys):
    assert main(["splits", str(pipeline)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tidemark splits: ") and len(err.splitlines()) == 1


# -- dev -----------------------------------------------------------------------------------------


class _Services:
    """A stand-in for the Dagster webserver and daemon: they stop at Ctrl-C, or one of them dies."""

    dies = False

    def __init__(self, *args: Any, **kwargs: Any):
        self.url, self.home = "http://127.0.0.1:3000", Path(".")

    def start(self) -> None:
        if not self.dies:
            raise KeyboardInterrupt

    def wait_ready(self) -> None:
        raise RuntimeError("dagster daemon exited early ({'daemon': 1}); see the log")

    def stop(self) -> None:
        pass


@pytest.mark.parametrize("dies, code", [(False, 0), (True, 1)])
def test_dev_0_when_stopped_1_when_dagster_dies(dies, code, pipeline, monkeypatch, capsys):
    from orchestration.cli import dev

    monkeypatch.setattr(dev, "DagsterServices", type("Services", (_Services,), {"dies": dies}))
    assert main(["dev", str(pipeline)]) == code
    if dies:
        assert "tidemark dev: dagster daemon exited early" in capsys.readouterr().err


# -- devstack and demo ---------------------------------------------------------------------------


@pytest.mark.parametrize("fails, code", [(False, 0), (True, 1)])
def test_devstack_0_when_done_1_when_a_server_does_not_start(fails, code, tmp_path, monkeypatch, capsys):
    from devstack.stack import DevStack

    def up(self: DevStack, **kwargs: Any) -> dict:
        if fails:
            raise RuntimeError("The Doris stand-in on 127.0.0.1:8030 did not start")
        return {"mysql": {"host": "h", "port": 1, "user": "u", "password": "p", "root_socket": "s"}, "doris": None}

    monkeypatch.setattr(DevStack, "up", up)
    assert main(["devstack", "up", "--dir", str(tmp_path / "stack")]) == code
    assert main(["devstack", "status", "--dir", str(tmp_path / "stack")]) == 0


@pytest.mark.parametrize("equal, code", [(True, 0), (False, 1)])
def test_demo_compare_0_when_equal_1_when_a_table_differs(equal, code, tmp_path, monkeypatch):
    from devstack.stack import DevStack
    from orchestration.cli import demo

    class Conn:
        def close(self) -> None:
            pass

    monkeypatch.setattr(DevStack, "endpoints", lambda self: {"mysql": {"root_socket": "s"},
                                                             "doris": {"fe_http": "127.0.0.1:1"}})
    monkeypatch.setattr(demo.pymysql, "connect", lambda **kwargs: Conn())
    monkeypatch.setattr(demo, "compare", lambda conn, fe: equal)
    assert main(["demo", "compare", "--dir", str(tmp_path)]) == code
