"""Two machines, one pipeline: runs started at the same moment, and a run killed on one finished by the other.

Each "host" is a network namespace of the test's own (``tests/netns.py``: ``ip netns add``, a veth
pair into a bridge, its own loopback, address and hostname) and a working directory of its own with
its own ``HOME``, ``TMPDIR`` and ``DAGSTER_HOME`` (each holding docs/deploy.md's ``dagster.yaml`` on
one PostgreSQL database), its own copy of the pipeline file, and ``tidemark.state.url`` on another
PostgreSQL database; host_b's processes also run in a PID namespace of their own. What the two
share is what two machines on a LAN would, each at the bridge's address and nowhere else:
PostgreSQL (the machine's server, relayed from the bridge's port 5432), MySQL (a MariaDB of the
test's own), Doris (the stand-in, whose load redirects name the BE on the bridge) and a Spark
standalone master and worker started by the test, which the runs of the tests about Spark use (the
driver in the host's namespace, the executors connecting back to it at the host's address). The race is made
exact with the ``run.before_lease`` fault point's barrier: both processes reach the lease within
milliseconds of each other, however long their start took.

Every pair must end with one run that loaded and one that declined with one line (exit 1, no
traceback); after all of them Doris holds what MySQL holds — ``verify`` equal and the same row
counts in both tables (``items`` keyed, ``logs`` without a primary key).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psycopg2
import pytest
import requests

from devstack.mysql import MariaDBServer
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port, two_free_ports
from devstack.spark_cluster import SparkStandaloneCluster
from devstack.stack import DorisStandIn
from tests import netns, postgres
from tests.orchestration.test_e2e_dagster import _create_tables, _doris_count
from tests.orchestration.test_postgres_deploy import deploy_dagster_yaml

ROOT = Path(__file__).resolve().parents[2]
PAIRS = int(os.environ.get("TIDEMARK_TEST_RUN_PAIRS", "8"))
LEASE_TTL_S = 3


@pytest.fixture(scope="module")
def lan(tmp_path_factory):
    """The two hosts' namespaces on a bridge, and PostgreSQL relayed to the bridge's address."""
    why = netns.netns_usable()
    if why is not None:
        pytest.fail(f"the two-host test runs each host in a network namespace of its own, and {why}", pytrace=False)
    postgres.ensure_server()
    network = netns.Lan(("host_a", "host_b"))
    try:
        relay = netns.TcpForwarder(network.address, postgres.PORT, postgres.HOST, postgres.PORT)
        try:
            yield network
        finally:
            relay.close()
    finally:
        network.close()


@pytest.fixture(scope="module")
def mysql_server(lan, tmp_path_factory):
    """This module's MariaDB, on the bridge's address (the session's listens on the loopback)."""
    server = MariaDBServer(tmp_path_factory.mktemp("mariadb_lan"), port=free_port(lan.address), host=lan.address)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def doris_standin(lan, tmp_path_factory):
    """The Doris stand-in on the bridge's address: its 307 redirects name the BE there too."""
    fe_port, be_port = two_free_ports(lan.address)
    standin = DorisStandIn(tmp_path_factory.mktemp("doris_lan"), fe_port=fe_port, be_port=be_port, host=lan.address)
    standin.start()
    yield standin
    standin.stop()


@pytest.fixture(scope="module")
def spark_cluster(lan, tmp_path_factory):
    """A Spark standalone master and worker on the bridge's address, from the installed PySpark."""
    cluster = SparkStandaloneCluster(tmp_path_factory.mktemp("spark_lan"), host=lan.address, worker_cores=2,
                                     worker_memory="2g", master_port=free_port(lan.address),
                                     master_ui_port=free_port(lan.address), worker_ui_port=free_port(lan.address))
    cluster.start()
    yield cluster
    cluster.stop()


class Hosts:
    """Two working directories, each in a namespace of its own, set up as two machines sharing
    PostgreSQL, MySQL, Doris and the Spark cluster."""

    def __init__(self, tmp_path: Path, lan: netns.Lan, dagster_url: str, state_url: str, pipeline: dict):
        self.tmp_path = tmp_path
        self.lan = lan
        self.dagster_url = dagster_url  # as the test reaches it; the hosts at the bridge's address
        self.state_url = state_url
        self.dirs = {}
        for host in ("host_a", "host_b"):
            work = tmp_path / host
            (work / "home").mkdir(parents=True)
            (work / "tmp").mkdir()
            (work / "dagster_home").mkdir()
            (work / "dagster_home" / "dagster.yaml").write_text(deploy_dagster_yaml())
            address = lan.hosts[host].address
            options = {**pipeline["pipeline"], "tidemark.state.url": on_lan(state_url, lan),
                       # the driver runs in the host's namespace: it binds and advertises the host's
                       # address, which the executors (on the bridge) connect back to
                       "tidemark.spark.conf.spark.driver.host": address,
                       "tidemark.spark.conf.spark.driver.bindAddress": address}
            write_pipeline(work / "pipeline.yaml", state_dir=work / "state", **{**pipeline, "pipeline": options})
            self.dirs[host] = work
        self.barriers = 0

    def hostname(self, host: str) -> str:
        return self.lan.hosts[host].hostname

    def env(self, host: str, faults: dict | None = None) -> dict[str, str]:
        work = self.dirs[host]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(work / "home"), "TMPDIR": str(work / "tmp"),
               "DAGSTER_HOME": str(work / "dagster_home"), "DAGSTER_PG_URL": on_lan(self.dagster_url, self.lan)}
        # the test's own SPARK_LOCAL_IP is its loopback: the pipeline file's spark.driver.host says where
        for name in ("TIDEMARK_DAGSTER_HOME", "TIDEMARK_FAULTS", "TIDEMARK_LOG_FILE", "SPARK_LOCAL_IP"):
            env.pop(name, None)
        if faults:
            env["TIDEMARK_FAULTS"] = json.dumps(faults)
        return env

    def argv(self, host: str, *command: str) -> list[str]:
        """``command`` on ``host``: in its network namespace with its hostname; host_b's processes
        also in a PID namespace of their own (``unshare``), so that, as on another machine, they
        cannot see host_a's pids: a dead run of host_a is known to them only by its lease's expiry.
        host_a's command keeps the pid the test sees (nothing forks on the way)."""
        return self.lan.hosts[host].argv([sys.executable, "-m", "orchestration.cli", *command],
                                         own_pids=host == "host_b")

    def start(self, host: str, faults: dict | None = None, *args: str) -> subprocess.Popen:
        """``tidemark run --once`` on ``host``."""
        return subprocess.Popen(self.argv(host, "run", "pipeline.yaml", "--once", *args),
                                cwd=self.dirs[host], env=self.env(host, faults), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def start_pair(self) -> list[subprocess.Popen]:
        """Both hosts' ``tidemark run --once``, meeting at the lease at one moment."""
        self.barriers += 1
        barrier = {"run.before_lease": {"action": "barrier", "parties": 2,
                                        "dir": str(self.tmp_path / f"barrier{self.barriers}")}}
        return [self.start("host_a", barrier), self.start("host_b", barrier)]

    def assert_only_logs_on_disk(self) -> None:
        """No local disk in the path: with the instance and the state on PostgreSQL, what the runs
        left on each host is their logs (Tidemark's log file, Dagster's compute logs) — no state
        file, nothing in ``HOME`` or ``TMPDIR``."""
        for host, work in self.dirs.items():
            left = sorted(str(p.relative_to(work)) for p in work.rglob("*") if p.is_file())
            logs = [p for p in left if p.startswith(".tidemark/logs/")
                    or (p.startswith("dagster_home/storage/") and "/compute_logs/" in p)]
            assert sorted(set(left) - set(logs)) == ["dagster_home/dagster.yaml", "pipeline.yaml"], (host, left)

    def verify(self, host: str = "host_b", *args: str) -> dict:
        done = subprocess.run(self.argv(host, "verify", "pipeline.yaml", "--json", *args),
                              cwd=self.dirs[host], env=self.env(host), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return json.loads(done.stdout)


def on_lan(url: str, lan: netns.Lan) -> str:
    """A PostgreSQL URL of the machine's server as the hosts reach it: at the bridge's address."""
    return url.replace(f"@{postgres.HOST}:{postgres.PORT}/", f"@{lan.address}:{postgres.PORT}/")


def _finish(proc: subprocess.Popen) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def _change(root_conn, db: str, round_no: int) -> None:
    """Changes for the next run to apply from the binlog, in both tables."""
    base = 10_000 * (round_no + 1)
    with root_conn.cursor() as cur:
        cur.executemany(f"INSERT INTO `{db}`.items VALUES (%s,%s,%s,%s,%s)",
                        [(base + i, f"new {i}", i, 1, "2026-11-26 00:00:00") for i in range(40)])
        cur.execute(f"UPDATE `{db}`.items SET qty = qty + 1 WHERE id % 7 = {round_no % 7}")
        cur.execute(f"DELETE FROM `{db}`.items WHERE id BETWEEN {100 * round_no + 1} AND {100 * round_no + 20}")
        cur.executemany(f"INSERT INTO `{db}`.logs VALUES (%s,%s,%s)",
                        [(base + i, f"log {round_no}", "2026-11-26 00:00:00") for i in range(30)])


def _assert_doris_equals_mysql(hosts: Hosts, root_conn, db: str, fe: str) -> None:
    assert hosts.verify()["equal"]
    for table in ("items", "logs"):
        with root_conn.cursor() as cur:
            cur.execute(f"SELECT COUNT(*) FROM `{db}`.{table}")
            mysql_rows = cur.fetchone()[0]
        assert _doris_count(fe, db, table) == mysql_rows, table


@pytest.fixture
def on_spark() -> frozenset[str]:
    """Which loads go to the Spark cluster: ``snapshot`` (the pipeline names the cluster's master,
    so its snapshot runs on it whatever its size), ``binlog`` too (``spark-min-events: 0``). Empty:
    no Spark master, and these small loads stay off Spark (in the driver), as in the tests whose
    subject is the lease, not Spark."""
    return frozenset()


SNAPSHOT_ON_SPARK = frozenset({"snapshot"})
ALL_ON_SPARK = frozenset({"snapshot", "binlog"})


@pytest.fixture
def hosts(lan, mysql_server, root_conn, fresh_db, doris_standin, postgres_databases, on_spark, tmp_path, request):
    _create_tables(root_conn, fresh_db)
    state_url = postgres_databases()
    pipeline = dict(host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                    tables=f"{fresh_db}.\\.*", name=f"guard_{fresh_db}", server_id="5540-5544",
                    source={"scan.incremental.snapshot.chunk.size": 400,
                            "scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.logs:log_id"},
                    pipeline={"tidemark.run.lease-ttl-s": LEASE_TTL_S})
    if on_spark:  # the cluster starts with the first test that uses it
        pipeline["pipeline"]["tidemark.spark.master"] = request.getfixturevalue("spark_cluster").master_url
    if "binlog" in on_spark:
        pipeline["pipeline"]["tidemark.binlog.spark-min-events"] = 0
    return Hosts(tmp_path, lan, postgres_databases(), state_url, pipeline)


def _one_loaded_one_declined(results: list[tuple[int, str, str]], db: str) -> tuple[int, str]:
    """A pair's outcome: one run exit 0, the other exit 1 with its one line; the winner's index
    (0 host_a, 1 host_b) and its stderr."""
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 1], [(code, err[-2500:]) for code, _, err in results]
    winner = next(i for i, (code, _, _) in enumerate(results) if code == 0)
    won_err, lost_err = results[winner][2], results[1 - winner][2]
    assert "Traceback" not in won_err + lost_err, lost_err[-3000:]
    said = [line for line in lost_err.splitlines() if line.strip()]
    assert len(said) == 1, said  # the one line, nothing else
    assert said[0].startswith(f"tidemark run guard_{db}: another run of pipeline 'guard_{db}' holds "
                              "all of it: tidemark run --once on "), said
    assert "this run wrote nothing" in said[0]
    return winner, won_err


def _spark_apps(cluster: SparkStandaloneCluster, name: str) -> list[dict]:
    """The applications of pipeline ``name`` the standalone master has seen finish (its UI's JSON)."""
    state = requests.get(f"http://{cluster.host}:{cluster.master_ui_port}/json/", timeout=10).json()
    return [app for app in state.get("completedapps", []) if name in app.get("name", "")]


@pytest.mark.parametrize("on_spark", [pytest.param(SNAPSHOT_ON_SPARK, id="snapshot-on-spark"),
                                      pytest.param(ALL_ON_SPARK, id="all-on-spark", marks=pytest.mark.slow)])
def test_a_snapshot_on_one_host_the_stream_on_the_other_and_two_runs_at_once(on_spark, hosts, root_conn, fresh_db,
                                                                            doris_standin, spark_cluster):
    """The short two-host run: host_a loads the snapshot on the Spark cluster; changes follow in
    MySQL and both hosts start ``tidemark run --once`` at the same moment: one streams them, the other
    declines with one line and writes nothing; when the one that streamed was host_a, more changes
    follow and host_b streams them, so the stream always comes from the host that did not snapshot.
    Nothing is doubled: ``verify`` equal, the same row counts (``logs`` has no primary key: a batch
    loaded twice would show), no lease left. The slow variant loads the stream's batches on the
    cluster too, so both hosts' drivers (one in a PID namespace of its own) run jobs on it.

    The pair meets at the stream, not at the snapshot: ``tidemark run`` starts Spark for a snapshot
    before it takes the lease (``orchestration/cli/spark_prestart.py``), so a run that declines a
    snapshot on Spark has a JVM's lines on its stderr besides its own."""
    code, _, err = _finish(hosts.start("host_a"))
    assert code == 0 and "chunks loaded" in err, err[-3000:]
    _change(root_conn, fresh_db, 1)
    winner, won_err = _one_loaded_one_declined([_finish(p) for p in hosts.start_pair()], fresh_db)
    assert "batch" in won_err, won_err[-3000:]
    streams = 1
    if winner == 0:
        _change(root_conn, fresh_db, 2)
        code, _, err = _finish(hosts.start("host_b"))
        assert code == 0, err[-3000:]
        assert "Traceback" not in err and "batch" in err, err[-3000:]
        streams = 2
    # the runs' jobs ran on the cluster: executors on the bridge connected back to the driver in
    # the host's namespace
    assert len(_spark_apps(spark_cluster, f"guard_{fresh_db}")) == 1 + (streams if "binlog" in on_spark else 0)
    with psycopg2.connect(hosts.state_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM kv WHERE namespace = 'lease'")
        assert cur.fetchone()[0] == 0
    _assert_doris_equals_mysql(hosts, root_conn, fresh_db, doris_standin.fe_http)
    hosts.assert_only_logs_on_disk()


@pytest.mark.slow
@pytest.mark.parametrize("pairs", [PAIRS])
def test_two_runs_started_at_the_same_moment_on_two_hosts_one_loads_one_declines(pairs, hosts, root_conn, fresh_db,
                                                                                doris_standin):
    for round_no in range(pairs):
        if round_no:
            _change(root_conn, fresh_db, round_no)
        _, won_err = _one_loaded_one_declined([_finish(p) for p in hosts.start_pair()], fresh_db)
        assert ("chunks loaded" in won_err) if round_no == 0 else ("batch" in won_err), won_err[-3000:]
    # no lease left behind by either
    with psycopg2.connect(hosts.state_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM kv WHERE namespace = 'lease'")
        assert cur.fetchone()[0] == 0
    _assert_doris_equals_mysql(hosts, root_conn, fresh_db, doris_standin.fe_http)
    hosts.assert_only_logs_on_disk()


# Where the run is killed, what it leaves, and the lease scopes its process held then.
KILLS = {
    # a binlog batch's loads precommitted in Doris and recorded PREPARED: the taker commits it
    "binlog.after_state_write": ("batches", "PREPARED", ["pipeline", "stream"]),
    # loads precommitted, the batch still RUNNING: the taker aborts them by label and reads the range again
    "binlog.after_loads": ("batches", "RUNNING", ["pipeline", "stream"]),
    # the batch committed in Doris, the offset not moved yet: the taker's commit finds it done
    "binlog.committing": ("batches", "PREPARED", ["pipeline", "stream"]),
    # snapshot chunks recorded PREPARED mid-snapshot: the taker commits them and loads the rest
    "snapshot.after_state_write": ("chunks", "PREPARED", ["pipeline", "snapshot:{db}.items", "snapshot:{db}.logs"]),
}


@pytest.mark.parametrize("point, on_spark", [
    # slow (suite time): the default suite's two-host test is the short one above
    pytest.param("binlog.after_state_write", frozenset(), marks=pytest.mark.slow),
    # slow: every load of both hosts on the cluster, the killed run's driver too
    *(pytest.param(p, ALL_ON_SPARK, marks=pytest.mark.slow, id=f"{p}-all-on-spark") for p in KILLS)])
def test_a_run_killed_on_one_host_is_finished_by_the_other(point, on_spark, hosts, root_conn, fresh_db,
                                                           doris_standin):
    """A ``kill -9`` with work prepared in Doris and not committed: the dead run's lease stays until
    it expires; the next run on the other host sees the heartbeat expired, takes the lease over,
    resolves the dead run's work (commits what was complete, aborts the rest), marks its Dagster run
    failed and goes on; nothing doubled."""
    table, status, scopes = KILLS[point]
    if table == "batches":
        first = _finish(hosts.start("host_a"))
        assert first[0] == 0, first[2][-3000:]
        _change(root_conn, fresh_db, 1)
    killed = hosts.start("host_a", {point: {"action": "kill"}})
    code, _, err = _finish(killed)
    assert code == -signal.SIGKILL, err[-3000:]
    with psycopg2.connect(hosts.state_url) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {table} WHERE status = %s", (status,))
        assert cur.fetchone()[0] >= 1  # the dead run's work, precommitted in Doris
        cur.execute("SELECT value FROM kv WHERE namespace = 'lease'")
        leases = [json.loads(v) for (v,) in cur.fetchall()]
        # the command's lease on the whole pipeline, and its job's on the stream or the table
        assert sorted(lease["scope"] for lease in leases) == [s.format(db=fresh_db) for s in scopes], leases
        assert {lease["pid"] for lease in leases} == {killed.pid}
        job_lease = next(lease for lease in leases if lease["scope"] != "pipeline")
    time.sleep(LEASE_TTL_S + 0.5)  # its heartbeat stopped with it: the lease has expired
    code, _, err = _finish(hosts.start("host_b"))
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    assert f"an earlier run is gone (tidemark run --once on {hosts.hostname('host_a')}, pid {killed.pid}" in err, err[-3000:]
    with psycopg2.connect(hosts.state_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM batches WHERE status IN ('PREPARED', 'RUNNING')")
        assert cur.fetchone()[0] == 0
        cur.execute("SELECT count(*) FROM chunks WHERE status != 'COMMITTED'")
        assert cur.fetchone()[0] == 0
    # the dead run's job, left executing in Dagster's run storage, is marked failed by the taker
    with psycopg2.connect(hosts.dagster_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT run_id FROM runs WHERE status = 'FAILURE'")
        failed = {r for (r,) in cur.fetchall()}
        cur.execute("SELECT run_id FROM event_logs WHERE dagster_event_type = 'PIPELINE_FAILURE' "
                    "AND event LIKE '%stopped renewing its lease on the pipeline%'")
        assert {r for (r,) in cur.fetchall()} == {job_lease["run_id"]} <= failed
        cur.execute("SELECT count(*) FROM runs WHERE status IN ('STARTED', 'STARTING', 'QUEUED', 'NOT_STARTED')")
        assert cur.fetchone()[0] == 0
    _assert_doris_equals_mysql(hosts, root_conn, fresh_db, doris_standin.fe_http)


def test_a_dagster_run_that_died_before_its_lease_does_not_block_the_other_host(hosts, root_conn, fresh_db,
                                                                               doris_standin):
    """A run killed in its resource setup, before any step took a lease, stays STARTED in Dagster's
    run storage with no lease to expire. The other host (another PID namespace: it cannot see the pid)
    marks it failed with one line once it has been silent for longer than the lease's time to live,
    and runs; nothing needs a hand edit in the UI."""
    killed = hosts.start("host_a", {"run.resource_setup": {"action": "kill"}})
    code, _, err = _finish(killed)
    assert code == -signal.SIGKILL, err[-3000:]
    with psycopg2.connect(hosts.dagster_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT run_id FROM runs WHERE status IN ('STARTED', 'STARTING')")
        stuck = [r for (r,) in cur.fetchall()]
    assert len(stuck) == 1
    with psycopg2.connect(hosts.state_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT value FROM kv WHERE namespace = 'lease'")
        leases = [json.loads(v) for (v,) in cur.fetchall()]
    assert [lease["run_id"] for lease in leases] == [None]  # the command's lease only; the run took none
    time.sleep(LEASE_TTL_S + 0.5)
    code, _, err = _finish(hosts.start("host_b"))
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    flat = " ".join(err.split())  # rich wraps the line at the terminal's width
    assert flat.count("died before taking a lease; marked it failed") == 1, err[-3000:]
    assert f"guard_{fresh_db}: run {stuck[0][:8]} (" in flat, flat[-3000:]
    assert f"pid {killed.pid} on " in flat and "with no lease and nothing logged for" in flat, flat[-3000:]
    with psycopg2.connect(hosts.dagster_url) as conn, conn.cursor() as cur:
        cur.execute("SELECT status FROM runs WHERE run_id = %s", (stuck[0],))
        assert cur.fetchone()[0] == "FAILURE"
        cur.execute("SELECT count(*) FROM runs WHERE status IN ('STARTED', 'STARTING', 'QUEUED', 'NOT_STARTED')")
        assert cur.fetchone()[0] == 0
    _assert_doris_equals_mysql(hosts, root_conn, fresh_db, doris_standin.fe_http)
