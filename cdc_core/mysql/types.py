"""MySQL column values → the values Tidemark sends to Doris, on both read paths.

Two paths read rows and must agree value for value:

* the **binlog path** gets Python objects from pymysql / pymysqlreplication and converts them one
  by one with :func:`to_doris_value` (or a :class:`DorisValueConverter` bound to the options);
* the **snapshot path** reads chunks as Arrow batches (connectorx). :func:`select_expression`
  tells the chunk query what to ask MySQL for (some types are rendered by the server, where it
  is exact and free), and :func:`arrow_to_doris` turns the raw batch into the same values,
  column at a time.

The Doris side follows Flink CDC's MySQL → CDC → Doris mapping (``DorisTypeMapper``), with the
choices below where Flink is silent or lossy (each is what a Doris user would want to query):

==========================  ==========================  ======================================
MySQL                       Doris DDL                   value sent (JSON)
==========================  ==========================  ======================================
TINYINT(1) (as boolean)     BOOLEAN                     true / false
TINYINT / UNSIGNED          TINYINT / SMALLINT          int
SMALLINT / UNSIGNED         SMALLINT / INT              int
MEDIUMINT (±), INT          INT                         int
INT UNSIGNED, BIGINT        BIGINT                      int
BIGINT UNSIGNED             DECIMALV3(20,0)             int (exact up to 18446744073709551615)
FLOAT / DOUBLE              FLOAT / DOUBLE              number (FLOAT: shortest float32 repr)
DECIMAL(p,s)                DECIMALV3(p,s), p>38 STRING string with exactly s decimals
BIT(1) / BIT(n≤63) / BIT(64) BOOLEAN / BIGINT / LARGEINT true/false / int
YEAR                        INT                         int (0 for YEAR 0000)
DATE                        DATEV2                      "YYYY-MM-DD"
DATETIME(p)                 DATETIMEV2(p)               "YYYY-MM-DD HH:MM:SS[.p digits]"
TIMESTAMP(p)                DATETIMEV2(p)               same, rendered in ``tz``
TIME(p)                     STRING                      "[-]HH:MM:SS[.p digits]" (hours may be >24)
CHAR(n) / VARCHAR(n)        CHAR/VARCHAR(n×bytes/char) string (UTF-8); STRING when ≥ 65533 bytes
TEXT types, ENUM, SET       STRING                      string; SET as "a,b" in definition order
BINARY/VARBINARY/BLOB       STRING                      base64 (BINARY(n) right-padded with 0x00)
JSON                        JSONB                       the JSON text
GEOMETRY & spatial          STRING                      WKT (``SRID=n;`` prefix when SRID ≠ 0)
==========================  ==========================  ======================================

Bytes per character: Flink multiplies by 3, which truncates 4-byte UTF-8 (emoji) in utf8mb4
columns; we multiply by 4 for utf8mb4 and by 3 otherwise.

Invalid stored values never crash a read; they become a documented value:

* zero or partly-zero DATE / DATETIME / TIMESTAMP (``0000-00-00``, ``2024-00-10``) → NULL when
  the column is nullable, else the epoch (``1970-01-01`` / ``1970-01-01 00:00:00[.000…]``),
  as Debezium does. (pymysqlreplication cannot tell a zero TIMESTAMP from the epoch, which is
  itself not a valid TIMESTAMP, so ``1970-01-01 00:00:00`` UTC from the binlog is a zero.)
* an empty SET → NULL when nullable, else ``""`` (the binlog library reports an empty SET as
  NULL, so both paths must agree).
* YEAR ``0000`` → 0 (pymysqlreplication reports it as 1900, which YEAR cannot hold).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cdc_core.schema import Column, TableSchema

__all__ = [
    "DorisValueConverter",
    "TypeKind",
    "arrow_to_doris",
    "doris_arrow_type",
    "doris_type",
    "kind_of",
    "parse_tz",
    "select_expression",
    "to_doris_value",
    "wkb_to_wkt",
]


class TypeKind:
    """The conversion families (strings, so they print well in errors)."""

    BOOL = "bool"
    INT = "int"
    UINT64 = "uint64"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"
    BIT = "bit"
    YEAR = "year"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    STRING = "string"
    ENUM = "enum"
    SET = "set"
    BINARY = "binary"
    JSON = "json"
    GEOMETRY = "geometry"


_INT_TYPES = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
_STRING_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}
_BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_SPATIAL_TYPES = {
    "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
    "geometrycollection", "geomcollection",
}


def _base_type(column: Column) -> str:
    return (column.data_type or column.column_type.split("(")[0].split()[0]).lower()


def _is_tinyint1(column: Column) -> bool:
    ct = column.column_type.lower().replace(" ", "")
    return ct.startswith("tinyint(1)") and "unsigned" not in ct


def kind_of(column: Column, *, tinyint1_as_boolean: bool = True) -> str:
    """Which conversion family a column belongs to (see the module table)."""
    base = _base_type(column)
    if base in _INT_TYPES:
        if base == "tinyint" and tinyint1_as_boolean and _is_tinyint1(column):
            return TypeKind.BOOL
        if base == "bigint" and column.unsigned:
            return TypeKind.UINT64
        return TypeKind.INT
    if base in ("bool", "boolean"):
        return TypeKind.BOOL
    if base == "float":
        return TypeKind.FLOAT
    if base in ("double", "real", "double precision"):
        return TypeKind.DOUBLE
    if base in ("decimal", "numeric", "fixed"):
        return TypeKind.DECIMAL
    if base == "bit":
        return TypeKind.BIT
    if base == "year":
        return TypeKind.YEAR
    if base == "date":
        return TypeKind.DATE
    if base == "datetime":
        return TypeKind.DATETIME
    if base == "timestamp":
        return TypeKind.TIMESTAMP
    if base == "time":
        return TypeKind.TIME
    if base in _STRING_TYPES:
        return TypeKind.STRING
    if base == "enum":
        return TypeKind.ENUM
    if base == "set":
        return TypeKind.SET
    if base in _BINARY_TYPES:
        return TypeKind.BINARY
    if base == "json":
        return TypeKind.JSON
    if base in _SPATIAL_TYPES:
        return TypeKind.GEOMETRY
    raise ValueError(f"column {column.name!r} has a MySQL type Tidemark cannot convert: {column.column_type!r}")


# -- column parameters -------------------------------------------------------------------------


def _paren_numbers(column: Column) -> list[int]:
    m = re.search(r"\(([\d,\s]+)\)", column.column_type)
    return [int(x) for x in m.group(1).split(",")] if m else []


def _precision_scale(column: Column) -> tuple[int, int]:
    nums = _paren_numbers(column)
    p = column.numeric_precision if column.numeric_precision is not None else (nums[0] if nums else 10)
    s = column.numeric_scale if column.numeric_scale is not None else (nums[1] if len(nums) > 1 else 0)
    return int(p), int(s)


def _fsp(column: Column) -> int:
    if column.datetime_precision is not None:
        return int(column.datetime_precision)
    nums = _paren_numbers(column)
    return nums[0] if nums else 0


def _bit_width(column: Column) -> int:
    nums = _paren_numbers(column)
    if nums:
        return nums[0]
    return int(column.numeric_precision or 1)


def _char_length(column: Column) -> int:
    if column.char_length is not None:
        return int(column.char_length)
    nums = _paren_numbers(column)
    return nums[0] if nums else 1


@lru_cache(maxsize=4096)
def _members(column_type: str) -> tuple[str, ...]:
    """ENUM / SET members in definition order, from ``set('a','b''c')``."""
    inner = column_type[column_type.index("(") + 1 : column_type.rindex(")")]
    return tuple(m.replace("''", "'").replace("\\\\", "\\") for m in re.findall(r"'((?:[^']|'')*)'", inner))


# -- Doris DDL types ---------------------------------------------------------------------------


def doris_type(column: Column, *, tinyint1_as_boolean: bool = True) -> str:
    """The Doris column type for a MySQL column (used by the sink's CREATE TABLE / ALTER)."""
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    base = _base_type(column)
    if kind == TypeKind.BOOL:
        return "BOOLEAN"
    if kind == TypeKind.INT:
        unsigned = column.unsigned
        return {
            ("tinyint", False): "TINYINT",
            ("tinyint", True): "SMALLINT",
            ("smallint", False): "SMALLINT",
            ("smallint", True): "INT",
            ("mediumint", False): "INT",
            ("mediumint", True): "INT",
            ("int", False): "INT",
            ("int", True): "BIGINT",
            ("integer", False): "INT",
            ("integer", True): "BIGINT",
            ("bigint", False): "BIGINT",
        }[(base, unsigned)]
    if kind == TypeKind.UINT64:
        return "DECIMALV3(20,0)"
    if kind == TypeKind.FLOAT:
        return "FLOAT"
    if kind == TypeKind.DOUBLE:
        return "DOUBLE"
    if kind == TypeKind.DECIMAL:
        p, s = _precision_scale(column)
        return f"DECIMALV3({p},{s})" if p <= 38 else "STRING"
    if kind == TypeKind.BIT:
        n = _bit_width(column)
        return "BOOLEAN" if n == 1 else ("BIGINT" if n <= 63 else "LARGEINT")
    if kind == TypeKind.YEAR:
        return "INT"
    if kind == TypeKind.DATE:
        return "DATEV2"
    if kind in (TypeKind.DATETIME, TypeKind.TIMESTAMP):
        return f"DATETIMEV2({min(max(_fsp(column), 0), 6)})"
    if kind == TypeKind.STRING and base in ("char", "varchar"):
        per_char = 4 if (column.charset or "utf8mb4").lower().startswith("utf8mb4") else 3
        n = _char_length(column) * per_char
        if base == "char" and n <= 255:
            return f"CHAR({n})"
        return f"VARCHAR({n})" if n < 65533 else "STRING"
    if kind == TypeKind.JSON:
        return "JSONB"
    return "STRING"


# -- time zones --------------------------------------------------------------------------------

_OFFSET = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})$")


