"""A faster rows-event decoder: one generated Python function per table layout.

mysql-replication decodes a row column by column through several method calls per value
(``__read_values_name``, ``packet.read``, ``BitGet``...), which is where the stream's time goes
(about 50k rows/s measured, almost all of it in ``__read_values_name``). This module reads
the same bytes — the rows event body after mysql-replication has parsed its header and bitmaps —
with one function generated for the table's column layout (the TableMap) and the sink's value
conversion, so a row costs a few slicing and ``struct`` operations and one dict.

Only the common types are decoded here; a table with any other column type (ENUM, SET, BIT,
JSON, GEOMETRY, TIME, old temporal formats, MINIMAL row images...) falls back to
mysql-replication, event by event, so correctness never depends on this module covering a type.

Values are produced exactly as the slow path produces them (tests compare both, and the snapshot
path, on every type):

* with :class:`cdc_core.mysql.types.DorisValueConverter`, the hot kinds are converted inline
  (integers, booleans, DECIMAL to its exact text, DATE/DATETIME to their text, text in any charset
  through :mod:`cdc_core.mysql.types.charsets`, DOUBLE); other kinds go through the converter with
  the value mysql-replication would give;
* with any other converter (or none), every value is the one mysql-replication would give,
  passed through the converter.
"""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from pymysqlreplication.constants import FIELD_TYPE

from cdc_core.model.schema import Column, TableSchema
from cdc_core.mysql.binlog_values import RAW_TEXT, normalizer, text_column
from cdc_core.mysql.row_formats import (
    COMPRESSED,
    DAYS,
    FRAC,
    HM,
    S2,
    day_text,
    fsp_size,
    micro_expr,
    python_codec,
    valid_date,
)
from cdc_core.mysql.types import DorisValueConverter, TypeKind, kind_of
from cdc_core.mysql.types.charsets import decoder_for, is_utf8, utf8_refusal

_SUPPORTED = {
    FIELD_TYPE.TINY, FIELD_TYPE.SHORT, FIELD_TYPE.INT24, FIELD_TYPE.LONG, FIELD_TYPE.LONGLONG, FIELD_TYPE.DOUBLE,
    FIELD_TYPE.FLOAT, FIELD_TYPE.NEWDECIMAL, FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB,
    FIELD_TYPE.DATETIME2, FIELD_TYPE.DATE, FIELD_TYPE.TIMESTAMP2, FIELD_TYPE.YEAR,
}


