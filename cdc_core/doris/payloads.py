"""The bodies a stream load sends (JSON lines, CSV, Arrow IPC), built from rows or Arrow tables.

Bodies are produced lazily, chunk by chunk, and can be produced again (a retry, a redirect)
from re-iterable input (lists, pyarrow Tables); one-shot iterators are first spooled to a
temporary file (memory up to a few MiB, then disk) so a batch never sits in memory twice.
The control columns (:mod:`cdc_core.doris.rows`) are added here when the rows lack them. One
module: the three formats share the spooling, the chunking and the control-column handling.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import io
import itertools
import json
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from cdc_core.doris.arrow_layout import ARROW_TIME_ZONE
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN

CHUNK_BYTES = 256 * 1024
CSV_SEPARATOR = "\x01"
CSV_DELIMITER = "\x02"
CSV_NULL = "\\N"
SPOOL_MEMORY = 8 * 1024 * 1024
FORMATS = ("json", "csv", "arrow")


# -- values ----------------------------------------------------------------------------------


def _json_default(value: Any) -> Any:
    if isinstance(value, dt.datetime):  # isoformat, not strftime: %Y drops the zeros of years before 1000
        return value.replace(tzinfo=None).isoformat(" ", "microseconds")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dt.time):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        total = int(value.total_seconds())
        sign = "-" if total < 0 else ""
        total = abs(total)
        return f"{sign}{total // 3600:02d}:{total % 3600 // 60:02d}:{total % 60:02d}"
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, set | frozenset):
        return ",".join(sorted(map(str, value)))
    raise TypeError(f"cannot send a {type(value).__name__} to Doris: {value!r}")


def _csv_value(value: Any) -> str:
    if value is None:
        return CSV_NULL
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, str):
        if CSV_SEPARATOR in value or CSV_DELIMITER in value:
            raise ValueError(
                "a value contains the control characters \\x01/\\x02 used as CSV separators; "
                "load this table with format json or arrow"
            )
        return value
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, dict | list):
        return json.dumps(value, default=_json_default, ensure_ascii=False)
    return str(_json_default(value))


# -- payloads ----------------------------------------------------------------------------------


@dataclass
class Payload:
    """A stream-load body: its headers and a way to produce its bytes (again) in chunks.

    ``rows`` is known after the body has been produced once (it counts as it goes).
    """

    format: str
    headers: dict[str, str]
    _produce: Callable[[Payload], Iterator[bytes]]
    gzip: bool = False
    rows: int = 0
    _cleanup: list[Callable[[], None]] = field(default_factory=list)

    def chunks(self) -> Iterator[bytes]:
        self.rows = 0
        stream = self._produce(self)
        if not self.gzip:
            yield from stream
            return
        comp = zlib.compressobj(6, zlib.DEFLATED, 31)
        for chunk in stream:
            out = comp.compress(chunk)
            if out:
                yield out
        yield comp.flush()

    def close(self) -> None:
        for fn in self._cleanup:
            fn()
        self._cleanup.clear()


def _batched_lines(lines: Iterator[str], payload: Payload) -> Iterator[bytes]:
    buf: list[str] = []
    size = 0
    for line in lines:
        buf.append(line)
        size += len(line)
        payload.rows += 1
        if size >= CHUNK_BYTES:
            yield "".join(buf).encode()
            buf, size = [], 0
    if buf:
        yield "".join(buf).encode()


def _reiterable(rows: Any) -> bool:
    return isinstance(rows, Sequence | pa.Table | pa.RecordBatch) and not isinstance(rows, str | bytes)


def is_arrow(rows: Any) -> bool:
    """Rows given as Arrow (a Table, a RecordBatch, or an iterable of them)."""
    if isinstance(rows, pa.Table | pa.RecordBatch):
        return True
    return isinstance(rows, Sequence) and bool(rows) and all(isinstance(r, pa.RecordBatch) for r in rows)


def _peek_arrow(rows: Any) -> Any:
    """An iterator of RecordBatches becomes a list (the batches are shared, not copied)."""
    if isinstance(rows, Iterator):
        first = next(rows, None)
        if first is None:
            return []
        if isinstance(first, pa.RecordBatch):
            return [first, *rows]
        return itertools.chain([first], rows)
    return rows


def _as_arrow_table(rows: Any) -> pa.Table:
    if isinstance(rows, pa.Table):
        return rows
    if isinstance(rows, pa.RecordBatch):
        return pa.Table.from_batches([rows])
    return pa.Table.from_batches(list(rows))


class PayloadBuilder:
    """Turns rows (dicts or Arrow) into a :class:`Payload` in ``json``, ``csv`` or ``arrow``.

    ``columns`` is the Doris table's column order (needed for csv and arrow, whose fields are
    positional); the delete sign is appended last, as Doris expects hidden columns after the
    visible ones. ``delete_sign`` False leaves it out (tables without one: Duplicate model).
    """

    def __init__(self, fmt: str = "json", *, gzip: bool = False):
        if fmt not in FORMATS:
            raise ValueError(f"stream-load format {fmt!r} is not supported; use one of {', '.join(FORMATS)}")
        self.format = fmt
        self.gzip = gzip

    def build(self, rows: Any, *, columns: Sequence[str] | None = None, delete_sign: bool = True,
              sequence: int | None = None, arrow_types: Sequence[pa.DataType] | None = None) -> Payload:
        """``arrow_types``: the Arrow type of each of ``columns`` that Doris reads (``arrow`` format;
        cdc_core/doris/arrow_layout.py): the rows' columns are cast to them here, once, so a value
        that does not fit fails now (:class:`ArrowConformError`), before anything is sent."""
        rows = _peek_arrow(rows)
        headers: dict[str, str] = {}
        if delete_sign:
            headers["hidden_columns"] = DELETE_SIGN
        if self.gzip:
            headers["compress_type"] = "gz"
        arrow = is_arrow(rows)
        if self.format == "arrow" and not arrow:
            raise ValueError("format 'arrow' needs Arrow input (a pyarrow Table or RecordBatches); use json or csv")
        if self.format in ("csv", "arrow") and not columns:
            raise ValueError(f"format {self.format!r} is positional: the Doris table's column order is needed")
        fields = list(columns or [])
        if delete_sign and DELETE_SIGN not in fields:
            fields.append(DELETE_SIGN)

        if self.format == "json":
            headers.update({"format": "json", "read_json_by_line": "true"})
            produce = self._json_arrow(rows, delete_sign, sequence) if arrow else self._json_dicts(delete_sign, sequence)
        elif self.format == "csv":
            headers.update({"format": "csv", "column_separator": "\\x01", "line_delimiter": "\\x02"})
            produce = self._csv_arrow(rows, fields, sequence) if arrow else self._csv_dicts(fields, sequence)
        else:
            # the zone its DATETIMEV2 timestamps are built in, which Doris's newest Arrow reader may
            # take from this header (cdc_core/doris/arrow_layout.py); it wins over a pipeline's own
            headers.update({"format": "arrow", "timezone": ARROW_TIME_ZONE})
            if arrow_types is not None:
                rows = conform(_as_arrow_table(rows), fields, sequence, _with_control_types(fields, arrow_types))
            produce = self._arrow(rows, fields, delete_sign, sequence)

        payload = Payload(self.format, headers, produce, gzip=self.gzip)
        if arrow or _reiterable(rows):
            payload._produce = (lambda p, _f=produce, _r=rows: _f(p, _r))  # type: ignore[misc]
            return payload
        return self._spooled(payload, produce, rows)

    # -- one-shot input: serialize once into a spool file, then replay the bytes ----------------

    def _spooled(self, payload: Payload, produce: Callable[[Payload, Any], Iterator[bytes]], rows: Any) -> Payload:
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # noqa: SIM115 - closed by Payload.close
        counter = Payload(payload.format, {}, lambda p: iter(()))
        for chunk in produce(counter, rows):
            spool.write(chunk)
        total = counter.rows

        def replay(p: Payload) -> Iterator[bytes]:
            spool.seek(0)
            while True:
                chunk = spool.read(CHUNK_BYTES)
                if not chunk:
                    break
                yield chunk
            p.rows = total

        payload._produce = replay
        payload._cleanup.append(spool.close)
        return payload

    # -- json ---------------------------------------------------------------------------------

    @staticmethod
    def _json_dicts(delete_sign: bool, sequence: int | None):
        """Dicts → JSON lines. Control columns a row lacks are spliced into its text (cheaper
        than copying every row to add them); a numeric delete sign is sent as "0"/"1"."""
        dumps = json.JSONEncoder(default=_json_default, ensure_ascii=False, separators=(",", ":")).encode
        sign_text = f'"{DELETE_SIGN}":"0"'
        seq_text = f'"{SEQUENCE_COLUMN}":{sequence}' if sequence is not None else ""

        def produce(payload: Payload, rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
            def lines() -> Iterator[str]:
                for row in rows:
                    sign = row.get(DELETE_SIGN)
                    if sign is not None and (not delete_sign or not isinstance(sign, str)):
                        row = {k: v for k, v in row.items() if k != DELETE_SIGN}
                        if delete_sign:
                            row[DELETE_SIGN] = "1" if sign and int(sign) else "0"
                    extra = []
                    if delete_sign and DELETE_SIGN not in row:
                        extra.append(sign_text)
                    if seq_text and SEQUENCE_COLUMN not in row:
                        extra.append(seq_text)
                    text = dumps(row)
                    if extra:
                        text = text[:-1] + ("," if len(text) > 2 else "") + ",".join(extra) + "}"
                    yield text + "\n"

            yield from _batched_lines(lines(), payload)

        return produce

    def _json_arrow(self, rows: Any, delete_sign: bool, sequence: int | None):
        dicts = self._json_dicts(delete_sign, sequence)

        def produce(payload: Payload, data: Any) -> Iterator[bytes]:
            table = _json_friendly(_as_arrow_table(data))
            if not all(_json_kernel_type(t) for t in table.schema.types):

                def each() -> Iterator[dict[str, Any]]:
                    for batch in table.to_batches(max_chunksize=8192):
                        yield from batch.to_pylist()

                yield from dicts(payload, each())
                return
            for batch in table.to_batches(max_chunksize=65536):
                payload.rows += batch.num_rows
                yield _string_buffer(_json_lines(batch, delete_sign, sequence))

        return produce

    # -- csv ----------------------------------------------------------------------------------

    @staticmethod
    def _csv_dicts(fields: list[str], sequence: int | None):
        def produce(payload: Payload, rows: Iterable[Mapping[str, Any]]) -> Iterator[bytes]:
            def lines() -> Iterator[str]:
                for row in rows:
                    values = []
                    for name in fields:
                        if name == DELETE_SIGN and name in row:
                            values.append("1" if row[name] and int(row[name]) else "0")
                        elif name in row:
                            values.append(_csv_value(row[name]))
                        elif name == DELETE_SIGN:
                            values.append("0")
                        elif name == SEQUENCE_COLUMN and sequence is not None:
                            values.append(str(sequence))
                        else:
                            values.append(CSV_NULL)
                    yield CSV_SEPARATOR.join(values) + CSV_DELIMITER

            yield from _batched_lines(lines(), payload)

        return produce

    @staticmethod
    def _csv_arrow(rows: Any, fields: list[str], sequence: int | None):
        """Arrow → CSV with Arrow kernels: every column cast to text, joined, and the joined
        column's value buffer *is* the body (no Python object per value)."""

        def produce(payload: Payload, data: Any) -> Iterator[bytes]:
            table = conform(_as_arrow_table(data), fields, sequence)
            for batch in table.to_batches(max_chunksize=65536):
                texts = [_csv_text(col, name) for col, name in zip(batch.columns, fields, strict=True)]
                joined = pc.binary_join_element_wise(*texts, CSV_SEPARATOR)
                joined = pc.binary_join_element_wise(joined, pa.scalar(CSV_DELIMITER), "")
                payload.rows += batch.num_rows
                yield _string_buffer(joined)

        return produce

    # -- arrow --------------------------------------------------------------------------------

    @staticmethod
    def _arrow(rows: Any, fields: list[str], delete_sign: bool, sequence: int | None):
        def produce(payload: Payload, data: Any) -> Iterator[bytes]:
            table = conform(_as_arrow_table(data), fields, sequence)
            buf = io.BytesIO()
            writer = pa.ipc.new_stream(buf, table.schema)
            for batch in table.to_batches(max_chunksize=65536):
                writer.write_batch(batch)
                payload.rows += batch.num_rows
                yield _drain(buf)
            writer.close()
            tail = _drain(buf)
            if tail:
                yield tail

        return produce


