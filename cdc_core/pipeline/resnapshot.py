"""``tidemark resnapshot``: read captured tables again from now, and delete what MySQL lost meanwhile.

Two incidents need it: the binlog the stream would resume from was purged (the changes since the
committed offset are lost to the binlog), and rows that changed where no binlog could see them.
Either way re-materializing the chunks is not enough: it upserts every row MySQL has, but a row
MySQL deleted while no binlog covered it would stay in Doris for ever.

This is the partition-maintenance reload (``cdc_core/pipeline/reload.py``) applied to every (or
the named) captured table, not a second mechanism:

1. the binlog is rotated (``FLUSH BINARY LOGS``, :func:`move_binlog`; without ``RELOAD`` the
   server's own writes must move it, else the request is refused naming the grant) so that the new
   chunks' high watermarks lie above every sequence Doris holds; then one state-store transaction marks
   every committed chunk of the tables PENDING under its next generation and records each table's
   sweep (:func:`reload.request_reload`, operation ``resnapshot``). When the stream's resume point
   is no longer on the server, it also drops the committed offset, so the stream restarts, as
   after a first snapshot, at the lowest high watermark of the new chunks
   (``HybridSplitAssigner.resume_offset``): the purged range is never read. Otherwise the
   committed offset stays and the chunks' new high watermarks filter the stream
   (``binlog_filter``), exactly as a first snapshot's do;
2. the chunks are read again by the normal snapshot path (watermarks, backfill, two-phase-commit
   loads whose rows carry the chunk's new high watermark in the sequence column);
3. the sweep deletes, once every chunk of a table is committed, the Doris rows whose sequence is
   below the table's lowest new high watermark: no re-read found them, so MySQL no longer has
   them (the reasoning, and why it is safe while the stream runs, is in ``reload.py``).

Why the sequence column and not a key-range diff or a swapped-in table: the sequence already
tells a row the re-read wrote from one it did not, without comparing key ranges Doris and MySQL
order differently (collations); the deletes obey the same order as every other load, so a
change the stream applies meanwhile is never undone; and no second table (twice the storage, a
rename the stream must not race) is needed.

Crash safety: step 1 is one transaction; a resnapshot under way is recognised by its sweep
requests, so running the command again continues it (:func:`in_progress`) instead of starting
over; steps 2 and 3 are the snapshot's and the sweep's own resumable protocols.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pymysql

from cdc_core.doris.catalog import qualified
from cdc_core.doris.table_creation import KeylessMode
from cdc_core.instrumentation.faults import fault_point
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.mysql.failover import align, check_gtids_available, failed_over
from cdc_core.mysql.hybrid_assigner import HybridSplitAssigner
from cdc_core.mysql.purge import BinlogPurgedError, ensure_offset_available
from cdc_core.mysql.server_check import ServerCheckError
from cdc_core.mysql.startup import StartupPlan
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.reload import request_reload
from cdc_core.pipeline.snapshot import finished_chunks
from cdc_core.state import ChunkStatus
from cdc_core.state.keys import COMMITTED_OFFSET, EPOCH_REFERENCE, PLAN_OFFSET, RELOAD_REQUESTS, STARTUP

logger = logging.getLogger(__name__)

OPERATION = "resnapshot"
"""The operation a resnapshot's sweep requests carry (a partition DDL's carry the DDL's name)."""


@dataclass(frozen=True)
class ResnapshotRequest:
    """What a resnapshot marked: the tables, their chunks to read, and whether the stream restarts."""

    tables: tuple[str, ...]
    chunk_keys: tuple[str, ...]
    restarts_stream: bool
    resumed: bool = False  # an earlier, unfinished resnapshot is being continued
    purged_offset: str | None = None

    def describe(self) -> str:
        how = ("continued" if self.resumed else "started")
        stream = (f"; the stream restarts at the new chunks' watermarks (binlog {self.purged_offset} was purged)"
                  if self.restarts_stream and self.purged_offset else "")
        return (f"resnapshot {how}: {len(self.tables)} table(s) ({', '.join(self.tables)}), "
                f"{len(self.chunk_keys)} chunk(s) to read{stream}")


