"""The incremental job: binlog batches compacted per key and precommitted, then committed by offset."""

from __future__ import annotations

import pytest

from cdc_core.model.offsets import BinlogOffset
from cdc_core.pipeline.changes import ChangeRow, compact
from cdc_core.pipeline.service import PipelineService
from jobs.spark_executor import spark_service
from tests.jobs.conftest import doris_query


def mysql_rows(root_conn, sql: str) -> list[tuple]:
    with root_conn.cursor() as cur:
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]


def snapshot(runner: PipelineService) -> None:
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()


def dml(root_conn, db: str) -> None:
    with root_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{db}`.items VALUES (1001, 'new', 5), (1002, 'new2', 6)")
        cur.execute(f"UPDATE `{db}`.items SET qty = qty + 100 WHERE id BETWEEN 10 AND 19")
        cur.execute(f"UPDATE `{db}`.items SET qty = 0 WHERE id = 10")  # second change of one key in the batch
        cur.execute(f"DELETE FROM `{db}`.items WHERE id BETWEEN 20 AND 24")
        cur.execute(f"UPDATE `{db}`.items SET id = 5000 WHERE id = 30")  # a key change: delete + insert
        cur.execute(f"INSERT INTO `{db}`.items VALUES (1003, 'gone', 1)")
        cur.execute(f"DELETE FROM `{db}`.items WHERE id = 1003")  # inserted and deleted within the batch


def make_items(root_conn, db: str) -> None:
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.items (id INT PRIMARY KEY, label VARCHAR(20), qty INT)")
        cur.execute(f"INSERT INTO `{db}`.items SELECT seq, CONCAT('i', seq), seq FROM `{db}`.seq_1_to_600")


@pytest.mark.parametrize("path", ["in_process", "spark"])
def test_batches_reach_doris_exactly_once(path, pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    make_items(root_conn, fresh_db)
    pipeline = {"tidemark.binlog.spark-min-events": 1} if path == "spark" else {}
    runner = spark_service(pipeline_factory(f"{fresh_db}.items", source={"scan.incremental.snapshot.chunk.size": 250},
                                             pipeline=pipeline))
    snapshot(runner)
    dml(root_conn, fresh_db)
    lag = runner.binlog_lag()
    assert lag.behind

    batch = runner.run_binlog_batch()
    assert batch.events_per_table == {f"{fresh_db}.items": 2 + 10 + 1 + 5 + 1 + 2}
    before = doris_query(doris_standin, fresh_db, "SELECT COUNT(*), SUM(qty) FROM items")
    assert before == [[600, sum(range(1, 601))]], "a prepared batch is invisible"
    runner.commit_batch(batch.batch_id)
    runner.commit_batch(batch.batch_id)  # idempotent

    expected = mysql_rows(root_conn, f"SELECT id, label, qty FROM `{fresh_db}`.items ORDER BY id")
    got = [tuple(r) for r in doris_query(doris_standin, fresh_db, "SELECT id, label, qty FROM items ORDER BY id LIMIT 10000")]
    assert got == expected
    assert BinlogOffset.from_dict(runner.store.get("binlog", "committed_offset")) == BinlogOffset.from_dict(batch.end_offset)
    assert not runner.binlog_lag().behind
    # Nothing new: an empty batch, nothing loaded.
    assert runner.run_binlog_batch().batch_id == ""
    runner.close()


def test_aborted_batch_leaves_offset_and_is_read_again(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                        spark_session):
    make_items(root_conn, fresh_db)
    runner = spark_service(pipeline_factory(f"{fresh_db}.items"))
    snapshot(runner)
    with root_conn.cursor() as cur:
        cur.execute(f"UPDATE `{fresh_db}`.items SET qty = -1 WHERE id <= 50")
    first = runner.run_binlog_batch()
    runner.abort_batch(first.batch_id)
    assert runner.store.get("binlog", "committed_offset") is None
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM items WHERE qty = -1") == [[0]]
    again = runner.run_binlog_batch()
    runner.commit_batch(again.batch_id)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM items WHERE qty = -1") == [[50]]
    runner.close()


def test_transform_filters_and_projects(pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    make_items(root_conn, fresh_db)
    runner = spark_service(pipeline_factory(
        f"{fresh_db}.items",
        transform=[{"source-table": f"{fresh_db}.items", "projection": "id, UPPER(label) AS label, qty * 2 AS qty2, "
                    "__table_name__ AS src", "filter": "qty % 2 = 0"}],
    ))
    snapshot(runner)
    with root_conn.cursor() as cur:
        cur.execute(f"INSERT INTO `{fresh_db}`.items VALUES (700, 'even', 8), (701, 'odd', 9)")
    runner.commit_batch(runner.run_binlog_batch().batch_id)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM items") == [[301]]
    row = doris_query(doris_standin, fresh_db, "SELECT id, label, qty2, src FROM items WHERE id = 700")
    assert row == [[700, "EVEN", 16, "items"]]
    columns = [r[0] for r in doris_query(doris_standin, fresh_db, "SHOW FULL COLUMNS FROM items")]
    assert "qty" not in columns and {"id", "label", "qty2", "src"} <= set(columns)
    runner.close()


def test_compaction_keeps_the_last_change_per_key():
    rows = [ChangeRow((1,), {"id": 1, "v": "a"}, False, 10, 0), ChangeRow((1,), {"id": 1, "v": "b"}, False, 10, 1),
            ChangeRow((2,), {"id": 2}, True, 11, 2), ChangeRow((1,), {"id": 1, "v": "c"}, False, 9, 3),
            ChangeRow(None, {"v": "x"}, False, 12, 4)]
    out = compact(rows)
    assert [(r.key, r.values.get("v"), r.delete) for r in out] == [(None, "x", False), ((1,), "b", False), ((2,), None, True)]


def test_a_keyless_table_is_exact_through_spark(pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    """A table without a primary key through the Spark paths: the fused chunk tasks number each
    chunk's identical rows, the binlog job compacts the identity-keyed rows (counted in the driver)."""
    from tests.corpus import compare

    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.kl (f DOUBLE, t TEXT, n INT)")
        cur.execute(f"INSERT INTO `{fresh_db}`.kl SELECT seq % 7 / 2, IF(seq % 5 = 0, NULL, 'x'), seq % 10 "
                    f"FROM `{fresh_db}`.seq_1_to_100")
    runner = spark_service(pipeline_factory(f"{fresh_db}.kl", source={
        "scan.incremental.snapshot.chunk.size": 50, "scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.kl:n"},
        pipeline={"tidemark.binlog.spark-min-events": 1}))
    snapshot(runner)
    with root_conn.cursor() as cur:
        cur.execute(f"UPDATE `{fresh_db}`.kl SET t = 'y' WHERE n = 3 LIMIT 4")
        cur.execute(f"DELETE FROM `{fresh_db}`.kl WHERE n = 4 LIMIT 5")
        cur.execute(f"INSERT INTO `{fresh_db}`.kl SELECT f, t, n FROM `{fresh_db}`.kl WHERE n = 5")
    runner.commit_batch(runner.run_binlog_batch().batch_id)
    cols = compare.columns(root_conn, fresh_db, "kl")
    want = compare.mysql_rows(root_conn, fresh_db, "kl", cols)
    have = compare.doris_rows(doris_standin.fe_http, fresh_db, "kl", cols)
    assert have == want, compare.diff_text(want, have, cols)
    runner.close()
