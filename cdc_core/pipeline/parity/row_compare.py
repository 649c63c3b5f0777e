"""Rows read from both databases and hashed here: the comparison for what SQL cannot checksum alike.

The columns whose text MySQL and Doris cannot render alike (floating point, TIMESTAMP, TIME, BIT,
binary, JSON, spatial; ``ChecksumPlan.by_rows`` in ``row_checksum.py``) are compared by reading
rows from both sides, MySQL's converted with the snapshot path's own conversion
(``cdc_core.mysql.types``), both brought to one canonical text per value (numbers by value,
booleans as 0/1, datetimes without trailing fractional zeros, JSON re-serialised) and hashed here
(the sum of per-row SHA-1 prefixes modulo 2⁶⁴, so row order never matters). Used by the chunk
parity check (``chunk_parity.py``) and by ``tidemark verify`` (``table_verify.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import TypeKind, kind_of
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.parity.row_checksum import PAGE, doris_literal, q


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


def doris_rows_in_range(catalog: Any, target: TableId, columns: list[str], key: str,
                        start: Any, end: Any, *, unique_key: bool = True) -> Iterator[list[Any]]:
    """Rows of ``target`` with ``start <= key < end`` (None: unbounded), page by page.

    A unique key pages by key (``key > last``); a key with duplicates (a table without a primary
    key) pages by offset over an order of every column, so no row is skipped or seen twice.
    """
    select = ", ".join(q(c) for c in columns)
    bounds = []
    if start is not None:
        bounds.append(f"{q(key)} >= {doris_literal(start)}")
    if end is not None:
        bounds.append(f"{q(key)} < {doris_literal(end)}")
    order = q(key) if unique_key else ", ".join(q(c) for c in columns)
    last = None
    offset = 0
    while True:
        conditions = list(bounds)
        if last is not None:
            conditions.append(f"{q(key)} > {doris_literal(last)}")
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        paging = f"LIMIT {PAGE}" if unique_key else f"LIMIT {PAGE} OFFSET {offset}"
        rows = catalog.execute(
            target.database, f"SELECT {select} FROM {q(target.table)}{where} ORDER BY {order} {paging}", limit=PAGE,
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
    select = ", ".join(q(c) for c in columns)
    for i in range(0, len(keys), 1000):
        part = keys[i : i + 1000]
        values = ", ".join(doris_literal(k) for k in part)
        yield from (list(r) for r in catalog.execute(
            target.database, f"SELECT {select} FROM {q(target.table)} WHERE {q(key)} IN ({values}) LIMIT {PAGE}",
            limit=PAGE,
        ).rows)


def is_text_key(column: Column, tinyint1_as_boolean: bool) -> bool:
    """Keys whose Doris order (of the text Doris holds) is not MySQL's: compared by value, not range.

    MariaDB's UUID / INET6 / INET4 arrive as text, but the server orders them by their bytes."""
    return kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean) in (
        TypeKind.STRING, TypeKind.ENUM, TypeKind.SET, TypeKind.BINARY, TypeKind.JSON, TypeKind.UUID,
        TypeKind.INET6, TypeKind.INET4)


def row_sets(ctx: PipelineContext, schema: TableSchema, reader: Any, split: SnapshotSplit, key_column: Column,
              key_range: tuple[Any, Any] | None, target: TableId) -> tuple[RowSet, RowSet]:
    """The range's rows read from both sides and hashed here (the columns the databases cannot hash alike)."""
    tinyint = ctx.definition.source.tinyint1_as_boolean
    columns = list(schema.columns)
    names = [c.name for c in columns]
    mine, theirs = RowSet(columns, tinyint), RowSet(columns, tinyint)
    keys: list[Any] = []
    key_index = names.index(key_column.name)
    for row in mysql_rows(reader, schema, split):
        mine.add(row)
        keys.append(row[key_index])
    if is_text_key(key_column, tinyint) and key_range is not None:
        doris = doris_rows_by_keys(ctx.sink.catalog, target, names, key_column.name, keys)
    else:
        start, end = key_range if key_range is not None else (None, None)
        unique = tuple(schema.primary_key) == (key_column.name,)
        doris = doris_rows_in_range(ctx.sink.catalog, target, names, key_column.name, start, end, unique_key=unique)
    for row in doris:
        theirs.add(row)
    return mine, theirs
