"""Table creation from source schemas, existing-table checks, and schema changes over HTTP."""

from __future__ import annotations

import pytest

from cdc_core.doris.errors import SchemaChangeError, TableMismatchError
from cdc_core.doris.metadata_applier import default_clause
from cdc_core.doris.row_identity import ROW_COPY
from cdc_core.doris.rows import SEQUENCE_COLUMN
from cdc_core.doris.table_creation import KeylessMode
from cdc_core.model import events as ev
from cdc_core.model.schema import Column, TableId, TableSchema
from tests.sink.conftest import select, users_schema


def _show_create(sink, target: TableId) -> str:
    return sink.catalog.execute(target.database, f"SHOW CREATE TABLE `{target.database}`.`{target.table}`").rows[0][1]


def test_create_table_puts_keys_first_with_sequence_column_and_properties(sink, doris_db):
    schema = users_schema(doris_db)  # source order: name, id, score; key id
    ddl = sink.creator.create_table_ddl(schema, schema.table_id)
    assert ddl.index("`id` INT NOT NULL") < ddl.index("`name` VARCHAR(96)")
    table = sink.create_table(schema)
    assert table.columns == ("id", "name", "score", SEQUENCE_COLUMN)
    assert table.unique and table.sequence_column == SEQUENCE_COLUMN
    info = sink.catalog.table_info(doris_db, "users")
    assert info.key_columns == ("id",) and info.column("name").comment == "user name"
    created = _show_create(sink, schema.table_id)
    assert "UNIQUE KEY(`id`)" in created and "COMMENT 'people'" in created
    assert '"function_column.sequence_col" = "__tidemark_seq"' in created
    assert "BUCKETS AUTO" in created and "tag.location.default: 1" in created  # replication_num = 1
    # creating again uses the existing table
    assert sink.create_table(schema) == table


def test_table_without_primary_key_is_keyed_by_its_rows_identity(sink, doris_db):
    """The exact form (the default): a snapshot chunk's rows get their identity at the load (a copy
    ordinal per identical row); rows without one that are not a whole chunk are refused."""
    schema = TableSchema(TableId(doris_db, "exact"), (Column("msg", "text", "text"), Column("n", "int(11)", "int")))
    table = sink.create_table(schema)
    assert table.unique and table.row_identity and table.visible_columns == ("msg", "n")
    c = sink.load(table.table_id, "chunk-0-g0", [{"msg": "a", "n": 1}, {"msg": "a", "n": 1}, {"msg": None, "n": 2}],
                  sequence=5, fresh=True)
    sink.commit([c])
    got = select(sink, table.table_id, f"msg, n, {ROW_COPY}", f"n, {ROW_COPY}")
    assert got == [("a", 1, 0), ("a", 1, 1), (None, 2, 0)]
    with pytest.raises(ValueError, match="carry none"):
        sink.load(table.table_id, "batch-1", [{"msg": "b", "n": 3}])


def test_existing_duplicate_table_of_a_keyless_source_keeps_appending_with_a_warning(sink, doris_db, caplog):
    sink.catalog.create_database(doris_db)
    sink.catalog.execute(doris_db, f"CREATE TABLE `{doris_db}`.`old` (`n` INT, `msg` STRING) DUPLICATE KEY(`n`) "
                                   "DISTRIBUTED BY HASH(`n`) BUCKETS 1 PROPERTIES ('replication_num'='1')")
    schema = TableSchema(TableId(doris_db, "old"), (Column("n", "int(11)", "int"), Column("msg", "text", "text")))
    with caplog.at_level("WARNING", logger="cdc_core.doris.table_creation"):
        table = sink.create_table(schema)
    assert not table.unique and not table.row_identity
    assert [r.getMessage() for r in caplog.records if f"resnapshot --table {doris_db}.old" in r.getMessage()]
    c = sink.load(table.table_id, "b0", [{"n": 1, "msg": "a"}, {"n": 1, "msg": "a", "__DORIS_DELETE_SIGN__": "1"}])
    sink.commit([c])
    assert select(sink, table.table_id, "n, msg", "n") == [(1, "a")]


