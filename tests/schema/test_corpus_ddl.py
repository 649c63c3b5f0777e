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


@pytest.fixture(params=["FULL", pytest.param("MINIMAL", marks=pytest.mark.slow)])  # MINIMAL: -m slow (suite time)
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


def _stop_at_next_ddl(runner):
    """The job's steps up to the failing apply (the stream stays paused at the DDL); the error."""
    from cdc_core.pipeline.schema_change import SchemaChangeApplyError, SchemaChangeSteps

    steps = SchemaChangeSteps(runner, run_id="test")
    found = steps.next_ddl()
    steps.quiesce(found.offset)
    steps.flush()
    with pytest.raises(SchemaChangeApplyError) as info:
        steps.apply()
    return str(info.value)


def test_a_primary_key_change_stops_naming_the_way_out_and_resnapshot_recreates_the_table(
        row_metadata, pipeline_factory, root_conn, fresh_db, doris_standin):
    """Doris cannot re-key a table: the stream stops naming the table, the new key and
    `tidemark resnapshot --table`; that re-creates the Doris table with the new key at the DDL, reads the
    table again and goes on, so the table ends equal; one renamed away since cannot be read and is
    refused with the other way out (tables.exclude)."""
    from cdc_core.pipeline.schema_change import SchemaChangeSteps

    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.k (a INT NOT NULL, b VARCHAR(5))",
        f"CREATE TABLE `{db}`.u (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{db}`.k VALUES (1, 'p'), (2, 'q')", f"INSERT INTO `{db}`.u VALUES (1, 1), (2, 1)")
    runner = spark_service(pipeline_factory(  # u's chunk key: it is read again once keyless
        f"{db}.k,{db}.u,{db}.gone", pipeline={"schema.change.behavior": "evolve"},
        source={"scan.incremental.snapshot.chunk.key-column": f"{db}.k:a;{db}.u:id"}))
    _snapshot(runner)
    sql(root_conn, f"INSERT INTO `{db}`.k VALUES (3, 'r')", f"ALTER TABLE `{db}`.k ADD PRIMARY KEY (a)",
        f"UPDATE `{db}`.k SET b = 'pp' WHERE a = 1", f"DELETE FROM `{db}`.k WHERE a = 2",
        f"INSERT INTO `{db}`.u VALUES (3, 3)", f"ALTER TABLE `{db}`.u DROP PRIMARY KEY",
        f"INSERT INTO `{db}`.u VALUES (3, 4)")
    assert catch_up(runner) is not None
    message = _stop_at_next_ddl(runner)
    assert f"{db}.k" in message and "changed to (a)" in message
    assert f"tidemark resnapshot PIPELINE.yaml --table {db}.k" in message and "tables.exclude" in message
    steps = SchemaChangeSteps(runner, run_id="test")
    with pytest.raises(ValueError, match=f"--table {db}.k"):
        steps.recreate_at_stop([f"{db}.u"])  # not the table the stream stopped at
    assert steps.recreate_at_stop([f"{db}.k"]) == [f"{db}.k"]
    out = {"apply": steps.apply(), "resume": steps.resume()}
    assert out["apply"]["changes"][0]["recreated"] and out["resume"]["status"] == "IDLE"
    assert catch_up(runner) is not None  # u's DROP PRIMARY KEY: a UNIQUE table cannot become keyless either
    assert f"{db}.u" in _stop_at_next_ddl(runner)
    assert SchemaChangeSteps(runner).recreate_at_stop([f"{db}.u"]) == [f"{db}.u"]
    carry = SchemaChangeSteps(runner, run_id="test")
    carry.apply()
    carry.resume()
    assert _carry_all(runner) == 0
    for table in ("k", "u"):
        _equal(doris_standin, root_conn, db, table)

    sql(root_conn, f"CREATE TABLE `{db}`.gone (a INT)")
    assert _carry_all(runner) == 1
    sql(root_conn, f"INSERT INTO `{db}`.gone VALUES (1)", f"ALTER TABLE `{db}`.gone ADD PRIMARY KEY (a)",
        f"RENAME TABLE `{db}`.gone TO `{db}`.gone2")
    assert catch_up(runner) is not None
    _stop_at_next_ddl(runner)
    with pytest.raises(ValueError, match=f"tables.exclude: {db}.gone"):
        SchemaChangeSteps(runner).recreate_at_stop([f"{db}.gone"])
    sql(root_conn, f"CREATE TABLE `{db}`.gone (other INT)")  # the name is a new table's now: not the one to read
    with pytest.raises(ValueError, match=f"other columns now .* tables.exclude: {db}.gone"):
        SchemaChangeSteps(runner).recreate_at_stop([f"{db}.gone"])


