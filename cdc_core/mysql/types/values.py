"""Python values (the binlog path) → the values sent to Doris, one at a time.

pymysql and pymysqlreplication deliver Python objects; :func:`to_doris_value` (or a
:class:`DorisValueConverter` bound to the options) renders them. The snapshot path
(``arrow.py``) must give the same values, and reuses the text rules for dates from here.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any

import numpy as np

from cdc_core.model.schema import Column, TableSchema
from cdc_core.mysql.types.charsets import decode_text
from cdc_core.mysql.types.fixed_binary import binlog_to_text
from cdc_core.mysql.types.kinds import (
    FIXED_BINARY_KINDS,
    TypeKind,
    base_type,
    bit_width,
    char_length,
    fsp_of,
    kind_of,
    members_of,
    precision_scale,
)
from cdc_core.mysql.types.spatial import wkb_to_wkt
from cdc_core.mysql.types.time_zones import is_utc, parse_tz

_EPOCH_DATE = "1970-01-01"


def _epoch_datetime(fsp: int) -> str:
    return "1970-01-01 00:00:00" + ("." + "0" * fsp if fsp else "")


def format_datetime(value: dt.datetime, fsp: int) -> str:
    """``YYYY-MM-DD HH:MM:SS[.fsp digits]``, as MySQL prints it."""
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    if fsp:
        text += "." + f"{value.microsecond:06d}"[:fsp]
    return text


def _format_timedelta(value: dt.timedelta, fsp: int) -> str:
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    seconds, frac = divmod(micros, 1_000_000)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{sign}{hours:02d}:{minutes:02d}:{secs:02d}"
    if fsp:
        text += "." + f"{frac:06d}"[:fsp]
    return text


def _format_decimal(value: Decimal, scale: int) -> str:
    with localcontext() as ctx:
        ctx.prec = 100  # DECIMAL(65,30) is beyond the default 28 digits
        q = value.quantize(Decimal(1).scaleb(-scale))
    text = format(q, "f")
    return text[1:] if text.startswith("-") and q == 0 else text  # MySQL has no negative zero


def _float32(value: float) -> float:
    return float(str(np.float32(value)))


def zero_datetime_like(column: Column, kind: str, fsp: int) -> str | None:
    """What a zero DATE/DATETIME/TIMESTAMP becomes: NULL when nullable, else the epoch."""
    if column.nullable:
        return None
    return _EPOCH_DATE if kind == TypeKind.DATE else _epoch_datetime(fsp)


def _json_text(value: Any) -> str:
    """MySQL's JSON rendering: ``{"a": 1, "b": [1, 2]}`` (space after ``:`` and ``,``)."""

    def plain(v: Any) -> Any:
        if isinstance(v, bytes):
            return v.decode("utf-8")  # MySQL's JSON strings are utf8mb4; a bad one stops, never replaced
        if isinstance(v, dict):
            return {plain(k): plain(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        if isinstance(v, Decimal):
            return float(v)
        return v

    return json.dumps(plain(value), ensure_ascii=False, separators=(", ", ": "))


def to_doris_value(column: Column, value: Any, *, tz: str | dt.tzinfo | None = "UTC",
                   tinyint1_as_boolean: bool = True) -> Any:
    """One value as pymysql / pymysqlreplication deliver it → the JSON-able value sent to Doris."""
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    return _convert(kind, column, value, parse_tz(tz))


def _convert(kind: str, column: Column, value: Any, tz: dt.tzinfo) -> Any:  # noqa: PLR0911, PLR0912
    if kind in (TypeKind.DATE, TypeKind.DATETIME, TypeKind.TIMESTAMP, TypeKind.SET):
        pass  # these map NULL-ish values by rule below
    elif value is None:
        return None
    if kind == TypeKind.BOOL:
        if isinstance(value, str):
            return value not in ("0", "")
        return bool(value)
    if kind in (TypeKind.INT, TypeKind.UINT64):
        return int(value)
    if kind == TypeKind.FLOAT:
        return _float32(float(value))
    if kind == TypeKind.DOUBLE:
        return float(value)
    if kind == TypeKind.DECIMAL:
        _, scale = precision_scale(column)
        return _format_decimal(Decimal(str(value)) if not isinstance(value, Decimal) else value, scale)
    if kind == TypeKind.BIT:
        if isinstance(value, bytes):
            number = int.from_bytes(value, "big")
        elif isinstance(value, str):  # pymysqlreplication: "10101010"
            number = int(value, 2) if value else 0
        else:
            number = int(value)
        return number != 0 if bit_width(column) == 1 else number
    if kind == TypeKind.YEAR:
        year = int(value.year if isinstance(value, dt.date) else value)
        return 0 if year == 1900 else year
    if kind == TypeKind.DATE:
        if isinstance(value, dt.datetime):
            value = value.date()
        if isinstance(value, dt.date):
            return value.isoformat()
        return from_text(kind, column, value, tz)
    if kind == TypeKind.DATETIME:
        fsp = fsp_of(column)
        if isinstance(value, dt.datetime):
            return format_datetime(value, fsp)
        return from_text(kind, column, value, tz)
    if kind == TypeKind.TIMESTAMP:
        fsp = fsp_of(column)
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                if value == dt.datetime(1970, 1, 1):  # a zero TIMESTAMP, see cdc_core.mysql.types
                    return zero_datetime_like(column, kind, fsp)
                value = value.replace(tzinfo=dt.UTC)
            return format_datetime(value.astimezone(tz), fsp)
        return from_text(kind, column, value, tz)
    if kind == TypeKind.TIME:
        if isinstance(value, dt.timedelta):
            return _format_timedelta(value, fsp_of(column))
        if isinstance(value, dt.time):
            return _format_timedelta(
                dt.timedelta(hours=value.hour, minutes=value.minute, seconds=value.second,
                             microseconds=value.microsecond), fsp_of(column))
        return str(value)
    if kind in (TypeKind.STRING, TypeKind.ENUM):
        return decode_text(value, column) if isinstance(value, bytes | bytearray) else str(value)
    if kind == TypeKind.SET:
        if isinstance(value, set | frozenset | list | tuple):
            members = members_of(column.column_type)
            exact = {m: i for i, m in enumerate(members)}  # SET('a','A'): two members, told apart by case
            order = {m.lower(): i for i, m in reversed(list(enumerate(members)))}
            value = ",".join(sorted(value, key=lambda m: exact.get(str(m), order.get(str(m).lower(), len(order)))))
        elif isinstance(value, bytes):
            value = decode_text(value, column)
        if value is None:  # NULL (a NOT NULL column's NULL is a zero-ish value: the empty set)
            return None if column.nullable else ""
        return str(value)  # an empty set stays '', as MySQL reads it
    if kind == TypeKind.BINARY:
        raw = bytes(value) if isinstance(value, bytes | bytearray | memoryview) else str(value).encode("latin-1")
        if base_type(column) == "binary":
            raw = raw.ljust(char_length(column), b"\x00")
        return base64.b64encode(raw).decode("ascii")
    if kind == TypeKind.JSON:
        if isinstance(value, bytes):
            return value.decode("utf-8")  # JSON is utf8mb4 text; a bad byte stops, never replaced
        if isinstance(value, str):
            return value
        return _json_text(value)
    if kind == TypeKind.GEOMETRY:
        return wkb_to_wkt(bytes(value))
    if kind in FIXED_BINARY_KINDS:
        return value if _is_fixed_binary_text(value) else binlog_to_text(str(kind), value)
    raise AssertionError(kind)


def _is_fixed_binary_text(value: Any) -> bool:
    """pymysql's text protocol already gives a UUID/INET value as its text (non-empty ``str``);
    the binlog gives bytes, or ``''`` for a value that was all zero bytes."""
    return isinstance(value, str) and value != ""


INVALID_DATE = re.compile(r"^(0000|\d{4}-00|\d{4}-\d{2}-00)")


def from_text(kind: str, column: Column, value: Any, tz: dt.tzinfo) -> str | None:
    """DATE / DATETIME / TIMESTAMP as MySQL text (or None): zero dates by rule, others as text."""
    fsp = fsp_of(column)
    if value is None:
        return zero_datetime_like(column, kind, fsp)
    text = value.decode() if isinstance(value, bytes) else str(value)
    if INVALID_DATE.match(text):
        return zero_datetime_like(column, kind, fsp)
    if kind == TypeKind.TIMESTAMP and not is_utc(tz):
        parsed = dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
        return format_datetime(parsed.astimezone(tz), fsp)
    return text


@dataclass(frozen=True)
class DorisValueConverter:
    """:func:`to_doris_value` bound to the pipeline's options — what the binlog reader holds."""

    tz: str | dt.tzinfo | None = "UTC"
    tinyint1_as_boolean: bool = True

    def value(self, column: Column, value: Any) -> Any:
        return to_doris_value(column, value, tz=self.tz, tinyint1_as_boolean=self.tinyint1_as_boolean)

    def __call__(self, column: Column, value: Any) -> Any:
        """``converter(column, value)``: the shape ``BinlogSplitReader`` takes."""
        return self.value(column, value)

    def row(self, schema: TableSchema, row: Mapping[str, Any]) -> dict[str, Any]:
        """Convert a row keyed by column name; columns the schema lacks are passed through."""
        tz = parse_tz(self.tz)
        out: dict[str, Any] = {}
        by_name = {c.name: c for c in schema.columns}
        for name, value in row.items():
            column = by_name.get(name)
            if column is None:
                out[name] = value
                continue
            out[name] = _convert(kind_of(column, tinyint1_as_boolean=self.tinyint1_as_boolean), column, value, tz)
        return out


def rows_to_doris(rows: Iterable[Mapping[str, Any]], schema: TableSchema, *, tz: str | dt.tzinfo | None = "UTC",
                  tinyint1_as_boolean: bool = True) -> list[dict[str, Any]]:
    """Convenience for tests and small paths: many Python rows through :class:`DorisValueConverter`."""
    conv = DorisValueConverter(tz, tinyint1_as_boolean)
    return [conv.row(schema, r) for r in rows]