def test_table_without_primary_key_is_duplicate_model_when_keyless_append(sink, doris_db):
    sink.keyless = KeylessMode.APPEND  # table.create.keyless: append
    schema = TableSchema(TableId(doris_db, "events"), (Column("n", "int(11)", "int"), Column("msg", "text", "text")))
    assert "DUPLICATE KEY(`n`)" in sink.creator.create_table_ddl(schema, schema.table_id)
    table = sink.create_table(schema)
    assert not table.unique and table.sequence_column is None and table.columns == ("n", "msg")
    c = sink.load(table.table_id, "chunk-0-g0", [{"msg": "a", "n": 1}, {"msg": "b", "n": 2, "__DORIS_DELETE_SIGN__": "1"}])
    sink.commit([c])
    assert select(sink, table.table_id, "n, msg", "n") == [(1, "a")]  # a delete cannot apply: dropped
    # a STRING first column cannot be a Doris key: a keyless duplicate table (Doris 2.0+ property)
    text_first = TableSchema(TableId(doris_db, "logs"), (Column("msg", "text", "text"), Column("n", "int(11)", "int")))
    ddl = sink.creator.create_table_ddl(text_first, text_first.table_id)
    assert "DISTRIBUTED BY RANDOM" in ddl and "'enable_duplicate_without_keys_by_default' = 'true'" in ddl


def test_existing_table_that_does_not_fit_is_refused_with_every_reason(sink, doris_db):
    sink.catalog.create_database(doris_db)
    sink.catalog.execute(doris_db, f"CREATE TABLE `{doris_db}`.`users` (`k` INT, `name` VARCHAR(10)) "
                                   "DUPLICATE KEY(`k`) DISTRIBUTED BY HASH(`k`) BUCKETS 1 PROPERTIES ('replication_num'='1')")
    with pytest.raises(TableMismatchError) as info:
        sink.create_table(users_schema(doris_db))
    text = str(info.value)
    assert "no column(s) id, score" in text and "UNIQUE model" in text and "Drop it" in text


def test_routed_table_creation_and_many_to_one_merge(doris, doris_db):
    from cdc_core.config.rule_options import RouteRule
    from cdc_core.doris.routing import Route, TableRouter
    from cdc_core.doris.sink import DorisSink
    from tests.sink.conftest import make_client, test_type_mapper

    rule = RouteRule.model_validate({"source-table": f"{doris_db}.users_[0-9]+", "sink-table": f"{doris_db}.users"})
    sink = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper,
                     router=TableRouter([Route.from_rule(rule)]))
    shards = [TableId(doris_db, "users_1"), TableId(doris_db, "users_2")]
    assert {sink.route(s) for s in shards} == {(TableId(doris_db, "users"),)}
    assert sink.route(TableId(doris_db, "other")) == (TableId(doris_db, "other"),)
    for i, shard in enumerate(shards):
        target = sink.create_table(users_schema(doris_db, shard.table)).table_id
        assert target == TableId(doris_db, "users")
        sink.commit([sink.load(target, f"chunk-0-g0-{shard.table}", [{"id": 10 * i + 1, "name": shard.table}], sequence=1)])
    assert select(sink, TableId(doris_db, "users"), "id, name") == [(1, "users_1"), (11, "users_2")]
    assert sink.router.is_merged(TableId(doris_db, "users"), shards)
    res = sink.apply_schema_change(ev.TruncateTableEvent(shards[0]), merged=True)
    assert res.outcome == "ignored" and len(select(sink, TableId(doris_db, "users"))) == 2
    sink.close()


