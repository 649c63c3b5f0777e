"""Doris's ``max_running_txn_num_per_db`` kept (issue 30, Build item 4): with the stand-in enforcing
the limit, a snapshot run of more chunks than ``tidemark.doris.max-running-txns-per-db``, a binlog
batch whose one MySQL transaction touches more tables than it, and a crash between two of a
batch's groups: the peak number of transactions running in the database (``/_standin/txns``)
never passes the bound, and Doris equals MySQL after.
"""

from __future__ import annotations

import pytest

from cdc_core.instrumentation import phases
from cdc_core.pipeline import binlog_batch
from cdc_core.pipeline.service import PipelineService
from cdc_core.state import BatchStatus
from cdc_core.state.keys import COMMITTED_OFFSET
from jobs.spark_executor import SparkExecutor
from tests.jobs.conftest import doris_query
from tests.schema.helpers import assert_rows_match, carry_next_ddl, catch_up, doris_columns, sql

LIMIT = 4


def _no_spark():
    raise AssertionError("this small run must not start Spark")


def _tables(root_conn, db: str, n: int) -> None:
    with root_conn.cursor() as cur:
        for i in range(n):
            cur.execute(f"CREATE TABLE `{db}`.t{i} (id INT PRIMARY KEY, v INT)")
            cur.execute(f"INSERT INTO `{db}`.t{i} VALUES (1, 1), (2, 2)")


def _snapshot_with_a_log(pipeline_factory, root_conn, db: str, tables: int) -> tuple:
    """``tables`` keyed tables and ``tlog``, with no primary key (its copies are counted from Doris:
    a second load of its rows, or a re-count, would double them), snapshotted within ``LIMIT``:
    the definition and its service."""
    _tables(root_conn, db, tables)
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.tlog (n INT, msg VARCHAR(20))")
        cur.execute(f"INSERT INTO `{db}`.tlog VALUES (1, 'before')")
    options = {"tidemark.snapshot.in-process-rows": 5_000, "tidemark.doris.max-running-txns-per-db": LIMIT}
    definition = pipeline_factory(f"{db}.t.*", pipeline=options,
                                  source={"scan.incremental.snapshot.chunk.key-column": f"{db}.tlog:n"})
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    _snapshot(runner, tables + 1)
    return definition, runner


def _one_transaction_over_all(root_conn, db: str, n: int, value: int) -> None:
    with root_conn.cursor() as cur:
        cur.execute("BEGIN")
        for i in range(n):
            cur.execute(f"UPDATE `{db}`.t{i} SET v = {value} WHERE id = 1")
            cur.execute(f"INSERT INTO `{db}`.t{i} (id, v) VALUES ({value}, {value})")
        cur.execute(f"DELETE FROM `{db}`.t0 WHERE id = 2")
        cur.execute("COMMIT")


def _peak(doris_standin, db: str) -> int:
    return doris_standin.txn_stats()["databases"][db]["peak_running"]


def _assert_equal(runner: PipelineService) -> None:
    verdicts = runner.verify()
    assert verdicts and all(v.equal for v in verdicts), [v for v in verdicts if not v.equal]


def _snapshot(runner: PipelineService, tables: int) -> list[str]:
    keys = list(runner.plan_splits().chunk_keys)
    assert len(keys) == tables  # one chunk per table, all in one run
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()
    return keys


