"""Every DDL type under every ``schema.change.behavior``, end to end: real MariaDB binlog, the
runner's stream, the schema-change steps, the Doris stand-in's SQL API.

One test per behavior walks one pipeline through the DDL types in binlog order — AddColumn,
DropColumn, RenameColumn, AlterColumnType (widening), CreateTable, TruncateTable, RenameTable,
DropTable, then an AlterColumnType Doris refuses — with DML before each DDL (flushed with the old
schema: checked right after the flush step) and after it (every row rewritten, so the rules for
the columns a behavior keeps are exact: they are NULL).
"""

from __future__ import annotations

import pytest

from cdc_core.pipeline.schema_change import SchemaChangeApplyError, SchemaChangeSteps
from cdc_core.pipeline.service import PipelineService
from cdc_core.schema_evolution.derivation import SchemaChangeRefused
from cdc_core.schema_evolution.registry import RequestStatus, SchemaRegistry
from jobs.spark_executor import spark_service
from tests.schema.helpers import (
    assert_rows_match,
    carry_next_ddl,
    catch_up,
    doris_columns,
    doris_rows,
    mysql_rows,
    sql,
)

EVOLVING = ("evolve", "try_evolve")


def make_tables(root_conn, db: str) -> None:
    sql(root_conn,
        f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(10), d INT)",
        f"CREATE TABLE `{db}`.u (id INT PRIMARY KEY, v INT)",
        f"CREATE TABLE `{db}`.r (id INT PRIMARY KEY, v INT)",
        f"CREATE TABLE `{db}`.x (id INT PRIMARY KEY, v INT)")


def start(pipeline_factory, root_conn, db: str, behavior: str, source: dict | None = None, **extra) -> PipelineService:
    make_tables(root_conn, db)
    runner = spark_service(pipeline_factory(f"{db}.\\.*", source=source or {"scan.startup.mode": "latest-offset"},
                                             pipeline={"schema.change.behavior": behavior}, **extra))
    runner.binlog_lag()  # fixes the latest offset as the stream's start
    sql(root_conn,
        f"INSERT INTO `{db}`.t VALUES (1, 1, 'a', 10), (2, 2, 'b', 20), (3, 3, 'c', 30), (4, 4, 'd', 40)",
        f"INSERT INTO `{db}`.u VALUES (1, 1), (2, 2), (3, 3)",
        f"INSERT INTO `{db}`.r VALUES (1, 1), (2, 2), (3, 3)",
        f"INSERT INTO `{db}`.x VALUES (1, 1), (2, 2), (3, 3)")
    assert catch_up(runner) is None
    return runner


def step(runner, root_conn, standin, db: str, before: list[str], ddl: str, after: list[str],
         flushed_tables: tuple[str, ...] = ("t",)) -> dict:
    """DML, the DDL, more DML; then the job's steps, checking Doris after the flush holds exactly
    MySQL's rows as they were when the DDL ran (old schema)."""
    sql(root_conn, *before)
    at_ddl = {t: mysql_rows(root_conn, db, t) for t in flushed_tables}
    sql(root_conn, ddl, *after)

    def check_flushed(out: dict) -> None:
        assert out["flush"]["status"] == "APPLYING", out["flush"]
        for table, (names, rows) in at_ddl.items():
            shared = [n for n in names if n in doris_columns(standin, db, table)]
            got = doris_rows(standin, db, table, shared)
            want = [tuple(str_or_none(r[names.index(n)]) for n in shared) for r in rows]
            assert [tuple(map(str_or_none, r)) for r in got] == want

    out = carry_next_ddl(runner, after_flush=check_flushed)
    assert out["resume"]["status"] == "IDLE"
    assert catch_up(runner) is None
    return out


def str_or_none(v):
    return None if v is None else str(v)


@pytest.mark.parametrize("behavior", ["evolve", "ignore",  # the other two differ in a few branches: slow
                                      *(pytest.param(b, marks=pytest.mark.slow) for b in ("try_evolve", "lenient"))])
