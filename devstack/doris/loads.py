"""Body formats of Stream Load: turn request bytes into an Arrow table of *source* columns.

Fast paths use pyarrow's C++ readers (JSON lines with an explicit schema, CSV with a one-byte
separator, Arrow IPC, Parquet, ORC). Whatever they cannot take — mixed JSON value types, invalid
lines, ``strip_outer_array`` bodies, multi-byte separators — falls back to a per-row Python parser
that renders every value as text and leaves conversion to the SQL stage, which is what gives Doris'
per-row filtering semantics (bad rows are reported, not fatal).
"""

from __future__ import annotations

import gzip
import io
import json
import re
import zlib
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.ipc as ipc
import pyarrow.json as pjson

FORMATS = {"csv", "json", "arrow", "csv_with_names", "csv_with_names_and_types", "parquet", "orc"}


class LoadError(Exception):
    """The whole load fails with this message (``Status: Fail``)."""


@dataclass
class Parsed:
    """Source rows plus rows the reader itself rejected (reason, raw text)."""

    table: pa.Table
    bad: list[tuple[str, str]] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.table.num_rows + len(self.bad)


def decompress(body: bytes, compress_type: str) -> bytes:
    ct = compress_type.lower()
    if not ct or not body:
        return body
    try:
        if ct in ("gz", "gzip"):
            return gzip.decompress(body)
        if ct == "deflate":
            return zlib.decompress(body)
        if ct == "bz2":
            import bz2

            return bz2.decompress(body)
    except (OSError, EOFError, zlib.error) as e:
        raise LoadError(f"[INTERNAL_ERROR]failed to decompress data, compress type: {ct}, {e}") from e
    raise LoadError(f"[INVALID_ARGUMENT]Unsupported compress type: {compress_type} (the stand-in supports gz, deflate, bz2)")


def unescape_separator(sep: str) -> str:
    """Doris accepts hex separators such as ``\\x01``."""
    if sep.lower().startswith("\\x") and len(sep) > 2:
        try:
            return bytes.fromhex(sep[2:]).decode("latin-1")
        except ValueError:
            return sep
    return sep.replace("\\t", "\t").replace("\\n", "\n")


def _with_ord(table: pa.Table) -> pa.Table:
    return table.append_column("__ord", pa.array(np.arange(table.num_rows, dtype=np.int64)))


def _text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(_plain_json(v), ensure_ascii=False, separators=(",", ":"))
    return repr(v) if isinstance(v, float) else str(v)  # int and Decimal: their exact digits


def _plain_json(v: Any) -> Any:
    """A parsed JSON document with its Decimals (exact numbers) back to floats, for JSONB text."""
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, dict):
        return {k: _plain_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_plain_json(x) for x in v]
    return v


def _rows_to_table(rows: list[dict[str, Any]], names: list[str]) -> pa.Table:
    cols = {n: pa.array([_text(r.get(n)) for r in rows], type=pa.utf8()) for n in names}
    if not names:
        return pa.table({"__empty": pa.nulls(len(rows))}).drop(["__empty"]) if rows else pa.table({})
    return pa.table(cols)


_TYPE_CHANGE = re.compile(r"Column\((/[^)]*)\) changed from (\w+) to (\w+) in row (\d+)")


