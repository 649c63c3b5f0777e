"""Every schema-change event type reaches every consumer's dispatch (see cdc_core/model/__init__.py).

The event classes come from the one registry (``SCHEMA_CHANGE_EVENTS``) and, independently, from a
walk of ``SchemaChangeBase``'s subclasses, so a class added to ``events.py`` but not to the union
fails here; a class in the union that a consumer's ``match`` forgets reaches its ``assert_never``
and fails here too. Each consumer gets a minimal instance of each type: the codec round-trips it,
schema application, the schema history, derivation (every behavior, one source and a merged
target), the Doris metadata applier (against a fake catalog) and the schema-change steps'
``table_effect`` accept it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from cdc_core.doris.catalog import DorisColumn, DorisTableInfo, QueryResult
from cdc_core.doris.metadata_applier import AppliedChange, DorisMetadataApplier
from cdc_core.model import events as ev
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.model.schema_change_codec import event_from_dict, event_to_dict
from cdc_core.model.schema_changes import apply_schema_change
from cdc_core.mysql.schema_history import SchemaHistory
from cdc_core.pipeline.schema_change import TableEffect, table_effect
from cdc_core.schema_evolution.derivation import (
    DerivedChange,
    SchemaChangeBehavior,
    SchemaChangeRefused,
    SchemaChangeTypeFilter,
    SchemaDerivator,
    evolved_after,
)

USERS = TableId("shop", "users")
RENAMED = TableId("shop", "people")
OTHER_SHARD = TableId("shop", "users_2")
TARGET = TableId("dw", "users")
AT = BinlogOffset("binlog.000003", 4711)
SCHEMA = TableSchema(USERS, (Column("id", "bigint(20)", "bigint", nullable=False),
                             Column("name", "varchar(64)", "varchar", charset="utf8mb4", char_length=64)),
                     primary_key=("id",), charset="utf8mb4")

# What a minimal, valid instance of each type carries beyond table, offset and DDL text. A new type
# without an entry is built from its defaults (every field has one), so it still reaches the consumers.
_FIELDS: dict[type, dict[str, Any]] = {
    ev.CreateTableEvent: {"schema": SCHEMA},
    ev.AddColumnEvent: {"column": Column("age", "int(11)", "int", default="0"), "position": "AFTER", "after": "id"},
    ev.DropColumnEvent: {"column_name": "name"},
    ev.RenameColumnEvent: {"old_name": "name", "new_name": "full_name"},
    ev.AlterColumnTypeEvent: {"column_name": "name", "column": Column("name", "varchar(128)", "varchar")},
    ev.AlterColumnPositionEvent: {"column_name": "name", "position": "FIRST"},
    ev.AlterPrimaryKeyEvent: {"primary_key": ("id",)},
    ev.AlterTableCharsetEvent: {"charset": "latin1"},
    ev.AlterColumnCommentEvent: {"column_name": "name", "comment": "the user's name"},
    ev.AlterTableCommentEvent: {"comment": "people who buy"},
    ev.TruncateTableEvent: {},
    ev.PartitionRowsEvent: {"operation": "TRUNCATE PARTITION"},
    ev.DropTableEvent: {},
    ev.RenameTableEvent: {"new_table_id": RENAMED},
}


def _subclasses(cls: type) -> set[type]:
    out: set[type] = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


EVERY_TYPE = sorted(set(ev.SCHEMA_CHANGE_EVENTS) | _subclasses(ev.SchemaChangeBase), key=lambda c: c.__name__)


def _event(cls: type) -> Any:
    return cls(USERS, offset=AT, ddl=f"-- {cls.type_name}", **_FIELDS.get(cls, {}))


def _stranger() -> Any:
    """An object of the base class, which is in no consumer's ``match``: each must refuse it."""
    stranger = object.__new__(ev.SchemaChangeBase)
    for name, value in (("table_id", USERS), ("offset", AT), ("ddl", None)):
        object.__setattr__(stranger, name, value)
    return stranger


def test_the_registry_is_the_union_and_every_subclass():
    assert set(ev.SCHEMA_CHANGE_EVENTS) == _subclasses(ev.SchemaChangeBase), (
        "every SchemaChangeBase subclass belongs to SchemaChangeEvent (cdc_core/model/events.py), and back")
    assert len({cls.type_name for cls in ev.SCHEMA_CHANGE_EVENTS}) == len(ev.SCHEMA_CHANGE_EVENTS)
    assert all(isinstance(_event(cls), ev.SchemaChangeEvent) for cls in ev.SCHEMA_CHANGE_EVENTS)
    with pytest.raises(TypeError, match="no event"):
        ev.SchemaChangeBase(USERS)


@pytest.mark.parametrize("cls", EVERY_TYPE, ids=lambda c: c.type_name)
def test_the_codec_round_trips_every_type(cls):
    event = _event(cls)
    data = event_to_dict(event)
    assert data["type"] == cls.type_name
    back = event_from_dict(data)
    assert type(back) is cls
    assert back == event
    assert back.offset == AT and back.ddl == event.ddl


@pytest.mark.parametrize("cls", EVERY_TYPE, ids=lambda c: c.type_name)
def test_schema_application_handles_every_type(cls):
    event = _event(cls)
    after = apply_schema_change(SCHEMA, event)
    assert USERS in after
    assert apply_schema_change(None, event, strict=False).keys() >= {USERS}


