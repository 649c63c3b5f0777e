"""``tidemark run --once`` ends as soon as its work is committed and said (issue 30: a second of
Python's own end was a sixth of a 1M-row run), and ends cleanly: its exit code, its whole output,
no process of its left running, no resource it leaked (``orchestration/cli/tidemark.py:cli``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil

from devstack.pipeline_file import write_pipeline
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
ROWS = 60_000  # past the driver's 50,000 rows: the run spawns its local worker processes


def _session_processes(sid: int) -> list[psutil.Process]:
    out = []
    for process in psutil.process_iter():
        try:
            if os.getsid(process.pid) == sid:
                out.append(process)
        except (ProcessLookupError, PermissionError, psutil.Error):
            continue
    return out


def test_a_run_ends_with_its_workers_gone_and_nothing_leaked(mysql_server, root_conn, fresh_db, doris_standin,  # noqa: F811
                                                             tmp_path):
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.t (id BIGINT PRIMARY KEY, v VARCHAR(20))")
        cur.execute(f"INSERT INTO `{fresh_db}`.t SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_{ROWS}")
    path = write_pipeline(tmp_path / "p.yaml", host=mysql_server.endpoint.host, port=mysql_server.endpoint.port,
                          fe=doris_standin.fe_http, tables=f"{fresh_db}.t", name=f"exit_{fresh_db}",
                          state_dir=tmp_path / "state", server_id="5505-5509",
                          source={"scan.incremental.snapshot.chunk.size": 20_000})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    proc = subprocess.Popen([sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    stdout, stderr = proc.communicate(timeout=600)  # until every holder of its pipes (workers too) is gone
    assert proc.returncode == 0, stderr[-3000:]
    # the summary is printed whole; how many chunks depends on InnoDB's row estimate (a dynamic
    # chunk size, as Flink's), so any count, all of them loaded
    assert re.search(r"\b(\d+) of \1 chunks loaded, 60,000 rows", stderr), stderr[-3000:]
    assert "tidemark run" in stdout
    assert "leaked" not in stderr and "Traceback" not in stderr, stderr[-3000:]
    left = _session_processes(proc.pid)
    deadline = time.monotonic() + 10
    while left and time.monotonic() < deadline:  # a process being reaped may still be listed for a moment
        time.sleep(0.2)
        left = [p for p in _session_processes(proc.pid) if p.status() != psutil.STATUS_ZOMBIE]
    assert left == [], [p.cmdline() for p in left]
