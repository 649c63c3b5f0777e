"""Every command's exit codes, as ``docs/cli.md`` tabulates them: one case per command and code.

A code that needs a server down is run for real against a port where nothing listens; a code that
needs a server's answer is run against the session's MariaDB and Doris stand-in; a code that needs
the outcome of a long run (a snapshot, a verify that differs, a paused binlog) takes the outcome
from a stand-in of the step that produces it, since what is under test here is the command's
mapping of outcomes to codes (the outcomes themselves are the end-to-end tests'). A bad command
line is 2 for every command.

Each test says which row of the table and which codes it shows (``@exits``); the last tests hold
the table and the tests to each other: every subcommand of the parser has a row, and every code a
row gives is shown by a test here.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cdc_core.config import load_pipeline
from cdc_core.model.offsets import BinlogOffset
from cdc_core.pipeline.parity.repair import TableRepair
from cdc_core.pipeline.parity.table_verify import TableVerdict
from cdc_core.pipeline.service import PipelineService
from cdc_core.pipeline.status import Phase, PipelineStatus, StreamPosition
from cdc_core.state.keys import COMMITTED_OFFSET
from devstack.pipeline_file import write_pipeline as write_stack_pipeline
from devstack.procs import free_port
from orchestration.cli.tidemark import build_parser, main
from tests.orchestration.fakes import write_pipeline

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"

# The table's rows (their first cell, without the backticks) and how each is run on a pipeline file.
COMMANDS = {
    "validate FILE…": ["validate"],
    "run FILE… --once": ["run", "--once"],
    "run FILE (no --once)": ["run"],
    "sql FILE STATEMENT": ["sql", "SELECT 1"],
    "verify FILE": ["verify"],
    "verify FILE --repair": ["verify", "--repair"],
    "resnapshot FILE [--table T]…": ["resnapshot"],
    "status FILE": ["status"],
    "splits FILE": ["splits"],
    "dev FILE…": ["dev"],
}
ROWS_WITHOUT_A_FILE = ("devstack up|down|status", "demo load|compare")


def _subcommands() -> set[str]:
    parser = build_parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(sub.choices)


# (row, code) -> the tests that show it, filled by @exits as the module is imported
SHOWN: dict[tuple[str, int], list[str]] = defaultdict(list)


def exits(rows: str | tuple[str, ...], *codes: int) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Mark a test as the one that shows ``codes`` of ``rows`` (a row of the table, or several)."""
    def mark(test: Callable[..., Any]) -> Callable[..., Any]:
        for row in (rows,) if isinstance(rows, str) else rows:
            assert row in COMMANDS or row in ROWS_WITHOUT_A_FILE, row
            for code in codes:
                SHOWN[(row, code)].append(test.__name__)
        return test
    return mark


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


@pytest.fixture
def servers_up(mysql_server, root_conn, fresh_db, doris_standin, tmp_path, monkeypatch) -> Path:
    """A pipeline over the session's MariaDB and Doris stand-in, capturing two tables; no snapshot yet."""
    monkeypatch.setenv("TIDEMARK_DAGSTER_HOME", str(tmp_path / "dagster"))
    with root_conn.cursor() as cur:
        for table in ("a", "b"):
            cur.execute(f"CREATE TABLE `{fresh_db}`.{table} (id INT PRIMARY KEY, v INT)")
            cur.execute(f"INSERT INTO `{fresh_db}`.{table} VALUES (1, 1), (2, 2)")
    ep = mysql_server.endpoint
    return write_stack_pipeline(tmp_path / "up.yaml", host=ep.host, port=ep.port, fe=doris_standin.fe_http,
                                tables=f"{fresh_db}.\\.*", name=f"codes_{fresh_db}", state_dir=tmp_path / "state",
                                server_id="5660-5670")