def in_progress(ctx: PipelineContext) -> list[str]:
    """The tables of a resnapshot whose sweep has not finished (empty: none under way)."""
    with ctx.store.transaction(readonly=True) as tx:
        return sorted(t for t, request in RELOAD_REQUESTS.items(tx) if request.get("operation") == OPERATION)


def _pending_keys(ctx: PipelineContext, tables: Sequence[str]) -> list[str]:
    with ctx.store.transaction(readonly=True) as tx:
        return [chunk_key(c.table_id, c.chunk_index) for c in tx.chunks()
                if c.table_id in tables and c.status is not ChunkStatus.COMMITTED]


def purged_resume_point(ctx: PipelineContext) -> BinlogOffset | None:
    """The committed offset (before the first batch: where the stream would start, the snapshot's
    lowest high watermark) when its binlog file is no longer on the server, else None.

    After a failover not followed yet (the committed offset is another server's) its file name means
    nothing here: purged means the new server's binlogs no longer hold the transactions right after
    the committed GTID position (``cdc_core/mysql/failover.py``, ``check_gtids_available``)."""
    committed = COMMITTED_OFFSET.get(ctx.store) or _snapshot_resume_point(ctx)
    if committed is None:
        return None
    try:
        if failed_over(committed, ctx.server_offset()):
            check_gtids_available(ctx.settings, committed)
        else:
            ensure_offset_available(ctx.settings, committed)
    except BinlogPurgedError:
        return committed
    return None


def _snapshot_resume_point(ctx: PipelineContext) -> BinlogOffset | None:
    """Where the first batch would start (no batch committed yet): the snapshot's lowest high
    watermark, as ``cdc_core/pipeline/binlog_batch.py`` resumes; None before a startup plan."""
    plan = STARTUP.get(ctx.store)
    if plan is None:
        return None
    return HybridSplitAssigner.resume_offset(StartupPlan.from_dict(plan), finished_chunks(ctx),
                                             plan_offset=PLAN_OFFSET.get(ctx.store))


def request_resnapshot(ctx: PipelineContext, tables: Sequence[str] | None = None) -> ResnapshotRequest:
    """Mark the tables (default: every captured table) for reading again and record their sweeps.

    The caller has resolved what an earlier run left (``recovery.resolve_pending``). An unfinished
    resnapshot is continued as it is (its tables, whatever ``tables`` says now)."""
    under_way = in_progress(ctx)
    if under_way:
        keys = _pending_keys(ctx, under_way)
        request = ResnapshotRequest(tuple(under_way), tuple(keys), COMMITTED_OFFSET.get(ctx.store) is None,
                                    resumed=True)
        logger.info("%s: %s", ctx.definition.name, request.describe())
        return request
    with ctx.store.transaction(readonly=True) as tx:
        captured = sorted({c.table_id for c in tx.chunks()})
    if not captured:
        raise ValueError(f"pipeline '{ctx.definition.name}' has no snapshot yet: there is nothing to read again "
                         "(`tidemark run PIPELINE.yaml --once` takes the first snapshot)")
    chosen = sorted(set(tables)) if tables else captured
    unknown = sorted(set(chosen) - set(captured))
    if unknown:
        raise ValueError(f"table(s) {', '.join(unknown)} are not captured by pipeline '{ctx.definition.name}' "
                         f"(captured: {', '.join(captured)})")
    purged = purged_resume_point(ctx)
    if purged is not None and set(chosen) != set(captured):
        raise ValueError(
            f"the binlog the stream resumes from ({purged}) was purged, so every captured table missed changes: "
            f"resnapshot them all (drop --table; {len(captured) - len(chosen)} table(s) were left out)")
    # in the pipeline's epoch (after a failover: the stream's on this server; a failover followed by
    # a purge before any batch was committed there: the epoch after the purged resume point's)
    at = align(ctx.server_offset(), ctx.epoch_reference() or purged)
    move_binlog(ctx, past=at)  # first: refused for want of RELOAD, nothing has been changed
    _recreate_keyless(ctx, chosen)
    keys: list[str] = []
    with ctx.store.transaction() as tx:
        for table_id in chosen:
            keys += request_reload(tx, TableId.parse(table_id), at, OPERATION)
        if purged is not None:
            # The stream starts again at the new chunks' lowest high watermark, past the purged range;
            # the dropped offset still decides the epoch of those watermarks (after a failover: ≥ 1).
            COMMITTED_OFFSET.delete(tx)
            EPOCH_REFERENCE.put(tx, purged)
    request = ResnapshotRequest(tuple(chosen), tuple(_pending_keys(ctx, chosen)), purged is not None,
                                purged_offset=None if purged is None else str(purged))
    logger.warning("%s: %s", ctx.definition.name, request.describe())
    fault_point("resnapshot.after_request", tables=",".join(chosen))
    return request


