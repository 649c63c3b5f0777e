"""The binlog stream as micro-batches through the exactly-once protocol.

A batch reads from the committed offset to the server's position (its split comes from
``HybridSplitAssigner.next_split``), stopping early before the first DDL on a captured table;
its loads are precommitted and recorded PREPARED with the batch's offset range (a batch touching
more tables than ``tidemark.doris.max-running-txns-per-db`` allows at once commits them in
groups, the last one with the batch: ``_commit_group``). Only
``commit_batch`` moves the committed offset, in the same transaction that records the batch
COMMITTED, so a batch is applied exactly once whatever crashes where. A batch with no change
still moves the offset (it is recorded and committed like any other).

Each batch first asks who the source is: when it is not the server the committed offset belongs to
(a failover), the batch starts after the committed GTID position on the new server, in the next
epoch, or refuses before reading anything (``cdc_core/mysql/failover.py``).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from cdc_core.doris.labels import binlog_batch_id
from cdc_core.doris.table_creation import KeylessMode
from cdc_core.instrumentation.faults import fault_point
from cdc_core.model.events import DataChangeEvent
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.collation import CollationWeigher
from cdc_core.mysql.connection import connect
from cdc_core.mysql.failover import (
    align,
    behind_by_gtid,
    check_one_snapshot_server,
    failed_over,
    resume_after_failover,
)
from cdc_core.mysql.hybrid_assigner import BinlogSplit, HybridSplitAssigner
from cdc_core.mysql.purge import ensure_offset_available
from cdc_core.mysql.schema_history import SchemaHistory
from cdc_core.mysql.server_ids import stream_server_id
from cdc_core.mysql.startup import StartupPlan, resolve_startup
from cdc_core.pipeline.changes import change_rows, load_in_process
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.executor import PipelineExecutor
from cdc_core.pipeline.keyless import CopyCounts, identity_rows, identity_schema
from cdc_core.pipeline.results import BatchResult, BinlogLag
from cdc_core.pipeline.snapshot import finished_chunks, snapshot_done
from cdc_core.pipeline.txn_groups import txn_groups
from cdc_core.state import BatchRecord, BatchStatus
from cdc_core.state.keys import (
    COMMITTED_OFFSET,
    LAST_BATCH_READ,
    PENDING_DDL,
    PLAN_OFFSET,
    STARTUP,
    STARTUP_SCHEMAS,
)

logger = logging.getLogger(__name__)

# Loads and commits of one batch in flight at once (each is an HTTP round trip to Doris that waits;
# bounded besides by tidemark.doris.max-running-txns-per-db through the groups of txn_groups).
LOAD_STREAMS = 8
COMMIT_STREAMS = 8


def startup(ctx: PipelineContext) -> StartupPlan:
    """The resolved ``scan.startup.mode``, fixed at first use (``latest-offset`` means the
    latest offset when the pipeline first ran, not at every run). A start without a snapshot
    records the captured tables' schemas at that offset in the same transaction."""
    saved = STARTUP.get(ctx.store)
    if saved is not None:
        return StartupPlan.from_dict(saved)
    plan = resolve_startup(ctx.definition.source, ctx.settings)
    schemas: list[TableSchema] = []
    if not plan.snapshot and plan.start is not None:
        # A DDL that runs before the first batch then reaches the stream as a change, and the
        # rows written before it decode with the schema they were written with.
        with ctx.connection():
            schemas = [ctx.live_schema(t) for t in ctx.captured_tables()]
    with ctx.store.transaction() as tx:
        first = STARTUP.get(tx)
        if first is not None:  # another process got here first
            return StartupPlan.from_dict(first)
        if schemas:
            SchemaHistory(ctx.store).bootstrap(schemas, plan.start, tx=tx)
            STARTUP_SCHEMAS.put(tx, True)
        STARTUP.put(tx, plan.to_dict())
    logger.info("%s: startup mode %s fixed (snapshot: %s, start: %s)", ctx.definition.name, plan.mode,
                plan.snapshot, plan.start)
    return plan