class _Builder:
    """Generates the source of one table layout's row decoder."""

    def __init__(self, columns: list[Any], schema_columns: list[Column], names: list[str], fused: Any):
        self.columns = columns
        self.schema_columns = schema_columns
        self.names = names
        self.fused = fused  # a DorisValueConverter, or None
        self.env: dict[str, Any] = {
            "unpack_from": struct.unpack_from, "from_bytes": int.from_bytes, "valid_date": valid_date,
            "dt": dt, "Decimal": Decimal, "dcache": DAYS, "day_text": day_text,
            "HM": HM, "S2": S2, "FRAC1": FRAC[1], "FRAC2": FRAC[2], "FRAC3": FRAC[3], "utcfromtimestamp": dt.datetime.utcfromtimestamp,
        }
        self.lines: list[str] = []

    def emit(self, line: str, indent: int) -> None:
        self.lines.append("    " * indent + line)

    def _kind(self, i: int) -> str | None:
        if self.fused is None:
            return None
        return kind_of(self.schema_columns[i], tinyint1_as_boolean=self.fused.tinyint1_as_boolean)

    def _generic(self, i: int) -> str:
        """A name for ``converter(column, normalise(value))`` for column i (or identity)."""
        col = self.schema_columns[i]
        norm = normalizer(col)
        conv = self.fused or self.converter
        name = f"g{i}"
        if conv is None and norm is None:
            self.env[name] = lambda v: v
        elif conv is None:
            self.env[name] = norm
        elif norm is None:
            self.env[name] = (lambda c, f: lambda v: f(c, v))(col, conv)
        else:
            self.env[name] = (lambda c, f, n: lambda v: f(c, n(v)))(col, conv, norm)
        return name

    converter: Any = None

    def column(self, i: int, ind: int) -> None:  # noqa: PLR0912, PLR0915 - one branch per type
        c = self.columns[i]
        t = c.type
        v = f"v{i}"
        kind = self._kind(i)
        generic = self._generic(i)
        passthrough_int = kind in (TypeKind.INT, TypeKind.UINT64)

        def finish_int(expr: str) -> None:
            if kind == TypeKind.BOOL:
                self.emit(f"{v} = {expr} != 0", ind)
            elif passthrough_int:
                self.emit(f"{v} = {expr}", ind)
            else:
                self.emit(f"{v} = {generic}({expr})", ind)

        if t == FIELD_TYPE.TINY:
            fmt = "<B" if c.unsigned else "<b"
            finish_int(f"unpack_from('{fmt}', buf, p)[0]")
            self.emit("p += 1", ind)
        elif t == FIELD_TYPE.SHORT:
            finish_int(f"unpack_from('{'<H' if c.unsigned else '<h'}', buf, p)[0]")
            self.emit("p += 2", ind)
        elif t == FIELD_TYPE.INT24:
            finish_int(f"from_bytes(buf[p:p + 3], 'little', signed={not c.unsigned})")
            self.emit("p += 3", ind)
        elif t == FIELD_TYPE.LONG:
            finish_int(f"unpack_from('{'<I' if c.unsigned else '<i'}', buf, p)[0]")
            self.emit("p += 4", ind)
        elif t == FIELD_TYPE.LONGLONG:
            finish_int(f"unpack_from('{'<Q' if c.unsigned else '<q'}', buf, p)[0]")
            self.emit("p += 8", ind)
        elif t == FIELD_TYPE.DOUBLE:
            expr = "unpack_from('<d', buf, p)[0]"
            self.emit(f"{v} = {expr}" if kind == TypeKind.DOUBLE else f"{v} = {generic}({expr})", ind)
            self.emit("p += 8", ind)
        elif t == FIELD_TYPE.FLOAT:
            self.emit(f"{v} = {generic}(unpack_from('<f', buf, p)[0])", ind)
            self.emit("p += 4", ind)
        elif t == FIELD_TYPE.YEAR:
            self.emit(f"{v} = {generic}(buf[p] + 1900)", ind)
            self.emit("p += 1", ind)
        elif t == FIELD_TYPE.NEWDECIMAL:
            size = self.decimal(i, c.precision, c.decimals, kind == TypeKind.DECIMAL, generic, ind)
            self.emit(f"p += {size}", ind)
        elif t in (FIELD_TYPE.VARCHAR, FIELD_TYPE.STRING, FIELD_TYPE.BLOB):
            size = c.length_size if t == FIELD_TYPE.BLOB else 2 if c.max_length > 255 else 1
            self.emit(f"n = from_bytes(buf[p:p + {size}], 'little')", ind)
            self.emit(f"p += {size}", ind)
            raw = "buf[p:p + n]"
            encoding = python_codec(c.character_set_name)
            if c.character_set_name == RAW_TEXT:  # a text column: MySQL's own charset table (binlog_values)
                charset = self.schema_columns[i].charset
                if is_utf8(charset):
                    decoded = f"{raw}.decode()"
                else:
                    self.env[f"text{i}"] = decoder_for(charset)
                    decoded = f"text{i}({raw})"
            elif t != FIELD_TYPE.BLOB and c.character_set_name is None:
                decoded = f"{raw}.decode()"  # as mysql-replication: no charset known → UTF-8
            elif encoding is not None:
                decoded = f"{raw}.decode({encoding!r})"
            else:
                decoded = f"bytes({raw})"  # binary (and charsets Python lacks): bytes, as the library
            if kind == TypeKind.STRING and decoded != f"bytes({raw})":
                self.emit(f"{v} = {decoded}", ind)
            else:
                self.emit(f"{v} = {generic}({decoded})", ind)
            self.emit("p += n", ind)
        elif t == FIELD_TYPE.DATETIME2:
            fsp = c.fsp
            size = 5 + fsp_size(fsp)
            self.emit("d = from_bytes(buf[p:p + 5], 'big') - 0x8000000000", ind)
            if kind == TypeKind.DATETIME:
                # text from cached pieces: the date (per distinct day), "HH:MM:", "SS", the fraction
                self.emit("dp = dcache.get(d >> 17)", ind)
                self.emit("if dp is None: dp = day_text(d >> 17)", ind)
                frac = ""
                if fsp:
                    raw = f"from_bytes(buf[p + 5:p + {size}], 'big')" + (" // 10" if fsp % 2 else "")
                    self.emit(f"fr = {raw}", ind)
                    frac = f" + FRAC{fsp}[fr]" if fsp <= 3 else f" + f'.{{fr:0{fsp}d}}'"
                self.emit("if dp:", ind)
                self.emit(f"    {v} = dp + HM[(d >> 6) & 0x7FF] + S2[d & 63]{frac}", ind)
            else:
                self.emit(f"mc = {micro_expr('p + 5', fsp)}", ind)
                self.emit("ym = (d >> 22) & 0x1FFFF; y = ym // 13; m = ym % 13; dd = (d >> 17) & 31", ind)
                self.emit("if y and 0 < m and 0 < dd and (dd <= 28 or valid_date(y, m, dd)):", ind)
                self.emit(f"    {v} = {generic}(dt.datetime(y, m, dd, (d >> 12) & 31, (d >> 6) & 63, d & 63, mc))",
                          ind)
            self.emit("else:", ind)
            self.emit(f"    {v} = {generic}(None)", ind)
            self.emit(f"p += {size}", ind)
        elif t == FIELD_TYPE.DATE:
            self.emit("d = from_bytes(buf[p:p + 3], 'little'); y = d >> 9; m = (d >> 5) & 15; dd = d & 31", ind)
            self.emit("if valid_date(y, m, dd):", ind)
            if kind == TypeKind.DATE:
                self.emit(f"    {v} = f'{{y:04d}}-{{m:02d}}-{{dd:02d}}'", ind)
            else:
                self.emit(f"    {v} = {generic}(dt.date(y, m, dd))", ind)
            self.emit("else:", ind)
            self.emit(f"    {v} = {generic}(None)", ind)
            self.emit("p += 3", ind)
        elif t == FIELD_TYPE.TIMESTAMP2:
            fsp = c.fsp
            size = 4 + fsp_size(fsp)
            micro = micro_expr("p + 4", fsp)
            self.emit("ts = utcfromtimestamp(from_bytes(buf[p:p + 4], 'big'))", ind)
            if fsp:
                self.emit(f"mc = {micro}", ind)
                self.emit("if mc: ts = ts.replace(microsecond=mc)", ind)
            self.emit(f"{v} = {generic}(ts)", ind)
            self.emit(f"p += {size}", ind)
        else:  # pragma: no cover - guarded by _SUPPORTED
            raise AssertionError(t)

    def decimal(self, i: int, precision: int, scale: int, fused: bool, generic: str, ind: int) -> int:
        """Inline code for a packed DECIMAL: one big-endian integer, groups cut off by shifts."""
        v = f"v{i}"
        int_words, int_rest = divmod(precision - scale, 9)
        frac_words, frac_rest = divmod(scale, 9)
        int_size, frac_size = COMPRESSED[int_rest], COMPRESSED[frac_rest]
        size = int_size + 4 * (int_words + frac_words) + frac_size
        bits = 8 * size
        sign, full = 1 << (bits - 1), (1 << bits) - 1
        self.emit(f"x = from_bytes(buf[p:p + {size}], 'big')", ind)
        self.emit(f"if x & {sign}:", ind)
        self.emit(f"    x ^= {sign}; neg = ''", ind)
        self.emit("else:", ind)
        self.emit(f"    x ^= {full ^ sign}; neg = '-'", ind)
        frac_parts: list[str] = []  # most significant first
        if frac_size:
            self.emit(f"f{frac_words} = x & {(1 << (8 * frac_size)) - 1}; x >>= {8 * frac_size}", ind)
            frac_parts.insert(0, f"{{f{frac_words}:0{frac_rest}d}}")
        for k in range(frac_words - 1, -1, -1):
            self.emit(f"f{k} = x & 0xFFFFFFFF; x >>= 32", ind)
            frac_parts.insert(0, f"{{f{k}:09d}}")
        int_expr_parts = []
        for k in range(int_words):
            self.emit(f"w{k} = x & 0xFFFFFFFF; x >>= 32", ind)
            int_expr_parts.append(f"w{k} * {10 ** (9 * k)}")
        int_expr_parts.append(f"x * {10 ** (9 * int_words)}" if int_words else "x")
        self.emit(f"ip = {' + '.join(int_expr_parts)}", ind)
        frac = "".join(frac_parts)
        if fused:
            nonzero = " or ".join(["ip"] + [f"f{k}" for k in range(frac_words + (1 if frac_size else 0))])
            self.emit(f"{v} = f'{{ip}}.{frac}'" if scale else f"{v} = str(ip)", ind)
            self.emit(f"if neg and ({nonzero}): {v} = '-' + {v}", ind)
        else:
            frac_text = f"'.' + f'{frac}'" if scale else "''"
            self.emit(f"{v} = {generic}(Decimal(neg + str(ip) + {frac_text}))", ind)
        return size

    def image(self, ind: int, out: str) -> None:
        n = len(self.columns)
        nbytes = (n + 7) // 8
        if nbytes == 1:
            self.emit("nb = buf[p]", ind)
        else:
            self.emit(f"nb = from_bytes(buf[p:p + {nbytes}], 'little')", ind)
        self.emit(f"p += {nbytes}", ind)
        kinds_null_plain = {"int", "uint64", "bool", "decimal", "string", "double"}
        for i in range(n):
            self.emit(f"if nb & {1 << i}:", ind)
            kind = self._kind(i)
            null_value = "None" if kind in kinds_null_plain else f"{self._generic(i)}(None)"
            self.emit(f"    v{i} = {null_value}", ind)
            self.emit("else:", ind)
            self.column(i, ind + 1)
        items = ", ".join(f"{self.names[i]!r}: v{i}" for i in range(n))
        self.emit(f"{out} = {{{items}}}", ind)

    def build(self, update: bool) -> Callable[[bytes], list]:
        self.emit("def decode(buf):", 0)
        self.emit("p = 0; end = len(buf); rows = []; append = rows.append", 1)
        self.emit("while p < end:", 1)
        self.image(2, "a")
        if update:
            self.image(2, "b")
            self.emit("append((a, b))", 2)
        else:
            self.emit("append(a)", 2)
        self.emit("return rows", 1)
        source = "\n".join(self.lines)
        code = compile(source, "<tidemark row decoder>", "exec")
        exec(code, self.env)  # noqa: S102 - source generated above from the table layout, no input text
        return self.env["decode"]


