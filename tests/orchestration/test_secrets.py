"""Credentials never in logs, Dagster metadata, exception text or process arguments (issue #15 item 8).

A pipeline whose MySQL and Doris passwords are distinctive sentinels, given through ``${VAR}``
substitution as a deployment would, runs for real: ``tidemark validate --connect``, a snapshot on
Spark (``tidemark.snapshot.in-process-rows: 0``, so the JVM and its Python workers are started),
a binlog batch, ``tidemark status``, ``tidemark verify``, and failing runs (a wrong Doris password,
a wrong MySQL password, MySQL unreachable). Meanwhile a thread samples the command line of every
process on the machine. Afterwards every byte the runs left — their stdout and stderr, the state
store, the Dagster instance (event log and run databases, compute logs), the stand-in's log — and
every Dagster event read back through ``DagsterInstance`` must hold none of the passwords, in
plain text, URL-encoded, or base64 as in an ``Authorization: Basic`` header.

``tidemark dev``'s processes (webserver, daemon, the code server they spawn, the sensor ticks that
connect to both servers) are sampled the same way in the second test.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote, quote_plus

import psutil
import pytest
from dagster import DagsterInstance
from dagster._serdes import serialize_value

from devstack.procs import free_port, two_free_ports
from devstack.stack import DorisStandIn
from tests.orchestration.test_e2e_dagster import _create_tables

ROOT = Path(__file__).resolve().parents[2]
# '/' and '+' make the URL-encoded and base64 forms differ from the plain text.
MYSQL_SECRET = f"S3cr3t-Sentinel/{uuid.uuid4().hex[:10]}+my"
DORIS_SECRET = f"S3cr3t-Sentinel/{uuid.uuid4().hex[:10]}+doris"
WRONG_SECRET = f"S3cr3t-Sentinel/{uuid.uuid4().hex[:10]}+wrong"
DORIS_USER = "tm_leak"

PIPELINE = """
source:
  type: mysql
  hostname: {host}
  port: {port}
  username: {user}
  password: ${{TM_LEAK_MYSQL_PASSWORD}}
  tables: {db}.\\.*
  server-id: 5600-5604
  scan.incremental.snapshot.chunk.size: 400
  scan.incremental.snapshot.chunk.key-column: {db}.logs:log_id
sink:
  type: doris
  fenodes: {fe}
  username: {doris_user}
  password: ${{TM_LEAK_DORIS_PASSWORD}}
  table.create.properties.replication_num: 1
pipeline:
  name: {name}
  parallelism: 2
  tidemark.state.dir: {state}
  tidemark.snapshot.in-process-rows: {in_process_rows}
"""


DEBUG_CLI = ("import logging, runpy, sys; logging.basicConfig(level=logging.DEBUG); "
             "sys.argv = ['tidemark', *sys.argv[1:]]; runpy.run_module('orchestration.cli', run_name='__main__')")


def secret_forms(secret: str, users: tuple[str, ...]) -> set[str]:
    """The shapes a password takes when it leaks: as is, URL-encoded, base64, and base64 of the
    ``user:password`` a Basic ``Authorization`` header carries."""
    forms = {secret, quote(secret, safe=""), quote_plus(secret), base64.b64encode(secret.encode()).decode()}
    for user in users:
        forms.add(base64.b64encode(f"{user}:{secret}".encode()).decode())
        forms.add(base64.b64encode(f"{user}@default_cluster:{secret}".encode()).decode())
    return forms


def leaks(text: str | bytes, forms: set[str]) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return sorted(f for f in forms if f.encode() in data)


class ProcessArgsWatcher(threading.Thread):
    """Samples every process's command line until stopped: what ``ps -eo args`` would show."""

    def __init__(self, forms: set[str], interval_s: float = 0.1):
        super().__init__(daemon=True, name="process-args-watcher")
        self.forms, self.interval_s = forms, interval_s
        self.found: list[tuple[int, list[str]]] = []
        self.seen: set[str] = set()  # the command lines seen, to show the sampling saw the children
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(self.interval_s):
            for proc in psutil.process_iter(["pid", "cmdline"]):
                cmdline = proc.info.get("cmdline") or []
                text = " ".join(cmdline)
                if not text:
                    continue
                self.seen.add(text[:300])
                hit = leaks(text, self.forms)
                if hit:
                    self.found.append((proc.info["pid"], hit))

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    def saw(self, needle: str) -> bool:
        return any(needle in line for line in self.seen)


