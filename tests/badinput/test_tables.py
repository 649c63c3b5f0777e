"""Tables in odd states: empty when the snapshot reads it, dropped between planning and reading."""

from __future__ import annotations

from jobs.spark_executor import spark_service
from tests.badinput.test_identifiers import IN_PROCESS, catch_up, sql
from tests.jobs.conftest import doris_query
from tests.schema.helpers import doris as doris_query_raw


def test_an_empty_table_is_one_chunk_of_no_rows_and_its_later_rows_arrive(pipeline_factory, root_conn, fresh_db,
                                                                          doris_standin):
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.empty (id INT PRIMARY KEY, v VARCHAR(10))",
        f"CREATE TABLE `{db}`.nokey (v VARCHAR(10), n INT)")
    split_on = {"scan.incremental.snapshot.chunk.key-column": f"{db}.nokey:n"}
    service = spark_service(pipeline_factory(f"{db}.\\.*", source=split_on, pipeline=IN_PROCESS))
    try:
        keys = list(service.plan_splits().chunk_keys)
        assert len(keys) == 2, keys  # one unbounded chunk per table
        results = service.run_chunks(keys)
        assert [r.rows for r in results] == [0, 0]
        service.commit_chunks(keys)
        assert service.snapshot_done()
        for table in ("empty", "nokey"):
            assert doris_query(doris_standin, db, f"SELECT COUNT(*) FROM `{table}`") == [[0]]
        assert all(v.equal for v in service.verify())
        sql(root_conn, f"INSERT INTO `{db}`.empty VALUES (1, 'a'), (2, 'b')", f"UPDATE `{db}`.empty SET v = 'c' WHERE id = 2",
            f"INSERT INTO `{db}`.nokey VALUES ('x', 1)")
        catch_up(service)
        assert doris_query(doris_standin, db, "SELECT id, v FROM empty ORDER BY id") == [[1, "a"], [2, "c"]]
        assert doris_query(doris_standin, db, "SELECT v, n FROM nokey") == [["x", 1]]
        assert all(v.equal for v in service.verify())
    finally:
        service.close()


def test_a_table_dropped_after_planning_is_skipped_and_the_rest_goes_on(pipeline_factory, root_conn, fresh_db,
                                                                         doris_standin, caplog):
    """``gone`` is planned and its first chunk loaded, then it is dropped before its other chunks
    are read (with a change before the DROP): the next run loads the rest of ``keep``, marks
    ``gone``'s remaining chunks done without rows and says why; the stream carries the DROP per
    ``schema.change.behavior`` (evolve: the Doris table is dropped)."""
    from tests.schema.helpers import carry_next_ddl

    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.keep (id INT PRIMARY KEY, v INT)",
        f"CREATE TABLE `{db}`.gone (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{db}`.keep SELECT seq, seq FROM `{db}`.seq_1_to_300",
        f"INSERT INTO `{db}`.gone SELECT seq, seq FROM `{db}`.seq_1_to_300")
    service = spark_service(pipeline_factory(f"{db}.\\.*", source={"scan.incremental.snapshot.chunk.size": 100},
                                             pipeline={**IN_PROCESS, "schema.change.behavior": "evolve"}))
    try:
        keys = list(service.plan_splits().chunk_keys)
        first = [f"{db}.keep#00000", f"{db}.gone#00000"]
        assert set(first) <= set(keys), keys
        # a first chunk holds about 100 rows: the splitter's step is the chunk size times the
        # distribution factor, which rests on InnoDB's approximate row count (300 or 301 here)
        first_rows = {r.key: r.rows for r in service.run_chunks(first)}
        assert all(95 <= n <= 100 for n in first_rows.values()), first_rows
        service.commit_chunks(first)
        keys = [k for k in keys if k not in first]
        gone_keys = [k for k in keys if k.startswith(f"{db}.gone#")]
        assert gone_keys
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM gone") == [[first_rows[f"{db}.gone#00000"]]]
        sql(root_conn, f"UPDATE `{db}`.gone SET v = 0 WHERE id = 1", f"DROP TABLE `{db}`.gone",
            f"UPDATE `{db}`.keep SET v = -1 WHERE id = 1")
        with caplog.at_level("WARNING", logger="cdc_core.pipeline.snapshot"):
            results = service.run_chunks(keys)
        assert {r.key: r.rows for r in results if r.key in gone_keys} == dict.fromkeys(gone_keys, 0)
        assert sum(r.rows for r in results) == 300 - first_rows[f"{db}.keep#00000"]
        warning = [r.getMessage() for r in caplog.records if "no longer exists" in r.getMessage()]
        assert warning and f"{db}.gone no longer exists on the server" in warning[0]
        service.commit_chunks(keys)
        assert service.snapshot_done()
        parity = service.chunks_parity(keys)
        assert all(p.ok for p in parity)
        skipped = [p.detail.get("skipped", "") for p in parity if p.table_id == f"{db}.gone"]
        assert len(skipped) == len(gone_keys) and all("MySQL no longer has the table" in s for s in skipped)
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM keep") == [[300]]

        # the stream: it stops before the DROP, which the schema change carries over (evolve: drop it)
        batch = service.run_binlog_batch()
        service.commit_batch(batch.batch_id)
        assert batch.stopped_at_ddl, batch
        out = carry_next_ddl(service)
        assert out["resume"]["status"] == "IDLE", out
        assert [c["outcome"] for c in out["apply"]["changes"]] == ["applied"], out["apply"]
        assert "does not exist" in str(doris_query_raw(doris_standin, db, "SELECT COUNT(*) FROM gone"))
        catch_up(service)
        assert doris_query(doris_standin, db, "SELECT v FROM keep WHERE id = 1") == [[-1]]
        verdicts = {v.table_id: v for v in service.verify()}
        assert verdicts[f"{db}.keep"].equal and not verdicts[f"{db}.keep"].skipped
        assert "MySQL no longer has the table" in verdicts[f"{db}.gone"].skipped
        # the next plain run goes on
        sql(root_conn, f"INSERT INTO `{db}`.keep VALUES (301, 301)")
        catch_up(service)
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM keep") == [[301]]
    finally:
        service.close()


