"""Recovery (exactly-once rule 2) and parity checks of the runner, against the real stack."""

from __future__ import annotations

from cdc_core.state import ChunkStatus
from jobs.spark_executor import spark_service
from tests.jobs.conftest import doris_query


def make_table(root_conn, db: str, rows: int = 900) -> None:
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.acct (id INT PRIMARY KEY, owner VARCHAR(20), balance DECIMAL(12,2), "
                    "opened DATETIME(3))")
        cur.execute(f"INSERT INTO `{db}`.acct SELECT seq, CONCAT('o', seq), seq * 1.5, "
                    f"'2026-01-01' + INTERVAL seq MINUTE FROM `{db}`.seq_1_to_{rows}")


def test_prepared_chunks_left_by_a_crash_are_committed_once(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                             spark_session):
    make_table(root_conn, fresh_db)
    definition = pipeline_factory(f"{fresh_db}.acct", source={"scan.incremental.snapshot.chunk.size": 400})
    crashed = spark_service(definition)
    keys = list(crashed.plan_splits().chunk_keys)
    crashed.run_chunks(keys)  # ...and the process dies before the success hook commits
    assert {t["owner"] for t in crashed.pending_transactions()} == set(keys)
    crashed.close()

    restarted = spark_service(definition)
    report = restarted.resolve_pending()
    assert len(report.committed) == len(keys) and not report.failed
    assert restarted.snapshot_done() and restarted.pending_transactions() == []
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM acct") == [[900]]
    assert restarted.resolve_pending().committed == ()  # nothing left the second time
    restarted.close()


def test_a_job_that_died_mid_way_is_aborted_and_rerun_cleanly(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                               spark_session):
    make_table(root_conn, fresh_db)
    definition = pipeline_factory(f"{fresh_db}.acct", source={"scan.incremental.snapshot.chunk.size": 400})
    runner = spark_service(definition)
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    # Make it look as if the process died after the loads were precommitted but before they were recorded.
    with runner.store.transaction() as tx:
        for c in tx.chunks():
            tx.update_chunk(c.table_id, c.chunk_index, status=ChunkStatus.RUNNING, transactions=None)
    report = spark_service(definition).resolve_pending()
    assert len(report.aborted) == len(keys)
    with runner.store.transaction(readonly=True) as tx:
        assert {c.status for c in tx.chunks()} == {ChunkStatus.PENDING}
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM acct") == [[900]]
    runner.close()


def test_prepared_binlog_batch_is_committed_by_the_next_run(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                            spark_session):
    make_table(root_conn, fresh_db, rows=100)
    definition = pipeline_factory(f"{fresh_db}.acct")
    runner = spark_service(definition)
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    with root_conn.cursor() as cur:
        cur.execute(f"UPDATE `{fresh_db}`.acct SET balance = 0 WHERE id <= 10")
    batch = runner.run_binlog_batch()  # prepared; the commit hook never ran
    runner.close()
    later = spark_service(definition)
    later.resolve_pending()
    assert later.store.get("binlog", "committed_offset") == batch.end_offset
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM acct WHERE balance = 0") == [[10]]
    later.close()


def test_parity_sees_equal_and_diverged_data(pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    make_table(root_conn, fresh_db)
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.tags (name VARCHAR(20) PRIMARY KEY, n INT) "
                    "COLLATE utf8mb4_general_ci")
        cur.execute(f"INSERT INTO `{fresh_db}`.tags VALUES ('alpha', 1), ('Beta', 2), ('gamma', 3), ('Delta', 4)")
    definition = pipeline_factory(f"{fresh_db}.\\.*", source={"scan.incremental.snapshot.chunk.size": 400})
    runner = spark_service(definition)
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    for key in keys:
        result = runner.chunk_parity(key)
        assert result.ok, result
    whole = runner.table_parity(f"{fresh_db}.acct")
    assert whole.ok and whole.mysql_rows == 900
    assert runner.table_parity(f"{fresh_db}.tags").ok
    with root_conn.cursor() as cur:  # a change Doris has not seen yet
        cur.execute(f"UPDATE `{fresh_db}`.acct SET owner = 'changed' WHERE id = 5")
    diverged = runner.table_parity(f"{fresh_db}.acct")
    assert not diverged.ok and diverged.mysql_rows == diverged.doris_rows == 900
    runner.close()