@exits(tuple(COMMANDS), 2)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_an_invalid_or_missing_file_exits_2(command, invalid, tmp_path, capsys):
    assert main(argv(command, invalid)) == 2
    assert f"{invalid}: source.hostname: missing required option" in capsys.readouterr().err
    assert main(argv(command, tmp_path / "missing.yaml")) == 2
    assert "no such pipeline file" in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(_subcommands()))
def test_a_bad_command_line_exits_2(command, capsys):
    with pytest.raises(SystemExit) as caught:
        main([command, "--no-such-option"])
    assert caught.value.code == 2


# -- validate ------------------------------------------------------------------------------------


@exits("validate FILE…", 0)
def test_validate_0_for_a_valid_file(pipeline, capsys):
    assert main(["validate", str(pipeline)]) == 0
    assert f"{pipeline}: ok" in capsys.readouterr().out


@exits("validate FILE…", 1)
def test_validate_1_when_connect_finds_a_server_that_does_not_answer(pipeline, capsys):
    assert main(["validate", "--connect", str(pipeline)]) == 1
    assert "does not answer" in capsys.readouterr().err


# -- run --once ----------------------------------------------------------------------------------


@pytest.fixture
def run_steps(monkeypatch):
    """`tidemark run` without Spark's early start; the servers' check and the run are the test's."""
    from orchestration.cli import spark_prestart

    monkeypatch.setattr(spark_prestart.SparkPrestart, "start", lambda self: None)


@exits("run FILE… --once", 1)
def test_run_1_when_a_server_does_not_answer(pipeline, run_steps, capsys):
    assert main(["run", str(pipeline), "--once"]) == 1
    assert "does not answer" in capsys.readouterr().err
    assert not (pipeline.parent / "state").exists()


@exits("run FILE… --once", 0, 1, 3)
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


@exits("run FILE (no --once)", 0, 1, 3)
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


@exits("run FILE (no --once)", 1)
def test_run_without_once_1_when_a_server_does_not_answer(pipeline, run_steps, capsys):
    assert main(["run", str(pipeline)]) == 1
    assert "does not answer" in capsys.readouterr().err
    assert not (pipeline.parent / "state").exists()


@exits("run FILE (no --once)", 2)
def test_run_without_once_2_for_two_pipelines(pipeline, tmp_path, capsys):
    other = write_pipeline(tmp_path, name="other")
    assert main(["run", str(pipeline), str(other)]) == 2
    assert "one pipeline per command" in capsys.readouterr().err


# -- sql -----------------------------------------------------------------------------------------


@exits("sql FILE STATEMENT", 1)
def test_sql_1_when_doris_does_not_answer(pipeline, capsys):
    assert main(["sql", str(pipeline), "SELECT 1"]) == 1
    err = capsys.readouterr().err
    assert "does not answer" in err and len(err.strip().splitlines()) == 1


@exits("sql FILE STATEMENT", 2)
def test_sql_2_for_a_limit_beyond_the_query_api(pipeline, capsys):
    assert main(["sql", str(pipeline), "SELECT 1", "--limit", "20000"]) == 2
    assert "--limit must be between 1 and 10000" in capsys.readouterr().err


@exits("sql FILE STATEMENT", 0, 2)
def test_sql_0_with_an_answer_2_when_doris_refuses_the_statement(doris_standin, tmp_path, capsys):
    path = write_pipeline(tmp_path, name="codes")
    path.write_text(path.read_text().replace("127.0.0.1:8030", doris_standin.fe_http))
    assert main(["sql", str(path), "SELECT 1 AS one", "--json"]) == 0
    assert '"columns": ["one"]' in capsys.readouterr().out
    assert main(["sql", str(path), "SELECT * FROM no_such_db.no_such_table"]) == 2
    assert capsys.readouterr().err.startswith("tidemark sql: Doris refused the statement")


# -- verify and verify --repair ------------------------------------------------------------------

VERIFY = ("verify FILE", "verify FILE --repair")