@lru_cache(maxsize=64)
def parse_tz(tz: str | dt.tzinfo | None) -> dt.tzinfo:
    """``"UTC"``, ``"+08:00"`` or an IANA name (``"Asia/Shanghai"``) → tzinfo."""
    if tz is None:
        return dt.UTC
    if isinstance(tz, dt.tzinfo):
        return tz
    text = tz.strip()
    if text.upper() in ("UTC", "Z", "GMT", "+00:00", "-00:00", "SYSTEM_UTC"):
        return dt.UTC
    m = _OFFSET.match(text)
    if m:
        sign = 1 if m.group(1) == "+" else -1
        return dt.timezone(sign * dt.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))))
    try:
        return ZoneInfo(text)
    except Exception as exc:  # noqa: BLE001 - any lookup failure is the same user error
        raise ValueError(f"unknown time zone {tz!r}: use 'UTC', an offset like '+08:00' or an IANA name") from exc


def _is_utc(tz: dt.tzinfo) -> bool:
    if isinstance(tz, ZoneInfo):
        return tz.key in ("UTC", "Etc/UTC", "Etc/UCT", "UCT", "Zulu", "Etc/Zulu")
    return tz.utcoffset(None) == dt.timedelta(0)


# -- Python values (binlog path) ---------------------------------------------------------------

