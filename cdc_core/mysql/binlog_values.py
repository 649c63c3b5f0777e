"""Binlog row images → the same Python values the snapshot path reads, then the shared converter.

mysql-replication decodes a few types differently from pymysql's text protocol (which the snapshot
reads). We normalise those first, so that ``converter(column, value)`` — the one conversion both
paths share — sees identical input and a row reads the same from either path:

* ``SET``: a Python ``set`` (unordered; ``None`` when empty) → ``'a,b'`` in definition order.
* ``BIT(n)``: a ``'0101'`` string → big-endian ``bytes`` like pymysql.
* ``FLOAT``: the raw IEEE single widened to double (``1.100000023841858``) → the shortest decimal
  that round-trips through a single (``1.1``), which is what the server prints.
* ``JSON`` (MySQL's binary JSON): a decoded object → compact JSON text.
* ``TIME``: a negative value with a fraction is repaired (see :func:`_time`).
* ``BINARY``/``VARBINARY``/``BLOB`` and MariaDB's ``UUID``/``INET6``/``INET4`` (binary strings in
  the binlog, trailing zero bytes cut off): an empty value comes back as ``''``; made ``b''``.
* ``TIMESTAMP``: kept as a naive UTC ``datetime`` (the binlog stores epoch seconds; the snapshot
  session must read with ``time_zone='+00:00'`` to match).
* text (``CHAR``/``VARCHAR``/``TEXT``): mysql-replication decodes with Python's codec of a similar
  name, which differs from MySQL's table for many charsets (or keeps bytes where Python has none).
  :func:`keep_text_bytes` makes it keep every text column's bytes, and the normaliser decodes them
  with :mod:`cdc_core.mysql.types.charsets` — the text the server itself converts them to, which is
  what the snapshot's utf8mb4 session reads.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from cdc_core.model.schema import Column, TableSchema
from cdc_core.mysql.ddl.column_definitions import charset_of_collation
from cdc_core.mysql.table_map_binding import (
    SchemaHistoryMismatchError,
    bind_table_map,
    has_binlog_names,
    use_history_members,
)
from cdc_core.mysql.types.charsets import UndecodableTextError, decoder_for

_SET_VALUES = re.compile(r"'((?:[^']|'')*)'")


def _float32(value: Any) -> Any:
    if not isinstance(value, float):
        return value
    packed = struct.pack("<f", value)
    for digits in range(6, 10):
        text = f"{value:.{digits}g}"
        if struct.pack("<f", float(text)) == packed:
            return float(text)
    return value


def _bits(column: Column) -> Callable[[Any], Any]:
    match = re.search(r"\((\d+)\)", column.column_type)
    nbytes = (int(match.group(1)) + 7) // 8 if match else 8

    def convert(value: Any) -> Any:
        if isinstance(value, str):
            return int(value or "0", 2).to_bytes(nbytes, "big")
        return value

    return convert


def _set(column: Column) -> Callable[[Any], Any]:
    order = [v.replace("''", "'") for v in _SET_VALUES.findall(column.column_type)]
    rank = {v.lower(): i for i, v in reversed(list(enumerate(order)))}
    exact = {v: i for i, v in enumerate(order)}  # SET('a','A') in a case-insensitive collation: two members

    def convert(value: Any) -> Any:
        if isinstance(value, set | frozenset | list | tuple):
            return ",".join(sorted(value, key=lambda v: exact.get(str(v), rank.get(str(v).lower(), len(rank)))))
        return value

    return convert


def _json(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value

    def plain(v: Any) -> Any:
        if isinstance(v, bytes):
            return _UTF8(v)  # MySQL's binary JSON holds utf8mb4 strings
        if isinstance(v, dict):
            return {plain(k): plain(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        return v

    return json.dumps(plain(value), separators=(", ", ": "), ensure_ascii=False)


def _time(value: Any) -> Any:
    """A negative TIME with a fraction, as mysql-replication decodes it → its exact value.

    TIME2 stores a negative value as the two's complement of the whole packed number, so its
    integer part is one second further from zero and its fraction is ``1 - f``. The library
    decodes the two parts separately and gives ``-(X + 1) + f`` seconds for the true ``-(X + f)``
    (``-12:34:56.789012`` → ``-12:34:56.210988``). From that value the true one follows: with
    ``q = floor(v)`` and ``r = v - q`` (the stored ``f``), the value is ``(q + 1) - r``. A value
    with no fraction, and every non-negative one, is exact already.
    """
    if not isinstance(value, dt.timedelta) or value >= dt.timedelta(0):
        return value
    micros = (value.days * 86400 + value.seconds) * 1_000_000 + value.microseconds
    whole, rest = divmod(micros, 1_000_000)
    if not rest:
        return value
    return dt.timedelta(microseconds=(whole + 1) * 1_000_000 - rest)


# MariaDB's UUID / INET6 / INET4 travel in the binlog as binary strings too (``types.fixed_binary``)
_BINARY = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "uuid", "inet6", "inet4"}


def _binary(value: Any) -> Any:
    # mysql-replication "decodes" binary columns with a codec that does not exist, which Python only
    # notices for non-empty values: an empty one comes back as '' instead of b''
    return b"" if isinstance(value, str) and value == "" else value


_UTF8 = decoder_for("utf8mb4")
_TEXT = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}
_STRING_FIELDS = (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB)
# Not a codec: mysql-replication cannot look it up and keeps the column's bytes (``keep_text_bytes``).
RAW_TEXT = "tidemark-raw-bytes"


def keep_text_bytes(table: Any, schema: TableSchema) -> None:
    """Have mysql-replication (and the fast decoder) keep the raw bytes of every text column of a
    named TableMap; the normaliser decodes them exactly. The TableMap's own charset (its collation
    with ``FULL``; ``bind_table_map``'s with ``MINIMAL``) is kept for :func:`text_column`."""
    for bcol in table.columns:
        if bcol.character_set_name != RAW_TEXT and bcol.type in _STRING_FIELDS and bcol.name \
                and schema.has_column(bcol.name) and schema.column(bcol.name).data_type.lower() in _TEXT:
            collation = getattr(bcol, "collation_name", None)
            if bcol.__dict__.get("_tidemark_charset") is None and collation:  # MINIMAL: bind_table_map's
                bcol.__dict__["_tidemark_charset"] = charset_of_collation(collation)
            bcol.character_set_name = RAW_TEXT