def binlog_ready(ctx: PipelineContext) -> bool:
    """The stream may run: no snapshot is needed, or the snapshot is committed."""
    return not startup(ctx).snapshot or snapshot_done(ctx)


def stream_start(ctx: PipelineContext) -> BinlogOffset | None:
    """The committed offset; before the first batch, where the stream must start."""
    committed = COMMITTED_OFFSET.get(ctx.store)
    if committed is not None:
        return committed
    return HybridSplitAssigner.resume_offset(startup(ctx), finished_chunks(ctx),
                                             plan_offset=PLAN_OFFSET.get(ctx.store))


def binlog_lag(ctx: PipelineContext) -> BinlogLag:
    """Cheap (no Spark): the committed offset against the server's current position.

    The server's offset carries the epoch it has for this pipeline (the next one when the source
    failed over since the committed offset); across servers, "behind" is decided by GTIDs."""
    server = ctx.server_offset()
    start = stream_start(ctx) if binlog_ready(ctx) else None
    bytes_behind = None
    if start is not None and failed_over(start, server):
        behind = behind_by_gtid(start, server)
    else:
        behind = start is not None and align(server, start) > start
        if start is not None and start.file == server.file:
            bytes_behind = server.position - start.position
    server = align(server, start)
    return BinlogLag(None if start is None else start.to_dict(), server.to_dict(), behind, bytes_behind)


