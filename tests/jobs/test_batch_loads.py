"""A binlog batch over many tables (issue 30, the stream over a whole database): its loads and
commits go several at a time, Doris is asked whether a table exists once per process rather than at
every batch, and a load that fails mid-batch leaves nothing behind: the batch is aborted and the next
one loads it all, once."""

from __future__ import annotations

import pytest
import requests

from cdc_core.pipeline.service import PipelineService
from cdc_core.state import BatchStatus
from jobs.spark_executor import SparkExecutor

TABLES = 12


def _no_spark():
    raise AssertionError("these small batches must not start Spark")


def _tables(root_conn, db: str) -> None:
    with root_conn.cursor() as cur:
        for i in range(TABLES):
            cur.execute(f"CREATE TABLE `{db}`.t{i} (id INT PRIMARY KEY, v INT)")
            cur.execute(f"INSERT INTO `{db}`.t{i} VALUES (1, 1), (2, 2)")


def _write_all(root_conn, db: str, value: int) -> None:
    with root_conn.cursor() as cur:
        cur.execute("BEGIN")
        for i in range(TABLES):
            cur.execute(f"UPDATE `{db}`.t{i} SET v = {value} WHERE id = 1")
            cur.execute(f"INSERT INTO `{db}`.t{i} (id, v) VALUES ({value}, {value})")
        cur.execute("COMMIT")


def _service(pipeline_factory, db: str) -> PipelineService:
    definition = pipeline_factory(f"{db}.t.*", pipeline={"tidemark.snapshot.in-process-rows": 5_000,
                                                         "tidemark.binlog.batch-interval-s": 0})
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()
    return runner


def _equal(runner: PipelineService) -> None:
    verdicts = runner.verify()
    assert len(verdicts) == TABLES and all(v.equal for v in verdicts), [v for v in verdicts if not v.equal]


def test_a_batch_asks_doris_about_each_table_once_per_process(pipeline_factory, root_conn, fresh_db):
    _tables(root_conn, fresh_db)
    runner = _service(pipeline_factory, fresh_db)
    catalog = runner.context.sink.catalog
    asked: list[str] = []
    table_info = catalog.table_info

    def counting(database: str, table: str):
        asked.append(table)
        return table_info(database, table)

    catalog.table_info = counting
    for value in (10, 11, 12):
        _write_all(root_conn, fresh_db, value)
        result = runner.run_binlog_batch()
        assert len(result.events_per_table) == TABLES
        assert runner.commit_batch(result.batch_id)
    # the snapshot's run created every table in this process: no batch asked again
    assert asked == []
    _equal(runner)
    runner.close()

    fresh = PipelineService(runner.definition, executor=SparkExecutor(_no_spark))  # a new process, as a new run
    fresh.context.sink.catalog.table_info = counting
    for value in (20, 21):
        _write_all(root_conn, fresh_db, value)
        result = fresh.run_binlog_batch()
        assert fresh.commit_batch(result.batch_id)
    assert sorted(asked) == sorted(f"t{i}" for i in range(TABLES))  # once per table, not per batch
    _equal(fresh)
    fresh.close()


def test_a_load_that_fails_among_the_parallel_ones_leaves_nothing_and_the_next_batch_loads_it_all(
        pipeline_factory, root_conn, fresh_db, doris_standin):
    _tables(root_conn, fresh_db)
    runner = _service(pipeline_factory, fresh_db)
    _write_all(root_conn, fresh_db, 30)
    faults = f"http://{doris_standin.fe_http}/_standin/faults"
    requests.post(faults, json=[{"target": "load", "mode": "http_500", "db": fresh_db, "table": "t7", "count": 20}],
                  timeout=5).raise_for_status()
    with pytest.raises(Exception, match="t7|500"):  # the failed load's own error
        runner.run_binlog_batch()
    requests.delete(faults, timeout=5).raise_for_status()
    assert runner.pending_transactions() == []  # the other tables' loads were aborted with the batch
    with runner.context.store.transaction(readonly=True) as tx:
        assert [b.status for b in tx.batches()] == [BatchStatus.ABORTED]
    result = runner.run_binlog_batch()
    assert len(result.events_per_table) == TABLES and runner.commit_batch(result.batch_id)
    _equal(runner)
    runner.close()
