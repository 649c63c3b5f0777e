"""A schema-change event applied to table schemas: :func:`apply_schema_change`, :func:`apply_all`.

Pure functions, shared by the DDL parser (several alterations in one ALTER), the binlog reader
(rows after an ALTER decode against the altered schema), the schema history
(``cdc_core/mysql/schema_history.py``, which records the results by offset) and the schema-change
job. One ``match`` over the closed union of events; a new event class fails here until handled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import assert_never

from cdc_core.model import events as ev
from cdc_core.model.schema import Column, TableId, TableSchema


class SchemaChangeError(ValueError):
    """A schema change does not fit the schema it is applied to."""


def _index(schema: TableSchema, name: str) -> int:
    for i, c in enumerate(schema.columns):
        if c.name.lower() == name.lower():
            return i
    return -1


def _need(schema: TableSchema | None, event: ev.SchemaChangeEvent) -> TableSchema:
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


def _with_primary_key(schema: TableSchema, event: ev.AlterPrimaryKeyEvent, strict: bool) -> TableSchema:
    """The schema with its new primary key; key columns become NOT NULL, as MySQL makes them."""
    keys = {k.lower() for k in event.primary_key}
    missing = [k for k in event.primary_key if not schema.has_column(k)]
    if missing and strict:
        raise SchemaChangeError(f"alter.primary.key on {event.table_id}: no column(s) {', '.join(missing)}")
    names = tuple(schema.column(k).name if schema.has_column(k) else k for k in event.primary_key)
    cols = [replace(c, nullable=False) if c.name.lower() in keys else c for c in schema.columns]
    return schema.with_columns(cols, primary_key=names)


def apply_schema_change(
    schema: TableSchema | None, event: ev.SchemaChangeEvent, *, strict: bool = True
) -> dict[TableId, TableSchema | None]:
    """The schemas after ``event``: ``{table_id: schema or None (dropped)}``.

    ``strict`` raises :class:`SchemaChangeError` when the change does not fit (unknown column,
    duplicate column); with ``strict=False`` unknown tables are left unknown and misfits are
    applied as well as they can be (used while parsing, before the real schema is known).
    """
    t = event.table_id
    match event:
        case ev.CreateTableEvent():
            if event.schema is None:
                raise SchemaChangeError(f"create.table for {t} carries no schema")
            return {t: replace(event.schema, table_id=t)}
        case ev.DropTableEvent():
            return {t: None}
        case ev.TruncateTableEvent() | ev.PartitionRowsEvent():
            return {t: schema}
        case ev.RenameTableEvent():
            if schema is None and not strict:
                return {t: None} if event.new_table_id is None else {t: None, event.new_table_id: None}
            schema = _need(schema, event)
            if event.new_table_id is None:
                raise SchemaChangeError(f"rename.table of {t} has no new name")
            return {t: None, event.new_table_id: replace(schema, table_id=event.new_table_id)}
        case ev.AlterTableCommentEvent() | ev.AlterTableCharsetEvent() | ev.AlterPrimaryKeyEvent():
            if schema is None and not strict:
                return {t: None}
            return {t: _table_change(_need(schema, event), event, strict)}
        case ev.AddColumnEvent():
            if schema is None and not strict:
                return {t: None}
            return {t: _add_column(_need(schema, event), event, strict)}
        case (ev.DropColumnEvent() | ev.RenameColumnEvent() | ev.AlterColumnTypeEvent()
              | ev.AlterColumnCommentEvent() | ev.AlterColumnPositionEvent()):
            if schema is None and not strict:
                return {t: None}
            return {t: _column_change(_need(schema, event), event, strict)}
        case _:
            assert_never(event)


def _table_change(schema: TableSchema, event: ev.AlterTableCommentEvent | ev.AlterTableCharsetEvent
                  | ev.AlterPrimaryKeyEvent, strict: bool) -> TableSchema:
    match event:
        case ev.AlterTableCommentEvent():
            return replace(schema, comment=event.comment)
        case ev.AlterTableCharsetEvent():
            return replace(schema, charset=event.charset)
        case ev.AlterPrimaryKeyEvent():
            return _with_primary_key(schema, event, strict)
        case _:
            assert_never(event)


def _add_column(schema: TableSchema, event: ev.AddColumnEvent, strict: bool) -> TableSchema:
    t = event.table_id
    cols = list(schema.columns)
    col = event.column
    if col is None:
        raise SchemaChangeError(f"add.column on {t} carries no column")
    existing = _index(schema, col.name)
    if existing >= 0:
        if strict:
            raise SchemaChangeError(f"add.column: {t} already has a column {col.name!r}")
        cols.pop(existing)
    _place(cols, col, event.position, event.after, f"add.column {col.name!r}", t, strict)
    return schema.with_columns(cols)


def _column_change(schema: TableSchema, event: ev.DropColumnEvent | ev.RenameColumnEvent | ev.AlterColumnTypeEvent
                   | ev.AlterColumnCommentEvent | ev.AlterColumnPositionEvent, strict: bool) -> TableSchema:
    """A change of one existing column (named ``column_name``, or ``old_name`` for a rename)."""
    t = event.table_id
    cols = list(schema.columns)
    name = event.old_name if isinstance(event, ev.RenameColumnEvent) else event.column_name
    at = _index(schema, name)
    if at < 0:
        if strict:
            raise SchemaChangeError(f"{event.type_name}: {t} has no column {name!r}")
        return schema
    match event:
        case ev.DropColumnEvent():
            cols.pop(at)
            pk = tuple(k for k in schema.primary_key if k.lower() != name.lower())
            return schema.with_columns(cols, primary_key=pk)
        case ev.RenameColumnEvent():
            cols[at] = replace(cols[at], name=event.new_name)
            pk = tuple(event.new_name if k.lower() == name.lower() else k for k in schema.primary_key)
            return schema.with_columns(cols, primary_key=pk)
        case ev.AlterColumnTypeEvent():
            if event.column is None:
                raise SchemaChangeError(f"alter.column.type on {t}.{name} carries no column")
            new = replace(event.column, name=cols[at].name)
            if new.charset is None and cols[at].charset is not None and new.data_type == cols[at].data_type:
                new = replace(new, charset=cols[at].charset)
            cols[at] = new
            return schema.with_columns(cols)
        case ev.AlterColumnCommentEvent():
            cols[at] = replace(cols[at], comment=event.comment)
            return schema.with_columns(cols)
        case ev.AlterColumnPositionEvent():
            col = cols.pop(at)
            _place(cols, col, event.position, event.after, f"alter.column.position {col.name!r}", t, strict)
            return schema.with_columns(cols)
        case _:
            assert_never(event)


def apply_all(schemas: dict[TableId, TableSchema | None], events: Iterable[ev.SchemaChangeEvent]
              ) -> dict[TableId, TableSchema | None]:
    """Apply events in order to a map of schemas (returns a new map)."""
    out = dict(schemas)
    for e in events:
        out.update(apply_schema_change(out.get(e.table_id), e))
    return out


__all__ = ["SchemaChangeError", "apply_all", "apply_schema_change"]
