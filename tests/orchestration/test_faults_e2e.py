"""Doris and MySQL failing under ``tidemark run --once`` (issue #15 item 7): the stand-in's fault
injection (``devstack/doris/faults.py``: 5xx, a dropped connection, a slow Doris, a failed commit, a
BE gone), a precommitted transaction Doris aborts by its timeout, and a MySQL restart mid-snapshot
and mid-stream. Each ends either with the run succeeding (a transient fault the client retries) or
with a clear error; then, the fault cleared, a plain re-run succeeds and ``tidemark verify --json``
finds Doris equal to MySQL — so nothing was committed wrongly.

Each case runs its fault in the snapshot (a fresh pipeline) or in the binlog half (after a clean
first run and a few changes). Each case is one to three minutes of ``tidemark run`` processes, so
the default suite runs a sample (a lasting commit failure in the binlog half, the precommit timeout
in the binlog half, the MySQL restart mid-stream); the rest are ``slow`` (``-m slow``).

A client-side timeout cannot be injected: the sink's HTTP read timeout is fixed at 600 s
(``cdc_core/doris/client.py``, ``Timeouts``) and no pipeline option lowers it, so "load-slow" is a
Doris that answers late, not one that never answers.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
import uuid

import pytest
import requests
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from devstack.mysql import MariaDBServer
from devstack.procs import free_port, two_free_ports
from devstack.stack import DorisStandIn
from orchestration.defs.pipelines import PipelineHandle
from tests.conftest import _root_connection
from tests.orchestration.crash_trials import ROOT, CrashPipeline
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401


def _db() -> str:
    return f"fault_{uuid.uuid4().hex[:10]}"


def _faults(fe: str, *specs: dict) -> None:
    requests.post(f"http://{fe}/_standin/faults", json=list(specs), timeout=5).raise_for_status()


def _clear(fe: str) -> None:
    requests.delete(f"http://{fe}/_standin/faults", timeout=5).raise_for_status()


def _changes(pipeline: CrashPipeline) -> None:
    """Some inserts, updates and deletes for the binlog half (a hot key updated many times)."""
    with pipeline.root_conn.cursor() as cur:
        cur.execute(f"USE `{pipeline.db}`")
        cur.execute("UPDATE items SET qty = qty + 3 WHERE id <= 200")
        cur.execute("DELETE FROM items WHERE id BETWEEN 1900 AND 1950")
        cur.executemany("INSERT INTO items VALUES (%s, 'late', 1, 1.50, NOW(3))", [(i,) for i in range(5001, 5101)])
        for _ in range(50):
            cur.execute("UPDATE items SET qty = qty + 1 WHERE id = 7")
        cur.execute("INSERT INTO logs VALUES (9001, 'after', '2026-11-22 00:00:00')")


def _heals(pipeline: CrashPipeline, faulty: subprocess.CompletedProcess, transient: bool) -> None:
    """A transient fault is absorbed by the run's retries (exit 0); a lasting one fails the run with a
    ``tidemark run`` error line. Either way a plain re-run then succeeds and verify is equal."""
    if transient:
        assert faulty.returncode == 0, faulty.stderr[-4000:]
    else:
        assert faulty.returncode not in (0, -signal.SIGKILL), faulty.stderr[-4000:]
        assert "tidemark run" in faulty.stderr, faulty.stderr[-4000:]
    pipeline.plain_run()
    pipeline.verify()


# (case id, phase, stand-in faults, transient)
CASES = [
    ("load-500-transient", "snapshot", [{"target": "load", "mode": "http_500", "count": 2}], True),
    ("load-500-lasting", "snapshot", [{"target": "load", "mode": "http_500", "count": -1}], False),
    ("load-dropped-mid-body", "binlog", [{"target": "load", "mode": "drop_connection", "count": 1}], True),
    ("load-answer-lost", "snapshot", [{"target": "load", "mode": "drop_connection", "when": "after", "count": 2}], True),
    ("load-slow", "snapshot", [{"target": "load", "mode": "delay", "delay_s": 3, "count": 3}], True),
    ("commit-fails-lasting", "binlog", [{"target": "commit", "mode": "fail", "count": -1}], False),
    ("commit-fails-lasting-snapshot", "snapshot", [{"target": "commit", "mode": "fail", "count": -1}], False),
    ("commit-applied-answer-failed", "snapshot", [{"target": "commit", "mode": "fail", "when": "after", "count": 1}],
     True),
    ("commit-answer-dropped", "binlog", [{"target": "commit", "mode": "drop_connection", "when": "after", "count": 1}],
     True),
    ("be-down-lasting", "snapshot", [{"target": "load", "mode": "be_down", "count": -1}], False),
    ("be-down-briefly", "binlog", [{"target": "load", "mode": "be_down", "count": 2}], True),
]
DEFAULT = {"commit-fails-lasting"}  # the rest are slow (each is 1-3 minutes of runs)


@pytest.mark.parametrize(("phase", "specs", "transient"), [
    pytest.param(phase, specs, transient, id=name, marks=() if name in DEFAULT else (pytest.mark.slow,))
    for name, phase, specs, transient in CASES
])
def test_a_doris_fault_heals_or_fails_clearly(phase, specs, transient, mysql_server, root_conn, doris_standin,  # noqa: F811
                                              tmp_path):
    pipeline = CrashPipeline(mysql_server, root_conn, doris_standin, tmp_path, _db())
    fe = doris_standin.fe_http
    try:
        if phase == "binlog":
            pipeline.plain_run()
            _changes(pipeline)
        _faults(fe, *specs)
        try:
            faulty = pipeline.run_once()
        finally:
            _clear(fe)
        _heals(pipeline, faulty, transient)
    finally:
        _clear(fe)
        pipeline.drop()


@pytest.fixture(scope="module")
def timeout_standin(tmp_path_factory):
    """A private stand-in whose precommitted transactions time out after 3 s (Doris's
    ``stream_load_default_precommit_timeout_second``)."""
    fe, be = two_free_ports()
    standin = DorisStandIn(tmp_path_factory.mktemp("doris-timeout"), fe_port=fe, be_port=be,
                           txn_timeout_s=3.0)
    standin.start()
    yield standin
    standin.stop()


@pytest.mark.parametrize("point", [pytest.param("snapshot.after_state_write", marks=pytest.mark.slow),
                                   "binlog.after_state_write"])
def test_precommitted_loads_doris_aborted_by_timeout_are_read_again(point, mysql_server, root_conn, timeout_standin,
                                                                    tmp_path):
    """The run dies with its loads precommitted and recorded PREPARED; Doris aborts them by its
    precommit timeout before anyone commits them; the plain re-run reads them again."""
    from cdc_core.config import load_pipeline
    from jobs.spark_executor import spark_service

    pipeline = CrashPipeline(mysql_server, root_conn, timeout_standin, tmp_path, _db())
    try:
        if point.startswith("binlog"):
            pipeline.plain_run()
            _changes(pipeline)
        killed = pipeline.run_once(faults={point: {"action": "kill"}})
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-4000:]
        service = spark_service(load_pipeline(pipeline.path))
        try:
            pending = service.pending_transactions()
            assert pending, "the killed run left prepared loads"
            deadline = time.monotonic() + 60
            while True:  # the stand-in's ticker aborts them after its 3 s timeout
                states = {requests.get(f"http://{timeout_standin.fe_http}/api/{t['db']}/get_load_state",
                                       params={"label": t["label"]}, auth=("root", ""), timeout=5).json()["data"]
                          for t in pending}
                if states == {"ABORTED"} or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert states == {"ABORTED"}, states
        finally:
            service.close()
        done = pipeline.run_once()
        assert done.returncode == 0, done.stderr[-4000:]
        assert "Doris lost the loads" in done.stderr
        pipeline.verify()
    finally:
        pipeline.drop()


@pytest.fixture(scope="module")
def private_mysql(tmp_path_factory):
    """A MariaDB of this module's own: the restart tests stop and start it."""
    server = MariaDBServer(tmp_path_factory.mktemp("mariadb-restart"), port=free_port(), server_id=7)
    server.start()
    yield server
    server.stop()