def test_the_detectors_find_a_planted_password(tmp_path):
    """The checks below would see a leak: a command line carrying the URL-encoded password, and a
    file holding a Basic header's base64."""
    forms = secret_forms(MYSQL_SECRET, ("cdc",))
    watcher = ProcessArgsWatcher(forms, interval_s=0.05)
    watcher.start()
    try:
        subprocess.run([sys.executable, "-c", "import time; time.sleep(1.5)", quote(MYSQL_SECRET, safe="")],
                       check=True)
    finally:
        watcher.stop()
    assert watcher.found and watcher.found[0][1] == [quote(MYSQL_SECRET, safe="")]
    (tmp_path / "log.txt").write_text("Authorization: Basic " + base64.b64encode(f"cdc:{MYSQL_SECRET}".encode()).decode())
    files, scanned = _files_with_leaks([tmp_path], forms)
    assert scanned == 1 and list(files) == [str(tmp_path / "log.txt")]
    assert leaks("nothing here", forms) == []


@pytest.fixture(scope="module")
def secret_standin(tmp_path_factory):
    """A stand-in whose user's password is the Doris sentinel (given to it by the environment)."""
    fe, be = two_free_ports()
    standin = DorisStandIn(tmp_path_factory.mktemp("doris-secret"), fe_port=fe, be_port=be,
                           user=DORIS_USER, password=DORIS_SECRET)
    standin.start()
    yield standin
    standin.stop()


class LeakPipeline:
    """A database, a MySQL user whose password is the MySQL sentinel, and a pipeline file using both."""

    def __init__(self, mysql_server, root_conn, standin: DorisStandIn, base: Path, in_process_rows: int = 0):
        self.root_conn, self.base = root_conn, base
        self.db = f"leak_{uuid.uuid4().hex[:8]}"
        self.user = f"tm_{uuid.uuid4().hex[:8]}"
        with root_conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{self.db}`")
            for host in ("%", "localhost", "127.0.0.1"):
                cur.execute(f"CREATE USER '{self.user}'@'{host}' IDENTIFIED BY {root_conn.escape(MYSQL_SECRET)}")
                cur.execute(f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{self.user}'@'{host}'")
        _create_tables(root_conn, self.db)
        self.name = f"leak_{self.db}"
        self.path = base / f"{self.name}.yaml"
        self.path.write_text(PIPELINE.format(
            host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, user=self.user, db=self.db,
            fe=standin.fe_http, doris_user=DORIS_USER, name=self.name, state=base / "state",
            in_process_rows=in_process_rows))
        self.home = base / "dagster"
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(self.home),
                    "TM_LEAK_MYSQL_PASSWORD": MYSQL_SECRET, "TM_LEAK_DORIS_PASSWORD": DORIS_SECRET}
        self.env.pop("TIDEMARK_FAULTS", None)
        self.outputs: list[tuple[str, str]] = []  # (what, text) of every command

    def cli(self, *args: str, env: dict[str, str] | None = None, timeout_s: float = 600) -> subprocess.CompletedProcess:
        """The ``tidemark`` command with every Python logger at DEBUG on stderr (ours, pymysql's,
        mysql-replication's, urllib3's, Dagster's): a password logged at any level shows."""
        done = subprocess.run([sys.executable, "-c", DEBUG_CLI, *args], cwd=ROOT,
                              env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=timeout_s)
        what = " ".join(args[:1] + args[2:])
        self.outputs += [(f"{what}: stdout", done.stdout), (f"{what}: stderr", done.stderr)]
        return done

    def drop(self) -> None:
        with self.root_conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{self.db}`")
            for host in ("%", "localhost", "127.0.0.1"):
                cur.execute(f"DROP USER IF EXISTS '{self.user}'@'{host}'")


def _files_with_leaks(roots: list[Path], forms: set[str]) -> tuple[dict[str, list[str]], int]:
    found, scanned = {}, 0
    for root in roots:
        for path in [Path(root)] if Path(root).is_file() else Path(root).rglob("*"):
            if path.is_file() and not path.is_symlink():
                scanned += 1
                hit = leaks(path.read_bytes(), forms)
                if hit:
                    found[str(path)] = hit
    return found, scanned


