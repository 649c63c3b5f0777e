"""Issue 29, item 1: a ``tables`` pattern that matches no table is not a silent no-op.

No pattern matching any table is an error at ``tidemark validate --connect`` and at planning (the
run fails with one line naming the pattern and the tables it could have meant, and the Dagster
run's failure says it as its description and metadata, not a stack trace). One pattern of several
that matches nothing yet is a warning: a table created later that matches is captured, as before.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from cdc_core.config import load_pipeline
from cdc_core.mysql.discovery import NoTableMatchedError
from cdc_core.pipeline.service import PipelineService
from devstack.pipeline_file import write_pipeline
from orchestration.cli.tidemark import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def shop(root_conn, fresh_db) -> str:
    with root_conn.cursor() as cur:
        for table in ("customers", "orders"):
            cur.execute(f"CREATE TABLE `{fresh_db}`.{table} (id INT PRIMARY KEY, v INT)")
            cur.execute(f"INSERT INTO `{fresh_db}`.{table} VALUES (1, 1)")
    return fresh_db


def pipeline(tmp_path: Path, mysql_server, doris_standin, tables: str, name: str = "patterns") -> Path:
    ep = mysql_server.endpoint
    return write_pipeline(tmp_path / f"{name}.yaml", host=ep.host, port=ep.port, fe=doris_standin.fe_http,
                          tables=tables, name=name, state_dir=tmp_path / "state" / name, server_id="5660-5670")


def test_validate_connect_names_the_pattern_and_the_tables_it_could_mean(mysql_server, doris_standin, shop,
                                                                         tmp_path, capsys):
    path = pipeline(tmp_path, mysql_server, doris_standin, f"{shop}.custmers")
    assert main(["validate", "--connect", str(path)]) == 1
    captured = capsys.readouterr()
    assert f"{path}: source.tables: '{shop}.custmers' matches no table (did you mean {shop}.customers?): " \
           "nothing to capture; fix source.tables in the pipeline file" in captured.err.splitlines()[-1], captured.err
    assert "ok" not in captured.out


def test_one_pattern_of_several_matching_nothing_is_a_warning(mysql_server, doris_standin, shop, tmp_path, capsys):
    path = pipeline(tmp_path, mysql_server, doris_standin, f"{shop}.orders,{shop}.invoices")
    assert main(["validate", "--connect", str(path)]) == 0
    captured = capsys.readouterr()
    assert f"{path}: source.tables: warning: '{shop}.invoices' matches no table (no table has a similar name); " \
           "a table created later that matches is captured" in captured.err, captured.err
    assert f"{path}: ok" in captured.out
    service = PipelineService(load_pipeline(path))
    try:
        plan = service.plan_splits()
    finally:
        service.close()
    assert plan.tables == (f"{shop}.orders",)
    assert any(f"'{shop}.invoices' matches no table" in note for note in plan.notes), plan.notes


def test_splits_refuses_a_pattern_that_matches_nothing(mysql_server, doris_standin, shop, tmp_path, capsys):
    path = pipeline(tmp_path, mysql_server, doris_standin, f"{shop}.custmers")
    assert main(["splits", str(path)]) == 1
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"tidemark splits: source.tables: '{shop}.custmers' matches no table (did you mean "
                           f"{shop}.customers?)"), line


def test_planning_refuses_a_pattern_list_that_matches_nothing(mysql_server, doris_standin, shop, tmp_path):
    path = pipeline(tmp_path, mysql_server, doris_standin, f"{shop}.custmers,{shop}x.orders")
    service = PipelineService(load_pipeline(path))
    try:
        with pytest.raises(NoTableMatchedError) as caught:
            service.plan_splits()
        assert service.chunk_keys() == []  # nothing recorded
    finally:
        service.close()
    text = str(caught.value)
    assert f"'{shop}.custmers' matches no table (did you mean {shop}.customers?)" in text
    assert f"'{shop}x.orders' matches no table (did you mean {shop}.orders?)" in text and "\n" not in text


def test_the_run_fails_in_one_line_and_its_dagster_failure_says_cause_and_fix(mysql_server, doris_standin, shop,
                                                                             tmp_path):
    path = pipeline(tmp_path, mysql_server, doris_standin, f"{shop}.custmers")
    home = tmp_path / "dagster"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(home),
           "TIDEMARK_LOG_FILE": str(tmp_path / "tidemark.log")}
    result = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"],
                            capture_output=True, text=True, env=env, timeout=600, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tidemark run patterns: patterns__snapshot_splits: source.tables: "
                               f"'{shop}.custmers' matches no table (did you mean {shop}.customers?)"), lines[0]
    assert "Traceback" not in result.stderr and "dagster" not in result.stderr.replace("patterns__", "")

    with dg.DagsterInstance.from_config(str(home)) as instance:
        [run] = instance.get_runs(filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.FAILURE]))
        [entry] = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE)
        data = entry.dagster_event.event_specific_data
        failure = data.user_failure_data
        assert failure.description.startswith(f"source.tables: '{shop}.custmers' matches no table")
        assert failure.metadata["cause"].value.endswith("nothing to capture")
        assert failure.metadata["fix"].value.startswith("fix source.tables in the pipeline file")
        assert data.error.cause is None  # no chain of wrapped exceptions: the one line is the story
        debug = [e.user_message for e in instance.all_logs(run.run_id) if "stack trace" in (e.user_message or "")]
        assert debug and "NoTableMatchedError" in debug[0]  # the stack trace stays in the run's debug log
    from orchestration.cli.status import last_failed_run
    from orchestration.defs.pipelines import PipelineHandle

    failed = last_failed_run(PipelineHandle.load(path), home)
    assert failed is not None and failed.message.startswith("patterns__snapshot_splits: source.tables: ")