_EPOCH_DATE = "1970-01-01"


def _epoch_datetime(fsp: int) -> str:
    return "1970-01-01 00:00:00" + ("." + "0" * fsp if fsp else "")


def _format_datetime(value: dt.datetime, fsp: int) -> str:
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


def _decode(value: bytes, column: Column) -> str:
    charset = (column.charset or "utf8mb4").lower()
    encoding = {"utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "cp1252",
                "binary": "latin-1", "ascii": "ascii", "ucs2": "utf-16-be", "utf16": "utf-16-be",
                "utf32": "utf-32-be"}.get(charset, charset)
    try:
        return value.decode(encoding)
    except (LookupError, UnicodeDecodeError):
        return value.decode("utf-8", errors="replace")


def _zero_datetime_like(column: Column, kind: str, fsp: int) -> str | None:
    if column.nullable:
        return None
    return _EPOCH_DATE if kind == TypeKind.DATE else _epoch_datetime(fsp)


def _json_text(value: Any) -> str:
    """MySQL's JSON rendering: ``{"a": 1, "b": [1, 2]}`` (space after ``:`` and ``,``)."""

    def plain(v: Any) -> Any:
        if isinstance(v, bytes):
            return v.decode("utf-8", errors="replace")
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
        _, scale = _precision_scale(column)
        return _format_decimal(Decimal(str(value)) if not isinstance(value, Decimal) else value, scale)
    if kind == TypeKind.BIT:
        if isinstance(value, bytes):
            number = int.from_bytes(value, "big")
        elif isinstance(value, str):  # pymysqlreplication: "10101010"
            number = int(value, 2) if value else 0
        else:
            number = int(value)
        return number != 0 if _bit_width(column) == 1 else number
    if kind == TypeKind.YEAR:
        year = int(value.year if isinstance(value, dt.date) else value)
        return 0 if year == 1900 else year
    if kind == TypeKind.DATE:
        if isinstance(value, dt.datetime):
            value = value.date()
        if isinstance(value, dt.date):
            return value.isoformat()
        return _from_text(kind, column, value, tz)
    if kind == TypeKind.DATETIME:
        fsp = _fsp(column)
        if isinstance(value, dt.datetime):
            return _format_datetime(value, fsp)
        return _from_text(kind, column, value, tz)
    if kind == TypeKind.TIMESTAMP:
        fsp = _fsp(column)
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                if value == dt.datetime(1970, 1, 1):  # a zero TIMESTAMP, see module doc
                    return _zero_datetime_like(column, kind, fsp)
                value = value.replace(tzinfo=dt.UTC)
            return _format_datetime(value.astimezone(tz), fsp)
        return _from_text(kind, column, value, tz)
    if kind == TypeKind.TIME:
        if isinstance(value, dt.timedelta):
            return _format_timedelta(value, _fsp(column))
        if isinstance(value, dt.time):
            return _format_timedelta(
                dt.timedelta(hours=value.hour, minutes=value.minute, seconds=value.second,
                             microseconds=value.microsecond), _fsp(column))
        return str(value)
    if kind in (TypeKind.STRING, TypeKind.ENUM):
        return _decode(value, column) if isinstance(value, bytes | bytearray) else str(value)
    if kind == TypeKind.SET:
        if isinstance(value, set | frozenset | list | tuple):
            order = {m.lower(): i for i, m in enumerate(_members(column.column_type))}
            value = ",".join(sorted(value, key=lambda m: order.get(str(m).lower(), len(order))))
        elif isinstance(value, bytes):
            value = _decode(value, column)
        if value is None or value == "":
            return None if column.nullable else ""
        return str(value)
    if kind == TypeKind.BINARY:
        raw = bytes(value) if isinstance(value, bytes | bytearray | memoryview) else str(value).encode("latin-1")
        if _base_type(column) == "binary":
            raw = raw.ljust(_char_length(column), b"\x00")
        return base64.b64encode(raw).decode("ascii")
    if kind == TypeKind.JSON:
        if isinstance(value, bytes):
            return value.decode("utf-8", errors="replace")
        if isinstance(value, str):
            return value
        return _json_text(value)
    if kind == TypeKind.GEOMETRY:
        return wkb_to_wkt(bytes(value))
    raise AssertionError(kind)