def test_every_ddl_type(behavior, pipeline_factory, root_conn, fresh_db, doris_standin):
    db, standin = fresh_db, doris_standin
    runner = start(pipeline_factory, root_conn, db, behavior)
    cols = lambda t: doris_columns(standin, db, t)  # noqa: E731

    # AddColumn (NOT NULL, positioned): evolve/try_evolve add it; lenient adds it nullable at the end; ignore not.
    step(runner, root_conn, standin, db,
         [f"UPDATE `{db}`.t SET a = a + 10 WHERE id = 1", f"INSERT INTO `{db}`.t VALUES (5, 5, 'e', 50)"],
         f"ALTER TABLE `{db}`.t ADD COLUMN c INT NOT NULL DEFAULT 7 AFTER a",
         [f"UPDATE `{db}`.t SET c = id * 100", f"INSERT INTO `{db}`.t VALUES (6, 6, 600, 'f', 60)",
          f"DELETE FROM `{db}`.t WHERE id = 2"])
    assert ("c" in cols("t")) == (behavior != "ignore")
    if behavior == "lenient":
        assert list(cols("t"))[-1] == "c", "lenient appends the column at the end"
    assert_rows_match(standin, root_conn, db, "t")

    # DropColumn: evolving behaviors drop it; lenient keeps it (nullable); ignore keeps it.
    step(runner, root_conn, standin, db, [f"UPDATE `{db}`.t SET d = d + 1"],
         f"ALTER TABLE `{db}`.t DROP COLUMN d", [f"UPDATE `{db}`.t SET b = CONCAT(b, '!')"])
    assert ("d" in cols("t")) == (behavior not in EVOLVING)
    assert_rows_match(standin, root_conn, db, "t")

    # RenameColumn: evolving rename; lenient adds the new name and keeps the old; ignore keeps the old only.
    step(runner, root_conn, standin, db, [f"INSERT INTO `{db}`.t (id, a, b) VALUES (7, 7, 'g')"],
         f"ALTER TABLE `{db}`.t RENAME COLUMN b TO b2", [f"UPDATE `{db}`.t SET b2 = CONCAT('r', id)"])
    names = cols("t")
    assert ("b2" in names, "b" in names) == {
        "evolve": (True, False), "try_evolve": (True, False), "lenient": (True, True), "ignore": (False, True)}[behavior]
    assert_rows_match(standin, root_conn, db, "t")

    # AlterColumnType, widening INT → BIGINT: applied except under ignore (whose rows must then fit an INT).
    bump = 1000 if behavior == "ignore" else 3_000_000_000
    step(runner, root_conn, standin, db, [f"UPDATE `{db}`.t SET a = a + 1"],
         f"ALTER TABLE `{db}`.t MODIFY a BIGINT NOT NULL", [f"UPDATE `{db}`.t SET a = a + {bump}"])
    assert cols("t")["a"] == ("int" if behavior == "ignore" else "bigint")
    assert_rows_match(standin, root_conn, db, "t")

    # CreateTable: passes under every behavior; the new table is created in Doris, then streamed.
    step(runner, root_conn, standin, db, [f"INSERT INTO `{db}`.t (id, a) VALUES (8, 8)"],
         f"CREATE TABLE `{db}`.n (id INT PRIMARY KEY, v VARCHAR(20))",
         [f"INSERT INTO `{db}`.n VALUES (1, 'one'), (2, 'two')", f"UPDATE `{db}`.n SET v = 'TWO' WHERE id = 2"])
    assert cols("n") == {"id": "int", "v": "varchar(80)"}
    assert_rows_match(standin, root_conn, db, "n")

    # TruncateTable: evolving truncate Doris; lenient (excluded by default) and ignore keep the old rows.
    step(runner, root_conn, standin, db, [f"UPDATE `{db}`.u SET v = v * 10"], f"TRUNCATE TABLE `{db}`.u",
         [f"INSERT INTO `{db}`.u VALUES (10, 100), (11, 110)"], flushed_tables=("u",))
    got_u = doris_rows(standin, db, "u", ["id", "v"])
    if behavior in EVOLVING:
        assert got_u == [[10, 100], [11, 110]] or got_u == [(10, 100), (11, 110)]
    else:
        assert [tuple(r) for r in got_u] == [(1, 10), (2, 20), (3, 30), (10, 100), (11, 110)]

    # RenameTable into a captured name: evolving and lenient rename the Doris table; ignore keeps the
    # old one and the stream fills the new name (every row is rewritten after the rename).
    step(runner, root_conn, standin, db, [f"UPDATE `{db}`.r SET v = v + 1"], f"RENAME TABLE `{db}`.r TO `{db}`.r2",
         [f"UPDATE `{db}`.r2 SET v = v * 2", f"INSERT INTO `{db}`.r2 VALUES (9, 9)"], flushed_tables=("r",))
    assert (cols("r") is None) == (behavior != "ignore")
    assert_rows_match(standin, root_conn, db, "r2")

    # DropTable: evolving drop the Doris table; lenient (excluded by default) and ignore keep it.
    step(runner, root_conn, standin, db, [f"DELETE FROM `{db}`.x WHERE id = 3"], f"DROP TABLE `{db}`.x", [],
         flushed_tables=("x",))
    if behavior in EVOLVING:
        assert cols("x") is None
    else:
        assert [tuple(r) for r in doris_rows(standin, db, "x", ["id", "v"])] == [(1, 1), (2, 2)]

    # AlterColumnType Doris refuses (an integer to DECIMAL): try_evolve tolerates it and keeps loading
    # into the old type; evolve and lenient fail and the stream stays paused before the DDL, naming
    # the column and the way out; ignore skips it. (A shorter VARCHAR is no longer such a change: the
    # Doris column already holds every value, so it is skipped: tests/sink/test_type_changes.py.)
    column = "b" if behavior == "ignore" else "b2"
    sql(root_conn, f"UPDATE `{db}`.t SET a = a + 1")
    sql(root_conn, f"ALTER TABLE `{db}`.t MODIFY a DECIMAL(20,0) NOT NULL", f"UPDATE `{db}`.t SET b2 = CONCAT('s', id)")
    steps = SchemaChangeSteps(runner, run_id="refused")
    found = steps.next_ddl()
    steps.quiesce(found.offset)
    steps.flush()
    if behavior in ("evolve", "lenient"):
        with pytest.raises(SchemaChangeApplyError, match="Can not change BIGINT to DECIMALV3") as refused:
            steps.apply()
        assert "column a of" in str(refused.value) and "tidemark resnapshot" in str(refused.value)
        registry = SchemaRegistry(runner.store)
        assert registry.status is RequestStatus.APPLYING
        assert runner.store.get("flags", "binlog_paused")
        assert cols("t")["a"] == "bigint"
        # the stream never reads past the DDL: a batch stops before it, with nothing read
        batch = runner.run_binlog_batch()
        runner.commit_batch(batch.batch_id)
        assert batch.stopped_at_ddl and not batch.events_per_table
        return
    apply = steps.apply()
    if behavior == "try_evolve":
        assert [c["outcome"] for c in apply["changes"]] == ["tolerated"]
    steps.resume()
    assert catch_up(runner) is None
    assert cols("t")[column] == "varchar(40)" and cols("t")["a"] == ("int" if behavior == "ignore" else "bigint")
    assert_rows_match(standin, root_conn, db, "t")