def test_schema_changes_apply_and_reapply_idempotently(sink, doris_db):
    src = TableId(doris_db, "users")
    sink.apply_schema_change(ev.CreateTableEvent(src, schema=users_schema(doris_db)))
    sink.commit([sink.load(src, "chunk-0-g0", [{"id": 1, "name": "a", "score": "1.5"}], sequence=1)])
    events = [
        ev.AddColumnEvent(src, column=Column("age", "int(11)", "int", comment="years")),
        ev.AlterColumnTypeEvent(src, column_name="age", column=Column("age", "bigint(20)", "bigint", comment="years")),
        ev.RenameColumnEvent(src, old_name="score", new_name="points"),
        ev.AlterColumnCommentEvent(src, column_name="name", comment="the name"),
        ev.AlterTableCommentEvent(src, comment="people v2"),
        ev.DropColumnEvent(src, column_name="age"),
    ]
    outcomes = []
    for e in events:
        # each change, then the same change again as after a crash between applying and recording it
        outcomes.append((sink.apply_schema_change(e).outcome, sink.apply_schema_change(e).outcome))
    assert [first for first, _ in outcomes] == ["applied"] * len(events)
    assert [again for _, again in outcomes] == ["skipped", "skipped", "skipped", "applied", "applied", "skipped"]
    info = sink.catalog.table_info(doris_db, "users")
    assert info.column_names == ("id", "name", "points", SEQUENCE_COLUMN)
    assert info.column("name").comment == "the name"
    assert select(sink, src, "id, name, points") == [(1, "a", 1.5)]
    assert "people v2" in _show_create(sink, src)
    # the layout cache follows the change: a load after the rename uses the new column
    sink.commit([sink.load(src, "binlog-1-2", [{"id": 2, "name": "b", "points": "2"}], sequence=2, fmt="csv")])
    assert select(sink, src, "id, points") == [(1, 1.5), (2, 2.0)]
    assert sink.apply_schema_change(ev.TruncateTableEvent(src)).outcome == "applied"
    assert select(sink, src) == []
    assert sink.apply_schema_change(ev.DropTableEvent(src)).outcome == "applied"
    assert sink.apply_schema_change(ev.DropTableEvent(src)).outcome == "applied"  # IF EXISTS
    assert sink.catalog.table_info(doris_db, "users") is None
    assert sink.apply_schema_change(ev.TruncateTableEvent(src)).outcome == "skipped"


def test_dropping_a_key_column_is_refused_by_the_light_schema_change_check(sink, doris_db):
    src = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    with pytest.raises(SchemaChangeError, match="light schema change"):
        sink.apply_schema_change(ev.DropColumnEvent(src, column_name="id"))


def test_widening_a_key_column(sink, doris_db):
    src = TableId(doris_db, "codes")
    schema = TableSchema(src, (Column("code", "varchar(4)", "varchar", False, char_length=4),
                               Column("n", "int(11)", "int")), primary_key=("code",))
    sink.create_table(schema)
    wider = Column("code", "varchar(8)", "varchar", False, char_length=8)
    event = ev.AlterColumnTypeEvent(src, column_name="code", column=wider)
    assert sink.apply_schema_change(event).outcome == "applied"
    assert sink.apply_schema_change(event).outcome == "skipped"
    assert sink.catalog.table_info(doris_db, "codes").column("code").is_key
    assert sink.catalog.column_types(doris_db, "codes")["code"].lower() == "varchar(24)"


def test_type_spellings_compare_equal():
    from cdc_core.doris.metadata_applier import _normalize_type

    assert _normalize_type("datetime(3)") == _normalize_type("DATETIMEV2(3)")
    assert _normalize_type("datetime") == _normalize_type("DATETIMEV2(0)")
    assert _normalize_type("text") == _normalize_type("STRING")
    assert _normalize_type("decimal(10,2)") == _normalize_type("DECIMALV3(10, 2)")
    assert _normalize_type("date") == _normalize_type("DATEV2")
    assert _normalize_type("varchar(24)") != _normalize_type("VARCHAR(12)")


@pytest.mark.parametrize(("default", "doris_type", "clause"), [
    (None, "INT", ""),
    ("NULL", "INT", ""),
    ("5", "INT", " DEFAULT '5'"),
    ("-1.50", "DECIMAL(10,2)", " DEFAULT '-1.50'"),
    ("'it''s'", "VARCHAR(40)", " DEFAULT 'it\\'s'"),
    ("current_timestamp()", "DATETIME(0)", " DEFAULT CURRENT_TIMESTAMP"),
    ("current_timestamp(3)", "VARCHAR(40)", ""),
    ("'0000-00-00 00:00:00'", "DATETIME(0)", ""),
    ("1", "BOOLEAN", " DEFAULT 'true'"),
    ("uuid()", "VARCHAR(36)", ""),
])
def test_an_added_column_keeps_its_constant_default(default, doris_type, clause):
    assert default_clause(default, doris_type) == clause


