"""The schema registry without servers: derivation per behavior, the type filter, widest types,
and the persisted state machine over a real (SQLite) state store."""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdc_core.model import events as ev
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.model.schema_change_codec import event_from_dict, event_to_dict
from cdc_core.schema_evolution.derivation import (
    SchemaChangeBehavior,
    SchemaChangeRefused,
    SchemaChangeTypeFilter,
    SchemaDerivator,
)
from cdc_core.schema_evolution.merging import widest_column
from cdc_core.schema_evolution.registry import RegistryStateError, RequestStatus, SchemaRegistry
from cdc_core.state import StateStore

T = TableId("db", "t")
OFF = BinlogOffset("binlog.000001", 500)
SCHEMA = TableSchema(T, (Column("id", "int(11)", "int", nullable=False), Column("a", "int(11)", "int", nullable=False),
                         Column("b", "varchar(10)", "varchar", char_length=10)), ("id",))


def derivator(behavior: str, include=None, exclude=None, route=None) -> SchemaDerivator:
    b = SchemaChangeBehavior.parse(behavior)
    return SchemaDerivator(b, route or (lambda t: (t,)), SchemaChangeTypeFilter.of(b, include, exclude))


def derive(behavior: str, *events, **kw):
    changes, _ = derivator(behavior, **kw).derive(list(events), {T: SCHEMA}, {})
    return [(c.event.type_name, getattr(c.event, "column", None)) for c in changes]


def test_lenient_rewrites_as_flink_cdc_code_does():
    add = ev.AddColumnEvent(T, OFF, column=Column("c", "int(11)", "int", nullable=False), position="FIRST")
    (kind, col), = derive("lenient", add)
    assert kind == "add.column" and col.nullable
    # DropColumn of a NOT NULL column: kept, made nullable; of a nullable one: nothing
    assert derive("lenient", ev.DropColumnEvent(T, OFF, column_name="a")) == [
        ("alter.column.type", Column("a", "int(11)", "int", nullable=True))]
    assert derive("lenient", ev.DropColumnEvent(T, OFF, column_name="b")) == []
    # RenameColumn: the new name added (nullable), the old kept (made nullable if it was not)
    got = derive("lenient", ev.RenameColumnEvent(T, OFF, old_name="a", new_name="a2"))
    assert [k for k, _ in got] == ["add.column", "alter.column.type"] and got[0][1].name == "a2" and got[0][1].nullable
    # AlterColumnType passes; TruncateTable and DropTable are excluded by default, unless exclude is given
    assert [k for k, _ in derive("lenient", ev.AlterColumnTypeEvent(T, OFF, column_name="a",
                                                                 column=Column("a", "bigint(20)", "bigint")))] == [
        "alter.column.type"]
    assert derive("lenient", ev.TruncateTableEvent(T, OFF), ev.DropTableEvent(T, OFF)) == []
    assert [k for k, _ in derive("lenient", ev.TruncateTableEvent(T, OFF), ev.DropTableEvent(T, OFF), exclude=[])] == [
        "truncate.table", "drop.table"]


def test_evolve_ignore_exception_and_filters():
    events = [ev.AddColumnEvent(T, OFF, column=Column("c", "int(11)", "int")), ev.DropColumnEvent(T, OFF, column_name="b"),
              ev.TruncateTableEvent(T, OFF)]
    assert [k for k, _ in derive("evolve", *events)] == ["add.column", "drop.column", "truncate.table"]
    assert [k for k, _ in derive("try_evolve", *events)] == ["add.column", "drop.column", "truncate.table"]
    assert derive("ignore", *events) == []
    create = ev.CreateTableEvent(TableId("db", "n"), OFF, schema=SCHEMA)
    assert [k for k, _ in derive("ignore", create)] == ["create.table"]
    assert [k for k, _ in derive("exception", create)] == ["create.table"]
    with pytest.raises(SchemaChangeRefused, match="exception"):
        derive("exception", *events)
    # include / exclude: families match, exclude wins, create.table always passes
    assert [k for k, _ in derive("evolve", *events, exclude=["drop"])] == ["add.column", "truncate.table"]
    assert [k for k, _ in derive("evolve", *events, include=["column"], exclude=["drop.column"])] == ["add.column"]
    assert [k for k, _ in derive("evolve", create, include=["add.column"])] == ["create.table"]


def test_merged_tables_widen_and_never_drop():
    t1, t2, target = TableId("db", "t_1"), TableId("db", "t_2"), TableId("db", "all")
    base = TableSchema(t1, (Column("id", "int(11)", "int", nullable=False), Column("v", "int(11)", "int")), ("id",))
    d = derivator("evolve", route=lambda t: (target,))
    upstream = {t1: base, t2: TableSchema(t2, base.columns, ("id",))}
    changes, before = d.derive([ev.DropColumnEvent(t1, OFF, column_name="v")], upstream, {})
    assert changes == [] and before[target].column_names == ("id", "v")
    changes, _ = d.derive([ev.AlterColumnTypeEvent(t2, OFF, column_name="v", column=Column("v", "bigint(20)", "bigint"))],
                          upstream, {})
    assert [(c.event.type_name, c.event.column.column_type, c.merged) for c in changes] == [
        ("alter.column.type", "bigint", True)]


