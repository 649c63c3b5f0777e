"""Two machines, one pipeline: runs started at the same moment, and a run killed on one finished by the other.

Each "host" is a working directory of its own with its own ``HOME``, ``TMPDIR`` and ``DAGSTER_HOME``
(each holding docs/deploy.md's ``dagster.yaml`` on one PostgreSQL database), its own copy of the
pipeline file, and ``tidemark.state.url`` on another PostgreSQL database; host_b's processes run in a
PID namespace of their own. What the two share is PostgreSQL, MySQL and Doris, as two machines would. The race is made exact with the ``run.before_lease`` fault
point's barrier: both processes reach the lease within milliseconds of each other, however long
their start took.

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

from devstack.pipeline_file import write_pipeline
from tests.orchestration.test_e2e_dagster import _create_tables, _doris_count, doris_standin  # noqa: F401
from tests.orchestration.test_postgres_deploy import deploy_dagster_yaml

ROOT = Path(__file__).resolve().parents[2]
PAIRS = int(os.environ.get("TIDEMARK_TEST_RUN_PAIRS", "2"))
LEASE_TTL_S = 3


class Hosts:
    """Two working directories set up as two machines sharing PostgreSQL, MySQL and Doris."""

    def __init__(self, tmp_path: Path, dagster_url: str, state_url: str, pipeline: dict):
        self.tmp_path = tmp_path
        self.dagster_url = dagster_url
        self.state_url = state_url
        self.dirs = {}
        for host in ("host_a", "host_b"):
            work = tmp_path / host
            (work / "home").mkdir(parents=True)
            (work / "tmp").mkdir()
            (work / "dagster_home").mkdir()
            (work / "dagster_home" / "dagster.yaml").write_text(deploy_dagster_yaml())
            write_pipeline(work / "pipeline.yaml", state_dir=work / "state", **pipeline)
            self.dirs[host] = work
        self.barriers = 0

    def env(self, host: str, faults: dict | None = None) -> dict[str, str]:
        work = self.dirs[host]
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(work / "home"), "TMPDIR": str(work / "tmp"),
               "DAGSTER_HOME": str(work / "dagster_home"), "DAGSTER_PG_URL": self.dagster_url}
        for name in ("TIDEMARK_DAGSTER_HOME", "TIDEMARK_FAULTS", "TIDEMARK_LOG_FILE"):
            env.pop(name, None)
        if faults:
            env["TIDEMARK_FAULTS"] = json.dumps(faults)
        return env

    def start(self, host: str, faults: dict | None = None, *args: str) -> subprocess.Popen:
        """``tidemark run --once`` on ``host``; host_b's processes live in a PID namespace of their own
        (``unshare``), so that, as on another machine, they cannot see host_a's pids: a dead run of
        host_a is known to them only by its lease's expiry."""
        work = self.dirs[host]
        isolate = ["unshare", "--pid", "--fork", "--mount-proc"] if host == "host_b" else []
        return subprocess.Popen([*isolate, sys.executable, "-m", "orchestration.cli", "run", "pipeline.yaml", "--once",
                                 *args],
                                cwd=work, env=self.env(host, faults), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

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

    def verify(self, host: str = "host_b") -> dict:
        done = subprocess.run([sys.executable, "-m", "orchestration.cli", "verify", "pipeline.yaml", "--json"],
                              cwd=self.dirs[host], env=self.env(host), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        return json.loads(done.stdout)


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
def hosts(mysql_server, root_conn, fresh_db, doris_standin, postgres_databases, tmp_path):  # noqa: F811
    _create_tables(root_conn, fresh_db)
    state_url = postgres_databases()
    pipeline = dict(host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                    tables=f"{fresh_db}.\\.*", name=f"guard_{fresh_db}", server_id="5540-5544",
                    source={"scan.incremental.snapshot.chunk.size": 400,
                            "scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.logs:log_id"},
                    pipeline={"tidemark.state.url": state_url, "tidemark.run.lease-ttl-s": LEASE_TTL_S})
    return Hosts(tmp_path, postgres_databases(), state_url, pipeline)


@pytest.mark.parametrize("pairs", [PAIRS, pytest.param(8, marks=pytest.mark.slow)])
def test_two_runs_started_at_the_same_moment_on_two_hosts_one_loads_one_declines(pairs, hosts, root_conn, fresh_db,
                                                                                doris_standin):  # noqa: F811
    for round_no in range(pairs):
        if round_no:
            _change(root_conn, fresh_db, round_no)
        results = [_finish(p) for p in hosts.start_pair()]
        codes = sorted(code for code, _, _ in results)
        assert codes == [0, 1], [(code, err[-2500:]) for code, _, err in results]
        (won, _, won_err), (lost, _, lost_err) = sorted(results, key=lambda r: r[0])
        assert "Traceback" not in won_err + lost_err, lost_err[-3000:]
        said = [line for line in lost_err.splitlines() if line.strip()]
        assert len(said) == 1, said  # the one line, nothing else
        assert said[0].startswith(f"tidemark run guard_{fresh_db}: another run of pipeline 'guard_{fresh_db}' holds "
                                  "all of it: tidemark run --once on "), said
        assert "this run wrote nothing" in said[0]
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


@pytest.mark.parametrize("point", ["binlog.after_state_write",
                                   *(pytest.param(p, marks=pytest.mark.slow) for p in KILLS
                                     if p != "binlog.after_state_write")])
def test_a_run_killed_on_one_host_is_finished_by_the_other(point, hosts, root_conn, fresh_db,
                                                           doris_standin):  # noqa: F811
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
    assert f"an earlier run is gone (tidemark run --once on {os.uname().nodename}, pid {killed.pid}" in err, err[-3000:]
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
                                                                               doris_standin):  # noqa: F811
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
