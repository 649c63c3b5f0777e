"""What a column added by ``ALTER TABLE ... ADD`` holds in the rows the table already had.

MySQL fills those rows without a row event: with the column's ``DEFAULT``, and a ``NOT NULL``
column without one with its type's *implicit* default (0, ``''``, the first ENUM member, a zero
date...). Doris must give its existing rows the same value, or they read NULL where MySQL has
``0`` or ``''`` until the row next changes (the metadata applier passes this value as the Doris
column's ``DEFAULT``: ``cdc_core/doris/metadata_applier.py``).

The text is ``information_schema.COLUMNS.COLUMN_DEFAULT``'s form (strings quoted, numbers bare), and
a zero date in a ``NOT NULL`` column is the epoch, as every value of such a column is mapped
(``cdc_core/mysql/types/__init__.py``); in a nullable column it is NULL (None).
"""

from __future__ import annotations

from cdc_core.model.schema import Column
from cdc_core.mysql.types.kinds import TypeKind, fsp_of, kind_of, members_of

_EPOCH = {TypeKind.DATE: "1970-01-01", TypeKind.DATETIME: "1970-01-01 00:00:00",
          TypeKind.TIMESTAMP: "1970-01-01 00:00:00"}
_ZERO = {TypeKind.DATE: "'0000-00-00'", TypeKind.DATETIME: "'0000-00-00 00:00:00'",
         TypeKind.TIMESTAMP: "'0000-00-00 00:00:00'", TypeKind.TIME: "'00:00:00'",
         TypeKind.UUID: "'00000000-0000-0000-0000-000000000000'", TypeKind.INET6: "'::'",
         TypeKind.INET4: "'0.0.0.0'"}


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def implicit_default(column: Column) -> str | None:
    """MySQL's implicit default of a ``NOT NULL`` column declared without ``DEFAULT`` (None: the type
    has none, as a spatial column, which MySQL refuses to add to a table holding rows)."""
    kind = kind_of(column, tinyint1_as_boolean=False)
    if kind in (TypeKind.INT, TypeKind.UINT64, TypeKind.FLOAT, TypeKind.DOUBLE, TypeKind.DECIMAL, TypeKind.BIT,
                TypeKind.YEAR, TypeKind.BOOL):
        return "0"
    if kind in (TypeKind.STRING, TypeKind.BINARY, TypeKind.JSON, TypeKind.SET):
        return "''"
    if kind == TypeKind.ENUM:
        members = members_of(column.column_type)
        return _quote(members[0]) if members else "''"
    return _ZERO.get(kind)


def _is_zero_date(text: str) -> bool:
    body = text.strip("'")
    return len(body) >= 10 and (body[:4] == "0000" or body[5:7] == "00" or body[8:10] == "00")


def added_rows_default(column: Column) -> str | None:
    """The value (``COLUMN_DEFAULT``'s text; None: NULL) the existing rows take when ``column`` is added."""
    default = column.default
    if default is None or default.upper() == "NULL":
        if column.nullable:
            return None
        default = implicit_default(column)
        if default is None:
            return None
    kind = kind_of(column, tinyint1_as_boolean=False)
    if kind in _EPOCH and default.startswith("'") and _is_zero_date(default):
        if column.nullable:
            return None
        epoch = _EPOCH[kind]
        fsp = fsp_of(column) if kind != TypeKind.DATE else 0
        return _quote(epoch + ("." + "0" * fsp if fsp else ""))
    return default


__all__ = ["added_rows_default", "implicit_default"]