def _dagster_events_with_leaks(home: Path, forms: set[str]) -> tuple[list[str], int]:
    """Every event of every run (messages, metadata, errors with their causes), read back."""
    found, events = [], 0
    with DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            hit = leaks(serialize_value(run), forms)
            if hit:
                found.append(f"run {run.run_id} record: {hit}")
            for record in instance.all_logs(run.run_id):
                events += 1
                hit = leaks(serialize_value(record), forms)
                if hit:
                    found.append(f"run {run.run_id} event {record.dagster_event_type}: {hit}")
    return found, events


@pytest.mark.parametrize("in_process_rows", [
    pytest.param(50_000, id="driver"),
    pytest.param(0, id="spark", marks=pytest.mark.slow),  # ~3 min: the JVM and its Python workers too
])
def test_credentials_never_leak_from_runs_status_verify_or_failures(in_process_rows, mysql_server, root_conn,
                                                                    secret_standin, tmp_path):
    pipeline = LeakPipeline(mysql_server, root_conn, secret_standin, tmp_path, in_process_rows=in_process_rows)
    forms = (secret_forms(MYSQL_SECRET, (pipeline.user,)) | secret_forms(DORIS_SECRET, (DORIS_USER,))
             | secret_forms(WRONG_SECRET, (pipeline.user, DORIS_USER)))
    watcher = ProcessArgsWatcher(forms)
    watcher.start()
    try:
        checked = pipeline.cli("validate", "--connect", str(pipeline.path))
        assert checked.returncode == 0, checked.stderr
        snapshot = pipeline.cli("run", str(pipeline.path), "--once")
        assert snapshot.returncode == 0, snapshot.stderr[-4000:]
        with root_conn.cursor() as cur:
            cur.execute(f"UPDATE `{pipeline.db}`.items SET qty = qty + 1 WHERE id <= 50")
            cur.execute(f"DELETE FROM `{pipeline.db}`.items WHERE id > 1990")
        stream = pipeline.cli("run", str(pipeline.path), "--once")
        assert stream.returncode == 0, stream.stderr[-4000:]
        status = pipeline.cli("status", str(pipeline.path), "--json")
        assert status.returncode == 0, status.stderr
        verify = pipeline.cli("verify", str(pipeline.path), "--json")
        assert verify.returncode == 0, verify.stdout + verify.stderr

        # Failures: their messages and tracebacks are where a DSN or a header is most likely to show.
        with root_conn.cursor() as cur:
            cur.execute(f"UPDATE `{pipeline.db}`.items SET qty = qty + 1 WHERE id <= 5")
        wrong_doris = pipeline.cli("run", str(pipeline.path), "--once", env={"TM_LEAK_DORIS_PASSWORD": WRONG_SECRET})
        assert wrong_doris.returncode != 0
        # refused by the check before the run (cdc_core/pipeline/preflight.py), naming the keys
        assert "check sink.username and sink.password" in wrong_doris.stderr, wrong_doris.stderr[-4000:]
        wrong_mysql = pipeline.cli("validate", "--connect", str(pipeline.path),
                                   env={"TM_LEAK_MYSQL_PASSWORD": WRONG_SECRET})
        assert wrong_mysql.returncode != 0
        assert "Access denied" in wrong_mysql.stderr and "password" in wrong_mysql.stderr, wrong_mysql.stderr
        wrong_mysql_run = pipeline.cli("run", str(pipeline.path), "--once", env={"TM_LEAK_MYSQL_PASSWORD": WRONG_SECRET})
        assert wrong_mysql_run.returncode != 0
        assert "Access denied" in wrong_mysql_run.stderr, wrong_mysql_run.stderr[-4000:]
        closed = free_port()  # the same pipeline (name, state) pointed at a port nothing listens on
        down = pipeline.path.with_name("down.yaml")
        down.write_text(pipeline.path.read_text().replace(f"port: {mysql_server.endpoint.port}", f"port: {closed}"))
        unreachable = pipeline.cli("run", str(down), "--once")
        assert unreachable.returncode != 0
        assert str(closed) in unreachable.stderr, unreachable.stderr[-4000:]
        status_down = pipeline.cli("status", str(pipeline.path), env={"TM_LEAK_MYSQL_PASSWORD": WRONG_SECRET})
        assert status_down.returncode == 1, status_down.stdout + status_down.stderr
    finally:
        watcher.stop()
        pipeline.drop()

    # The sampling saw the children it had to see: the CLI, Spark's JVM and its Python workers.
    assert watcher.saw("run_module('orchestration.cli'"), sorted(watcher.seen)[:50]
    assert any("DEBUG" in text for what, text in pipeline.outputs if what.startswith("run")), "no debug log"
    if in_process_rows == 0:
        assert watcher.saw("org.apache.spark.deploy.SparkSubmit"), "the snapshot did not start Spark"
    assert watcher.found == [], f"a process's arguments carry a password: {watcher.found}"

    printed = {what: hit for what, text in pipeline.outputs if (hit := leaks(text, forms))}
    assert printed == {}, f"a password was printed: {printed}"
    files, scanned = _files_with_leaks([tmp_path, secret_standin.base_dir], forms)
    assert scanned > 10 and any(pipeline.home.rglob("*.db")), scanned  # the instance's databases were read
    assert files == {}, f"a password was written to: {files}"
    events_found, events = _dagster_events_with_leaks(pipeline.home, forms)
    assert events > 50, events
    assert events_found == [], events_found