def _json_friendly(table: pa.Table) -> pa.Table:
    """Decimals, dates and timestamps as Doris-readable text, by Arrow kernels (not per value)."""
    cols = []
    for col in table.columns:
        t = col.type
        if pa.types.is_decimal(t) or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
            cols.append(col.cast(pa.string()))
        else:
            cols.append(col)
    return pa.Table.from_arrays(cols, names=table.column_names)


def _json_kernel_type(t: pa.DataType) -> bool:
    """Columns :func:`_json_lines` writes with Arrow kernels (after :func:`_json_friendly`)."""
    return (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t) or pa.types.is_null(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t))


_NEEDS_ESCAPE = r"[\x00-\x1f]"


def _json_text(column: pa.Array) -> pa.Array:
    """One column's values as JSON text (strings quoted and escaped), NULL as ``null``."""
    t = column.type
    if pa.types.is_null(t):
        return pa.array(["null"] * len(column), pa.string())
    if pa.types.is_boolean(t):
        text = pc.if_else(column, "true", "false")
    elif pa.types.is_integer(t) or pa.types.is_floating(t):
        text = column.cast(pa.string())  # shortest round-trip digits; MySQL has no NaN nor infinity
    else:
        text = column.cast(pa.string())
        if pc.any(pc.match_substring_regex(text, _NEEDS_ESCAPE)).as_py():  # control characters: json's own escapes
            text = pa.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in text.to_pylist()],
                            pa.string())
        else:
            text = pc.replace_substring(pc.replace_substring(text, "\\", "\\\\"), '"', '\\"')
            text = pc.binary_join_element_wise('"', text, '"', "")
    return pc.fill_null(text, "null")