def text_column(bcol: Any, column: Column) -> Column:
    """The schema's column, with the TableMap's charset when the schema does not know it."""
    charset = bcol.__dict__.get("_tidemark_charset")
    if column.charset is None and charset is not None and column.data_type.lower() in _TEXT:
        return replace(column, charset=charset)
    return column


def _text(column: Column) -> Callable[[Any], Any]:
    decode = decoder_for(column.charset)

    def convert(value: Any) -> Any:
        if isinstance(value, bytes | bytearray | memoryview):
            try:
                return decode(bytes(value))
            except UndecodableTextError as exc:
                raise UndecodableTextError(f"column {column.name!r}: {exc}") from exc
        return value

    return convert


def normalizer(column: Column) -> Callable[[Any], Any] | None:
    """The binlog→pymysql normalisation for one column, or None when the values already agree."""
    data_type = column.data_type.lower()
    if data_type in _BINARY:
        return _binary
    if data_type in _TEXT:
        return _text(column)
    if data_type == "set":
        return _set(column)
    if data_type == "bit":
        return _bits(column)
    if data_type == "float":
        return _float32
    if data_type == "json":
        return _json
    if data_type == "time":
        return _time
    return None


def _compose(
    converter: Callable[[Column, Any], Any] | None, column: Column, norm: Callable[[Any], Any] | None
) -> Callable[[Any], Any] | None:
    if converter is None:
        return norm
    if norm is None:
        return lambda v: converter(column, v)
    return lambda v: converter(column, norm(v))


class RowImageConverter:
    """Turns a rows event into ``(before, after)`` dicts of converted values, keyed by column name.

    Column names come from the TableMap (``binlog_row_metadata=FULL``). A TableMap without names
    (``MINIMAL``, MySQL 5.7) is first bound to the schema history by
    :func:`cdc_core.mysql.table_map_binding.bind_table_map`, which checks that the two agree and
    stops the read otherwise: a row is never mapped to columns by a guessed position.
    """

    def __init__(self, converter: Callable[[Column, Any], Any] | None, *, fast: bool = True) -> None:
        from cdc_core.mysql.row_decoder import FastRowDecoder  # deferred: row_decoder imports this module

        self.converter = converter
        self._fast = FastRowDecoder(converter) if fast else None
        self._plans: dict[tuple[int, int], list[tuple[str, str, Callable[[Any], Any] | None]]] = {}

    def _plan(self, ev: Any, schema: TableSchema) -> list[tuple[str, str, Callable[[Any], Any] | None]]:
        key = (id(ev.table_map[ev.table_id]), id(schema))
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        binlog_cols = ev.table_map[ev.table_id].columns
        plan = []
        for bcol in binlog_cols:
            name = bcol.name
            if not schema.has_column(name):
                raise SchemaHistoryMismatchError(
                    f"binlog row of {schema.table_id} has column {name!r}, which the table's schema at "
                    f"this offset lacks (schema columns: {', '.join(schema.column_names)}); the schema "
                    "history is out of step with the binlog"
                )
            column = text_column(bcol, schema.column(name))
            binlog_name = name
            norm = normalizer(column)
            plan.append((binlog_name, column.name, _compose(self.converter, column, norm)))
        if len(self._plans) > 4096:
            self._plans.clear()
        self._plans[key] = plan
        return plan

    def _image(self, values: dict[str, Any], plan: list[tuple[str, str, Callable[[Any], Any] | None]],
               empty_sets: dict[str, Any] | None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for binlog_name, name, fn in plan:
            value = values.get(binlog_name)
            if value is None and empty_sets and empty_sets.get(binlog_name) == "empty set":
                value = ""
            # the converter sees NULLs too: zero dates arrive as None and map by the column's rule
            out[name] = fn(value) if fn is not None else value
        return out

    def images(self, ev: Any, schema: TableSchema) -> list[tuple[dict[str, Any] | None, dict[str, Any] | None]]:
        table = ev.table_map[ev.table_id]
        if not has_binlog_names(table):
            bind_table_map(table, schema)  # before any row is decoded; raises when the two disagree
        else:
            use_history_members(table, schema)  # ENUM/SET members in non-UTF-8 charsets, exactly
        keep_text_bytes(table, schema)  # before any row is decoded: text is decoded here, exactly
        if self._fast is not None:
            fast = self._fast.images(ev, schema)
            if fast is not None:
                return fast
        plan = self._plan(ev, schema)
        out: list[tuple[dict[str, Any] | None, dict[str, Any] | None]] = []
        for row in ev.rows:
            if "values" in row:
                image = self._image(row["values"], plan, row.get("none_sources"))
                out.append((image, image))
            else:
                out.append((
                    self._image(row["before_values"], plan, row.get("before_none_sources")),
                    self._image(row["after_values"], plan, row.get("after_none_sources")),
                ))
        return out
