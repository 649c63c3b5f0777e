"""Verification: parity between MySQL and Doris, a row count and an order-independent checksum.

The count and the checksum of a key range are computed inside both databases
(``cdc_core.pipeline.checksum``): each side turns a row into the same canonical text with its own
SQL, hashes and sums it, and only two numbers travel. The columns whose text the two engines
cannot render alike (floating point, TIMESTAMP, TIME, BIT, binary, JSON, spatial) are compared
the old way: rows are read from both sides, MySQL's converted with the snapshot path's own
conversion (``cdc_core.mysql.types``), both brought to one canonical text per value (numbers by
value, booleans as 0/1, datetimes without trailing fractional zeros, JSON re-serialised) and
hashed here (the sum of per-row SHA-1 prefixes modulo 2⁶⁴, so row order never matters).

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.connection import connect
from cdc_core.mysql.discovery import TableNotFoundError, chunk_key_column
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import TypeKind, kind_of
from cdc_core.pipeline import parity_overlap
from cdc_core.pipeline.checksum import (
    PAGE,
    ChecksumPlan,
    KeyRange,
    Segment,
    doris_literal,
    doris_row_hashes,
    doris_segment,
    doris_segments,
    mysql_row_hashes,
    mysql_segment,
    mysql_segments,
    q,
)
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.results import ParityResult
from cdc_core.pipeline.snapshot import chunk_records

logger = logging.getLogger(__name__)



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


# -- the service's checks ---------------------------------------------------------------------


def chunk_parity(ctx: PipelineContext, key: str) -> ParityResult:
    """Row count and checksum of the chunk's key range, MySQL against Doris."""
    record = chunk_records(ctx, [key])[0]
    table_id = TableId.parse(record.table_id)
    start = None if record.start is None else record.start[0]
    end = None if record.end is None else record.end[0]
    try:
        schema, key_column = _schema_and_chunk_key(ctx, table_id)
    except TableNotFoundError:
        return _gone(record.table_id, (start, end))
    split = SnapshotSplit(table_id, record.chunk_index, None if record.start is None else tuple(record.start),
                          None if record.end is None else tuple(record.end), (key_column.name,))
    return _parity(ctx, schema, lambda: SnapshotSplitReader.from_source(ctx.definition.source), split, key_column,
                   (start, end))


def chunks_parity(ctx: PipelineContext, keys: list[str], run_id: str | None = None) -> list[ParityResult]:
    """``chunk_parity`` of many chunks, in key order per table: a table whose chunks can be compared
    by range in the databases gets one statement per side for all its chunks (run side by side,
    the MySQL one split over ``MYSQL_STREAMS`` connections); the others chunk by chunk.

    ``run_id``: the Dagster run asking; MySQL's side of a chunk that this run computed during the
    chunk's commit, with the binlog still where it was then, is not read again
    (``cdc_core/pipeline/parity_overlap.py``)."""
    results: dict[str, ParityResult] = {}
    offset: dict[str, Any] | None = None
    for table in _tables(ctx, keys):
        if table.gone:
            for r in table.chunks:
                results[chunk_key(*r.key)] = _gone(table.table_id, (r.start[0] if r.start else None,
                                                                    r.end[0] if r.end else None))
            continue
        if table.plan is None:
            for record in table.chunks:
                results[chunk_key(*record.key)] = chunk_parity(ctx, chunk_key(*record.key))
            continue
        known: dict[str, Segment] = {}
        if run_id is not None:
            offset = offset or ctx.server_offset().to_dict()
            known = parity_overlap.take(ctx, run_id, offset, table.work)
        mine, theirs = _segments_side_by_side(ctx, table.plan, table.work, known)
        detail = {"target": str(table.plan.target), "in_database": [c.name for c in table.plan.in_db],
                  "statements": "batched"}
        for item, m, t in zip(table.work, mine, theirs, strict=True):
            results[item.key] = ParityResult(table.table_id, (item.key_range.start, item.key_range.end), m.count,
                                             t.count, m.checksum, t.checksum,
                                             {**detail, "mysql_side_during_commit": item.key in known})
    return [results[k] for k in keys]


