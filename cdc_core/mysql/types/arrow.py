"""Arrow batches (the snapshot path) → the values sent to Doris, a column at a time.

Chunks are read as Arrow batches (connectorx): :func:`select_expression` tells the chunk query
what to ask MySQL for (some types are rendered by the server, where it is exact and free), and
:func:`arrow_to_doris` turns the raw batch into the same values :mod:`.values` gives row by row.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.compute as pc

from cdc_core.model.schema import Column
from cdc_core.mysql.types.doris_mapping import doris_arrow_type
from cdc_core.mysql.types.kinds import (
    FIXED_BINARY_KINDS,
    TypeKind,
    base_type,
    bit_width,
    fsp_of,
    kind_of,
    precision_scale,
)
from cdc_core.mysql.types.spatial import wkb_to_wkt
from cdc_core.mysql.types.time_zones import is_utc, offset_name, parse_tz
from cdc_core.mysql.types.values import INVALID_DATE, from_text, zero_datetime_like


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
    Always: wide DECIMAL, TIME and MariaDB's UUID / INET6 / INET4 as text (the server's own
    rendering, which ``fixed_binary`` reproduces for the binlog), BIT as an unsigned integer, YEAR as the year (``YEAR(2)`` displays two digits), binary types as base64,
    spatial values as SRID + WKB.
    """
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    q = _q(column.name)
    if kind == TypeKind.DECIMAL and not safe and precision_scale(column)[0] <= _NATIVE_DECIMAL_DIGITS:
        return q
    if kind in (TypeKind.DATE, TypeKind.DATETIME, TypeKind.TIMESTAMP) and not safe:
        return q
    if kind in (TypeKind.DECIMAL, TypeKind.DATE, TypeKind.DATETIME, TypeKind.TIMESTAMP, TypeKind.TIME,
                *FIXED_BINARY_KINDS):
        expr = f"CAST({q} AS CHAR)"
    elif kind == TypeKind.BIT:
        expr = f"CAST({q} AS UNSIGNED)"
    elif kind == TypeKind.YEAR and column.column_type.lower().startswith("year(2)"):
        expr = f"YEAR({q})"  # YEAR(2) reads as two digits, even + 0; YEAR() is the year, as the binlog carries it
    elif kind == TypeKind.BINARY:
        expr = f"REPLACE(TO_BASE64({q}), '\\n', '')"
    elif kind == TypeKind.GEOMETRY:
        expr = f"CONCAT({q})"
    elif kind == TypeKind.JSON:
        expr = f"CAST({q} AS CHAR)" if base_type(column) == "json" else q
    else:
        return q
    return f"{expr} AS {q}"


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
    fsp = fsp_of(column)
    ts = array.cast(pa.timestamp("us"))
    if kind == TypeKind.TIMESTAMP and not is_utc(tz):
        zone = tz.key if isinstance(tz, ZoneInfo) else offset_name(tz)
        ts = pc.local_timestamp(ts.cast(pa.timestamp("us", tz="UTC")).cast(pa.timestamp("us", tz=zone)))
    text = ts.cast(pa.string())  # "YYYY-MM-DD HH:MM:SS.ffffff" (much faster than pc.strftime)
    return pc.utf8_slice_codeunits(text, 0, 20 + fsp if fsp else 19)


def _temporal(array: Any, kind: str, column: Column, tz: dt.tzinfo) -> Any:
    if pa.types.is_timestamp(array.type) or pa.types.is_date(array.type):
        return _native_temporal(array, kind, column, tz)
    text = _as_text(array)
    invalid = pc.match_substring_regex(text, INVALID_DATE.pattern)
    fill = zero_datetime_like(column, kind, fsp_of(column))
    if pc.any(invalid).as_py():
        text = pc.if_else(invalid, pa.scalar(fill, pa.string()), text)
    if kind == TypeKind.TIMESTAMP and not is_utc(tz):
        # Named zones with DST: per value, with the very function the binlog path uses.
        values = [None if v is None else from_text(kind, column, v, tz) for v in text.to_pylist()]
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
            return array.cast(pa.decimal128(38, precision_scale(column)[1])).cast(pa.string())
        return _as_text(array)
    if kind == TypeKind.BIT:
        n = bit_width(column)
        if n == 1:
            return pc.not_equal(array.cast(pa.uint64()), 0)
        return array.cast(pa.int64() if n <= 63 else pa.uint64())
    if kind in (TypeKind.DATE, TypeKind.DATETIME, TypeKind.TIMESTAMP):
        return _temporal(array, kind, column, tz)
    if kind in (TypeKind.TIME, TypeKind.STRING, TypeKind.ENUM, TypeKind.JSON, TypeKind.BINARY, *FIXED_BINARY_KINDS):
        return _as_text(array)
    if kind == TypeKind.SET:
        return _as_text(array)  # an empty set is '' (not NULL), as MySQL reads it
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