def test_a_transform_rules_table_options_are_properties_of_the_tables_it_creates(sink, doris_db):
    """``transform: [{table-options: ...}]`` (the sink's ``table_options``) lands in the created
    table's PROPERTIES, over the sink's ``table.create.properties.*``; other tables keep those."""
    sink.table_options = lambda source: {"bloom_filter_columns": "name"} \
        if source.table == "users" else {}
    sink.create_table(users_schema(doris_db))
    sink.create_table(users_schema(doris_db, "others"))
    created = _show_create(sink, TableId(doris_db, "users"))
    assert '"bloom_filter_columns" = "name"' in created
    assert '"bloom_filter_columns"' not in _show_create(sink, TableId(doris_db, "others"))
    event = ev.CreateTableEvent(TableId(doris_db, "users2"), schema=users_schema(doris_db, "users2"))
    sink.table_options = lambda source: {"bloom_filter_columns": "score"}
    sink.apply_schema_change(event)
    assert '"bloom_filter_columns" = "score"' in _show_create(sink, TableId(doris_db, "users2"))


def test_moves_and_table_charsets_need_no_doris_change(sink, doris_db):
    src = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    before = sink.catalog.table_info(doris_db, "users").column_names
    for event in (ev.AlterColumnPositionEvent(src, column_name="score", position="FIRST"),
                  ev.AlterColumnPositionEvent(src, column_name="id", position="AFTER", after="name"),
                  ev.AlterTableCharsetEvent(src, charset="latin1")):
        assert sink.apply_schema_change(event).outcome == "skipped"
    assert sink.catalog.table_info(doris_db, "users").column_names == before
    # loads match by name, so rows keep landing in the right columns
    sink.commit([sink.load(src, "binlog-1-2", [{"score": "2.5", "name": "b", "id": 2}], sequence=2)])
    assert select(sink, src, "id, name, score") == [(2, "b", 2.5)]


def test_a_primary_key_change_is_refused_with_the_table_and_the_fix(sink, doris_db):
    src = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))  # UNIQUE KEY(id)
    assert sink.apply_schema_change(ev.AlterPrimaryKeyEvent(src, primary_key=("ID",))).outcome == "skipped"
    for key in (("id", "name"), ()):
        with pytest.raises(SchemaChangeError) as info:
            sink.apply_schema_change(ev.AlterPrimaryKeyEvent(src, primary_key=key))
        message = str(info.value)
        assert f"{doris_db}.users" in message and "keyed on (id)" in message
        assert "tidemark resnapshot" in message and "--table" in message and "exclude.schema.changes" in message
    assert sink.catalog.table_info(doris_db, "users").key_columns == ("id",)


def test_one_read_finds_the_missing_tables_and_the_columns_of_the_others(sink, doris_db, monkeypatch):
    """``doris_tables``: one statement for a database's tables and columns; a table it lists, here
    one with other columns than the source's, is still read and checked by ``create_table`` as
    before: refused with every reason."""
    import cdc_core.doris.catalog as catalog_module

    sink.catalog.create_database(doris_db)
    sink.catalog.execute(doris_db, f"CREATE TABLE `{doris_db}`.`users` (`k` INT, `name` VARCHAR(10)) "
                                   "DUPLICATE KEY(`k`) DISTRIBUTED BY HASH(`k`) BUCKETS 1 PROPERTIES ('replication_num'='1')")
    users, other = TableId(doris_db, "users"), TableId(doris_db, "other")
    statements: list[str] = []
    real = catalog_module.DorisCatalog.execute
    monkeypatch.setattr(catalog_module.DorisCatalog, "execute",
                        lambda self, db, stmt, **kw: statements.append(stmt) or real(self, db, stmt, **kw))
    known = sink.doris_tables([users, other])
    assert len(statements) == 1  # one statement for the whole database
    assert known.absent == {other} and dict(known.columns) == {users: ("k", "name")}
    with pytest.raises(TableMismatchError) as info:
        sink.create_table(users_schema(doris_db), users, absent=users in known.absent)
    text = str(info.value)
    assert "no column(s) id, score" in text and "UNIQUE model" in text and "Drop it" in text
    assert sink.create_table(users_schema(doris_db, "other"), other, absent=True).unique


def test_a_database_with_more_columns_than_one_answer_is_asked_table_by_table(sink, doris_db):
    sink.create_table(users_schema(doris_db, "a"))
    assert sink.catalog.table_columns(doris_db, at_most=2) is None
    known = sink.doris_tables([TableId(doris_db, "a")])
    assert known.columns == {TableId(doris_db, "a"): ("id", "name", "score", SEQUENCE_COLUMN)}