def _planned(path: Path) -> list[str]:
    """Plan the pipeline's snapshot (its chunks recorded, nothing read): its captured tables."""
    service = PipelineService(load_pipeline(path))
    try:
        service.plan_splits()
        return service.captured_tables()
    finally:
        service.close()


@exits(VERIFY, 2)
@pytest.mark.parametrize("command", VERIFY)
def test_verify_2_without_a_snapshot(command, pipeline, capsys):
    assert main(argv(command, pipeline)) == 2
    assert "has no snapshot yet" in capsys.readouterr().err


@exits(VERIFY, 2)
@pytest.mark.parametrize("command", VERIFY)
def test_verify_2_when_a_server_does_not_answer(command, pipeline, monkeypatch, capsys):
    monkeypatch.setattr(PipelineService, "captured_tables", lambda self: ["shop.orders"])
    assert main(argv(command, pipeline)) == 2  # not 1: that says the tables differ
    err = capsys.readouterr().err
    assert err.startswith("tidemark verify: MySQL at 127.0.0.1:") and "does not answer" in err


@exits(VERIFY, 2)
def test_verify_2_for_a_table_the_pipeline_does_not_capture(servers_up, capsys):
    assert _planned(servers_up)
    for command in VERIFY:
        assert main(argv(command, servers_up, "--table", "other.t")) == 2, command
        err = capsys.readouterr().err
        assert err.startswith("tidemark verify: ") and "other.t" in err and len(err.splitlines()) == 1, err


def _verdict(equal: bool) -> TableVerdict:
    return TableVerdict("shop.orders", "shop.orders", equal, 3, 3 if equal else 2, 1, 0 if equal else 1,
                        () if equal else ((7,),))


@exits("verify FILE", 0, 1)
@pytest.mark.parametrize("equal, code", [(True, 0), (False, 1)])
def test_verify_0_when_equal_1_when_a_table_differs(equal, code, pipeline, monkeypatch, capsys):
    from cdc_core.pipeline import preflight

    monkeypatch.setattr(PipelineService, "captured_tables", lambda self: ["shop.orders"])
    monkeypatch.setattr(PipelineService, "verify", lambda self, tables, max_keys: [_verdict(equal)])
    monkeypatch.setattr(preflight, "check_connections", lambda definition: None)
    assert main(["verify", str(pipeline)]) == code
    assert ("equal" if equal else "DIFFERENT") in capsys.readouterr().out


@exits("verify FILE --repair", 0, 1)
@pytest.mark.parametrize("mended, code", [(True, 0), (False, 1)])
def test_verify_repair_0_when_mended_1_when_a_table_is_still_different(mended, code, pipeline, monkeypatch,
                                                                        capsys):
    from cdc_core.pipeline import preflight

    why = None if mended else "no primary key: the rows that differ cannot be told apart"
    repair = TableRepair("shop.orders", _verdict(mended), upserted=1 if mended else 0, rounds=1, not_repaired=why)
    monkeypatch.setattr(PipelineService, "captured_tables", lambda self: ["shop.orders"])
    monkeypatch.setattr(PipelineService, "repair", lambda self, tables: [repair])
    monkeypatch.setattr(preflight, "check_connections", lambda definition: None)
    assert main(["verify", str(pipeline), "--repair"]) == code
    captured = capsys.readouterr()
    assert ("equal" if mended else "DIFFERENT") in captured.out
    assert ("now equal" if mended else "shop.orders not repaired: no primary key") in captured.err