def _json_lines(batch: pa.RecordBatch, delete_sign: bool, sequence: int | None) -> pa.Array:
    """A batch as JSON lines, one string per row, by Arrow kernels: what :meth:`PayloadBuilder._json_dicts`
    writes for its rows (the delete sign as "0"/"1", the control columns a row lacks added), with
    no Python object per value. Keys are in the batch's column order."""
    pieces = []
    names = batch.schema.names
    for name, column in zip(names, batch.columns, strict=True):
        if name == DELETE_SIGN:
            if not delete_sign:
                continue
            ones = pc.fill_null(pc.not_equal(column.cast(pa.int64()), 0), False)
            text = pc.if_else(ones, '"1"', '"0"')
        else:
            text = _json_text(column)
        pieces.append(pc.binary_join_element_wise(json.dumps(name, ensure_ascii=False) + ":", text, ""))
    rows = len(batch)
    if delete_sign and DELETE_SIGN not in names:
        pieces.append(pa.repeat(pa.scalar(f'"{DELETE_SIGN}":"0"', pa.string()), rows))
    if sequence is not None and SEQUENCE_COLUMN not in names:
        pieces.append(pa.repeat(pa.scalar(f'"{SEQUENCE_COLUMN}":{sequence}', pa.string()), rows))
    if not pieces:
        return pa.array(["{}\n"] * rows, pa.string())
    body = pc.binary_join_element_wise(*pieces, ",") if len(pieces) > 1 else pieces[0]
    return pc.binary_join_element_wise("{", body, "}\n", "")


