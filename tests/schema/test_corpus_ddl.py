"""DDL the corpus (tests/corpus/) met that stopped the stream or left Doris different, each through the
stream and the schema-change job end to end: real MariaDB binlog under FULL and MINIMAL row metadata,
the Doris stand-in.

* a column added to a table holding rows: the rows MySQL already had take its DEFAULT, or a NOT NULL
  column's implicit default (0, '', the first ENUM member, the epoch for a zero date), in Doris too;
* a type change keeps the default Doris has, and a keyless table's nullable key stays nullable (Doris
  refuses a MODIFY that changes either);
"""

from __future__ import annotations

import pytest

from jobs.spark_executor import spark_service
from tests.corpus import compare
from tests.schema.helpers import carry_next_ddl, catch_up, sql


@pytest.fixture(params=["FULL", "MINIMAL"])
def row_metadata(request, root_conn) -> str:
    """The binlog with column names (FULL) or without (MINIMAL: the schema history names them)."""
    sql(root_conn, f"SET GLOBAL binlog_row_metadata = '{request.param}'")
    try:
        yield request.param
    finally:
        sql(root_conn, "SET GLOBAL binlog_row_metadata = 'FULL'")


def _equal(standin, root_conn, db: str, table: str) -> None:
    """MySQL's rows and Doris's, compared from outside as the corpus compares them."""
    cols = compare.columns(root_conn, db, table)
    want = compare.mysql_rows(root_conn, db, table, cols)
    have = compare.doris_rows(standin.fe_http, db, table, cols)
    assert want == have, compare.diff_text(want, have, cols) if not isinstance(have, str) else have


def _snapshot(runner) -> None:
    keys = list(runner.plan_splits().chunk_keys)
    runner.run_chunks(keys)
    runner.commit_chunks(keys)
    assert runner.snapshot_done()


def _carry_all(runner) -> int:
    """Stream and carry every DDL over until the stream is caught up; the number of DDLs."""
    n = 0
    while catch_up(runner) is not None:
        out = carry_next_ddl(runner)
        assert out["resume"]["status"] == "IDLE", out
        n += 1
    return n


@pytest.mark.parametrize("behavior", ["evolve", "lenient"])
def test_added_columns_hold_in_doris_what_mysql_gave_the_rows_it_had(behavior, row_metadata, pipeline_factory,
                                                                      root_conn, fresh_db, doris_standin):
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a VARCHAR(10)) DEFAULT CHARSET=latin1",
        f"CREATE TABLE `{db}`.k (a INT, b CHAR(3))",
        f"INSERT INTO `{db}`.t VALUES (1, 'x'), (2, NULL)", f"INSERT INTO `{db}`.k VALUES (1, 'p'), (1, 'p')")
    runner = spark_service(pipeline_factory(f"{db}.t,{db}.k", pipeline={"schema.change.behavior": behavior},
                                            source={"scan.incremental.snapshot.chunk.key-column": f"{db}.k:a"}))
    _snapshot(runner)
    sql(root_conn,
        f"ALTER TABLE `{db}`.t ADD n INT NOT NULL, ADD s VARCHAR(5) NOT NULL, ADD e ENUM('x','y') NOT NULL, "
        "ADD d DATE NOT NULL, ADD dt DATETIME(3) NOT NULL, ADD tm TIME NOT NULL, ADD f FLOAT NOT NULL, "
        "ADD b BIT(3) NOT NULL, ADD bo TINYINT(1) NOT NULL, ADD vb VARBINARY(4) NOT NULL, ADD u BIGINT UNSIGNED NOT NULL",
        f"ALTER TABLE `{db}`.t ADD c INT NOT NULL DEFAULT 7, ADD z DATE NOT NULL DEFAULT '0000-00-00', "
        "ADD zn DATE DEFAULT '0000-00-00', ADD q VARCHAR(5) DEFAULT 'it''s', ADD bb BIT(4) DEFAULT b'101', "
        "ADD vd VARBINARY(4) NOT NULL DEFAULT 'ab', ADD nn INT",
        f"ALTER TABLE `{db}`.k ADD n INT NOT NULL, ADD s CHAR(2) NOT NULL",
        f"INSERT INTO `{db}`.t (id, a, n, s, e, d, dt, tm, f, b, bo, vb, u) VALUES "
        "(3, 'new', 5, 'five', 'y', '2001-02-03', '2001-02-03 04:05:06.7', '-01:02:03', 1.5, b'11', 1, 'v', 9)",
        f"INSERT INTO `{db}`.k VALUES (2, 'q', 3, 'r')")
    assert _carry_all(runner) == 3
    for table in ("t", "k"):
        _equal(doris_standin, root_conn, db, table)


def test_a_type_change_keeps_the_doris_default_and_a_keyless_key_stays_nullable(row_metadata, pipeline_factory,
                                                                                  root_conn, fresh_db, doris_standin):
    """Doris refuses a MODIFY that changes a column's default ("Can not change default value") or makes a
    nullable column NOT NULL; MySQL does both freely. The MODIFY restates the default Doris has, and a
    keyless table's first column (its nullable Doris key) stays nullable: it holds every value."""
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a INT)", f"CREATE TABLE `{db}`.k (a INT, b CHAR(3))",
        f"INSERT INTO `{db}`.t VALUES (1, 1)", f"INSERT INTO `{db}`.k VALUES (1, 'p'), (2, 'q')")
    runner = spark_service(pipeline_factory(f"{db}.t,{db}.k", pipeline={"schema.change.behavior": "evolve"},
                                            source={"scan.incremental.snapshot.chunk.key-column": f"{db}.k:a"}))
    _snapshot(runner)
    sql(root_conn, f"ALTER TABLE `{db}`.t ADD c SMALLINT NOT NULL DEFAULT 7",
        f"ALTER TABLE `{db}`.t MODIFY c INT NOT NULL DEFAULT 7",
        f"INSERT INTO `{db}`.t VALUES (2, 2, 70000)",
        f"ALTER TABLE `{db}`.t MODIFY a BIGINT NOT NULL",
        f"ALTER TABLE `{db}`.k MODIFY a BIGINT NOT NULL",
        f"INSERT INTO `{db}`.k VALUES (5000000000, 'r')")
    assert _carry_all(runner) == 4
    for table in ("t", "k"):
        _equal(doris_standin, root_conn, db, table)
