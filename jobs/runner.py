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
PENDING, RUNNING, PREPARED, COMMITTED = "PENDING", "RUNNING", "PREPARED", "COMMITTED"
SNAPSHOT_NS = "snapshot"


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
    def sink(self) -> Any:
        if self._sink is None:
            from cdc_core.doris.sink import DorisSink

            self._sink = DorisSink.from_pipeline(self.definition)
        return self._sink

    def _connect(self) -> Any:
        from cdc_core.mysql.connection import connect

        return connect(self.settings, text_values=True)

    def _live_schema(self, conn: Any, table_id: TableId) -> TableSchema:
        from cdc_core.mysql.discovery import read_table_schema

        return read_table_schema(conn, table_id)

    def _chunk_batch_id(self, table_id: str, index: int, generation: int) -> str:
        from cdc_core.doris.labels import chunk_batch_id

        return f"{table_id}:{chunk_batch_id(index, generation)}"

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
                for table_id, tasks in tasks_by_table.items():
                    schema = self._live_schema(conn, TableId.parse(table_id))
                    key = chunk_key_column(schema, self.definition.source.chunk_key_column)
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
                detail = {"duration_s": o.duration_s, "backfill_events": o.backfill_events}
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
                probes.append((target, self._chunk_batch_id(c["table_id"], c["chunk_index"], c["generation"])))
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
        return ResolveReport()

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

    def close(self) -> None:
        if self._sink is not None:
            self._sink.close()
        self.store.close()