def test_a_snapshot_run_and_a_batch_over_more_tables_than_the_bound(pipeline_factory, root_conn, fresh_db,
                                                                     doris_standin, doris_txn_limit):
    tables = 2 * LIMIT + 2
    doris_txn_limit(LIMIT)
    doris_standin.reset_txn_peaks()
    _tables(root_conn, fresh_db, tables)
    definition = pipeline_factory(f"{fresh_db}.t.*", pipeline={"tidemark.snapshot.in-process-rows": 5_000,
                                                               "tidemark.doris.max-running-txns-per-db": LIMIT})
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    keys = list(runner.plan_splits().chunk_keys)
    phases.reset()  # this run's timeline alone (it keeps at most MAX_SPANS)
    # read in this process, a table after another: three groups of the commit window, two committed
    # in the run, the last PREPARED
    results = runner.run_chunks(keys)
    assert len(results) == tables
    # the timeline places each early commit (docs/performance.md reads them)
    assert [s["name"] for s in phases.timeline() if str(s["name"]).startswith("early_commit")] == [
        "early_commit 0", "early_commit 1"]
    statuses = runner.chunk_statuses()
    assert sum(s == "PREPARED" for s in statuses.values()) == tables - 2 * LIMIT
    assert sum(s == "COMMITTED" for s in statuses.values()) == 2 * LIMIT
    runner.commit_chunks(keys)
    assert runner.snapshot_done()
    assert _peak(doris_standin, fresh_db) == LIMIT
    _assert_equal(runner)

    doris_standin.reset_txn_peaks()
    committed = COMMITTED_OFFSET.get(runner.store)
    _one_transaction_over_all(root_conn, fresh_db, tables, 5)
    batch = runner.run_binlog_batch()
    assert len(batch.events_per_table) == tables
    assert len(batch.transactions) == tables - 2 * LIMIT  # the last group, left for the commit
    assert COMMITTED_OFFSET.get(runner.store) == committed  # earlier groups committed, the offset not moved
    assert runner.commit_batch(batch.batch_id)
    assert _peak(doris_standin, fresh_db) <= LIMIT
    assert doris_standin.txn_stats()["databases"][fresh_db]["running"] == 0
    _assert_equal(runner)
    runner.close()


def test_a_crash_between_a_batchs_groups_heals_with_a_plain_rerun(pipeline_factory, root_conn, fresh_db,
                                                                  doris_standin, doris_txn_limit, monkeypatch):
    tables = 2 * LIMIT + 1
    doris_txn_limit(LIMIT)
    definition, runner = _snapshot_with_a_log(pipeline_factory, root_conn, fresh_db, tables)
    committed = COMMITTED_OFFSET.get(runner.store)
    with root_conn.cursor() as cur:
        cur.execute("BEGIN")
        cur.execute(f"INSERT INTO `{fresh_db}`.tlog VALUES (2, 'in the batch'), (3, 'in the batch')")
        cur.execute("COMMIT")
    _one_transaction_over_all(root_conn, fresh_db, tables, 7)
    doris_standin.reset_txn_peaks()

    # The process dies after the batch's second group committed, its last group not loaded: the
    # fault raises and nothing cleans up (``abandon_batch`` would not run after a SIGKILL).
    monkeypatch.setenv("TIDEMARK_FAULTS", '{"binlog.between_groups": {"action": "raise", "when": {"group": 1}}}')
    monkeypatch.setattr(binlog_batch, "abandon_batch", lambda ctx, record: None)
    with pytest.raises(Exception, match="binlog.between_groups"):
        runner.run_binlog_batch()
    runner.close()
    monkeypatch.undo()
    doris_txn_limit(LIMIT)
    with runner.store.transaction(readonly=True) as tx:
        left = [b for b in tx.batches() if b.status is BatchStatus.RUNNING]
    assert len(left) == 1 and len(left[0].detail["committed_in_groups"]) == 2 * LIMIT
    assert COMMITTED_OFFSET.get(runner.store) == committed
    with root_conn.cursor() as cur:  # the binlog moves on meanwhile
        cur.execute(f"INSERT INTO `{fresh_db}`.tlog VALUES (4, 'later')")

    rerun = PipelineService(definition, executor=SparkExecutor(_no_spark))  # a plain re-run
    batch = rerun.run_binlog_batch()  # resolves the crashed batch first, then reads its range again
    assert batch.batch_id == left[0].batch_id  # the same range: the same labels, nothing loaded twice
    assert rerun.commit_batch(batch.batch_id)
    assert catch_up(rerun) is None
    assert COMMITTED_OFFSET.get(rerun.store) != committed
    assert _peak(doris_standin, fresh_db) <= LIMIT
    assert doris_standin.txn_stats()["databases"][fresh_db]["running"] == 0
    _assert_equal(rerun)
    rerun.close()


