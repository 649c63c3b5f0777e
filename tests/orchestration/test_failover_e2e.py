"""Failover by GTID, as an operator does it: a MariaDB primary and a GTID replica with
``log_slave_updates`` whose binlog files are named and numbered unlike the primary's; the pipeline
runs against the primary, the primary stops, the replica is promoted and written to, the pipeline
file's ``port`` is pointed at it, and ``tidemark run --once`` carries on. Doris is compared with
MySQL from outside (the stand-in's SQL API against a SELECT on the promoted server).

And the refusal: a replica that stopped replicating before the pipeline's last batch lacks
committed GTIDs; the run exits non-zero naming both positions and applies nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pymysql
import pytest

from cdc_core.config import load_pipeline
from cdc_core.state.keys import COMMITTED_OFFSET
from devstack.mysql import MariaDBServer
from devstack.mysql_replica import MariaDBReplica
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port
from jobs.spark_executor import spark_service
from orchestration.defs.schema_change_job import SchemaChangeConfig, run_config_for
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401
from tests.schema.helpers import doris_columns, doris_rows

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["id", "qty", "note"]


def _sql(server: MariaDBServer, db: str, *statements: str) -> None:
    conn = pymysql.connect(unix_socket=server.endpoint.root_socket, user="root", autocommit=True)
    try:
        with conn.cursor() as cur:
            cur.execute(f"USE `{db}`")
            for s in statements:
                cur.execute(s)
    finally:
        conn.close()


def _mysql_rows(server: MariaDBServer, db: str) -> list[tuple]:
    conn = pymysql.connect(unix_socket=server.endpoint.root_socket, user="root")
    try:
        with conn.cursor() as cur:
            cur.execute(f"SELECT id, qty, note FROM `{db}`.items ORDER BY id")
            return [tuple(str(v) if v is not None else None for v in r) for r in cur.fetchall()]
    finally:
        conn.close()


def _doris_rows(standin, db: str) -> list[tuple]:
    return [tuple(str(v) if v is not None else None for v in r) for r in doris_rows(standin, db, "items", COLUMNS)]


class Pipeline:
    """One pipeline file and its Dagster home; ``point_at`` rewrites the source's port."""

    def __init__(self, tmp_path: Path, standin, name: str, db: str, options: dict | None = None):
        self.db, self.options = db, options
        self.path = tmp_path / f"{name}.yaml"
        self.tmp_path, self.standin, self.name = tmp_path, standin, name
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
        self.env.pop("TIDEMARK_FAULTS", None)

    def point_at(self, server: MariaDBServer) -> None:
        write_pipeline(self.path, host=server.endpoint.host, port=server.endpoint.port, fe=self.standin.fe_http,
                       tables=f"{self.db}.items", name=self.name, state_dir=self.tmp_path / "state", server_id="5700-5704",
                       source={"scan.incremental.snapshot.chunk.size": 100}, pipeline=self.options)

    def run_once(self) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(self.path), "--once"], cwd=ROOT,
                              env=self.env, capture_output=True, text=True, timeout=600)

    def committed(self):
        service = spark_service(load_pipeline(self.path))
        try:
            return COMMITTED_OFFSET.get(service.store)
        finally:
            service.close()


def _primary(tmp_path: Path, mariadb_servers, flushes: int, db: str) -> MariaDBServer:
    primary = mariadb_servers(MariaDBServer, tmp_path / "primary", port=free_port())
    primary.start()
    primary.root_sql(f"CREATE DATABASE `{db}`")
    _sql(primary, db,
         "CREATE TABLE items (id INT PRIMARY KEY, qty INT NOT NULL, note VARCHAR(40))",
         "INSERT INTO items SELECT seq, seq % 7, CONCAT('row ', seq) FROM seq_1_to_400")
    if flushes:
        primary.flush_binary_logs(flushes)
    return primary