def test_order_by_is_carried_and_convert_to_the_default_charset_stops_naming_the_table(
        row_metadata, pipeline_factory, root_conn, fresh_db, doris_standin):
    """``ALTER ... ORDER BY t.id`` changes no column: no stop, the rows after it arrive.
    ``CONVERT TO CHARACTER SET DEFAULT`` turns the columns to the database's default, which the statement
    does not name: the stream stops there naming the table (not a word of the statement) and the way out,
    rather than decode its rows with a guessed charset."""
    from cdc_core.mysql.ddl.errors import DdlParseError

    db = fresh_db
    sql(root_conn, f"ALTER DATABASE `{db}` CHARACTER SET latin2",
        f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, s VARCHAR(10)) CHARACTER SET utf8mb4",
        f"INSERT INTO `{db}`.t VALUES (1, 'zażółć')")
    runner = spark_service(pipeline_factory(f"{db}.t", pipeline={"schema.change.behavior": "evolve"}))
    _snapshot(runner)
    sql(root_conn, f"ALTER TABLE `{db}`.t ORDER BY t.id DESC, s", f"INSERT INTO `{db}`.t VALUES (2, 'Łódź ő')")
    assert _carry_all(runner) == 0  # not even a stop: it gives no schema change
    _equal(doris_standin, root_conn, db, "t")
    sql(root_conn, f"ALTER TABLE `{db}`.t CONVERT TO CHARACTER SET utf8, CHARACTER SET DEFAULT",
        f"ALTER TABLE `{db}`.t CONVERT TO CHARACTER SET DEFAULT", f"INSERT INTO `{db}`.t VALUES (3, 'ż')")
    assert catch_up(runner) is not None  # the first: utf8, then the table's default back to the database's
    carry_next_ddl(runner)
    with pytest.raises(DdlParseError) as info:
        catch_up(runner)
    message = str(info.value)
    assert f"{db}.t" in message and f"tables.exclude: {db}.t" in message and "CHARACTER," not in message
    assert f"{db}.CHARACTER" not in message


def test_a_table_renamed_from_a_table_left_out_arrives_with_its_rows(row_metadata, pipeline_factory, root_conn,
                                                                      fresh_db, doris_standin):
    """A table left out of the pipeline (tables.exclude: the way out of a stop) and then renamed into a
    captured name enters the stream holding rows no binlog event brought: the RENAME took the stream to a
    stop before ("its schema is unknown"). Its schema is the server's, and its rows are read at the
    RENAME, as a resnapshot reads a table, so it arrives equal, not empty."""
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)", f"INSERT INTO `{db}`.t VALUES (1)")
    runner = spark_service(pipeline_factory(f"{db}.\\.*", pipeline={"schema.change.behavior": "evolve"},
                                            source={"tables.exclude": f"{db}.x"}))
    _snapshot(runner)
    sql(root_conn, f"CREATE TABLE `{db}`.x (a INT, b VARCHAR(5))", f"INSERT INTO `{db}`.x VALUES (1, 'p'), (2, 'q')",
        f"RENAME TABLE `{db}`.x TO `{db}`.y", f"INSERT INTO `{db}`.y VALUES (3, 'r')", f"DELETE FROM `{db}`.y WHERE a = 1",
        f"CREATE TABLE `{db}`.x (k INT PRIMARY KEY)", f"INSERT INTO `{db}`.x VALUES (7)",
        f"RENAME TABLE `{db}`.x TO `{db}`.z", f"UPDATE `{db}`.z SET k = 8")
    assert _carry_all(runner) == 2
    for table in ("t", "y", "z"):
        _equal(doris_standin, root_conn, db, table)


def test_enum_and_set_members_written_as_hex_or_bit_literals_are_kept(row_metadata, pipeline_factory, root_conn,
                                                                       fresh_db, doris_standin):
    """``ENUM(0x9353, 0x9373) CHARACTER SET sjis`` (corpus ``mt_ctype_sjis_b.t1__2``): MySQL reads a hex or
    bit literal member in the column's charset (or the table's). The schema history kept only quoted
    members (``enum()``), so the binlog's rows could not be bound; now each member is decoded as MySQL
    stores it, through CREATE and ALTER alike."""
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    runner = spark_service(pipeline_factory(f"{db}.\\.*", pipeline={"schema.change.behavior": "evolve"}))
    _snapshot(runner)
    sql(root_conn, f"CREATE TABLE `{db}`.s (c ENUM(0x9353, X'9373', 'b') CHARACTER SET sjis)",
        f"INSERT INTO `{db}`.s VALUES (0x9353), (0x9373), ('b')",
        f"CREATE TABLE `{db}`.l (id INT PRIMARY KEY, c SET(b'01100001', 0x62) NOT NULL) CHARSET latin1",
        f"INSERT INTO `{db}`.l VALUES (1, 'a,b'), (2, 'b')",
        f"ALTER TABLE `{db}`.l ADD e ENUM(0xE9, 'x') DEFAULT 'x'", f"INSERT INTO `{db}`.l VALUES (3, 'a', 0xE9)",
        f"ALTER TABLE `{db}`.t ADD e ENUM(0x9353) CHARACTER SET sjis", f"INSERT INTO `{db}`.t VALUES (1, 0x9353)")
    assert _carry_all(runner) >= 3  # (the CREATEs may be carried at one stop)
    for table in ("s", "l", "t"):
        _equal(doris_standin, root_conn, db, table)


def test_a_table_renamed_from_a_left_out_name_takes_the_schema_of_its_new_name(row_metadata, pipeline_factory,
                                                                                 root_conn, fresh_db, doris_standin):
    """Corpus ``mt_type_varchar_b``: ``x`` is left out, keyed, renamed to a captured name, and another ``x``
    created before the stream gets there. The renamed table's schema is the server's of its new name: the
    old name's is another table's by then ("source table ... has no columns", "lack its key column(s)")."""
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY)")
    runner = spark_service(pipeline_factory(f"{db}.\\.*", pipeline={"schema.change.behavior": "evolve"},
                                            source={"tables.exclude": f"{db}.x"}))
    _snapshot(runner)
    sql(root_conn, f"CREATE TABLE `{db}`.x (v VARBINARY(20))", f"INSERT INTO `{db}`.x VALUES ('p'), ('q')",
        f"ALTER TABLE `{db}`.x ADD PRIMARY KEY (v)", f"RENAME TABLE `{db}`.x TO `{db}`.y",
        f"CREATE TABLE `{db}`.x (a INT, b VARCHAR(12))", f"INSERT INTO `{db}`.y VALUES ('r')")
    _carry_all(runner)
    _equal(doris_standin, root_conn, db, "y")