def test_exception_behavior_refuses_all_but_create_table(pipeline_factory, root_conn, fresh_db, doris_standin):
    db, standin = fresh_db, doris_standin
    runner = start(pipeline_factory, root_conn, db, "exception")
    # CreateTable is applied even in exception mode.
    step(runner, root_conn, standin, db, [f"UPDATE `{db}`.t SET a = 0 WHERE id = 4"],
         f"CREATE TABLE `{db}`.n (id INT PRIMARY KEY, v INT)", [f"INSERT INTO `{db}`.n VALUES (1, 1)"])
    assert_rows_match(standin, root_conn, db, "n")
    # Any other change raises; rows before the DDL are committed, none after it.
    sql(root_conn, f"INSERT INTO `{db}`.t VALUES (9, 9, 'i', 90)", f"ALTER TABLE `{db}`.t ADD COLUMN c INT",
        f"INSERT INTO `{db}`.t VALUES (10, 10, 'j', 100, 1)")
    steps = SchemaChangeSteps(runner, run_id="x")
    steps.quiesce(steps.next_ddl().offset)
    assert steps.flush()["status"] == "APPLYING"
    with pytest.raises(SchemaChangeRefused, match="exception"):
        steps.apply()
    assert "c" not in doris_columns(standin, db, "t")
    assert [r[0] for r in doris_rows(standin, db, "t", ["id"])] == [1, 2, 3, 4, 9]
    assert SchemaRegistry(runner.store).current()["error"].startswith("schema.change.behavior is 'exception'")
    assert runner.store.get("flags", "binlog_paused")


