"""docs/deploy.md's set-up, run as a user would: a ``DAGSTER_HOME`` of the user's with the page's
PostgreSQL ``dagster.yaml`` and ``tidemark.state.url: postgresql://…``; ``tidemark run --once`` takes a
snapshot and then a binlog batch, ``tidemark verify`` finds Doris equal to MySQL, the runs are in
PostgreSQL, and nothing was written into the user's home or the state directory."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg2
from dagster import DagsterInstance, DagsterRunStatus

from devstack.pipeline_file import write_pipeline
from tests.orchestration.test_e2e_dagster import _create_tables, doris_standin  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def deploy_dagster_yaml() -> str:
    """The ``dagster.yaml`` docs/deploy.md gives for PostgreSQL: the test runs the page's own text."""
    text = (ROOT / "docs" / "deploy.md").read_text()
    blocks = [b for b in re.findall(r"```yaml\n(.*?)```", text, re.S) if "storage:" in b and "postgres_url" in b]
    assert len(blocks) == 1, "docs/deploy.md has one dagster.yaml for PostgreSQL"
    return blocks[0]


def test_a_users_dagster_home_and_the_state_on_postgresql(mysql_server, root_conn, fresh_db, doris_standin,  # noqa: F811
                                                         postgres_databases, tmp_path, monkeypatch):
    dagster_url, state_url = postgres_databases(), postgres_databases()
    home = tmp_path / "my_dagster_home"
    home.mkdir()
    config = deploy_dagster_yaml()
    (home / "dagster.yaml").write_text(config)
    _create_tables(root_conn, fresh_db)
    state_dir = tmp_path / "state"
    path = write_pipeline(tmp_path / "pg.yaml", host=mysql_server.endpoint.host, port=mysql_server.endpoint.port,
                          fe=doris_standin.fe_http, tables=f"{fresh_db}.\\.*", name=f"pg_{fresh_db}",
                          state_dir=state_dir, server_id="5530-5534",
                          source={"scan.incremental.snapshot.chunk.size": 400,
                                  "scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.logs:log_id"},
                          pipeline={"tidemark.state.url": state_url})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DAGSTER_HOME": str(home), "DAGSTER_PG_URL": dagster_url}
    env.pop("TIDEMARK_DAGSTER_HOME", None)
    cmd = [sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (f"Dagster instance: {home} (from DAGSTER_HOME; the user's dagster.yaml, used as it is)"
            in first.stdout.replace("\n", "")), first.stdout[-3000:]
    assert "chunks loaded" in first.stderr
    with root_conn.cursor() as cur:  # changes after the snapshot: the second run applies them from the binlog
        cur.execute(f"UPDATE `{fresh_db}`.items SET qty = qty + 5 WHERE id <= 300")
        cur.execute(f"DELETE FROM `{fresh_db}`.items WHERE id > 1900")
        cur.execute(f"INSERT INTO `{fresh_db}`.logs VALUES (9001, 'after', '2026-11-22 00:00:00')")
    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "batch" in second.stderr
    verified = subprocess.run([sys.executable, "-m", "orchestration.cli", "verify", str(path), "--json"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=300)
    assert verified.returncode == 0, verified.stdout[-3000:] + verified.stderr[-3000:]
    assert json.loads(verified.stdout)["equal"]

    # The user's home is as the user left it: the same dagster.yaml, no marker, no SQLite storage.
    assert (home / "dagster.yaml").read_text() == config
    assert not (home / ".tidemark-owned").exists() and not (home / "history").exists()
    assert not (state_dir / "state.sqlite").exists()
    # The runs are in Dagster's run storage on PostgreSQL ...
    monkeypatch.setenv("DAGSTER_PG_URL", dagster_url)
    with DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        runs = instance.get_runs()
        assert runs and all(r.status is DagsterRunStatus.SUCCESS for r in runs), [(r.job_name, r.status) for r in runs]
    with psycopg2.connect(dagster_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM runs WHERE status = 'SUCCESS'")
        assert cur.fetchone()[0] == len(runs)
    # ... and the pipeline's state in its own database: the snapshot's chunks, the batch, the offset.
    with psycopg2.connect(state_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM chunks WHERE status = 'COMMITTED'")
        assert cur.fetchone()[0] > 0
        cur.execute("SELECT count(*) FROM batches WHERE status = 'COMMITTED'")
        assert cur.fetchone()[0] >= 1
