"""``tidemark run PIPELINE.yaml`` (no ``--once``) as a user runs it: a subprocess that snapshots, then
follows the binlog batch after batch until SIGINT; the stop commits what is in flight and exits 0."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql

from cdc_core.config import load_pipeline
from devstack.pipeline_file import write_pipeline
from jobs.spark_executor import spark_service
from tests.orchestration.test_e2e_dagster import (  # noqa: F401
    _create_tables,
    _doris_count,
    doris_standin,
)

ROOT = Path(__file__).resolve().parents[2]


def _mysql_count(conn, db: str, table: str) -> int:
    with conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM `{db}`.{table}")
        return int(cur.fetchone()[0])


def _wait_for(predicate, timeout_s: float, what: str, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        assert proc.poll() is None, f"tidemark run exited {proc.returncode} while waiting for {what}:\n" + \
            log.read_text()[-3000:]
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}:\n" + log.read_text()[-3000:])


def _writer(mysql_server, db: str, first_id: int, halt: threading.Event) -> threading.Thread:
    """Inserts a row into ``logs`` every 20 ms until ``halt``: the SIGINT lands mid-stream."""

    def write() -> None:
        conn = pymysql.connect(unix_socket=mysql_server.endpoint.root_socket, user="root", autocommit=True)
        try:
            next_id = first_id
            while not halt.is_set():
                with conn.cursor() as cur:
                    cur.execute(f"INSERT INTO `{db}`.logs VALUES (%s, 'steady', '2026-11-26 09:00:00')", (next_id,))
                next_id += 1
                time.sleep(0.02)
        finally:
            conn.close()

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_tidemark_run_keeps_going_until_sigint(mysql_server, root_conn, fresh_db, doris_standin, tmp_path):  # noqa: F811
    _create_tables(root_conn, fresh_db)
    path = write_pipeline(tmp_path / "loop.yaml", host=mysql_server.endpoint.host, port=mysql_server.endpoint.port,
                          fe=doris_standin.fe_http, tables=f"{fresh_db}.\\.*", name=f"loop_{fresh_db}",
                          state_dir=tmp_path / "state", server_id="5600-5604",
                          source={"scan.incremental.snapshot.chunk.size": 1000,
                                  "scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.logs:log_id"},
                          pipeline={"tidemark.binlog.idle-wait-s": 2, "tidemark.binlog.batch-interval-s": 0.5})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    log = tmp_path / "run.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "orchestration.cli", "run", str(path)], cwd=ROOT, env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        # the snapshot arrives, then changes made afterwards arrive without another command
        _wait_for(lambda: ("streaming" in log.read_text() or "caught up" in log.read_text())
                  and _doris_count(doris_standin.fe_http, fresh_db, "items") == 2000, 300, "the snapshot", proc, log)
        with root_conn.cursor() as cur:
            cur.execute(f"UPDATE `{fresh_db}`.items SET qty = qty + 5 WHERE id <= 300")
            cur.execute(f"DELETE FROM `{fresh_db}`.items WHERE id > 1900")
            cur.execute(f"INSERT INTO `{fresh_db}`.logs VALUES (9001, 'after', '2026-11-22 00:00:00')")
        _wait_for(lambda: _doris_count(doris_standin.fe_http, fresh_db, "items") == 1900
                  and _doris_count(doris_standin.fe_http, fresh_db, "logs") == 1201, 120, "the binlog changes",
                  proc, log)
        # SIGINT while rows keep arriving: the batch in flight is committed, then a clean exit
        halt = threading.Event()
        writer = _writer(mysql_server, fresh_db, 10_000, halt)
        time.sleep(3)
        proc.send_signal(signal.SIGINT)
        returncode = proc.wait(timeout=180)
        halt.set()
        writer.join(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    output = log.read_text()
    assert returncode == 0, output[-3000:]
    assert "SIGINT: stopping after the work in flight is committed" in output
    assert "rows applied from the binlog" in output  # the live line (plain lines: not a terminal)
    assert "Traceback" not in output
    runner = spark_service(load_pipeline(path))
    try:
        assert runner.pending_transactions() == []  # nothing left PREPARED by the stop
        applied = _doris_count(doris_standin.fe_http, fresh_db, "logs")
        assert 1201 < applied <= _mysql_count(root_conn, fresh_db, "logs")  # the stream went on until the stop
    finally:
        runner.close()
    # what was written after the stop arrives with the next run; Doris equals MySQL
    done = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    runner = spark_service(load_pipeline(path))
    try:
        assert runner.pending_transactions() == []
        for table in ("items", "logs"):
            assert runner.table_parity(f"{fresh_db}.{table}").ok
            assert _doris_count(doris_standin.fe_http, fresh_db, table) == _mysql_count(root_conn, fresh_db, table)
    finally:
        runner.close()