def test_widest_types():
    def col(t, dt, **kw):
        return Column("x", t, dt, **kw)

    assert widest_column(col("int(11)", "int"), col("bigint(20)", "bigint")).column_type == "bigint"
    assert widest_column(col("int(10) unsigned", "int"), col("int(11)", "int")).column_type == "bigint"
    assert widest_column(col("decimal(10,2)", "decimal"), col("int(11)", "int")).column_type == "decimal(12,2)"
    assert widest_column(col("varchar(10)", "varchar"), col("char(40)", "char")).column_type == "varchar(40)"
    assert widest_column(col("date", "date"), col("datetime(3)", "datetime")).column_type == "datetime(3)"
    assert widest_column(col("int(11)", "int"), col("varchar(5)", "varchar")).column_type == "longtext"


def test_codec_round_trip():
    for e in [ev.AddColumnEvent(T, OFF, "ddl", column=SCHEMA.columns[1], position="AFTER", after="id"),
              ev.RenameColumnEvent(T, OFF, old_name="a", new_name="b"), ev.RenameTableEvent(T, OFF, new_table_id=TableId("db", "u")),
              ev.CreateTableEvent(T, OFF, schema=SCHEMA), ev.TruncateTableEvent(T, None),
              ev.AlterColumnPositionEvent(T, OFF, "ddl", column_name="b", position="AFTER", after="id"),
              ev.AlterPrimaryKeyEvent(T, OFF, primary_key=("id", "a")), ev.AlterPrimaryKeyEvent(T, OFF),
              ev.AlterTableCharsetEvent(T, OFF, charset="latin1")]:
        assert event_from_dict(event_to_dict(e)) == e
    schema = TableSchema(T, SCHEMA.columns, ("id",), "c", charset="latin2")
    assert TableSchema.from_dict(schema.to_dict()).charset == "latin2"


@pytest.mark.parametrize("behavior", [b.value for b in SchemaChangeBehavior])
def test_moves_and_table_charsets_change_no_doris_table(behavior):
    """Doris loads match columns by name and Doris has no charsets: under every behavior (even
    ``exception``) these derive nothing, so they never refuse or fail a schema change."""
    move = ev.AlterColumnPositionEvent(T, OFF, column_name="b", position="FIRST")
    charset = ev.AlterTableCharsetEvent(T, OFF, charset="latin1")
    assert derive(behavior, move, charset) == []
    changes, _ = derivator(behavior).derive([move, charset], {T: SCHEMA}, {})
    assert changes == []


def test_a_charset_only_type_change_derives_nothing_but_a_type_change_does():
    utf8 = Column("b", "varchar(10)", "varchar", char_length=10, charset="utf8mb4")
    latin1_schema = TableSchema(T, (SCHEMA.columns[0], SCHEMA.columns[1], replace(utf8, charset="latin1")), ("id",))
    changes, _ = derivator("exception").derive([ev.AlterColumnTypeEvent(T, OFF, column_name="b", column=utf8)],
                                               {T: latin1_schema}, {})
    assert changes == []
    wider = ev.AlterColumnTypeEvent(T, OFF, column_name="b", column=replace(utf8, column_type="varchar(20)", char_length=20))
    assert [k for k, _ in derive("evolve", wider)] == ["alter.column.type"]


def test_primary_key_changes_are_derived_for_doris_to_refuse_or_skip():
    pk = ev.AlterPrimaryKeyEvent(T, OFF, primary_key=("id", "a"))
    for behavior in ("lenient", "evolve", "try_evolve"):
        assert [k for k, _ in derive(behavior, pk)] == ["alter.primary.key"]
    assert derive("ignore", pk) == []
    assert derive("evolve", pk, exclude=["alter.primary.key"]) == []
    with pytest.raises(SchemaChangeRefused, match="alter.primary.key"):
        derive("exception", pk)
    # a merged table receives it too (its key cannot follow one source either)
    t1, t2, target = TableId("db", "t_1"), TableId("db", "t_2"), TableId("db", "all")
    d = derivator("evolve", route=lambda t: (target,))
    upstream = {t1: replace(SCHEMA, table_id=t1), t2: replace(SCHEMA, table_id=t2)}
    changes, _ = d.derive([ev.AlterPrimaryKeyEvent(t1, OFF, primary_key=("id", "a"))], upstream, {})
    assert [(c.event.type_name, c.target, c.merged) for c in changes] == [("alter.primary.key", target, True)]


def test_state_machine_is_persisted_and_ordered(tmp_path):
    store = StateStore.open(tmp_path)
    registry = SchemaRegistry(store)
    assert registry.status is RequestStatus.IDLE
    with pytest.raises(RegistryStateError):
        registry.flushed(OFF, [ev.AddColumnEvent(T, OFF, column=SCHEMA.columns[1])], OFF)
    registry.request(OFF, "run1")
    assert store.get("flags", "binlog_paused")
    registry.request(OFF, "run2")  # a re-run joins the request in progress
    assert SchemaRegistry(StateStore.open(tmp_path)).current()["run_ids"] == ["run1", "run2"]
    registry.flushed(BinlogOffset("binlog.000001", 400), [ev.AddColumnEvent(T, OFF, column=SCHEMA.columns[1])], OFF)
    assert registry.status is RequestStatus.APPLYING
    registry.set_derived([], SchemaChangeBehavior.LENIENT)
    with store.transaction() as tx:
        registry.finish(tx, {})
    store.put("binlog", "committed_offset", {"file": "binlog.000001", "position": 400})
    record = registry.release()
    assert registry.status is RequestStatus.IDLE and not store.get("flags", "binlog_paused")
    assert store.get("binlog", "committed_offset")["position"] == 500
    assert registry.handled(OFF)["ddl_offset"] == record["ddl_offset"]
