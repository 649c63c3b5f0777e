"""What the orchestration calls: one ``PipelineRunner`` per pipeline definition.

Dagster assets, hooks, sensors, checks and ``tidemark run --once`` go through this facade and
nothing else, so that the orchestration never needs to know how a chunk is read or a load is
committed. Creating a runner is cheap: it opens the state store and starts no Spark session;
only ``run_chunks`` and ``run_binlog_batch`` (when a batch is large) need Spark.

The exactly-once protocol (design.md, three rules) lives behind these methods:
``run_*`` prepare Doris transactions and record them as PREPARED in the state store;
``commit_*`` / ``abort_*`` finish them (idempotent); ``resolve_pending`` finishes whatever a crash
left behind and must run before anything else in a run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.labels import snapshot_batch_id
from cdc_core.events import DataChangeEvent
from cdc_core.schema import TableId, TableSchema
from cdc_core.state import StateStore


def chunk_key(table_id: str, index: int) -> str:
    """A snapshot chunk's partition key: table and chunk index, e.g. ``shop.orders#00012``."""
    return f"{table_id}#{index:05d}"


def parse_chunk_key(key: str) -> tuple[str, int]:
    table_id, sep, index = key.rpartition("#")
    if not sep or not index.isdigit():
        raise ValueError(f"not a chunk key: {key!r} (expected 'db.table#00012')")
    return table_id, int(index)


@dataclass(frozen=True)
class PlanResult:
    """The split plan after ``plan_splits``: every chunk key in assignment order."""

    chunk_keys: tuple[str, ...]
    tables: tuple[str, ...]
    complete: bool  # False while a huge table is still being split (call plan_splits again)
    notes: tuple[str, ...] = ()  # e.g. "shop.big: chunk size grown to 20000 to stay under 100000 partitions"


@dataclass(frozen=True)
class ChunkResult:
    key: str
    table_id: str
    index: int
    rows: int
    low_watermark: dict[str, Any]  # BinlogOffset.to_dict()
    high_watermark: dict[str, Any]
    transactions: tuple[dict[str, Any], ...]  # prepared Doris transactions (label, txn_id, db, table, rows)
    duration_s: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.duration_s if self.duration_s > 0 else 0.0


@dataclass(frozen=True)
class BatchResult:
    batch_id: str
    start_offset: dict[str, Any]
    end_offset: dict[str, Any]
    events_per_table: dict[str, int]
    transactions: tuple[dict[str, Any], ...]
    stopped_at_ddl: dict[str, Any] | None = None  # the first DDL on a captured table, if the batch stopped there
    lag_s: float | None = None  # server time now minus the last event's commit time


@dataclass(frozen=True)
class BinlogLag:
    committed_offset: dict[str, Any] | None
    server_offset: dict[str, Any]
    behind: bool  # the server has moved past the committed offset
    bytes_behind: int | None = None


@dataclass(frozen=True)
class ResolveReport:
    committed: tuple[str, ...] = ()  # labels committed while finishing PREPARED records
    aborted: tuple[str, ...] = ()  # labels aborted (incomplete records, lingering transactions)
    failed: tuple[str, ...] = ()  # labels that could not be resolved now (the check shows them)


@dataclass(frozen=True)
class ParityResult:
    table_id: str
    key_range: tuple[Any, Any] | None
    mysql_rows: int
    doris_rows: int
    mysql_checksum: str
    doris_checksum: str
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.mysql_rows == self.doris_rows and self.mysql_checksum == self.doris_checksum


# Chunk statuses in the state store.
PENDING, RUNNING, PREPARED, COMMITTED, ABORTED = "PENDING", "RUNNING", "PREPARED", "COMMITTED", "ABORTED"
SNAPSHOT_NS = "snapshot"
BINLOG_NS = "binlog"


def _offset_key(offset: dict[str, Any]) -> tuple[int, int]:
    from cdc_core.mysql.offsets import BinlogOffset

    o = BinlogOffset.from_dict(offset)
    return (o.file_index, o.position)


