"""Snapshot splits (chunks) as value types, and how their key values travel.

A chunk is a half-open range ``[start, end)`` over the chunk-key column; ``None`` is unbounded
(``start=None``: from the beginning, ``end=None``: to the end). Bounds are lists with one value
per chunk-key column (Flink splits on one column, so one value), and each value is JSON-able:

* integer keys (TINYINT … BIGINT UNSIGNED, YEAR) as ``int``;
* every other key as the text MySQL returns for it (a DECIMAL keeps its scale:
  ``"123458.1230"``; a DATETIME(3) ``"2024-01-01 00:00:00.000"``), binary keys as hex.

:func:`key_literal` turns a bound back into an SQL literal of the right kind — a DECIMAL is sent
as a decimal number, never as a string, because MySQL compares a DECIMAL column with a string
as a double and would lose digits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pymysql.converters import escape_string

from cdc_core.model.schema import Column, TableId
from cdc_core.mysql.types import TypeKind, kind_of

KeyValue = int | str
Bound = tuple[KeyValue, ...] | None


@dataclass(frozen=True)
class ChunkRange:
    """``[start, end)`` over the chunk key; ``None`` means unbounded on that side."""

    start: Bound
    end: Bound

    @classmethod
    def all(cls) -> ChunkRange:
        return cls(None, None)


@dataclass(frozen=True)
class SnapshotSplit:
    """One chunk of one table: Flink's ``MySqlSnapshotSplit`` without the schema payload."""

    table_id: TableId
    index: int
    start: Bound
    end: Bound
    key_columns: tuple[str, ...] = ()

    @property
    def split_id(self) -> str:
        return f"{self.table_id}:{self.index}"

    def to_plan_dict(self) -> dict[str, Any]:
        """The ``tidemark splits --json`` shape."""
        return {
            "table": str(self.table_id),
            "index": self.index,
            "start": None if self.start is None else list(self.start),
            "end": None if self.end is None else list(self.end),
        }

    def to_dict(self) -> dict[str, Any]:
        out = self.to_plan_dict()
        out["key_columns"] = list(self.key_columns)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SnapshotSplit:
        return cls(
            TableId.parse(data["table"]),
            int(data["index"]),
            None if data.get("start") is None else tuple(data["start"]),
            None if data.get("end") is None else tuple(data["end"]),
            tuple(data.get("key_columns", ())),
        )


_NUMERIC_TEXT = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def bound_value(column: Column, raw: Any) -> KeyValue:
    """A value as read with ``text_conversions`` → the JSON-able bound form."""
    if isinstance(raw, bool):
        return int(raw)
    if isinstance(raw, int):
        return raw
    if isinstance(raw, bytes | bytearray):
        if kind_of(column) == TypeKind.BINARY:
            return bytes(raw).hex()
        return bytes(raw).decode("utf-8")  # the session's utf8mb4 text: never replaced
    if isinstance(raw, Decimal):
        return format(raw, "f")
    return str(raw)


def key_literal(column: Column, value: KeyValue) -> str:
    """An SQL literal for a bound value, typed so MySQL compares it as the column's type."""
    kind = kind_of(column, tinyint1_as_boolean=False)
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    text = str(value)
    if kind in (TypeKind.INT, TypeKind.UINT64, TypeKind.YEAR, TypeKind.DECIMAL, TypeKind.FLOAT,
                TypeKind.DOUBLE, TypeKind.BIT):
        if not _NUMERIC_TEXT.match(text):
            raise ValueError(f"chunk bound {text!r} is not a number for column {column.name!r}")
        return text
    if kind == TypeKind.BINARY:
        if not re.fullmatch(r"[0-9a-fA-F]*", text):
            raise ValueError(f"chunk bound {text!r} is not hex for binary column {column.name!r}")
        return f"X'{text}'"
    return "'" + escape_string(text) + "'"


def key_param(column: Column, value: KeyValue) -> Any:
    """A bound as a pymysql query parameter (typed the same way as :func:`key_literal`)."""
    kind = kind_of(column, tinyint1_as_boolean=False)
    if isinstance(value, int):
        return value
    if kind in (TypeKind.DECIMAL,):
        return Decimal(value)
    if kind in (TypeKind.FLOAT, TypeKind.DOUBLE):
        return float(value)
    if kind == TypeKind.BINARY:
        return bytes.fromhex(value)
    return value
