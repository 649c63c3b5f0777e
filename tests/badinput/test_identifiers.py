"""Identifiers a user may have: quotes, backticks, unicode, reserved words, 64-character names.

Each is carried by the snapshot and by the binlog (insert, update, delete after the snapshot) into
the Doris stand-in, and ``verify`` finds Doris equal to MySQL. A name Doris cannot take (a table
name with a quote, a column name with a backtick) is refused before anything is loaded, naming the
table or column and the fix.
"""

from __future__ import annotations

import pytest

from cdc_core.pipeline.service import PipelineService
from jobs.spark_executor import spark_service
from tests.jobs.conftest import doris_query

LONG_TABLE = "t" + "x" * 62 + "z"  # 64 characters, MySQL's and Doris's limit
LONG_COLUMN = "c" + "y" * 62 + "w"
IN_PROCESS = {"tidemark.snapshot.in-process-rows": 50_000}  # small runs: no Spark


def sql(conn, *statements: str) -> None:
    with conn.cursor() as cur:
        for s in statements:
            cur.execute(s)


def snapshot(service: PipelineService) -> list[str]:
    keys = list(service.plan_splits().chunk_keys)
    service.run_chunks(keys)
    service.commit_chunks(keys)
    assert service.snapshot_done()
    return keys


def catch_up(service: PipelineService) -> None:
    for _ in range(20):
        batch = service.run_binlog_batch()
        if batch.batch_id:
            service.commit_batch(batch.batch_id)
        assert not batch.stopped_at_ddl, batch.stopped_at_ddl
        if not batch.batch_id or batch.start_offset == batch.end_offset:
            return
    raise AssertionError("the stream did not catch up")


@pytest.mark.parametrize("reader", ["in_process", pytest.param("spark", marks=pytest.mark.slow)])
def test_quoted_unicode_reserved_and_long_names_by_snapshot_and_binlog(reader, pipeline_factory, root_conn, fresh_db,
                                                                        doris_standin, request):
    """In the driver, and on Spark (chunks read and loaded in Spark tasks, binlog batches compacted
    and loaded on Spark: ~2 min on this machine, so ``slow``); verify compares every table."""
    if reader == "spark":
        request.getfixturevalue("spark_session")
    db = fresh_db
    sql(root_conn,
        f"CREATE TABLE `{db}`.`select` (`key` INT PRIMARY KEY, `order` VARCHAR(20), `a\"b` INT, "
        f"`café_ñ` VARCHAR(10), `列名` INT, `{LONG_COLUMN}` INT, `from` DATE) DEFAULT CHARSET=utf8mb4",
        f"CREATE TABLE `{db}`.`café_ñ` (id INT PRIMARY KEY, v VARCHAR(10)) DEFAULT CHARSET=utf8mb4",
        f"CREATE TABLE `{db}`.`订单` (`编号` INT PRIMARY KEY, `金额` DECIMAL(10,2)) DEFAULT CHARSET=utf8mb4",
        f"CREATE TABLE `{db}`.`{LONG_TABLE}` (id INT PRIMARY KEY, v INT)",
        f"CREATE TABLE `{db}`.`it's ``odd`` \"name\"` (`id` INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{db}`.`select` VALUES (1, 'o1', 1, 'ñ', 10, 100, '2026-01-01'), (2, 'o2', 2, 'é', 20, 200, NULL)",
        f"INSERT INTO `{db}`.`café_ñ` VALUES (1, 'a'), (2, 'b')",
        f"INSERT INTO `{db}`.`订单` VALUES (1, 1.50), (2, 2.25)",
        f"INSERT INTO `{db}`.`{LONG_TABLE}` VALUES (1, 1), (2, 2)",
        f"INSERT INTO `{db}`.`it's ``odd`` \"name\"` VALUES (1, 1), (2, 2)")
    definition = pipeline_factory(
        f"{db}.\\.*", pipeline=IN_PROCESS if reader == "in_process" else {"tidemark.binlog.spark-min-events": 1},
        route=[{"source-table": f"{db}.it's `odd` \"name\"", "sink-table": f"{db}.odd_name"}])
    service = spark_service(definition)
    try:
        snapshot(service)
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM `select`") == [[2]]
        assert doris_query(doris_standin, db, "SELECT COUNT(*) FROM odd_name") == [[2]]
        sql(root_conn,
            f"INSERT INTO `{db}`.`select` VALUES (3, 'o3', 3, 'ç', 30, 300, '2026-02-02')",
            f"UPDATE `{db}`.`select` SET `order` = 'o1b', `a\"b` = 11, `café_ñ` = 'ü', `{LONG_COLUMN}` = 101 WHERE `key` = 1",
            f"DELETE FROM `{db}`.`select` WHERE `key` = 2",
            f"INSERT INTO `{db}`.`café_ñ` VALUES (3, 'c')",
            f"UPDATE `{db}`.`订单` SET `金额` = 9.99 WHERE `编号` = 1",
            f"DELETE FROM `{db}`.`订单` WHERE `编号` = 2",
            f"INSERT INTO `{db}`.`{LONG_TABLE}` VALUES (3, 3)",
            f"UPDATE `{db}`.`it's ``odd`` \"name\"` SET v = 7 WHERE id = 1",
            f"DELETE FROM `{db}`.`it's ``odd`` \"name\"` WHERE id = 2")
        catch_up(service)
        verdicts = service.verify()
        assert {v.table_id for v in verdicts} == {f"{db}.select", f"{db}.café_ñ", f"{db}.订单", f"{db}.{LONG_TABLE}",
                                                  f"{db}.it's `odd` \"name\""}
        assert all(v.equal for v in verdicts), [v for v in verdicts if not v.equal]
        assert doris_query(doris_standin, db, "SELECT `key`, `order`, `a\"b`, `café_ñ` FROM `select` ORDER BY 1") == [
            [1, "o1b", 11, "ü"], [3, "o3", 3, "ç"]]
        assert doris_query(doris_standin, db, "SELECT * FROM odd_name ORDER BY 1")[0][:2] == [1, 7]
    finally:
        service.close()