def run_batch(ctx: PipelineContext, executor: PipelineExecutor, max_events: int | None = None, *,
              stop: BinlogOffset | None = None) -> BatchResult:
    """Apply one micro-batch from the committed offset to the server's position at the start
    (or ``stop``), stopping early at the first DDL on a captured table; its loads end up PREPARED.

    The caller has resolved what an earlier run left and checked ``binlog_ready``.
    """
    plan = startup(ctx)
    chunks = finished_chunks(ctx)
    committed = COMMITTED_OFFSET.get(ctx.store)
    plan_offset = PLAN_OFFSET.get(ctx.store)
    if committed is None:
        check_one_snapshot_server([c.high_watermark for c in chunks])
    resume = HybridSplitAssigner.resume_offset(plan, chunks, committed=committed, plan_offset=plan_offset)
    now = ctx.server_offset()
    failover_start = None
    if resume is not None and failed_over(resume, now):
        # Another server: resume after the committed GTID position (or refuse, before anything is read).
        failover_start = resume_after_failover(ctx.settings, resume, now, stream_server_id(ctx.definition.source))
    reference = failover_start or resume
    split = HybridSplitAssigner.next_split(plan, chunks, committed=failover_start or committed,
                                           plan_offset=plan_offset, server_offset=lambda: align(now, reference),
                                           stop=stop)
    if split is None and failover_start is not None:
        # Nothing written after the committed transactions on the new server: an empty batch
        # still moves the committed offset there (its identity, its file position, the next epoch).
        split = BinlogSplit(failover_start, failover_start, tuple(chunks))
    if split is None:
        start = HybridSplitAssigner.resume_offset(plan, chunks, committed=committed, plan_offset=plan_offset)
        at = {} if start is None else start.to_dict()
        logger.debug("%s: no binlog to read from %s", ctx.definition.name, start)
        return BatchResult("", at, at, {}, ())
    start = split.start
    redo = _partly_committed(ctx, start)
    if redo is not None:
        # A batch that committed some of its groups and then failed: read exactly its range again,
        # so that its loads get the same labels (Doris answers those committed as such, and loads
        # nothing twice: a DUPLICATE-model table has no sequence column to absorb a re-load).
        split = dataclasses.replace(split, stop=BinlogOffset.from_dict(redo.end_offset))
        logger.info("binlog batch %s began committing %d load(s) in groups before it failed: reading its range again",
                    redo.batch_id, len(redo.detail["committed_in_groups"]))
    ensure_offset_available(ctx.settings, start)
    read_started = time.time()
    source = ctx.definition.source
    history = SchemaHistory(ctx.store)
    captured_tables = ctx.captured_tables()
    known = history.schemas_at(start)  # every table's, in one read (not one per table and use)
    if not STARTUP_SCHEMAS.get(ctx.store):
        # Schemas not recorded when the stream's start was fixed (a snapshot's tables are
        # recorded by its plan; a state from an older release has none): as they are now.
        # Otherwise a table the history lacks was created after the start, and its CREATE
        # TABLE in the binlog brings it in.
        missing = [t for t in captured_tables if known.get(t) is None]
        if missing:
            with ctx.connection():
                history.bootstrap([ctx.live_schema(t) for t in missing], start)
            known = history.schemas_at(start)

    def live_schema(table_id: TableId) -> TableSchema | None:
        # A table the history does not know (renamed into a captured name, created before a
        # no-snapshot start): its schema as the server has it now.
        try:
            return ctx.live_schema(table_id)
        except Exception:  # noqa: BLE001 - gone from the server: the stream decides what that means
            return None

    schemas = history.lookup_at(start, fallback=live_schema, keep=True, known=known)
    if not plan.snapshot:
        split = dataclasses.replace(split, stream_tables=tuple(
            t for t in captured_tables if not any(c.table_id == t for c in chunks)))
    selector = source.selector
    weigher = CollationWeigher(lambda: connect(ctx.settings))
    reading = time.perf_counter()
    try:
        event_filter = split.event_filter(
            schemas, captured=lambda t: selector.matches(t.database, t.table), source=source, weigher=weigher
        )
        # The stream's reader: the first server id of the range, closed after the batch so that
        # no dump thread lingers on the server under that id.
        with BinlogSplitReader.from_source(source, schemas) as reader:
            batch = reader.read_batch(
                start, split.stop, max_events=max_events or ctx.definition.pipeline.binlog_max_events,
                stop_at_schema_change=True, event_filter=event_filter,
            )
    finally:
        weigher.close()
    end = batch.end
    read_s = time.perf_counter() - reading
    batch_id = binlog_batch_id(start.sequence, end.sequence)
    by_table: dict[TableId, list[Any]] = {}
    for event in batch.events:
        if isinstance(event, DataChangeEvent):
            by_table.setdefault(event.table_id, []).append(event)
    targets = {t: ctx.sink.route(t) for t in by_table}
    # only a batch with loads keeps the pace: one that loads nothing (it stopped before a DDL
    # right where it began, a schema change's flush already at its DDL, a caught-up run's last
    # batch, changes to tables not captured) gives Doris no new version, so it neither waits nor
    # makes the next batch wait
    pace_from = time.time()
    loads_begin = _pace(ctx) if by_table else None
    running = BatchRecord(batch_id, start.to_dict(), end.to_dict(), BatchStatus.RUNNING, None,
                          {"probes": [[str(t), str(target), f"{t}:{batch_id}:p0"]
                                      for t in by_table for target in targets[t]]})
    if redo is not None and redo.batch_id == batch_id:  # still known should this attempt fail too
        running.detail["committed_in_groups"] = list(redo.detail["committed_in_groups"])
    with ctx.store.transaction() as tx:
        tx.put_batch(running)
        if loads_begin is not None:
            LAST_BATCH_READ.put(tx, loads_begin)
    committables: list[dict[str, Any]] = []
    limit = ctx.definition.pipeline.doris_max_running_txns_per_db
    groups = txn_groups(list(by_table), lambda t: [target.database for target in targets[t]], limit)
    copies = CopyCounts(ctx.sink.catalog)  # the keyless tables' copies of the images this batch touches
    loading = time.perf_counter()
    try:
        # a load and a commit per table: to the BE an FE redirected the last one to, for a few
        # (DorisHttpClient.reusing_redirects), not through an FE's redirect every time
        with ctx.sink.client.reusing_redirects():
            for n, group in enumerate(groups):
                loaded = _load_group(ctx, executor, group, by_table, schemas, targets, batch_id, start, copies)
                if n == len(groups) - 1:
                    committables = loaded
                else:
                    # with the group's labels before its commits: should they fail, abandon_batch
                    # writes this record
                    running = _with_group_labels(running, loaded)
                    lost = _commit_group(ctx, running, loaded, n, len(groups), limit)
                    if lost:
                        raise RuntimeError(lost)
                    fault_point("binlog.between_groups", batch=running.batch_id, group=n)
        fault_point("binlog.after_loads", batch=batch_id)
    except BaseException:
        # The failure itself is the run's error; what follows from it goes to the log file.
        logger.info("binlog batch %s failed; aborting its loads", batch_id)
        try:
            abandon_batch(ctx, running)
        except Exception:  # noqa: BLE001 - the batch's failure is the error to report, not this one
            # Doris is down (the same outage, often): the batch is ABORTED all the same; a load it left
            # precommitted is never committed (a batch read again over the same range reuses its label
            # and rows; any other range has other labels) and Doris's precommit timeout ends it.
            logger.info("could not abort what binlog batch %s prepared", batch_id, exc_info=True)
        raise
    ddl = None
    if batch.schema_change:
        first = batch.schema_change[0]
        ddl = {"table_id": str(first.table_id), "type": first.type_name, "ddl": first.ddl,
               "offset": None if first.offset is None else first.offset.to_dict(),
               "resume_after": None if batch.schema_change_end is None else batch.schema_change_end.to_dict()}
    last_ms = max((e.commit_time_ms or 0 for e in batch.events if isinstance(e, DataChangeEvent)), default=0)
    lag = (time.time() - last_ms / 1000.0) if last_ms else None
    events_per_table = {str(t): len(e) for t, e in by_table.items()}
    # where a batch's seconds go (docs/performance.md, the stream over 300 tables): when it began
    # reading, how long the read, the wait for tidemark.binlog.batch-interval-s and the loads (with
    # any group commits) took
    paced_s = 0.0 if loads_begin is None else loads_begin - pace_from
    detail = {"events_per_table": events_per_table, "stopped_at_ddl": ddl, "lag_s": lag,
              "events_read": batch.events_read,
              "timings": {"began_at": round(read_started, 3), "read_s": round(read_s, 3),
                          "paced_s": round(paced_s, 3),
                          "load_s": round(time.perf_counter() - loading, 3), "prepared_at": round(time.time(), 3)}}
    if "committed_in_groups" in (running.detail or {}):
        detail["committed_in_groups"] = running.detail["committed_in_groups"]
    with ctx.store.transaction() as tx:
        tx.put_batch(BatchRecord(batch_id, start.to_dict(), end.to_dict(), BatchStatus.PREPARED, committables,
                                 detail))
        if ddl is not None:
            PENDING_DDL.put(tx, ddl)
    logger.info("binlog batch %s prepared: %d change(s) in %d table(s), %s → %s%s", batch_id,
                sum(events_per_table.values()), len(events_per_table), start, end,
                f", stopped before {ddl['type']} on {ddl['table_id']}" if ddl else "")
    fault_point("binlog.after_state_write", batch=batch_id)
    return BatchResult(batch_id, start.to_dict(), end.to_dict(), events_per_table, tuple(committables), ddl, lag)