@pytest.mark.parametrize(("numbering", "flushes", "basename", "min_index"), [
    ("lower", 5, "replica-bin", 1),  # primary at binlog.000006+, the replica at replica-bin.000001
    # the same base name, numbered past the primary's: its files 1..9 exist too (slow: ~30 s more)
    pytest.param("higher", 0, "binlog", 9, marks=pytest.mark.slow),
])
def test_failover_to_a_promoted_replica_applies_every_change_once(numbering, flushes, basename, min_index, tmp_path,
                                                                  mariadb_servers, doris_standin):  # noqa: F811
    db = f"failover_{numbering}"  # the Doris stand-in is shared by the module's tests
    primary = _primary(tmp_path, mariadb_servers, flushes, db)
    replica = mariadb_servers(MariaDBReplica, tmp_path / "replica", primary, port=free_port(), binlog_basename=basename,
                      min_binlog_index=min_index)
    replica.start()
    pipeline = Pipeline(tmp_path, doris_standin, f"failover_{numbering}", db)
    pipeline.point_at(primary)
    first = pipeline.run_once()  # the snapshot
    assert first.returncode == 0, first.stderr[-3000:]
    _sql(primary, db, "UPDATE items SET qty = qty + 100 WHERE id <= 50",
         "DELETE FROM items WHERE id BETWEEN 390 AND 400",
         "INSERT INTO items VALUES (1001, 1, 'primary, streamed')")
    second = pipeline.run_once()  # a binlog batch committed on the primary
    assert second.returncode == 0, second.stderr[-3000:]
    on_primary = pipeline.committed()
    assert on_primary is not None and on_primary.server == "server_id=1" and on_primary.gtid_set.startswith("0-1-")
    # written on the primary after the pipeline's last batch, before the switch
    _sql(primary, db, "UPDATE items SET note = 'primary, late' WHERE id BETWEEN 100 AND 160",
         "DELETE FROM items WHERE id BETWEEN 200 AND 210",
         "INSERT INTO items VALUES (1002, 2, 'primary, late')")
    replica.wait_caught_up(60)
    primary.stop()
    replica.promote()
    _sql(replica, db, "UPDATE items SET qty = qty * 3 WHERE id BETWEEN 120 AND 300",
         "DELETE FROM items WHERE id BETWEEN 290 AND 300",
         "INSERT INTO items VALUES (1003, 3, 'replica'), (1004, 4, 'replica')",
         "UPDATE items SET note = 'replica, again' WHERE id = 1002")
    files = replica.binlog_files()
    if numbering == "lower":
        assert int(files[-1].rsplit(".", 1)[1]) < on_primary.file_index, (files, on_primary)
    else:
        assert on_primary.file in files and files[-1] > on_primary.file, (files, on_primary)

    pipeline.point_at(replica)
    third = pipeline.run_once()
    assert third.returncode == 0, third.stderr[-3000:]
    want = _mysql_rows(replica, db)
    assert len(want) == 400 - 11 - 11 - 11 + 4
    assert _doris_rows(doris_standin, db) == want
    after = pipeline.committed()
    assert after.server == "server_id=2" and after.epoch == on_primary.epoch + 1 and after.file in files
    assert after.gtid_set == replica.identity().gtid_binlog_pos

    again = pipeline.run_once()  # caught up on the new server: by its own file positions now
    assert again.returncode == 0, again.stderr[-3000:]
    assert pipeline.committed() == after
    _sql(replica, db, "DELETE FROM items WHERE id = 1003")
    last = pipeline.run_once()
    assert last.returncode == 0, last.stderr[-3000:]
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)

    # A DDL on the promoted server, as the DDL sensor finds and carries it (found by the soak: the
    # scan's offsets lacked the epoch, ordered before the stream's, and the schema change took the
    # DDL for one already passed: dropped, the stream stopped before it for ever).
    _sql(replica, db, "ALTER TABLE items ADD COLUMN extra INT NULL", "UPDATE items SET extra = id WHERE id < 50")
    service = spark_service(load_pipeline(pipeline.path))
    try:
        found = service.schema_change_steps().next_ddl()
        committed = pipeline.committed()
        assert found is not None and found.offset.epoch == committed.epoch == 1 and found.offset > committed
        # the schema_change run's config keeps the epoch (the sensor's and run --once's launches)
        config = run_config_for(found.offset)["ops"]["quiesce"]["config"]
        assert SchemaChangeConfig(**config).offset() == found.offset
    finally:
        service.close()
    carried = pipeline.run_once()  # stops at the DDL, carries it over by the schema_change job, goes on
    assert carried.returncode == 0, carried.stderr[-3000:]
    assert "extra" in (doris_columns(doris_standin, db, "items") or {})
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)
    extra = [tuple(str(v) if v is not None else None for v in r)
             for r in doris_rows(doris_standin, db, "items", ["id", "extra"])]
    assert extra == [(str(i), str(i) if int(i) < 50 else None) for i, *_ in _mysql_rows(replica, db)]


