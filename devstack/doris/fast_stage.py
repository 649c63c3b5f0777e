"""A stream load's staged rows by Arrow's kernels, for the common case only.

Every load is converted to its table's types by one DuckDB query
(:meth:`devstack.doris.stream_load_execution.StreamLoader._stage`), which costs ~5–8 ms of CPU even
for a few rows. Most loads need no conversion at all: an ``arrow`` body must already carry the Arrow
types Doris reads (:func:`devstack.doris.loads.arrow_type_error`), and a JSON body parsed by Arrow's
reader is typed by the column hints. :func:`fast_staged_rows` builds what that query would have
produced — the same schema, values, ``__ord``, ``__sign`` and ``__seq`` — when every column is such a
case and every check the query makes (NOT NULL, CHAR/VARCHAR byte length, the STRING limit, strict
mode's failed conversions, the delete sign's reading, the sequence column) passes. Anything else, and
any check that fails, returns None: the query then runs and produces Doris's error rows and messages,
so this path never produces an error itself (tests/doris_standin/test_fast_stage.py compares both).
"""

from __future__ import annotations

import logging

import pyarrow as pa
import pyarrow.compute as pc

from . import loads
from .catalog import DELETE_SIGN, Table
from .types import STRING_LIMIT_BYTES, DorisType

log = logging.getLogger(__name__)


# What the query's result holds for each stored type (DuckDB's Arrow export of DorisType.duck()).
_STORED: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(),
    "BIGINT": pa.int64(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATEV2": pa.date32(),
    "DATETIMEV2": pa.timestamp("us"), "CHAR": pa.utf8(), "VARCHAR": pa.utf8(), "STRING": pa.utf8(),
}
_INTS = {"TINYINT", "SMALLINT", "INT", "BIGINT"}
# A date32 the query reads through a TIMESTAMP: only days DuckDB's timestamp holds come back unchanged.
_MAX_DAYS = 100_000_000


class _Fallback(Exception):
    """The fast path does not apply: the DuckDB query stages this load."""


def _stored_type(d: DorisType) -> pa.DataType:
    if d.name == "DECIMALV3":
        return pa.decimal128(d.precision or 9, d.scale or 0)
    t = _STORED.get(d.name)
    if t is None:  # LARGEINT, JSONB: conversions only the query does
        raise _Fallback(d.name)
    return t


def _convert(d: DorisType, arr: pa.ChunkedArray, nullable: bool, check_utf8: bool) -> pa.ChunkedArray:
    """``arr`` as the query's ``convert_sql`` would store it, or _Fallback where that is not certain."""
    target = _stored_type(d)
    src = arr.type
    if src == target:
        out = arr
    elif d.name in _INTS and pa.types.is_integer(src):
        try:  # TRY_CAST: a value out of range would be NULL (or an error row): the query decides
            out = arr.cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise _Fallback("integer out of range") from e
    elif d.name in ("CHAR", "VARCHAR", "STRING") and pa.types.is_large_string(src):
        out = arr.cast(target)
    else:
        raise _Fallback(f"{src} into {d.name}")
    if not nullable and out.null_count:
        raise _Fallback("NULL into NOT NULL")
    if d.name in ("CHAR", "VARCHAR", "STRING"):
        if check_utf8:
            try:
                out.validate(full=True)
            except pa.ArrowInvalid as e:
                raise _Fallback("invalid UTF-8") from e
        limit = d.length if d.name != "STRING" else STRING_LIMIT_BYTES
        longest = pc.max(pc.binary_length(out)).as_py() if len(out) else None
        if longest is not None and longest > limit:
            raise _Fallback("too long")
    elif d.name == "DATEV2":
        lo, hi = pc.min_max(out.cast(pa.int32())).values()
        if lo.as_py() is not None and (lo.as_py() < -_MAX_DAYS or hi.as_py() > _MAX_DAYS):
            raise _Fallback("date beyond a timestamp")
    elif d.name == "DATETIMEV2" and (d.precision or 0) < 6:
        # make_timestamp((epoch_us // unit) * unit): floor division, which Arrow's (truncating)
        # divide equals only for epochs >= 0 (all an Arrow load stores: loads.arrow_datetimes)
        unit = 10 ** (6 - (d.precision or 0))
        us = out.cast(pa.int64())
        lo = pc.min(us).as_py()
        if lo is not None and lo < 0:
            raise _Fallback("datetime before 1970")
        out = pc.multiply(pc.divide(us, unit), unit).cast(target)
    return out


def _sign(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    """The query's delete sign (a value that reads as the number 1 deletes) for the sources whose
    reading is certain: an integer column, or text that is only ``"0"`` and ``"1"``."""
    if pa.types.is_integer(arr.type):
        hit = pc.equal(arr, 1)
    elif pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        if arr.null_count or not pc.all(pc.is_in(arr, pa.array(["0", "1"], arr.type))).as_py():
            raise _Fallback("delete sign text")
        hit = pc.equal(arr, pa.scalar("1", arr.type))
    else:
        raise _Fallback(f"delete sign of {arr.type}")
    return pc.fill_null(hit, False).cast(pa.int8())


def fast_staged_rows(table: Table, parsed: loads.Parsed, headers: dict[str, str], fmt: str,
                     columns: list[tuple[str, str | None]] | None, hidden: list[str], merge_type: str) -> pa.Table | None:
    """The rows the DuckDB query would stage for this load, or None when it must run (see the module doc)."""
    try:
        return _fast(table, parsed, headers, fmt, columns, hidden, merge_type)
    except _Fallback as e:
        log.debug("load into %s.%s staged by the query: %s", table.db, table.name, e)
        return None


def _fast(table: Table, parsed: loads.Parsed, headers: dict[str, str], fmt: str,
          columns: list[tuple[str, str | None]] | None, hidden: list[str], merge_type: str) -> pa.Table:
    if fmt not in ("arrow", "json") or columns or headers.get("where", "").strip() or merge_type != "APPEND":
        raise _Fallback("format or headers")
    if parsed.bad or parsed.table.num_rows == 0:
        raise _Fallback("rows the reader rejected")
    src = parsed.table
    lookup: dict[str, int] = {}
    for i, name in enumerate(src.column_names):
        if name == "__ord":
            continue
        if name.lower() in lookup:
            raise _Fallback("a name twice")
        lookup[name.lower()] = i
        if table.column(name) is None and name.upper() != DELETE_SIGN:
            raise _Fallback("a source column the table does not have")  # the query would read it too
    n = src.num_rows
    out: dict[str, pa.ChunkedArray] = {"__ord": src.column("__ord")}
    values: dict[str, pa.ChunkedArray] = {}
    for c in table.columns:
        d = c.dtype
        i = lookup.get(c.name.lower())
        if i is not None:
            arr = _convert(d, src.column(i), c.nullable, fmt == "arrow")
        elif c.default is None and c.nullable:
            arr = pa.chunked_array([pa.nulls(n, _stored_type(d))])
        else:
            raise _Fallback("a default or a missing NOT NULL column")
        out[c.name] = arr
        values[c.name.lower()] = arr
    if table.is_unique:
        i = lookup.get(DELETE_SIGN.lower())
        if i is not None and DELETE_SIGN in hidden:
            out["__sign"] = _sign(src.column(i))
        else:
            out["__sign"] = pa.chunked_array([pa.array([0] * n, pa.int8())])
        if table.sequence_type:
            if not table.sequence_col:
                raise _Fallback("a hidden sequence column")
            out["__seq"] = values[table.sequence_col.lower()]
    return pa.table(out)
