"""``tidemark dev``'s terminal while Doris is down (issue 29, item 2: each failed sensor run printed
two stack traces, ~590 lines for a one-minute outage).

The demo's way, for real: a pipeline snapshotted by ``tidemark run --once``, then ``tidemark dev``
(its binlog sensor running), then the Doris stand-in stopped and a row changed. The sensor launches
binlog runs, which fail; the terminal shows each failure as the line that names the FE and the fix,
no stack trace (``orchestration/defs/failures.py``, ``orchestration/cli/dev_logs.py``). Slow: a
snapshot, the UI's start and a few failed runs are about three minutes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from devstack.procs import free_port
from devstack.stack import DorisStandIn
from tests.orchestration.test_e2e_dagster import _answers, _create_tables, write_e2e_pipeline

ROOT = Path(__file__).resolve().parents[2]
STACK_TRACE = ("Traceback", "Stack Trace", 'File "', "NewConnectionError", "Max retries")


@pytest.mark.slow
def test_tidemark_dev_terminal_says_a_doris_outage_in_a_few_lines(mysql_server, root_conn, fresh_db, tmp_path):
    doris = DorisStandIn(tmp_path / "doris", fe_port=free_port(), be_port=free_port())
    doris.start()
    _create_tables(root_conn, fresh_db)
    path = write_e2e_pipeline(tmp_path / "outage.yaml", mysql_server, doris, fresh_db, f"out_{fresh_db}",
                              tmp_path / "state")
    home = tmp_path / "dagster"
    env = {**os.environ, "TIDEMARK_DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)}
    tidemark = str(Path(sys.executable).parent / "tidemark")
    first = subprocess.run([tidemark, "run", str(path), "--once", "--no-checks"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    port = free_port()
    terminal = tmp_path / "terminal.txt"
    with terminal.open("wb") as out:
        dev = subprocess.Popen([tidemark, "dev", str(path), "--port", str(port)], stdout=out,
                               stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not _answers(f"http://127.0.0.1:{port}/server_info"):
            assert time.monotonic() < deadline and dev.poll() is None, terminal.read_text()[-3000:]
            time.sleep(1)
        before = len(terminal.read_text().splitlines())
        doris.stop()
        with root_conn.cursor() as cur:
            cur.execute(f"UPDATE `{fresh_db}`.items SET qty = qty + 1 WHERE id <= 5")
        deadline = time.monotonic() + 240
        failed: list = []
        while len(failed) < 2:  # the sensor launches the range, and launches it again after the failure
            assert time.monotonic() < deadline and dev.poll() is None, terminal.read_text()[-3000:]
            time.sleep(5)
            with DagsterInstance.from_config(str(home)) as inst:
                failed = inst.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.FAILURE]))
        time.sleep(5)  # the last failure's lines have reached the terminal
        shown = terminal.read_text().splitlines()[before:]
        text = "\n".join(shown)
        for trace in STACK_TRACE:
            assert trace not in text, f"{trace!r} on the terminal:\n{text[-4000:]}"
        assert f"the Doris FE at {doris.fe_http} does not answer" in text, text[-4000:]
        print(f"{len(failed)} failed run(s): {len(shown)} terminal line(s)\n{text}", file=sys.stderr)
        assert len(shown) <= 12 * len(failed), f"{len(shown)} lines for {len(failed)} failed runs:\n{text}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(dev.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            dev.wait(60)
        if dev.poll() is None:
            dev.kill()
            dev.wait()
        doris.stop()