@pytest.mark.slow  # ~2 min: the webserver, the daemon and a sensor-launched run
def test_credentials_never_leak_from_tidemark_dev(mysql_server, root_conn, secret_standin, tmp_path, monkeypatch):
    """The Dagster webserver, the daemon, the code servers they spawn and the runs the binlog sensor
    launches (``dagster api execute_run …``): none carries a password in its arguments, its log or
    the instance."""
    from dagster import DagsterRunStatus, RunsFilter

    from orchestration.cli.dev import DagsterServices
    from orchestration.defs.pipelines import PipelineHandle

    pipeline = LeakPipeline(mysql_server, root_conn, secret_standin, tmp_path, in_process_rows=50_000)
    forms = secret_forms(MYSQL_SECRET, (pipeline.user,)) | secret_forms(DORIS_SECRET, (DORIS_USER,))
    monkeypatch.setenv("TM_LEAK_MYSQL_PASSWORD", MYSQL_SECRET)  # the file's ${VAR}s, for loading it here
    monkeypatch.setenv("TM_LEAK_DORIS_PASSWORD", DORIS_SECRET)
    handle = PipelineHandle.load(pipeline.path)
    watcher = ProcessArgsWatcher(forms)
    watcher.start()
    services = DagsterServices([pipeline.path], pipeline.home, port=free_port(), log_dir=tmp_path / "dev_logs",
                               env=pipeline.env, working_dir=ROOT)
    try:
        first = pipeline.cli("run", str(pipeline.path), "--once")  # the snapshot, so the sensor streams
        assert first.returncode == 0, first.stderr[-4000:]
        services.start()
        services.wait_ready()
        with root_conn.cursor() as cur:
            cur.execute(f"UPDATE `{pipeline.db}`.items SET qty = qty + 1 WHERE id <= 20")
        deadline = time.monotonic() + 240
        with DagsterInstance.from_config(str(pipeline.home)) as instance:
            while time.monotonic() < deadline:
                done = instance.get_runs(filters=RunsFilter(job_name=handle.binlog_job_name,
                                                            statuses=[DagsterRunStatus.SUCCESS]))
                if done:
                    break
                time.sleep(1)
        assert done, "the binlog sensor launched no successful run"
    finally:
        services.stop()
        watcher.stop()
        pipeline.drop()
    assert watcher.saw("orchestration.cli.dagster_daemon") and watcher.saw("dagster-webserver")
    assert watcher.saw("api grpc"), "no code server was seen"
    assert watcher.found == [], f"a process's arguments carry a password: {watcher.found}"
    printed = {what: hit for what, text in pipeline.outputs if (hit := leaks(text, forms))}
    assert printed == {}, printed
    files, scanned = _files_with_leaks([tmp_path], forms)
    assert scanned > 10 and any((tmp_path / "dev_logs").iterdir()), scanned
    assert files == {}, f"a password was written to: {files}"
    events_found, events = _dagster_events_with_leaks(pipeline.home, forms)
    assert events > 10 and events_found == [], (events, events_found)


@pytest.fixture(scope="module")
def restartable_mysql(tmp_path_factory):
    """A MariaDB of this module's own: the mid-run test stops and starts it."""
    from devstack.mysql import MariaDBServer

    server = MariaDBServer(tmp_path_factory.mktemp("mariadb-secret"), port=free_port(), server_id=11)
    server.start()
    yield server
    server.stop()


