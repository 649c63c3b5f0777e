"""What a resnapshot past a purged binlog carries over: the difference between the schema history's
schema and the server's (``cdc_core/pipeline/purged_schemas.py``; end to end in
tests/orchestration/test_resnapshot.py)."""

from __future__ import annotations

from cdc_core.model import events as ev
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.pipeline.purged_schemas import schema_drift

T = TableId("shop", "items")
AT = BinlogOffset("binlog.000009", 4)


def _schema(*columns: Column) -> TableSchema:
    return TableSchema(T, tuple(columns), ("id",))


ID = Column("id", "int(11)", "int", nullable=False)


def test_drops_adds_in_place_and_type_changes_are_found():
    before = _schema(ID, Column("name", "varchar(20)", "varchar"), Column("old", "int(11)", "int"))
    after = _schema(ID, Column("tag", "varchar(8)", "varchar"), Column("name", "varchar(40)", "varchar"),
                    Column("qty", "bigint(20)", "bigint", nullable=False))
    found = schema_drift(T, before, after, AT)
    assert [type(e) for e in found] == [ev.DropColumnEvent, ev.AddColumnEvent, ev.AlterColumnTypeEvent,
                                        ev.AddColumnEvent]
    drop, tag, name, qty = found
    assert drop.column_name == "old"
    assert (tag.column.name, tag.position, tag.after) == ("tag", "AFTER", "id")
    assert name.column_name == "name" and name.column.column_type == "varchar(40)"
    assert (qty.column.name, qty.after) == ("qty", "name")
    assert all(e.offset == AT and e.table_id == T for e in found)


def test_the_same_schema_spelt_differently_is_no_change():
    history = _schema(Column("id", "INT", "int", nullable=False), Column("n", "bigint  unsigned", "bigint"))
    server = _schema(ID, Column("n", "bigint(20) unsigned", "bigint"))
    assert schema_drift(T, history, server, AT) == []
    assert schema_drift(T, server, _schema(ID, Column("n", "bigint(20) unsigned", "bigint", nullable=False)), AT)
