"""Reloading a table after partition maintenance removed or replaced its rows without row events.

``ALTER TABLE t TRUNCATE PARTITION p`` (and ``DROP``, ``EXCHANGE``, MariaDB's ``CONVERT``
``PARTITION``, ``IMPORT TABLESPACE``) changes rows with no row event in the binlog, so the stream
alone would leave Doris with rows MySQL no longer has (and without the rows an exchange brought
in). The schema change (``cdc_core/pipeline/schema_change.py``) handles such a DDL in two parts:

1. **re-read**: every chunk of the table goes back to PENDING under its next generation and is
   read again (the snapshot path: watermarks, backfill, a two-phase-commit load whose rows carry
   the new high watermark in the sequence column). That brings every row MySQL has;
2. **sweep** (this module): a re-read only upserts, so the rows Doris holds that MySQL no longer
   has are deleted by a two-phase-commit stream load of delete-sign rows.

Which Doris rows are stale follows from the sequence column, without comparing key ranges (which
Doris and MySQL may order differently, by collation): once every chunk of the table is committed,
a key MySQL has carries at least its chunk's high watermark in Doris — the chunk's read stamped
it so, and the stream applies only changes past that watermark, stamped with their own, later,
offsets. So a row whose sequence is below the *smallest* high watermark of the table's chunks
(``threshold``) is one no read found: MySQL does not have it. Its delete row carries
``threshold``, which beats the stale row and loses to any later change of that key (whose offset
is past its chunk's watermark, so past ``threshold``). The sweep is therefore right whenever it
runs after the re-read commits, while the stream runs too, and running it again changes nothing.

The sweep's request is recorded (:data:`cdc_core.state.keys.RELOAD_REQUESTS`) in the transaction that marks the
chunks for reading, and is removed only once done: a crash between the two parts leaves it to the
next :func:`sweep_pending`, which the service runs after committing chunks and before every
binlog batch. Each page is one load under a deterministic label (``reload-<ddl>-<page>``), loaded
``fresh`` (what a crashed attempt precommitted under the label is aborted first) and committed
before the page number moves on; a label a crashed attempt already committed (its rows are gone
from the query since) moves the page number on.

Not swept, with a warning: a Doris table that several source tables are routed to (its rows of
the other tables carry their own watermarks), one without the sequence column or the delete sign
(not a unique-key table, or ``sink.enable-delete: false``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cdc_core.doris.catalog import quote_ident
from cdc_core.doris.errors import TransactionCommittedError
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.instrumentation.faults import fault_point
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.pipeline.context import PipelineContext, transform_rule_index
from cdc_core.pipeline.keys import chunk_key
from cdc_core.state import ChunkStatus
from cdc_core.state.keys import RELOAD_REQUESTS

logger = logging.getLogger(__name__)

PAGE = 10_000
"""Stale rows per delete load (the FE returns at most 10000 rows per query)."""


@dataclass(frozen=True)
class SweepResult:
    """One table's sweep: the rows deleted per Doris table, or why it waits or was skipped."""

    table_id: str
    deleted: dict[str, int]
    threshold: int | None = None
    waiting: str | None = None
    skipped: tuple[str, ...] = ()


def request_reload(tx: Any, table_id: TableId, ddl_offset: BinlogOffset, operation: str) -> list[str]:
    """Mark every committed chunk of ``table_id`` for reading again (PENDING, next generation)
    and record the sweep that must follow; returns the chunk keys. Called inside the state-store
    transaction that finishes the schema change."""
    keys: list[str] = []
    for record in tx.chunks(table_id=str(table_id)):
        if record.status is not ChunkStatus.COMMITTED:
            continue
        tx.update_chunk(record.table_id, record.chunk_index, status=ChunkStatus.PENDING,
                        generation=record.generation + 1, transactions=None)
        keys.append(chunk_key(record.table_id, record.chunk_index))
    RELOAD_REQUESTS.key(str(table_id)).put(tx, {"ddl_offset": ddl_offset.to_dict(), "operation": operation,
                                                "token": ddl_offset.sequence, "page": 0})
    return keys


def pending_reloads(ctx: PipelineContext) -> list[str]:
    """Tables whose sweep has not finished."""
    with ctx.store.transaction(readonly=True) as tx:
        return [key for key, _ in RELOAD_REQUESTS.items(tx)]


def sweep_pending(ctx: PipelineContext) -> list[SweepResult]:
    """Run every requested sweep whose table's chunks are all committed (the others wait)."""
    with ctx.store.transaction(readonly=True) as tx:
        requests = RELOAD_REQUESTS.items(tx)
    return [_sweep(ctx, table_id, request) for table_id, request in requests]


