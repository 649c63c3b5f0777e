"""Partition maintenance on a captured table (issue #16, item 3).

``TRUNCATE``/``DROP``/``EXCHANGE PARTITION`` remove or replace rows with no row event in the
binlog; the parser turns them into a ``partition.rows`` event and the schema change reloads the
table (re-read + sweep, ``cdc_core/pipeline/reload.py``). The other partition operations keep
every row and must go by without stopping anything. The end-to-end test runs ``tidemark run
--once`` as a user does, against the session's MariaDB and a private Doris stand-in, while rows
are written before and after each operation, then compares the databases with ``tidemark verify``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_core.instrumentation.faults import InjectedFault
from cdc_core.model.events import PartitionRowsEvent
from cdc_core.model.schema import TableId
from cdc_core.model.schema_change_codec import event_from_dict, event_to_dict
from cdc_core.mysql.ddl.parser import MySqlDdlParser
from cdc_core.pipeline import reload
from cdc_core.pipeline.reload import pending_reloads
from cdc_core.pipeline.schema_change import SchemaChangeSteps
from devstack.pipeline_file import write_pipeline
from jobs.spark_executor import spark_service
from orchestration.cli import tidemark as cli
from tests.orchestration.test_e2e_dagster import _doris_count, doris_standin  # noqa: F401
from tests.schema.helpers import assert_rows_match, carry_next_ddl, catch_up, doris_rows, mysql_rows, sql

ROOT = Path(__file__).resolve().parents[2]



# -- the parser ------------------------------------------------------------------------------


def _parse(sql: str) -> list[tuple[str, str, str]]:
    events = MySqlDdlParser().parse_captured(sql, "db", lambda t: t.table in ("t", "x"), lambda t: None)
    return [(e.type_name, str(e.table_id), getattr(e, "operation", "")) for e in events]


@pytest.mark.parametrize(("sql", "expected"), [
    ("ALTER TABLE t TRUNCATE PARTITION p0, p1", [("db.t", "TRUNCATE PARTITION")]),
    ("ALTER TABLE t TRUNCATE PARTITION ALL", [("db.t", "TRUNCATE PARTITION")]),
    ("ALTER TABLE t DROP PARTITION p2", [("db.t", "DROP PARTITION")]),
    ("ALTER TABLE t ALGORITHM=INPLACE DROP PARTITION p2, p3", [("db.t", "DROP PARTITION")]),
    ("ALTER TABLE t EXCHANGE PARTITION p3 WITH TABLE other WITHOUT VALIDATION", [("db.t", "EXCHANGE PARTITION")]),
    ("ALTER TABLE other EXCHANGE PARTITION p3 WITH TABLE db.t", [("db.t", "EXCHANGE PARTITION")]),
    ("ALTER TABLE t EXCHANGE PARTITION p3 WITH TABLE x", [("db.t", "EXCHANGE PARTITION"),
                                                          ("db.x", "EXCHANGE PARTITION")]),
    ("ALTER TABLE t IMPORT PARTITION p0 TABLESPACE", [("db.t", "IMPORT TABLESPACE")]),
    ("ALTER TABLE t CONVERT PARTITION p0 TO TABLE other", [("db.t", "CONVERT PARTITION")]),
])
def test_partition_operations_that_remove_rows_ask_for_a_reload(sql, expected):
    assert _parse(sql) == [("partition.rows", t, op) for t, op in expected]


def test_mariadb_convert_table_to_partition_drops_the_captured_table_it_converts():
    assert _parse("ALTER TABLE t CONVERT TABLE x TO PARTITION p9 VALUES LESS THAN (100)") == [
        ("partition.rows", "db.t", "CONVERT TABLE TO PARTITION"), ("drop.table", "db.x", "")]


@pytest.mark.parametrize("sql", [
    "ALTER TABLE t REORGANIZE PARTITION p4 INTO (PARTITION a VALUES LESS THAN (10), PARTITION b VALUES LESS THAN (20))",
    "ALTER TABLE t ADD PARTITION (PARTITION p9 VALUES LESS THAN MAXVALUE)",
    "ALTER TABLE t COALESCE PARTITION 2",
    "ALTER TABLE t REBUILD PARTITION p0, p1",
    "ALTER TABLE t ANALYZE PARTITION ALL",
    "ALTER TABLE t OPTIMIZE PARTITION p0",
    "ALTER TABLE t CHECK PARTITION p0",
    "ALTER TABLE t REPAIR PARTITION p0",
    "ALTER TABLE t REMOVE PARTITIONING",
    "ALTER TABLE t PARTITION BY HASH(id) PARTITIONS 4",
    "ALTER TABLE t DISCARD PARTITION p0 TABLESPACE",
])
def test_partition_operations_that_keep_every_row_give_nothing(sql):
    assert _parse(sql) == []


def test_the_reload_event_survives_the_state_store():
    event = PartitionRowsEvent(TableId("db", "t"), ddl="ALTER TABLE t DROP PARTITION p2", operation="DROP PARTITION")
    assert event_from_dict(json.loads(json.dumps(event_to_dict(event)))) == event


# -- end to end ------------------------------------------------------------------------------


def _sql(conn, *statements: str) -> None:
    with conn.cursor() as cur:
        for statement in statements:
            cur.execute(statement)
            if cur.description:  # ANALYZE/CHECK/OPTIMIZE/REPAIR PARTITION answer with a result set
                cur.fetchall()


def _count(conn, db: str, table: str) -> int:
    with conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM `{db}`.`{table}`")
        return int(cur.fetchone()[0])


def test_partition_maintenance_while_streaming_leaves_doris_equal_to_mysql(mysql_server, root_conn, fresh_db,
                                                                           doris_standin, tmp_path):  # noqa: F811
    db = fresh_db
    _sql(root_conn, f"USE `{db}`",
         """CREATE TABLE events (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT NOT NULL)
            PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (1000), PARTITION p1 VALUES LESS THAN (2000),
                                     PARTITION p2 VALUES LESS THAN (3000), PARTITION p3 VALUES LESS THAN (4000),
                                     PARTITION p4 VALUES LESS THAN (5000))""",
         "CREATE TABLE swap (id INT NOT NULL PRIMARY KEY, name VARCHAR(40) NOT NULL, qty INT NOT NULL)")
    with root_conn.cursor() as cur:
        cur.executemany(f"INSERT INTO `{db}`.events VALUES (%s, %s, %s)",
                        [(i, f"row {i}", i % 7) for i in range(2, 5000, 2)])
        cur.executemany(f"INSERT INTO `{db}`.swap VALUES (%s, %s, %s)",
                        [(i, f"swapped in {i}", 1) for i in range(3001, 3101)])
    path = tmp_path / "partitions.yaml"
    write_pipeline(path, host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                   tables=f"{db}.events", name=f"parts_{db}", state_dir=tmp_path / "state", server_id="5600-5604",
                   source={"scan.incremental.snapshot.chunk.size": 400})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    cmd = [sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"]
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    assert _doris_count(doris_standin.fe_http, db, "events") == 2499

    t = f"`{db}`.events"
    _sql(root_conn,
         f"UPDATE {t} SET qty = qty + 100 WHERE id BETWEEN 500 AND 1500",       # rows of p0/p1 changed, then removed
         f"ALTER TABLE {t} TRUNCATE PARTITION p0, p1",
         f"INSERT INTO {t} VALUES (11, 'after truncate', 1), (1001, 'after truncate', 2)",
         f"UPDATE {t} SET qty = 0 WHERE id BETWEEN 2000 AND 2100",
         f"ALTER TABLE {t} DROP PARTITION p2",                                  # p3 now holds 2000..3999
         f"INSERT INTO {t} VALUES (2501, 'after drop', 3)",
         f"DELETE FROM {t} WHERE id BETWEEN 3500 AND 3510",
         f"ALTER TABLE {t} EXCHANGE PARTITION p3 WITH TABLE `{db}`.swap",       # swap is not captured
         f"INSERT INTO {t} VALUES (3999, 'after exchange', 4)",
         f"ALTER TABLE {t} REORGANIZE PARTITION p4 INTO (PARTITION p4a VALUES LESS THAN (4500), "
         "PARTITION p4b VALUES LESS THAN (5000))",
         f"UPDATE {t} SET name = 'after reorganize' WHERE id BETWEEN 4400 AND 4600",
         f"ALTER TABLE {t} ADD PARTITION (PARTITION p5 VALUES LESS THAN (6000))",
         f"INSERT INTO {t} VALUES (5500, 'after add', 5)",
         f"ALTER TABLE {t} REBUILD PARTITION p4a",
         f"ALTER TABLE {t} ANALYZE PARTITION p4a",
         f"ALTER TABLE {t} OPTIMIZE PARTITION p4b",
         f"ALTER TABLE {t} CHECK PARTITION p5",
         f"ALTER TABLE {t} REPAIR PARTITION p5",
         f"INSERT INTO {t} VALUES (5502, 'at the end', 6)")
    second = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    assert "schema change(s)" in second.stderr

    assert cli.main(["verify", str(path), "--json"]) == 0
    expected = _count(root_conn, db, "events")
    assert expected == 2 + 100 + 1 + 500 + 2  # p0/p1 after the truncate, p3 after the exchange, p4, p5
    assert _doris_count(doris_standin.fe_http, db, "events") == expected
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM {t} WHERE name LIKE 'swapped in%%'")
        assert cur.fetchone()[0] == 100


# -- the sweep on its own, through the service -----------------------------------------------


def _partitioned(root_conn, db: str, table: str, ids: range) -> None:
    sql(root_conn, f"""CREATE TABLE `{db}`.{table} (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)
                       PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (100),
                       PARTITION p1 VALUES LESS THAN (200), PARTITION p2 VALUES LESS THAN MAXVALUE)""",
        f"INSERT INTO `{db}`.{table} SELECT seq, seq FROM `{db}`.seq_{ids.start}_to_{ids.stop - 1}")


def _snapshot(runner) -> list[str]:
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()
    assert catch_up(runner) is None
    return keys


def test_a_sweep_a_crash_interrupted_is_finished_before_the_next_batch(pipeline_factory, root_conn, fresh_db,
                                                                       doris_standin, monkeypatch):  # noqa: F811
    """The schema change dies after the reload's re-read and before its sweep: Doris has every row
    MySQL has and still the truncated ones. The request survives in the state store, and the next
    binlog batch finishes the sweep before it reads anything."""
    db = fresh_db
    _partitioned(root_conn, db, "t", range(1, 300))
    runner = spark_service(pipeline_factory(f"{db}.t", source={"scan.incremental.snapshot.chunk.size": 100}))
    try:
        _snapshot(runner)
        sql(root_conn, f"ALTER TABLE `{db}`.t TRUNCATE PARTITION p1", f"INSERT INTO `{db}`.t VALUES (150, -1)")
        assert catch_up(runner) is not None, "the stream stops before the partition maintenance"
        monkeypatch.setenv("TIDEMARK_FAULTS", json.dumps({"schema_change.before_sweep": {"action": "raise"}}))
        with pytest.raises(InjectedFault):
            carry_next_ddl(runner)
        monkeypatch.delenv("TIDEMARK_FAULTS")
        assert pending_reloads(runner.context) == [f"{db}.t"]
        in_doris = {str(r[0]): str(r[1]) for r in doris_rows(doris_standin, db, "t", ["id", "v"])}
        assert len(in_doris) == 299 and in_doris["150"] == "-1"  # re-read, not swept
        SchemaChangeSteps(runner).resume()
        sql(root_conn, f"UPDATE `{db}`.t SET v = 0 WHERE id = 250")
        assert catch_up(runner) is None
        assert pending_reloads(runner.context) == []
        assert_rows_match(doris_standin, root_conn, db, "t")
        assert len(mysql_rows(root_conn, db, "t")[1]) == 299 - 100 + 1
    finally:
        runner.close()


def test_a_merged_doris_table_is_reloaded_but_not_swept(pipeline_factory, root_conn, fresh_db, doris_standin):  # noqa: F811
    """Two source tables routed to one Doris table: the rows of the other one carry their own
    watermarks, so the sweep cannot tell them from stale rows; it leaves the table alone and says so."""
    db = fresh_db
    _partitioned(root_conn, db, "t_1", range(1, 300))
    sql(root_conn, f"CREATE TABLE `{db}`.t_2 (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)",
        f"INSERT INTO `{db}`.t_2 SELECT seq, seq FROM `{db}`.seq_1000_to_1099")
    runner = spark_service(pipeline_factory(
        f"{db}.t_\\d+", source={"scan.incremental.snapshot.chunk.size": 100},
        route=[{"source-table": f"{db}.t_\\d+", "sink-table": f"{db}.all"}]))
    try:
        _snapshot(runner)
        sql(root_conn, f"ALTER TABLE `{db}`.t_1 DROP PARTITION p0")
        assert catch_up(runner) is not None
        out = carry_next_ddl(runner)
        assert out["apply"]["reloaded_tables"] == [f"{db}.t_1"]
        [sweep] = out["apply"]["sweeps"]
        assert sweep["deleted"] == {} and "also receives" in sweep["skipped"][0]
        assert catch_up(runner) is None
        assert len(doris_rows(doris_standin, db, "all", ["id"])) == 299 + 100  # p0's rows stay, as the warning says
    finally:
        runner.close()


def test_the_sweep_deletes_rows_of_every_column_type(pipeline_factory, root_conn, fresh_db, doris_standin):  # noqa: F811
    """The sweep sends back the stale rows as Doris returns them, with the delete sign: every value
    must load again, whatever the column's type."""
    db = fresh_db
    sql(root_conn, f"""CREATE TABLE `{db}`.typed (id INT NOT NULL PRIMARY KEY, d DATE NOT NULL, ts DATETIME(3) NOT NULL,
                       tm TIME NOT NULL, amount DECIMAL(12,3) NOT NULL, ratio DOUBLE NOT NULL, flag TINYINT(1) NOT NULL,
                       doc JSON NOT NULL, raw VARBINARY(16) NOT NULL, body BLOB, kind ENUM('a','b') NOT NULL,
                       tags SET('x','y') NOT NULL, txt TEXT NOT NULL)
                       PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (50), PARTITION p1 VALUES LESS THAN MAXVALUE)""",
        f"""INSERT INTO `{db}`.typed SELECT seq, DATE '2026-01-02' + INTERVAL seq DAY,
            TIMESTAMP '2026-01-02 03:04:05.678' + INTERVAL seq SECOND, '12:34:56', seq / 7, seq / 3, seq % 2,
            JSON_OBJECT('k', seq, 's', 'quote " and \\\\ back'), UNHEX('00FF10'), UNHEX('DEADBEEF'), 'b', 'x,y',
            CONCAT('text ', seq, ' tab\t and newline\n') FROM `{db}`.seq_1_to_99""")
    runner = spark_service(pipeline_factory(f"{db}.typed", source={"scan.incremental.snapshot.chunk.size": 30}))
    try:
        _snapshot(runner)
        sql(root_conn, f"ALTER TABLE `{db}`.typed TRUNCATE PARTITION p0")
        assert catch_up(runner) is not None
        out = carry_next_ddl(runner)
        [sweep] = out["apply"]["sweeps"]
        assert sweep["deleted"] == {f"{db}.typed": 49}, sweep
        assert catch_up(runner) is None
        assert len(doris_rows(doris_standin, db, "typed", ["id"])) == 50
        [verdict] = runner.verify()
        assert verdict.equal and verdict.doris_rows == verdict.mysql_rows == 50, verdict
    finally:
        runner.close()