def _recreate_keyless(ctx: PipelineContext, tables: Sequence[str]) -> None:
    """Drop the DUPLICATE-model Doris tables of keyless sources (created by an earlier release, or
    under ``table.create.keyless: append``) when the sink now creates them exact: the re-read
    creates them anew, keyed by the row identity (``cdc_core/doris/row_identity.py``). Re-reading
    into the old table would append every row again. Tidemark creates DUPLICATE tables only for
    keyless sources, so a keyed source's table is never dropped here."""
    for name in tables:
        source = TableId.parse(name)
        if ctx.sink.keyless_mode(source) is not KeylessMode.EXACT:
            continue
        for target in ctx.targets(source):
            info = ctx.sink.catalog.table_info(target.database, target.table)
            if info is None or info.unique:
                continue
            logger.warning("%s: Doris table %s (%s, of keyless %s) is dropped and created anew keyed by its rows' "
                           "identity, so that updates and deletes apply exactly", ctx.definition.name, target,
                           info.keys_type, source)
            ctx.sink.catalog.execute(target.database, f"DROP TABLE {qualified(target.database, target.table)}")
            ctx.sink.forget(target)


MOVE_WAIT_S = 10.0
"""Without ``RELOAD``: how long a resnapshot waits for the server's own writes to move the binlog."""
_NEEDS_PRIVILEGE = 1227  # ER_SPECIFIC_ACCESS_DENIED_ERROR: "you need (at least one of) the RELOAD privilege(s)"


def move_binlog(ctx: PipelineContext, *, past: BinlogOffset | None = None) -> None:
    """Rotate the binlog (``FLUSH BINARY LOGS``), so that every chunk read from now on gets a high
    watermark above every sequence Doris holds (all of them are at most the position now).

    Without it, a resnapshot of rows changed without binlog while the binlog stood still would give
    the re-read rows the very position the stale rows carry, and the sweep (``sequence < lowest new
    high watermark``) could not tell them apart. Needs ``RELOAD``. Without it and with ``past`` (a
    resnapshot: the position its request was made at), the server's own writes may move the binlog
    beyond ``past`` instead: waited for up to :data:`MOVE_WAIT_S`, else :class:`ServerCheckError`
    naming the grant (nothing is marked yet: the command can simply be run again). Without ``past``,
    a warning."""
    try:
        with ctx.connection() as conn, conn.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
        return
    except pymysql.MySQLError as exc:
        reason = exc.args[-1] if exc.args else exc
        if past is None or not exc.args or exc.args[0] != _NEEDS_PRIVILEGE:
            if past is not None:
                raise
            logger.warning("%s: could not rotate the binlog (FLUSH BINARY LOGS: %s; it needs the RELOAD privilege): "
                           "if nothing is written to the binlog before the chunks are read, rows deleted without "
                           "binlog may stay in Doris (write anything, then resnapshot again)", ctx.definition.name,
                           reason)
            return
    deadline = time.monotonic() + MOVE_WAIT_S
    while ctx.aligned_offset() <= past:
        if time.monotonic() > deadline:
            raise ServerCheckError([
                f"'{ctx.settings.user}' lacks the RELOAD privilege, which a resnapshot needs to rotate the binlog "
                "(FLUSH BINARY LOGS) so that the rows it reads again outrank every stale one in Doris; nothing was "
                f"written to the binlog for {MOVE_WAIT_S:.0f} s either, which would do as well: GRANT RELOAD ON *.* "
                f"TO '{ctx.settings.user}'@'<host>'; then run the resnapshot again (nothing was marked)"])
        time.sleep(0.2)
    logger.info("%s: the binlog moved past %s by the server's own writes (no RELOAD for FLUSH BINARY LOGS)",
                ctx.definition.name, past)


__all__ = ["OPERATION", "ResnapshotRequest", "in_progress", "move_binlog", "purged_resume_point", "request_resnapshot"]
