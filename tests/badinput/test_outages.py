"""Issue 29, items 2 and 3: an outage reads as one line on the terminal.

Doris is "down" here as a port where nothing listens (and MySQL likewise): every command run as a
user runs it — in a subprocess, so the terminal is what a user sees, without pytest's own logging
handlers — prints one line naming the server and the fix, no library log line (urllib3's "Max
retries exceeded … NewConnectionError") and no traceback, and exits with the code
``docs/cli.md`` gives; the details are in the log file (``TIDEMARK_LOG_FILE``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_core.config import load_pipeline
from cdc_core.pipeline.service import PipelineService
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port

ROOT = Path(__file__).resolve().parents[2]
RAW = ("Max retries", "NewConnectionError", "urllib3", "Traceback", "HTTPConnectionPool", "password: cdc")


def tidemark(*argv: str, log_file: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_LOG_FILE": str(log_file), "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-m", "orchestration.cli", *argv], capture_output=True, text=True,
                          env=env, timeout=timeout, cwd=log_file.parent)


def assert_one_clean_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for text in RAW:
        assert text not in result.stderr + result.stdout, (text, result.stderr)
    return lines[0]


@pytest.fixture
def planned(mysql_server, root_conn, fresh_db, tmp_path) -> Path:
    """A pipeline whose snapshot is planned (chunks recorded), its Doris on a port nothing listens at."""
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO `{fresh_db}`.t VALUES (1, 1), (2, 2)")
    ep = mysql_server.endpoint
    path = write_pipeline(tmp_path / "outage.yaml", host=ep.host, port=ep.port, fe=f"127.0.0.1:{free_port()}",
                          tables=f"{fresh_db}.\\.*", name=f"outage_{fresh_db}", state_dir=tmp_path / "state",
                          server_id="5640-5650")
    service = PipelineService(load_pipeline(path))
    try:
        assert service.plan_splits().chunk_keys
    finally:
        service.close()
    return path


def test_verify_with_doris_down_names_the_fix_and_exits_2(planned, tmp_path):
    log_file = tmp_path / "tidemark.log"
    fe = load_pipeline(planned).sink.fenodes
    result = tidemark("verify", str(planned), log_file=log_file)
    assert result.returncode == 2, result.stderr  # not 1: 1 says the tables differ
    line = assert_one_clean_line(result)
    assert line.startswith(f"tidemark verify: the Doris FE at {fe} does not answer: check sink.fenodes in {planned}")
    assert "and that the FE is up (connection refused)" in line


def test_status_with_doris_down_shows_the_state_and_names_doris(planned, tmp_path):
    result = tidemark("status", str(planned), "--json", log_file=tmp_path / "tidemark.log")
    assert result.returncode == 1, result.stderr
    line = assert_one_clean_line(result)
    doc = json.loads(result.stdout)
    assert doc["phase"] == "snapshot" and doc["snapshot"]["chunks"]["chunks"] >= 1
    assert doc["doris_fe"] is None and list(doc["unreachable"]) == ["doris"]
    assert line == f"tidemark status: {planned}: {doc['unreachable']['doris']}"
    assert "does not answer (connection refused): check fenodes, username and password in the pipeline's sink " \
           "block" in line


def test_validate_connect_and_run_with_doris_down_say_one_line(planned, tmp_path):
    log_file = tmp_path / "tidemark.log"
    fe = load_pipeline(planned).sink.fenodes
    result = tidemark("validate", "--connect", str(planned), log_file=log_file)
    assert result.returncode == 1
    line = assert_one_clean_line(result)
    assert line.startswith(f"{planned}: sink: the Doris FE at {fe} does not answer: check sink.fenodes")
    result = tidemark("run", str(planned), "--once", log_file=log_file, timeout=300)
    assert result.returncode == 1
    line = assert_one_clean_line(result)
    assert f"the Doris FE at {fe} does not answer: check sink.fenodes in {planned}" in line


def test_status_with_mysql_down_shows_the_state_and_names_mysql(planned, tmp_path):
    """MySQL on a port nothing listens at (and Doris too): the state store's part (the planned
    chunks) is shown all the same, and each server that does not answer gets its line."""
    text = planned.read_text()
    port = load_pipeline(planned).source.port
    down = tmp_path / "mysql_down.yaml"
    down.write_text(text.replace(f"port: {port}\n", f"port: {free_port()}\n", 1))
    result = tidemark("status", str(down), log_file=tmp_path / "tidemark.log")
    assert result.returncode == 1, result.stderr
    mysql, doris = result.stderr.splitlines()
    for text in RAW:
        assert text not in result.stderr + result.stdout, (text, result.stderr)
    assert mysql.startswith(f"tidemark status: {down}: the MySQL source 127.0.0.1:")
    assert "does not answer (connection refused): check hostname, port" in mysql
    assert doris.startswith(f"tidemark status: {down}: the Doris sink (fenodes 127.0.0.1:")
    assert "committed" in result.stdout and "does not answer" in result.stdout  # the table, with the reason
