"""Verification: parity between MySQL and Doris, a row count and an order-independent checksum.

Rows are compared as the sink sends them: MySQL rows are read and converted with the snapshot
path's own conversion (``cdc_core.mysql.types``), Doris rows come back from its SQL API, and
both are brought to one canonical text per value (numbers by value, booleans as 0/1,
datetimes without trailing fractional zeros, JSON re-serialised) before hashing. The checksum
is the sum of per-row SHA-1 prefixes modulo 2⁶⁴, so row order never matters.

Ranges: a chunk of a numeric or temporal key is compared by the same half-open range on both
sides. A character key is compared by MySQL's keys (its collation may order and compare
differently from Doris's binary strings): the chunk's rows in MySQL, looked up by key in Doris.

A table with a transform, routed to several targets, or merged with others into one target is
not compared (its Doris rows are not the source's rows); the result says why it was skipped.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_core.mysql.discovery import chunk_key_column
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import TypeKind, kind_of
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.results import ParityResult
from cdc_core.pipeline.snapshot import chunk_records
from cdc_core.schema import Column, TableId, TableSchema

logger = logging.getLogger(__name__)

PAGE = 10_000  # the most rows Doris's query API returns per statement


def _canonical(value: Any, kind: str) -> str:
    if value is None:
        return "\\N"
    if kind in (TypeKind.BOOL,) or isinstance(value, bool):
        if isinstance(value, str):
            return "1" if value.strip().lower() in ("1", "true") else "0"
        return "1" if value else "0"
    if kind in (TypeKind.INT, TypeKind.UINT64, TypeKind.YEAR, TypeKind.DECIMAL, TypeKind.BIT):
        try:
            number = Decimal(str(value))
        except InvalidOperation:
            return str(value)
        return format(number.normalize(), "f")
    if kind in (TypeKind.FLOAT, TypeKind.DOUBLE):
        try:
            return repr(float(value)) if kind == TypeKind.DOUBLE else f"{float(value):.6g}"
        except (TypeError, ValueError):
            return str(value)
    if kind in (TypeKind.DATETIME, TypeKind.TIMESTAMP, TypeKind.TIME):
        text = str(value).replace("T", " ")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    if kind == TypeKind.JSON:
        try:
            return json.dumps(json.loads(value) if isinstance(value, str) else value, sort_keys=True,
                              separators=(",", ":"))
        except (TypeError, ValueError):
            return str(value)
    return str(value)


def row_hash(values: Iterable[str]) -> int:
    digest = hashlib.sha1("\x1f".join(values).encode()).digest()
    return int.from_bytes(digest[:8], "big")


class RowSet:
    """Count and checksum of rows, canonicalised per column kind."""

    def __init__(self, columns: list[Column], tinyint1_as_boolean: bool):
        self.kinds = [kind_of(c, tinyint1_as_boolean=tinyint1_as_boolean) for c in columns]
        self.count = 0
        self.total = 0

    def add(self, row: Iterable[Any]) -> None:
        self.count += 1
        self.total = (self.total + row_hash(_canonical(v, k) for v, k in zip(row, self.kinds, strict=True))) % 2**64

    @property
    def checksum(self) -> str:
        return f"{self.total:016x}"


def mysql_rows(reader: Any, schema: TableSchema, split: Any) -> Iterator[list[Any]]:
    """The range's rows from MySQL as Doris values (the snapshot path's conversion)."""
    names = list(schema.column_names)
    for batch in reader.scan_batches(schema, split):
        columns = [batch.column(n).to_pylist() for n in names]
        yield from (list(r) for r in zip(*columns, strict=True))


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | Decimal):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def doris_rows_in_range(catalog: Any, target: TableId, columns: list[str], key: str,
                        start: Any, end: Any, *, unique_key: bool = True) -> Iterator[list[Any]]:
    """Rows of ``target`` with ``start <= key < end`` (None: unbounded), page by page.

    A unique key pages by key (``key > last``); a key with duplicates (a table without a primary
    key) pages by offset over an order of every column, so no row is skipped or seen twice.
    """
    select = ", ".join(_q(c) for c in columns)
    bounds = []
    if start is not None:
        bounds.append(f"{_q(key)} >= {_literal(start)}")
    if end is not None:
        bounds.append(f"{_q(key)} < {_literal(end)}")
    order = _q(key) if unique_key else ", ".join(_q(c) for c in columns)
    last = None
    offset = 0
    while True:
        conditions = list(bounds)
        if last is not None:
            conditions.append(f"{_q(key)} > {_literal(last)}")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        paging = f"LIMIT {PAGE}" if unique_key else f"LIMIT {PAGE} OFFSET {offset}"
        rows = catalog.execute(
            target.database, f"SELECT {select} FROM {_q(target.table)}{where} ORDER BY {order} {paging}", limit=PAGE,
        ).rows
        yield from (list(r) for r in rows)
        if len(rows) < PAGE:
            return
        if unique_key:
            last = rows[-1][columns.index(key)]
        else:
            offset += PAGE


def doris_rows_by_keys(catalog: Any, target: TableId, columns: list[str], key: str,
                       keys: list[Any]) -> Iterator[list[Any]]:
    select = ", ".join(_q(c) for c in columns)
    for i in range(0, len(keys), 1000):
        part = keys[i : i + 1000]
        values = ", ".join(_literal(k) for k in part)
        yield from (list(r) for r in catalog.execute(
            target.database, f"SELECT {select} FROM {_q(target.table)} WHERE {_q(key)} IN ({values}) LIMIT {PAGE}",
            limit=PAGE,
        ).rows)


def is_text_key(column: Column, tinyint1_as_boolean: bool) -> bool:
    return kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean) in (
        TypeKind.STRING, TypeKind.ENUM, TypeKind.SET, TypeKind.BINARY, TypeKind.JSON)


# -- the service's checks ---------------------------------------------------------------------


def chunk_parity(ctx: PipelineContext, key: str) -> ParityResult:
    """Row count and checksum of the chunk's key range, MySQL against Doris."""
    record = chunk_records(ctx, [key])[0]
    table_id = TableId.parse(record.table_id)
    schema, key_column = _schema_and_chunk_key(ctx, table_id)
    split = SnapshotSplit(table_id, record.chunk_index, None if record.start is None else tuple(record.start),
                          None if record.end is None else tuple(record.end), (key_column.name,))
    start = None if record.start is None else record.start[0]
    end = None if record.end is None else record.end[0]
    with SnapshotSplitReader.from_source(ctx.definition.source) as reader:
        return _parity(ctx, schema, reader, split, key_column, (start, end))


