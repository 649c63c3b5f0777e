"""``tidemark run PIPELINE.yaml --once`` as a user runs it: a subprocess, the real runner, the
session's MariaDB and a private Doris stand-in; then Doris is compared with MySQL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from cdc_core.config import load_pipeline
from devstack.pipeline_file import write_pipeline
from jobs.spark_executor import spark_service
from tests.orchestration.test_e2e_dagster import (  # noqa: F401
    _create_tables,
    _doris_count,
    doris_standin,
    write_e2e_pipeline,
)

ROOT = Path(__file__).resolve().parents[2]


def assert_healed(path, database: str, tables: tuple[str, ...]) -> None:
    """Nothing left prepared in Doris, and each table equal in MySQL and Doris (parity)."""
    service = spark_service(load_pipeline(path))
    try:
        assert service.pending_transactions() == []
        for table in tables:
            assert service.table_parity(f"{database}.{table}").ok
    finally:
        service.close()


@pytest.mark.slow
def test_tidemark_run_once_snapshot_then_binlog(mysql_server, root_conn, fresh_db, doris_standin, tmp_path):  # noqa: F811
    _create_tables(root_conn, fresh_db)
    path = tmp_path / "once.yaml"
    write_e2e_pipeline(path, mysql_server, doris_standin, fresh_db, f"once_{fresh_db}",
                       tmp_path / "state")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    cmd = [sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "chunks loaded" in first.stderr
    # changes after the snapshot: the second --once applies them through the binlog
    with root_conn.cursor() as cur:
        cur.execute(f"UPDATE `{fresh_db}`.items SET qty = qty + 5 WHERE id <= 300")
        cur.execute(f"DELETE FROM `{fresh_db}`.items WHERE id > 1900")
        cur.execute(f"INSERT INTO `{fresh_db}`.logs VALUES (9001, 'after', '2026-11-22 00:00:00')")
    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "done before this run" in second.stderr and "0 of" not in second.stderr and "batch" in second.stderr
    runner = spark_service(load_pipeline(path))
    try:
        assert runner.pending_transactions() == []
        for table in ("items", "logs"):
            assert runner.table_parity(f"{fresh_db}.{table}").ok
            with root_conn.cursor() as cur:
                cur.execute(f"SELECT COUNT(*) FROM `{fresh_db}`.{table}")
                assert _doris_count(doris_standin.fe_http, fresh_db, table) == cur.fetchone()[0]
    finally:
        runner.close()


def test_tidemark_run_explains_bad_input(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: {type: mysql}\nsink: {type: doris}\n")
    done = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(bad), "--once"], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr and "missing required option" in done.stderr
    done = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(bad)], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "missing required option" in done.stderr  # the continuous form checks it too


@pytest.mark.parametrize(("point", "doris_aborts"), [
    ("snapshot.after_state_write", False), ("binlog.after_state_write", True),
    # each point and each Doris answer is in the default suite above; the other two pairs: slow
    pytest.param("binlog.after_state_write", False, marks=pytest.mark.slow),
    pytest.param("snapshot.after_state_write", True, marks=pytest.mark.slow),
])
def test_a_killed_tidemark_run_heals_with_a_plain_rerun(point, doris_aborts, mysql_server, root_conn, fresh_db, doris_standin,  # noqa: F811
                                                       tmp_path):
    """kill -9 of ``tidemark run --once`` (here at a step boundary, through the fault point's ``kill``)
    leaves its Dagster run STARTED; the next plain ``tidemark run --once`` marks it failed (its
    process is gone), finishes or redoes the prepared work, and Doris equals MySQL. With
    ``doris_aborts``, Doris also aborts the loads left precommitted before anyone commits them (its
    transaction timeout, an FE restart): the re-run reads them again."""
    _create_tables(root_conn, fresh_db)
    path = tmp_path / "killed.yaml"
    write_e2e_pipeline(path, mysql_server, doris_standin, fresh_db, f"killed_{fresh_db}",
                       tmp_path / "state")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    env.pop("TIDEMARK_FAULTS", None)
    cmd = [sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"]
    if point.startswith("binlog"):
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        with root_conn.cursor() as cur:
            cur.execute(f"UPDATE `{fresh_db}`.items SET qty = qty + 1 WHERE id <= 500")
            cur.execute(f"DELETE FROM `{fresh_db}`.items WHERE id > 1950")
    faults = json.dumps({point: {"action": "kill"}})
    killed = subprocess.run(cmd, cwd=ROOT, env={**env, "TIDEMARK_FAULTS": faults}, capture_output=True, text=True,
                            timeout=600)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    with DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        assert instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED])), "the killed run stays STARTED"
    if doris_aborts:
        service = spark_service(load_pipeline(path))
        try:
            pending = service.pending_transactions()
            assert pending
            for t in pending:
                service.sink.committer.abort_txn(t["db"], t["txn_id"], label=t["label"])
        finally:
            service.close()
    healed = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert healed.returncode == 0, healed.stderr[-3000:]
    with DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        assert not instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED]))
        failed = instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.FAILURE]))
        assert len(failed) == 1
        messages = [e.message for e in instance.all_logs(failed[0].run_id) if e.message]
        assert any("is gone" in m for m in messages)
    if doris_aborts:
        assert "Doris lost the loads" in healed.stderr
    assert_healed(path, fresh_db, ("items", "logs"))


def test_a_failed_commit_hook_fails_the_run_visibly_and_heals(mysql_server, root_conn, fresh_db, doris_standin,  # noqa: F811
                                                              tmp_path):
    """The chunk commit hook raises once (Doris unreachable for a moment): the blocking
    ``no_pending_transactions`` check fails that Dagster run, so the UI shows it red; ``tidemark run``
    commits the prepared loads right after and finishes; ``tidemark verify`` finds Doris equal."""
    _create_tables(root_conn, fresh_db)
    path = tmp_path / "hook.yaml"
    write_e2e_pipeline(path, mysql_server, doris_standin, fresh_db, f"hook_{fresh_db}",
                       tmp_path / "state")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    faults = json.dumps({"snapshot.committing": {"action": "raise_once", "marker": str(tmp_path / "raised")}})
    done = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"], cwd=ROOT,
                          env={**env, "TIDEMARK_FAULTS": faults}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "raised").exists() and "a commit hook failed" in done.stderr
    with DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        failed = instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.FAILURE]))
        assert len(failed) == 1, "the run whose commit hook failed is marked failed"
        failures = [e.dagster_event.step_key for e in instance.all_logs(failed[0].run_id)
                    if e.dagster_event and e.dagster_event.is_step_failure]
        assert failures and all("no_pending_transactions" in k for k in failures)
    env.pop("TIDEMARK_FAULTS", None)
    verified = subprocess.run([sys.executable, "-m", "orchestration.cli", "verify", str(path), "--json"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300)
    assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr[-3000:]
    assert json.loads(verified.stdout)["equal"]


def test_ddls_one_after_another_go_to_the_schema_change_job_without_an_empty_binlog_run(
        mysql_server, root_conn, fresh_db, doris_standin, tmp_path):  # noqa: F811
    """Three DDLs with row changes between and after them, then ``tidemark run --once``: the first
    binlog run stops before the first DDL; each schema change's resume batch stops before the next
    one, which the state records (``PENDING_DDL``), so the next DDL goes to the schema_change job
    straight away instead of through a binlog run that would read nothing and stop there again (issue
    30: half of the whole corpus's binlog phase). Every change before, between and after the DDLs
    arrives: Doris equals MySQL."""
    from orchestration.defs.pipelines import PipelineHandle
    from orchestration.defs.schema_change_job import schema_change_job_name

    _create_tables(root_conn, fresh_db)
    path = write_pipeline(tmp_path / "ddls.yaml", host=mysql_server.endpoint.host, port=mysql_server.endpoint.port,
                          fe=doris_standin.fe_http, tables=f"{fresh_db}.\\.*", name=f"ddls_{fresh_db}",
                          state_dir=tmp_path / "state", server_id="5505-5509",
                          source={"scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.logs:log_id"},
                          pipeline={"schema.change.behavior": "evolve"})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    cmd = [sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    handle = PipelineHandle.load(path)
    with DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        before = {r.run_id for r in instance.get_runs()}
    with root_conn.cursor() as cur:
        cur.execute(f"USE `{fresh_db}`")
        cur.execute("UPDATE items SET qty = qty + 1 WHERE id <= 100")
        cur.execute("ALTER TABLE items ADD COLUMN a INT NULL")
        cur.execute("INSERT INTO items VALUES (3001, 'after a', 1, 1.00, '2026-01-03 00:00:00', 7)")
        cur.execute("UPDATE items SET a = id WHERE id BETWEEN 200 AND 260")
        cur.execute("ALTER TABLE items ADD COLUMN b VARCHAR(10) NULL")
        cur.execute("DELETE FROM items WHERE id BETWEEN 1000 AND 1010")
        cur.execute("ALTER TABLE logs ADD COLUMN c INT NOT NULL DEFAULT 3")
        cur.execute("INSERT INTO logs VALUES (9001, 'after c', '2026-01-04 00:00:00', 4)")
        cur.execute("UPDATE items SET b = 'x' WHERE id <= 50")
    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "3 schema change(s)" in second.stderr, second.stderr[-3000:]
    with DagsterInstance.from_config(str(tmp_path / "dagster")) as instance:
        runs = [r for r in instance.get_runs() if r.run_id not in before]
    jobs = [r.job_name for r in runs]
    assert jobs.count(schema_change_job_name(handle)) == 3, jobs
    # one binlog run (to the first DDL); the resume batches stopped before the second and third
    assert jobs.count(handle.binlog_job_name) == 1, jobs
    assert_healed(path, fresh_db, ("items", "logs"))
