"""Whole-table counts and checksums of many tables, a few statements for all (issue 30).

A database of hundreds of small tables made the parity checks cost one or more statements per
table and side, plus a schema read and a listing of the captured tables per table: seconds per
hundred tables for a few thousand rows each. Here a table compared whole (a chunk that is its
whole table, or ``tidemark verify``'s first look at a table) is one arm of a ``UNION ALL``
statement that computes ``COUNT(*)`` and the sum of the row hashes (``row_checksum.py``) of up to
:data:`TABLES_PER_STATEMENT` tables, on each side, the two sides at once; the schemas of all the
tables come from one ``information_schema`` read (``read_table_schemas``). No key range is
involved, so a character key's collation plays no part.

Only a table whose every column is hashed in the database, with a single Doris target of its own
and no transform, is compared so (:func:`whole_plans`); the callers take the others one by one.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cdc_core.model.schema import TableId
from cdc_core.mysql.discovery import read_table_schemas
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.parity.row_checksum import PAGE, ChecksumPlan, Segment, q

logger = logging.getLogger(__name__)

TABLES_PER_STATEMENT = 50


def whole_plans(ctx: PipelineContext, table_ids: list[str]) -> dict[str, ChecksumPlan]:
    """The checksum plans of the tables among ``table_ids`` that can be compared whole in both
    databases (see the module doc); the others, and tables MySQL no longer shows, are left out."""
    if not table_ids:
        return {}
    with ctx.connection() as conn:
        schemas = read_table_schemas(conn, [TableId.parse(t) for t in table_ids], skip_missing=True)
    captured = ctx.captured_tables() if ctx.sink.router.routes else []
    tinyint = ctx.definition.source.tinyint1_as_boolean
    plans: dict[str, ChecksumPlan] = {}
    for table_id in table_ids:
        tid = TableId.parse(table_id)
        schema = schemas.get(tid)
        if schema is None or ctx.has_transform(tid):
            continue
        targets = ctx.targets(tid)
        if len(targets) != 1 or (captured and ctx.sink.router.is_merged(targets[0], captured)):
            continue
        plan = ChecksumPlan.of(schema, targets[0], tinyint1_as_boolean=tinyint)
        if not plan.by_rows:
            plans[table_id] = plan
    return plans


def _parts(plans: dict[str, ChecksumPlan]) -> list[list[tuple[str, ChecksumPlan]]]:
    items = list(plans.items())
    return [items[i: i + TABLES_PER_STATEMENT] for i in range(0, len(items), TABLES_PER_STATEMENT)]


def mysql_wholes(conn: Any, plans: dict[str, ChecksumPlan]) -> dict[str, Segment]:
    """COUNT and checksum of each table, computed by MySQL, ``TABLES_PER_STATEMENT`` tables a statement."""
    out: dict[str, Segment] = {}
    for part in _parts(plans):
        sql = " UNION ALL ".join(
            f"SELECT {n}, COUNT(*), COALESCE(SUM({plan.mysql_row_hash()}), 0) FROM "
            f"{q(plan.schema.table_id.database)}.{q(plan.schema.table_id.table)}" for n, (_, plan) in enumerate(part))
        with conn.cursor() as cur:
            cur.execute(sql)
            for n, count, total in cur.fetchall():
                out[part[int(n)][0]] = Segment(int(count), int(total))
    return out


def doris_wholes(catalog: Any, plans: dict[str, ChecksumPlan]) -> dict[str, Segment]:
    """The same computed by Doris, per Doris database."""
    out: dict[str, Segment] = {}
    by_database: dict[str, dict[str, ChecksumPlan]] = {}
    for table_id, plan in plans.items():
        by_database.setdefault(plan.target.database, {})[table_id] = plan
    for database, chosen in by_database.items():
        for part in _parts(chosen):
            sql = " UNION ALL ".join(
                f"SELECT {n} AS n, COUNT(*) AS c, COALESCE(SUM({plan.doris_row_hash()}), 0) AS s FROM "
                f"{q(plan.target.table)}" for n, (_, plan) in enumerate(part))
            for n, count, total in catalog.execute(database, sql, limit=PAGE).rows:
                out[part[int(n)][0]] = Segment(int(count), int(total or 0))
    return out


def wholes_side_by_side(ctx: PipelineContext, plans: dict[str, ChecksumPlan],
                        mysql_known: dict[str, Segment] | None = None,
                        doris_known: dict[str, Segment] | None = None,
                        ) -> tuple[dict[str, Segment], dict[str, Segment]]:
    """MySQL's and Doris's whole-table segments of ``plans``, the two sides at once; MySQL is not
    asked for the tables of ``mysql_known`` (its side computed during the run's reads and commits,
    still valid: ``overlap.take``), nor Doris for those of ``doris_known`` (computed after an early
    group's commit, still valid: ``doris_ahead.take``)."""
    if not plans:
        return {}, {}
    known = mysql_known or {}
    ask = {table_id: plan for table_id, plan in plans.items() if table_id not in known}
    theirs = dict(doris_known or {})
    ask_doris = {table_id: plan for table_id, plan in plans.items() if table_id not in theirs}
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-parity") as pool:
        doris = pool.submit(doris_wholes, ctx.sink.catalog, ask_doris) if ask_doris else None
        mine = dict(known)
        if ask:
            with ctx.connection() as conn:
                mine.update(mysql_wholes(conn, ask))
        if doris is not None:
            theirs.update(doris.result())
        return mine, theirs
