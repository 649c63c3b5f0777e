"""Schema history: every captured table's schema at every binlog offset.

Two halves:

* pure functions that apply a schema-change event to a :class:`TableSchema`
  (:func:`apply_schema_change`), shared by the DDL parser (several alterations in one ALTER),
  the binlog reader (rows after an ALTER decode against the altered schema) and the schema-change
  job;
* :class:`SchemaHistory`, which records schemas in the pipeline's state store keyed by
  ``offset.sequence``, so any batch can be replayed with the schema valid at its offset and a
  restart never asks the live server (whose schema may already be ahead of the stream).

A schema recorded at offset ``D`` (the end of the DDL event) is valid for every event with an
offset greater than ``D``; ``schema_at(o)`` returns the last schema recorded at or before ``o``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from cdc_core.events import (
    AddColumnEvent,
    AlterColumnCommentEvent,
    AlterColumnPositionEvent,
    AlterColumnTypeEvent,
    AlterPrimaryKeyEvent,
    AlterTableCharsetEvent,
    AlterTableCommentEvent,
    CreateTableEvent,
    DropColumnEvent,
    DropTableEvent,
    PartitionRowsEvent,
    RenameColumnEvent,
    RenameTableEvent,
    SchemaChangeEvent,
    TruncateTableEvent,
)
from cdc_core.mysql.offsets import BinlogOffset
from cdc_core.schema import Column, TableId, TableSchema


class SchemaChangeError(ValueError):
    """A schema change does not fit the schema it is applied to."""


def _index(schema: TableSchema, name: str) -> int:
    for i, c in enumerate(schema.columns):
        if c.name.lower() == name.lower():
            return i
    return -1


def _need(schema: TableSchema | None, event: SchemaChangeEvent) -> TableSchema:
    if schema is None:
        raise SchemaChangeError(f"{event.type_name} on {event.table_id}, whose schema is unknown")
    return schema


def _place(cols: list[Column], col: Column, position: str, after: str | None, what: str, t: TableId,
           strict: bool) -> None:
    """Insert ``col`` into ``cols`` at ``FIRST``, ``AFTER after`` or last, as MySQL places it."""
    if position == "FIRST":
        cols.insert(0, col)
        return
    if position == "AFTER" and after:
        at = next((i for i, c in enumerate(cols) if c.name.lower() == after.lower()), -1)
        if at >= 0:
            cols.insert(at + 1, col)
            return
        if strict:
            raise SchemaChangeError(f"{what} AFTER {after!r}: no such column in {t}")
    cols.append(col)


def _with_primary_key(schema: TableSchema, event: AlterPrimaryKeyEvent, strict: bool) -> TableSchema:
    """The schema with its new primary key; key columns become NOT NULL, as MySQL makes them."""
    keys = {k.lower() for k in event.primary_key}
    missing = [k for k in event.primary_key if not schema.has_column(k)]
    if missing and strict:
        raise SchemaChangeError(f"alter.primary.key on {event.table_id}: no column(s) {', '.join(missing)}")
    names = tuple(schema.column(k).name if schema.has_column(k) else k for k in event.primary_key)
    cols = [replace(c, nullable=False) if c.name.lower() in keys else c for c in schema.columns]
    return schema.with_columns(cols, primary_key=names)


def apply_schema_change(
    schema: TableSchema | None, event: SchemaChangeEvent, *, strict: bool = True
) -> dict[TableId, TableSchema | None]:
    """The schemas after ``event``: ``{table_id: schema or None (dropped)}``.

    ``strict`` raises :class:`SchemaChangeError` when the change does not fit (unknown column,
    duplicate column); with ``strict=False`` unknown tables are left unknown and misfits are
    applied as well as they can be (used while parsing, before the real schema is known).
    """
    t = event.table_id
    if isinstance(event, CreateTableEvent):
        if event.schema is None:
            raise SchemaChangeError(f"create.table for {t} carries no schema")
        return {t: replace(event.schema, table_id=t)}
    if isinstance(event, DropTableEvent):
        return {t: None}
    if isinstance(event, TruncateTableEvent | PartitionRowsEvent):
        return {t: schema}
    if schema is None and not strict:
        if isinstance(event, RenameTableEvent) and event.new_table_id is not None:
            return {t: None, event.new_table_id: None}
        return {t: None}
    schema = _need(schema, event)
    cols = list(schema.columns)
    if isinstance(event, RenameTableEvent):
        if event.new_table_id is None:
            raise SchemaChangeError(f"rename.table of {t} has no new name")
        return {t: None, event.new_table_id: replace(schema, table_id=event.new_table_id)}
    if isinstance(event, AlterTableCommentEvent):
        return {t: replace(schema, comment=event.comment)}
    if isinstance(event, AlterTableCharsetEvent):
        return {t: replace(schema, charset=event.charset)}
    if isinstance(event, AlterPrimaryKeyEvent):
        return {t: _with_primary_key(schema, event, strict)}
    if isinstance(event, AddColumnEvent):
        col = event.column
        if col is None:
            raise SchemaChangeError(f"add.column on {t} carries no column")
        existing = _index(schema, col.name)
        if existing >= 0:
            if strict:
                raise SchemaChangeError(f"add.column: {t} already has a column {col.name!r}")
            cols.pop(existing)
        _place(cols, col, event.position, event.after, f"add.column {col.name!r}", t, strict)
        return {t: schema.with_columns(cols)}
    name = getattr(event, "column_name", None) or getattr(event, "old_name", "")
    at = _index(schema, name)
    if at < 0:
        if strict:
            raise SchemaChangeError(f"{event.type_name}: {t} has no column {name!r}")
        return {t: schema}
    if isinstance(event, DropColumnEvent):
        cols.pop(at)
        pk = tuple(k for k in schema.primary_key if k.lower() != name.lower())
        return {t: schema.with_columns(cols, primary_key=pk)}
    if isinstance(event, RenameColumnEvent):
        cols[at] = replace(cols[at], name=event.new_name)
        pk = tuple(event.new_name if k.lower() == name.lower() else k for k in schema.primary_key)
        return {t: schema.with_columns(cols, primary_key=pk)}
    if isinstance(event, AlterColumnTypeEvent):
        if event.column is None:
            raise SchemaChangeError(f"alter.column.type on {t}.{name} carries no column")
        new = replace(event.column, name=cols[at].name)
        if new.charset is None and cols[at].charset is not None and new.data_type == cols[at].data_type:
            new = replace(new, charset=cols[at].charset)
        cols[at] = new
        return {t: schema.with_columns(cols)}
    if isinstance(event, AlterColumnCommentEvent):
        cols[at] = replace(cols[at], comment=event.comment)
        return {t: schema.with_columns(cols)}
    if isinstance(event, AlterColumnPositionEvent):
        col = cols.pop(at)
        _place(cols, col, event.position, event.after, f"alter.column.position {col.name!r}", t, strict)
        return {t: schema.with_columns(cols)}
    raise SchemaChangeError(f"unknown schema change {type(event).__name__}")


def apply_all(schemas: dict[TableId, TableSchema | None], events: Iterable[SchemaChangeEvent]
              ) -> dict[TableId, TableSchema | None]:
    """Apply events in order to a map of schemas (returns a new map)."""
    out = dict(schemas)
    for e in events:
        out.update(apply_schema_change(out.get(e.table_id), e))
    return out


class SchemaHistory:
    """Schemas by offset, persisted in the pipeline's :class:`~cdc_core.state.StateStore`."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def record(self, table_id: TableId, offset: BinlogOffset, schema: TableSchema | None, tx: Any = None) -> None:
        """Record ``schema`` (None = table dropped) as valid after ``offset``."""
        payload = None if schema is None else schema.to_dict()
        if tx is not None:
            tx.put_schema(str(table_id), offset.sequence, offset.to_dict(), payload)
            return
        with self.store.transaction() as own:
            own.put_schema(str(table_id), offset.sequence, offset.to_dict(), payload)

    def bootstrap(self, schemas: Iterable[TableSchema], offset: BinlogOffset, tx: Any = None) -> None:
        """Record the schemas discovered at ``offset`` (e.g. the stream's start) for tables not yet known."""
        def run(t: Any) -> None:
            for s in schemas:
                if t.schema_at(str(s.table_id), offset.sequence) is None:
                    t.put_schema(str(s.table_id), offset.sequence, offset.to_dict(), s.to_dict())

        if tx is not None:
            run(tx)
        else:
            with self.store.transaction() as own:
                run(own)

    def apply(self, events: Iterable[SchemaChangeEvent], tx: Any = None) -> dict[TableId, TableSchema | None]:
        """Apply schema-change events (each carrying its offset) and record the results.

        Several events at one offset (one ALTER with several clauses) are applied in order and
        the final schema recorded once at that offset. Returns the schemas touched.
        """
        events = list(events)
        if tx is None:
            with self.store.transaction() as own:
                return self.apply(events, own)
        touched: dict[TableId, TableSchema | None] = {}
        for e in events:
            if e.offset is None:
                raise SchemaChangeError(f"{e.type_name} on {e.table_id} has no binlog offset; cannot record it")
            current = touched[e.table_id] if e.table_id in touched else self._at(tx, e.table_id, e.offset)
            for table_id, schema in apply_schema_change(current, e).items():
                touched[table_id] = schema
                tx.put_schema(str(table_id), e.offset.sequence, e.offset.to_dict(),
                              None if schema is None else schema.to_dict())
        return touched

    @staticmethod
    def _at(tx: Any, table_id: TableId, offset: BinlogOffset) -> TableSchema | None:
        data = tx.schema_at(str(table_id), offset.sequence)
        return None if data is None else TableSchema.from_dict(data)

    def schema_at(self, table_id: TableId, offset: BinlogOffset) -> TableSchema | None:
        """The schema valid for events after ``offset`` (None if unknown or dropped)."""
        with self.store.transaction(readonly=True) as tx:
            return self._at(tx, table_id, offset)

    def lookup_at(self, offset: BinlogOffset, fallback: Callable[[TableId], TableSchema | None] | None = None
                  ) -> Callable[[TableId], TableSchema | None]:
        """A ``schemas`` callable for :class:`BinlogSplitReader` reading from ``offset``."""
        def lookup(table_id: TableId) -> TableSchema | None:
            found = self.schema_at(table_id, offset)
            if found is None and fallback is not None:
                return fallback(table_id)
            return found

        return lookup

    def tables(self) -> list[TableId]:
        with self.store.transaction(readonly=True) as tx:
            return [TableId.parse(t) for t in tx.schema_tables()]


__all__ = ["SchemaChangeError", "SchemaHistory", "apply_all", "apply_schema_change", "Column"]
