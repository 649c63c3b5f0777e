"""Schema-change events to and from JSON-able dicts, so the schema registry can persist them.

The event classes in ``cdc_core.model.events`` (every one of ``SCHEMA_CHANGE_EVENTS``) are frozen
dataclasses without serialization of their own; the registry stores the events of a DDL (and the
changes derived from them) in the state store so that a crashed ``schema_change`` job resumes
with exactly the same work. One class per ``type_name``, taken from the model's registry.
"""

from __future__ import annotations

from typing import Any

from cdc_core.model import events as ev
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema

_CLASSES: dict[str, type[ev.SchemaChangeBase]] = {cls.type_name: cls for cls in ev.SCHEMA_CHANGE_EVENTS}

_FIELDS = ("position", "after", "column_name", "old_name", "new_name", "comment", "charset", "operation")


def event_to_dict(event: ev.SchemaChangeEvent) -> dict[str, Any]:
    out: dict[str, Any] = {"type": event.type_name, "table_id": str(event.table_id)}
    if event.offset is not None:
        out["offset"] = event.offset.to_dict()
    if event.ddl is not None:
        out["ddl"] = event.ddl
    for name in _FIELDS:
        if hasattr(event, name):
            out[name] = getattr(event, name)
    if isinstance(event, ev.AlterPrimaryKeyEvent):
        out["primary_key"] = list(event.primary_key)
    column = getattr(event, "column", None)
    if column is not None:
        out["column"] = column.to_dict()
    schema = getattr(event, "schema", None)
    if schema is not None:
        out["schema"] = schema.to_dict()
    new_table = getattr(event, "new_table_id", None)
    if new_table is not None:
        out["new_table_id"] = str(new_table)
    renamed_from = getattr(event, "renamed_from", None)
    if renamed_from is not None:
        out["renamed_from"] = str(renamed_from)
    return out


def event_from_dict(data: dict[str, Any]) -> ev.SchemaChangeEvent:
    kind = data["type"]
    cls = _CLASSES.get(kind)
    if cls is None:
        raise ValueError(f"unknown schema change type {kind!r} in the state store")
    kwargs: dict[str, Any] = {"table_id": TableId.parse(data["table_id"]), "ddl": data.get("ddl")}
    if data.get("offset"):
        kwargs["offset"] = BinlogOffset.from_dict(data["offset"])
    for name in _FIELDS:
        if name in data and name in cls.__dataclass_fields__:
            kwargs[name] = data[name]
    if "primary_key" in data and cls is ev.AlterPrimaryKeyEvent:
        kwargs["primary_key"] = tuple(data["primary_key"])
    if data.get("column") is not None:
        kwargs["column"] = Column.from_dict(data["column"])
    if data.get("schema") is not None:
        kwargs["schema"] = TableSchema.from_dict(data["schema"])
    if data.get("new_table_id"):
        kwargs["new_table_id"] = TableId.parse(data["new_table_id"])
    if data.get("renamed_from") and cls is ev.CreateTableEvent:
        kwargs["renamed_from"] = TableId.parse(data["renamed_from"])
    return cls(**kwargs)  # type: ignore[return-value]  # one of the union's classes, by _CLASSES


__all__ = ["event_from_dict", "event_to_dict"]
