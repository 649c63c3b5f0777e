"""DDL read from the real binlog: schema-change events, schema evolution, errors, schema history."""

from __future__ import annotations

import pytest

from cdc_core.model.events import (
    AddColumnEvent,
    DataChangeEvent,
    DropColumnEvent,
    RenameColumnEvent,
    SchemaChangeEvent,
)
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_filter import BinlogEventFilter
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.ddl import DdlParseError, MySqlDdlParser
from cdc_core.mysql.finished_chunk import FinishedChunk
from cdc_core.mysql.schema_history import SchemaHistory
from cdc_core.state import StateStore
from tests.binlog.conftest import current_offset, next_server_id, read_schema

TYPES = [
    "int", "integer unsigned", "int unsigned zerofill", "tinyint(1)", "bool", "smallint(5) unsigned", "mediumint",
    "bigint", "bigint(20) unsigned", "serial", "decimal(10,2)", "numeric(5)", "dec(4,1)", "fixed(6,2)", "decimal",
    "float", "float(7,3)", "double", "double precision", "real", "double(8,2)", "bit(3)", "bit", "char(10)", "char",
    "varchar(255)", "character varying(20)", "nchar(5)", "nvarchar(7)", "national varchar(9)", "binary(16)",
    "binary", "varbinary(100)", "tinytext", "text", "mediumtext", "longtext", "tinyblob", "blob", "mediumblob",
    "longblob", "text(100)", "blob(70000)", "date", "datetime", "datetime(3)", "timestamp NULL", "timestamp(6) NULL",
    "time", "time(2)", "year", "json", "enum('a','b''c')", "set('x','y')", "geometry", "point", "uuid", "inet4",
    "inet6", "long varchar", "long", "int(5) zerofill", "float unsigned", "decimal(5,2) unsigned",
    "varchar(10) binary", "char(3) character set latin1 not null default 'abc'",
]

FACTS = ("name", "column_type", "data_type", "nullable", "char_length", "numeric_precision", "numeric_scale",
         "datetime_precision")


def _exec(conn, *sql):
    with conn.cursor() as cur:
        for s in sql:
            cur.execute(s)


def _facts(schema):
    return [tuple(getattr(c, f) for f in FACTS) for c in schema.columns]


def test_ddl_derived_schema_matches_information_schema(settings, schema_lookup, root_conn, fresh_db):
    """Every column type, added by ALTER and read back from the binlog, equals what the server reports."""
    t = TableId(fresh_db, "types")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.types (id int primary key)")
    initial = read_schema(root_conn, t)
    start = current_offset(root_conn)
    alters = [f"ALTER TABLE `{fresh_db}`.types ADD COLUMN c{i} {ty}" for i, ty in enumerate(TYPES)]
    _exec(root_conn, *alters[:20])
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.types " + ", ".join(f"ADD c{i} {ty}" for i, ty in enumerate(TYPES)
                                                                    if i >= 20))
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {t: initial}.get, None)
    events = list(reader.read_range(start, stop, {t}))
    assert all(isinstance(e, AddColumnEvent) for e in events) and len(events) == len(TYPES)
    assert _facts(reader.schema(t)) == _facts(read_schema(root_conn, t))


def test_schema_changes_in_stream_and_rows_after_them(settings, schema_lookup, root_conn, fresh_db):
    t = TableId(fresh_db, "evo")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.evo (id int primary key, a varchar(10), b int)")
    initial = read_schema(root_conn, t)
    start = current_offset(root_conn)
    _exec(
        root_conn,
        f"INSERT INTO `{fresh_db}`.evo VALUES (1, 'x', 10)",
        f"USE `{fresh_db}`",
        "ALTER TABLE evo ADD COLUMN c datetime(3) AFTER id, DROP COLUMN b, CHANGE a aa varchar(20)",
        f"INSERT INTO `{fresh_db}`.evo VALUES (2, '2026-01-01 00:00:00.5', 'y')",
        "USE mysql",
    )
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {t: initial}.get, None)
    events = list(reader.read_range(start, stop, {t}))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["DataChangeEvent", "AddColumnEvent", "DropColumnEvent", "RenameColumnEvent",
                     "AlterColumnTypeEvent", "DataChangeEvent"]
    first, last = events[0], events[-1]
    assert first.after == {"id": 1, "a": "x", "b": 10}
    assert set(last.after) == {"id", "c", "aa"} and last.after["aa"] == "y"
    ddl = [e for e in events if isinstance(e, SchemaChangeEvent)]
    assert len({e.offset for e in ddl}) == 1 and first.offset < ddl[0].offset < last.offset
    assert all("ALTER TABLE evo" in e.ddl for e in ddl)
    assert isinstance(ddl[1], DropColumnEvent) and isinstance(ddl[2], RenameColumnEvent)
    assert reader.schema(t).column_names == read_schema(root_conn, t).column_names