def _drain(buf: io.BytesIO) -> bytes:
    data = buf.getvalue()
    buf.seek(0)
    buf.truncate()
    return data


def _csv_text(column: pa.Array, name: str) -> pa.Array:
    """One column as CSV text: NULL as ``\\N``, booleans as 1/0, nested values as JSON."""
    t = column.type
    if pa.types.is_null(t):
        return pa.array([CSV_NULL] * len(column), pa.string())
    if pa.types.is_boolean(t):
        text = pc.if_else(column, "1", "0")
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        text = column.cast(pa.string())
        if pc.any(pc.match_substring_regex(text, "[\x01\x02]")).as_py():
            raise ValueError(
                f"column {name} has a value containing the control characters \\x01/\\x02 used as CSV "
                "separators; load this table with format json or arrow"
            )
    elif pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        text = pa.array([None if v is None else _csv_value(v) for v in column.to_pylist()], pa.string())
    else:
        text = column.cast(pa.string())
    return pc.fill_null(text, CSV_NULL)


def _string_buffer(array: pa.Array) -> bytes:
    """The concatenated bytes of a string array's values (its data buffer between first and last offset)."""
    array = array.cast(pa.string()) if not pa.types.is_string(array.type) else array
    if isinstance(array, pa.ChunkedArray):
        return b"".join(_string_buffer(chunk) for chunk in array.chunks)
    offsets = array.buffers()[1]
    import numpy as np

    offs = np.frombuffer(offsets, dtype=np.int32, count=len(array) + 1, offset=array.offset * 4)
    data = array.buffers()[2]
    if data is None:
        return b""
    return data.to_pybytes()[offs[0]:offs[-1]]