def test_sink_type_filters(pipeline_factory, root_conn, fresh_db, doris_standin):
    """``exclude.schema.changes`` on the sink (families, exclude wins) under evolve."""
    db, standin = fresh_db, doris_standin
    runner = start(pipeline_factory, root_conn, db, "evolve",
                   sink={"include.schema.changes": ["column", "truncate.table"], "exclude.schema.changes": ["drop"]})
    step(runner, root_conn, standin, db, [], f"ALTER TABLE `{db}`.t DROP COLUMN d", [f"UPDATE `{db}`.t SET a = -a"])
    step(runner, root_conn, standin, db, [], f"ALTER TABLE `{db}`.t ADD COLUMN e INT", [f"UPDATE `{db}`.t SET e = id"])
    step(runner, root_conn, standin, db, [], f"DROP TABLE `{db}`.x", [], flushed_tables=("x",))
    step(runner, root_conn, standin, db, [], f"TRUNCATE TABLE `{db}`.u", [], flushed_tables=("u",))
    cols = doris_columns(standin, db, "t")
    assert "d" in cols and "e" in cols  # drop.column excluded, add.column included
    assert doris_columns(standin, db, "x") is not None  # drop.table excluded
    assert doris_rows(standin, db, "u", ["id"]) == []  # truncate.table included
    assert_rows_match(standin, root_conn, db, "t")


@pytest.mark.slow
def test_newly_added_table_is_snapshotted_first(pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    """``scan.newly-added-table.enabled``: a table created in the binlog is created in Doris, then
    snapshotted (between watermarks, on Spark) before the stream carries its changes."""
    db, standin = fresh_db, doris_standin
    runner = start(pipeline_factory, root_conn, db, "lenient",
                   source={"scan.startup.mode": "latest-offset", "scan.newly-added-table.enabled": True})
    sql(root_conn, f"CREATE TABLE `{db}`.n (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{db}`.n VALUES (1, 1), (2, 2), (3, 3)")
    out = carry_next_ddl(runner)
    assert out["apply"]["new_tables"] == [f"{db}.n"]
    with runner.store.transaction(readonly=True) as tx:
        chunks = tx.chunks(table_id=f"{db}.n")
    assert [c.status for c in chunks] == ["COMMITTED"] and chunks[0].rows == 3
    sql(root_conn, f"UPDATE `{db}`.n SET v = v * 10", f"INSERT INTO `{db}`.n VALUES (4, 40)")
    assert catch_up(runner) is None
    assert_rows_match(standin, root_conn, db, "n")


def test_a_ddl_during_the_snapshot_is_carried_into_the_chunks_read_after_it(pipeline_factory, root_conn, fresh_db,
                                                                            doris_standin, spark_session):
    """A column added while the snapshot runs: chunks read before it are completed by the stream;
    chunks whose reads ended after it (their rows could not carry the new column into Doris, and
    the stream skips what a chunk covers) are read again once Doris has the column."""
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.s (id INT PRIMARY KEY, v INT)",
        f"INSERT INTO `{db}`.s SELECT seq, seq FROM `{db}`.seq_1_to_300",
        f"ANALYZE TABLE `{db}`.s")  # exact statistics: the splitter scales chunks by the row estimate
    runner = spark_service(pipeline_factory(f"{db}.s", source={"scan.incremental.snapshot.chunk.size": 100},
                                             pipeline={"schema.change.behavior": "evolve"}))
    keys = list(runner.plan_splits().chunk_keys)
    assert len(keys) == 3
    runner.run_chunks(keys[:1])
    runner.commit_chunks(keys[:1])
    sql(root_conn, f"ALTER TABLE `{db}`.s ADD COLUMN w INT DEFAULT 5",
        f"UPDATE `{db}`.s SET w = id * 100 WHERE id IN (50, 150, 250)",
        f"UPDATE `{db}`.s SET v = -v WHERE id IN (60, 160)")
    runner.run_chunks(keys[1:])
    runner.commit_chunks(keys[1:])
    assert runner.snapshot_done()
    assert catch_up(runner) is not None, "the stream stops before the DDL"
    out = carry_next_ddl(runner)
    assert out["apply"]["reread_chunks"] == keys[1:]
    sql(root_conn, f"UPDATE `{db}`.s SET w = 7 WHERE id = 299")
    assert catch_up(runner) is None
    assert_rows_match(doris_standin, root_conn, db, "s")