@pytest.mark.slow  # suite time; the divergence check itself is unit-tested in tests/foundation/test_gtid_positions.py
def test_failover_to_a_replica_missing_committed_transactions_is_refused(tmp_path, mariadb_servers, doris_standin):  # noqa: F811
    db = "failover_refused"
    primary = _primary(tmp_path, mariadb_servers, 0, db)
    replica = mariadb_servers(MariaDBReplica, tmp_path / "replica", primary, port=free_port())
    replica.start()
    pipeline = Pipeline(tmp_path, doris_standin, "failover_refused", db)
    pipeline.point_at(primary)
    first = pipeline.run_once()
    assert first.returncode == 0, first.stderr[-3000:]
    replica.wait_caught_up(60)
    replica.root_sql("STOP SLAVE;")  # the replica stops replicating before the pipeline's last batch
    _sql(primary, db, "UPDATE items SET qty = 0 WHERE id <= 20", "INSERT INTO items VALUES (2001, 1, 'lost?')")
    second = pipeline.run_once()
    assert second.returncode == 0, second.stderr[-3000:]
    committed = pipeline.committed()
    applied = _doris_rows(doris_standin, db)
    assert applied == _mysql_rows(primary, db)
    primary.stop()
    replica.promote()
    _sql(replica, db, "INSERT INTO items VALUES (3001, 1, 'replica')")
    server_pos = replica.identity().gtid_binlog_pos

    pipeline.point_at(replica)
    refused = pipeline.run_once()
    assert refused.returncode != 0, refused.stderr[-3000:]
    message = " ".join(refused.stderr.split())
    assert committed.gtid_set in message and server_pos in message, refused.stderr[-3000:]
    assert "lacks transactions the pipeline already committed" in message
    assert "tidemark resnapshot" in message
    assert _doris_rows(doris_standin, db) == applied, "nothing applied"
    assert pipeline.committed() == committed and pipeline.committed().server == "server_id=1"


