"""Snapshot chunks through the exactly-once protocol: run (prepare), commit, abort.

``run_chunks`` marks the chunks RUNNING, has the executor read and precommit them, and records
their transactions as PREPARED; nothing is visible yet. ``commit_chunks`` makes them visible and
marks them COMMITTED; ``abort_chunks`` undoes them. Both are idempotent, so a hook that runs
twice, or recovery after a crash, does no harm. A chunk left RUNNING by a crash has loads no
record names: they are found by their deterministic labels (``abandon_chunks``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cdc_core.doris.errors import DorisAuthError, DorisConnectionError, DorisUnavailableError
from cdc_core.doris.labels import snapshot_batch_id
from cdc_core.instrumentation.faults import fault_point
from cdc_core.instrumentation.phases import span
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.chunk_splitter import SplitOptions
from cdc_core.mysql.discovery import DiscoveryError, TableNotFoundError, chunk_key_column
from cdc_core.mysql.finished_chunk import FinishedChunk
from cdc_core.mysql.snapshot_assigner import AssignerState
from cdc_core.pipeline.commit_window import CommitWindow
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.executor import ChunkOutcome, ChunkTask, PipelineExecutor, TableWork
from cdc_core.pipeline.keys import chunk_key, parse_chunk_key
from cdc_core.pipeline.planning import planned_split_options
from cdc_core.pipeline.results import ChunkResult
from cdc_core.pipeline.txn_groups import txn_groups
from cdc_core.state import ChunkRecord, ChunkStatus
from cdc_core.state.keys import ASSIGNER_STATE, TABLE_ROWS

logger = logging.getLogger(__name__)


def chunk_records(ctx: PipelineContext, keys: list[str]) -> list[ChunkRecord]:
    """The records of these chunk keys, in the order given; a key not in the plan is a KeyError."""
    wanted = [parse_chunk_key(k) for k in keys]
    with ctx.store.transaction(readonly=True) as tx:
        by_key = tx.chunks_of(wanted)
    missing = [chunk_key(t, i) for t, i in wanted if (t, i) not in by_key]
    if missing:
        raise KeyError(
            f"chunk(s) {', '.join(missing[:5])} are not in the split plan; materialize snapshot_splits "
            "(or run `tidemark run --once`) to plan the snapshot first"
        )
    return [by_key[w] for w in wanted]


def run_chunks_bounded(ctx: PipelineContext, executor: PipelineExecutor, keys: list[str],
                       after_group: Callable[[list[str]], None] | None = None) -> list[ChunkResult]:
    """``run_chunks`` within ``tidemark.doris.max-running-txns-per-db``: chunks whose loads would
    hold more transactions in one Doris database at once are run through a commit window
    (``commit_window.py``): a chunk's loads begin only when they fit beside those held, and the
    finished chunks are committed early while the others are read; the chunks still held when
    every chunk has been read (at most the bound) are left PREPARED, as a run within the bound is,
    for the run's commit.

    A chunk committed early is what a run of it alone would have left: COMMITTED with its
    watermarks. Should a later chunk fail or the process die, the run's other chunks are PENDING
    (or resolved by ``resolve_pending``) and the next run reads only those: nothing is loaded twice
    and nothing lost. A chunk whose early commit Doris lost is PENDING again under its next
    generation, as ``commit_chunks`` leaves it.

    Each early commit is a span of the timeline (``tidemark run --timings``), beside the reads.

    ``after_group``: called with the chunks committed early (those Doris kept), about a bound's
    worth at a time: the parity check's Doris side of them is computed meanwhile
    (``cdc_core/pipeline/parity/doris_ahead.py``)."""
    limit = ctx.definition.pipeline.doris_max_running_txns_per_db
    groups = txn_groups(keys, lambda k: [t.database for t in ctx.targets(parse_chunk_key(k)[0])], limit)
    if len(groups) == 1:
        return run_chunks(ctx, executor, keys)
    return run_chunks(ctx, executor, keys, bound=limit, after_group=after_group)


def _read_key(schema: TableSchema, configured: str | None, tasks: list[ChunkTask]) -> Column:
    """The column a table's chunks are read by. A table the stream brought in (created after the
    snapshot) has one whole-table chunk, which no key range bounds: a keyless one with no
    ``chunk.key-column`` of the user's is read by its first column then (its reload after a column
    change: ``schema_change.py``), as its stream chunk was recorded (``_add_stream_chunk``)."""
    try:
        return chunk_key_column(schema, configured)
    except DiscoveryError:
        if schema.primary_key or not all(t.start is None and t.end is None for t in tasks):
            raise
        return schema.columns[0]


def _estimated_rows(options: SplitOptions, planned_rows: dict[str, Any], table_id: str, chunks: int) -> int:
    """About how many rows ``chunks`` chunks of the table hold: the plan's chunk size times the
    chunks, at most the table's rows when it was planned."""
    estimate = chunks * options.rows_per_chunk(TableId.parse(table_id))
    if table_id in planned_rows:
        estimate = min(estimate, int(planned_rows[table_id]))
    return estimate


