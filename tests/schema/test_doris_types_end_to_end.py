"""Issue 26's Doris causes end to end, on both paths: a real MariaDB, the snapshot (in the driver),
the binlog stream, the schema-change job's steps, the Doris stand-in (strict as Doris on DDL).

* zero-length ``CHAR(0)`` / ``VARCHAR(0)`` columns, at creation and added by ``ALTER``: '' stays '',
  NULL stays NULL;
* tables without a primary key whose first column Doris cannot key on (FLOAT, DOUBLE, ENUM, TEXT,
  TIME, JSON), snapshotted and created by the stream;
* ``INT UNSIGNED`` → ``BIGINT UNSIGNED`` (and the other integer widenings) on value and key columns;
  a change Doris cannot make stops the job naming the table, the column and the way out;
* DATETIME values before year 1000, as the query API prints them.
"""

from __future__ import annotations

import pytest

from cdc_core.doris.row_identity import IDENTITY_COLUMNS
from cdc_core.pipeline.schema_change import SchemaChangeApplyError, SchemaChangeSteps
from cdc_core.pipeline.service import PipelineService
from jobs.spark_executor import SparkExecutor
from tests.schema.helpers import (
    assert_rows_match,
    carry_next_ddl,
    catch_up,
    doris,
    doris_columns,
    doris_rows,
    sql,
)


def _no_spark():
    raise AssertionError("these small runs read and load in the driver")


def _service(pipeline_factory, db: str, chunk_key: str = "") -> PipelineService:
    """The pipeline over every table of ``db``; ``chunk_key``: the column a table without a primary
    key is split on (``scan.incremental.snapshot.chunk.key-column``)."""
    source = {"scan.incremental.snapshot.chunk.key-column": f"{db}.\\.*:{chunk_key}"} if chunk_key else {}
    definition = pipeline_factory(f"{db}.\\.*", source=source,
                                  pipeline={"tidemark.snapshot.in-process-rows": 100_000,
                                            "schema.change.behavior": "evolve"})
    return PipelineService(definition, executor=SparkExecutor(_no_spark))


def _snapshot(runner: PipelineService) -> None:
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()


def _carry_all(runner: PipelineService) -> list[dict]:
    """Run the stream, carrying each DDL it stops at, until it is caught up."""
    carried = []
    while catch_up(runner) is not None:
        out = carry_next_ddl(runner)
        assert out["resume"]["status"] == "IDLE", out
        carried.append(out)
    return carried