def test_a_snapshot_failing_between_groups_heals_with_a_plain_rerun(pipeline_factory, root_conn, fresh_db,
                                                                    doris_standin, doris_txn_limit, monkeypatch):
    tables = 3 * LIMIT
    doris_txn_limit(LIMIT)
    doris_standin.reset_txn_peaks()
    _tables(root_conn, fresh_db, tables)
    options = {"tidemark.snapshot.in-process-rows": 5_000, "tidemark.doris.max-running-txns-per-db": LIMIT}
    definition = pipeline_factory(f"{fresh_db}.t.*", pipeline=options)
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    keys = list(runner.plan_splits().chunk_keys)
    monkeypatch.setenv("TIDEMARK_FAULTS", '{"snapshot.between_groups": {"action": "raise", "when": {"group": 0}}}')
    with pytest.raises(Exception, match="snapshot.between_groups"):
        runner.run_chunks(keys)
    monkeypatch.delenv("TIDEMARK_FAULTS")
    statuses = runner.chunk_statuses()
    assert sum(s == "COMMITTED" for s in statuses.values()) == LIMIT  # the first group, committed in the run
    todo = [k for k, s in statuses.items() if s != "COMMITTED"]
    runner.run_chunks(todo)  # the re-run reads only the rest
    runner.commit_chunks(todo)
    assert runner.snapshot_done()
    assert _peak(doris_standin, fresh_db) <= LIMIT
    _assert_equal(runner)
    runner.close()


@pytest.mark.timeout(600)
def test_150_tables_at_doris_default_limit(pipeline_factory, root_conn, fresh_db, doris_standin, doris_txn_limit):
    """The acceptance case: Doris's default limit (100), Tidemark's default bound, 150 tables in one
    snapshot run and in one MySQL transaction."""
    tables = 150
    doris_txn_limit(100)
    doris_standin.reset_txn_peaks()
    _tables(root_conn, fresh_db, tables)
    definition = pipeline_factory(f"{fresh_db}.t.*", pipeline={"tidemark.snapshot.in-process-rows": 1_000_000})
    bound = definition.pipeline.doris_max_running_txns_per_db
    assert bound <= 100
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    _snapshot(runner, tables)
    snapshot_peak = _peak(doris_standin, fresh_db)
    doris_standin.reset_txn_peaks()
    _one_transaction_over_all(root_conn, fresh_db, tables, 9)
    batch = runner.run_binlog_batch()
    assert len(batch.events_per_table) == tables
    assert runner.commit_batch(batch.batch_id)
    binlog_peak = _peak(doris_standin, fresh_db)
    print(f"peak running transactions: snapshot {snapshot_peak}, binlog batch {binlog_peak} (bound {bound})")
    assert snapshot_peak <= bound and binlog_peak <= bound
    _assert_equal(runner)
    runner.close()


def test_a_schema_change_flushing_a_batch_over_more_tables_than_the_bound(pipeline_factory, root_conn, fresh_db,
                                                                          doris_standin, doris_txn_limit):
    """The schema change drains the binlog up to its DDL (one transaction over every table first)
    and carries the DDL over, within the bound; the stream then goes on past it."""
    tables = 2 * LIMIT + 1
    doris_txn_limit(LIMIT)
    _tables(root_conn, fresh_db, tables)
    options = {"tidemark.snapshot.in-process-rows": 5_000, "tidemark.doris.max-running-txns-per-db": LIMIT,
               "schema.change.behavior": "evolve"}
    runner = PipelineService(pipeline_factory(f"{fresh_db}.t.*", pipeline=options), executor=SparkExecutor(_no_spark))
    _snapshot(runner, tables)
    doris_standin.reset_txn_peaks()
    _one_transaction_over_all(root_conn, fresh_db, tables, 11)
    sql(root_conn, f"ALTER TABLE `{fresh_db}`.t1 ADD COLUMN c INT", f"UPDATE `{fresh_db}`.t1 SET c = id")
    _one_transaction_over_all(root_conn, fresh_db, tables, 12)
    carried = carry_next_ddl(runner)
    assert carried["apply"]["status"] == "FINISHED"
    assert catch_up(runner) is None
    assert doris_columns(doris_standin, fresh_db, "t1")["c"] == "int"
    for i in range(tables):
        assert_rows_match(doris_standin, root_conn, fresh_db, f"t{i}")
    assert _peak(doris_standin, fresh_db) <= LIMIT
    assert doris_standin.txn_stats()["databases"][fresh_db]["running"] == 0
    runner.close()