def _pace(ctx: PipelineContext) -> float:
    """Wait until ``tidemark.binlog.batch-interval-s`` has passed since the last batch with loads
    began them (recorded in the state store, so it holds across runs and processes: a stream run's
    next batch, the next run, a schema change's flush); returns when this batch's loads begin. Each
    batch loads a table at most once, so a table gets at most one load per interval however fast the
    binlog moves: under a steady stream the batches grow instead (Doris advises about one load per
    table per second; each is a new version to compact). The wait comes after the read (whose range
    was fixed when the batch began) and only for a batch with something to load: ``tidemark run
    --once`` over a backlog of DDLs reads three batches per DDL (the one that stops before it, the
    schema change's flush, the first after it), two of them empty, and each waited an interval."""
    interval = ctx.definition.pipeline.binlog_batch_interval_s
    last = LAST_BATCH_READ.get(ctx.store)
    now = time.time()
    if interval > 0 and last is not None:
        wait = min(interval, last + interval - now)  # a clock set back waits one interval at most
        if wait > 0:
            logger.debug("binlog batch waits %.2f s (one batch per %.1f s)", wait, interval)
            time.sleep(wait)
            now = time.time()
    return now


def _partly_committed(ctx: PipelineContext, start: BinlogOffset) -> BatchRecord | None:
    """The ABORTED batch from ``start`` that had committed some of its groups, if any."""
    with ctx.store.transaction(readonly=True) as tx:
        aborted = tx.batches(status=BatchStatus.ABORTED)
    for record in aborted:
        if (record.detail or {}).get("committed_in_groups") and record.start_offset == start.to_dict():
            return record
    return None


