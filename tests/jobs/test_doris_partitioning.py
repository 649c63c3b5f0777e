"""Partitioned Doris tables end to end: real MariaDB, the snapshot and binlog paths, the Doris
stand-in (which keeps and checks the partition clause as Doris does).

``table.create.auto-partition.properties.*`` on a table without a transform (the in-process path,
no Spark), and a transform rule's ``partition-keys`` (the Spark path).
"""

from __future__ import annotations

from jobs.spark_executor import spark_service
from tests.jobs.conftest import doris_query
from tests.jobs.test_binlog_job import mysql_rows, snapshot


def _orders(root_conn, db: str) -> None:
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.orders (id INT, created DATETIME(3), region VARCHAR(8), amount INT, "
                    "PRIMARY KEY (id, created))")
        cur.execute(f"INSERT INTO `{db}`.orders VALUES (1, '2026-01-05 10:00:00.125', 'eu', 10), "
                    "(2, '2026-02-01 00:00:00', 'us', 20), (3, '2026-02-17 23:59:59.999', 'eu', 30)")


def _partition_line(standin, db: str) -> str:
    text = doris_query(standin, db, "SHOW CREATE TABLE orders")[0][1]
    return next(line for line in text.split("\n") if "PARTITION BY" in line)


def _rows(standin, db: str) -> list[tuple]:
    return [tuple(r) for r in doris_query(standin, db, "SELECT id, region, amount FROM orders ORDER BY id")]


def test_auto_partition_properties_partition_the_created_table(pipeline_factory, root_conn, fresh_db, doris_standin):
    db = fresh_db
    _orders(root_conn, db)
    runner = spark_service(pipeline_factory(
        f"{db}.orders", pipeline={"tidemark.snapshot.in-process-rows": 50_000},
        sink={"table.create.auto-partition.properties.default-partition-key": "created",
              "table.create.auto-partition.properties.default-partition-unit": "month"}))
    snapshot(runner)
    assert _partition_line(doris_standin, db) == "AUTO PARTITION BY RANGE (date_trunc(`created`, 'month'))"
    with root_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{db}`.orders VALUES (4, '2026-03-03 03:03:03', 'ap', 40)")
        cur.execute(f"DELETE FROM `{db}`.orders WHERE id = 2")
    runner.commit_batch(runner.run_binlog_batch().batch_id)
    assert _rows(doris_standin, db) == mysql_rows(root_conn, f"SELECT id, region, amount FROM `{db}`.orders ORDER BY id")
    runner.close()


def test_partition_keys_of_a_transform_rule(pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    db = fresh_db
    _orders(root_conn, db)
    runner = spark_service(pipeline_factory(f"{db}.orders", transform=[{
        "source-table": f"{db}.orders", "partition-keys": "created", "table-options": "replication_num=1"}]))
    snapshot(runner)
    assert _partition_line(doris_standin, db) == "AUTO PARTITION BY RANGE (date_trunc(`created`, 'day'))"
    assert _rows(doris_standin, db) == mysql_rows(root_conn, f"SELECT id, region, amount FROM `{db}`.orders ORDER BY id")
    runner.close()