@pytest.mark.parametrize("fused", [True, False], ids=["fused-chunk-tasks", "dataframe-writer"])
def test_a_snapshot_run_on_spark_stays_within_the_bound(fused, pipeline_factory, root_conn, fresh_db, doris_standin,
                                                        doris_txn_limit, spark_session):
    """Spark's tasks precommit a group's chunks in parallel; the run commits each group before the
    next job: fused chunk tasks and the DataFrame writer alike."""
    from jobs.spark_executor import spark_service

    tables = LIMIT + 1
    doris_txn_limit(LIMIT)
    doris_standin.reset_txn_peaks()
    _tables(root_conn, fresh_db, tables)
    options = {"tidemark.snapshot.in-process-rows": 0, "tidemark.doris.max-running-txns-per-db": LIMIT,
               "tidemark.spark.fused-chunk-tasks": fused}
    runner = spark_service(pipeline_factory(f"{fresh_db}.t.*", pipeline=options))
    _snapshot(runner, tables)
    assert _peak(doris_standin, fresh_db) <= LIMIT
    _assert_equal(runner)
    runner.close()


def test_batches_begin_at_most_once_per_interval_across_runs(pipeline_factory, root_conn, fresh_db, doris_standin):
    """``tidemark.binlog.batch-interval-s`` holds for batches of different runs (processes) too: a
    table gets at most one load per interval, the batch growing instead."""
    from cdc_core.state.keys import LAST_BATCH_READ

    _tables(root_conn, fresh_db, 2)
    options = {"tidemark.snapshot.in-process-rows": 5_000, "tidemark.binlog.batch-interval-s": 1.5}
    definition = pipeline_factory(f"{fresh_db}.t.*", pipeline=options)
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    _snapshot(runner, 2)
    reads = []
    for value in (20, 21, 22):
        _one_transaction_over_all(root_conn, fresh_db, 2, value)
        batch = runner.run_binlog_batch()
        assert batch.events_per_table and runner.commit_batch(batch.batch_id)
        reads.append(LAST_BATCH_READ.get(runner.store))
        runner.close()
        runner = PipelineService(definition, executor=SparkExecutor(_no_spark))  # the next run
    assert all(b - a >= 1.5 for a, b in zip(reads, reads[1:], strict=False)), reads
    _assert_equal(runner)
    runner.close()