class _FakeTx:
    def __init__(self, schemas: dict[str, dict[str, Any] | None]):
        self.schemas = schemas
        self.put: list[tuple[str, int, dict[str, Any] | None]] = []

    def schema_at(self, table: str, sequence: int) -> dict[str, Any] | None:
        return self.schemas.get(table)

    def put_schema(self, table: str, sequence: int, offset: dict[str, Any], schema: dict[str, Any] | None) -> None:
        self.put.append((table, sequence, schema))


@pytest.mark.parametrize("cls", EVERY_TYPE, ids=lambda c: c.type_name)
def test_the_schema_history_records_every_type(cls):
    tx = _FakeTx({str(USERS): SCHEMA.to_dict()})
    touched = SchemaHistory(store=None).apply([_event(cls)], tx)
    assert USERS in touched
    assert tx.put and all(sequence == AT.sequence for _, sequence, _ in tx.put)


@pytest.mark.parametrize("behavior", list(SchemaChangeBehavior), ids=str)
@pytest.mark.parametrize("merged", [False, True], ids=["one-source", "merged"])
@pytest.mark.parametrize("cls", EVERY_TYPE, ids=lambda c: c.type_name)
def test_derivation_handles_every_type(cls, behavior, merged):
    sources = {USERS, OTHER_SHARD} if merged else {USERS}
    derivator = SchemaDerivator(behavior, lambda t: (TARGET,) if t in sources else (),
                                SchemaChangeTypeFilter.of(behavior, None, None))
    upstream = {t: dataclasses.replace(SCHEMA, table_id=t) for t in sources}
    if cls is ev.CreateTableEvent:
        upstream.pop(USERS)
    try:
        changes, start = derivator.derive([_event(cls)], upstream, {})
    except SchemaChangeRefused:
        assert behavior is SchemaChangeBehavior.EXCEPTION
        return
    assert all(isinstance(c, DerivedChange) and isinstance(c.event, ev.SchemaChangeEvent) for c in changes)
    assert evolved_after(start, changes).keys() >= {c.target for c in changes}


class _FakeCatalog:
    """Doris as a UNIQUE table ``dw.users`` keyed on ``id`` with a ``name`` column."""

    def __init__(self) -> None:
        self.statements: list[str] = []
        self.info = DorisTableInfo(TARGET.database, TARGET.table, "UNIQUE_KEYS",
                                   (DorisColumn("id", "BIGINT", True, False), DorisColumn("name", "VARCHAR(256)",
                                                                                            False, True)))

    def column_exists(self, database: str, table: str, column: str) -> bool:
        return table == TARGET.table and self.info.column(column) is not None

    def table_info(self, database: str, table: str) -> DorisTableInfo | None:
        return self.info if table == TARGET.table else None

    def column_types(self, database: str, table: str) -> dict[str, str]:
        return {c.name: c.type for c in self.info.columns}

    def column_defaults(self, database: str, table: str) -> dict[str, str | None]:
        return {c.name: None for c in self.info.columns}

    def check_light_schema_change(self, database: str, table: str, column: str, *, drop: bool) -> None:
        return None

    def execute(self, database: str, statement: str, *, limit: int | None = None) -> QueryResult:
        self.statements.append(statement)
        return QueryResult((), ())


class _FakeCreator:
    def __init__(self) -> None:
        self.ensured: list[TableId] = []

    @staticmethod
    def type_mapper(column: Column) -> str:
        return "INT" if column.data_type == "int" else "VARCHAR(512)"

    def ensure(self, schema: TableSchema, target: TableId | None = None) -> None:
        self.ensured.append(target or schema.table_id)


@pytest.mark.parametrize("merged", [False, True], ids=["one-source", "merged"])
@pytest.mark.parametrize("cls", EVERY_TYPE, ids=lambda c: c.type_name)
def test_the_doris_metadata_applier_handles_every_type(cls, merged):
    event = _event(cls)
    if cls is ev.RenameTableEvent:
        event = dataclasses.replace(event, new_table_id=TableId(TARGET.database, "people"))
    applier = DorisMetadataApplier(_FakeCatalog(), _FakeCreator())  # type: ignore[arg-type]
    result = applier.apply(event, TARGET, merged=merged)
    assert isinstance(result, AppliedChange)
    assert result.outcome in ("applied", "skipped", "ignored") and result.target == TARGET


@pytest.mark.parametrize("cls", EVERY_TYPE, ids=lambda c: c.type_name)
def test_the_schema_change_steps_handle_every_type(cls):
    effect = table_effect(_event(cls))
    assert isinstance(effect, TableEffect)
    assert effect.created == (cls is ev.CreateTableEvent)
    assert effect.reload == (cls is ev.PartitionRowsEvent)
    assert effect.removed == (cls in (ev.DropTableEvent, ev.RenameTableEvent))


def test_every_consumer_refuses_an_event_outside_the_union():
    stranger = _stranger()
    with pytest.raises(AssertionError):
        apply_schema_change(SCHEMA, stranger)
    with pytest.raises(AssertionError):
        DorisMetadataApplier(_FakeCatalog(), _FakeCreator()).apply(stranger, TARGET)  # type: ignore[arg-type]
    with pytest.raises(AssertionError):
        table_effect(stranger)
    derivator = SchemaDerivator(SchemaChangeBehavior.EVOLVE, lambda _t: (TARGET,),
                                SchemaChangeTypeFilter.of(SchemaChangeBehavior.EVOLVE, None, None))
    with pytest.raises(AssertionError):
        derivator.derive([stranger], {USERS: SCHEMA}, {})
    with pytest.raises(ValueError, match="unknown schema change type"):
        event_from_dict({"type": "schema.change", "table_id": str(USERS)})