_INVALID_DATE = re.compile(r"^(0000|\d{4}-00|\d{4}-\d{2}-00)")


def _from_text(kind: str, column: Column, value: Any, tz: dt.tzinfo) -> str | None:
    """DATE / DATETIME / TIMESTAMP as MySQL text (or None): zero dates by rule, others as text."""
    fsp = _fsp(column)
    if value is None:
        return _zero_datetime_like(column, kind, fsp)
    text = value.decode() if isinstance(value, bytes) else str(value)
    if _INVALID_DATE.match(text):
        return _zero_datetime_like(column, kind, fsp)
    if kind == TypeKind.TIMESTAMP and not _is_utc(tz):
        parsed = dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
        return _format_datetime(parsed.astimezone(tz), fsp)
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


# -- Arrow (snapshot path) ---------------------------------------------------------------------


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


_NATIVE_DECIMAL_DIGITS = 28  # connectorx reads DECIMAL through rust_decimal (28 digits)


def select_expression(column: Column, *, tinyint1_as_boolean: bool = True, safe: bool = False) -> str:
    """What the chunk query selects for a column (aliased to the column's name).

    The session runs with ``time_zone = '+00:00'``: TIMESTAMP values are UTC, shifted to ``tz``
    in :func:`arrow_to_doris`. Fast form (``safe=False``): DECIMAL(p ≤ 28), DATE, DATETIME and
    TIMESTAMP are read natively (Arrow decimal / date / timestamp), formatted column-wise.
    Safe form: they come back as MySQL's own text — needed for zero dates such as
    ``0000-00-00``, which the native reader cannot represent (the reader falls back to it).
    Always: wide DECIMAL and TIME as text, BIT as an unsigned integer, binary types as base64,
    spatial values as SRID + WKB.
    """
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    q = _q(column.name)
    if kind == TypeKind.DECIMAL and not safe and _precision_scale(column)[0] <= _NATIVE_DECIMAL_DIGITS:
        return q
    if kind in (TypeKind.DATE, TypeKind.DATETIME, TypeKind.TIMESTAMP) and not safe:
        return q
    if kind in (TypeKind.DECIMAL, TypeKind.DATE, TypeKind.DATETIME, TypeKind.TIMESTAMP, TypeKind.TIME):
        expr = f"CAST({q} AS CHAR)"
    elif kind == TypeKind.BIT:
        expr = f"CAST({q} AS UNSIGNED)"
    elif kind == TypeKind.BINARY:
        expr = f"REPLACE(TO_BASE64({q}), '\\n', '')"
    elif kind == TypeKind.GEOMETRY:
        expr = f"CONCAT({q})"
    elif kind == TypeKind.JSON:
        expr = f"CAST({q} AS CHAR)" if _base_type(column) == "json" else q
    else:
        return q
    return f"{expr} AS {q}"


