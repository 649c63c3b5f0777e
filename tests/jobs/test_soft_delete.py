"""``converter-after-transform: SOFT_DELETE`` (Flink CDC's converter after transform), end to end:
real MariaDB, the snapshot and binlog jobs on Spark, the Doris stand-in.

A delete reaches Doris as an upsert of the deleted row, projected like any row with
``__data_event_type__`` ``'-D'``; snapshot rows and later changes read ``'+I'``; the sequence
column still orders them, so a re-insert of a soft-deleted key wins.
"""

from __future__ import annotations

from jobs.spark_executor import spark_service
from tests.jobs.conftest import doris_query
from tests.jobs.test_binlog_job import snapshot


def _rows(standin, db: str) -> list[tuple]:
    return [tuple(r) for r in doris_query(standin, db, "SELECT id, label, qty, op FROM items ORDER BY id")]


def test_soft_delete_keeps_deleted_rows_marked(pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    db = fresh_db
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, label VARCHAR(20), qty INT)")
        cur.execute(f"INSERT INTO `{db}`.items VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30), (4, 'd', 40)")
    runner = spark_service(pipeline_factory(f"{db}.items", transform=[{
        "source-table": f"{db}.items", "projection": "*, __data_event_type__ AS op", "filter": "qty < 1000",
        "converter-after-transform": "SOFT_DELETE"}]))
    snapshot(runner)
    assert _rows(doris_standin, db) == [(1, "a", 10, "+I"), (2, "b", 20, "+I"), (3, "c", 30, "+I"),
                                         (4, "d", 40, "+I")]

    with root_conn.cursor() as cur:
        cur.execute(f"DELETE FROM `{db}`.items WHERE id = 2")
        cur.execute(f"UPDATE `{db}`.items SET qty = 31 WHERE id = 3")
        cur.execute(f"INSERT INTO `{db}`.items VALUES (5, 'e', 50)")
        cur.execute(f"UPDATE `{db}`.items SET qty = 5000 WHERE id = 4")  # filtered out from now on
        cur.execute(f"DELETE FROM `{db}`.items WHERE id = 4")  # its before-image fails the filter too
    runner.commit_batch(runner.run_binlog_batch().batch_id)
    assert _rows(doris_standin, db) == [(1, "a", 10, "+I"), (2, "b", 20, "-D"), (3, "c", 31, "+I"),
                                         (4, "d", 40, "+I"), (5, "e", 50, "+I")]

    # a re-insert of the soft-deleted key is newer by the sequence column, and wins
    with root_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{db}`.items VALUES (2, 'b2', 22)")
        cur.execute(f"DELETE FROM `{db}`.items WHERE id = 1")
    runner.commit_batch(runner.run_binlog_batch().batch_id)
    assert _rows(doris_standin, db) == [(1, "a", 10, "-D"), (2, "b2", 22, "+I"), (3, "c", 31, "+I"),
                                         (4, "d", 40, "+I"), (5, "e", 50, "+I")]
    runner.close()
