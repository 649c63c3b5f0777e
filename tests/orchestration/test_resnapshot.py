"""A purged binlog heals: ``tidemark resnapshot`` and ``tidemark.binlog.on-purged: resnapshot`` (issue 28).

Rows are updated, deleted and inserted while the pipeline is down, and the binlog holding those
changes is purged. ``tidemark run --once`` must stop and name ``tidemark resnapshot``; after it (or
unattended, with ``on-purged: resnapshot``) Doris equals MySQL, the rows deleted in the gap
included, and the stream goes on with later writes. The module runs its own MariaDB: purging the
session's server would pull the binlog from under other tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest

from cdc_core.model.offsets import BinlogOffset
from devstack.mysql import MariaDBServer
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port
from orchestration.cli import tidemark as cli
from tests.schema.helpers import assert_rows_match, sql

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def purge_server(tmp_path_factory):
    server = MariaDBServer(tmp_path_factory.mktemp("purge-mariadb"), port=free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def purge_conn(purge_server):
    conn = pymysql.connect(unix_socket=purge_server.endpoint.root_socket, user="root", autocommit=True,
                           charset="utf8mb4")
    yield conn
    conn.close()


def _current(conn) -> BinlogOffset:
    with conn.cursor() as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    return BinlogOffset(row[0], int(row[1]))


def _purge_all_but_newest(server: MariaDBServer, gone: str) -> None:
    """Rotate the binlog and purge every older file (``gone`` must no longer be on the server)."""
    assert gone not in server.purge_binary_logs_to(server.flush_binary_logs(1))


def _setup(conn, db: str) -> None:
    sql(conn, f"CREATE DATABASE `{db}`",
        f"CREATE TABLE `{db}`.items (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT NOT NULL)",
        f"CREATE TABLE `{db}`.notes (id BIGINT NOT NULL PRIMARY KEY, body TEXT)")
    with conn.cursor() as cur:
        cur.executemany(f"INSERT INTO `{db}`.items VALUES (%s, %s, %s)", [(i, f"item {i}", i % 9) for i in range(1, 601)])
        cur.executemany(f"INSERT INTO `{db}`.notes VALUES (%s, %s)", [(i, f"note {i}") for i in range(1, 121)])


def _gap_changes(conn, db: str) -> None:
    """Changes while the pipeline is down; their binlog is purged afterwards."""
    sql(conn, f"DELETE FROM `{db}`.items WHERE id BETWEEN 100 AND 180",
        f"DELETE FROM `{db}`.items WHERE id > 590",
        f"UPDATE `{db}`.items SET qty = qty + 1000, name = 'gap update' WHERE id BETWEEN 300 AND 320",
        f"INSERT INTO `{db}`.items VALUES (1000, 'gap insert', 1), (1001, 'gap insert', 2)",
        f"DELETE FROM `{db}`.notes WHERE id % 10 = 0",
        f"INSERT INTO `{db}`.notes VALUES (5000, 'gap note')")


def _later_changes(conn, db: str) -> None:
    sql(conn, f"INSERT INTO `{db}`.items VALUES (2000, 'after', 3)",
        f"UPDATE `{db}`.items SET qty = -1 WHERE id IN (1, 1000)",
        f"DELETE FROM `{db}`.items WHERE id = 2",
        f"INSERT INTO `{db}`.items VALUES (150, 'back after gap', 4)",
        f"DELETE FROM `{db}`.notes WHERE id = 1")


def _assert_equal(conn, standin, path: Path, db: str) -> None:
    assert cli.main(["verify", str(path)]) == 0
    for table in ("items", "notes"):
        assert_rows_match(standin, conn, db, table)


def _pipeline(tmp_path: Path, server, standin, db: str, **pipeline) -> tuple[Path, dict[str, str]]:
    path = tmp_path / f"{db}.yaml"
    write_pipeline(path, host=server.endpoint.host, port=server.endpoint.port, fe=standin.fe_http,
                   tables=f"{db}.\\.*", name=f"purge_{db}", state_dir=tmp_path / "state", server_id="5700-5709",
                   source={"scan.incremental.snapshot.chunk.size": 100}, pipeline=pipeline or None)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    env.pop("TIDEMARK_FAULTS", None)
    return path, env


def _tidemark(env: dict[str, str], *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestration.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow  # ~50 s; the default suite keeps its path's other cases (issue 30: under 30 minutes)
def test_purge_stops_the_run_and_resnapshot_heals_even_after_a_crash(purge_server, purge_conn, doris_standin,
                                                                     tmp_path):
    db = "purged_cli"
    _setup(purge_conn, db)
    path, env = _pipeline(tmp_path, purge_server, doris_standin, db)
    first = _tidemark(env, "run", str(path), "--once")
    assert first.returncode == 0, first.stderr[-3000:]
    committed = _current(purge_conn)

    _gap_changes(purge_conn, db)
    _purge_all_but_newest(purge_server, committed.file)

    stopped = _tidemark(env, "run", str(path), "--once")
    assert stopped.returncode != 0
    assert "purged" in stopped.stderr and "tidemark resnapshot" in stopped.stderr, stopped.stderr[-3000:]

    # killed right after marking the tables: a plain re-run continues that resnapshot
    crash = {**env, "TIDEMARK_FAULTS": json.dumps({"resnapshot.after_request": {"action": "kill"}})}
    killed = _tidemark(crash, "resnapshot", str(path))
    assert killed.returncode == -9, killed.stderr[-3000:]
    healed = _tidemark(env, "resnapshot", str(path))
    assert healed.returncode == 0, healed.stderr[-3000:]
    assert "continued" in healed.stderr
    _assert_equal(purge_conn, doris_standin, path, db)

    _later_changes(purge_conn, db)
    later = _tidemark(env, "run", str(path), "--once")
    assert later.returncode == 0, later.stderr[-3000:]
    _assert_equal(purge_conn, doris_standin, path, db)

    # one table again while the stream is fine: the stream keeps its offset and goes on
    sql(purge_conn, "SET SESSION sql_log_bin = 0", f"DELETE FROM `{db}`.notes WHERE id = 3",
        "SET SESSION sql_log_bin = 1", f"INSERT INTO `{db}`.notes VALUES (6000, 'after the table resnapshot')")
    one = _tidemark(env, "resnapshot", str(path), "--table", f"{db}.notes")
    assert one.returncode == 0, one.stderr[-3000:]
    assert "1 table(s)" in one.stderr
    _assert_equal(purge_conn, doris_standin, path, db)


def test_on_purged_resnapshot_heals_unattended(purge_server, purge_conn, doris_standin, tmp_path):
    db = "purged_auto"
    _setup(purge_conn, db)
    path, env = _pipeline(tmp_path, purge_server, doris_standin, db, **{"tidemark.binlog.on-purged": "resnapshot"})
    first = _tidemark(env, "run", str(path), "--once")
    assert first.returncode == 0, first.stderr[-3000:]
    committed = _current(purge_conn)

    _gap_changes(purge_conn, db)
    _purge_all_but_newest(purge_server, committed.file)
    sql(purge_conn, f"INSERT INTO `{db}`.items VALUES (3000, 'after the purge', 5)")

    healed = _tidemark(env, "run", str(path), "--once")
    assert healed.returncode == 0, healed.stderr[-3000:]
    _assert_equal(purge_conn, doris_standin, path, db)

    _later_changes(purge_conn, db)
    later = _tidemark(env, "run", str(path), "--once")
    assert later.returncode == 0, later.stderr[-3000:]
    _assert_equal(purge_conn, doris_standin, path, db)



def _drift_pipeline(purge_server, purge_conn, doris_standin, tmp_path, db):
    _setup(purge_conn, db)
    path, env = _pipeline(tmp_path, purge_server, doris_standin, db, **{"tidemark.binlog.on-purged": "resnapshot"})
    first = _tidemark(env, "run", str(path), "--once")
    assert first.returncode == 0, first.stderr[-3000:]
    return path, env


@pytest.mark.slow  # ~70 s: a purge over a DDL, healed
def test_schema_changes_in_the_purged_range_are_carried_over(purge_server, purge_conn, doris_standin, tmp_path):
    """Found by the soak (tests/soak/): a DDL whose binlog was purged never reaches the stream, so the
    resnapshot must carry it over itself (cdc_core/pipeline/purged_schemas.py), else the re-read
    chunks leave the new columns out of Doris and every later batch of the table fails on a column
    the schema history lacks (SchemaHistoryMismatchError): the pipeline is wedged. Here the DDLs
    (a column added, one dropped and one added) are made while the pipeline is down."""
    db = "purged_ddl"
    path, env = _drift_pipeline(purge_server, purge_conn, doris_standin, tmp_path, db)
    committed = _current(purge_conn)
    sql(purge_conn, f"ALTER TABLE `{db}`.items ADD COLUMN tag VARCHAR(12) NULL",
        f"UPDATE `{db}`.items SET tag = CONCAT('t', id % 4) WHERE id % 3 = 0",
        f"ALTER TABLE `{db}`.notes DROP COLUMN body, ADD COLUMN score INT NOT NULL DEFAULT 7")
    _purge_all_but_newest(purge_server, committed.file)
    sql(purge_conn, f"UPDATE `{db}`.items SET tag = 'after', qty = qty + 1 WHERE id <= 40",
        f"INSERT INTO `{db}`.notes VALUES (7000, 8)")
    healed = _tidemark(env, "run", str(path), "--once")
    assert healed.returncode == 0, healed.stderr[-3000:]
    assert "schemas changed in the purged binlog range" in healed.stderr, healed.stderr[-3000:]
    _assert_equal(purge_conn, doris_standin, path, db)
    sql(purge_conn, f"UPDATE `{db}`.items SET tag = 'streamed' WHERE id BETWEEN 41 AND 60",
        f"UPDATE `{db}`.notes SET score = 9 WHERE id < 10")
    later = _tidemark(env, "run", str(path), "--once")
    assert later.returncode == 0, later.stderr[-3000:]
    _assert_equal(purge_conn, doris_standin, path, db)


@pytest.mark.slow
def test_an_unfinished_schema_change_before_the_purge_is_superseded(purge_server, purge_conn, doris_standin,
                                                                     tmp_path):
    """The soak's case exactly: a DDL the stream stopped before, its schema change killed after its
    first step (the stream paused, the request unfinished), then the binlog purged. The heal drops
    the request (its DDL is in the purged range), carries the schema over and the stream goes on."""
    db = "purged_sc"
    path, env = _drift_pipeline(purge_server, purge_conn, doris_standin, tmp_path, db)
    sql(purge_conn, f"UPDATE `{db}`.items SET qty = 0 WHERE id = 1",
        f"ALTER TABLE `{db}`.items ADD COLUMN grade INT NULL", f"UPDATE `{db}`.items SET grade = id WHERE id < 90")
    crash = {**env, "TIDEMARK_FAULTS": json.dumps({"schema_change.after_quiesce": {"action": "kill"}})}
    killed = _tidemark(crash, "run", str(path), "--once")
    assert killed.returncode == -9, killed.stderr[-3000:]
    _purge_all_but_newest(purge_server, _current(purge_conn).file)
    sql(purge_conn, f"UPDATE `{db}`.items SET grade = -1 WHERE id >= 550")
    again = _tidemark(env, "run", str(path), "--once")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "left unfinished before the binlog was purged" in again.stderr, again.stderr[-3000:]
    _assert_equal(purge_conn, doris_standin, path, db)
    sql(purge_conn, f"UPDATE `{db}`.items SET grade = 5 WHERE id = 7")
    last = _tidemark(env, "run", str(path), "--once")
    assert last.returncode == 0, last.stderr[-3000:]
    _assert_equal(purge_conn, doris_standin, path, db)


@pytest.mark.slow  # ~30 s of waiting for the binlog; the RELOAD checks stay in tests/snapshot/test_server_check.py
def test_a_resnapshot_without_reload_needs_the_binlog_to_move(purge_server, purge_conn, doris_standin, tmp_path):
    """A CDC user without RELOAD cannot rotate the binlog. On an idle server the resnapshot then
    refuses, with the grant to give and nothing marked (its re-read rows could tie with the stale
    ones, and a row deleted without binlog would stay in Doris); when the server's own writes move
    the binlog meanwhile, that does as well and the resnapshot heals."""
    import threading

    from cdc_core.config import load_pipeline
    from cdc_core.state import ChunkStatus
    from cdc_core.state.keys import RELOAD_REQUESTS
    from jobs.spark_executor import spark_service

    db = "resnapshot_noreload"
    _setup(purge_conn, db)
    sql(purge_conn, "CREATE USER IF NOT EXISTS 'noreload'@'%' IDENTIFIED BY 'noreload-pass'",
        "GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT ON *.* TO 'noreload'@'%'",
        "CREATE DATABASE IF NOT EXISTS elsewhere", "CREATE TABLE IF NOT EXISTS elsewhere.ticks (n INT)")
    path = tmp_path / f"{db}.yaml"
    write_pipeline(path, host=purge_server.endpoint.host, port=purge_server.endpoint.port, fe=doris_standin.fe_http,
                   tables=f"{db}.\\.*", name=f"purge_{db}", state_dir=tmp_path / "state", server_id="5700-5709",
                   source={"username": "noreload", "password": "noreload-pass",
                           "scan.incremental.snapshot.chunk.size": 100})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    env.pop("TIDEMARK_FAULTS", None)
    try:
        first = _tidemark(env, "run", str(path), "--once")
        assert first.returncode == 0, first.stderr[-3000:]
        sql(purge_conn, "SET SESSION sql_log_bin = 0", f"DELETE FROM `{db}`.items WHERE id BETWEEN 10 AND 20",
            f"UPDATE `{db}`.notes SET body = 'fixed quietly' WHERE id < 30", "SET SESSION sql_log_bin = 1")

        refused = _tidemark(env, "resnapshot", str(path))  # nothing else writes: the binlog stands still
        assert refused.returncode == 1, refused.stderr[-3000:]
        said = [line for line in refused.stderr.splitlines() if line.startswith("tidemark resnapshot")]
        assert len(said) == 1 and "GRANT RELOAD ON *.* TO 'noreload'@" in said[0], refused.stderr[-3000:]
        service = spark_service(load_pipeline(path))
        try:
            with service.store.transaction(readonly=True) as tx:
                assert RELOAD_REQUESTS.items(tx) == [] and {c.status for c in tx.chunks()} == {ChunkStatus.COMMITTED}
        finally:
            service.close()

        stop = threading.Event()

        def tick() -> None:  # another application's writes, elsewhere on the server
            conn = pymysql.connect(unix_socket=purge_server.endpoint.root_socket, user="root", autocommit=True)
            try:
                while not stop.wait(0.3):
                    with conn.cursor() as cur:
                        cur.execute("INSERT INTO elsewhere.ticks VALUES (1)")
            finally:
                conn.close()

        writer = threading.Thread(target=tick, daemon=True)
        writer.start()
        try:
            healed = _tidemark(env, "resnapshot", str(path))
        finally:
            stop.set()
            writer.join(10)
        assert healed.returncode == 0, healed.stderr[-3000:]
        _assert_equal(purge_conn, doris_standin, path, db)
    finally:
        sql(purge_conn, "DROP USER IF EXISTS 'noreload'@'%'", "DROP DATABASE IF EXISTS elsewhere")