def _layout(columns: Any) -> tuple:
    """What a generated decoder depends on, hashable: each column's name, type and scalar metadata."""
    return tuple(
        (c.name, c.type, tuple(sorted((k, v) for k, v in vars(c).items() if isinstance(v, int | str | bool | None))))
        for c in columns
    )


_SHARED_PLANS: dict[tuple[tuple, tuple[Column, ...], bool, DorisValueConverter], Callable[[bytes], list] | None] = {}
"""Generated decoders by what they depend on, shared by every :class:`FastRowDecoder` of the process.

The stream makes a new reader (and decoder) for every batch, with schemas newly read from the
history, so a cache keyed by object identity compiled every table's decoder again each batch
(~1 ms a table: 0.2–0.3 s of a 300-table batch). A decoder depends only on the TableMap's column
layout, the schema's columns (by value), the kind of image and the converter — a
:class:`DorisValueConverter` is a frozen value too — so the compiled function is reused across
batches, and by every table of the same shape."""
_SHARED_LIMIT = 4096


class FastRowDecoder:
    """Decodes rows events of supported layouts; :meth:`images` returns None to ask for the fallback."""

    def __init__(self, converter: Any) -> None:
        self.converter = converter
        self.fused = converter if isinstance(converter, DorisValueConverter) else None
        # decoders for another converter are this instance's own (it may hold state of its own)
        self._plans: dict[tuple, Callable[[bytes], list] | None] = _SHARED_PLANS if self.fused is not None else {}
        # the same table object again (a repeated TableMap, ``table_map_cache``): its plan, without
        # computing the layout; the entry keeps the table alive, so its id is not reused meanwhile
        self._by_table: dict[tuple[int, int, bool], tuple[Any, Any, Callable[[bytes], list] | None]] = {}

    def _plan(self, ev: Any, schema: TableSchema, update: bool) -> Callable[[bytes], list] | None:
        table = ev.table_map[ev.table_id]
        known = self._by_table.get((id(table), id(schema), update))
        if known is not None and known[0] is table and known[1] is schema:
            return known[2]
        # The library may make a new table-map object for every statement; the decoder depends only
        # on the column layout (names, types, type metadata) and the schema it converts for.
        key = (_layout(table.columns), schema.columns, update, self.fused) if self.fused is not None \
            else (_layout(table.columns), id(schema), update)
        if len(self._by_table) > 4096:
            self._by_table.clear()
        if key in self._plans:
            self._by_table[(id(table), id(schema), update)] = (table, schema, self._plans[key])
            return self._plans[key]
        plan = None
        cols = table.columns
        if all(c.type in _SUPPORTED for c in cols) and all(c.name for c in cols) \
                and all(schema.has_column(c.name) for c in cols):
            schema_cols = [text_column(c, schema.column(c.name)) for c in cols]
            builder = _Builder(cols, schema_cols, [sc.name for sc in schema_cols], self.fused)
            builder.converter = self.converter
            plan = builder.build(update)
        if len(self._plans) > _SHARED_LIMIT:
            self._plans.clear()
        self._plans[key] = plan
        self._by_table[(id(table), id(schema), update)] = (table, schema, plan)
        return plan

    def images(self, ev: Any, schema: TableSchema) -> list[tuple[dict | None, dict | None]] | None:
        update = hasattr(ev, "columns_present_bitmap2")
        n = len(ev.columns)
        full = b"\xff" * (n // 8) + (bytes([(1 << (n % 8)) - 1]) if n % 8 else b"")
        if ev.columns_present_bitmap != full or (update and ev.columns_present_bitmap2 != full):
            return None  # binlog_row_image=MINIMAL/NOBLOB: the library handles partial images
        decode = self._plan(ev, schema, update)
        if decode is None:
            return None
        body = ev.packet.read(ev.event_size - ev.packet.read_bytes)
        try:
            rows = decode(body)
        except UnicodeDecodeError as exc:  # utf8 text is decoded inline: the same refusal as the charsets
            raise utf8_refusal(exc, f"{schema.table_id}: ") from exc
        if update:
            return rows
        return [(r, r) for r in rows]
