"""``tidemark dev``'s terminal stays quiet (issue 29, item 5): no "No heartbeat received in 20 seconds,
shutting down" every minute.

Its cause: the daemon reloads its workspace every 60 s by starting a fresh code server and abandoning
the old one, which warns as it shuts itself down 20 s later. ``tidemark dev`` now starts one code
server that the daemon and the webserver share (``orchestration/cli/dev.py``), so nothing is abandoned.
The quick test proves the structure (one code server; neither the daemon nor the webserver starts its
own); the slow one watches the terminal for two minutes, past two of the daemon's reloads.
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
import yaml

from devstack.procs import free_port
from orchestration.cli.dev import DagsterServices
from orchestration.cli.instance import prepare_home
from tests.orchestration.test_e2e_dagster import (  # noqa: F401
    _answers,
    _create_tables,
    _members,
    doris_standin,
    write_e2e_pipeline,
)

ROOT = Path(__file__).resolve().parents[2]


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _code_servers(pids: list[int]) -> list[str]:
    """The command lines of Dagster code servers (a proxy `code-server start` or an `api grpc` server)."""
    lines = [_cmdline(p) for p in pids]
    return [c for c in lines if "code-server" in c or "api grpc" in c or "dagster.grpc" in c]


def test_the_daemon_and_the_webserver_share_one_code_server(mysql_server, root_conn, fresh_db, doris_standin,  # noqa: F811
                                                           tmp_path):
    _create_tables(root_conn, fresh_db)
    path = write_e2e_pipeline(tmp_path / "hb.yaml", mysql_server, doris_standin, fresh_db, f"hb_{fresh_db}",
                              tmp_path / "state")
    services = DagsterServices([path], prepare_home(tmp_path / "dagster"), port=free_port(),
                               log_dir=tmp_path / "logs", working_dir=ROOT)
    try:
        services.start()
        services.wait_ready()
        time.sleep(5)  # the daemon's first iterations have loaded its workspace
        assert set(services.procs) == {"code_server", "daemon", "webserver"}
        own = {name: _code_servers(_members(proc.pid)) for name, proc in services.procs.items()}
        assert own["daemon"] == [] and own["webserver"] == [], f"a code server of their own: {own}"
        assert len([c for c in own["code_server"] if "code-server" in c]) == 1, own
        workspace = (services.home / "dev_workspace.yaml").read_text()
        assert "grpc_server" in workspace and "location_name: tidemark" in workspace
        # its port, as the local stack's servers', lies below the kernel's ephemeral range, where no
        # outbound connection can take it before the code server binds it (devstack/procs.py)
        port = yaml.safe_load(workspace)["load_from"][0]["grpc_server"]["port"]
        ephemeral_low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
        assert port < ephemeral_low, (port, ephemeral_low)
    finally:
        services.stop()


@pytest.mark.slow
def test_tidemark_dev_terminal_shows_no_heartbeat_warning_over_two_minutes(mysql_server, root_conn, fresh_db,
                                                                           doris_standin, tmp_path):  # noqa: F811
    _create_tables(root_conn, fresh_db)
    path = write_e2e_pipeline(tmp_path / "hb2.yaml", mysql_server, doris_standin, fresh_db, f"hb2_{fresh_db}",
                              tmp_path / "state")
    port = free_port()
    terminal = tmp_path / "terminal.txt"
    env = {**os.environ, "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    with terminal.open("wb") as out:
        dev = subprocess.Popen([str(Path(sys.executable).parent / "tidemark"), "dev", str(path), "--port", str(port)],
                               stdout=out, stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not _answers(f"http://127.0.0.1:{port}/server_info"):
            assert time.monotonic() < deadline and dev.poll() is None, terminal.read_text()[-3000:]
            time.sleep(1)
        time.sleep(130)  # past two of the daemon's 60 s workspace reloads (+ the 20 s heartbeat timeout)
        assert dev.poll() is None, terminal.read_text()[-3000:]
        shown = terminal.read_text()
        assert "No heartbeat received" not in shown, shown[-3000:]
        assert "WARNING" not in shown and "ERROR" not in shown, shown[-3000:]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(dev.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            dev.wait(60)
        if dev.poll() is None:
            dev.kill()
            dev.wait()