def parse_json(body: bytes, names: list[str], hints: dict[str, pa.DataType], by_line: bool,
               strip_outer_array: bool) -> Parsed:
    """JSON: simple mode (values looked up by column name, unknown keys ignored, missing -> NULL)."""
    if not body.strip():
        return Parsed(_with_ord(pa.table({n: pa.array([], pa.utf8()) for n in names})))
    if by_line and not strip_outer_array:
        schema_types = {n: hints.get(n, pa.utf8()) for n in names}
        for _attempt in range(6):
            try:
                tbl = pjson.read_json(
                    io.BytesIO(body),
                    read_options=pjson.ReadOptions(block_size=16 << 20),
                    parse_options=pjson.ParseOptions(
                        explicit_schema=pa.schema([(n, t) for n, t in schema_types.items()]),
                        unexpected_field_behavior="ignore",
                    ),
                )
                if tbl.num_columns == len(names):
                    # Arrow's JSON reader does not check that strings are UTF-8 (Doris's does): a table that
                    # fails full validation goes to the Python path, which makes such a document an error row
                    tbl.validate(full=True)
                    return Parsed(_with_ord(tbl.select(names)))
                break
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                m = _TYPE_CHANGE.search(str(e))
                if not m or m.group(4) != "0":
                    break
                col = m.group(1)[1:].replace("~1", "/").replace("~0", "~")
                found = m.group(3)
                if found == "number" and hints.get(col, pa.utf8()) not in (pa.int64(), pa.float64()):
                    # a number for a LARGEINT / DECIMAL / string column: Doris reads its digits
                    # exactly; Arrow would read a 64-bit float, so the exact Python path takes over
                    break
                new = {"number": pa.float64() if schema_types.get(col) != pa.int64() else pa.int64(),
                       "string": pa.utf8(), "boolean": pa.bool_()}.get(found)
                if col not in schema_types or new is None or schema_types[col] == new:
                    break
                schema_types[col] = new
    return _parse_json_python(body, names, by_line, strip_outer_array)


def _shown(raw: bytes) -> str:
    """An error row's bytes as the error log shows them: text where they are UTF-8, else escaped
    (``\\xff``): the log names the row, the row itself is never loaded."""
    try:
        return raw[:1024].decode("utf-8")
    except UnicodeDecodeError:
        return repr(raw[:1024])[2:-1]


def _parse_json_python(body: bytes, names: list[str], by_line: bool, strip_outer_array: bool) -> Parsed:
    raw_docs = body.split(b"\n") if by_line else [body]
    rows: list[dict[str, Any]] = []
    bad: list[tuple[str, str]] = []
    for raw in raw_docs:
        if not raw.strip():
            continue
        try:
            doc = raw.decode("utf-8")
        except UnicodeDecodeError:
            # Doris's JSON reader (simdjson) validates UTF-8: the document is an error row
            bad.append(("Parse json data for JsonDoc failed. code: 10, error info: The input is not valid UTF-8",
                        _shown(raw)))
            continue
        try:
            obj = json.loads(doc, parse_float=Decimal)  # a number's digits kept, as Doris reads them
        except ValueError:
            bad.append(("Parse json data for JsonDoc failed. code: 3, error info: Invalid value.", doc[:1024]))
            continue
        if isinstance(obj, list):
            if not strip_outer_array:
                bad.append(("JSON data is array-object, `strip_outer_array` must be TRUE.", doc[:1024]))
                continue
            for item in obj:
                if isinstance(item, dict):
                    rows.append(item)
                else:
                    bad.append(("Expect json object value", json.dumps(_plain_json(item))[:1024]))
        elif isinstance(obj, dict):
            if strip_outer_array:
                bad.append(("JSON data is not an array-object, `strip_outer_array` must be FALSE.", doc[:1024]))
                continue
            rows.append(obj)
        else:
            bad.append(("Expect json object value", doc[:1024]))
    return Parsed(_with_ord(_rows_to_table(rows, names)), bad)