def test_a_batch_with_nothing_to_load_neither_waits_nor_makes_the_next_wait(pipeline_factory, root_conn, fresh_db,
                                                                             doris_standin):
    """The pace is for loads: a batch that reads only changes to a table not captured, or that stops
    before a DDL where it begins (as a schema change's flush and the batch after it do), waits for no
    interval and leaves the mark where the last batch with loads set it; the next batch with loads
    still begins them an interval after that one."""
    from cdc_core.state.keys import LAST_BATCH_READ

    interval = 2.0
    _tables(root_conn, fresh_db, 2)
    options = {"tidemark.snapshot.in-process-rows": 5_000, "tidemark.binlog.batch-interval-s": interval}
    runner = PipelineService(pipeline_factory(f"{fresh_db}.t.*", pipeline=options), executor=SparkExecutor(_no_spark))
    _snapshot(runner, 2)

    def paced(batch) -> float:
        return binlog_batch.batch_record(runner.context, batch.batch_id).detail["timings"]["paced_s"]

    _one_transaction_over_all(root_conn, fresh_db, 2, 20)
    loading = runner.run_binlog_batch()
    assert loading.events_per_table and runner.commit_batch(loading.batch_id)
    mark = LAST_BATCH_READ.get(runner.store)
    assert mark is not None
    sql(root_conn, f"CREATE TABLE `{fresh_db}`.other (id INT PRIMARY KEY)", f"INSERT INTO `{fresh_db}`.other VALUES (1)")
    uncaptured = runner.run_binlog_batch()
    assert uncaptured.batch_id and not uncaptured.events_per_table and runner.commit_batch(uncaptured.batch_id)
    sql(root_conn, f"ALTER TABLE `{fresh_db}`.t0 ADD COLUMN w INT NULL")
    at_ddl = runner.run_binlog_batch()
    assert at_ddl.batch_id and at_ddl.stopped_at_ddl and not at_ddl.events_per_table
    assert runner.commit_batch(at_ddl.batch_id)
    assert paced(uncaptured) == 0 and paced(at_ddl) == 0
    assert LAST_BATCH_READ.get(runner.store) == mark
    carry_next_ddl(runner)
    _one_transaction_over_all(root_conn, fresh_db, 2, 21)
    after = catch_up(runner)
    assert LAST_BATCH_READ.get(runner.store) >= mark + interval, after
    _assert_equal(runner)
    runner.close()


def test_a_groups_chunk_commits_are_sent_sixteen_at_a_time(pipeline_factory, root_conn, fresh_db, monkeypatch):
    """Commits that reach Doris together are published together (the stand-in's group commit, the
    FE's batched edit log): a group of one-chunk tables has 16 commits in flight, not 4."""
    import threading

    tables = 20
    _tables(root_conn, fresh_db, tables)
    definition = pipeline_factory(f"{fresh_db}.t.*", pipeline={"tidemark.snapshot.in-process-rows": 5_000})
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    sink = runner.context.sink
    real = sink.commit_surviving
    lock, in_flight, peak = threading.Lock(), [0], [0]
    sixteen = threading.Event()

    def commit_surviving(transactions, **kwargs):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
            if in_flight[0] >= 16:
                sixteen.set()
        sixteen.wait(timeout=20)  # held until 16 are in flight (or never, with fewer streams)
        try:
            return real(transactions, **kwargs)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(sink, "commit_surviving", commit_surviving)
    assert runner.commit_chunks(keys) == []
    assert peak[0] == 16
    assert runner.snapshot_done()
    _assert_equal(runner)
    runner.close()


def test_a_load_doris_lost_in_an_early_group_loads_no_keyless_row_twice(pipeline_factory, root_conn, fresh_db,
                                                                        doris_standin, doris_txn_limit,
                                                                        monkeypatch):
    """Doris aborts one load of a batch's first group before its commit (its timeout, an FE
    restart): the group's other loads commit, among them a keyless (DUPLICATE) table's, and the
    batch fails. The group's labels were recorded before its commits, so the next batch reads
    exactly the same range again though the binlog moved on: the keyless rows arrive once."""
    tables = LIMIT + 1
    doris_txn_limit(LIMIT)
    _definition, runner = _snapshot_with_a_log(pipeline_factory, root_conn, fresh_db, tables)
    committed = COMMITTED_OFFSET.get(runner.store)
    with root_conn.cursor() as cur:  # one transaction: tlog first, so in the first group
        cur.execute("BEGIN")
        cur.execute(f"INSERT INTO `{fresh_db}`.tlog VALUES (2, 'in the batch'), (3, 'in the batch')")
        for i in range(tables):
            cur.execute(f"UPDATE `{fresh_db}`.t{i} SET v = 9 WHERE id = 1")
        cur.execute("COMMIT")

    real_commit_group = binlog_batch._commit_group
    aborted: list[str] = []

    def lose_one_then_commit(ctx, running, loaded, n, groups, limit):
        if n == 0:
            victim = next(c for c in loaded if "tlog" not in c["label"])
            ctx.sink.committer.abort_txn(victim["db"], victim["txn_id"], label=victim["label"])
            aborted.append(victim["label"])
        return real_commit_group(ctx, running, loaded, n, groups, limit)

    monkeypatch.setattr(binlog_batch, "_commit_group", lose_one_then_commit)
    with pytest.raises(RuntimeError, match="Doris lost 1 load"):
        runner.run_binlog_batch()
    monkeypatch.undo()
    doris_txn_limit(LIMIT)
    assert aborted
    with runner.store.transaction(readonly=True) as tx:
        failed = [b for b in tx.batches() if b.status is BatchStatus.ABORTED]
    assert len(failed) == 1
    kept = failed[0].detail["committed_in_groups"]
    assert any("tlog" in label for label in kept) and aborted[0] in kept  # recorded before the commits
    assert COMMITTED_OFFSET.get(runner.store) == committed
    with root_conn.cursor() as cur:  # the binlog moves on meanwhile
        cur.execute(f"INSERT INTO `{fresh_db}`.tlog VALUES (4, 'later')")

    batch = runner.run_binlog_batch()  # the same range again: the same labels
    assert batch.batch_id == failed[0].batch_id
    assert runner.commit_batch(batch.batch_id)
    assert catch_up(runner) is None
    rows = sorted(r[0] for r in doris_query(doris_standin, fresh_db, "SELECT n FROM tlog"))
    assert rows == [1, 2, 3, 4]
    _assert_equal(runner)
    runner.close()