class PipelineRunner:
    """The operations of one pipeline, over its state store."""

    def __init__(self, definition: PipelineDefinition, store: StateStore | None = None):
        self.definition = definition
        self.store = store or StateStore.for_pipeline(definition)
        self._sink: Any = None
        from cdc_core.mysql.connection import MySqlConnectionSettings

        self.settings = MySqlConnectionSettings.from_options(definition.source)

    # -- plumbing ---------------------------------------------------------------------------

    @property
    def label_prefix(self) -> str:
        """The pipeline's label prefix plus this state store's epoch.

        Labels are deterministic so that a retry or a recovery finds its own earlier load; the
        epoch (drawn once, kept in the state store) keeps a fresh state — a deleted state
        directory, a second copy of the pipeline — from meeting the labels an old one committed.
        """
        epoch = self.store.get("meta", "label_epoch")
        if epoch is None:
            import secrets

            with self.store.transaction() as tx:  # the write lock only the first time, rechecked under it
                epoch = tx.get("meta", "label_epoch")
                if epoch is None:
                    epoch = secrets.token_hex(3)
                    tx.put("meta", "label_epoch", epoch)
        return f"{self.definition.label_prefix}_{epoch}"

    @property
    def sink(self) -> Any:
        if self._sink is None:
            from cdc_core.doris.sink import DorisSink

            self._sink = DorisSink.from_pipeline(self.definition, label_prefix=self.label_prefix)
        return self._sink

    def _connect(self) -> Any:
        from cdc_core.mysql.connection import connect

        return connect(self.settings, text_values=True)

    def _server_offset(self) -> Any:
        """The server's current binlog position (its own short connection)."""
        from cdc_core.mysql.offsets import read_current_offset

        conn = self._connect()
        try:
            with conn.cursor() as cur:
                return read_current_offset(cur)
        finally:
            conn.close()

    def _live_schema(self, conn: Any, table_id: TableId) -> TableSchema:
        from cdc_core.mysql.discovery import read_table_schema

        return read_table_schema(conn, table_id)

    def _targets(self, table_id: str) -> tuple[TableId, ...]:
        return self.sink.route(TableId.parse(table_id))

    def _records(self, keys: list[str]) -> list[dict[str, Any]]:
        wanted = [parse_chunk_key(k) for k in keys]
        with self.store.transaction(readonly=True) as tx:
            by_key = {(c["table_id"], c["chunk_index"]): c for c in tx.chunks()}
        missing = [chunk_key(t, i) for t, i in wanted if (t, i) not in by_key]
        if missing:
            raise KeyError(
                f"chunk(s) {', '.join(missing[:5])} are not in the split plan; materialize snapshot_splits "
                "(or run `tidemark run --once`) to plan the snapshot first"
            )
        return [by_key[w] for w in wanted]

    # -- snapshot ---------------------------------------------------------------------------

    def plan_splits(self, max_partitions: int = 100_000, max_steps: int | None = None) -> PlanResult:
        """Discover tables and split them into chunks (resumable), recording the plan.

        Tables are split one at a time and every step is committed with the splitter's cursor, so
        a huge table's plan resumes where it stopped. If the whole plan would exceed
        ``max_partitions`` chunks (Dagster's guidance for one partitioned asset), the chunk size is
        grown for the pipeline and the reason is returned in ``notes``.
        """
        import dataclasses
        import math

        from cdc_core.mysql.chunk_splitter import SplitOptions
        from cdc_core.mysql.discovery import approximate_row_count, list_captured_tables
        from cdc_core.mysql.offsets import read_current_offset
        from cdc_core.mysql.snapshot_assigner import (
            STATE_KEY,
            AssignerState,
            SnapshotSplitAssigner,
            assign_into_store,
        )

        source = self.definition.source
        notes: list[str] = []
        with self.store.transaction(readonly=True) as tx:
            saved_state = tx.get(SNAPSHOT_NS, STATE_KEY)
            chunk_size = tx.get(SNAPSHOT_NS, "chunk_size")
            notes = list(tx.get(SNAPSHOT_NS, "plan_notes", []))
        needs_snapshot = source.startup_mode in ("initial", "snapshot")
        conn = self._connect()
        try:
            if saved_state is None:
                tables = list_captured_tables(conn, source.selector) if needs_snapshot else []
                with conn.cursor() as cur:
                    start_offset = read_current_offset(cur)
                chunk_size = source.chunk_size
                if tables:
                    total = sum(approximate_row_count(conn, t) for t in tables)
                    budget = max(1, max_partitions - 2 * len(tables))
                    if total / chunk_size > budget:
                        grown = int(math.ceil(total / budget * 1.1))
                        notes.append(
                            f"chunk size grown from {chunk_size} to {grown} rows: ~{total} rows in "
                            f"{len(tables)} table(s) would need more than {max_partitions} partitions"
                        )
                        chunk_size = grown
                with self.store.transaction() as tx:
                    for table_id in tables:
                        schema = self._live_schema(conn, table_id)
                        tx.put_schema(str(table_id), start_offset.sequence, start_offset.to_dict(), schema.to_dict())
                    tx.put(SNAPSHOT_NS, "chunk_size", chunk_size)
                    tx.put(SNAPSHOT_NS, "plan_notes", notes)
                    tx.put(SNAPSHOT_NS, "tables", [str(t) for t in tables])
                    tx.put(SNAPSHOT_NS, STATE_KEY, AssignerState(tuple(tables)).to_dict())
                    tx.put("binlog", "plan_offset", start_offset.to_dict())
                saved_state = AssignerState(tuple(tables)).to_dict()
            state = AssignerState.from_dict(saved_state)
            if not state.finished:
                options = dataclasses.replace(SplitOptions.from_source(source), chunk_size=int(chunk_size))
                assigner = SnapshotSplitAssigner(
                    conn, [], lambda t: self._live_schema(conn, t), options,
                    unbounded_chunk_first=source.unbounded_chunk_first, state=state,
                )
                assign_into_store(assigner, self.store, max_steps=max_steps)
        finally:
            conn.close()
        with self.store.transaction(readonly=True) as tx:
            state = AssignerState.from_dict(tx.get(SNAPSHOT_NS, STATE_KEY))
            tables = tuple(tx.get(SNAPSHOT_NS, "tables", []))
        return PlanResult(tuple(self.chunk_keys()), tables, state.finished, tuple(notes))

    def chunk_keys(self) -> list[str]:
        """Every planned chunk, in assignment order (plan order is insertion order in the store)."""
        with self.store.transaction(readonly=True) as tx:
            order = tx.get(SNAPSHOT_NS, "tables", [])
            chunks = tx.chunks()
        rank = {t: i for i, t in enumerate(order)}
        chunks.sort(key=lambda c: (rank.get(c["table_id"], len(rank)), c["chunk_index"]))
        return [chunk_key(c["table_id"], c["chunk_index"]) for c in chunks]

    def run_chunks(self, keys: list[str], *, fail_after_load_once: str | None = None) -> list[ChunkResult]:
        """Read and load these chunks on Spark; their transactions end up PREPARED (not visible).

        A chunk that was already COMMITTED is read again deliberately: its generation moves on,
        so its new load gets a new label and its rows, stamped with the new high watermark,
        replace the old ones. ``fail_after_load_once`` is a test hook (a marker file path).
        """
        from cdc_core.mysql.discovery import chunk_key_column
        from jobs.snapshot_job import ChunkTask, run_snapshot
        from jobs.spark import get_spark

        if not keys:
            return []
        self.resolve_pending()
        records = self._records(keys)
        stuck = [chunk_key(r["table_id"], r["chunk_index"]) for r in records if r["status"] == PREPARED]
        if stuck:
            raise RuntimeError(
                f"chunk(s) {', '.join(stuck[:5])} still hold prepared loads that could not be finished; "
                "see the no_pending_transactions check"
            )
        tasks_by_table: dict[str, list[ChunkTask]] = {}
        with self.store.transaction() as tx:
            for r in records:
                generation = r["generation"] + (1 if r["status"] == COMMITTED else 0)
                tx.update_chunk(r["table_id"], r["chunk_index"], status=RUNNING, generation=generation,
                                transactions=None)
                tasks_by_table.setdefault(r["table_id"], []).append(
                    ChunkTask(TableId.parse(r["table_id"]), r["chunk_index"], r["start"], r["end"], generation)
                )
        try:
            conn = self._connect()
            try:
                work = []
                key_columns_by_table: dict[str, tuple[str, ...]] = {}
                for table_id, tasks in tasks_by_table.items():
                    schema = self._live_schema(conn, TableId.parse(table_id))
                    key = chunk_key_column(schema, self.definition.source.chunk_key_column)
                    key_columns_by_table[table_id] = (key.name,)
                    work.append((schema, (key.name,), tasks))
            finally:
                conn.close()
            spark = get_spark(self.definition)
            outcomes = run_snapshot(spark, self.definition, self.sink, work, fail_after_load_once=fail_after_load_once)
        except BaseException:
            self._abandon_chunks(records)
            raise
        results = []
        with self.store.transaction() as tx:
            for o in outcomes:
                detail = {"duration_s": o.duration_s, "backfill_events": o.backfill_events,
                          "key_columns": list(key_columns_by_table[str(o.table_id)])}
                tx.update_chunk(str(o.table_id), o.index, status=PREPARED, low_watermark=o.low_watermark,
                                high_watermark=o.high_watermark, transactions=list(o.committables),
                                rows=o.rows, detail=detail)
                results.append(ChunkResult(chunk_key(str(o.table_id), o.index), str(o.table_id), o.index, o.rows,
                                           o.low_watermark, o.high_watermark, o.committables, o.duration_s))
        return results

    def _abandon_chunks(self, records: list[dict[str, Any]]) -> None:
        """After a failed job: abort whatever its tasks precommitted (labels are known) → PENDING."""
        probes = []
        with self.store.transaction(readonly=True) as tx:
            current = {(c["table_id"], c["chunk_index"]): c for c in tx.chunks()}
        for r in records:
            c = current[(r["table_id"], r["chunk_index"])]
            for target in self._targets(c["table_id"]):
                probes.append((target, snapshot_batch_id(c["table_id"], c["chunk_index"], c["generation"])))
        try:
            self.sink.recover(probe=probes)
        finally:
            with self.store.transaction() as tx:
                for r in records:
                    tx.update_chunk(r["table_id"], r["chunk_index"], status=PENDING, transactions=None)

    def commit_chunks(self, keys: list[str]) -> None:
        """Commit the prepared loads of these chunks (idempotent); they become COMMITTED."""
        failures = []
        for record in self._records(keys):
            if record["status"] != PREPARED:
                continue
            try:
                self.sink.commit(record["transactions"] or [])
            except Exception as exc:  # noqa: BLE001 - try every chunk, then report all failures
                failures.append(f"{chunk_key(record['table_id'], record['chunk_index'])}: {exc}")
                continue
            with self.store.transaction() as tx:
                tx.update_chunk(record["table_id"], record["chunk_index"], status=COMMITTED)
        if failures:
            raise RuntimeError("could not commit chunk load(s): " + "; ".join(failures))

    def abort_chunks(self, keys: list[str]) -> None:
        """Abort their prepared loads; the chunks go back to PENDING."""
        records = [r for r in self._records(keys) if r["status"] in (PREPARED, RUNNING)]
        for record in records:
            if record["status"] == PREPARED:
                self.sink.abort(record["transactions"] or [])
        if any(r["status"] == RUNNING for r in records):
            self._abandon_chunks([r for r in records if r["status"] == RUNNING])
        with self.store.transaction() as tx:
            for record in records:
                tx.update_chunk(record["table_id"], record["chunk_index"], status=PENDING, transactions=None)

    def snapshot_done(self) -> bool:
        """The plan is complete and every planned chunk is COMMITTED."""
        from cdc_core.mysql.snapshot_assigner import STATE_KEY, AssignerState

        with self.store.transaction(readonly=True) as tx:
            state = tx.get(SNAPSHOT_NS, STATE_KEY)
            if state is None or not AssignerState.from_dict(state).finished:
                return False
            return all(c["status"] == COMMITTED for c in tx.chunks())

    # -- recovery and checks ----------------------------------------------------------------

    def resolve_pending(self) -> ResolveReport:
        """Finish what a crash or a failed hook left: commit complete PREPARED records, abort the
        rest and any lingering transaction of our label prefix that a record names."""
        committed: list[str] = []
        aborted: list[str] = []
        failed: list[str] = []
        with self.store.transaction(readonly=True) as tx:
            chunks = tx.chunks()
            leftovers = tx.items("spark_results")
        for record in chunks:
            key = chunk_key(record["table_id"], record["chunk_index"])
            if record["status"] == PREPARED:
                try:
                    self.sink.commit(record["transactions"] or [])
                except Exception as exc:  # noqa: BLE001 - reported by the check, retried next run
                    failed.extend(t["label"] for t in record["transactions"] or [])
                    del exc
                    continue
                with self.store.transaction() as tx:
                    tx.update_chunk(record["table_id"], record["chunk_index"], status=COMMITTED)
                committed.extend(t["label"] for t in record["transactions"] or [])
            elif record["status"] == RUNNING:
                self._abandon_chunks([record])
                aborted.append(key)
        for token, messages in leftovers:
            stray = [c for m in messages or [] for c in m.get("committables", [])]
            if stray:
                self.sink.abort(stray)
                aborted.extend(c["label"] for c in stray)
            with self.store.transaction() as tx:
                tx.delete("spark_results", token)
        batch_report = self._resolve_batches()
        return ResolveReport(
            tuple(committed + list(batch_report.committed)),
            tuple(aborted + list(batch_report.aborted)),
            tuple(failed + list(batch_report.failed)),
        )

    def _resolve_batches(self) -> ResolveReport:
        committed: list[str] = []
        aborted: list[str] = []
        failed: list[str] = []
        with self.store.transaction(readonly=True) as tx:
            batches = tx.batches()
        for batch in batches:
            if batch["status"] == PREPARED:
                try:
                    self.commit_batch(batch["batch_id"])
                    committed.extend(t["label"] for t in batch["transactions"] or [])
                except Exception:  # noqa: BLE001 - reported by the check, retried next run
                    failed.extend(t["label"] for t in batch["transactions"] or [])
            elif batch["status"] == RUNNING:
                self._abandon_batch(batch)
                aborted.append(batch["batch_id"])
        return ResolveReport(tuple(committed), tuple(aborted), tuple(failed))

    # -- binlog -----------------------------------------------------------------------------

    def _startup(self) -> Any:
        """The resolved ``scan.startup.mode``, fixed at first use (``latest-offset`` means the
        latest offset when the pipeline first ran, not at every run). A start without a snapshot
        records the captured tables' schemas at that offset in the same transaction."""
        from cdc_core.mysql.schema_history import SchemaHistory
        from cdc_core.mysql.startup import StartupPlan, resolve_startup

        saved = self.store.get(BINLOG_NS, "startup")
        if saved is not None:
            return StartupPlan.from_dict(saved)
        plan = resolve_startup(self.definition.source, self.settings)
        schemas: list[TableSchema] = []
        if not plan.snapshot and plan.start is not None:
            # A DDL that runs before the first batch then reaches the stream as a change, and the
            # rows written before it decode with the schema they were written with.
            conn = self._connect()
            try:
                schemas = [self._live_schema(conn, t) for t in self._captured_tables()]
            finally:
                conn.close()
        with self.store.transaction() as tx:
            if tx.get(BINLOG_NS, "startup") is not None:  # another process got here first
                return StartupPlan.from_dict(tx.get(BINLOG_NS, "startup"))
            if schemas:
                SchemaHistory(self.store).bootstrap(schemas, plan.start, tx=tx)
                tx.put(BINLOG_NS, "startup_schemas", True)
            tx.put(BINLOG_NS, "startup", plan.to_dict())
        return plan

    def _finished_chunks(self) -> list[Any]:
        from cdc_core.mysql.finished_chunk import FinishedChunk

        with self.store.transaction(readonly=True) as tx:
            return [FinishedChunk.from_state(c) for c in tx.chunks(status=COMMITTED)]

    def binlog_ready(self) -> bool:
        """The stream may run: no snapshot is needed, or the snapshot is committed."""
        return not self._startup().snapshot or self.snapshot_done()

    def _stream_start(self) -> Any:
        """The committed offset; before the first batch, where the stream must start."""
        from cdc_core.mysql.offsets import BinlogOffset

        committed = self.store.get(BINLOG_NS, "committed_offset")
        if committed is not None:
            return BinlogOffset.from_dict(committed)
        plan = self._startup()
        if not plan.snapshot:
            return plan.start
        chunks = self._finished_chunks()
        if chunks:
            return min(c.high_watermark for c in chunks)
        planned = self.store.get(BINLOG_NS, "plan_offset")  # a snapshot of no tables
        return None if planned is None else BinlogOffset.from_dict(planned)

    def binlog_lag(self) -> BinlogLag:
        """Cheap (no Spark): the committed offset against the server's current position."""
        server = self._server_offset()
        start = self._stream_start() if self.binlog_ready() else None
        behind = start is not None and server > start
        bytes_behind = None
        if start is not None and start.file == server.file:
            bytes_behind = server.position - start.position
        return BinlogLag(None if start is None else start.to_dict(), server.to_dict(), behind, bytes_behind)

    def _stop_offset(self) -> Any:
        plan = self._startup()
        if plan.stop_at_max_high_watermark:
            chunks = self._finished_chunks()
            if chunks:
                return max(c.high_watermark for c in chunks)
        return self._server_offset()

    def run_binlog_batch(self, max_events: int | None = None, *, stop: Any = None) -> BatchResult:
        """Apply one micro-batch from the committed offset to the server's position at the start
        (or ``stop``), stopping early at the first DDL on a captured table; its loads end up PREPARED.

        A batch with no change still moves the offset (it is recorded and committed like any other).
        """
        import time as _time

        from cdc_core.doris.labels import binlog_batch_id
        from cdc_core.mysql.binlog_reader import BinlogSplitReader
        from cdc_core.mysql.collation import CollationWeigher
        from cdc_core.mysql.connection import connect
        from cdc_core.mysql.hybrid_assigner import BinlogSplit
        from cdc_core.mysql.purge import ensure_offset_available
        from cdc_core.mysql.schema_history import SchemaHistory
        from jobs.binlog_job import change_rows, load_in_process, load_with_spark
        from jobs.transforms import transform_for

        self.resolve_pending()
        if not self.binlog_ready():
            raise RuntimeError(
                "the snapshot is not finished: every chunk must be committed before the binlog stream starts "
                "(backfill snapshot_chunks, or run `tidemark run --once`)"
            )
        start = self._stream_start()
        stop = stop or self._stop_offset()
        if start is None or stop <= start:
            return BatchResult("", {} if start is None else start.to_dict(),
                               {} if start is None else start.to_dict(), {}, ())
        ensure_offset_available(self.settings, start)
        source = self.definition.source
        history = SchemaHistory(self.store)
        captured_tables = self._captured_tables()
        if not self.store.get(BINLOG_NS, "startup_schemas"):
            # Schemas not recorded when the stream's start was fixed (a snapshot's tables are
            # recorded by its plan; a state from an older release has none): as they are now.
            # Otherwise a table the history lacks was created after the start, and its CREATE
            # TABLE in the binlog brings it in.
            conn = self._connect()
            try:
                history.bootstrap([self._live_schema(conn, t) for t in captured_tables
                                   if history.schema_at(t, start) is None], start)
            finally:
                conn.close()
        def live_schema(table_id: TableId) -> TableSchema | None:
            # A table the history does not know (renamed into a captured name, created before a
            # no-snapshot start): its schema as the server has it now.
            conn = self._connect()
            try:
                return self._live_schema(conn, table_id)
            except Exception:  # noqa: BLE001 - gone from the server: the stream decides what that means
                return None
            finally:
                conn.close()

        schemas = history.lookup_at(start, fallback=live_schema)
        plan = self._startup()
        chunks = self._finished_chunks()
        stream_tables = tuple(t for t in captured_tables if not any(c.table_id == t for c in chunks)) \
            if not plan.snapshot else ()
        selector = source.selector
        weigher = CollationWeigher(lambda: connect(self.settings))
        try:
            split = BinlogSplit(start, stop, tuple(chunks), stream_tables)
            event_filter = split.event_filter(
                schemas, captured=lambda t: selector.matches(t.database, t.table), source=source, weigher=weigher
            )
            # The stream's reader: the first server id of the range, closed after the batch so that
            # no dump thread lingers on the server under that id.
            with BinlogSplitReader.from_source(source, schemas) as reader:
                batch = reader.read_batch(
                    start, stop, max_events=max_events or self.definition.pipeline.binlog_max_events,
                    stop_at_schema_change=True, event_filter=event_filter,
                )
        finally:
            weigher.close()
        end = batch.end
        batch_id = binlog_batch_id(start.sequence, end.sequence)
        by_table: dict[TableId, list[Any]] = {}
        for event in batch.events:
            if isinstance(event, DataChangeEvent):
                by_table.setdefault(event.table_id, []).append(event)
        targets = {t: self.sink.route(t) for t in by_table}
        with self.store.transaction() as tx:
            tx.put_batch(batch_id, start.to_dict(), end.to_dict(), RUNNING, None,
                         {"probes": [[str(t), str(target), f"{t}:{batch_id}:p0"]
                                     for t in by_table for target in targets[t]]})
        committables: list[dict[str, Any]] = []
        try:
            for table_id, events in by_table.items():
                schema = schemas(table_id)
                if schema is None:
                    raise RuntimeError(f"no schema known for {table_id} at {start}; re-plan the pipeline")
                for target in targets[table_id]:
                    if not self.sink.catalog.table_exists(target.database, target.table):
                        self.sink.create_table(schema, target)
                rows = change_rows(events, schema)
                big = len(rows) >= self.definition.pipeline.binlog_spark_min_events
                if big or transform_for(self.definition, table_id) is not None:
                    from jobs.spark import get_spark

                    committables += load_with_spark(get_spark(self.definition), self.definition,
                                                    self.sink.label_prefix, targets[table_id], batch_id, rows,
                                                    schema)
                else:
                    committables += load_in_process(self.sink, targets[table_id], batch_id, rows, schema)
        except BaseException:
            with self.store.transaction(readonly=True) as tx:
                record = next(b for b in tx.batches() if b["batch_id"] == batch_id)
            self._abandon_batch(record)
            raise
        ddl = None
        if batch.schema_change:
            first = batch.schema_change[0]
            ddl = {"table_id": str(first.table_id), "type": first.type_name, "ddl": first.ddl,
                   "offset": None if first.offset is None else first.offset.to_dict(),
                   "resume_after": None if batch.schema_change_end is None else batch.schema_change_end.to_dict()}
        last_ms = max((e.commit_time_ms or 0 for e in batch.events if isinstance(e, DataChangeEvent)), default=0)
        lag = (_time.time() - last_ms / 1000.0) if last_ms else None
        events_per_table = {str(t): len(e) for t, e in by_table.items()}
        detail = {"events_per_table": events_per_table, "stopped_at_ddl": ddl, "lag_s": lag,
                  "events_read": batch.events_read}
        with self.store.transaction() as tx:
            tx.put_batch(batch_id, start.to_dict(), end.to_dict(), PREPARED, committables, detail)
            if ddl is not None:
                tx.put(BINLOG_NS, "pending_ddl", ddl)
        return BatchResult(batch_id, start.to_dict(), end.to_dict(), events_per_table, tuple(committables),
                           ddl, lag)

    def _captured_tables(self) -> list[TableId]:
        from cdc_core.mysql.discovery import list_captured_tables

        conn = self._connect()
        try:
            return list_captured_tables(conn, self.definition.source.selector)
        finally:
            conn.close()

    def _abandon_batch(self, record: dict[str, Any]) -> None:
        probes = [(TableId.parse(target), batch) for _src, target, batch in (record.get("detail") or {}).get("probes", [])]
        try:
            if record.get("transactions"):
                self.sink.abort(record["transactions"])
            if probes:
                self.sink.recover(probe=probes)
        finally:
            with self.store.transaction() as tx:
                tx.put_batch(record["batch_id"], record["start_offset"], record["end_offset"], ABORTED,
                             record.get("transactions"), record.get("detail"))

    def _batch(self, batch_id: str) -> dict[str, Any]:
        with self.store.transaction(readonly=True) as tx:
            for batch in tx.batches():
                if batch["batch_id"] == batch_id:
                    return batch
        raise KeyError(f"no binlog batch {batch_id!r} in the state store")

    def commit_batch(self, batch_id: str) -> None:
        """Commit the batch's loads (idempotent); only then does the committed offset advance."""
        if not batch_id:
            return
        batch = self._batch(batch_id)
        if batch["status"] == COMMITTED:
            return
        if batch["status"] != PREPARED:
            raise RuntimeError(f"binlog batch {batch_id} is {batch['status']}, not PREPARED; it cannot be committed")
        self.sink.commit(batch["transactions"] or [])
        with self.store.transaction() as tx:
            current = tx.get(BINLOG_NS, "committed_offset")
            if current is not None and _offset_key(current) > _offset_key(batch["start_offset"]):
                raise RuntimeError(
                    f"binlog batch {batch_id} starts at {batch['start_offset']} but the committed offset is already "
                    f"{current}: two streams ran at once for this pipeline"
                )
            tx.put_batch(batch_id, batch["start_offset"], batch["end_offset"], COMMITTED, batch["transactions"],
                         batch["detail"])
            tx.put(BINLOG_NS, "committed_offset", batch["end_offset"])

    def abort_batch(self, batch_id: str) -> None:
        """Abort the batch's loads; the committed offset stays where it was."""
        if not batch_id:
            return
        batch = self._batch(batch_id)
        if batch["status"] in (PREPARED, RUNNING):
            self._abandon_batch(batch)

    def pending_transactions(self) -> list[dict[str, Any]]:
        """PREPARED-but-not-finished transactions (for the ``no_pending_transactions`` check)."""
        out = []
        with self.store.transaction(readonly=True) as tx:
            for record in tx.chunks(status=PREPARED):
                for txn in record["transactions"] or []:
                    out.append({**txn, "owner": chunk_key(record["table_id"], record["chunk_index"])})
            for batch in tx.batches(status=PREPARED):
                for txn in batch["transactions"] or []:
                    out.append({**txn, "owner": batch["batch_id"]})
        return out

    def chunk_parity(self, key: str) -> ParityResult:
        """Row count and checksum of the chunk's key range, MySQL against Doris."""
        from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
        from cdc_core.mysql.splits import SnapshotSplit

        record = self._records([key])[0]
        table_id = TableId.parse(record["table_id"])
        schema, key_column = self._schema_and_chunk_key(table_id)
        split = SnapshotSplit(table_id, record["chunk_index"],
                              None if record["start"] is None else tuple(record["start"]),
                              None if record["end"] is None else tuple(record["end"]), (key_column.name,))
        start = None if record["start"] is None else record["start"][0]
        end = None if record["end"] is None else record["end"][0]
        with SnapshotSplitReader.from_source(self.definition.source) as reader:
            return self._parity(schema, reader, split, key_column, (start, end))

    def table_parity(self, table_id: str) -> ParityResult:
        """Row count and checksum of the whole table, MySQL against Doris."""
        from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
        from cdc_core.mysql.splits import SnapshotSplit

        tid = TableId.parse(table_id)
        schema, key_column = self._schema_and_chunk_key(tid)
        split = SnapshotSplit(tid, 0, None, None, (key_column.name,))
        with SnapshotSplitReader.from_source(self.definition.source) as reader:
            return self._parity(schema, reader, split, key_column, None)

    def _schema_and_chunk_key(self, table_id: TableId) -> tuple[TableSchema, Any]:
        from cdc_core.mysql.discovery import chunk_key_column

        conn = self._connect()
        try:
            schema = self._live_schema(conn, table_id)
        finally:
            conn.close()
        return schema, chunk_key_column(schema, self.definition.source.chunk_key_column)

    def _parity(self, schema: TableSchema, reader: Any, split: Any, key_column: Any,
                key_range: tuple[Any, Any] | None) -> ParityResult:
        from jobs.parity import RowSet, doris_rows_by_keys, doris_rows_in_range, is_text_key, mysql_rows
        from jobs.transforms import transform_for

        tinyint = self.definition.source.tinyint1_as_boolean
        targets = self._targets(str(schema.table_id))
        if transform_for(self.definition, schema.table_id) is not None or len(targets) != 1:
            why = "the table has a transform" if len(targets) == 1 else "the table is routed to several targets"
            return ParityResult(str(schema.table_id), key_range, 0, 0, "", "", {"skipped": why})
        target = targets[0]
        if self.sink.router.is_merged(target, self._captured_tables()):
            return ParityResult(str(schema.table_id), key_range, 0, 0, "", "",
                                {"skipped": f"{target} merges several source tables"})
        columns = list(schema.columns)
        names = [c.name for c in columns]
        mine, theirs = RowSet(columns, tinyint), RowSet(columns, tinyint)
        keys: list[Any] = []
        key_index = names.index(key_column.name)
        for row in mysql_rows(reader, schema, split):
            mine.add(row)
            keys.append(row[key_index])
        text_key = is_text_key(key_column, tinyint)
        if text_key and key_range is not None:
            doris = doris_rows_by_keys(self.sink.catalog, target, names, key_column.name, keys)
        else:
            start, end = key_range if key_range is not None else (None, None)
            unique = tuple(schema.primary_key) == (key_column.name,)
            doris = doris_rows_in_range(self.sink.catalog, target, names, key_column.name, start, end,
                                        unique_key=unique)
        for row in doris:
            theirs.add(row)
        detail = {"target": str(target)}
        if text_key and key_range is not None:
            detail["note"] = "character chunk key: Doris rows looked up by the chunk's MySQL keys"
        return ParityResult(str(schema.table_id), key_range, mine.count, theirs.count, mine.checksum,
                            theirs.checksum, detail)

    def close(self) -> None:
        if self._sink is not None:
            self._sink.close()
        self.store.close()