@pytest.mark.slow  # ~50 s; the default suite keeps its path's other cases (issue 30: under 30 minutes)
def test_a_resnapshot_after_a_failover_outranks_what_the_stream_wrote_there(tmp_path, mariadb_servers,
                                                                            doris_standin):  # noqa: F811
    """After a failover the stream writes the new server's changes under the next epoch, whose
    sequences outrank every file position. A resnapshot's chunks (and their sweep) must carry that
    epoch too: stamped with epoch 0 their rows lost to what the stream had written on the new server
    — rows fixed with ``sql_log_bin = 0`` stayed stale in Doris, rows deleted so stayed there."""
    db = "failover_resnapshot"
    primary = _primary(tmp_path, mariadb_servers, 0, db)
    replica = mariadb_servers(MariaDBReplica, tmp_path / "replica", primary, port=free_port())
    replica.start()
    pipeline = Pipeline(tmp_path, doris_standin, "failover_resnapshot", db)
    pipeline.point_at(primary)
    first = pipeline.run_once()
    assert first.returncode == 0, first.stderr[-3000:]
    replica.wait_caught_up(60)
    primary.stop()
    replica.promote()
    _sql(replica, db, "UPDATE items SET qty = qty + 1000, note = 'streamed on the replica' WHERE id BETWEEN 100 AND 300")
    pipeline.point_at(replica)
    followed = pipeline.run_once()  # the stream follows the failover: Doris rows 100..300 carry epoch 1
    assert followed.returncode == 0, followed.stderr[-3000:]
    assert pipeline.committed().epoch == 1
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)

    # rows changed where no binlog sees them, among them rows the stream wrote under epoch 1
    replica.root_sql(f"SET SESSION sql_log_bin = 0; UPDATE `{db}`.items SET note = 'fixed quietly' "
                     f"WHERE id BETWEEN 150 AND 200; DELETE FROM `{db}`.items WHERE id BETWEEN 250 AND 260 OR id < 5; "
                     f"INSERT INTO `{db}`.items VALUES (5001, 1, 'inserted quietly');")
    resnapshot = subprocess.run([sys.executable, "-m", "orchestration.cli", "resnapshot", str(pipeline.path)], cwd=ROOT,
                                env=pipeline.env, capture_output=True, text=True, timeout=600)
    assert resnapshot.returncode == 0, resnapshot.stderr[-3000:]
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)
    assert _high_watermark_marks(pipeline) == {(1, "server_id=2")}  # read again on the new server, in its epoch
    assert pipeline.committed().epoch == 1

    _sql(replica, db, "UPDATE items SET note = 'after the resnapshot' WHERE id BETWEEN 180 AND 190")
    last = pipeline.run_once()  # the stream goes on from there
    assert last.returncode == 0, last.stderr[-3000:]
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)

    # The binlog the stream resumes from is purged on the new server: the resnapshot drops the
    # committed offset, and the offset it dropped still gives the new chunks (and the stream that
    # restarts at their watermarks) epoch 1.
    _sql(replica, db, "UPDATE items SET note = 'in the purged range' WHERE id BETWEEN 100 AND 140",
         "DELETE FROM items WHERE id BETWEEN 270 AND 280")
    _purge_to_current(replica, pipeline.committed().file)
    stopped = pipeline.run_once()
    assert stopped.returncode == 1 and "tidemark resnapshot" in stopped.stderr, stopped.stderr[-3000:]
    healed = subprocess.run([sys.executable, "-m", "orchestration.cli", "resnapshot", str(pipeline.path)], cwd=ROOT,
                            env=pipeline.env, capture_output=True, text=True, timeout=600)
    assert healed.returncode == 0, healed.stderr[-3000:]
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)
    assert _high_watermark_marks(pipeline) == {(1, "server_id=2")}
    _sql(replica, db, "UPDATE items SET qty = 7 WHERE id BETWEEN 300 AND 320")
    again = pipeline.run_once()  # the stream, restarted at the new watermarks, in epoch 1
    assert again.returncode == 0, again.stderr[-3000:]
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)
    after = pipeline.committed()
    assert after.epoch == 1 and after.server == "server_id=2" and after.file in replica.binlog_files()


def _purge_to_current(server: MariaDBServer, gone: str) -> None:
    """Rotate the binlog and purge every file before the new one (``gone`` among them)."""
    assert gone not in server.purge_binary_logs_to(server.flush_binary_logs(1))