def run_chunks(ctx: PipelineContext, executor: PipelineExecutor, keys: list[str], *, bound: int | None = None,
               after_group: Callable[[list[str]], None] | None = None) -> list[ChunkResult]:
    """Read and load these chunks; their transactions end up PREPARED (not visible). ``bound``:
    the most Doris transactions to hold running per database (``run_chunks_bounded``; the chunks
    committed early on the way are COMMITTED).

    The caller has resolved what an earlier run left (``recovery.resolve_pending``). A chunk
    that was already COMMITTED is read again deliberately: its generation moves on, so its new
    load gets a new label and its rows, stamped with the new high watermark, replace the old ones.
    """
    records = chunk_records(ctx, keys)
    stuck = [chunk_key(*r.key) for r in records if r.status is ChunkStatus.PREPARED]
    if stuck:
        raise RuntimeError(
            f"chunk(s) {', '.join(stuck[:5])} still hold prepared loads that could not be finished; "
            "see the no_pending_transactions check"
        )
    tasks_by_table: dict[str, list[ChunkTask]] = {}
    running: list[tuple[str, int, dict[str, Any]]] = []
    for r in records:
        generation = r.generation + (1 if r.status is ChunkStatus.COMMITTED else 0)
        running.append((r.table_id, r.chunk_index,
                        {"status": ChunkStatus.RUNNING, "generation": generation, "transactions": None}))
        tasks_by_table.setdefault(r.table_id, []).append(
            ChunkTask(TableId.parse(r.table_id), r.chunk_index, r.start, r.end, generation)
        )
    with ctx.store.transaction() as tx:
        tx.update_chunks(running)
    logger.debug("%d chunk(s) of %d table(s) marked RUNNING", len(records), len(tasks_by_table))
    try:
        work: list[TableWork] = []
        gone: dict[str, list[ChunkTask]] = {}
        options = planned_split_options(ctx)
        planned_rows = TABLE_ROWS.get_or(ctx.store, {})
        reference = ctx.epoch_reference()  # the chunks' watermarks take the pipeline's epoch on this server
        with ctx.connection():
            # every table's schema in a few information_schema queries, not four per table; a table
            # they do not show is asked alone, which says whether it is gone or not readable
            schemas = ctx.live_schemas([TableId.parse(t) for t in tasks_by_table])
            for table_id, tasks in tasks_by_table.items():
                try:
                    schema = schemas.get(TableId.parse(table_id)) or ctx.live_schema(TableId.parse(table_id))
                except TableNotFoundError:
                    gone[table_id] = tasks
                    continue
                key = _read_key(schema, ctx.definition.source.chunk_key_column, tasks)
                estimate = _estimated_rows(options, planned_rows, table_id, len(tasks))
                work.append(TableWork(schema, (key.name,), tuple(tasks), estimate, reference,
                                      int(planned_rows[table_id]) if table_id in planned_rows else None))
            skipped = _skip_gone_tables(ctx, gone) if gone else []
        key_columns = {str(w.schema.table_id): w.key_columns for w in work}
        window = _window(ctx, bound, key_columns, after_group) if bound is not None and work else None
        try:
            outcomes = executor.run_snapshot(ctx.definition, ctx.sink, work, window=window) if work else []
        except BaseException:
            if window is not None:
                window.stop()  # the executor's error is the run's (an early commit's failure included)
            raise
        early = window.close() if window is not None else set()
    except BaseException:
        # The failure itself is the run's error; what follows from it goes to the log file.
        logger.info("the snapshot job failed; aborting what its tasks prepared for %d chunk(s)", len(records))
        try:
            abandon_chunks(ctx, records)
        except Exception:  # noqa: BLE001 - the job's failure is the error to report, not this one
            # Doris is down (the same outage, often): the chunks are PENDING all the same, and a load
            # of them later finds its label's precommitted leftover and aborts it (fresh loads).
            logger.info("could not abort what the failed snapshot job's tasks prepared", exc_info=True)
        raise
    results = [ChunkResult(chunk_key(str(o.table_id), o.index), str(o.table_id), o.index, o.rows, o.low_watermark,
                           o.high_watermark, o.committables, o.duration_s) for o in outcomes]
    record_prepared(ctx, [o for o in outcomes if (str(o.table_id), o.index) not in early], key_columns)
    results += skipped
    for r in results:
        if r.key in {s.key for s in skipped}:
            continue
        logger.info("chunk %s prepared: %d rows, high watermark %s", r.key, r.rows, r.high_watermark)
    fault_point("snapshot.after_state_write", keys=",".join(keys))
    return results