def _with_group_labels(running: BatchRecord, loaded: list[dict[str, Any]]) -> BatchRecord:
    """The batch's record with one more group's labels in ``committed_in_groups`` (:func:`_commit_group`)."""
    detail = dict(running.detail or {})
    detail["committed_in_groups"] = [*detail.get("committed_in_groups", []), *(c["label"] for c in loaded)]
    return dataclasses.replace(running, detail=detail)


def _commit_group(ctx: PipelineContext, running: BatchRecord, loaded: list[dict[str, Any]], n: int, groups: int,
                  limit: int) -> str | None:
    """Commit one group of a batch that touches more tables than ``limit`` loads per database
    allow at once, before the next group begins; the batch stays RUNNING and the committed
    offset where it was until its last group commits with it. ``running`` already names the
    group's labels (:func:`_with_group_labels`); returns why the batch cannot go on when Doris
    lost loads of the group, else None.

    The record is written *before* the group's commits begin: from then on, a crash or failure
    (the batch's other loads aborted by label, the record ABORTED) makes the next batch read
    exactly the same range again (``_partly_committed``), under the same labels, which Doris
    answers as already committed for the loads that went through and loads again for those it
    aborted or lost. So nothing is lost or loaded twice, and the offset moves only when the whole
    batch is committed. Were the labels recorded only after the commits, a commit that went
    through before a crash, a failed request or a lost neighbour would leave no trace, and the
    next batch could read another range under other labels and load a keyless (DUPLICATE)
    table's rows a second time."""
    with ctx.store.transaction() as tx:
        tx.put_batch(running)
    lost = ctx.sink.commit_surviving(loaded, streams=COMMIT_STREAMS)
    if lost:
        return (f"binlog batch {running.batch_id}: Doris lost {len(lost)} load(s) of group {n + 1}/{groups} "
                f"({', '.join(sorted(c.label for c in lost))}) before the commit; the batch is read again")
    logger.info("binlog batch %s: group %d/%d (%d load(s)) committed to stay within %d running Doris transactions "
                "per database", running.batch_id, n + 1, groups, len(loaded), limit)
    return None