@pytest.mark.parametrize(("on_purged", "batch_on_primary"), [
    # the stream would start at the snapshot's high watermarks (old server); slow: ~20 s more
    pytest.param("resnapshot", False, marks=pytest.mark.slow),
    ("fail", True),  # it resumes after a batch committed on the old server
])
def test_a_purge_right_after_a_failover_heals_by_resnapshot(on_purged, batch_on_primary, tmp_path, mariadb_servers,
                                                            doris_standin):  # noqa: F811
    """Issue #28 (docs/soak.md, bug 6): the promoted server purges the binlog with the transactions
    right after the committed GTID position before a batch is committed there. That is a purge (the
    server holds every committed transaction), healed as one: by ``on-purged: resnapshot`` in a plain
    run, or, by default, a one-line stop naming ``tidemark resnapshot``, which heals it."""
    db = f"failover_purged_{on_purged}"
    primary = _primary(tmp_path, mariadb_servers, 0, db)
    replica = mariadb_servers(MariaDBReplica, tmp_path / "replica", primary, port=free_port())
    replica.start()
    options = {"tidemark.binlog.on-purged": "resnapshot"} if on_purged == "resnapshot" else None
    pipeline = Pipeline(tmp_path, doris_standin, db, db, options)
    pipeline.point_at(primary)
    first = pipeline.run_once()
    assert first.returncode == 0, first.stderr[-3000:]
    if batch_on_primary:
        _sql(primary, db, "UPDATE items SET qty = 0 WHERE id <= 20", "INSERT INTO items VALUES (2001, 1, 'primary')")
        second = pipeline.run_once()
        assert second.returncode == 0, second.stderr[-3000:]
        assert _doris_rows(doris_standin, db) == _mysql_rows(primary, db)
    committed = pipeline.committed()
    assert (committed is not None) == batch_on_primary
    replica.wait_caught_up(60)
    primary.stop()
    replica.promote()
    # changes on the new server, among them deletes, then its binlogs holding them are purged
    _sql(replica, db, "UPDATE items SET qty = qty + 1000, note = 'on the replica' WHERE id BETWEEN 100 AND 200",
         "DELETE FROM items WHERE id BETWEEN 300 AND 320", "INSERT INTO items VALUES (4001, 1, 'replica')")
    _purge_to_current(replica, replica.current_binlog())  # every file with a change after the committed GTIDs
    _sql(replica, db, "UPDATE items SET note = 'after the purge' WHERE id BETWEEN 10 AND 20")
    pipeline.point_at(replica)

    if on_purged == "fail":
        stopped = pipeline.run_once()
        assert stopped.returncode == 1, stopped.stderr[-3000:]
        errors = [line for line in stopped.stderr.splitlines() if "tidemark resnapshot" in line]
        assert len(errors) == 1 and "purged" in errors[0] and committed.gtid_set in errors[0], stopped.stderr[-3000:]
        assert "required binlog files have been purged" not in stopped.stderr  # no longer the server's refusal
        assert "lacks transactions" not in stopped.stderr  # a purge, not a divergence
        assert pipeline.committed() == committed, "nothing committed"
        healed = subprocess.run([sys.executable, "-m", "orchestration.cli", "resnapshot", str(pipeline.path)],
                                cwd=ROOT, env=pipeline.env, capture_output=True, text=True, timeout=600)
        assert healed.returncode == 0, healed.stderr[-3000:]
    else:
        healed = pipeline.run_once()  # a plain run heals itself, with a warning
        assert healed.returncode == 0, healed.stderr[-3000:]
        assert "on-purged is 'resnapshot'" in healed.stderr, healed.stderr[-3000:]
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)
    assert _high_watermark_marks(pipeline) == {(1, "server_id=2")}  # read on the new server, in the next epoch

    _sql(replica, db, "UPDATE items SET qty = 7 WHERE id BETWEEN 50 AND 60", "DELETE FROM items WHERE id = 61")
    again = pipeline.run_once()  # the stream goes on from the new watermarks, in epoch 1
    assert again.returncode == 0, again.stderr[-3000:]
    assert _doris_rows(doris_standin, db) == _mysql_rows(replica, db)
    after = pipeline.committed()
    assert after.epoch == 1 and after.server == "server_id=2" and after.file in replica.binlog_files()


def _high_watermark_marks(pipeline: Pipeline) -> set[tuple]:
    """The (epoch, server) pairs of the chunks' high watermarks."""
    service = spark_service(load_pipeline(pipeline.path))
    try:
        with service.store.transaction(readonly=True) as tx:
            return {(c.high_watermark.get("epoch"), c.high_watermark.get("server")) for c in tx.chunks()}
    finally:
        service.close()