def record_prepared(ctx: PipelineContext, outcomes: list[ChunkOutcome], key_columns: dict[str, tuple[str, ...]]) -> None:
    """Record these chunks PREPARED: their watermarks, rows and the transactions to commit."""
    prepared: list[tuple[str, int, dict[str, Any]]] = []
    for o in outcomes:
        detail = {"duration_s": o.duration_s, "backfill_events": o.backfill_events,
                  "key_columns": list(key_columns[str(o.table_id)])}
        prepared.append((str(o.table_id), o.index, {
            "status": ChunkStatus.PREPARED, "low_watermark": o.low_watermark, "high_watermark": o.high_watermark,
            "transactions": list(o.committables), "rows": o.rows, "detail": detail}))
    with ctx.store.transaction() as tx:
        tx.update_chunks(prepared)


def _window(ctx: PipelineContext, bound: int, key_columns: dict[str, tuple[str, ...]],
            after_group: Callable[[list[str]], None] | None) -> CommitWindow:
    """The run's commit window: each early batch recorded PREPARED, committed (``commit_chunks``)
    and, about a bound's worth of kept chunks at a time, handed to ``after_group``."""
    batches = 0
    kept: list[str] = []

    def commit(outcomes: list[ChunkOutcome]) -> None:
        nonlocal batches
        record_prepared(ctx, outcomes, key_columns)
        keys = [chunk_key(str(o.table_id), o.index) for o in outcomes]
        with span(f"early_commit {batches}"):
            redo = set(commit_chunks(ctx, keys))
        kept.extend(k for k in keys if k not in redo)
        if after_group is not None and len(kept) >= bound:
            after_group(list(kept))
            kept.clear()
        logger.info("%d chunk(s) committed early to stay within %d running Doris transactions per database%s",
                    len(keys), bound, f"; {len(redo)} to read again" if redo else "")
        fault_point("snapshot.between_groups", group=batches)
        batches += 1

    def flush() -> None:
        if after_group is not None and kept:
            after_group(list(kept))
            kept.clear()

    return CommitWindow(bound, lambda table_id: [t.database for t in ctx.targets(table_id)], commit, on_close=flush)


def _skip_gone_tables(ctx: PipelineContext, gone: dict[str, list[ChunkTask]]) -> list[ChunkResult]:
    """Chunks of tables the server no longer shows are done without a read: COMMITTED, no rows.

    The table was dropped (or renamed) after planning, so there is nothing left to read. Both
    watermarks are the server's position now, after the DROP: the binlog filter leaves every
    earlier change of these key ranges to the chunks (so nothing of the dropped table is loaded),
    and the DROP itself reaches the stream as a DDL, carried over by ``schema.change.behavior``.
    The chunk's detail says why it holds no rows. Only a table the server says is gone gets here:
    one the user lost SELECT on fails the run with the grant to give (``read_table_schema``).
    """
    offset = ctx.aligned_offset().to_dict()
    results = []
    with ctx.store.transaction() as tx:
        for table_id, tasks in gone.items():
            # the key columns a read recorded stay: the binlog filter orders the chunk's range by them
            # (a keyless table has no primary key to fall back on)
            records = {r.chunk_index: r for r in tx.chunks(table_id=table_id)}
            for t in tasks:
                detail: dict[str, Any] = {"skipped": "the table no longer exists on the server"}
                record = records.get(t.index)
                keys = (record.detail or {}).get("key_columns") if record is not None else None
                if keys:
                    detail["key_columns"] = keys
                low = high = offset
                if record is not None and record.high_watermark:
                    # A re-read (a reload after a schema change) of a table renamed or dropped since:
                    # the chunk keeps the watermarks of its last read, so the stream still applies
                    # the table's changes after them (the rows written before its RENAME or DROP).
                    low, high = record.low_watermark or record.high_watermark, record.high_watermark
                tx.update_chunk(table_id, t.index, status=ChunkStatus.COMMITTED, low_watermark=low,
                                high_watermark=high, transactions=[], rows=0, detail=detail)
                results.append(ChunkResult(chunk_key(table_id, t.index), table_id, t.index, 0, low, high, (),
                                           0.0))
    for table_id, tasks in gone.items():
        logger.warning(
            "%s no longer exists on the server (dropped or renamed after the snapshot was planned): its %d "
            "chunk(s) are skipped, marked done without rows; its DROP reaches Doris through the binlog as "
            "schema.change.behavior says", table_id, len(tasks))
    return results