def test_without_a_snapshot_the_reload_reads_the_whole_table(pipeline_factory, root_conn, fresh_db, doris_standin):  # noqa: F811
    """``scan.startup.mode: latest-offset`` streams a table without reading it first; partition
    maintenance still reloads it, so afterwards Doris holds all of it, rows from before the start too."""
    db = fresh_db
    _partitioned(root_conn, db, "t", range(1, 300))
    runner = spark_service(pipeline_factory(f"{db}.t", source={"scan.startup.mode": "latest-offset"}))
    try:
        runner.binlog_lag()  # fixes the latest offset as the stream's start
        sql(root_conn, f"UPDATE `{db}`.t SET v = -v WHERE id IN (10, 110, 210)")
        assert catch_up(runner) is None
        assert len(doris_rows(doris_standin, db, "t", ["id"])) == 3
        sql(root_conn, f"ALTER TABLE `{db}`.t DROP PARTITION p1")
        assert catch_up(runner) is not None
        out = carry_next_ddl(runner)
        assert out["apply"]["reloaded_tables"] == [f"{db}.t"]
        assert out["apply"]["sweeps"][0]["deleted"] == {f"{db}.t": 1}  # id 110
        assert catch_up(runner) is None
        assert_rows_match(doris_standin, root_conn, db, "t")
    finally:
        runner.close()