@exits("verify FILE --repair", 2)
def test_verify_repair_holds_its_tables_leases_and_declines_while_a_run_holds_them(pipeline, monkeypatch, capsys):
    """``verify --repair`` holds each table's snapshot scope while it mends (as ``resnapshot`` holds
    the pipeline's): another machine's ``tidemark run`` cannot start meanwhile, and while one runs the
    repair declines with one line, exit 2, having repaired nothing. The stream's lease does not stop
    it (a repair is safe beside the stream)."""
    from cdc_core.pipeline import preflight
    from cdc_core.state.leases import LeaseHeld, Scope, live_holders, release, try_acquire

    held_during: list[list[str]] = []
    other = {"owner": "host-b:4242:feed", "purpose": "tidemark run --once", "ttl_s": 30.0}

    def repair(self, tables):
        held_during.append(sorted(r.scope for r in live_holders(self.store)))
        with pytest.raises(LeaseHeld):  # the other machine's run, started now, declines
            try_acquire(self.store, [Scope.PIPELINE], **other)
        return [TableRepair(t, _verdict(True), upserted=1, rounds=1) for t in self._chosen_tables(tables)]

    monkeypatch.setattr(PipelineService, "captured_tables", lambda self: ["shop.items", "shop.orders"])
    monkeypatch.setattr(PipelineService, "repair", repair)
    monkeypatch.setattr(preflight, "check_connections", lambda definition: None)
    service = PipelineService(load_pipeline(pipeline))
    try:
        assert main(["verify", str(pipeline), "--repair"]) == 0
        assert held_during == [["snapshot:shop.items", "snapshot:shop.orders"]]
        assert live_holders(service.store) == []  # given back
        # beside the stream: a Dagster run holding the stream leaves the repair alone
        try_acquire(service.store, [Scope.STREAM], **{**other, "purpose": "Dagster run 1234abcd (binlog)"})
        assert main(["verify", str(pipeline), "--repair", "--table", "shop.orders"]) == 0
        assert held_during[-1] == ["snapshot:shop.orders", "stream"]
        release(service.store, [Scope.STREAM], owner=other["owner"])
        capsys.readouterr()
        # a run of the whole pipeline on another machine: the repair declines, one line, nothing done
        try_acquire(service.store, [Scope.PIPELINE], **other)
        assert main(["verify", str(pipeline), "--repair"]) == 2
        err = capsys.readouterr().err
        assert len(held_during) == 2
        assert err.startswith("tidemark verify --repair: another run of pipeline 'codes' holds all of it: "
                              "tidemark run --once on "), err
        assert len(err.strip().splitlines()) == 1, err
        assert [r.owner for r in live_holders(service.store)] == [other["owner"]]
    finally:
        service.close()


# -- resnapshot ----------------------------------------------------------------------------------

RESNAPSHOT = "resnapshot FILE [--table T]…"