def _load_group(ctx: PipelineContext, executor: PipelineExecutor, group: list[TableId],
                by_table: dict[TableId, list[Any]], schemas: Any, targets: dict[TableId, tuple[TableId, ...]],
                batch_id: str, start: BinlogOffset, copies: CopyCounts) -> list[dict[str, Any]]:
    """Precommit the loads of one group of a batch's tables; their committables in the group's order.

    The small ones (loaded in this process) go ``LOAD_STREAMS`` at a time: each is a round trip to
    Doris (FE, redirect, BE) that waits, and a batch of a steady stream over a whole database
    touches hundreds of tables. A table loaded with Spark (many changes, or a transform) is loaded
    after them on this thread. Should a load fail, the others still end (what they prepared is
    aborted with the batch, by label) and the first failure is raised."""
    min_events = ctx.definition.pipeline.binlog_spark_min_events
    # (a keyless table's identity rows can be two per event: counted so, a table that may reach
    # Spark is never loaded on a pool thread)
    on_spark = {t for t in group if 2 * len(by_table[t]) >= min_events or ctx.has_transform(t)}
    schema_of = {t: schemas(t) for t in group}

    def load(table_id: TableId) -> list[dict[str, Any]]:
        return _load_table(ctx, executor, table_id, by_table[table_id], schema_of[table_id], targets[table_id],
                           batch_id, start, copies)

    small = [t for t in group if t not in on_spark]
    results: dict[TableId, list[dict[str, Any]]] = {}
    errors: list[BaseException] = []
    if len(small) > 1:
        with ThreadPoolExecutor(max_workers=min(LOAD_STREAMS, len(small)), thread_name_prefix="tidemark-load") as pool:
            futures = {t: pool.submit(load, t) for t in small}
        for table_id, future in futures.items():
            try:
                results[table_id] = future.result()
            except BaseException as exc:  # noqa: BLE001 - every load ends; the first failure is raised
                errors.append(exc)
    else:
        results.update({t: load(t) for t in small})
    if errors:
        raise errors[0]
    for table_id in group:
        if table_id in on_spark:
            results[table_id] = load(table_id)
    return [c for t in group for c in results[t]]


def _load_table(ctx: PipelineContext, executor: PipelineExecutor, table_id: TableId, events: list[Any],
                schema: TableSchema | None, targets: tuple[TableId, ...], batch_id: str,
                start: BinlogOffset, copies: CopyCounts) -> list[dict[str, Any]]:
    """Precommit one table's changes: in process when small, on Spark when large or transformed.

    A keyless table's exact form gets rows keyed by their identity, one target at a time (each
    Doris table holds its own copies: ``cdc_core/pipeline/keyless.py``)."""
    if schema is None:
        raise RuntimeError(f"no schema known for {table_id} at {start}; re-plan the pipeline")
    for target in targets:
        ctx.sink.ensure_table(schema, target)
    # the exact form of a keyless table (the source may even have gained a key since, with
    # alter.primary.key excluded): rows keyed by their identity, one target at a time
    exact = tuple(t for t in targets if ctx.sink.table(t).row_identity)
    rest = tuple(t for t in targets if t not in exact)
    if rest and not schema.primary_key and ctx.sink.keyless_mode(table_id) is KeylessMode.EXACT:
        _warn_appending(table_id, rest)
    out = []
    for target in exact:
        rows = identity_rows(events, schema, target, copies, salted=ctx.sink.table(target).identity_salted,
                             tinyint1_as_boolean=ctx.definition.source.tinyint1_as_boolean)
        out += _load_rows(ctx, executor, table_id, (target,), batch_id, rows, identity_schema(schema))
    if rest:
        out += _load_rows(ctx, executor, table_id, rest, batch_id, change_rows(events, schema), schema)
    return out


_WARNED: set[TableId] = set()


def _warn_appending(source: TableId, targets: tuple[TableId, ...]) -> None:
    """Once per process and table: a keyless table's Doris table is still the appending DUPLICATE form."""
    for target in targets:
        if target not in _WARNED:
            _WARNED.add(target)
            logger.warning("Doris table %s (of %s, which has no primary key) is a DUPLICATE table from an earlier "
                           "release: its updates append rows and its deletes are dropped; `tidemark resnapshot "
                           "--table %s` re-creates it exact", target, source, source)


def _load_rows(ctx: PipelineContext, executor: PipelineExecutor, table_id: TableId, targets: tuple[TableId, ...],
               batch_id: str, rows: list[Any], schema: TableSchema) -> list[dict[str, Any]]:
    big = len(rows) >= ctx.definition.pipeline.binlog_spark_min_events
    if big or ctx.has_transform(table_id):
        logger.debug("%s: %d change(s) of batch %s loaded with Spark", table_id, len(rows), batch_id)
        return executor.load_binlog_changes(ctx.definition, ctx.sink, targets, batch_id, rows, schema)
    return load_in_process(ctx.sink, targets, batch_id, rows, schema,
                           tinyint1_as_boolean=ctx.definition.source.tinyint1_as_boolean)


