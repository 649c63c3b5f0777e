"""The parity checks after a snapshot run: each chunk, and a whole table, MySQL against Doris.

``chunk_parity`` / ``chunks_parity`` back the ``chunk_parity`` asset check that follows a run's
commits, ``table_parity`` the ``table_parity`` check. A key range's row count and checksum are
computed inside both databases (``row_checksum.py``): each side turns a row into the same
canonical text with its own SQL, hashes and sums it, and only two numbers travel. The columns
whose text the two engines cannot render alike are compared by reading rows (``row_compare.py``).
MySQL's side may already have been computed during the commits (``overlap.py``).

Ranges: a chunk of a numeric or temporal key is compared by the same half-open range on both
sides. A character key's chunks are ranges in MySQL's collation, which Doris (comparing bytes)
cannot reproduce: such a table is compared by the byte order of the key's UTF-8 text on both
sides (``row_checksum.mysql_segments_by_bytes``), in segments cut at the chunks' bounds sorted by
their bytes, segment i reported as the table's i-th chunk (MySQL's statement in two parts of its own
key order, run at once, their segments added up: ``_parts``). Where the collation orders the bounds
as their bytes do (keys of one case, no accents or trailing spaces) segment i holds chunk i's rows
exactly; where it does not, the segments still cover the table once, and the result's
``key_order`` detail says the ranges are by bytes. A table with columns compared by reading rows
(``ChecksumPlan.by_rows``) and a character key keeps the slower path: the chunk's rows in MySQL,
looked up by key in Doris.

A chunk that is its whole table (every table of one chunk: a database of small tables) is
compared whole, beside the other such tables, in a few ``UNION ALL`` statements per side for all
of them (``whole_tables.py``), whatever its key: no range, so no collation, is involved. Doris's
side of those a run committed early (in groups, within Doris's running-transaction limit) may
already have been computed after their group's commit (``doris_ahead.py``).

A table with a transform, routed to several targets, or merged with others into one target is
not compared (its Doris rows are not the source's rows); the result says why it was skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.connection import connect
from cdc_core.mysql.discovery import TableNotFoundError, chunk_key_column
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import TypeKind, kind_of
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.parity import doris_ahead, overlap
from cdc_core.pipeline.parity.row_checksum import (
    ChecksumPlan,
    KeyRange,
    Segment,
    doris_row_hashes,
    doris_segment,
    doris_segments,
    doris_segments_by_bytes,
    key_bytes_order,
    mysql_row_hashes,
    mysql_segment,
    mysql_segments,
    mysql_segments_by_bytes,
)
from cdc_core.pipeline.parity.row_compare import is_text_key, row_sets
from cdc_core.pipeline.parity.whole_tables import whole_plans, wholes_side_by_side
from cdc_core.pipeline.results import ParityResult
from cdc_core.pipeline.snapshot import chunk_records
from cdc_core.state import ChunkRecord

logger = logging.getLogger(__name__)

T = TypeVar("T")


def chunk_parity(ctx: PipelineContext, key: str) -> ParityResult:
    """Row count and checksum of the chunk's key range, MySQL against Doris."""
    tables = _tables(ctx, [key])
    if tables and tables[0].bounds is not None:  # a character key: by the bytes of its text, for the table
        return chunks_parity(ctx, [key])[0]
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
    (``cdc_core/pipeline/parity/overlap.py``)."""
    results: dict[str, ParityResult] = {}
    offset: dict[str, Any] | None = None
    whole, rest = _whole_chunks(ctx, keys)
    plans = whole_plans(ctx, sorted({r.table_id for r in whole.values()}))
    early: dict[str, Segment] = {}  # by table: MySQL's side this run computed during the reads and commits
    ahead: dict[str, Segment] = {}  # by table: Doris's side this run computed after an early group's commit
    if run_id is not None and plans:
        offset = ctx.server_offset().to_dict()
        found = overlap.take(ctx, run_id, offset, [overlap.Work(key, plans[r.table_id], None)
                                                   for key, r in whole.items() if r.table_id in plans])
        early = {whole[key].table_id: segment for key, segment in found.items()}
        found = doris_ahead.take(ctx, run_id, offset, {key: plans[r.table_id] for key, r in whole.items()
                                                       if r.table_id in plans})
        ahead = {whole[key].table_id: segment for key, segment in found.items()}
    mine_w, theirs_w = wholes_side_by_side(ctx, plans, mysql_known=early, doris_known=ahead)
    for key, record in whole.items():
        plan = plans.get(record.table_id)
        if plan is None or record.table_id not in mine_w:
            rest.append(key)
            continue
        m, t = mine_w[record.table_id], theirs_w.get(record.table_id, Segment(0, 0))
        results[key] = ParityResult(record.table_id, (None, None), m.count, t.count, m.checksum, t.checksum,
                                    {"target": str(plan.target), "in_database": [c.name for c in plan.in_db],
                                     "statements": "batched over tables",
                                     "mysql_side_during_commit": record.table_id in early,
                                     "doris_side_after_group_commit": record.table_id in ahead})
    for table in _tables(ctx, rest):
        if table.gone:
            for r in table.chunks:
                results[chunk_key(*r.key)] = _gone(table.table_id, (r.start[0] if r.start else None,
                                                                    r.end[0] if r.end else None))
            continue
        if table.plan is None:
            for record in table.chunks:
                results[chunk_key(*record.key)] = chunk_parity(ctx, chunk_key(*record.key))
            continue
        if table.bounds is not None:
            results.update(_by_bytes(ctx, table))
            continue
        known: dict[str, Segment] = {}
        if run_id is not None:
            offset = offset or ctx.server_offset().to_dict()
            known = overlap.take(ctx, run_id, offset, table.work)
        mine, theirs = _segments_side_by_side(ctx, table.plan, table.work, known)
        detail = {"target": str(table.plan.target), "in_database": [c.name for c in table.plan.in_db],
                  "statements": "batched"}
        for item, m, t in zip(table.work, mine, theirs, strict=True):
            results[item.key] = ParityResult(table.table_id, (item.key_range.start, item.key_range.end), m.count,
                                             t.count, m.checksum, t.checksum,
                                             {**detail, "mysql_side_during_commit": item.key in known})
    return [results[k] for k in keys]


def range_work(ctx: PipelineContext, keys: list[str]) -> list[overlap.Work]:
    """The chunks among ``keys`` that ``chunks_parity`` compares by range in both databases, with
    their checksum plans (the ones whose MySQL side can be computed ahead: not a character key's,
    which is one statement for the whole table)."""
    _, rest = _whole_chunks(ctx, keys)  # whole-table chunks: a few statements for all of them in the check
    return [item for table in _tables(ctx, rest) if table.bounds is None for item in table.work]


def whole_chunk_tables(ctx: PipelineContext, keys: list[str]) -> dict[str, str]:
    """The chunks among ``keys`` that are their whole table, with their table: ``chunks_parity``
    compares them many tables a statement, and MySQL's side of that can be computed ahead too
    (``overlap.alongside``'s ``whole``)."""
    return {key: record.table_id for key, record in _whole_chunks(ctx, keys)[0].items()}


def _whole_chunks(ctx: PipelineContext, keys: list[str]) -> tuple[dict[str, ChunkRecord], list[str]]:
    """The chunks among ``keys`` that are their whole table (a table of one chunk: every small
    table), compared together (``whole_tables.py``); and the other keys."""
    whole = {chunk_key(*r.key): r for r in chunk_records(ctx, keys) if r.start is None and r.end is None}
    return whole, [k for k in keys if k not in whole]


@dataclass(frozen=True)
class _TableChunks:
    """One table's chunks among those asked, and how ``chunks_parity`` compares them."""

    table_id: str
    chunks: list[Any]
    gone: bool = False  # MySQL no longer has the table
    plan: ChecksumPlan | None = None  # None: chunk by chunk
    work: list[overlap.Work] = field(default_factory=list)  # compared by range, with ``plan``
    # A character key: the table's chunk bounds sorted by their bytes (``work``'s ranges are the
    # segments between them), and the key column.
    bounds: list[Any] | None = None
    key_column: Column | None = None
    positions: dict[str, int] = field(default_factory=dict)  # chunk key -> segment
    bounds_alike: bool = True  # the bytes order the bounds as MySQL's collation does
    cuts: list[Any] = field(default_factory=list)  # the chunks' starts in MySQL's order (the first's excepted)


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
        if plan is not None and is_text_key(key_column, ctx.definition.source.tinyint1_as_boolean):
            bounds, position, alike, cuts = _bytes_segments(ctx, table_id)
            if all(r.key in position for r in chunks):
                work = [overlap.Work(chunk_key(*r.key), plan, _segment(key_column, bounds, position[r.key]))
                        for r in chunks]
                tables.append(_TableChunks(table_id, chunks, plan=plan, work=work, bounds=bounds,
                                           key_column=key_column, bounds_alike=alike,
                                           positions={chunk_key(*r.key): position[r.key] for r in chunks},
                                           cuts=cuts))
                continue
            plan = None  # the plan's chunks do not cut the key at distinct bounds: chunk by chunk
        work = [] if plan is None else [
            overlap.Work(chunk_key(*r.key), plan, KeyRange(key_column.name, r.start[0] if r.start else None,
                                                                  r.end[0] if r.end else None)) for r in chunks]
        tables.append(_TableChunks(table_id, chunks, plan=plan, work=work))
    return tables


def _bytes_segments(ctx: PipelineContext, table_id: str) -> tuple[list[Any], dict[tuple, int], bool, list[Any]]:
    """The table's chunk bounds sorted by their bytes; each chunk's segment (its place in chunk
    order), none when the bounds do not cut the table into as many segments as it has chunks;
    whether the bytes order the bounds as the chunks (MySQL's collation) do; and the chunks' starts
    in chunk order (MySQL's), the first's excepted: where MySQL's side may be cut into parts."""
    with ctx.store.transaction(readonly=True) as tx:
        # the table's records only: a pipeline of many tables does not parse every table's per table
        chunks: list[ChunkRecord] = sorted(tx.chunks(table_id=table_id), key=lambda c: c.chunk_index)
    ends = [c.end[0] for c in chunks if c.end]
    bounds = sorted(set(ends) | {c.start[0] for c in chunks if c.start}, key=key_bytes_order)
    alike = [key_bytes_order(e) for e in ends] == [key_bytes_order(b) for b in bounds]
    cuts = [c.start[0] for c in chunks[1:] if c.start]
    if len(bounds) + 1 != len(chunks) or len({key_bytes_order(b) for b in bounds}) != len(bounds):
        return bounds, {}, alike, cuts
    return bounds, {c.key: i for i, c in enumerate(chunks)}, alike, cuts


def _segment(column: Column, bounds: list[Any], i: int) -> KeyRange:
    return KeyRange(column.name, bounds[i - 1] if i > 0 else None, bounds[i] if i < len(bounds) else None)


def _by_bytes(ctx: PipelineContext, table: _TableChunks) -> dict[str, ParityResult]:
    """A character-keyed table's chunks, by the byte order of the key on both sides (module doc):
    one statement per side for the whole table, run side by side."""
    assert table.plan is not None and table.bounds is not None and table.key_column is not None
    plan, bounds, column = table.plan, table.bounds, table.key_column

    # MySQL's statement in MYSQL_STREAMS parts cut at chunk starts (ranges of MySQL's own order, which
    # its key index serves), each on its own connection, their segments added up: its side is the
    # slower one (200k rows: ~0.13 s against Doris's ~0.04 s in one statement)
    parts = _parts(column.name, table.cuts)

    def mysql_part(index: int) -> list[Segment]:
        return _on_part_connection(ctx, index, lambda conn: mysql_segments_by_bytes(conn, plan, column, bounds,
                                                                                    parts[index]))

    with ThreadPoolExecutor(max_workers=len(parts) + 1, thread_name_prefix="tidemark-parity") as pool:
        doris = pool.submit(doris_segments_by_bytes, ctx.sink.catalog, plan, column, bounds)
        counted = [pool.submit(mysql_part, i) for i in range(len(parts))]
        sides = [future.result() for future in counted]
        mine = [Segment(sum(s[i].count for s in sides), sum(s[i].total for s in sides)) for i in range(len(bounds) + 1)]
        theirs = doris.result()
    detail: dict[str, Any] = {"target": str(plan.target), "in_database": [c.name for c in plan.in_db],
                              "statements": "batched", "mysql_side_during_commit": False,
                              "key_order": "bytes of the key's UTF-8 text, on both sides"}
    if not table.bounds_alike:
        detail["note"] = ("MySQL's collation orders this table's chunk bounds unlike their bytes: each result "
                          "covers the range between two bounds in byte order (all of them cover the table once)")
    out = {}
    for item in table.work:
        i = table.positions[item.key]
        out[item.key] = ParityResult(table.table_id, (item.key_range.start, item.key_range.end), mine[i].count,
                                     theirs[i].count, mine[i].checksum, theirs[i].checksum, detail)
    return out


def _on_part_connection(ctx: PipelineContext, index: int, compute: Callable[[Any], T]) -> T:
    """``compute(conn)`` for part ``index`` of a side run in parts at once: the first on the context's
    connection, each other on a connection of its own, closed after."""
    if index == 0:
        with ctx.connection() as conn:
            return compute(conn)
    conn = connect(ctx.settings, text_values=True)
    try:
        return compute(conn)
    finally:
        conn.close()


def _parts(column: str, cuts: list[Any]) -> list[KeyRange | None]:
    """The whole key in up to :data:`MYSQL_STREAMS` contiguous ranges cut at some of ``cuts`` (in
    MySQL's order): every row in exactly one (a NULL key in none, as the segments leave it out)."""
    if MYSQL_STREAMS < 2 or not cuts:
        return [None]
    chunks = len(cuts) + 1  # as even in chunks as they allow: part i ends where chunk chunks * i // STREAMS starts
    picked = [cuts[chunks * i // MYSQL_STREAMS - 1] for i in range(1, MYSQL_STREAMS) if chunks * i // MYSQL_STREAMS]
    edges = [None, *dict.fromkeys(picked), None]  # distinct, in order
    return [KeyRange(column, edges[i], edges[i + 1]) for i in range(len(edges) - 1)]


def _range_plan(ctx: PipelineContext, tid: TableId) -> tuple[ChecksumPlan | None, Column]:
    """The table's checksum plan when its chunks can be compared by range in both databases (every
    column hashed there, a chunk key whose text both sides order alike: a number or a time, or a
    character key by its bytes; its Doris rows its own), else None."""
    schema, key_column = _schema_and_chunk_key(ctx, tid)
    targets = ctx.targets(tid)
    tinyint = ctx.definition.source.tinyint1_as_boolean
    plan = ChecksumPlan.of(schema, targets[0], tinyint1_as_boolean=tinyint) if len(targets) == 1 else None
    by_bytes = kind_of(key_column, tinyint1_as_boolean=tinyint) in _BYTE_ORDERED_KEYS
    if (plan is None or plan.by_rows or (is_text_key(key_column, tinyint) and not by_bytes)
            or ctx.has_transform(tid)
            or ctx.sink.router.is_merged(targets[0], ctx.captured_tables())):
        return None, key_column
    return plan, key_column


# Keys whose text Doris holds and MySQL renders alike (``ChecksumPlan.mysql_text``): comparable by its bytes.
_BYTE_ORDERED_KEYS = frozenset({TypeKind.STRING, TypeKind.ENUM, TypeKind.SET, TypeKind.UUID, TypeKind.INET6,
                                TypeKind.INET4})
MYSQL_STREAMS = 2  # MySQL statements in flight per batched parity (one per core here; Doris's runs beside)


def _segments_side_by_side(ctx: PipelineContext, plan: ChecksumPlan, work: list[overlap.Work],
                           known: dict[str, Segment]) -> tuple[list[Segment], list[Segment]]:
    """Doris's statement and MySQL's (split into contiguous parts, each on its own connection) at once;
    MySQL's side of the chunks in ``known`` is not read again."""
    ranges = [item.key_range for item in work]
    missing = [item for item in work if item.key not in known]
    size = max(1, -(-len(missing) // MYSQL_STREAMS))
    parts = [[item.key_range for item in missing[i: i + size]] for i in range(0, len(missing), size)]

    def mysql_part(index: int) -> list[Segment]:
        return _on_part_connection(ctx, index, lambda conn: mysql_segments(conn, plan, parts[index]))

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