def range_work(ctx: PipelineContext, keys: list[str]) -> list[parity_overlap.Work]:
    """The chunks among ``keys`` that ``chunks_parity`` compares by range in both databases, with
    their checksum plans (the ones whose MySQL side can be computed ahead)."""
    return [item for table in _tables(ctx, keys) for item in table.work]


@dataclass(frozen=True)
class _TableChunks:
    """One table's chunks among those asked, and how ``chunks_parity`` compares them."""

    table_id: str
    chunks: list[Any]
    gone: bool = False  # MySQL no longer has the table
    plan: ChecksumPlan | None = None  # None: chunk by chunk
    work: list[parity_overlap.Work] = field(default_factory=list)  # compared by range, with ``plan``


def _tables(ctx: PipelineContext, keys: list[str]) -> list[_TableChunks]:
    by_table: dict[str, list[Any]] = {}
    for record in chunk_records(ctx, keys):
        by_table.setdefault(record.table_id, []).append(record)
    tables = []
    for table_id, chunks in by_table.items():
        try:
            plan, key_column = _range_plan(ctx, TableId.parse(table_id))
        except TableNotFoundError:
            tables.append(_TableChunks(table_id, chunks, gone=True))
            continue
        work = [] if plan is None else [
            parity_overlap.Work(chunk_key(*r.key), plan, KeyRange(key_column.name, r.start[0] if r.start else None,
                                                                  r.end[0] if r.end else None)) for r in chunks]
        tables.append(_TableChunks(table_id, chunks, plan=plan, work=work))
    return tables


def _range_plan(ctx: PipelineContext, tid: TableId) -> tuple[ChecksumPlan | None, Column]:
    """The table's checksum plan when its chunks can be compared by range in both databases (every
    column hashed there, a numeric or temporal chunk key, its Doris rows its own), else None."""
    schema, key_column = _schema_and_chunk_key(ctx, tid)
    targets = ctx.targets(tid)
    tinyint = ctx.definition.source.tinyint1_as_boolean
    plan = ChecksumPlan.of(schema, targets[0], tinyint1_as_boolean=tinyint) if len(targets) == 1 else None
    if (plan is None or plan.by_rows or is_text_key(key_column, tinyint) or ctx.has_transform(tid)
            or ctx.sink.router.is_merged(targets[0], ctx.captured_tables())):
        return None, key_column
    return plan, key_column


MYSQL_STREAMS = 2  # MySQL statements in flight per batched parity (one per core here; Doris's runs beside)