def doris_arrow_type(column: Column, *, tinyint1_as_boolean: bool = True) -> pa.DataType:
    """The Arrow type of a converted column (what :func:`arrow_to_doris` produces)."""
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    if kind == TypeKind.BOOL:
        return pa.bool_()
    if kind in (TypeKind.INT, TypeKind.YEAR):
        return pa.int64()
    if kind == TypeKind.UINT64:
        return pa.uint64()
    if kind in (TypeKind.FLOAT, TypeKind.DOUBLE):
        return pa.float64()
    if kind == TypeKind.BIT:
        n = _bit_width(column)
        return pa.bool_() if n == 1 else (pa.int64() if n <= 63 else pa.uint64())
    return pa.string()


def _as_text(array: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return array.cast(pa.string())
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        return array.cast(pa.string())  # server-rendered ASCII text (CAST AS CHAR, TO_BASE64)
    return array.cast(pa.string())


def _native_temporal(array: Any, kind: str, column: Column, tz: dt.tzinfo) -> Any:
    """Arrow date / timestamp (read natively, so never a zero date) → Doris text."""
    if pa.types.is_date(array.type):
        return array.cast(pa.string())
    fsp = _fsp(column)
    ts = array.cast(pa.timestamp("us"))
    if kind == TypeKind.TIMESTAMP and not _is_utc(tz):
        zone = tz.key if isinstance(tz, ZoneInfo) else _offset_name(tz)
        ts = pc.local_timestamp(ts.cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz=zone)))
    text = ts.cast(pa.string())  # "YYYY-MM-DD HH:MM:SS.ffffff" (much faster than pc.strftime)
    return pc.utf8_slice_codeunits(text, 0, 20 + fsp if fsp else 19)