def table_parity(ctx: PipelineContext, table_id: str) -> ParityResult:
    """Row count and checksum of the whole table, MySQL against Doris."""
    tid = TableId.parse(table_id)
    schema, key_column = _schema_and_chunk_key(ctx, tid)
    split = SnapshotSplit(tid, 0, None, None, (key_column.name,))
    with SnapshotSplitReader.from_source(ctx.definition.source) as reader:
        return _parity(ctx, schema, reader, split, key_column, None)


def _schema_and_chunk_key(ctx: PipelineContext, table_id: TableId) -> tuple[TableSchema, Column]:
    schema = ctx.live_schema(table_id)
    return schema, chunk_key_column(schema, ctx.definition.source.chunk_key_column)


def _parity(ctx: PipelineContext, schema: TableSchema, reader: Any, split: SnapshotSplit, key_column: Column,
            key_range: tuple[Any, Any] | None) -> ParityResult:
    tinyint = ctx.definition.source.tinyint1_as_boolean
    targets = ctx.targets(schema.table_id)
    if ctx.has_transform(schema.table_id) or len(targets) != 1:
        why = "the table has a transform" if len(targets) == 1 else "the table is routed to several targets"
        return ParityResult(str(schema.table_id), key_range, 0, 0, "", "", {"skipped": why})
    target = targets[0]
    if ctx.sink.router.is_merged(target, ctx.captured_tables()):
        return ParityResult(str(schema.table_id), key_range, 0, 0, "", "",
                            {"skipped": f"{target} merges several source tables"})
    columns = list(schema.columns)
    names = [c.name for c in columns]
    mine, theirs = RowSet(columns, tinyint), RowSet(columns, tinyint)
    keys: list[Any] = []
    key_index = names.index(key_column.name)
    for row in mysql_rows(reader, schema, split):
        mine.add(row)
        keys.append(row[key_index])
    text_key = is_text_key(key_column, tinyint)
    if text_key and key_range is not None:
        doris = doris_rows_by_keys(ctx.sink.catalog, target, names, key_column.name, keys)
    else:
        start, end = key_range if key_range is not None else (None, None)
        unique = tuple(schema.primary_key) == (key_column.name,)
        doris = doris_rows_in_range(ctx.sink.catalog, target, names, key_column.name, start, end,
                                    unique_key=unique)
    for row in doris:
        theirs.add(row)
    detail = {"target": str(target)}
    if text_key and key_range is not None:
        detail["note"] = "character chunk key: Doris rows looked up by the chunk's MySQL keys"
    result = ParityResult(str(schema.table_id), key_range, mine.count, theirs.count, mine.checksum,
                          theirs.checksum, detail)
    logger.debug("parity of %s %s: MySQL %d rows, Doris %d rows, %s", schema.table_id, key_range or "(whole)",
                 mine.count, theirs.count, "equal" if result.ok else "DIFFERENT")
    return result