def test_a_sweep_page_committed_before_a_crash_is_not_loaded_twice(pipeline_factory, root_conn, fresh_db,
                                                                   doris_standin, monkeypatch, tmp_path):  # noqa: F811
    """The sweep dies after committing a page and before recording it: the next attempt finds the
    page's label committed (its rows are gone from the query) and goes on under the next label."""
    db = fresh_db
    _partitioned(root_conn, db, "t", range(1, 300))
    monkeypatch.setattr(reload, "PAGE", 30)
    runner = spark_service(pipeline_factory(f"{db}.t", source={"scan.incremental.snapshot.chunk.size": 100}))
    try:
        _snapshot(runner)
        sql(root_conn, f"ALTER TABLE `{db}`.t TRUNCATE PARTITION p0, p1")
        assert catch_up(runner) is not None
        monkeypatch.setenv("TIDEMARK_FAULTS", json.dumps({"reload.after_page_commit": {
            "action": "raise_once", "marker": str(tmp_path / "page-fault"), "when": {"page": 1}}}))
        with pytest.raises(InjectedFault):
            carry_next_ddl(runner)
        assert len(doris_rows(doris_standin, db, "t", ["id"])) == 299 - 60  # pages 0 and 1 committed
        SchemaChangeSteps(runner).resume()
        assert catch_up(runner) is None
        assert pending_reloads(runner.context) == []
        assert_rows_match(doris_standin, root_conn, db, "t")
        assert len(doris_rows(doris_standin, db, "t", ["id"])) == 100
    finally:
        runner.close()