def _sweep(ctx: PipelineContext, table_id: str, request: dict[str, Any]) -> SweepResult:
    with ctx.store.transaction(readonly=True) as tx:
        records = tx.chunks(table_id=table_id)
        tables = sorted({c.table_id for c in tx.chunks()})
    unfinished = [chunk_key(r.table_id, r.chunk_index) for r in records if r.status is not ChunkStatus.COMMITTED]
    if unfinished:
        why = f"chunk(s) {', '.join(unfinished[:5])} not committed yet"
        logger.info("the sweep of %s after %s waits: %s", table_id, request.get("operation"), why)
        return SweepResult(table_id, {}, waiting=why)
    deleted: dict[str, int] = {}
    skipped: list[str] = []
    threshold: int | None = None
    gone = [r for r in records if "skipped" in (r.detail or {})]
    if gone:
        # The re-read found the table gone (dropped or renamed after the change): nothing was read, so
        # every Doris row would look stale. Its DROP or RENAME reaches Doris through the stream; the
        # rows stay as they are.
        why = "the table was gone from the server when it was read again (dropped or renamed since)"
        logger.warning("the rows of %s are not swept after %s: %s", table_id, request.get("operation"), why)
        skipped.append(f"{table_id}: {why}")
        records = []
    if records:
        threshold = min(BinlogOffset.from_dict(r.high_watermark).sequence for r in records)
        for target in ctx.targets(table_id):
            reason = _cannot_sweep(ctx, table_id, target, tables)
            if reason is not None:
                logger.warning("rows of %s that MySQL no longer has after %s are not deleted from Doris table %s: %s",
                               table_id, request.get("operation"), target, reason)
                skipped.append(f"{target}: {reason}")
                continue
            deleted[str(target)] = _sweep_target(ctx, table_id, target, threshold, request)
    with ctx.store.transaction() as tx:
        RELOAD_REQUESTS.key(table_id).delete(tx)
    logger.info("reload of %s after %s finished: stale rows deleted %s (sequence below %s)", table_id,
                request.get("operation"), deleted or "none", threshold)
    return SweepResult(table_id, deleted, threshold, skipped=tuple(skipped))


def _cannot_sweep(ctx: PipelineContext, table_id: str, target: TableId, tables: list[str]) -> str | None:
    others = [t for t in tables if t != table_id and target in ctx.targets(t)]
    if others:
        return (f"it also receives {', '.join(others)}, whose rows carry their own watermarks; delete the stale rows "
                "by hand, or re-snapshot the merged table")
    table = ctx.sink.table(target, refresh=True)
    if not table.unique or table.sequence_column is None:
        return ("it is not a unique-key table with the __tidemark_seq sequence column (tables Tidemark creates are); "
                "re-create it so, or delete the stale rows by hand")
    if not ctx.sink.enable_delete:
        return "sink.enable-delete is false"
    rule = transform_rule_index(ctx.definition, TableId.parse(table_id))
    if rule is not None and ctx.definition.transforms[rule].soft_delete:
        return (f"transform[{rule}] has converter-after-transform: SOFT_DELETE, under which deleted rows stay in "
                "Doris (these went without row events, so no '-D' marker reaches them)")
    return None


def _sweep_target(ctx: PipelineContext, table_id: str, target: TableId, threshold: int,
                  request: dict[str, Any]) -> int:
    """Delete, page by page, the rows of ``target`` whose sequence is below ``threshold``."""
    sink = ctx.sink
    stale = f"FROM {quote_ident(target.table)} WHERE {quote_ident(SEQUENCE_COLUMN)} < {threshold}"
    count = int(sink.catalog.execute(target.database, f"SELECT COUNT(*) {stale}").rows[0][0])
    total = 0
    page = int(request.get("page", 0))
    for _ in range(-(-count // PAGE) + 1):  # each page's rows leave the query once deleted
        result = sink.catalog.execute(target.database, f"SELECT * {stale} LIMIT {PAGE}", limit=PAGE)
        if not result.rows:
            return total
        rows = []
        for values in result.rows:
            row = dict(zip(result.columns, values, strict=True))
            row[DELETE_SIGN] = "1"
            row[SEQUENCE_COLUMN] = threshold
            rows.append(row)
        while True:
            try:
                committable = sink.load(target, f"reload-{request['token']}-{page}", rows, fresh=True)
                break
            except TransactionCommittedError:  # committed before a crash kept its page number: the next one
                logger.info("reload of %s: page %d was committed by an earlier attempt", table_id, page)
                page = _next_page(ctx, table_id, request, page)
        sink.commit([committable])
        fault_point("reload.after_page_commit", table=table_id, page=page)
        total += len(rows)
        page = _next_page(ctx, table_id, request, page)
        logger.info("reload of %s: %d stale row(s) deleted from %s", table_id, len(rows), target)
    raise RuntimeError(
        f"Doris table {target} still holds rows of {table_id} with {SEQUENCE_COLUMN} below {threshold} after "
        f"{total} delete-sign rows were committed: its sequence column is not function_column.sequence_col, or the "
        "deletes did not apply. Check the table's properties (SHOW CREATE TABLE); the sweep runs again next time")


def _next_page(ctx: PipelineContext, table_id: str, request: dict[str, Any], page: int) -> int:
    with ctx.store.transaction() as tx:
        request_key = RELOAD_REQUESTS.key(table_id)
        if request_key.get(tx) is not None:
            request_key.put(tx, {**request, "page": page + 1})
    return page + 1


__all__ = ["SweepResult", "pending_reloads", "request_reload", "sweep_pending"]