def test_zero_length_strings_and_old_datetimes_arrive_exactly(pipeline_factory, root_conn, fresh_db, doris_standin):
    db = fresh_db
    sql(root_conn,
        f"CREATE TABLE `{db}`.z (id INT PRIMARY KEY, v0 VARCHAR(0), c0 CHAR(0), n0 VARCHAR(0) NOT NULL DEFAULT '', "
        "at DATETIME, d DATE)",
        f"INSERT INTO `{db}`.z VALUES (1, '', '', '', '0016-07-14 17:17:17', '0016-07-14'), "
        "(2, NULL, NULL, '', '0999-12-31 23:59:59', NULL)",
        # a table without a primary key whose first column is a zero-length string
        f"CREATE TABLE `{db}`.zk (c0 CHAR(0), id INT)",
        f"INSERT INTO `{db}`.zk VALUES ('', 1), (NULL, 2)")
    runner = _service(pipeline_factory, db, chunk_key="id")
    _snapshot(runner)
    assert doris_columns(doris_standin, db, "z") == {
        "id": "int", "v0": "varchar(1)", "c0": "char(1)", "n0": "varchar(1)", "at": "datetime", "d": "date"}
    assert_rows_match(doris_standin, root_conn, db, "z")
    assert doris_rows(doris_standin, db, "z", ["at", "d"])[0] == ("0016-07-14 17:17:17", "0016-07-14")
    assert sorted(doris_rows(doris_standin, db, "zk", ["id", "c0"])) == [(1, ""), (2, None)]

    # the binlog: rows, zero-length columns added by ALTER, a widening of one, a new table with one
    sql(root_conn,
        f"INSERT INTO `{db}`.z VALUES (3, '', NULL, '', '0100-01-01 00:00:00', '0001-01-01')",
        f"ALTER TABLE `{db}`.z ADD COLUMN a0 CHAR(0) NULL, ADD COLUMN b0 VARCHAR(0) NOT NULL DEFAULT ''",
        f"INSERT INTO `{db}`.z VALUES (4, NULL, '', '', NULL, NULL, '', ''), (5, '', NULL, '', NULL, NULL, NULL, '')",
        f"UPDATE `{db}`.z SET v0 = NULL, c0 = '' WHERE id = 1",
        f"ALTER TABLE `{db}`.z MODIFY v0 VARCHAR(5)",
        f"INSERT INTO `{db}`.z (id, v0) VALUES (6, 'abcde')",
        f"CREATE TABLE `{db}`.zn (c0 CHAR(0), id INT)",
        f"INSERT INTO `{db}`.zn VALUES ('', 1), (NULL, 2)")
    carried = _carry_all(runner)
    assert len(carried) == 3
    columns = doris_columns(doris_standin, db, "z")
    assert columns["a0"] == "char(1)" and columns["b0"] == "varchar(1)" and columns["v0"] == "varchar(20)"
    assert_rows_match(doris_standin, root_conn, db, "z")
    assert doris_rows(doris_standin, db, "z", ["id", "a0", "b0"])[3:5] == [(4, "", ""), (5, None, "")]
    assert doris_rows(doris_standin, db, "z", ["id", "at", "d"])[2] == (3, "0100-01-01 00:00:00", "0001-01-01")
    assert sorted(doris_rows(doris_standin, db, "zn", ["id", "c0"])) == [(1, ""), (2, None)]
    runner.close()


KEYLESS = {  # a first column Doris cannot key on: no matter, the table is keyed by the hidden row identity
    "kf": ("f FLOAT", ["1.5", "-2.25"], [1.5, -2.25]),
    "kd": ("d DOUBLE", ["0.1", "1e300"], [0.1, 1e300]),
    "ke": ("e ENUM('x','y')", ["'x'", "'y'"], ["x", "y"]),
    "ks": ("s TEXT", ["'hello'", "''"], ["hello", ""]),
    "kt": ("t TIME(3)", ["'-838:59:59'", "'01:02:03.500'"], ["-838:59:59.000", "01:02:03.500"]),
    "kj": ("j JSON", ["'[1]'", "'{\"a\": 2}'"], ["[1]", '{"a": 2}']),
}


def _keyless_rows(standin, db: str, table: str, first: str) -> list[tuple]:
    got = doris_rows(standin, db, table, ["n", first])
    return sorted((n, v) for n, v in got)


def test_keyless_tables_of_any_first_column_load_on_both_paths(pipeline_factory, root_conn, fresh_db,
                                                                 doris_standin):
    db = fresh_db
    for table, (column, literals, _) in KEYLESS.items():
        sql(root_conn, f"CREATE TABLE `{db}`.{table} ({column}, n INT)",
            f"INSERT INTO `{db}`.{table} VALUES ({literals[0]}, 1), (NULL, 2)")
    runner = _service(pipeline_factory, db, chunk_key="n")
    _snapshot(runner)
    for table, (column, _literals, values) in KEYLESS.items():
        name = column.split()[0]
        info = runner.sink.catalog.table_info(db, table)
        assert info.keys_type == "UNIQUE_KEYS" and info.key_columns == IDENTITY_COLUMNS, (table, info)
        assert _keyless_rows(doris_standin, db, table, name) == [(1, values[0]), (2, None)], table

    # the stream: rows into them, and the same shapes created by DDL in the stream
    for table, (column, literals, _) in KEYLESS.items():
        sql(root_conn, f"INSERT INTO `{db}`.{table} VALUES ({literals[1]}, 3)",
            f"CREATE TABLE `{db}`.{table}2 ({column}, n INT)",
            f"INSERT INTO `{db}`.{table}2 VALUES ({literals[1]}, 1), (NULL, 2)")
    carried = _carry_all(runner)
    assert len(carried) == len(KEYLESS)
    for table, (column, _literals, values) in KEYLESS.items():
        name = column.split()[0]
        assert _keyless_rows(doris_standin, db, table, name) == [(1, values[0]), (2, None), (3, values[1])], table
        info = runner.sink.catalog.table_info(db, f"{table}2")
        assert info is not None and info.keys_type == "UNIQUE_KEYS" and info.key_columns == IDENTITY_COLUMNS, (table, info)
        assert _keyless_rows(doris_standin, db, f"{table}2", name) == [(1, values[1]), (2, None)], table
    runner.close()