def _segments_side_by_side(ctx: PipelineContext, plan: ChecksumPlan, work: list[parity_overlap.Work],
                           known: dict[str, Segment]) -> tuple[list[Segment], list[Segment]]:
    """Doris's statement and MySQL's (split into contiguous parts, each on its own connection) at once;
    MySQL's side of the chunks in ``known`` is not read again."""
    ranges = [item.key_range for item in work]
    missing = [item for item in work if item.key not in known]
    size = max(1, -(-len(missing) // MYSQL_STREAMS))
    parts = [[item.key_range for item in missing[i: i + size]] for i in range(0, len(missing), size)]

    def mysql_part(index: int) -> list[Segment]:
        if index == 0:
            with ctx.connection() as conn:
                return mysql_segments(conn, plan, parts[0])
        conn = connect(ctx.settings, text_values=True)
        try:
            return mysql_segments(conn, plan, parts[index])
        finally:
            conn.close()

    with ThreadPoolExecutor(max_workers=len(parts) + 1, thread_name_prefix="tidemark-parity") as pool:
        doris = pool.submit(doris_segments, ctx.sink.catalog, plan, ranges)
        mysql = [pool.submit(mysql_part, i) for i in range(len(parts))]
        read = iter([segment for future in mysql for segment in future.result()])
        mine = [known[item.key] if item.key in known else next(read) for item in work]
        return mine, doris.result()


def table_parity(ctx: PipelineContext, table_id: str) -> ParityResult:
    """Row count and checksum of the whole table, MySQL against Doris."""
    tid = TableId.parse(table_id)
    try:
        schema, key_column = _schema_and_chunk_key(ctx, tid)
    except TableNotFoundError:
        return _gone(table_id, None)
    split = SnapshotSplit(tid, 0, None, None, (key_column.name,))
    return _parity(ctx, schema, lambda: SnapshotSplitReader.from_source(ctx.definition.source), split, key_column,
                   None)


def _gone(table_id: str, key_range: tuple[Any, Any] | None) -> ParityResult:
    """Nothing to compare: MySQL no longer has the table (its chunks were skipped, its DROP is the stream's)."""
    return ParityResult(table_id, key_range, 0, 0, "", "",
                        {"skipped": "MySQL no longer has the table (dropped or renamed after it was captured)"})


def _schema_and_chunk_key(ctx: PipelineContext, table_id: TableId) -> tuple[TableSchema, Column]:
    schema = ctx.live_schema(table_id)
    return schema, chunk_key_column(schema, ctx.definition.source.chunk_key_column)


def _parity(ctx: PipelineContext, schema: TableSchema, reader_factory: Any, split: SnapshotSplit,
            key_column: Column, key_range: tuple[Any, Any] | None) -> ParityResult:
    tinyint = ctx.definition.source.tinyint1_as_boolean
    targets = ctx.targets(schema.table_id)
    if ctx.has_transform(schema.table_id) or len(targets) != 1:
        why = "the table has a transform" if len(targets) == 1 else "the table is routed to several targets"
        return ParityResult(str(schema.table_id), key_range, 0, 0, "", "", {"skipped": why})
    target = targets[0]
    if ctx.sink.router.is_merged(target, ctx.captured_tables()):
        return ParityResult(str(schema.table_id), key_range, 0, 0, "", "",
                            {"skipped": f"{target} merges several source tables"})
    plan = ChecksumPlan.of(schema, target, tinyint1_as_boolean=tinyint)
    text_key = is_text_key(key_column, tinyint)
    detail: dict[str, Any] = {"target": str(target), "in_database": [c.name for c in plan.in_db]}
    if text_key and key_range is not None:
        # MySQL's collation decides which rows the range holds; Doris's rows are looked up by key.
        detail["note"] = "character chunk key: Doris rows looked up by the chunk's MySQL keys"
        with ctx.connection() as conn:
            mine_rows = mysql_row_hashes(conn, plan, KeyRange(key_column.name, *key_range))
        theirs_rows = doris_row_hashes(ctx.sink.catalog, plan, None, keys=list(mine_rows))
        mine = Segment(sum(len(v) for v in mine_rows.values()), sum(sum(v) for v in mine_rows.values()))
        theirs = Segment(sum(len(v) for v in theirs_rows.values()), sum(sum(v) for v in theirs_rows.values()))
    else:
        bounds = KeyRange(key_column.name, *key_range) if key_range is not None else None
        with ctx.connection() as conn:
            mine = mysql_segment(conn, plan, bounds)
        theirs = doris_segment(ctx.sink.catalog, plan, bounds)
    mysql_checksum, doris_checksum = mine.checksum, theirs.checksum
    if plan.by_rows:
        # Columns without a text both engines agree on: compared by reading rows (key + those columns).
        detail["by_rows"] = [c.name for c in plan.by_rows]
        keys = [schema.column(n) for n in schema.primary_key] or [key_column]
        sub = schema.with_columns(tuple(dict.fromkeys([*keys, key_column, *plan.by_rows])))
        with reader_factory() as reader:
            rows_mine, rows_theirs = row_sets(ctx, sub, reader, split, key_column, key_range, target)
        mysql_checksum += f"/{rows_mine.checksum}"
        doris_checksum += f"/{rows_theirs.checksum}"
    result = ParityResult(str(schema.table_id), key_range, mine.count, theirs.count, mysql_checksum, doris_checksum,
                          detail)
    logger.debug("parity of %s %s: MySQL %d rows, Doris %d rows, %s", schema.table_id, key_range or "(whole)",
                 mine.count, theirs.count, "equal" if result.ok else "DIFFERENT")
    return result


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