def _offset_name(tz: dt.tzinfo) -> str:
    offset = tz.utcoffset(None) or dt.timedelta(0)
    minutes = int(offset.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _temporal(array: Any, kind: str, column: Column, tz: dt.tzinfo) -> Any:
    if pa.types.is_timestamp(array.type) or pa.types.is_date(array.type):
        return _native_temporal(array, kind, column, tz)
    text = _as_text(array)
    invalid = pc.match_substring_regex(text, _INVALID_DATE.pattern)
    fill = _zero_datetime_like(column, kind, _fsp(column))
    if pc.any(invalid).as_py():
        text = pc.if_else(invalid, pa.scalar(fill, pa.string()), text)
    if kind == TypeKind.TIMESTAMP and not _is_utc(tz):
        # Named zones with DST: per value, with the very function the binlog path uses.
        values = [None if v is None else _from_text(kind, column, v, tz) for v in text.to_pylist()]
        # Zero timestamps were already replaced by their fill value above; keep those.
        return pa.array(
            [fill if (v is not None and inv) else v for v, inv in zip(values, invalid.to_pylist(), strict=True)],
            pa.string(),
        )
    return text


def _convert_array(array: Any, column: Column, kind: str, tz: dt.tzinfo) -> Any:  # noqa: PLR0911
    if kind == TypeKind.BOOL:
        return pc.not_equal(array, 0) if not pa.types.is_boolean(array.type) else array
    if kind in (TypeKind.INT, TypeKind.YEAR):
        return array.cast(pa.int64())
    if kind == TypeKind.UINT64:
        return array.cast(pa.uint64())
    if kind == TypeKind.FLOAT:
        return array.cast(pa.float32()).cast(pa.string()).cast(pa.float64())
    if kind == TypeKind.DOUBLE:
        return array.cast(pa.float64())
    if kind == TypeKind.DECIMAL:
        if pa.types.is_decimal(array.type):
            return array.cast(pa.decimal128(38, _precision_scale(column)[1])).cast(pa.string())
        return _as_text(array)
    if kind == TypeKind.BIT:
        n = _bit_width(column)
        if n == 1:
            return pc.not_equal(array.cast(pa.uint64()), 0)
        return array.cast(pa.int64() if n <= 63 else pa.uint64())
    if kind in (TypeKind.DATE, TypeKind.DATETIME, TypeKind.TIMESTAMP):
        return _temporal(array, kind, column, tz)
    if kind in (TypeKind.TIME, TypeKind.STRING, TypeKind.ENUM, TypeKind.JSON, TypeKind.BINARY):
        return _as_text(array)
    if kind == TypeKind.SET:
        text = _as_text(array)
        fill = None if column.nullable else ""
        return pc.if_else(pc.equal(text, ""), pa.scalar(fill, pa.string()), text)
    if kind == TypeKind.GEOMETRY:
        return pa.array([None if v is None else wkb_to_wkt(v) for v in array.to_pylist()], pa.string())
    raise AssertionError(kind)


def arrow_to_doris(raw: pa.Table | pa.RecordBatch, columns: Sequence[Column], *,
                   tz: str | dt.tzinfo | None = "UTC", tinyint1_as_boolean: bool = True) -> pa.Table:
    """A raw chunk batch (selected with :func:`select_expression`) → Doris values, columnar.

    ``raw`` holds one column per schema column, by position. The result's columns are named
    after ``columns`` and typed by :func:`doris_arrow_type`; ``result.to_pylist()`` equals the
    rows converted one by one with :func:`to_doris_value`.
    """
    zone = parse_tz(tz)
    if isinstance(raw, pa.RecordBatch):
        raw = pa.Table.from_batches([raw])
    if raw.num_columns != len(columns):
        raise ValueError(f"batch has {raw.num_columns} columns, schema has {len(columns)}")
    arrays = []
    for i, column in enumerate(columns):
        kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
        converted = _convert_array(raw.column(i), column, kind, zone)
        arrays.append(converted.cast(doris_arrow_type(column, tinyint1_as_boolean=tinyint1_as_boolean)))
    return pa.Table.from_arrays(arrays, names=[c.name for c in columns])


def rows_to_doris(rows: Iterable[Mapping[str, Any]], schema: TableSchema, *, tz: str | dt.tzinfo | None = "UTC",
                  tinyint1_as_boolean: bool = True) -> list[dict[str, Any]]:
    """Convenience for tests and small paths: many Python rows through :class:`DorisValueConverter`."""
    conv = DorisValueConverter(tz, tinyint1_as_boolean)
    return [conv.row(schema, r) for r in rows]


# -- spatial -----------------------------------------------------------------------------------

_WKB_NAMES = {1: "POINT", 2: "LINESTRING", 3: "POLYGON", 4: "MULTIPOINT", 5: "MULTILINESTRING",
              6: "MULTIPOLYGON", 7: "GEOMETRYCOLLECTION"}


def _num(x: float) -> str:
    if x == int(x) and abs(x) < 1e17:
        return str(int(x))
    return repr(x)


def wkb_to_wkt(value: bytes) -> str:
    """MySQL's internal geometry (4-byte SRID + WKB) → WKT, ``SRID=n;`` prefixed when SRID ≠ 0.

    Unparseable bytes become ``"WKB:<hex>"`` rather than failing the read.
    """
    data = bytes(value)
    try:
        srid = struct.unpack_from("<I", data, 0)[0]
        text, _ = _wkb(data, 4)
    except (struct.error, KeyError, ValueError):
        return "WKB:" + data.hex()
    return f"SRID={srid};{text}" if srid else text


def _wkb(data: bytes, pos: int) -> tuple[str, int]:
    order = "<" if data[pos] == 1 else ">"
    gtype = struct.unpack_from(order + "I", data, pos + 1)[0] % 1000
    pos += 5
    name = _WKB_NAMES[gtype]

    def points(p: int) -> tuple[str, int]:
        n = struct.unpack_from(order + "I", data, p)[0]
        p += 4
        coords = []
        for _ in range(n):
            x, y = struct.unpack_from(order + "dd", data, p)
            p += 16
            coords.append(f"{_num(x)} {_num(y)}")
        return ",".join(coords), p

    if gtype == 1:
        x, y = struct.unpack_from(order + "dd", data, pos)
        return f"POINT({_num(x)} {_num(y)})", pos + 16
    if gtype == 2:
        body, pos = points(pos)
        return f"LINESTRING({body})", pos
    if gtype == 3:
        rings = struct.unpack_from(order + "I", data, pos)[0]
        pos += 4
        parts = []
        for _ in range(rings):
            body, pos = points(pos)
            parts.append(f"({body})")
        return f"POLYGON({','.join(parts)})", pos
    count = struct.unpack_from(order + "I", data, pos)[0]
    pos += 4
    parts = []
    for _ in range(count):
        text, pos = _wkb(data, pos)
        if gtype in (4, 5, 6):
            text = text[text.index("(") :]  # MULTIPOINT((1 2),(3 4)) style, as MySQL prints
        parts.append(text)
    return f"{name}({','.join(parts)})", pos