def test_unsigned_integer_widenings_carry_over_on_both_paths(pipeline_factory, root_conn, fresh_db, doris_standin):
    db = fresh_db
    sql(root_conn,
        f"CREATE TABLE `{db}`.u (id INT UNSIGNED PRIMARY KEY, c INT UNSIGNED, s TINYINT UNSIGNED, b BIGINT, "
        "m MEDIUMINT UNSIGNED)",
        f"INSERT INTO `{db}`.u VALUES (4294967295, 4294967295, 255, 9223372036854775807, 16777215), (0, 0, 0, 0, 0)",
        f"CREATE TABLE `{db}`.big (id BIGINT UNSIGNED PRIMARY KEY, v BIGINT UNSIGNED)",
        f"INSERT INTO `{db}`.big VALUES (18446744073709551615, 18446744073709551615), (1, NULL)")
    runner = _service(pipeline_factory, db)
    _snapshot(runner)
    assert doris_columns(doris_standin, db, "big") == {"id": "largeint", "v": "largeint"}
    assert_rows_match(doris_standin, root_conn, db, "u")
    assert_rows_match(doris_standin, root_conn, db, "big")

    sql(root_conn,
        f"ALTER TABLE `{db}`.u MODIFY c BIGINT UNSIGNED, MODIFY id BIGINT UNSIGNED, MODIFY s SMALLINT, "
        "MODIFY b BIGINT UNSIGNED NULL, MODIFY m INT",
        f"INSERT INTO `{db}`.u VALUES (18446744073709551615, 18446744073709551614, -128, 18446744073709551615, "
        "-2147483648)",
        f"UPDATE `{db}`.u SET s = 127 WHERE s > 127",
        f"ALTER TABLE `{db}`.u MODIFY s TINYINT",  # a narrowing MySQL makes: Doris's SMALLINT holds it
        f"INSERT INTO `{db}`.u VALUES (7, 7, -128, 7, 7)")
    carried = _carry_all(runner)
    assert len(carried) == 2
    changes = [c for out in carried for c in out["apply"]["changes"]]
    assert any(c.get("outcome") == "skipped" for c in changes), changes
    assert doris_columns(doris_standin, db, "u") == {"id": "largeint", "c": "largeint", "s": "smallint",
                                                     "b": "largeint", "m": "int"}
    assert_rows_match(doris_standin, root_conn, db, "u")
    # rows after the widenings on the binlog path, the largest values included
    assert (18446744073709551615, 18446744073709551614) in doris_rows(doris_standin, db, "u", ["id", "c"])

    # a change Doris cannot make: the job stops, naming the table, the column and the way out
    sql(root_conn, f"ALTER TABLE `{db}`.u MODIFY m DECIMAL(12,2)")
    assert catch_up(runner) is not None
    steps = SchemaChangeSteps(runner, run_id="test")
    found = steps.next_ddl()
    steps.quiesce(found.offset)
    steps.flush()
    with pytest.raises(SchemaChangeApplyError) as info:
        steps.apply()
    message = str(info.value)
    for part in (f"{db}.u", "column m", "DECIMALV3(12,2)", "tidemark resnapshot", "--table", "transform:"):
        assert part in message, (part, message)
    assert doris(doris_standin, db, "SELECT COUNT(*) FROM u")["data"]["data"] == [[4]]
    runner.close()