def abandon_chunks(ctx: PipelineContext, records: list[ChunkRecord]) -> None:
    """After a failed job: abort whatever its tasks precommitted (labels are known) → PENDING.

    Only chunks still RUNNING: those a commit window recorded on the way (``run_chunks_bounded``)
    are COMMITTED, or PREPARED with their transactions known (an early commit that failed), which
    ``resolve_pending`` finishes as it does a run's."""
    probes = []
    with ctx.store.transaction(readonly=True) as tx:
        current = tx.chunks_of(r.key for r in records)
    records = [r for r in records if current[r.key].status is ChunkStatus.RUNNING]
    for r in records:
        c = current[r.key]
        for target in ctx.targets(c.table_id):
            probes.append((target, snapshot_batch_id(c.table_id, c.chunk_index, c.generation)))
    try:
        ctx.sink.recover(probe=probes)
    finally:
        with ctx.store.transaction() as tx:
            for r in records:
                tx.update_chunk(r.table_id, r.chunk_index, status=ChunkStatus.PENDING, transactions=None)
    logger.info("%d chunk(s) abandoned and back to PENDING", len(records))


def commit_record(ctx: PipelineContext, record: ChunkRecord) -> bool:
    """Commit one PREPARED chunk's loads, then record it COMMITTED.

    When Doris lost one of its loads (aborted it on its own, or forgot it), the chunk goes back to
    PENDING under its next generation (new labels: a load that did commit keeps its own) and is
    read again by the next run; the later high watermark makes the re-read rows win. Returns False
    then.
    """
    lost = ctx.sink.commit_surviving(record.transactions or [])
    if lost:
        with ctx.store.transaction() as tx:
            tx.update_chunk(record.table_id, record.chunk_index, status=ChunkStatus.PENDING,
                            generation=record.generation + 1, transactions=None)
        logger.warning("chunk %s: Doris lost %d of its load(s) (%s) before the commit; the chunk is PENDING again "
                       "and the next run reads it again", chunk_key(*record.key), len(lost),
                       ", ".join(c.label for c in lost))
        return False
    fault_point("snapshot.committing", key=chunk_key(*record.key))
    with ctx.store.transaction() as tx:
        tx.update_chunk(record.table_id, record.chunk_index, status=ChunkStatus.COMMITTED)
    logger.info("chunk %s committed (%s rows)", chunk_key(*record.key), record.rows)
    return True


COMMIT_STREAMS = 16
"""Chunk commits in flight at once, each an HTTP round trip to the FE. A run of hundreds of
one-chunk tables commits a group of up to ``tidemark.doris.max-running-txns-per-db`` chunks while
its reads wait; commits that arrive together are published together (the stand-in applies those
queued behind its write lock in one transaction, as Doris's FE batches its edit log), so more in
flight cost less each: 75 chunk commits took the stand-in 0.42 CPU-s with 16 against 0.57 with 4
(four alternated pairs, docs/performance.md), and 32 gained nothing more."""


