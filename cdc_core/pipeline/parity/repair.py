"""``tidemark verify --repair``: mend the rows of a table that differ, while the stream runs.

Rows change where the binlog cannot see them (a fix run with ``sql_log_bin = 0``, a restore, a
replica that drifted). ``verify`` finds them (``table_verify.py``: key ranges compared by checksum,
the differing ones bisected down to rows); a repair then, per round:

1. takes the server's binlog position ``low`` (the low watermark);
2. reads from MySQL the rows of the differing keys (a plain consistent read, as a chunk's scan),
   and the keys of them MySQL still has;
3. loads them through the two-phase-commit sink: the rows as upserts, and for each differing key
   MySQL no longer has, a delete-sign row built from Doris's copy; every row carries ``low`` in
   the sequence column; commits, and verifies again (at most ``rounds`` times, until equal).

**Why ``low`` as the sequence, and why no backfill.** Doris keeps, per key, the row with the
highest sequence (a tie goes to the later load). A binlog change carries its rows event's *end*
offset, so a change the read could have missed ended after ``low``: its sequence is above the
repair's, and the stream's copy wins whenever it comes, before or after the repair's load — a
repair never reverts a newer binlog change. A change that ended at or before ``low`` is visible to
the read (it was committed when the position was taken: the same assumption a chunk's low
watermark makes), so the repair's row, which includes it, rightly wins; so does it over a chunk
row stamped with a high watermark equal to ``low`` (the binlog did not move since that chunk was
read: a tie, and the repair's load is the later one). Deletes follow the same order: a key
re-inserted after ``low`` keeps its row. So the read needs no high watermark and no backfill: the
stream's own rows correct anything newer than ``low``.

**Exactly once, crash safety.** Each round's loads get labels of their own
(``repair-<low>-<token>-upsert`` / ``-delete``), recorded (:data:`REPAIR_LOADS`) before they are
loaded; a repair killed between precommit and commit leaves them to the next repair, which
aborts them first. A repair is idempotent: loading the same rows again with the same sequence
changes nothing, and a re-run simply verifies, finds what is left and mends it.

Not repaired (the verdict says why): a table without a primary key (its rows cannot be told
apart), one with a transform or routed to several or merged targets (``verify`` skips those too),
a Doris table without the sequence column or the delete sign, and columns compared by reading
rows (``ChecksumPlan.by_rows``) whose keys ``verify`` does not list: resnapshot such a table.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.instrumentation.faults import fault_point
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import TypeKind
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.parity.row_checksum import ChecksumPlan, doris_literal, q
from cdc_core.pipeline.parity.table_verify import TableVerdict, verify_table
from cdc_core.state.keys import REPAIR_LOADS

logger = logging.getLogger(__name__)

MAX_KEYS_PER_ROUND = 10_000
"""Differing keys mended per round (each round verifies the table again)."""
KEYS_PER_QUERY = 500


@dataclass(frozen=True)
class TableRepair:
    """One table's repair: the rows loaded, the rounds, and the verdict of the last verify."""

    table_id: str
    verdict: TableVerdict
    upserted: int = 0
    deleted: int = 0
    rounds: int = 0
    not_repaired: str | None = None

    @property
    def equal(self) -> bool:
        return self.verdict.equal

    def as_dict(self) -> dict[str, Any]:
        return {**self.verdict.as_dict(), "repaired_upserts": self.upserted, "repaired_deletes": self.deleted,
                "repair_rounds": self.rounds, "not_repaired": self.not_repaired}


def repair_table(ctx: PipelineContext, table_id: str, *, max_keys: int = MAX_KEYS_PER_ROUND,
                 rounds: int = 5) -> TableRepair:
    """Verify ``table_id``, mend the rows that differ, verify again; up to ``rounds`` rounds."""
    upserted = deleted = done = 0
    _abort_leftovers(ctx, table_id)
    while True:
        verdict = verify_table(ctx, table_id, max_keys=max_keys)
        if verdict.skipped or verdict.equal:
            return TableRepair(table_id, verdict, upserted, deleted, done)
        why = _cannot_repair(ctx, table_id, verdict)
        if why is not None or done >= rounds:
            why = why or f"still different after {rounds} round(s) of repair (the table changes without binlog?)"
            logger.warning("repair of %s: %s", table_id, why)
            return TableRepair(table_id, verdict, upserted, deleted, done, why)
        u, d = _repair_keys(ctx, TableId.parse(table_id), TableId.parse(verdict.target),
                            list(verdict.differing_keys))
        upserted, deleted, done = upserted + u, deleted + d, done + 1
        logger.info("repair of %s, round %d: %d row(s) upserted, %d deleted", table_id, done, u, d)


def _cannot_repair(ctx: PipelineContext, table_id: str, verdict: TableVerdict) -> str | None:
    schema = ctx.live_schema(TableId.parse(table_id))
    if not schema.primary_key:
        return "the table has no primary key, so its rows cannot be told apart: resnapshot it"
    if not verdict.differing_keys:
        return ("the difference is in columns compared by reading rows, whose keys verify does not list "
                f"({', '.join(verdict.by_rows)}): resnapshot the table")
    table = ctx.sink.table(TableId.parse(verdict.target), refresh=True)
    if not table.unique or table.sequence_column is None:
        return (f"Doris table {verdict.target} is not a unique-key table with the sequence column, so a repair "
                "could overwrite newer rows: resnapshot it")
    if not ctx.sink.enable_delete:
        return "sink.enable-delete is false, so rows MySQL no longer has cannot be deleted"
    return None