@pytest.mark.slow  # ~2 min: two runs and a MariaDB restart
def test_credentials_never_leak_when_mysql_goes_down_mid_run(restartable_mysql, secret_standin, tmp_path,
                                                             monkeypatch):
    """MariaDB stops and starts while a binlog batch is loading (``binlog.after_loads`` slowed): the
    reconnects, the failure or retry messages and the re-run that heals carry no password."""
    from orchestration.defs.pipelines import PipelineHandle
    from tests.conftest import _root_connection
    from tests.orchestration.test_faults_e2e import restart_mysql_during_run

    root = _root_connection(restartable_mysql)
    pipeline = LeakPipeline(restartable_mysql, root, secret_standin, tmp_path, in_process_rows=50_000)
    forms = secret_forms(MYSQL_SECRET, (pipeline.user,)) | secret_forms(DORIS_SECRET, (DORIS_USER,))
    watcher = ProcessArgsWatcher(forms)
    watcher.start()
    try:
        first = pipeline.cli("run", str(pipeline.path), "--once")
        assert first.returncode == 0, first.stderr[-4000:]
        with root.cursor() as cur:
            cur.execute(f"UPDATE `{pipeline.db}`.items SET qty = qty + 2 WHERE id <= 300")
        env = {**pipeline.env, "TIDEMARK_FAULTS": '{"binlog.after_loads": {"action": "sleep", "sleep_s": 4}}',
               "TM_LEAK_MYSQL_PASSWORD": MYSQL_SECRET}
        proc = subprocess.Popen([sys.executable, "-c", DEBUG_CLI, "run", str(pipeline.path), "--once"], cwd=ROOT,
                                env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
        monkeypatch.setenv("TM_LEAK_MYSQL_PASSWORD", MYSQL_SECRET)  # to load the file here
        monkeypatch.setenv("TM_LEAK_DORIS_PASSWORD", DORIS_SECRET)
        out, err = restart_mysql_during_run(proc, pipeline.home, PipelineHandle.load(pipeline.path).binlog_job_name,
                                            restartable_mysql, pipeline)
        pipeline.outputs += [("run across the restart: stdout", out), ("run across the restart: stderr", err)]
        assert proc.returncode == 0 or "tidemark run" in err, err[-4000:]  # went on, or failed clearly
        print(f"run across the MySQL restart: rc={proc.returncode}: {err.strip().splitlines()[-1:]}")
        healed = pipeline.cli("run", str(pipeline.path), "--once")
        assert healed.returncode == 0, healed.stderr[-4000:]
    finally:
        watcher.stop()
        pipeline.drop()
        pipeline.root_conn.close()
    assert watcher.found == [], f"a process's arguments carry a password: {watcher.found}"
    printed = {what: hit for what, text in pipeline.outputs if (hit := leaks(text, forms))}
    assert printed == {}, printed
    files, _ = _files_with_leaks([tmp_path, restartable_mysql.base_dir / "mariadb.err"], forms)
    assert files == {}, f"a password was written to: {files}"
    events_found, events = _dagster_events_with_leaks(pipeline.home, forms)
    assert events > 10 and events_found == [], (events, events_found)


def test_deployment_overrides_from_the_environment_reach_the_definition(tmp_path, monkeypatch):
    """``TIDEMARK_<PIPELINE>_MYSQL_PORT`` / ``_MYSQL_PASSWORD`` / ``_DORIS_PASSWORD`` (``EnvVar``s) are
    read as values where the resource is used outside a run, and the passwords stay secret."""
    from orchestration.defs.resources import pipeline_resource

    path = tmp_path / "ovr.yaml"
    path.write_text(PIPELINE.format(host="db", port=3306, user="cdc", db="shop", fe="fe:8030", doris_user="tm",
                                    name="ovr", state=tmp_path / "state", in_process_rows=0))
    monkeypatch.setenv("TM_LEAK_MYSQL_PASSWORD", "from-file")
    monkeypatch.setenv("TM_LEAK_DORIS_PASSWORD", "from-file")
    monkeypatch.setenv("TIDEMARK_OVR_MYSQL_PORT", "3999")
    monkeypatch.setenv("TIDEMARK_OVR_MYSQL_PASSWORD", MYSQL_SECRET)
    monkeypatch.setenv("TIDEMARK_OVR_DORIS_PASSWORD", DORIS_SECRET)
    from cdc_core.config import load_pipeline

    definition = pipeline_resource(str(path), load_pipeline(path)).definition()
    assert definition.source.port == 3999
    assert definition.source.password.get_secret_value() == MYSQL_SECRET
    assert definition.sink.password.get_secret_value() == DORIS_SECRET
    assert leaks(repr(definition), secret_forms(MYSQL_SECRET, ()) | secret_forms(DORIS_SECRET, ())) == []
