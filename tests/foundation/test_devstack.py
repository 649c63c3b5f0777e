"""`tidemark devstack up|down|status`: a private MariaDB with ROW binlog, started and stopped by pid."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from devstack.procs import free_port, pid_alive

pytestmark = pytest.mark.integration  # `tidemark devstack up` starts MariaDB and the stand-in


def tidemark(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "orchestration.cli", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"tidemark {' '.join(args)} failed: {result.stderr}")
    return result


def mariadb_as_cdc(port: int, sql: str) -> str:
    result = subprocess.run(
        ["mariadb", "--no-defaults", "-h127.0.0.1", f"-P{port}", "-ucdc", "-pcdc", "-N", "-B", "-e", sql],
        capture_output=True, text=True, check=True,
    )
    return result.stdout


@pytest.fixture
def stack_dir(tmp_path):
    directory = tmp_path / "stack"
    yield directory
    tidemark("devstack", "down", "--dir", str(directory), check=False)


def test_up_json_binlog_settings_master_status_and_down(stack_dir):
    port = free_port()
    first = tidemark("devstack", "up", "--dir", str(stack_dir), "--json", "--mysql-port", str(port),
                     "--doris-port", str(free_port()), "--doris-be-port", str(free_port()))
    endpoints = json.loads(first.stdout)  # exactly one JSON object
    mysql = endpoints["mysql"]
    assert set(mysql) == {"host", "port", "user", "password", "root_socket"}
    assert (mysql["host"], mysql["port"], mysql["user"], mysql["password"]) == ("127.0.0.1", port, "cdc", "cdc")
    assert "doris" in endpoints

    variables = dict(
        line.split("\t") for line in mariadb_as_cdc(port, "SHOW VARIABLES LIKE 'binlog_%'").splitlines()
    )
    assert variables["binlog_format"] == "ROW"
    assert variables["binlog_row_image"] == "FULL"
    assert variables["binlog_row_metadata"] == "FULL"
    status = mariadb_as_cdc(port, "SHOW MASTER STATUS").split("\t")
    assert status[0].startswith("binlog.") and int(status[1]) > 0
    assert "REPLICATION SLAVE" in mariadb_as_cdc(port, "SHOW GRANTS")

    pid = int((stack_dir / "mysql" / "mariadb.pid").read_text())
    # up twice in a row is harmless: same server, same answer
    second = tidemark("devstack", "up", "--dir", str(stack_dir), "--json")
    assert json.loads(second.stdout) == endpoints
    assert int((stack_dir / "mysql" / "mariadb.pid").read_text()) == pid

    assert "running" in tidemark("devstack", "status", "--dir", str(stack_dir)).stdout

    down = tidemark("devstack", "down", "--dir", str(stack_dir))
    assert "mysql" in down.stdout
    assert not pid_alive(pid), "down leaves none of our processes running"
    assert (stack_dir / "mysql" / "data").is_dir(), "down keeps the data"
    assert "stopped" in tidemark("devstack", "status", "--dir", str(stack_dir)).stdout


def test_asking_a_running_stack_for_other_ports_is_a_clear_error(stack_dir):
    port = free_port()
    tidemark("devstack", "up", "--dir", str(stack_dir), "--mysql-port", str(port),
             "--doris-port", str(free_port()), "--doris-be-port", str(free_port()))
    clash = tidemark("devstack", "up", "--dir", str(stack_dir), "--mysql-port", str(port + 1), check=False)
    assert clash.returncode != 0
    assert "already running on other ports" in clash.stderr and "devstack down" in clash.stderr


def test_a_stand_in_killed_before_it_answers_is_started_once_more(tmp_path, monkeypatch):
    """A stand-in killed by a signal before its FE answered (a stray group kill, the OOM killer)
    is started again, and its log says so; an exit with a status is an error naming it."""
    from devstack.procs import two_free_ports
    from devstack.stack import DorisStandIn

    fe, be = two_free_ports()
    standin = DorisStandIn(tmp_path / "doris", fe_port=fe, be_port=be)
    real_launch, launches = standin._launch, []

    def killed_first(script: str):
        def launch():
            launches.append(1)
            if len(launches) == 1:
                standin.data_dir.mkdir(parents=True, exist_ok=True)
                return subprocess.Popen([sys.executable, "-c", script])
            return real_launch()
        return launch

    monkeypatch.setattr(standin, "_launch", killed_first("import os, signal; os.kill(os.getpid(), signal.SIGKILL)"))
    standin.start(timeout_s=60)
    try:
        assert len(launches) == 2 and standin.healthy()
        assert "killed by signal 9 before it answered; starting it once more" in standin.log_file.read_text()
    finally:
        standin.stop()

    launches.clear()
    monkeypatch.setattr(standin, "_launch", killed_first("raise SystemExit(3)"))
    with pytest.raises(RuntimeError, match=r"on 127\.0\.0\.1:\d+ exited with status 3; log tail"):
        standin.start(timeout_s=60)
    assert len(launches) == 1
