"""End to end through Dagster itself: dagster-webserver and dagster-daemon on free ports, the
split plan and the backfill of every chunk launched over GraphQL, a live write workload that the
daemon-driven binlog sensor streams into the Doris stand-in, and Doris compared with MySQL.

Uses the real ``PipelineService`` (no double), the session's MariaDB and a private stand-in.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pymysql
import pytest
import requests
from dagster import DagsterInstance, RunsFilter
from dagster._core.storage.tags import SENSOR_NAME_TAG

from cdc_core.config import load_pipeline
from devstack.dagster_graphql import DagsterApi
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port, pid_alive
from devstack.stack import DorisStandIn
from devstack.workload import SteadyWriter
from jobs.spark_executor import spark_service
from orchestration.cli.dev import DagsterServices
from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.runs import runs_in_flight

ROOT = Path(__file__).resolve().parents[2]


def write_e2e_pipeline(path: Path, mysql_server, doris, db: str, name: str, state_dir: Path) -> Path:
    """The end-to-end tests' pipeline file: every table of ``db``, 400-row chunks (``logs`` is split
    on a non-key column)."""
    return write_pipeline(path, host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris.fe_http,
                          tables=f"{db}.\\.*", name=name, state_dir=state_dir, server_id="5500-5504",
                          source={"scan.incremental.snapshot.chunk.size": 400,
                                  "scan.incremental.snapshot.chunk.key-column": f"{db}.logs:log_id"})



@pytest.fixture(scope="module")
def doris_standin(tmp_path_factory):
    fe = free_port()
    be = free_port()
    while be == fe:
        be = free_port()
    standin = DorisStandIn(tmp_path_factory.mktemp("doris"), fe_port=fe, be_port=be)
    standin.start()
    yield standin
    standin.stop()


def _create_tables(conn, db: str) -> None:
    with conn.cursor() as cur:
        cur.execute(f"USE `{db}`")
        cur.execute("""CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT NOT NULL,
                       price DECIMAL(10,2) NOT NULL, updated DATETIME(3) NOT NULL)""")
        cur.execute("""CREATE TABLE logs (log_id BIGINT NOT NULL, msg VARCHAR(60), at DATETIME NOT NULL,
                       KEY ix (log_id))""")
        cur.executemany("INSERT INTO items VALUES (%s,%s,%s,%s,%s)",
                        [(i, f"item {i}", i % 97, Decimal(i % 1000) / 10, "2026-01-01 00:00:00.000")
                         for i in range(1, 2001)])
        cur.executemany("INSERT INTO logs VALUES (%s,%s,%s)",
                        [(i, f"log {i}", "2026-01-02 03:04:05") for i in range(1, 1201)])


def _doris_count(fe: str, db: str, table: str) -> int:
    body = requests.post(f"http://{fe}/api/query/default_cluster/{db}", auth=("root", ""), timeout=30,
                         json={"stmt": f"SELECT COUNT(*) FROM {db}.{table}"}).json()
    assert body.get("code") == 0, body
    return int(body["data"]["data"][0][0])


def test_backfill_and_sensor_stream_a_live_workload(mysql_server, root_conn, fresh_db, doris_standin, tmp_path):
    _create_tables(root_conn, fresh_db)
    name = f"e2e_{fresh_db}"
    path = tmp_path / f"{name}.yaml"
    write_e2e_pipeline(path, mysql_server, doris_standin, fresh_db, name, tmp_path / "state")
    handle = PipelineHandle.load(path)
    home = tmp_path / "dagster"

    def connect():
        return pymysql.connect(unix_socket=mysql_server.endpoint.root_socket, user="root", database=fresh_db,
                               autocommit=False)

    writer = SteadyWriter(
        connect, "items", ("name", "qty", "price", "updated"),
        lambda i, rng: (f"new {i}", rng.randint(0, 50), Decimal(rng.randint(0, 9999)) / 100,
                        "2026-11-22 00:00:00.000"),
        rate=40, ticks_per_s=10, first_id=10_001, update_share=0.3, delete_share=0.1,
        update_sql="UPDATE items SET qty = qty + 1, updated = NOW(3) WHERE id = %s",
    )
    services = DagsterServices([path], home, port=free_port(), log_dir=tmp_path / "logs", working_dir=ROOT)
    runner = spark_service(load_pipeline(path))
    try:
        services.start()
        services.wait_ready()
        api = DagsterApi(services.url)
        # 1. plan the chunks (the job the UI's Materialize on snapshot_splits runs)
        run_id = api.launch_job(handle.splits_job_name)
        assert api.wait_run(run_id, timeout_s=180) == "SUCCESS"
        # 2. the workload starts, then the backfill of every chunk partition, from the API
        writer.start()
        backfill_id = api.backfill_all_partitions([handle.slug, "snapshot_chunks"], title="e2e")
        assert api.wait_backfill(backfill_id, timeout_s=600) in ("COMPLETED", "COMPLETED_SUCCESS")
        assert runner.snapshot_done()
        # 3. the sensor streams the binlog while the workload runs, and after it stops
        time.sleep(10)
        stats = writer.stop()
        assert stats.inserted > 0 and stats.updated > 0 and stats.deleted > 0
        with root_conn.cursor() as cur:
            cur.executemany(f"INSERT INTO `{fresh_db}`.logs VALUES (%s,%s,%s)",
                            [(i, f"late log {i}", "2026-11-22 01:00:00") for i in range(5001, 5051)])
        deadline = time.monotonic() + 240
        with DagsterInstance.from_config(str(services.home)) as instance:
            while time.monotonic() < deadline:
                lag = runner.binlog_lag()
                if not lag.behind and not runs_in_flight(instance, prefix=(handle.slug,)):
                    break
                time.sleep(1)
            else:
                pytest.fail(f"the binlog did not catch up: {runner.binlog_lag()}; logs in {tmp_path / 'logs'}")
            sensor_runs = instance.get_runs(filters=RunsFilter(tags={SENSOR_NAME_TAG: handle.sensor_name}))
        assert sensor_runs, "the binlog sensor launched no run"
        assert all(r.status.value == "SUCCESS" for r in sensor_runs), [r.status for r in sensor_runs]
        # 4. Doris equals MySQL: the runner's parity (count + checksum) and plain counts
        assert runner.pending_transactions() == []
        for table in ("items", "logs"):
            parity = runner.table_parity(f"{fresh_db}.{table}")
            assert parity.ok, parity
        with root_conn.cursor() as cur:
            for table in ("items", "logs"):
                cur.execute(f"SELECT COUNT(*) FROM `{fresh_db}`.{table}")
                assert _doris_count(doris_standin.fe_http, fresh_db, table) == cur.fetchone()[0]
    finally:
        try:
            services.stop()  # first: never leave a daemon or webserver behind
        finally:
            runner.close()
            if writer.is_alive():
                writer.stop()


def test_tidemark_dev_stops_when_the_process_that_started_it_is_gone(mysql_server, root_conn, fresh_db,
                                                                      doris_standin, tmp_path):
    """``make demo`` ends in ``tidemark dev``; a TERM sent to make alone never reaches it. When its
    parent is gone it stops the webserver and the daemon instead of leaving them unowned."""
    _create_tables(root_conn, fresh_db)
    name = f"dev_{fresh_db}"
    path = tmp_path / f"{name}.yaml"
    write_e2e_pipeline(path, mysql_server, doris_standin, fresh_db, name, tmp_path / "state")
    port = free_port()
    tidemark = Path(sys.executable).parent / "tidemark"
    parent = subprocess.Popen(
        ["bash", "-c", f"'{tidemark}' dev '{path}' --port {port} > '{tmp_path}/dev.log' 2>&1 & echo $!; wait"],
        stdout=subprocess.PIPE, text=True, start_new_session=True, cwd=ROOT,
    )
    dev_pid = int(parent.stdout.readline())
    url = f"http://127.0.0.1:{port}/server_info"
    try:
        deadline = time.monotonic() + 180
        while not _answers(url):
            assert time.monotonic() < deadline, (tmp_path / "dev.log").read_text()[-3000:]
            assert pid_alive(dev_pid), (tmp_path / "dev.log").read_text()[-3000:]
            time.sleep(1)
        parent.kill()  # the parent alone, as a TERM to make would be
        parent.wait()
        deadline = time.monotonic() + 60
        while pid_alive(dev_pid) or _answers(url):
            assert time.monotonic() < deadline, "tidemark dev outlived its parent"
            time.sleep(1)
        assert "the parent process exited; stopping" in (tmp_path / "dev.log").read_text()
    finally:
        for pid in (dev_pid, parent.pid):  # after a failure: Ctrl-C-like stop of everything
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while pid_alive(dev_pid) and time.monotonic() < deadline:
            time.sleep(0.5)


def test_a_killed_tidemark_dev_leaves_no_dagster_process(mysql_server, root_conn, fresh_db, doris_standin, tmp_path):
    """kill -9 of ``tidemark dev`` (an OOM kill, a crash) runs none of its handlers; its watchdog
    still stops the webserver, the daemon and their code servers."""
    _create_tables(root_conn, fresh_db)
    name = f"dev9_{fresh_db}"
    path = tmp_path / f"{name}.yaml"
    write_e2e_pipeline(path, mysql_server, doris_standin, fresh_db, name, tmp_path / "state")
    port = free_port()
    log = open(tmp_path / "dev.log", "wb")  # noqa: SIM115 - closed in finally
    dev = subprocess.Popen([str(Path(sys.executable).parent / "tidemark"), "dev", str(path), "--port", str(port)],
                           stdout=log, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/server_info"
    groups: set[int] = set()
    try:
        deadline = time.monotonic() + 180
        while not _answers(url):
            assert time.monotonic() < deadline and dev.poll() is None, (tmp_path / "dev.log").read_text()[-3000:]
            time.sleep(1)
        children = _children(dev.pid)
        watchdogs = [c for c in children if b"orchestration.cli.dev_watchdog" in Path(f"/proc/{c}/cmdline").read_bytes()]
        assert len(watchdogs) == 1
        groups = {os.getpgid(c) for c in children if c not in watchdogs}
        assert len(groups) == 3, "the code server, the webserver and the daemon, each in a group of its own"
        members = {p for g in groups for p in _members(g)}
        assert len(members) > 3, "the code server's API server runs in its group too"
        dev.kill()  # SIGKILL: no handler runs
        dev.wait()
        deadline = time.monotonic() + 60
        while any(_members(g) for g in groups) or _answers(url) or pid_alive(watchdogs[0]):
            assert time.monotonic() < deadline, f"left running: {[_members(g) for g in groups]}"
            time.sleep(1)
        assert "is gone; stopping its Dagster processes" in (tmp_path / "dev.log").read_text()
    finally:
        for g in groups:
            if _members(g):  # an ended group's number may already be someone else's
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(g, signal.SIGKILL)
        log.close()


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        out += [int(c) for c in text]
    return out


def _members(pgid: int) -> list[int]:
    """Live processes of a process group (zombies are done: they only wait to be reaped)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(proc.name))
    return found


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=2).status_code == 200
    except requests.RequestException:
        return False
