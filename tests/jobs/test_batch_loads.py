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


def _reads_on_threads(monkeypatch) -> list[str]:
    """The thread each batch's read ran on."""
    import threading

    from cdc_core.pipeline import binlog_batch

    threads: list[str] = []
    real = binlog_batch._read

    def read(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(binlog_batch, "_read", read)
    return threads


def test_the_next_batch_is_read_while_a_batch_commits_and_every_change_lands_once(
        pipeline_factory, root_conn, fresh_db, monkeypatch):
    """A stream run's commit begins the next batch's read (``read_ahead_next``): that batch reads
    from the committed offset up to where the server was when the commit began, and the changes
    written after it go to the batch after; nothing is read twice or missed."""
    _tables(root_conn, fresh_db)
    runner = _service(pipeline_factory, fresh_db)
    threads = _reads_on_threads(monkeypatch)
    _write_all(root_conn, fresh_db, 10)
    first = runner.run_binlog_batch()
    _write_all(root_conn, fresh_db, 11)  # before the commit: the read ahead's
    assert runner.commit_batch(first.batch_id, read_ahead_next=True)
    _write_all(root_conn, fresh_db, 12)  # after it began: the batch after's
    second = runner.run_binlog_batch()
    assert second.start_offset == first.end_offset
    # value 11's update and insert, and value 12's when the read began after those were written
    assert set(second.events_per_table) == {f"{fresh_db}.t{i}" for i in range(TABLES)}
    assert runner.commit_batch(second.batch_id)  # the run's last (its hook): no read ahead
    third = runner.run_binlog_batch()
    assert runner.commit_batch(third.batch_id)
    if third.batch_id:
        assert third.start_offset == second.end_offset
    for i in range(TABLES):
        table = f"{fresh_db}.t{i}"
        assert second.events_per_table[table] + third.events_per_table.get(table, 0) == 4
    assert threads[:2] == ["MainThread", "tidemark-read-ahead"] and set(threads[2:]) <= {"MainThread"}
    assert not runner.binlog_lag().behind
    _equal(runner)
    runner.close()


def test_a_read_ahead_is_dropped_when_the_commit_lost_a_load_and_the_batch_is_read_again(
        pipeline_factory, root_conn, fresh_db, monkeypatch):
    """Doris lost a load before the commit: the offset stays, so the read begun during the commit
    (from the batch's end) is not used; the next batch reads the lost batch's range again."""
    _tables(root_conn, fresh_db)
    runner = _service(pipeline_factory, fresh_db)
    threads = _reads_on_threads(monkeypatch)
    _write_all(root_conn, fresh_db, 20)
    first = runner.run_binlog_batch()
    _write_all(root_conn, fresh_db, 21)
    committer = runner.sink.committer
    for t in runner.pending_transactions()[:1]:
        committer.abort_txn(t["db"], t["txn_id"], label=t["label"])  # Doris aborted it on its own
    assert runner.commit_batch(first.batch_id, read_ahead_next=True) is False
    again = runner.run_binlog_batch()
    assert (again.batch_id, again.start_offset, again.end_offset) == (first.batch_id, first.start_offset,
                                                                      first.end_offset)
    assert runner.commit_batch(again.batch_id)
    rest = runner.run_binlog_batch()
    assert rest.start_offset == first.end_offset and runner.commit_batch(rest.batch_id)
    # the read ahead (begun, or cancelled before it began) was not used: each batch read on its own
    assert [t for t in threads if t != "tidemark-read-ahead"] == ["MainThread"] * 3
    _equal(runner)
    runner.close()


def test_a_read_ahead_waiting_to_begin_is_cancelled_when_the_next_batch_cannot_use_it():
    """A read ahead waits (the last commit's time less the read's) so as to end with the commit; a
    batch that cannot use it (the commit lost a load, a range read again) cancels it before it
    reads, rather than waiting for it."""
    from cdc_core.model.offsets import BinlogOffset
    from cdc_core.pipeline.binlog_batch import _ReadAhead

    began: list[int] = []
    ahead = _ReadAhead(BinlogOffset("binlog.000001", 4), None, [], 1, 3600.0, lambda: began.append(1))
    ahead.discard()
    assert ahead.result() is None and began == []
