"""The commit hook's row counts of the Doris tables a snapshot run wrote
(``PipelineService.written_targets``): the tables of the groups committed early were counted whole
right after their commit for the parity check (``cdc_core/pipeline/parity/doris_ahead.py``); while
those counts hold (the same run, the binlog and the stream's committed offset unmoved), Doris counts
only the other tables, and the check still finds its segments."""

from __future__ import annotations

from cdc_core.state.keys import PARITY_DORIS_SIDE


def test_the_hooks_counts_of_early_groups_come_from_their_parity_segments_while_they_hold(
    mysql_server, doris_standin, root_conn, fresh_db, tmp_path, spark_session, monkeypatch
):
    from cdc_core.config import load_pipeline
    from devstack.pipeline_file import write_pipeline as write_pipeline_file
    from jobs.spark_executor import spark_service

    with root_conn.cursor() as cur:
        for n in range(5):
            cur.execute(f"CREATE TABLE `{fresh_db}`.s{n} (id BIGINT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(
                f"INSERT INTO `{fresh_db}`.s{n} SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_{10 + n}"
            )
    state = tmp_path / "state"
    state.mkdir()
    path = write_pipeline_file(
        state / "pipeline.yaml",
        host="127.0.0.1",
        port=mysql_server.endpoint.port,
        fe=doris_standin.fe_http,
        tables=f"{fresh_db}.s\\.*",
        name="test_written_counts",
        state_dir=state,
        pipeline={"tidemark.doris.max-running-txns-per-db": 2},
    )
    service = spark_service(load_pipeline(path))
    keys = list(service.plan_splits().chunk_keys)
    service.run_chunks(keys, parity_run_id="run-1")  # groups of 2: two committed early, the last prepared
    assert service.commit_chunks(keys, parity_run_id="run-1") == []

    catalog = service.sink.catalog
    counted_tables: list[int] = []  # tables per COUNT statement Doris is asked
    execute = catalog.execute

    def observed(database, sql, *args, **kwargs):
        if "COUNT(*)" in sql and "SUM(" not in sql:
            counted_tables.append(sql.count("COUNT(*)"))
        return execute(database, sql, *args, **kwargs)

    monkeypatch.setattr(catalog, "execute", observed)

    def doris_side() -> dict:
        with service.store.transaction(readonly=True) as tx:
            return dict(PARITY_DORIS_SIDE.items(tx))

    expected = {f"{fresh_db}.s{n}": 10 + n for n in range(5)}
    stored = doris_side()
    assert len(stored) == 4
    updates = service.written_targets(chunk_keys=keys, run_id="run-1")
    assert {u.target.table_id: u.rows for u in updates} == expected
    assert counted_tables == [1], "Doris counted the last group's table only"
    assert all(u.target.columns for u in updates)
    assert doris_side() == stored, "read, not taken: the check uses them after"

    # another run's hook, or no run: Doris counts every table
    for run_id in ("run-2", None):
        counted_tables.clear()
        assert {
            u.target.table_id: u.rows for u in service.written_targets(chunk_keys=keys, run_id=run_id)
        } == expected
        assert counted_tables == [5]

    # a binlogged write since the segments: they no longer hold, Doris counts every table
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.other (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO `{fresh_db}`.other VALUES (1)")
    counted_tables.clear()
    assert {
        u.target.table_id: u.rows for u in service.written_targets(chunk_keys=keys, run_id="run-1")
    } == expected
    assert counted_tables == [5]
    service.close()