def test_unparseable_ddl_on_captured_table_stops_the_stream(settings, root_conn, fresh_db):
    t, other = TableId(fresh_db, "cap"), TableId(fresh_db, "free")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.cap (id int primary key)",
          f"CREATE TABLE `{fresh_db}`.free (id int primary key)")
    schemas = {t: read_schema(root_conn, t), other: read_schema(root_conn, other)}
    start = current_offset(root_conn)
    # A real statement our grammar does not know: MariaDB's system-versioning partition clause on a column list
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.free ADD SYSTEM VERSIONING",
          f"INSERT INTO `{fresh_db}`.cap VALUES (1)")
    mid = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schemas.get, None, is_captured=lambda x: x == t)
    batch = reader.read_batch(start, mid)
    assert [e.after["id"] for e in batch.events if isinstance(e, DataChangeEvent)] == [1]
    ddl = f"ALTER TABLE `{fresh_db}`.cap ADD SYSTEM VERSIONING"
    _exec(root_conn, ddl, f"INSERT INTO `{fresh_db}`.cap VALUES (2)")
    with pytest.raises(DdlParseError) as info:
        reader.read_batch(mid)
    assert "ADD SYSTEM VERSIONING" in str(info.value) and "cap" in str(info.value)


def test_batch_stops_before_schema_change(settings, root_conn, fresh_db):
    t = TableId(fresh_db, "s")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.s (id int primary key)")
    schemas = {t: read_schema(root_conn, t)}
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.s VALUES (1)")
    before_ddl = current_offset(root_conn)
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.s ADD COLUMN v int")
    after_ddl = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.s VALUES (2, 20)")
    end = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schemas.get, None, is_captured=lambda x: x == t)
    batch = reader.read_batch(start, end, stop_at_schema_change=True)
    assert [e.after for e in batch.events] == [{"id": 1}]
    assert batch.end == before_ddl and batch.schema_change_end == after_ddl
    assert [type(e) for e in batch.schema_change] == [AddColumnEvent]
    # the schema-change job applies it, then the stream resumes after the DDL with the new schema
    history_schema = schemas[t].with_columns([*schemas[t].columns, batch.schema_change[0].column])
    reader2 = BinlogSplitReader(settings, next_server_id(), {t: history_schema}.get, None,
                                is_captured=lambda x: x == t)
    rest = reader2.read_batch(batch.schema_change_end, end, stop_at_schema_change=True)
    assert [e.after for e in rest.events] == [{"id": 2, "v": 20}] and rest.end == end


def test_schema_history_persists_and_replays(settings, root_conn, fresh_db, tmp_path):
    t = TableId(fresh_db, "h")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.h (id int primary key, a int)")
    o0 = current_offset(root_conn)
    store = StateStore.open(tmp_path / "state")
    history = SchemaHistory(store)
    history.bootstrap([read_schema(root_conn, t)], o0)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.h VALUES (1, 1)",
          f"ALTER TABLE `{fresh_db}`.h ADD COLUMN b varchar(5) FIRST",
          f"INSERT INTO `{fresh_db}`.h VALUES ('x', 2, 2)",
          f"ALTER TABLE `{fresh_db}`.h DROP COLUMN a",
          f"INSERT INTO `{fresh_db}`.h VALUES ('y', 3)")
    end = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), history.lookup_at(o0), None, is_captured=lambda x: x == t)
    pos, rows = o0, []
    while pos < end:  # the schema-change job's loop: read to the DDL, record it, resume after it
        batch = reader.read_batch(pos, end, stop_at_schema_change=True)
        rows += [e.after for e in batch.events]
        if batch.schema_change:
            history.apply(batch.schema_change)
            pos = batch.schema_change_end
            reader = BinlogSplitReader(settings, next_server_id(), history.lookup_at(pos), None,
                                       is_captured=lambda x: x == t)
        else:
            pos = batch.end
    assert rows == [{"id": 1, "a": 1}, {"b": "x", "id": 2, "a": 2}, {"b": "y", "id": 3}]
    # a restart replays any range with the schema valid at its start, without asking the server
    _exec(root_conn, f"DROP TABLE `{fresh_db}`.h")
    reopened = SchemaHistory(StateStore.open(tmp_path / "state"))
    assert reopened.schema_at(t, o0).column_names == ("id", "a")
    replay = BinlogSplitReader(settings, next_server_id(), reopened.lookup_at(o0), None, is_captured=lambda x: x == t)
    replayed = [e.after for e in replay.read_range(o0, end, {t}) if isinstance(e, DataChangeEvent)]
    assert replayed == rows
    assert reopened.schema_at(t, end).column_names == ("b", "id")