@exits(RESNAPSHOT, 1)
def test_resnapshot_1_when_a_server_does_not_answer(pipeline, capsys):
    assert main(["resnapshot", str(pipeline)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("tidemark resnapshot codes: MySQL at 127.0.0.1:") and "does not answer" in err
    assert not (pipeline.parent / "state").exists()


@exits(RESNAPSHOT, 2)
def test_resnapshot_2_without_a_snapshot_for_a_table_not_captured_and_for_table_after_a_purged_binlog(
        servers_up, root_conn, capsys):
    assert main(["resnapshot", str(servers_up)]) == 2
    assert "has no snapshot yet: there is nothing to read again" in capsys.readouterr().err
    captured = _planned(servers_up)
    assert main(["resnapshot", str(servers_up), "--table", "other.t"]) == 2
    assert "table(s) other.t are not captured by pipeline" in capsys.readouterr().err
    # the stream's committed offset in a binlog file the server no longer has: every table missed changes
    with root_conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        current = BinlogOffset(cur.fetchone()[0], 4)
    service = PipelineService(load_pipeline(servers_up))
    try:
        COMMITTED_OFFSET.put(service.store, BinlogOffset(re.sub(r"\d+$", lambda m: "0" * len(m.group()),
                                                                current.file), 4))
    finally:
        service.close()
    assert main(["resnapshot", str(servers_up), "--table", captured[0]]) == 2
    assert "was purged, so every captured table missed changes: resnapshot them all" in capsys.readouterr().err


@exits(RESNAPSHOT, 0, 1, 3)
@pytest.mark.parametrize("outcome, code", [("done", 0), ("failed", 1), ("paused", 3)])
def test_resnapshot_codes_by_outcome(outcome, code, pipeline, monkeypatch, capsys):
    from cdc_core.pipeline import preflight
    from orchestration.cli import run_once

    def resnapshot(self: Any, tables: list[str] | None) -> run_once.Summary:
        if outcome == "failed":
            raise run_once.RunOnceError("codes__snapshot_chunks: a load failed")
        if outcome == "paused":
            raise run_once.RunOnceError("the binlog of 'codes' is paused by a schema change", code=3)
        return run_once.Summary(chunks_total=2, chunks_loaded=2, rows=4)

    monkeypatch.setattr(preflight, "check_connections", lambda definition: None)
    monkeypatch.setattr(run_once.OnceRun, "resnapshot", resnapshot)
    assert main(["resnapshot", str(pipeline)]) == code
    err = capsys.readouterr().err
    assert ("2 of 2 chunks loaded" in err) if code == 0 else ("tidemark resnapshot codes: " in err)


# -- status --------------------------------------------------------------------------------------


@exits("status FILE", 0)
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


@exits("status FILE", 1)
def test_status_1_when_a_server_does_not_answer_and_the_status_is_shown(pipeline, capsys):
    assert main(["status", str(pipeline), "--json"]) == 1
    captured = capsys.readouterr()
    assert '"unreachable": {"mysql": ' in captured.out and len(captured.err.splitlines()) == 2


# -- splits --------------------------------------------------------------------------------------


@exits("splits FILE", 0)
def test_splits_0_with_a_plan(pipeline, monkeypatch, capsys):
    from cdc_core.pipeline.results import NextPlan, PlanSource
    from cdc_core.pipeline.service import PipelineService

    monkeypatch.setattr(PipelineService, "next_plan", staticmethod(lambda definition: NextPlan(
        (), ("shop.orders",), PlanSource.COMPUTED)))
    assert main(["splits", str(pipeline)]) == 0
    assert "0 chunk(s)" in capsys.readouterr().out


@exits("splits FILE", 1)
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


@exits("dev FILE…", 0, 1)
@pytest.mark.parametrize("dies, code", [(False, 0), (True, 1)])
def test_dev_0_when_stopped_1_when_dagster_dies(dies, code, pipeline, monkeypatch, capsys):
    from orchestration.cli import dev

    monkeypatch.setattr(dev, "DagsterServices", type("Services", (_Services,), {"dies": dies}))
    assert main(["dev", str(pipeline)]) == code
    if dies:
        assert "tidemark dev: dagster daemon exited early" in capsys.readouterr().err


# -- devstack and demo ---------------------------------------------------------------------------


@exits("devstack up|down|status", 0, 1)
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


@exits("demo load|compare", 0, 1)
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


# -- the table and the tests agree -----------------------------------------------------------------


def _table() -> dict[str, set[int]]:
    """docs/cli.md's exit-code table: each row's first cell (backticks and escapes removed) and the
    codes whose cell says something (not "—")."""
    rows: dict[str, set[int]] = {}
    for line in DOC.read_text().splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        name = cells[0].replace("`", "").replace("\\|", "|")
        rows[name] = {code for code, cell in enumerate(cells[1:5]) if cell and cell != "—"}
    return rows


def test_the_table_has_a_row_for_every_subcommand_of_the_parser():
    table = _table()
    assert {row.split()[0] for row in table} == _subcommands()
    assert set(table) == set(COMMANDS) | set(ROWS_WITHOUT_A_FILE)


def test_every_code_the_table_gives_is_shown_by_a_test_here():
    given = {(row, code) for row, codes in _table().items() for code in codes}
    assert given - set(SHOWN) == set(), "codes in docs/cli.md that no test here shows"
    assert set(SHOWN) - given == set(), "codes shown here that docs/cli.md does not give"