def test_latest_offset_a_ddl_before_the_first_batch_is_carried_as_a_change(pipeline_factory, root_conn, fresh_db,
                                                                           doris_standin):
    """The stream starts at the latest offset when the pipeline first runs; a column added before its
    first batch reaches Doris as a schema change, and the rows written before it keep MySQL's
    values (the added column's default included)."""
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.e (id INT PRIMARY KEY, v INT)")
    runner = spark_service(pipeline_factory(f"{db}.e", source={"scan.startup.mode": "latest-offset"},
                                             pipeline={"schema.change.behavior": "evolve"}))
    runner.binlog_lag()  # the first run: the start is fixed here
    sql(root_conn, f"INSERT INTO `{db}`.e VALUES (1, 1), (2, 2)",
        f"ALTER TABLE `{db}`.e ADD COLUMN w INT NOT NULL DEFAULT 9",
        f"INSERT INTO `{db}`.e VALUES (3, 3, 33)")
    assert catch_up(runner) is not None, "the first batch stops before the DDL"
    assert doris_columns(doris_standin, db, "e") == {"id": "int", "v": "int"}
    out = carry_next_ddl(runner)
    assert [c["outcome"] for c in out["apply"]["changes"]] == ["applied"]
    assert catch_up(runner) is None
    assert doris_rows(doris_standin, db, "e", ["id", "v", "w"]) == [(1, 1, 9), (2, 2, 9), (3, 3, 33)]
    assert_rows_match(doris_standin, root_conn, db, "e")


def test_ddl_as_mysql_reads_it_end_to_end(pipeline_factory, root_conn, fresh_db, doris_standin):
    """The parser's readings of MySQL's DDL carried into Doris: a latin1 table created in the binlog
    (its default charset decodes its rows), a column swap (renames through a temporary name), a
    keyword-named column, FLOAT(p) as DOUBLE and ENUM members with escaped quotes."""
    db, standin = fresh_db, doris_standin
    runner = start(pipeline_factory, root_conn, db, "evolve")
    cols = lambda t: doris_columns(standin, db, t)  # noqa: E731

    step(runner, root_conn, standin, db, [],
         f"CREATE TABLE `{db}`.w (id INT PRIMARY KEY, a INT, b VARCHAR(10)) DEFAULT CHARSET=latin1",
         [f"INSERT INTO `{db}`.w VALUES (1, 1, 'café'), (2, 2, 'naïve')"])
    assert_rows_match(standin, root_conn, db, "w")

    step(runner, root_conn, standin, db, [f"UPDATE `{db}`.w SET a = a + 1"],
         f"ALTER TABLE `{db}`.w CHANGE a b INT, CHANGE b a VARCHAR(10)",
         [f"INSERT INTO `{db}`.w (id, b, a) VALUES (3, 30, 'crème')", f"UPDATE `{db}`.w SET b = b * 10 WHERE id < 3"])
    assert list(cols("w"))[:3] == ["id", "b", "a"]
    assert cols("w")["b"] == "int" and cols("w")["a"].startswith("varchar")
    assert_rows_match(standin, root_conn, db, "w")

    step(runner, root_conn, standin, db, [],
         f"ALTER TABLE `{db}`.w ADD COLUMN period INT, ADD f FLOAT(30), ADD e ENUM('it\\'s', 'x')",
         [f"UPDATE `{db}`.w SET period = id, f = 1.25 * id, e = IF(id = 1, 'it''s', 'x')"])
    assert {"period", "f", "e"} <= set(cols("w"))
    assert cols("w")["f"] == "double"
    assert_rows_match(standin, root_conn, db, "w")