def _key_columns(ctx: PipelineContext, schema: TableSchema, target: TableId) -> tuple[ChecksumPlan, list[Column]]:
    plan = ChecksumPlan.of(schema, target, tinyint1_as_boolean=ctx.definition.source.tinyint1_as_boolean)
    names = [n.lower() for n in schema.primary_key]
    key = [c for c in plan.in_db if c.name.lower() in names]
    if len(key) != len(names):
        raise RuntimeError(f"{schema.table_id}: a primary-key column is compared by reading rows; resnapshot the "
                           "table instead of repairing it")
    return plan, key


def _mysql_match(plan: ChecksumPlan, key: list[Column], values: tuple, escape: Any) -> str:
    parts = []
    for column, value in zip(key, values, strict=True):
        if value is None:
            parts.append(f"{q(column.name)} IS NULL")
        elif plan.kind(column) in (TypeKind.INT, TypeKind.UINT64):
            parts.append(f"{q(column.name)} = {int(value)}")  # the bare column: the index serves it
        else:
            parts.append(f"{plan.mysql_text(column)} = {escape(str(value))}")
    return "(" + " AND ".join(parts) + ")"


def _doris_match(plan: ChecksumPlan, key: list[Column], values: tuple) -> str:
    return "(" + " AND ".join(f"{plan.doris_text(c)} = {doris_literal(v)}" if v is not None else f"{q(c.name)} IS NULL"
                              for c, v in zip(key, values, strict=True)) + ")"


def _repair_keys(ctx: PipelineContext, table_id: TableId, target: TableId, keys: list[tuple]) -> tuple[int, int]:
    """Re-read ``keys`` from MySQL and load them (upserts, deletes) with the low watermark as sequence."""
    schema = ctx.live_schema(table_id)
    plan, key = _key_columns(ctx, schema, target)
    source = ctx.definition.source
    split = SnapshotSplit(table_id, 0, None, None, ())
    tables: list[pa.Table] = []
    present: set[tuple] = set()
    # ``low`` in the pipeline's epoch: after a failover it outranks the stream's older changes there
    with SnapshotSplitReader.from_source(source, epoch_reference=ctx.epoch_reference()) as reader, \
            ctx.connection() as conn:
        low = reader.current_offset()
        for i in range(0, len(keys), KEYS_PER_QUERY):
            part = keys[i: i + KEYS_PER_QUERY]
            where = " OR ".join(_mysql_match(plan, key, k, conn.escape) for k in part)
            with conn.cursor() as cur:  # the keys MySQL has, as verify renders them
                cur.execute(f"SELECT {', '.join(plan.mysql_text(c) for c in key)} FROM "
                            f"{q(table_id.database)}.{q(table_id.table)} WHERE {where}")
                present.update(tuple(None if v is None else str(v) for v in row) for row in cur.fetchall())
            tables.append(reader.scan(schema, split, where=where))
    sequence = low.sequence
    gone = [k for k in keys if tuple(None if v is None else str(v) for v in k) not in present]
    deletes: list[dict[str, Any]] = []
    catalog = ctx.sink.catalog
    for i in range(0, len(gone), KEYS_PER_QUERY):
        match = " OR ".join(_doris_match(plan, key, k) for k in gone[i: i + KEYS_PER_QUERY])
        result = catalog.execute(target.database, f"SELECT * FROM {q(target.table)} WHERE {match}",
                                 limit=KEYS_PER_QUERY * 2)
        for values in result.rows:
            row = dict(zip(result.columns, values, strict=True))
            row[DELETE_SIGN] = "1"
            row[SEQUENCE_COLUMN] = sequence
            deletes.append(row)
    rows = pa.concat_tables(tables) if tables else None
    upserts = 0 if rows is None else rows.num_rows
    token = uuid.uuid4().hex[:8]
    batch_ids = {"upsert": f"repair-{low.sequence}-{token}-upsert", "delete": f"repair-{low.sequence}-{token}-delete"}
    with ctx.store.transaction() as tx:
        REPAIR_LOADS.key(str(table_id)).put(tx, {"target": str(target), "batch_ids": list(batch_ids.values())})
    committables = []
    if upserts:
        committables.append(ctx.sink.load(target, batch_ids["upsert"], rows, sequence=sequence, fresh=True))
    if deletes:
        committables.append(ctx.sink.load(target, batch_ids["delete"], deletes, fresh=True))
    fault_point("repair.after_loads", table=str(table_id))
    ctx.sink.commit(committables)
    with ctx.store.transaction() as tx:
        REPAIR_LOADS.key(str(table_id)).delete(tx)
    logger.info("repair of %s: %d row(s) re-read from MySQL and %d deleted in %s, sequence %d (binlog %s)",
                table_id, upserts, len(deletes), target, sequence, low)
    return upserts, len(deletes)


def _abort_leftovers(ctx: PipelineContext, table_id: str) -> None:
    """Abort what a killed repair of the table left precommitted (its labels were recorded first)."""
    with ctx.store.transaction(readonly=True) as tx:
        left = REPAIR_LOADS.key(table_id).get(tx)
    if left is None:
        return
    target = TableId.parse(left["target"])
    ctx.sink.recover(probe=[(target, b) for b in left["batch_ids"]])
    with ctx.store.transaction() as tx:
        REPAIR_LOADS.key(table_id).delete(tx)
    logger.info("repair of %s: what an interrupted repair left precommitted was aborted", table_id)


__all__ = ["MAX_KEYS_PER_ROUND", "TableRepair", "repair_table"]
