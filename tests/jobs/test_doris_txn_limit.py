"""What a binlog batch does today when one MySQL transaction touches more tables than Doris's
``max_running_txn_num_per_db``: the batch precommits one load per table and holds them all until it
commits, so the load past the limit is refused (the stand-in enforces the limit as Doris does).

This pins today's behaviour (issue 30, Build item 4, is to bound it): the batch fails with Doris's
message, aborts what it had precommitted, and leaves the committed offset where it was — and the
next attempt reads the same transaction and fails the same way. A snapshot run whose chunks
outnumber the limit fails the same way (it precommits every chunk of the run before committing).
"""

from __future__ import annotations

import pytest

from cdc_core.doris.errors import StreamLoadError
from cdc_core.pipeline.service import PipelineService
from jobs.spark_executor import SparkExecutor

LIMIT = 4
TABLES = LIMIT + 2


def _no_spark():
    raise AssertionError("this small run must not start Spark")


def test_a_binlog_batch_touching_more_tables_than_the_limit_is_refused(pipeline_factory, root_conn, fresh_db,
                                                                        doris_standin, doris_txn_limit):
    doris_txn_limit(LIMIT)
    with root_conn.cursor() as cur:
        for i in range(TABLES):
            cur.execute(f"CREATE TABLE `{fresh_db}`.t{i} (id INT PRIMARY KEY, v INT)")
            cur.execute(f"INSERT INTO `{fresh_db}`.t{i} VALUES (1, 1)")
    definition = pipeline_factory(f"{fresh_db}.t.*", pipeline={"tidemark.snapshot.in-process-rows": 5_000})
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    keys = list(runner.plan_splits().chunk_keys)
    assert len(keys) == TABLES  # one chunk per table, all in one run
    # The snapshot run precommits every chunk of the run before it commits any: past the limit too.
    with pytest.raises(StreamLoadError, match=f"larger than limit {LIMIT}"):
        runner.run_chunks(keys)
    assert doris_standin.txn_stats()["databases"][fresh_db]["running"] == 0  # the run aborted its loads
    doris_txn_limit(100)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()
    doris_txn_limit(LIMIT)
    committed = runner.store.get("binlog", "committed_offset")
    doris_standin.reset_txn_peaks()

    with root_conn.cursor() as cur:  # one MySQL transaction over every table
        cur.execute("BEGIN")
        for i in range(TABLES):
            cur.execute(f"UPDATE `{fresh_db}`.t{i} SET v = 2 WHERE id = 1")
        cur.execute("COMMIT")

    for _attempt in range(2):  # it does not heal by itself: the same batch is refused again
        with pytest.raises(StreamLoadError) as refused:
            runner.run_binlog_batch()
        assert "current running txns on db" in str(refused.value)
        assert f"is {LIMIT}, larger than limit {LIMIT}" in str(refused.value)
        stats = doris_standin.txn_stats()["databases"][fresh_db]
        assert stats["peak_running"] == LIMIT  # LIMIT loads precommitted, the next one refused ...
        assert stats["running"] == 0  # ... and the failed batch aborted them
        assert runner.store.get("binlog", "committed_offset") == committed
    runner.close()