class ArrowConformError(ValueError):
    """A column's values do not fit the Arrow type its Doris column is read as (the load then goes
    as JSON, whose text Doris converts and checks itself)."""


def _with_control_types(fields: list[str], types: Sequence[pa.DataType]) -> list[pa.DataType | None]:
    """``types`` (the table's columns) extended to ``fields``: the delete sign is a TINYINT."""
    out: list[pa.DataType | None] = list(types)[: len(fields)]
    for name in fields[len(out):]:
        out.append(pa.int8() if name == DELETE_SIGN else None)
    return out


def conform(table: pa.Table, fields: list[str], sequence: int | None,
            types: Sequence[pa.DataType | None] | None = None) -> pa.Table:
    """Columns in the Doris order ``fields``; control columns filled, absent columns as nulls; with
    ``types``, each cast to its type (booleans to integers as 1/0, integers and decimals checked for
    overflow, text parsed): what Doris's Arrow reader takes without converting."""
    arrays = []
    for i, name in enumerate(fields):
        if name in table.column_names:
            array = table.column(name)
        elif name == DELETE_SIGN:
            array = pa.chunked_array([pa.repeat(pa.scalar(0, pa.int8()), table.num_rows)])
        elif name == SEQUENCE_COLUMN and sequence is not None:
            array = pa.chunked_array([pa.repeat(pa.scalar(sequence, pa.int64()), table.num_rows)])
        else:
            array = pa.chunked_array([pa.nulls(table.num_rows, pa.null())])
        target = types[i] if types is not None and i < len(types) else None
        if target is not None and array.type != target:
            array = _cast(array, target, name)
        arrays.append(array)
    return pa.Table.from_arrays(arrays, names=fields)


def _cast(array: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    if pa.types.is_timestamp(target) and target.tz is not None:
        return _zoned_timestamps(array, target, name)
    try:
        if pa.types.is_boolean(array.type) and pa.types.is_integer(target):
            array = array.cast(pa.int8())
        elif pa.types.is_decimal(array.type) and pa.types.is_string(target):
            pass  # an unsigned BIGINT (decimal128(20,0)) for a LARGEINT: its digits, below
        elif pa.types.is_string(array.type) and pa.types.is_boolean(target):
            array = pc.equal(array, "1")
        return array.cast(target, safe=not pa.types.is_floating(target))  # a FLOAT's float64 is float32's value
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ArrowConformError(f"column {name}: {array.type} cannot be sent as {target} ({exc})") from exc


def _zoned_timestamps(array: pa.ChunkedArray, target: pa.DataType, name: str) -> pa.ChunkedArray:
    """Wall-clock values (MySQL text, or a timestamp without a zone) → ``target`` (a timestamp in a
    fixed offset such as ``+08:00``: cdc_core/doris/arrow_layout.py) holding the instant at which a
    clock in that offset shows each value, by Arrow kernels. A value that is no time (a zero date,
    text Arrow cannot parse) or whose instant falls before 1970-01-01 UTC (Doris's reader takes the
    epoch as unsigned) does not fit: :class:`ArrowConformError`, and the load goes as JSON."""
    offset_us = _offset_us(target.tz)
    try:
        if pa.types.is_timestamp(array.type) and array.type.tz is not None:
            array = pc.local_timestamp(array)  # its own wall clock
        wall = array.cast(pa.timestamp(target.unit)) if not pa.types.is_null(array.type) else None
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ArrowConformError(f"column {name}: {array.type} cannot be sent as {target} ({exc})") from exc
    if wall is None:
        return pa.chunked_array([pa.nulls(len(array), target)])
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[target.unit]
    epoch = pc.subtract(wall.cast(pa.int64()), offset_us * per_second // 1_000_000)
    first = pc.min(epoch).as_py()
    if first is not None and first < 0:
        start = dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=offset_us)
        raise ArrowConformError(
            f"column {name}: a value before {start:%Y-%m-%d %H:%M:%S} cannot be sent as {target} (its epoch "
            "would be negative, which Doris's Arrow reader takes as unsigned)")
    return epoch.cast(target)


def _offset_us(zone: str) -> int:
    """A fixed offset's microseconds east of UTC (``+08:00`` → 8 h)."""
    sign = -1 if zone.startswith("-") else 1
    hours, _, minutes = zone.lstrip("+-").partition(":")
    return sign * (int(hours) * 3600 + int(minutes or 0) * 60) * 1_000_000