def test_the_local_workers_read_on_while_the_window_commits(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                            doris_txn_limit, monkeypatch):
    """A run of more chunks than the bound read by the local worker processes (chunk by chunk, not
    a group at a time): one decision for the whole run, chunks committed early while others are
    read, never more than the bound running in Doris, the last ones left PREPARED for the run's
    commit, and Doris equals MySQL after."""
    import cdc_core.pipeline.snapshot_estimate as estimate
    import jobs.spark_executor
    from jobs.local_workers import discard_local_workers

    tables = 12
    doris_txn_limit(LIMIT)
    doris_standin.reset_txn_peaks()
    with root_conn.cursor() as cur:
        for i in range(tables):
            cur.execute(f"CREATE TABLE `{fresh_db}`.t{i} (id INT PRIMARY KEY, v INT)")
            cur.execute(f"INSERT INTO `{fresh_db}`.t{i} SELECT seq, seq FROM `{fresh_db}`.seq_1_to_200")
        cur.execute(f"ANALYZE TABLE {', '.join(f'`{fresh_db}`.t{i}' for i in range(tables))}")
    monkeypatch.setattr(estimate, "SERIAL_MAX_ROWS", 1_200)  # the run's ~2,400 rows go to the workers
    decided: list[int] = []
    real = jobs.spark_executor.local_worker_count

    def counted(definition, work):
        decided.append(real(definition, work))
        return decided[-1]

    monkeypatch.setattr(jobs.spark_executor, "local_worker_count", counted)
    definition = pipeline_factory(f"{fresh_db}.t.*", pipeline={"tidemark.snapshot.in-process-rows": 5_000,
                                                               "tidemark.doris.max-running-txns-per-db": LIMIT})
    runner = PipelineService(definition, executor=SparkExecutor(_no_spark))
    try:
        keys = list(runner.plan_splits().chunk_keys)
        assert len(keys) == tables
        phases.reset()
        assert len(runner.run_chunks(keys)) == tables
        assert decided == [2], decided  # the pipeline's parallelism, decided once for the run
        statuses = runner.chunk_statuses()
        prepared = sum(s == "PREPARED" for s in statuses.values())
        assert 0 < prepared <= LIMIT, statuses
        assert sum(s == "COMMITTED" for s in statuses.values()) == tables - prepared
        assert any(str(s["name"]).startswith("early_commit") for s in phases.timeline())
        assert doris_standin.txn_stats()["databases"][fresh_db]["running"] == prepared
        runner.commit_chunks(keys)
        assert runner.snapshot_done()
        assert _peak(doris_standin, fresh_db) <= LIMIT
        _assert_equal(runner)
    finally:
        runner.close()
        discard_local_workers()