def parse_csv(body: bytes, names: list[str], sep: str, line_delim: str, skip_lines: int, enclose: str,
              trim_double_quotes: bool) -> Parsed:
    """CSV as Doris reads it: no quoting unless ``enclose``; ``\\N`` is NULL; field count must match."""
    bad: list[tuple[str, str]] = []
    n = len(names)
    if not body.strip(b"\r\n" if line_delim == "\n" else b""):
        tbl = pa.table({nm: pa.array([], pa.utf8()) for nm in names})
        return Parsed(_with_ord(tbl))
    fast = len(sep.encode()) == 1 and line_delim in ("\n", "\r\n") and len(set(names)) == n
    if fast:
        def on_invalid(row: Any) -> str:
            more = row.actual_columns > row.expected_columns
            bad.append((
                f"actual column number in csv file is {' more than ' if more else ' less than '} schema column "
                f"number.actual number: {row.actual_columns}, column separator: [{sep}], line delimiter: "
                f"[{line_delim!r}], schema column number: {row.expected_columns}; ",
                (row.text or "")[:1024],
            ))
            return "skip"

        tmp_names = [f"c{i}" for i in range(n)]
        try:
            tbl = pcsv.read_csv(
                io.BytesIO(body),
                read_options=pcsv.ReadOptions(column_names=tmp_names, skip_rows=skip_lines, block_size=16 << 20),
                parse_options=pcsv.ParseOptions(
                    delimiter=sep, quote_char=enclose or False, double_quote=bool(enclose),
                    escape_char=False, newlines_in_values=bool(enclose), invalid_row_handler=on_invalid,
                ),
                convert_options=pcsv.ConvertOptions(
                    column_types={c: pa.utf8() for c in tmp_names}, null_values=["\\N"],
                    strings_can_be_null=True, quoted_strings_can_be_null=False,
                ),
            )
            tbl = tbl.rename_columns(names)
        except pa.ArrowInvalid:
            bad.clear()
            fast = False
    if not fast:
        raw_lines = body.split(line_delim.encode())
        if raw_lines and raw_lines[-1] == b"":
            raw_lines.pop()
        raw_lines = raw_lines[skip_lines:]
        cols: list[list[str | None]] = [[] for _ in range(n)]
        for raw in raw_lines:
            if raw == b"":
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                # Doris's CSV reader validates each line (CsvReader::_validate_line): a line that is not
                # UTF-8 is an error row, never stored with its bytes replaced
                bad.append(("Unable to display, only support csv data in utf8 codec", _shown(raw)))
                continue
            fields = line.split(sep)
            if len(fields) != n:
                more = len(fields) > n
                bad.append((
                    f"actual column number in csv file is {' more than ' if more else ' less than '} schema column "
                    f"number.actual number: {len(fields)}, column separator: [{sep}], line delimiter: "
                    f"[{line_delim!r}], schema column number: {n}; ", line[:1024]))
                continue
            for i, f in enumerate(fields):
                cols[i].append(None if f == "\\N" else f)
        tbl = pa.table({nm: pa.array(cols[i], pa.utf8()) for i, nm in enumerate(names)}) if names else pa.table({})
    if trim_double_quotes:
        tbl = pa.table({nm: pc.replace_substring_regex(tbl[nm], r'^"(.*)"$', r"\1") for nm in tbl.column_names})
    return Parsed(_with_ord(tbl), bad)


def parse_arrow(body: bytes) -> Parsed:
    if not body:
        return Parsed(_with_ord(pa.table({})))
    try:
        tbl = ipc.open_stream(pa.BufferReader(body)).read_all()
    except pa.ArrowInvalid:
        try:
            tbl = ipc.open_file(pa.BufferReader(body)).read_all()
        except pa.ArrowInvalid as e:
            raise LoadError(f"[INTERNAL_ERROR]failed to read arrow stream: {e}") from e
    return Parsed(_with_ord(tbl))


def parse_parquet(body: bytes) -> Parsed:
    import pyarrow.parquet as pq

    try:
        return Parsed(_with_ord(pq.read_table(pa.BufferReader(body))))
    except (pa.ArrowInvalid, OSError) as e:
        raise LoadError(f"[INTERNAL_ERROR]failed to read parquet: {e}") from e


def parse_orc(body: bytes) -> Parsed:
    import pyarrow.orc as orc

    try:
        return Parsed(_with_ord(orc.ORCFile(pa.BufferReader(body)).read()))
    except (pa.ArrowInvalid, OSError) as e:
        raise LoadError(f"[INTERNAL_ERROR]failed to read orc: {e}") from e