def test_kept_lookup_reads_each_schema_once_and_asks_misses_again(root_conn, fresh_db, tmp_path):
    """A binlog batch's lookup (``keep=True``) keeps what it found in the history: a schema
    recorded later at the same offset is not seen by it, only by a lookup made afresh. A table the
    history lacks goes to the fallback at every call (the live server may change)."""
    t, unknown = TableId(fresh_db, "k"), TableId(fresh_db, "not_recorded")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.k (id int primary key, a int)")
    o0 = current_offset(root_conn)
    store = StateStore.open(tmp_path / "state")
    history = SchemaHistory(store)
    history.bootstrap([read_schema(root_conn, t)], o0)
    asked: list[TableId] = []

    def fallback(table_id):
        asked.append(table_id)
        return None

    kept = history.lookup_at(o0, fallback=fallback, keep=True)
    assert kept(t).column_names == ("id", "a")
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.k ADD COLUMN b int")
    with store.transaction() as tx:  # overwrite the record at o0 (no caller does this mid-batch)
        tx.put_schema(str(t), o0.sequence, o0.to_dict(), read_schema(root_conn, t).to_dict())
    assert kept(t).column_names == ("id", "a")
    assert history.lookup_at(o0)(t).column_names == ("id", "a", "b")
    assert kept(unknown) is None and kept(unknown) is None
    assert asked == [unknown, unknown]


def _gh_ost(root_conn, db: str, table: str) -> None:
    """The statements gh-ost runs (shadow table, its ALTER, row copy, atomic cut-over, cleanup)."""
    _exec(
        root_conn,
        f"create /* gh-ost */ table `{db}`.`_{table}_gho` like `{db}`.`{table}`",
        f"alter /* gh-ost */ table `{db}`.`_{table}_gho` add column note varchar(20) default 'x' after id",
        f"create /* gh-ost */ table `{db}`.`_{table}_ghc` (id bigint auto_increment, hint varchar(64), "
        "primary key(id))",
        f"insert /* gh-ost */ ignore into `{db}`.`_{table}_gho` (`id`, `v`) select `id`, `v` from `{db}`.`{table}`",
        f"insert into `{db}`.`_{table}_ghc` (hint) values ('copy done')",
        f"rename /* gh-ost */ table `{db}`.`{table}` to `{db}`.`_{table}_del`, `{db}`.`_{table}_gho` to `{db}`.`{table}`",
        f"drop /* gh-ost */ table if exists `{db}`.`_{table}_del`",
        f"drop /* gh-ost */ table if exists `{db}`.`_{table}_ghc`",
        f"insert into `{db}`.`{table}` (id, note, v) values (2, 'after', 20)",
    )


def test_gh_ost_migration_maps_to_the_original_table(settings, root_conn, fresh_db):
    t = TableId(fresh_db, "orders")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.orders (id int primary key, v int)",
          f"INSERT INTO `{fresh_db}`.orders VALUES (1, 10)")
    schemas = {t: read_schema(root_conn, t)}
    start = current_offset(root_conn)
    _gh_ost(root_conn, fresh_db, "orders")
    end = current_offset(root_conn)
    captured = lambda x: x.database == fresh_db  # noqa: E731 - the selector `db.*` also matches the shadows
    with pytest.raises(DdlParseError, match="scan.parse.online.schema.changes.enabled"):
        BinlogSplitReader(settings, next_server_id(), schemas.get, None, is_captured=captured).read_batch(start, end)
    reader = BinlogSplitReader(settings, next_server_id(), schemas.get, None, is_captured=captured,
                               ddl_parser=MySqlDdlParser(parse_online_schema_changes=True))
    batch = reader.read_batch(start, end)
    changes = [e for e in batch.events if isinstance(e, SchemaChangeEvent)]
    rows = [e for e in batch.events if isinstance(e, DataChangeEvent)]
    assert [(type(e).__name__, e.table_id) for e in changes] == [("AddColumnEvent", t)]
    assert changes[0].column.name == "note" and changes[0].after == "id"
    assert [(r.table_id, r.after) for r in rows] == [(t, {"id": 2, "note": "after", "v": 20})]  # shadow copies skipped
    assert reader.schema(t).column_names == read_schema(root_conn, t).column_names == ("id", "note", "v")