def abandon_batch(ctx: PipelineContext, record: BatchRecord) -> None:
    """Abort what the batch prepared (recorded transactions, and loads found by label) → ABORTED."""
    probes = [(TableId.parse(target), batch) for _src, target, batch in (record.detail or {}).get("probes", [])]
    try:
        if record.transactions:
            ctx.sink.abort(record.transactions)
        if probes:
            ctx.sink.recover(probe=probes)
    finally:
        with ctx.store.transaction() as tx:
            tx.put_batch(record.with_status(BatchStatus.ABORTED))
    logger.info("binlog batch %s aborted", record.batch_id)


def batch_record(ctx: PipelineContext, batch_id: str) -> BatchRecord:
    with ctx.store.transaction(readonly=True) as tx:
        record = tx.batch(batch_id)
    if record is None:
        raise KeyError(f"no binlog batch {batch_id!r} in the state store")
    return record


def commit_batch(ctx: PipelineContext, batch_id: str) -> bool:
    """Commit the batch's loads (idempotent); only then does the committed offset advance.

    When Doris lost one of its loads (aborted it on its own, or forgot it), the batch is recorded
    ABORTED and the offset stays: the next batch reads exactly the same range again under the same
    labels, so what of it did commit is answered as committed and loaded once. Returns False then.
    """
    if not batch_id:
        return True
    batch = batch_record(ctx, batch_id)
    if batch.status is BatchStatus.COMMITTED:
        return True
    if batch.status is not BatchStatus.PREPARED:
        raise RuntimeError(f"binlog batch {batch_id} is {batch.status}, not PREPARED; it cannot be committed")
    committing = time.perf_counter()
    with ctx.sink.client.reusing_redirects():
        lost = ctx.sink.commit_surviving(batch.transactions or [], streams=COMMIT_STREAMS)
    if lost:
        # The loads Doris kept are committed: the batch is read again over exactly its range, under
        # the same labels (_partly_committed), so those are answered as committed and only the lost
        # ones load again (a keyless table's copies, counted from Doris, must not be counted twice).
        lost_labels = {c.label for c in lost}
        detail = dict(batch.detail or {})
        detail["committed_in_groups"] = [*detail.get("committed_in_groups", []),
                                         *(c["label"] for c in batch.transactions or [] if c["label"] not in lost_labels)]
        with ctx.store.transaction() as tx:
            tx.put_batch(dataclasses.replace(batch, detail=detail).with_status(BatchStatus.ABORTED))
        logger.warning("binlog batch %s: Doris lost %d of its load(s) (%s) before the commit; the batch will be read "
                       "again from %s", batch_id, len(lost), ", ".join(c.label for c in lost), batch.start_offset)
        return False
    fault_point("binlog.committing", batch=batch_id)
    detail = dict(batch.detail or {})
    timings = detail["timings"] = dict(detail.get("timings") or {})
    timings.update(commit_s=round(time.perf_counter() - committing, 3), committed_at=round(time.time(), 3))
    with ctx.store.transaction() as tx:
        current = COMMITTED_OFFSET.get(tx)
        if current is not None and current > BinlogOffset.from_dict(batch.start_offset):
            raise RuntimeError(
                f"binlog batch {batch_id} starts at {batch.start_offset} but the committed offset is already "
                f"{current.to_dict()}: two streams ran at once for this pipeline"
            )
        tx.put_batch(batch.with_status(BatchStatus.COMMITTED, detail=detail))
        COMMITTED_OFFSET.put(tx, BinlogOffset.from_dict(batch.end_offset))
    logger.info("binlog batch %s committed; the stream is at %s", batch_id, batch.end_offset)
    return True


def abort_batch(ctx: PipelineContext, batch_id: str) -> None:
    """Abort the batch's loads; the committed offset stays where it was."""
    if not batch_id:
        return
    batch = batch_record(ctx, batch_id)
    if batch.status in (BatchStatus.PREPARED, BatchStatus.RUNNING):
        abandon_batch(ctx, batch)
