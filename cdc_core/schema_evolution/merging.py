"""The widest schema of several source tables merged into one Doris table (many-to-one routes).

Flink CDC's ``SchemaMergingUtils`` on MySQL's own types: a merged table never loses a column
(columns only some sources have are appended), and a column whose type differs between sources
gets the least common type that holds both — integers widen to the larger integer (then
DECIMAL), decimals to the precision and scale that hold both, FLOAT to DOUBLE, CHAR/VARCHAR to
the longer VARCHAR, dates to DATETIME with the larger precision; anything else meets at a text
column (Flink's final resort, STRING). Nullability is the OR of the sources'.

``schema_difference(before, after)`` is what turns the current merged schema into the widest
one: ``AddColumnEvent``\\ s and ``AlterColumnTypeEvent``\\ s, never a drop.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cdc_core.model.events import AddColumnEvent, AlterColumnTypeEvent, SchemaChangeEvent
from cdc_core.model.schema import Column, TableId, TableSchema

_INTS = ["tinyint", "smallint", "mediumint", "int", "bigint"]
_INT_DIGITS = {"tinyint": 3, "smallint": 5, "mediumint": 8, "int": 10, "bigint": 20}
_STRINGS = ("char", "varchar")
_TEXTS = ["tinytext", "text", "mediumtext", "longtext"]


def _base(c: Column) -> str:
    base = (c.data_type or c.column_type.split("(")[0].split()[0]).lower()
    return "int" if base == "integer" else base


def _nums(c: Column) -> list[int]:
    m = re.search(r"\(([\d,\s]+)\)", c.column_type)
    return [int(x) for x in m.group(1).split(",")] if m else []


def _int_rank(c: Column) -> int:
    rank = _INTS.index(_base(c))
    return rank + (1 if c.unsigned else 0)  # an unsigned value needs the next signed width


def _decimal(c: Column) -> tuple[int, int]:
    base = _base(c)
    if base in _INTS:
        return _INT_DIGITS[base], 0
    nums = _nums(c)
    p = c.numeric_precision if c.numeric_precision is not None else (nums[0] if nums else 10)
    s = c.numeric_scale if c.numeric_scale is not None else (nums[1] if len(nums) > 1 else 0)
    return int(p), int(s)


def _length(c: Column) -> int:
    if c.char_length is not None:
        return int(c.char_length)
    nums = _nums(c)
    return nums[0] if nums else 1


def _fsp(c: Column) -> int:
    if c.datetime_precision is not None:
        return int(c.datetime_precision)
    nums = _nums(c)
    return nums[0] if nums else 0


def _typed(name: str, column_type: str, data_type: str, **params: int | str | None) -> Column:
    return Column(name, column_type, data_type, **params)  # type: ignore[arg-type]


def widest_column(current: Column, upcoming: Column) -> Column:
    """A column that holds the values of both (``current``'s name, comment and default)."""
    nullable = current.nullable or upcoming.nullable
    name = current.name
    a, b = _base(current), _base(upcoming)
    if current.column_type.lower() == upcoming.column_type.lower():
        return replace(current, nullable=nullable)
    if a in _INTS and b in _INTS:
        rank = max(_int_rank(current), _int_rank(upcoming))
        if rank < len(_INTS):
            t = _INTS[rank]
            return _typed(name, t, t, nullable=nullable, comment=current.comment)
        return _typed(name, "decimal(20,0)", "decimal", nullable=nullable, comment=current.comment,
                      numeric_precision=20, numeric_scale=0)
    if a in _INTS + ["decimal"] and b in _INTS + ["decimal"]:
        (pa, sa), (pb, sb) = _decimal(current), _decimal(upcoming)
        scale = max(sa, sb)
        digits = max(pa - sa, pb - sb)
        precision = min(digits + scale, 65)
        return _typed(name, f"decimal({precision},{scale})", "decimal", nullable=nullable, comment=current.comment,
                      numeric_precision=precision, numeric_scale=scale)
    if a in _INTS + ["float", "double", "decimal"] and b in _INTS + ["float", "double", "decimal"]:
        return _typed(name, "double", "double", nullable=nullable, comment=current.comment)
    if a in _STRINGS and b in _STRINGS:
        n = max(_length(current), _length(upcoming))
        charset = current.charset or upcoming.charset
        return _typed(name, f"varchar({n})", "varchar", nullable=nullable, comment=current.comment,
                      charset=charset, char_length=n)
    if a in ("date", "datetime", "timestamp") and b in ("date", "datetime", "timestamp"):
        fsp = max(_fsp(current), _fsp(upcoming))
        if a == b == "timestamp":
            return _typed(name, f"timestamp({fsp})" if fsp else "timestamp", "timestamp", nullable=nullable,
                          comment=current.comment, datetime_precision=fsp)
        return _typed(name, f"datetime({fsp})" if fsp else "datetime", "datetime", nullable=nullable,
                      comment=current.comment, datetime_precision=fsp)
    text = "longtext"
    if a in _TEXTS and b in _TEXTS:
        text = _TEXTS[max(_TEXTS.index(a), _TEXTS.index(b))]
    return _typed(name, text, text, nullable=nullable, comment=current.comment,
                  charset=current.charset or upcoming.charset)


def _same_type(a: Column, b: Column) -> bool:
    return a.column_type.lower() == b.column_type.lower()


def least_common_schema(current: TableSchema | None, upcoming: TableSchema) -> TableSchema:
    """``current`` widened so that ``upcoming``'s rows fit (columns appended, types widened)."""
    if current is None:
        return upcoming
    columns = list(current.columns)
    for col in upcoming.columns:
        at = next((i for i, c in enumerate(columns) if c.name.lower() == col.name.lower()), -1)
        if at < 0:
            columns.append(col)
            continue
        if not _same_type(columns[at], col) or (col.nullable and not columns[at].nullable):
            columns[at] = widest_column(columns[at], col)
    return current.with_columns(columns)


def common_schema(schemas: list[TableSchema], table_id: TableId) -> TableSchema | None:
    merged: TableSchema | None = None
    for s in schemas:
        merged = least_common_schema(merged, s)
    return None if merged is None else replace(merged, table_id=table_id)


def schema_difference(table_id: TableId, before: TableSchema, after: TableSchema) -> list[SchemaChangeEvent]:
    """The changes that turn ``before`` into ``after`` (adds and type changes only: a merged table
    never drops a column)."""
    events: list[SchemaChangeEvent] = []
    previous: str | None = None
    for col in after.columns:
        if not before.has_column(col.name):
            position = "AFTER" if previous else "FIRST"
            events.append(AddColumnEvent(table_id, column=col, position=position, after=previous))
        else:
            old = before.column(col.name)
            if not _same_type(old, col) or old.nullable != col.nullable:
                events.append(AlterColumnTypeEvent(table_id, column_name=old.name, column=replace(col, name=old.name)))
        previous = col.name
    return events


__all__ = ["common_schema", "least_common_schema", "schema_difference", "widest_column"]