def test_a_table_the_user_may_no_longer_read_fails_the_run_with_the_grant_to_give(pipeline_factory, root_conn,
                                                                                 fresh_db, doris_standin):
    """A lost SELECT hides a table from information_schema as a DROP does, but its rows are still
    there: the run must not skip it. It fails naming the table and the grant, its chunks wait, and
    after the GRANT a plain re-run loads them."""
    import pymysql
    import pytest

    from cdc_core.state import ChunkStatus

    db = fresh_db
    user = f"ro_{db}"[:32]
    sql(root_conn, f"CREATE TABLE `{db}`.keep (id INT PRIMARY KEY, v INT)",
        f"CREATE TABLE `{db}`.hidden (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{db}`.keep SELECT seq, seq FROM `{db}`.seq_1_to_200",
        f"INSERT INTO `{db}`.hidden SELECT seq, seq FROM `{db}`.seq_1_to_200",
        f"CREATE USER '{user}'@'%' IDENTIFIED BY 'ro-pass'",
        f"GRANT REPLICATION SLAVE, REPLICATION CLIENT, RELOAD ON *.* TO '{user}'@'%'",
        f"GRANT SELECT ON `{db}`.keep TO '{user}'@'%'", f"GRANT SELECT ON `{db}`.hidden TO '{user}'@'%'")
    service = spark_service(pipeline_factory(f"{db}.(keep|hidden)", source={"username": user, "password": "ro-pass"},
                                             pipeline=IN_PROCESS))
    try:
        keys = list(service.plan_splits().chunk_keys)
        sql(root_conn, f"REVOKE SELECT ON `{db}`.hidden FROM '{user}'@'%'")
        with pytest.raises(Exception, match=r"cannot read table .*hidden.*grant SELECT") as caught:
            service.run_chunks(keys)
        cause = caught.value
        while cause is not None and not isinstance(cause, pymysql.err.MySQLError):
            cause = cause.__cause__
        assert cause is not None and cause.args[0] == 1142  # the server's own answer stays the cause
        assert ChunkStatus.COMMITTED not in set(service.chunk_statuses().values())
        sql(root_conn, f"GRANT SELECT ON `{db}`.hidden TO '{user}'@'%'")
        results = service.run_chunks(keys)
        service.commit_chunks(keys)
        assert sum(r.rows for r in results) == 400
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM hidden") == [[200]]
        assert all(v.equal for v in service.verify())
    finally:
        service.close()
        sql(root_conn, f"DROP USER IF EXISTS '{user}'@'%'")


def test_a_table_dropped_between_the_plan_and_the_chunks_run_through_dagster(mysql_server, root_conn, fresh_db,
                                                                              doris_standin, tmp_path):
    """The same through the Dagster jobs ``tidemark run --once`` executes: the splits job plans both
    tables, ``gone`` is dropped, then the run reads the chunks (hooks, parity checks, the binlog) and
    succeeds; the next plain run goes on."""
    import warnings

    import dagster as dg
    from rich.console import Console

    from cdc_core.config import load_pipeline
    from orchestration.cli.run_once import OnceRun
    from orchestration.definitions import build_definitions
    from orchestration.defs.pipelines import PipelineHandle
    from tests.badinput.test_connections import write

    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.keep (id INT PRIMARY KEY, v INT)",
        f"CREATE TABLE `{db}`.gone (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{db}`.keep SELECT seq, seq FROM `{db}`.seq_1_to_200",
        f"INSERT INTO `{db}`.gone SELECT seq, seq FROM `{db}`.seq_1_to_200")
    path = write(tmp_path, mysql_server, db, fe=doris_standin.fe_http)
    handle = PipelineHandle.load(path)
    with dg.instance_for_test() as instance:
        build_definitions([handle]).resolve_job_def(handle.splits_job_name).execute_in_process(instance=instance)
        sql(root_conn, f"DROP TABLE `{db}`.gone", f"INSERT INTO `{db}`.keep VALUES (201, 201)")
        quiet = Console(stderr=True, quiet=True)
        once = OnceRun(handle, instance, console=quiet)
        try:
            summary = once.run()
        finally:
            once.service.close()
        assert summary.chunks_total == 2 and summary.rows == 201, summary
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM keep") == [[201]]
        sql(root_conn, f"UPDATE `{db}`.keep SET v = 0 WHERE id = 1")
        once = OnceRun(handle, instance, console=quiet)
        try:
            once.run()
        finally:
            once.service.close()
    service = spark_service(load_pipeline(path))
    try:
        verdicts = {v.table_id: v for v in service.verify()}
        assert verdicts[f"{db}.keep"].equal and "no longer" in verdicts[f"{db}.gone"].skipped
        assert doris_query(doris_standin, db, "SELECT v FROM keep WHERE id = 1") == [[0]]
    finally:
        service.close()