# What Doris's Arrow reader takes for each column type (its DataTypeSerDe::read_column_from_arrow):
# it converts nothing and reads an integer or decimal column's buffer as its own width and scale,
# so any other Arrow type would load other values; the stand-in refuses those loads instead.
_ARROW_INTS = {"TINYINT": "int8", "SMALLINT": "int16", "INT": "int32", "BIGINT": "int64"}


def arrow_type_error(name: str, dtype: Any, arrow_type: pa.DataType) -> str | None:
    """Why Doris cannot read ``arrow_type`` into column ``name`` of ``dtype`` (a DorisType), or None."""
    t = dtype.name
    if pa.types.is_null(arrow_type):
        return None
    ok: bool
    if t in _ARROW_INTS:
        ok = str(arrow_type) == _ARROW_INTS[t]
    elif t == "LARGEINT":
        ok = pa.types.is_string(arrow_type) or (pa.types.is_decimal128(arrow_type) and arrow_type.scale == 0)
    elif t == "BOOLEAN":
        ok = pa.types.is_boolean(arrow_type)
    elif t == "FLOAT":
        ok = arrow_type == pa.float32()
    elif t == "DOUBLE":
        ok = arrow_type == pa.float64()
    elif t == "DECIMALV3":
        ok = pa.types.is_decimal128(arrow_type) and arrow_type.scale == (dtype.scale or 0)
    elif t == "DATEV2":
        ok = arrow_type == pa.date32()
    elif t == "DATETIMEV2":
        if not pa.types.is_timestamp(arrow_type):
            return f"not support convert to datetimev2 from arrow type: {arrow_type}"
        ok = True
    else:  # CHAR, VARCHAR, STRING, JSONB: text
        ok = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type) or pa.types.is_binary(arrow_type)
    if ok:
        return None
    return (f"column {name} is {dtype.primitive()}, which Doris reads from Arrow only as its own type, "
            f"not {arrow_type}")


# The zone Doris's stream-load Arrow reader reads a DATETIMEV2 in: its arrow_stream_reader.cpp passes
# every column reader TimezoneUtils::default_time_zone, the compile-time "+08:00" of timezone_utils.cpp
# (not the BE's setting, not the load's ``timezone`` header), in 2.1, 3.x and its current tree alike.
ARROW_READER_ZONE = "+08:00"
_ARROW_READER_OFFSET_US = 8 * 3600 * 1_000_000


def arrow_datetimes(parsed: Parsed, datetime_columns: set[str]) -> Parsed:
    """The Arrow timestamps loaded into DATETIMEV2 columns (lower-case names in ``datetime_columns``)
    as the wall clock Doris stores: its ``DataTypeDateTimeV2SerDe::read_column_from_arrow`` does
    ``from_unixtime(epoch / divisor, +08:00)`` plus the fraction, whatever the Arrow type's own
    zone or the header says. A negative epoch Doris casts to an unsigned number and stores as another
    time; the stand-in refuses the load instead, naming the column, so a test sees it."""
    table = parsed.table
    for i, name in enumerate(table.column_names):
        array = table.column(i)
        if name.lower() not in datetime_columns or not pa.types.is_timestamp(array.type):
            continue
        raw = array.cast(pa.timestamp(array.type.unit)) if array.type.tz is not None else array  # same epochs
        first = pc.min(raw.cast(pa.int64())).as_py()
        if first is not None and first < 0:
            raise LoadError(
                f"[INTERNAL_ERROR]Failed to convert from arrow to block: column {name}: a timestamp before "
                f"1970-01-01 00:00:00 UTC ({first} {array.type.unit}) cannot be read into datetimev2 (Doris "
                f"{ARROW_READER_ZONE} from_unixtime of the epoch as unsigned: the stand-in refuses what Doris "
                "would store as another time)")
        epoch_us = raw.cast(pa.timestamp("us"), safe=False).cast(pa.int64())  # ns: Doris keeps microseconds
        wall = pc.add(epoch_us, _ARROW_READER_OFFSET_US).cast(pa.timestamp("us"))
        table = table.set_column(i, pa.field(name, wall.type), wall)
    return Parsed(table, parsed.bad)