def test_names_doris_cannot_take_are_refused_before_anything_is_loaded(pipeline_factory, mysql_server, root_conn,
                                                                      fresh_db, doris_standin, tmp_path, capsys):
    """A quote in a table name, a table starting with '_', a single quote or a backtick in a column
    name: Doris refuses each under any setting. The first planning round and ``tidemark validate
    --connect`` name each, with the fix; nothing is recorded and Doris is not touched."""
    from cdc_core.doris.names import DorisNameError
    from orchestration.cli.tidemark import main
    from tests.orchestration.test_cli import write_pipeline

    db = fresh_db
    sql(root_conn,
        f"CREATE TABLE `{db}`.`it's` (id INT PRIMARY KEY)",
        f"CREATE TABLE `{db}`.`_under` (id INT PRIMARY KEY)",
        f"CREATE TABLE `{db}`.cols (id INT PRIMARY KEY, `it's` INT, `a``b` INT, fine INT)")
    service = spark_service(pipeline_factory(f"{db}.\\.*", pipeline=IN_PROCESS))
    try:
        with pytest.raises(DorisNameError) as caught:
            service.plan_splits()
        text = str(caught.value)
        assert f"{db}.it's -> Doris {db}.it's: table name \"it's\" has character(s) \"'\"" in text
        assert f"sink-table: {db}.<new_name>" in text and "route:" in text
        assert f"{db}._under -> Doris {db}._under: table name '_under' must start with a letter" in text
        assert "column name \"it's\"" in text and "column name 'a`b'" in text and "transform:" in text
        assert "fine" not in text
        assert service.chunk_keys() == [] and service.captured_tables() == []
    finally:
        service.close()
    databases = doris_query(doris_standin, "information_schema", "SHOW DATABASES")
    assert [db] not in databases

    ep = mysql_server.endpoint
    path = write_pipeline(tmp_path, ep, db, ep.user, ep.password)
    assert main(["validate", "--connect", str(path)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 4, lines
    assert all(line.startswith(f"{path}: {db}.") for line in lines)

    # the way out: route the tables, rename the column by a projection
    sql(root_conn, f"ALTER TABLE `{db}`.cols DROP COLUMN `it's`, DROP COLUMN `a``b`")
    routed = spark_service(pipeline_factory(f"{db}.\\.*", pipeline=IN_PROCESS, route=[
        {"source-table": f"{db}.it's", "sink-table": f"{db}.its"},
        {"source-table": f"{db}._under", "sink-table": f"{db}.under"}]))
    try:
        snapshot(routed)
        assert all(v.equal for v in routed.verify())
    finally:
        routed.close()


def test_row_count_estimate_escapes_like_wildcards(root_conn, fresh_db):
    """``SHOW TABLE STATUS LIKE 'a_b'`` also matches ``aXb``; the estimate is ``a_b``'s own."""
    from cdc_core.model.schema import TableId
    from cdc_core.mysql.discovery import approximate_row_count

    sql(root_conn,
        f"CREATE TABLE `{fresh_db}`.aXb (id INT PRIMARY KEY)",
        f"CREATE TABLE `{fresh_db}`.a_b (id INT PRIMARY KEY)",
        f"CREATE TABLE `{fresh_db}`.`50%` (id INT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.aXb SELECT seq FROM `{fresh_db}`.seq_1_to_500",
        f"INSERT INTO `{fresh_db}`.`50%` SELECT seq FROM `{fresh_db}`.seq_1_to_40",
        f"ANALYZE TABLE `{fresh_db}`.aXb, `{fresh_db}`.a_b, `{fresh_db}`.`50%`")
    assert approximate_row_count(root_conn, TableId(fresh_db, "a_b")) == 0
    assert approximate_row_count(root_conn, TableId(fresh_db, "aXb")) == 500
    assert approximate_row_count(root_conn, TableId(fresh_db, "50%")) == 40


def test_a_database_named_with_quotes_and_unicode_is_routed_to_a_doris_name(pipeline_factory, root_conn, fresh_db,
                                                                           doris_standin):
    """MySQL's database ``it's `q` é``: Doris cannot name a database so; planning says so and names
    the route. Routed, its table is snapshotted and streamed (every statement on the MySQL side
    quotes the database name) and verify finds it equal."""
    from cdc_core.doris.names import DorisNameError

    odd = f"it's `q` é{fresh_db[-4:]}"
    quoted = "`" + odd.replace("`", "``") + "`"
    sql(root_conn, f"CREATE DATABASE {quoted} CHARACTER SET utf8mb4",
        f"CREATE TABLE {quoted}.`order` (`key` INT PRIMARY KEY, `group` VARCHAR(10))",
        f"INSERT INTO {quoted}.`order` VALUES (1, 'a'), (2, 'b')")
    try:
        service = spark_service(pipeline_factory(f"{odd}.order", pipeline=IN_PROCESS))
        try:
            with pytest.raises(DorisNameError, match=r"database name .* has character\(s\)"):
                service.plan_splits()
        finally:
            service.close()
        service = spark_service(pipeline_factory(f"{odd}.order", pipeline=IN_PROCESS, route=[
            {"source-table": f"{odd}.order", "sink-table": f"{fresh_db}.orders"}]))
        try:
            snapshot(service)
            sql(root_conn, f"UPDATE {quoted}.`order` SET `group` = 'z' WHERE `key` = 1",
                f"DELETE FROM {quoted}.`order` WHERE `key` = 2", f"INSERT INTO {quoted}.`order` VALUES (3, 'c')")
            catch_up(service)
            assert doris_query(doris_standin, fresh_db, "SELECT `key`, `group` FROM orders ORDER BY 1") == [
                [1, "z"], [3, "c"]]
            verdicts = service.verify()
            assert [v.table_id for v in verdicts] == [f"{odd}.order"] and verdicts[0].equal
        finally:
            service.close()
    finally:
        sql(root_conn, f"DROP DATABASE IF EXISTS {quoted}")


def test_primary_keys_doris_cannot_key_on_are_refused_before_anything_is_loaded(pipeline_factory, mysql_server,
                                                                                 root_conn, fresh_db, doris_standin,
                                                                                 tmp_path, capsys):
    """A FLOAT, DOUBLE or JSON primary-key column: Doris cannot key a table on it. Planning and
    ``tidemark validate --connect`` name the table, the column and the way out; a table without a
    primary key whose first column is FLOAT is fine (a keyless Doris table)."""
    from cdc_core.doris.names import DorisNameError
    from orchestration.cli.tidemark import main
    from tests.orchestration.test_cli import write_pipeline

    db = fresh_db
    sql(root_conn,
        f"CREATE TABLE `{db}`.fk (f FLOAT PRIMARY KEY, v INT)",
        f"CREATE TABLE `{db}`.dk (id INT, d DOUBLE, PRIMARY KEY (id, d))",
        f"CREATE TABLE `{db}`.nokey (f FLOAT, v INT)",
        f"CREATE TABLE `{db}`.fine (id INT PRIMARY KEY, f FLOAT)")
    service = spark_service(pipeline_factory(f"{db}.\\.*", pipeline=IN_PROCESS))
    try:
        with pytest.raises(DorisNameError) as caught:
            service.plan_splits()
        text = str(caught.value)
        assert f"{db}.fk: primary-key column f is float, a FLOAT in Doris" in text
        assert f"{db}.dk: primary-key column d is double, a DOUBLE in Doris" in text
        assert "transform:" in text and "primary-keys" in text
        assert "nokey" not in text and "fine" not in text
        assert service.chunk_keys() == []
    finally:
        service.close()
    assert [db] not in doris_query(doris_standin, "information_schema", "SHOW DATABASES")

    ep = mysql_server.endpoint
    path = write_pipeline(tmp_path, ep, db, ep.user, ep.password, fe=doris_standin.fe_http)
    assert main(["validate", "--connect", str(path)]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all("primary-key column" in line for line in lines), lines


def test_a_tinyint1_primary_key_read_as_boolean_is_refused_and_loads_exactly_without_the_option(
        pipeline_factory, root_conn, fresh_db, doris_standin):
    """``treat-tinyint1-as-boolean.enabled`` (default true) reads every non-zero TINYINT(1) as true: as a
    key column, rows keyed 1 and 2 would overwrite one another in Doris. Planning refuses the table by
    name with the way out; with the option off the same rows arrive exactly, by snapshot and binlog."""
    from cdc_core.doris.names import DorisNameError

    db = fresh_db
    sql(root_conn,
        f"CREATE TABLE `{db}`.flags (grp INT, f TINYINT(1), v VARCHAR(8), PRIMARY KEY (grp, f))",
        f"INSERT INTO `{db}`.flags VALUES (1, 0, 'zero'), (1, 1, 'one'), (1, 2, 'two'), (1, -1, 'minus')",
        f"CREATE TABLE `{db}`.plain (id INT PRIMARY KEY, active TINYINT(1))",
        f"INSERT INTO `{db}`.plain VALUES (1, 1), (2, 0)")
    service = spark_service(pipeline_factory(f"{db}.\\.*", pipeline=IN_PROCESS))
    try:
        with pytest.raises(DorisNameError) as caught:
            service.plan_splits()
        text = str(caught.value)
        assert f"{db}.flags: primary-key column f is tinyint(1)" in text
        assert "treat-tinyint1-as-boolean.enabled: false" in text
        assert "plain" not in text  # a TINYINT(1) outside the key stays a boolean
        assert service.chunk_keys() == []
    finally:
        service.close()

    service = spark_service(pipeline_factory(
        f"{db}.\\.*", pipeline=IN_PROCESS, source={"treat-tinyint1-as-boolean.enabled": False}))
    try:
        snapshot(service)
        sql(root_conn, f"INSERT INTO `{db}`.flags VALUES (1, 3, 'three')",
            f"UPDATE `{db}`.flags SET v = 'TWO' WHERE f = 2")
        catch_up(service)
        assert doris_query(doris_standin, db, "SELECT grp, f, v FROM flags ORDER BY f") == [
            [1, -1, "minus"], [1, 0, "zero"], [1, 1, "one"], [1, 2, "TWO"], [1, 3, "three"]]
        assert all(v.equal for v in service.verify())
    finally:
        service.close()