def commit_chunks(ctx: PipelineContext, keys: list[str]) -> list[str]:
    """Commit the prepared loads of these chunks (idempotent); they become COMMITTED. Returns the
    keys of chunks whose loads Doris lost: they are PENDING again, to be read again.

    The Doris commits run ``COMMIT_STREAMS`` at a time and the state store records the outcomes
    in one transaction afterwards: a crash in between leaves PREPARED records whose loads Doris
    has committed, which ``resolve_pending`` commits again (a no-op) and records. Once a commit
    finds Doris unavailable after its retries (a node restarting), the chunks not started yet are
    not tried: they stay PREPARED for the next run, and the failure comes in seconds, not after
    every chunk's retries in turn."""
    records = [r for r in chunk_records(ctx, keys) if r.status is ChunkStatus.PREPARED]
    if not records:
        return []

    unavailable: list[DorisUnavailableError] = []

    def commit(record: ChunkRecord) -> bool:
        if unavailable:  # Doris is restarting or down: the chunks not started yet wait for the next run
            raise unavailable[0]
        try:
            lost = ctx.sink.commit_surviving(record.transactions or [])
        except DorisUnavailableError as exc:
            unavailable.append(exc)
            raise
        if lost:
            logger.warning("chunk %s: Doris lost %d of its load(s) (%s) before the commit; the chunk is PENDING "
                           "again and the next run reads it again", chunk_key(*record.key), len(lost),
                           ", ".join(c.label for c in lost))
            return False
        fault_point("snapshot.committing", key=chunk_key(*record.key))
        return True

    failures: list[tuple[str, Exception]] = []
    redo: list[ChunkRecord] = []
    done: list[ChunkRecord] = []
    # hundreds of one-chunk tables make a commit each: straight to the BE an FE last redirected one
    # to, for a few commits at a time (DorisHttpClient.reusing_redirects), not an FE's 307 each time
    with ctx.sink.client.reusing_redirects(), ThreadPoolExecutor(
            max_workers=min(COMMIT_STREAMS, len(records)), thread_name_prefix="tidemark-commit") as pool:
        futures = {pool.submit(commit, r): r for r in records}
        for future, record in futures.items():
            try:
                (done if future.result() else redo).append(record)
            except Exception as exc:  # noqa: BLE001 - try every chunk, then report all failures
                failures.append((chunk_key(*record.key), exc))
    with ctx.store.transaction() as tx:
        tx.update_chunks([(r.table_id, r.chunk_index, {"status": ChunkStatus.COMMITTED}) for r in done]
                         + [(r.table_id, r.chunk_index, {"status": ChunkStatus.PENDING, "generation": r.generation + 1,
                                                         "transactions": None}) for r in redo])
    if done:
        logger.info("%d chunk(s) committed (%s rows)", len(done), sum(r.rows or 0 for r in done))
    if failures:
        first_key, first = failures[0]
        if all(isinstance(exc, (DorisConnectionError, DorisAuthError)) for _, exc in failures):
            # an outage: one line, of the kind the run reports as cause and fix (not one per chunk)
            raise type(first)(f"could not commit {len(failures)} chunk load(s) (the first: {first_key}): "
                              f"{first}") from first
        raise RuntimeError("could not commit chunk load(s): " + "; ".join(f"{k}: {e}" for k, e in failures))
    return [chunk_key(*r.key) for r in redo]


def abort_chunks(ctx: PipelineContext, keys: list[str]) -> None:
    """Abort their prepared loads; the chunks go back to PENDING."""
    records = [r for r in chunk_records(ctx, keys) if r.status in (ChunkStatus.PREPARED, ChunkStatus.RUNNING)]
    for record in records:
        if record.status is ChunkStatus.PREPARED:
            ctx.sink.abort(record.transactions or [])
    running = [r for r in records if r.status is ChunkStatus.RUNNING]
    if running:
        abandon_chunks(ctx, running)
    with ctx.store.transaction() as tx:
        for record in records:
            tx.update_chunk(record.table_id, record.chunk_index, status=ChunkStatus.PENDING, transactions=None)
    if records:
        logger.info("%d chunk(s) aborted and back to PENDING", len(records))


def snapshot_done(ctx: PipelineContext) -> bool:
    """The plan is complete and every planned chunk is COMMITTED."""
    with ctx.store.transaction(readonly=True) as tx:
        state = ASSIGNER_STATE.get(tx)
        if state is None or not AssignerState.from_dict(state).finished:
            return False
        return all(c.status is ChunkStatus.COMMITTED for c in tx.chunks())


def finished_chunks(ctx: PipelineContext) -> list[FinishedChunk]:
    """Every COMMITTED chunk with its high watermark: what the binlog stream must respect."""
    with ctx.store.transaction(readonly=True) as tx:
        return [FinishedChunk.from_state(c) for c in tx.chunks(status=ChunkStatus.COMMITTED)]


def chunk_statuses(ctx: PipelineContext) -> dict[str, ChunkStatus]:
    """Every planned chunk's key and status."""
    with ctx.store.transaction(readonly=True) as tx:
        return {chunk_key(*c.key): c.status for c in tx.chunks()}
