"""``tidemark verify``: is each captured table in Doris equal to MySQL, and if not, which rows differ?

Key-range segments are compared by count and checksum computed inside both databases
(``row_checksum.py``). The first segments are the snapshot's chunks (their ranges are in the
state store); a segment that differs is bisected at MySQL's median key until it holds at
most ``ROWS_PER_LISTING`` rows, and then both sides list that segment's keys with their row
hashes: the keys whose rows are missing on one side or hash differently are the answer (at most
``max_keys`` of them are kept). Equal segments cost two numbers each, so an equal table is
verified at the speed of the two databases' scans.

Many tables are first compared whole, a few statements for all of them (``whole_tables.py``): an
equal table then costs one arm of a ``UNION ALL`` per side, which is what keeps a database of
hundreds of small tables (or one big text-keyed table) from costing a round of statements per
table. Only a table that differs as a whole is compared segment by segment as above.

A table keyed by characters that differs is listed whole (key and row hash from both sides):
MySQL's collation and Doris's binary order would not agree on what a range holds. Columns the databases cannot
render alike (``ChecksumPlan.by_rows``) are compared by reading rows, as the parity checks do.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cdc_core.model.schema import TableId
from cdc_core.mysql.discovery import TableNotFoundError, chunk_key_column
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.parity.row_checksum import (
    PAGE,
    ChecksumPlan,
    KeyRange,
    Segment,
    differing_keys,
    doris_literal,
    doris_row_hashes,
    doris_segment,
    doris_segments,
    mysql_row_hashes,
    mysql_segment,
    mysql_segments,
    q,
    where_clause,
)
from cdc_core.pipeline.parity.row_compare import is_text_key, row_sets
from cdc_core.pipeline.parity.whole_tables import whole_plans, wholes_side_by_side
from cdc_core.state import ChunkRecord

logger = logging.getLogger(__name__)

ROWS_PER_LISTING = 2_000  # a differing segment this small is compared key by key
MAX_KEYS = 100


@dataclass(frozen=True)
class TableVerdict:
    """The outcome of verifying one table."""

    table_id: str
    target: str
    equal: bool
    mysql_rows: int = 0
    doris_rows: int = 0
    segments: int = 0
    differing_segments: int = 0
    differing_keys: tuple[tuple[Any, ...], ...] = ()
    keys_truncated: bool = False
    by_rows: tuple[str, ...] = ()
    skipped: str | None = None
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {
            "table": self.table_id, "target": self.target, "equal": self.equal, "mysql_rows": self.mysql_rows,
            "doris_rows": self.doris_rows, "segments": self.segments, "differing_segments": self.differing_segments,
            "differing_keys": [list(k) for k in self.differing_keys], "keys_truncated": self.keys_truncated,
            "compared_by_rows": list(self.by_rows), "skipped": self.skipped, "seconds": round(self.seconds, 3),
            "notes": list(self.notes),
        }


def _both_sides(conn: Any, catalog: Any, plan: ChecksumPlan, ranges: list[KeyRange]) -> list[tuple[Segment, Segment]]:
    """The first round's segments from both databases at once: Doris's side (one statement per
    :data:`PAGE` ranges) on a thread while MySQL computes its own, range by range. The two are
    separate servers: one after the other, a 5M-row table's check cost their sum (32.5 s of a
    116 s ``tidemark run --once`` on a loaded host, ``bench/RESULTS.md``), as ``chunk_parity``
    already avoided."""
    if not ranges:
        return []
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-verify-doris") as pool:
        theirs = pool.submit(lambda: [s for i in range(0, len(ranges), PAGE)
                                      for s in doris_segments(catalog, plan, ranges[i: i + PAGE])])
        mine = mysql_segments(conn, plan, ranges)
        return list(zip(mine, theirs.result(), strict=True))


def verify_tables(ctx: PipelineContext, table_ids: list[str], *, max_keys: int = MAX_KEYS) -> list[TableVerdict]:
    """``verify_table`` of each table, in order, the equal ones found by whole-table checksums
    computed for all of them at once (``whole_tables.py``); the others compared one by one."""
    started = time.perf_counter()
    plans = whole_plans(ctx, table_ids)
    mine, theirs = wholes_side_by_side(ctx, plans)
    each = (time.perf_counter() - started) / max(1, len(plans))
    verdicts: dict[str, TableVerdict] = {}
    for table_id, plan in plans.items():
        if table_id in mine and mine[table_id] == theirs.get(table_id):
            verdicts[table_id] = TableVerdict(table_id, str(plan.target), True, mine[table_id].count,
                                              theirs[table_id].count, 1, 0, seconds=each,
                                              notes=("compared whole, beside other tables in one statement per side",))
    logger.info("verify: %d of %d table(s) equal as a whole; the others compared segment by segment", len(verdicts),
                len(table_ids))
    return [verdicts.get(t) or verify_table(ctx, t, max_keys=max_keys) for t in table_ids]


def verify_table(ctx: PipelineContext, table_id: str, *, max_keys: int = MAX_KEYS,
                 rows_per_listing: int = ROWS_PER_LISTING) -> TableVerdict:
    """Compare one captured table in MySQL and Doris (see the module doc)."""
    started = time.perf_counter()
    tid = TableId.parse(table_id)
    try:
        schema = ctx.live_schema(tid)
    except TableNotFoundError:
        return TableVerdict(table_id, ",".join(map(str, ctx.targets(tid))), True,
                            skipped="MySQL no longer has the table (dropped or renamed after it was captured)")
    key_column = chunk_key_column(schema, ctx.definition.source.chunk_key_column)
    targets = ctx.targets(tid)
    if ctx.has_transform(tid) or len(targets) != 1:
        why = "the table has a transform" if len(targets) == 1 else "the table is routed to several targets"
        return TableVerdict(table_id, ",".join(map(str, targets)), True, skipped=why)
    target = targets[0]
    if ctx.sink.router.is_merged(target, ctx.captured_tables()):
        return TableVerdict(table_id, str(target), True, skipped=f"{target} merges several source tables")
    tinyint = ctx.definition.source.tinyint1_as_boolean
    plan = ChecksumPlan.of(schema, target, tinyint1_as_boolean=tinyint)
    catalog = ctx.sink.catalog
    keys: list[tuple] = []
    notes: list[str] = []
    with ctx.connection() as conn:
        if is_text_key(key_column, tinyint):
            notes.append("character key: every key listed from both sides")
            mine, theirs = mysql_row_hashes(conn, plan, None), doris_row_hashes(catalog, plan, None)
            keys = differing_keys(mine, theirs)
            mysql_rows = sum(len(v) for v in mine.values())
            doris_rows = sum(len(v) for v in theirs.values())
            segments, differing = 1, int(bool(keys))
        else:
            queue = [KeyRange(key_column.name, r.start[0] if r.start else None, r.end[0] if r.end else None)
                     for r in _chunks_of(ctx, table_id)] or [KeyRange(key_column.name)]
            mysql_rows = doris_rows = segments = differing = 0
            first_round = len(queue)
            computed = iter(_both_sides(conn, catalog, plan, queue))
            while queue:
                segment = queue.pop(0)
                if first_round:
                    mine_s, theirs_s = next(computed)
                else:
                    mine_s, theirs_s = mysql_segment(conn, plan, segment), doris_segment(catalog, plan, segment)
                segments += 1
                if first_round:
                    first_round -= 1
                    mysql_rows += mine_s.count
                    doris_rows += theirs_s.count
                if mine_s == theirs_s:
                    continue
                differing += 1
                if len(keys) > max_keys:
                    continue  # enough keys to show: the other differing segments are only counted
                larger = max(mine_s.count, theirs_s.count)
                middle = _median(conn, catalog, plan, segment, mine_s.count >= theirs_s.count, larger)
                if larger <= rows_per_listing or middle is None:
                    keys.extend(differing_keys(mysql_row_hashes(conn, plan, segment),
                                               doris_row_hashes(catalog, plan, segment)))
                else:
                    queue.extend([KeyRange(segment.column, segment.start, middle),
                                  KeyRange(segment.column, middle, segment.end)])
        by_rows_equal = True
        if plan.by_rows:
            names = [schema.column(n) for n in schema.primary_key] or [key_column]
            sub = schema.with_columns(tuple(dict.fromkeys([*names, key_column, *plan.by_rows])))
            split = SnapshotSplit(tid, 0, None, None, (key_column.name,))
            with SnapshotSplitReader.from_source(ctx.definition.source) as reader:
                rows_mine, rows_theirs = row_sets(ctx, sub, reader, split, key_column, None, target)
            by_rows_equal = (rows_mine.count, rows_mine.total) == (rows_theirs.count, rows_theirs.total)
            if not by_rows_equal:
                notes.append(f"columns {', '.join(c.name for c in plan.by_rows)} differ (compared by reading rows; "
                             "their keys are not listed)")
    equal = not keys and by_rows_equal and mysql_rows == doris_rows
    verdict = TableVerdict(table_id, str(target), equal, mysql_rows, doris_rows, segments, differing,
                           tuple(keys[:max_keys]), len(keys) > max_keys, tuple(c.name for c in plan.by_rows),
                           None, time.perf_counter() - started, tuple(notes))
    logger.info("verify %s: %s (%d MySQL rows, %d Doris rows, %d segment(s), %d differing key(s))", table_id,
                "equal" if equal else "DIFFERENT", mysql_rows, doris_rows, segments, len(keys))
    return verdict


def _chunks_of(ctx: PipelineContext, table_id: str) -> list[ChunkRecord]:
    with ctx.store.transaction(readonly=True) as tx:
        return sorted(tx.chunks(table_id=table_id), key=lambda c: c.chunk_index)


def _median(conn: Any, catalog: Any, plan: ChecksumPlan, segment: KeyRange, from_mysql: bool, count: int) -> Any:
    """The key in the middle of the segment (on the side with more rows); None when it cannot split it."""
    column = q(segment.column)
    if from_mysql:
        table = f"{q(plan.schema.table_id.database)}.{q(plan.schema.table_id.table)}"
        with conn.cursor() as cur:
            cur.execute(f"SELECT {column} FROM {table}{plan.mysql_where(segment, conn.escape)} ORDER BY {column} "
                        f"LIMIT 1 OFFSET {count // 2}")
            row = cur.fetchone()
    else:
        rows = catalog.execute(plan.target.database, f"SELECT {column} FROM {q(plan.target.table)}"
                               f"{where_clause(segment, doris_literal)} ORDER BY {column} LIMIT 1 OFFSET {count // 2}",
                               limit=1).rows
        row = rows[0] if rows else None
    middle = None if row is None else row[0]
    if middle is None or middle == segment.start:
        return None
    return middle
