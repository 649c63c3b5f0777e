"""The schema-change steps over the pipeline service: quiesce, flush, apply, resume.

The stream stops *before* a DDL on a captured table; this job pauses it, commits everything
before the DDL with the old schema, applies the derived changes to Doris with the sink's
metadata applier, records the source's new schema, and lets the stream go on past the DDL (the
flow in Dagster terms is in docs/ARCHITECTURE.md). The coordinator's state machine
(:class:`cdc_core.schema_evolution.registry.SchemaRegistry`) is persisted at every step, so each step is a
no-op when the registry is already past it and a re-run resumes exactly where a crash stopped.

The Dagster ops (``orchestration/defs/schema_change_job.py``) and ``tidemark run --once`` call these
steps through ``PipelineService.schema_change_steps``; so do the tests. It is one module of
~550 lines because the four steps and their helpers share one state machine and one set of
invariants (what the stream's filter expects of the chunks a change adds or marks for reading).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, assert_never

from cdc_core.doris.errors import SchemaChangeError as DorisSchemaChangeError
from cdc_core.instrumentation.faults import fault_point
from cdc_core.model import events as ev
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.model.schema_changes import apply_schema_change
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.connection import connect
from cdc_core.mysql.ddl_scanner import DdlScanner
from cdc_core.mysql.schema_history import SchemaHistory
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.reload import request_reload
from cdc_core.pipeline.resnapshot import move_binlog
from cdc_core.pipeline.snapshot_estimate import SNAPSHOT_MODES
from cdc_core.schema_evolution.derivation import (
    DerivedChange,
    SchemaChangeBehavior,
    SchemaChangeRefused,
    SchemaChangeTypeFilter,
    SchemaDerivator,
    apply_to_schema,
    evolved_after,
)
from cdc_core.schema_evolution.registry import (
    DROPPED_MARK,
    RequestStatus,
    SchemaRegistry,
    schema_from_history,
)
from cdc_core.state import ChunkRecord, ChunkStatus
from cdc_core.state.keys import BINLOG_PAUSED, COMMITTED_OFFSET, SCHEMA_CHANGE_SCAN, STALE_IDENTITIES

if TYPE_CHECKING:
    from cdc_core.pipeline.service import PipelineService

logger = logging.getLogger(__name__)

_Step = TypeVar("_Step", bound=Callable[..., dict[str, Any]])


def _fault_after(step: str) -> Callable[[_Step], _Step]:
    """The step, then the fault point ``schema_change.after_<step>`` (see ``cdc_core.instrumentation.faults``)."""
    def wrap(func: _Step) -> _Step:
        @functools.wraps(func)
        def run(self: SchemaChangeSteps, *args: Any, **kwargs: Any) -> dict[str, Any]:
            out = func(self, *args, **kwargs)
            logger.info("schema change of %s: %s → %s", self.ctx.definition.name, step, out.get("status"))
            fault_point(f"schema_change.after_{step}", status=out.get("status"))
            return out
        return run  # type: ignore[return-value]
    return wrap

MAX_FLUSH_BATCHES = 10_000


@dataclass(frozen=True)
class TableEffect:
    """What a schema change does to the set of source tables, as the steps need it: ``created``
    (a new table: no schema before the DDL), ``renamed_to`` (the table's new name), ``enters``
    (the name a table comes to the stream under: created or renamed into), ``removed`` (the
    table's last schema is kept, marked dropped), ``reload`` (its rows changed without row events:
    partition maintenance)."""

    created: bool = False
    renamed_to: TableId | None = None
    enters: TableId | None = None
    removed: bool = False
    reload: bool = False


_NO_EFFECT = TableEffect()


def table_effect(event: ev.SchemaChangeEvent) -> TableEffect:
    """The one dispatch of the schema-change steps over the event types."""
    match event:
        case ev.CreateTableEvent():
            return TableEffect(created=True, enters=event.table_id)
        case ev.RenameTableEvent():
            return TableEffect(renamed_to=event.new_table_id, enters=event.new_table_id, removed=True)
        case ev.DropTableEvent():
            return TableEffect(removed=True)
        case ev.PartitionRowsEvent():
            return TableEffect(reload=True)
        case (ev.AddColumnEvent() | ev.DropColumnEvent() | ev.RenameColumnEvent() | ev.AlterColumnTypeEvent()
              | ev.AlterColumnPositionEvent() | ev.AlterPrimaryKeyEvent() | ev.AlterTableCharsetEvent()
              | ev.AlterColumnCommentEvent() | ev.AlterTableCommentEvent() | ev.TruncateTableEvent()):
            return _NO_EFFECT
        case _:
            assert_never(event)


def _alters_images(event: ev.SchemaChangeEvent) -> bool:
    """Whether a change alters existing rows' values as a keyless table's row identity hashes them."""
    match event:
        case ev.AddColumnEvent():
            column = event.column
            return column is not None and (column.default is not None or not column.nullable)
        case ev.DropColumnEvent() | ev.RenameColumnEvent() | ev.AlterColumnTypeEvent():
            return True
        case _:
            return False


class SchemaChangeApplyError(RuntimeError):
    """Doris refused a derived change under a behavior that does not tolerate it."""


def _offset(data: dict[str, Any] | None) -> BinlogOffset | None:
    return BinlogOffset.from_dict(data) if data else None


class SchemaChangeSteps:
    """The four steps of one pipeline's schema change. ``in_flight()`` lists the stream runs still
    going (Dagster run ids); quiesce waits until it is empty."""

    def __init__(self, service: PipelineService, *, run_id: str = "", in_flight: Callable[[], Sequence[str]] | None = None,
                 poll_s: float = 0.5, wait_timeout_s: float | None = None, log_fn: Callable[[str], None] | None = None):
        self.service = service
        self.ctx = service.context
        self.registry = SchemaRegistry(self.ctx.store)
        self.run_id = run_id
        self.in_flight = in_flight or (lambda: ())
        self.poll_s = poll_s
        self.wait_timeout_s = wait_timeout_s if wait_timeout_s is not None else float(
            self.ctx.definition.pipeline.schema_operator_rpc_timeout)
        self.log = log_fn or logger.info

    @property
    def behavior(self) -> SchemaChangeBehavior:
        return SchemaChangeBehavior.parse(self.ctx.definition.pipeline.schema_change_behavior)

    # -- finding DDL --------------------------------------------------------------------------

    def scanner(self) -> Any:
        source = self.ctx.definition.source
        committed = self.committed_offset()
        history = SchemaHistory(self.ctx.store)
        lookup = history.lookup_at(committed) if committed is not None else (lambda _t: None)
        return DdlScanner(lambda: connect(self.ctx.settings), lambda t: source.selector.matches(t.database, t.table),
                          lookup, parse_online_schema_changes=source.parse_online_schema_changes)

    def committed_offset(self) -> BinlogOffset | None:
        return COMMITTED_OFFSET.get(self.ctx.store)

    def next_ddl(self) -> Any:
        """The first DDL on a captured table between the committed offset and the server's
        position (a :class:`~cdc_core.mysql.ddl_scanner.FoundDdl`), or None. Ranges already scanned
        clean are remembered, so a stream far behind is not scanned again at every tick."""
        if not self.service.binlog_ready():
            return None
        lag = self.service.binlog_lag()
        start, server = _offset(lag.committed_offset), _offset(lag.server_offset)
        if start is None or server is None or server <= start:
            return None
        if server.epoch != start.epoch:
            return None  # a failover not followed yet: the stream's next batch stops at any DDL itself
        memo = SCHEMA_CHANGE_SCAN.get_or(self.ctx.store, {})
        from_ = start
        if memo.get("start") and memo.get("clean_to"):
            m_start, m_clean = BinlogOffset.from_dict(memo["start"]), BinlogOffset.from_dict(memo["clean_to"])
            if m_start <= start <= m_clean:
                from_ = m_clean
        result = self.scanner().scan(from_, server)
        SCHEMA_CHANGE_SCAN.put(self.ctx.store, {"start": start.to_dict(),
                                                "clean_to": max(result.scanned_to, from_).to_dict()})
        return result.found

    # -- the four steps ------------------------------------------------------------------------

    @_fault_after("quiesce")
    def quiesce(self, ddl_offset: BinlogOffset | None = None) -> dict[str, Any]:
        """Pause the stream (flag in the state store, read by the binlog sensor and schedule) and
        wait until no stream run is in flight. A DDL already carried over is not requested again."""
        if ddl_offset is not None and self.registry.status is RequestStatus.IDLE and self.registry.handled(ddl_offset):
            self.log(f"the DDL at {ddl_offset} was already carried over; nothing to do")
            return {"status": "already_handled", "ddl_offset": ddl_offset.to_dict()}
        state = self.registry.request(ddl_offset, self.run_id)
        started = time.monotonic()
        waited: list[str] = []
        while True:
            running = list(self.in_flight())
            if not running:
                break
            waited = running
            if time.monotonic() - started > self.wait_timeout_s:
                raise TimeoutError(
                    f"stream run(s) {', '.join(r[:8] for r in running)} still in flight after "
                    f"{self.wait_timeout_s:.0f} s (pipeline.schema-operator.rpc-timeout); the stream stays paused. "
                    "Wait for or terminate them, then run schema_change again")
            time.sleep(self.poll_s)
        return {"status": state["status"], "requested_offset": state.get("requested_offset"),
                "waited_for": waited, "waited_s": round(time.monotonic() - started, 3)}

    @_fault_after("flush")
    def flush(self) -> dict[str, Any]:
        """WAITING_FOR_FLUSH → APPLYING: apply and commit the binlog up to the DDL with the old
        schema, then read the DDL's events. No DDL up to the requested offset → back to IDLE."""
        cur = self.registry.current()
        if cur is None or cur["status"] != RequestStatus.WAITING_FOR_FLUSH.value:
            return {"status": self.registry.status.value, "skipped": True}
        if not self.service.binlog_ready():
            raise RuntimeError("the snapshot is not finished: a schema change is carried over by the stream, which "
                               "starts once every snapshot chunk is committed")
        requested = _offset(cur.get("requested_offset"))
        self._pin_stream_tables()
        batches = events = 0
        for _ in range(MAX_FLUSH_BATCHES):
            committed = self.committed_offset()
            if requested is not None and committed is not None and committed >= requested:
                self.registry.nothing_to_apply(committed)
                return {"status": RequestStatus.IDLE.value, "ddl": None, "batches": batches, "events": events,
                        "reason": f"the stream is at {committed}, past the requested DDL offset {requested}"}
            batch = self.service.run_binlog_batch()
            self.service.commit_batch(batch.batch_id)
            batches += 1
            events += sum(batch.events_per_table.values())
            if self.registry.current() is None:
                # the batch met a purged binlog and healed by a resnapshot, which dropped this request
                # (its DDL was in the purged range) and carried the schema over itself
                return {"status": RequestStatus.IDLE.value, "ddl": None, "batches": batches, "events": events,
                        "reason": "superseded by the resnapshot after a purged binlog (cdc_core/pipeline/"
                                  "purged_schemas.py)"}
            if batch.stopped_at_ddl:
                break
            if not batch.batch_id or batch.end_offset == batch.start_offset:
                committed = self.committed_offset()
                self.registry.nothing_to_apply(committed)  # type: ignore[arg-type]
                return {"status": RequestStatus.IDLE.value, "ddl": None, "batches": batches, "events": events,
                        "reason": f"no DDL on a captured table up to {committed}"}
        else:
            raise RuntimeError(f"the stream did not reach the DDL after {MAX_FLUSH_BATCHES} batches")
        flushed_to = self.committed_offset()
        ddl_events, resume_after = self._read_ddl(flushed_to)  # type: ignore[arg-type]
        self.registry.flushed(flushed_to, ddl_events, resume_after)  # type: ignore[arg-type]
        return {"status": RequestStatus.APPLYING.value, "batches": batches, "events": events,
                "flushed_to": flushed_to.to_dict(), "resume_after": resume_after.to_dict(),  # type: ignore[union-attr]
                "ddl": ddl_events[0].ddl, "event_types": [e.type_name for e in ddl_events]}

    def _pin_stream_tables(self) -> None:
        """Without a snapshot the runner streams the captured tables the server lists *now*; a
        table this DDL drops or renames away would have its last changes before the DDL filtered
        out. Each captured table the schema history knows gets a finished whole-table "chunk" at
        the committed offset, so its changes after it are streamed whatever the server lists."""
        if self.ctx.definition.source.startup_mode in SNAPSHOT_MODES:
            return
        committed = self.committed_offset()
        if committed is None:
            return
        selector = self.ctx.definition.source.selector
        with self.ctx.store.transaction() as tx:
            for name in tx.schema_tables():
                table_id = TableId.parse(name)
                schema = schema_from_history(tx.schema_at(name, committed.sequence))
                if schema is None or not selector.matches(table_id.database, table_id.table):
                    continue
                if tx.chunks(table_id=name):
                    continue
                self._add_stream_chunk(tx, table_id, schema, committed, committed, "streamed without a snapshot")

    @staticmethod
    def _add_stream_chunk(tx: Any, table_id: TableId, schema: TableSchema, low: BinlogOffset, high: BinlogOffset,
                          why: str) -> None:
        key = (schema.primary_key or (schema.columns[0].name,))[0]
        tx.add_chunks([ChunkRecord.planned(str(table_id), 0)])
        tx.update_chunk(str(table_id), 0, status=ChunkStatus.COMMITTED, low_watermark=low.to_dict(),
                        high_watermark=high.to_dict(), transactions=[], rows=0,
                        detail={"key_columns": [key], "schema_change": why})

    def _schema_lookup(self, at: BinlogOffset) -> Callable[[TableId], TableSchema | None]:
        def lookup(table_id: TableId) -> TableSchema | None:
            with self.ctx.store.transaction(readonly=True) as tx:
                data = tx.schema_at(str(table_id), at.sequence)
            if data is not None:
                return schema_from_history(data)
            try:
                return self.ctx.live_schema(table_id)
            except Exception:  # noqa: BLE001 - a table the server does not have has no schema
                return None

        return lookup

    def _read_ddl(self, at: BinlogOffset) -> tuple[list[ev.SchemaChangeEvent], BinlogOffset]:
        """The DDL right after ``at``, read with the stream's own reader and parser."""
        source = self.ctx.definition.source
        lo, hi = source.server_id_range()
        reader = BinlogSplitReader.from_source(source, self._schema_lookup(at), server_id=hi if hi != lo else lo)
        try:
            batch = reader.read_batch(at, None, max_events=1000, stop_at_schema_change=True)
        finally:
            reader.close()
        if not batch.schema_change or batch.schema_change_end is None:
            raise RuntimeError(f"expected a DDL on a captured table right after {at}, found none")
        return list(batch.schema_change), batch.schema_change_end

    @_fault_after("apply")
    def apply(self) -> dict[str, Any]:
        """APPLYING → FINISHED: derive the Doris changes per ``schema.change.behavior``, apply them
        (each outcome recorded as it happens), record the new source schemas, the evolved Doris
        schemas and, for a table new to the stream, where its stream starts."""
        cur = self.registry.current()
        if cur is None or cur["status"] != RequestStatus.APPLYING.value:
            return {"status": self.registry.status.value, "skipped": True}
        behavior = self.behavior
        events = self.registry.events()
        flushed_to = BinlogOffset.from_dict(cur["flushed_to"])
        ddl_offset = BinlogOffset.from_dict(cur["ddl_offset"])
        upstream = self._upstream(flushed_to, events)
        if cur.get("derived") is None:
            sink_opts = self.ctx.definition.sink
            derivator = SchemaDerivator(
                behavior, self.ctx.sink.route,
                SchemaChangeTypeFilter.of(behavior, sink_opts.include_schema_changes, sink_opts.exclude_schema_changes),
                captured=lambda t: self.ctx.definition.source.selector.matches(t.database, t.table))
            evolved = self._evolved(upstream, derivator)
            try:
                derived, evolved = derivator.derive(events, upstream, evolved)
            except SchemaChangeRefused as exc:
                self.registry.record_error(str(exc))
                raise
            self.registry.set_derived(derived, behavior, evolved)
        derived = self.registry.derived() or []
        outcomes = self.registry.outcomes()
        recreate = set(self.registry.recreating())
        recreated: set[str] = set()
        for i, change in enumerate(derived):
            if outcomes[i] is not None:
                if str(change.target) in recreate and outcomes[i].get("recreated"):  # type: ignore[union-attr]
                    recreated.add(str(change.target))
                continue
            if str(change.target) in recreate:
                outcome = self._recreate(change, upstream, events, done=str(change.target) in recreated)
                recreated.add(str(change.target))
            else:
                outcome = self._apply_one(change, behavior)
            self.registry.record_outcome(i, outcome)
            outcomes[i] = outcome
            self.log(f"{change.describe()}: {outcome['outcome']} {outcome.get('statement') or outcome.get('reason', '')}")
        cur = self.registry.current() or {}
        before = {TableId.parse(t): (None if s is None else TableSchema.from_dict(s))
                  for t, s in (cur.get("evolved_before") or {}).items()}
        done = [c for c, o in zip(derived, outcomes, strict=True) if o and o["outcome"] in ("applied", "skipped")]
        evolved = evolved_after(before, done)
        new_tables = self._new_stream_tables(events)
        snapshot = self.ctx.definition.source.newly_added_table_enabled
        if snapshot and new_tables:
            self._snapshot_new_tables(new_tables, upstream, events)
        altered = {c.event.table_id for c, o in zip(derived, outcomes, strict=True) if o and o["outcome"] == "applied"}
        with self.ctx.store.transaction(readonly=True) as tx:
            rehashed, stale = self._identity_reloads(tx, events, altered, ddl_offset, upstream)
        if rehashed:
            # The reload's re-read must stamp its rows above every sequence the stale identities
            # carry, and chunks read after the DDL carry the binlog's position now: move it on
            # (before the chunks are marked, so a crash in between only rotates once more).
            move_binlog(self.ctx)
        with self.ctx.store.transaction() as tx:
            self._record_history(tx, upstream, events, ddl_offset)
            if not snapshot:
                self._start_streaming(tx, new_tables, upstream, events, flushed_to, ddl_offset)
            self._keep_stale_identities(tx, events, rehashed, stale, ddl_offset)
            reloaded = self._request_reloads(tx, events, ddl_offset, rehashed)
            selector = self.ctx.definition.source.selector
            for table_id in sorted(rehashed - set(reloaded), key=str):  # a stale table renamed into this name
                if selector.matches(table_id.database, table_id.table):
                    reloaded[table_id] = request_reload(tx, table_id, ddl_offset, "stale row identities")
            for name in sorted(recreate):  # its rows: every chunk read again from now (tidemark resnapshot)
                reloaded[TableId.parse(name)] = request_reload(tx, TableId.parse(name), ddl_offset, "resnapshot")
            if not snapshot:  # (scan.newly-added-table.enabled read them above)
                for table_id in self._renamed_in(events, new_tables):
                    reloaded[table_id] = request_reload(tx, table_id, ddl_offset, "renamed into the captured tables")
            reread = self._mark_chunks_read_past(tx, altered - set(reloaded) - stale, ddl_offset)
            self.registry.finish(tx, evolved)
        if reread:
            self.log(f"reading again {len(reread)} chunk(s) whose reads ended after the DDL: {', '.join(reread)}")
        for table_id, keys in reloaded.items():
            why = ("its rows' hidden identity hashes their values, and the change altered them" if table_id in rehashed
                   else "partition maintenance changed rows without row events")
            self.log(f"{table_id}: {why}; reloading it "
                     f"({len(keys)} chunk(s)), then deleting from Doris what MySQL no longer has")
            reread += keys
        sweeps: list[dict[str, Any]] = []
        if reread:
            self.service.run_chunks(reread)
            self.service.commit_chunks(reread)
        if reloaded:
            fault_point("schema_change.before_sweep", tables=",".join(sorted(map(str, reloaded))))
            sweeps = [{"table": r.table_id, "deleted": r.deleted, "threshold": r.threshold,
                       "skipped": list(r.skipped), "waiting": r.waiting} for r in self.service.sweep_reloads()]
        return {"status": RequestStatus.FINISHED.value, "behavior": behavior.value,
                "changes": [{"change": c.describe(), **(o or {})} for c, o in zip(derived, outcomes, strict=True)],
                "new_tables": [str(t) for t in new_tables], "reread_chunks": reread,
                "reloaded_tables": sorted(str(t) for t in reloaded), "sweeps": sweeps}

    @_fault_after("resume")
    def resume(self, *, first_batch: bool = False) -> dict[str, Any]:
        """FINISHED → IDLE: the committed offset moves past the DDL and the pause ends (one
        transaction). The stream's next batch reads rows of the new schema; with ``first_batch``
        this step applies it right away (as Flink's operator releases the records it held), so the
        rows written since the DDL do not wait for the next stream run to be launched."""
        status = self.registry.status
        if status is RequestStatus.IDLE:
            return {"status": status.value, "skipped": True}
        if status is not RequestStatus.FINISHED:
            raise RuntimeError(f"the schema change is {status.value}; run its earlier steps first")
        record = self.registry.release()
        out: dict[str, Any] = {"status": RequestStatus.IDLE.value, "resumed_at": record["resume_after"],
                               "ddl_offset": record["ddl_offset"]}
        if first_batch and not BINLOG_PAUSED.get(self.ctx.store):
            batch = self.service.run_binlog_batch()
            self.service.commit_batch(batch.batch_id)
            out["first_batch"] = {"batch_id": batch.batch_id, "events": sum(batch.events_per_table.values()),
                                  "end_offset": batch.end_offset, "stopped_at_ddl": batch.stopped_at_ddl}
        return out

    def run(self, ddl_offset: BinlogOffset | None = None) -> dict[str, Any]:
        """All four steps (what ``tidemark run --once`` does in process)."""
        return {"quiesce": self.quiesce(ddl_offset), "flush": self.flush(), "apply": self.apply(),
                "resume": self.resume()}

    # -- helpers ------------------------------------------------------------------------------

    def _upstream(self, at: BinlogOffset, events: Sequence[ev.SchemaChangeEvent]) -> dict[TableId, TableSchema | None]:
        """Every known source table's schema just before the DDL."""
        with self.ctx.store.transaction(readonly=True) as tx:
            tables = [TableId.parse(t) for t in tx.schema_tables()]
            out = {t: schema_from_history(tx.schema_at(str(t), at.sequence)) for t in tables}
        lookup = self._schema_lookup(at)
        for e in events:
            if e.table_id not in out and not table_effect(e).created:
                out[e.table_id] = lookup(e.table_id)
        return out

    def _evolved(self, upstream: dict[TableId, TableSchema | None], derivator: SchemaDerivator
                 ) -> dict[TableId, TableSchema | None]:
        targets = {target for t, s in upstream.items() if s is not None for target in self.ctx.sink.route(t)}
        out: dict[TableId, TableSchema | None] = {}
        for target in sorted(targets):
            known = self.registry.evolved(target)
            if known is not None:
                out[target] = known
        return out

    def recreate_at_stop(self, tables: Sequence[str]) -> list[str]:
        """``tidemark resnapshot --table`` while the stream is stopped at a change Doris refused (a new
        primary key, a type Doris cannot change to): the named tables are re-created in Doris from the
        source's schema after the DDL and read again when the change is applied (``apply``), and the
        stream goes on past the DDL. Returns the tables (empty: the stream is not stopped at a refused
        change, and the resnapshot is an ordinary one).

        A table the server no longer has under that name (renamed or dropped after the DDL) cannot be
        read as it is now: refused with the way out (leave it out with ``tables.exclude``)."""
        cur = self.registry.current()
        if cur is None or cur.get("status") != RequestStatus.APPLYING.value or not cur.get("error"):
            return []
        derived = self.registry.derived() or []
        outcomes = self.registry.outcomes()
        stopped = sorted({str(c.target) for c, o in zip(derived, outcomes, strict=True) if o is None})
        unknown = [t for t in tables if t not in stopped]
        if not tables or unknown:
            raise ValueError(f"the stream is stopped at the DDL at {BinlogOffset.from_dict(cur['ddl_offset'])} "
                             f"({(cur.get('ddl') or '').strip()[:120]}), which Doris could not apply to "
                             f"{', '.join(stopped)}; resnapshot those (--table {' --table '.join(stopped)}) to "
                             "re-create them and go on past it")
        events = self.registry.events()
        upstream = self._upstream(BinlogOffset.from_dict(cur["flushed_to"]), events)
        for name in tables:
            table_id = TableId.parse(name)
            way_out = f"The way out: leave it out of the pipeline (source tables.exclude: {name}), then run again"
            try:
                live = self.ctx.live_schema(table_id)
            except Exception as exc:  # noqa: BLE001 - any failure to read it: the table is not there
                raise ValueError(
                    f"{name} cannot be read again: the server has no table of that name now ({exc}), so it was "
                    "renamed or dropped after the DDL the stream stopped at, and its rows at that point are gone. "
                    + way_out) from None
            after = self._new_schema(table_id, upstream, events)
            if after is None or [(c.name, c.column_type) for c in live.columns] != [
                    (c.name, c.column_type) for c in after.columns]:
                # another table of the name (dropped and created again), or altered again since: its rows now
                # are not the table's at the DDL, whose later changes the stream is still to apply
                raise ValueError(
                    f"{name} cannot be read again as it was at the DDL the stream stopped at: the server's table of "
                    "that name has other columns now (altered, or dropped and created again, since). " + way_out)
        self.registry.recreate(tables)
        self.log(f"resnapshot at the stopped DDL: {', '.join(tables)} will be re-created in Doris and read again")
        return list(tables)

    def _recreate(self, change: DerivedChange, upstream: dict[TableId, TableSchema | None],
                  events: Sequence[ev.SchemaChangeEvent], *, done: bool) -> dict[str, Any]:
        """A change of a table ``tidemark resnapshot`` re-creates: the table is dropped and created from
        the source's schema after the DDL (once for all its changes); its rows are reloaded after."""
        if done:
            return {"outcome": "applied", "recreated": True, "reason": f"{change.target} re-created"}
        schema = self._new_schema(change.event.table_id, upstream, events)
        if schema is None:
            raise SchemaChangeApplyError(f"{change.event.table_id} has no schema after the DDL; it cannot be re-created")
        statement = self.ctx.sink.recreate_table(schema, change.target)
        return {"outcome": "applied", "recreated": True, "statement": statement,
                "reason": "re-created by tidemark resnapshot; its rows are read again"}

    def _apply_one(self, change: DerivedChange, behavior: SchemaChangeBehavior) -> dict[str, Any]:
        try:
            result = self.ctx.sink.apply_schema_change(change.event, change.target, merged=change.merged)
        except DorisSchemaChangeError as exc:
            if behavior is SchemaChangeBehavior.TRY_EVOLVE:
                self.log(f"Doris refused {change.describe()} (tolerated under try_evolve; later rows are loaded "
                         f"into the old column types): {exc}")
                return {"outcome": "tolerated", "reason": str(exc).splitlines()[0]}
            message = (f"Doris refused {change.describe()} under schema.change.behavior '{behavior.value}': {exc}. "
                       "The stream stays paused at this DDL; fix Doris (or set try_evolve to tolerate it, or exclude "
                       "the type with exclude.schema.changes) and run schema_change again")
            self.registry.record_error(message)
            raise SchemaChangeApplyError(message) from exc
        return {"outcome": result.outcome, "statement": result.statement, "reason": result.reason}

    @staticmethod
    def _renamed_in(events: Sequence[ev.SchemaChangeEvent], new_tables: Sequence[TableId]) -> list[TableId]:
        """Tables renamed into the captured names from one the pipeline does not capture: their rows came
        without row events, so their one whole-table chunk is read again now (as a resnapshot reads)."""
        return [e.table_id for e in events if isinstance(e, ev.CreateTableEvent) and e.renamed_from is not None
                and e.table_id in new_tables]

    def _new_stream_tables(self, events: Sequence[ev.SchemaChangeEvent]) -> list[TableId]:
        selector = self.ctx.definition.source.selector
        out: list[TableId] = []
        for e in events:
            t = table_effect(e).enters
            if t is not None and selector.matches(t.database, t.table) and t not in out:
                out.append(t)
        return out

    def _record_history(self, tx: Any, upstream: dict[TableId, TableSchema | None],
                        events: Sequence[ev.SchemaChangeEvent], ddl_offset: BinlogOffset) -> None:
        schemas = dict(upstream)
        last: dict[TableId, TableSchema | None] = {}
        touched: list[TableId] = []
        for e in events:
            prior = schemas.get(e.table_id)
            for table_id, schema in apply_schema_change(prior, e, strict=False).items():
                if schema is None and schemas.get(table_id) is not None:
                    last[table_id] = schemas[table_id]
                schemas[table_id] = schema
                if table_id not in touched:
                    touched.append(table_id)
            if table_effect(e).removed and prior is not None:
                last[e.table_id] = prior
        for table_id in touched:
            schema = schemas.get(table_id)
            if schema is not None:
                payload: dict[str, Any] | None = schema.to_dict()
            elif last.get(table_id) is not None:
                payload = {**last[table_id].to_dict(), DROPPED_MARK: ddl_offset.to_dict()}  # type: ignore[union-attr]
            else:
                payload = None
            tx.put_schema(str(table_id), ddl_offset.sequence, ddl_offset.to_dict(), payload)

    def _new_schema(self, table_id: TableId, upstream: dict[TableId, TableSchema | None],
                    events: Sequence[ev.SchemaChangeEvent]) -> TableSchema | None:
        schemas = dict(upstream)
        for e in events:
            schemas[e.table_id] = apply_to_schema(schemas.get(e.table_id), e)
            renamed_to = table_effect(e).renamed_to
            if renamed_to is not None:
                schemas[renamed_to] = schemas.pop(e.table_id)
        return schemas.get(table_id)

    @staticmethod
    def _recreated(upstream: dict[TableId, TableSchema | None],
                   events: Sequence[ev.SchemaChangeEvent]) -> set[TableId]:
        """The tables these events create (or rename into) under a name no table held just before:
        a name an earlier table had, dropped or renamed away since, now belongs to a new table."""
        schemas = dict(upstream)
        out: set[TableId] = set()
        for e in events:
            effect = table_effect(e)
            if effect.enters is not None and schemas.get(effect.enters) is None:
                out.add(effect.enters)
            schemas[e.table_id] = apply_to_schema(schemas.get(e.table_id), e)
            if effect.renamed_to is not None:
                schemas[effect.renamed_to] = schemas.pop(e.table_id)
        return out

    def _start_streaming(self, tx: Any, tables: Sequence[TableId], upstream: dict[TableId, TableSchema | None],
                         events: Sequence[ev.SchemaChangeEvent], flushed_to: BinlogOffset, ddl_offset: BinlogOffset) -> None:
        """A table new to the stream (created, or renamed into a captured name) holds, in Doris,
        everything up to the DDL (nothing, or the renamed table's rows); a finished whole-table
        "chunk" at the DDL's offset tells the stream's filter that every change after it is due."""
        recreated = self._recreated(upstream, events)
        for table_id in tables:
            if tx.chunks(table_id=str(table_id)):
                if table_id not in recreated:
                    continue
                # the chunks of an earlier table of this name (dropped or renamed away): they name its
                # key column, which the new table may not have, and its rows, which are not the new one's
                tx.delete_chunks(str(table_id))
                self.log(f"{table_id}: a new table of this name; the chunks of the table it replaces are retired")
            schema = self._new_schema(table_id, upstream, events)
            if schema is None or not schema.columns:
                continue
            self._add_stream_chunk(tx, table_id, schema, flushed_to, ddl_offset,
                                   f"table new to the stream at {ddl_offset}")

    def _identity_tables(self, tx: Any, events: Sequence[ev.SchemaChangeEvent], altered: set[TableId],
                         ddl_offset: BinlogOffset) -> set[TableId]:
        """Keyless tables in their exact form (``cdc_core/doris/row_identity.py``) whose applied change
        alters the row images the identity hashes: a column dropped, renamed or retyped, or added
        with a value (a nullable column added without a default adds only NULLs, which hash to
        nothing), or added while chunks read after the DDL left it out (``loadable_schema``: their
        rows were hashed without its values). Their rows' identities are stale, so they are reloaded
        like partition maintenance (the re-read, then the sweep of the stale identities)."""
        out: set[TableId] = set()
        for e in events:
            if e.table_id not in altered:
                continue
            if not _alters_images(e) and not (isinstance(e, ev.AddColumnEvent) and any(
                    r.status is ChunkStatus.COMMITTED and _offset(r.high_watermark) is not None
                    and _offset(r.high_watermark) > ddl_offset for r in tx.chunks(table_id=str(e.table_id)))):
                continue
            try:
                exact = any(self.ctx.sink.table(t, refresh=True).row_identity for t in self.ctx.targets(e.table_id))
            except Exception:  # noqa: BLE001 - a Doris table the change dropped: nothing to re-identify
                exact = False
            if exact:
                out.add(e.table_id)
        return out

    def _identity_reloads(self, tx: Any, events: Sequence[ev.SchemaChangeEvent], altered: set[TableId],
                          ddl_offset: BinlogOffset, upstream: dict[TableId, TableSchema | None],
                          ) -> tuple[set[TableId], set[TableId]]:
        """The keyless tables whose row identities are stale after these events, split in two: those to
        reload now, and those the server cannot give as they are at this DDL (``stale``).

        A reload reads the table as the server has it *now*. When the stream is behind, the name may
        hold another table by then (renamed away and created again) or none: reading it would load
        another table's rows, or nothing, and leave the stale identities. Such a table keeps a mark
        (:data:`STALE_IDENTITIES`) that follows its RENAMEs, and is reloaded at the first later DDL of
        it (a RENAME, an ALTER) at which the server's table under its name has its columns: the
        ``mt_ctype_many_b.t1__1`` case of the corpus (a column change, then a RENAME before the reload).
        A DROP ends the mark (Doris drops the table too)."""
        rehashed = self._identity_tables(tx, events, altered, ddl_offset)
        marks = {TableId.parse(name) for name, _ in STALE_IDENTITIES.items(tx)}
        for e in events:
            effect = table_effect(e)
            if e.table_id in marks and effect.removed:
                marks.discard(e.table_id)
                if effect.renamed_to is not None:
                    marks.add(effect.renamed_to)
        touched = {table_effect(e).renamed_to or e.table_id for e in events}
        candidates = rehashed | (marks & touched)
        now = {t for t in candidates if self._server_has_it_as_at_the_ddl(t, upstream, events)}
        return now, candidates - now

    def _server_has_it_as_at_the_ddl(self, table_id: TableId, upstream: dict[TableId, TableSchema | None],
                                     events: Sequence[ev.SchemaChangeEvent]) -> bool:
        """Whether the server's table of this name has the columns the table has after the DDL (else it
        was renamed or dropped since, or another table took its name, or it was altered again)."""
        after = self._new_schema(table_id, upstream, events)
        try:
            live = self.ctx.live_schema(table_id)
        except Exception:  # noqa: BLE001 - any failure to read it: the table is not there
            return False
        return after is not None and [(c.name, c.column_type) for c in live.columns] == [
            (c.name, c.column_type) for c in after.columns]

    def _keep_stale_identities(self, tx: Any, events: Sequence[ev.SchemaChangeEvent], reloading: set[TableId],
                               stale: set[TableId], ddl_offset: BinlogOffset) -> None:
        """Moves the stale-identity marks along these events' RENAMEs, ends them at a DROP or a reload,
        and marks the tables whose reload must wait (:meth:`_identity_reloads`)."""
        for name, mark in STALE_IDENTITIES.items(tx):
            table_id = TableId.parse(name)
            for e in events:
                effect = table_effect(e)
                if e.table_id != table_id or not effect.removed:
                    continue
                STALE_IDENTITIES.key(str(table_id)).delete(tx)
                if effect.renamed_to is None:
                    break
                table_id = effect.renamed_to
                STALE_IDENTITIES.key(str(table_id)).put(tx, mark)
            if table_id in reloading:
                STALE_IDENTITIES.key(str(table_id)).delete(tx)
        for table_id in sorted(stale, key=str):
            if STALE_IDENTITIES.key(str(table_id)).get(tx) is None:
                STALE_IDENTITIES.key(str(table_id)).put(tx, {"ddl_offset": ddl_offset.to_dict()})
            logger.warning(
                "%s: the change at %s altered the values its rows' hidden identity hashes, but the server's table "
                "of that name is not the table as it was at the change (renamed, dropped or altered since: the "
                "stream is behind), so it cannot be read again now. It is reloaded at its next RENAME or ALTER "
                "the stream carries, once the server has it as it was then; until then deletes and updates of "
                "its earlier rows may miss. Should none come: `tidemark resnapshot PIPELINE.yaml --table %s`",
                table_id, ddl_offset, table_id)

    def _request_reloads(self, tx: Any, events: Sequence[ev.SchemaChangeEvent], ddl_offset: BinlogOffset,
                         rehashed: set[TableId] = frozenset()) -> dict[TableId, list[str]]:  # type: ignore[assignment]
        """Tables whose rows partition maintenance changed without row events (or whose identity a
        column change made stale, ``rehashed``): every chunk is marked for reading again and the
        sweep that follows is recorded (``cdc_core/pipeline/reload.py``), in the transaction that
        finishes the change, so a crash before the reads forgets neither."""
        selector = self.ctx.definition.source.selector
        out: dict[TableId, list[str]] = {}
        for e in events:
            if not (table_effect(e).reload or e.table_id in rehashed) or e.table_id in out:
                continue
            if not selector.matches(e.table_id.database, e.table_id.table):
                continue
            out[e.table_id] = request_reload(tx, e.table_id, ddl_offset, getattr(e, "operation", "") or e.type_name)
        return out

    @staticmethod
    def _mark_chunks_read_past(tx: Any, tables: set[TableId], ddl_offset: BinlogOffset) -> list[str]:
        """Chunks of altered tables whose high watermark lies past the DDL go back to PENDING (next
        generation) and their keys are returned, to be read again now that Doris has the change.

        Such a chunk holds rows as they were after the DDL, but without what the DDL brought (the
        snapshot left out columns Doris did not have yet, or its read began before the DDL), and
        the stream will not replay those changes: its filter leaves everything up to a chunk's
        high watermark to the chunk. A new read gets a later high watermark, so its rows win by
        the sequence column. Marked in the transaction that finishes the change, so a crash
        before the reads leaves them pending rather than forgotten.
        """
        keys: list[str] = []
        for table_id in sorted(tables, key=str):
            for record in tx.chunks(table_id=str(table_id)):
                high = _offset(record.high_watermark)
                if record.status is not ChunkStatus.COMMITTED or high is None or high <= ddl_offset:
                    continue
                tx.update_chunk(record.table_id, record.chunk_index, status=ChunkStatus.PENDING,
                                generation=record.generation + 1, transactions=None)
                keys.append(chunk_key(record.table_id, record.chunk_index))
        return keys

    def _snapshot_new_tables(self, tables: Sequence[TableId], upstream: dict[TableId, TableSchema | None],
                             events: Sequence[ev.SchemaChangeEvent]) -> None:
        """``scan.newly-added-table.enabled``: snapshot a table new to the stream first (one chunk
        over the whole table, read between watermarks on Spark), so rows it holds that the binlog
        does not carry (a table renamed into a captured name) reach Doris too."""
        for table_id in tables:
            with self.ctx.store.transaction() as tx:
                if not tx.chunks(table_id=str(table_id)):
                    tx.add_chunks([ChunkRecord.planned(str(table_id), 0)])
            with self.ctx.store.transaction(readonly=True) as tx:
                records = tx.chunks(table_id=str(table_id))
            keys = [chunk_key(str(table_id), r.chunk_index) for r in records if r.status is not ChunkStatus.COMMITTED]
            if keys:
                self.service.resolve_pending()
                with self.ctx.store.transaction(readonly=True) as tx:
                    records = tx.chunks(table_id=str(table_id))
                keys = [chunk_key(str(table_id), r.chunk_index) for r in records if r.status is not ChunkStatus.COMMITTED]
            if keys:
                self.service.run_chunks(keys)
                self.service.commit_chunks(keys)


__all__ = ["SchemaChangeApplyError", "SchemaChangeSteps"]