def _wait_for_run(home, job_name: str, proc: subprocess.Popen, timeout_s: float = 300) -> None:
    """Until a run of ``job_name`` is STARTED in the Dagster home (the phase the restart must hit)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if home.exists():
            with DagsterInstance.from_config(str(home)) as instance:
                if instance.get_runs(filters=RunsFilter(job_name=job_name, statuses=[DagsterRunStatus.STARTED])):
                    return
        time.sleep(0.3)
    raise AssertionError(f"no run of {job_name} started (the run ended with rc={proc.poll()})")


def restart_mysql_during_run(proc: subprocess.Popen, home, job_name: str, server: MariaDBServer,
                             pipeline) -> tuple[str, str]:
    """Once a run of ``job_name`` has started, stop and start ``server`` under it, give ``pipeline``
    a new root connection (``pipeline.root_conn``), and wait for the run to end: its stdout and
    stderr. The run is killed if anything here fails first."""
    try:
        _wait_for_run(home, job_name, proc)
        pipeline.root_conn.close()
        assert server.stop()
        server.start()
        pipeline.root_conn = _root_connection(server)
        return proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("phase", [pytest.param("snapshot", marks=pytest.mark.slow), "binlog"])
def test_a_mysql_restart_mid_run_heals(phase, private_mysql, tmp_path, doris_standin):  # noqa: F811
    """MariaDB stops and starts again while the run reads a snapshot chunk (``snapshot.read`` slowed
    so the restart lands mid-read) or while a binlog batch is loading (``binlog.after_loads`` slowed);
    the run ends (exit 0, or a clear error), a plain re-run succeeds, verify is equal."""
    pipeline = CrashPipeline(private_mysql, _root_connection(private_mysql), doris_standin, tmp_path, _db())
    handle = PipelineHandle.load(pipeline.path)
    try:
        if phase == "binlog":
            pipeline.plain_run()
            _changes(pipeline)
            faults, job = {"binlog.after_loads": {"action": "sleep", "sleep_s": 4}}, handle.binlog_job_name
        else:
            faults, job = {"snapshot.read": {"action": "sleep", "sleep_s": 2}}, handle.snapshot_job_name
        env = {**pipeline.env, "TIDEMARK_FAULTS": json.dumps(faults)}
        proc = subprocess.Popen(pipeline.cli("run", str(pipeline.path), "--once"), cwd=ROOT, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        _, err = restart_mysql_during_run(proc, tmp_path / "dagster", job, private_mysql, pipeline)
        assert proc.returncode != -signal.SIGKILL
        if proc.returncode != 0:
            assert "tidemark run" in err, err[-4000:]
        print(f"run across the MySQL restart ({phase}): rc={proc.returncode}\n{err[-1500:]}")
        pipeline.plain_run()
        pipeline.verify()
    finally:
        pipeline.drop()
        pipeline.root_conn.close()