def test_a_fresh_state_does_not_meet_the_labels_of_an_old_one(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                                spark_session):
    import shutil

    make_table(root_conn, fresh_db, rows=300)
    definition = pipeline_factory(f"{fresh_db}.acct")
    first = spark_service(definition)
    keys = list(first.plan_splits().chunk_keys)
    first.run_chunks(keys)
    first.commit_chunks(keys)
    old_prefix = first.sink.label_prefix
    first.close()
    shutil.rmtree(definition.state_dir)  # the user starts over: a new snapshot into the same Doris table

    with root_conn.cursor() as cur:
        cur.execute(f"UPDATE `{fresh_db}`.acct SET owner = 'again' WHERE id <= 3")
    second = spark_service(definition)
    assert second.sink.label_prefix != old_prefix
    keys = list(second.plan_splits().chunk_keys)
    second.run_chunks(keys)
    second.commit_chunks(keys)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM acct WHERE owner = 'again'") == [[3]]
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM acct") == [[300]]
    second.close()


def _abort_behind_our_back(service, owners=None) -> int:
    """Doris aborts precommitted transactions on its own (its transaction timeout, an FE restart): the
    same state, reached through its 2PC API, for every prepared transaction of the pipeline."""
    committer = service.sink.committer
    txns = [t for t in service.pending_transactions() if owners is None or t["owner"] in owners]
    for t in txns:
        committer.abort_txn(t["db"], t["txn_id"], label=t["label"])
    return len(txns)


def test_chunk_loads_doris_aborted_before_the_commit_are_read_again(pipeline_factory, root_conn, fresh_db,
                                                                    doris_standin, spark_session):
    make_table(root_conn, fresh_db)
    definition = pipeline_factory(f"{fresh_db}.acct", source={"scan.incremental.snapshot.chunk.size": 400})
    service = spark_service(definition)
    keys = list(service.plan_splits().chunk_keys)
    service.run_chunks(keys)
    lost = keys[1:]
    assert _abort_behind_our_back(service, set(lost)) == len(lost)
    report = service.resolve_pending()  # a plain next run starts with this
    assert set(report.redo) == set(lost) and not report.failed
    statuses = service.chunk_statuses()
    assert statuses[keys[0]] is ChunkStatus.COMMITTED
    assert {statuses[k] for k in lost} == {ChunkStatus.PENDING}
    with service.store.transaction(readonly=True) as tx:
        assert {c.generation for c in tx.chunks() if c.status is ChunkStatus.PENDING} == {1}, "next generation's label"
    service.run_chunks(lost)
    assert service.commit_chunks(lost) == []
    assert service.snapshot_done() and service.pending_transactions() == []
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM acct") == [[900]]
    assert service.table_parity(f"{fresh_db}.acct").ok
    service.close()


def test_a_binlog_batch_doris_aborted_before_the_commit_is_read_again(pipeline_factory, root_conn, fresh_db,
                                                                      doris_standin, spark_session):
    make_table(root_conn, fresh_db, rows=100)
    definition = pipeline_factory(f"{fresh_db}.acct")
    service = spark_service(definition)
    keys = list(service.plan_splits().chunk_keys)
    service.run_chunks(keys)
    service.commit_chunks(keys)
    with root_conn.cursor() as cur:
        cur.execute(f"UPDATE `{fresh_db}`.acct SET balance = 0 WHERE id <= 10")
        cur.execute(f"DELETE FROM `{fresh_db}`.acct WHERE id > 95")
    before = service.binlog_lag().committed_offset
    batch = service.run_binlog_batch()
    assert _abort_behind_our_back(service) >= 1
    assert service.commit_batch(batch.batch_id) is False  # the hook's commit: lost, not an error
    assert service.binlog_lag().committed_offset == before, "the offset stays at the batch's start"
    again = service.run_binlog_batch()  # the next tick reads the same range again
    assert again.start_offset == batch.start_offset
    assert service.commit_batch(again.batch_id) is True
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM acct WHERE balance = 0") == [[10]]
    assert service.table_parity(f"{fresh_db}.acct").ok
    service.close()