def test_new_table_in_binlog_phase(settings, root_conn, fresh_db):
    """``scan.binlog.newly-added-table.enabled``: a table created later is streamed from its CREATE."""
    old, new = TableId(fresh_db, "old"), TableId(fresh_db, "fresh")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.old (id int primary key)")
    schemas = {old: read_schema(root_conn, old)}
    start = current_offset(root_conn)
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.fresh (id int primary key, s varchar(5))",
          f"INSERT INTO `{fresh_db}`.fresh VALUES (1, 'a')", f"INSERT INTO `{fresh_db}`.old VALUES (7)")
    end = current_offset(root_conn)
    chunks = [FinishedChunk(old, 0, None, None, start)]
    for enabled, expected in ((True, [("fresh", "create.table"), ("fresh", 1), ("old", 7)]),
                              (False, [("old", 7)])):
        f = BinlogEventFilter(chunks, schemas.get, captured=lambda x: x.database == fresh_db,
                              binlog_newly_added_table_enabled=enabled)
        reader = BinlogSplitReader(settings, next_server_id(), schemas.get, None,
                                   is_captured=lambda x: x.database == fresh_db)
        batch = reader.read_batch(start, end, event_filter=f)
        got = [(e.table_id.table, e.after["id"] if isinstance(e, DataChangeEvent) else e.type_name)
               for e in batch.events]
        assert got == expected
    assert reader.schema(new).column_names == ("id", "s")


def test_statement_based_dml_on_captured_table_stops(settings, root_conn, fresh_db):
    t = TableId(fresh_db, "sb")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.sb (id int primary key)")
    schemas = {t: read_schema(root_conn, t)}
    start = current_offset(root_conn)
    _exec(root_conn, "SET SESSION binlog_format = 'STATEMENT'", f"INSERT INTO `{fresh_db}`.sb VALUES (1)",
          "SET SESSION binlog_format = 'ROW'")
    reader = BinlogSplitReader(settings, next_server_id(), schemas.get, None, is_captured=lambda x: x == t)
    with pytest.raises(DdlParseError, match="binlog_format=ROW"):
        reader.read_batch(start)


def test_lookup_with_every_schema_read_at_once_answers_as_one_read_per_table(root_conn, fresh_db, tmp_path):
    """A binlog batch reads every table's schema at its start in one state-store read
    (``schemas_at``) and hands it to its lookup (``known``): the same answers as a read per table,
    a table recorded dropped or never recorded goes to the fallback, and the store is not asked
    again for any table."""
    t, gone, unknown = TableId(fresh_db, "k"), TableId(fresh_db, "gone"), TableId(fresh_db, "not_recorded")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.k (id int primary key, a int)")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.gone (id int primary key)")
    o0 = current_offset(root_conn)
    store = StateStore.open(tmp_path / "state")
    history = SchemaHistory(store)
    history.bootstrap([read_schema(root_conn, t), read_schema(root_conn, gone)], o0)
    history.record(gone, o0, None)  # recorded dropped
    known = history.schemas_at(o0)
    assert known == {t: history.schema_at(t, o0), gone: None}
    asked: list[TableId] = []

    def fallback(table_id):
        asked.append(table_id)
        return None

    lookup = history.lookup_at(o0, fallback=fallback, keep=True, known=known)
    with store.transaction() as tx:  # were the store asked again, it would see this
        tx.put_schema(str(unknown), o0.sequence, o0.to_dict(), read_schema(root_conn, t).to_dict())
    assert lookup(t).column_names == ("id", "a")
    assert lookup(gone) is None and lookup(unknown) is None
    assert asked == [gone, unknown]
