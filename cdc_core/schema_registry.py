"""The schema registry: Flink CDC's schema-change coordinator, persisted in the state store.

Flink CDC (seeds 000–002) carries a DDL to the sink in four states::

    IDLE ──A──► WAITING_FOR_FLUSH ──C──► APPLYING ──D──► FINISHED ──E──► IDLE
      ▲                 │
      └────────B────────┘   (nothing to do: the offset holds no DDL on a captured table)

* **A** — a DDL is requested (Tidemark: the ``schema_change`` job's *quiesce* step, with the
  DDL's binlog offset); the stream is paused;
* **C** — everything before the DDL is flushed and committed with the old schema (*flush*); the
  DDL's events are read and recorded;
* **D** — the changes for Doris are derived per ``schema.change.behavior`` and applied with the
  metadata applier, each outcome recorded as it happens (*apply*); the schema history records the
  source's new schema;
* **E** — the committed offset moves past the DDL and the pause ends (*resume*).

Every state and every applied change is in the pipeline's state store, so a crash or a failed
step resumes exactly where it stopped and a change is never applied twice. This module holds no
I/O of its own beyond the state store: the job (``cdc_core/pipeline/schema_change.py``) drives it.

:class:`SchemaDerivator` is Flink CDC's ``SchemaDerivator`` + ``SchemaCoordinator`` derivation, as
their code implements it (``cdc-anchors.md`` §2.2):

* ``exception`` — any change but CreateTable raises :class:`SchemaChangeRefused`;
* ``evolve`` — every change applied; a failure raises;
* ``try_evolve`` — every change applied; a change Doris refuses is tolerated (later rows are
  loaded into the old column types: "not guaranteed to be lossless");
* ``lenient`` (default) — AddColumn appended at the end and nullable; DropColumn keeps the column
  (only made nullable); RenameColumn adds the new name (nullable) and keeps the old one (made
  nullable); AlterColumnType passed through; TruncateTable and DropTable excluded unless
  ``exclude.schema.changes`` is given;
* ``ignore`` — only CreateTable.

Several source tables routed to one Doris table evolve it to the widest schema of all of them
(``cdc_core.schema_merging``), never dropping a column.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from cdc_core.events import (
    AddColumnEvent,
    AlterColumnTypeEvent,
    CreateTableEvent,
    DropColumnEvent,
    DropTableEvent,
    RenameColumnEvent,
    RenameTableEvent,
    SchemaChangeEvent,
    TruncateTableEvent,
)
from cdc_core.mysql.offsets import BinlogOffset
from cdc_core.schema import TableId, TableSchema
from cdc_core.schema_change_codec import event_from_dict, event_to_dict
from cdc_core.schema_merging import least_common_schema, schema_difference

NAMESPACE = "schema_registry"
EVOLVED_NAMESPACE = "schema_registry.evolved"
CURRENT_KEY = "current"
PAUSE_NAMESPACE, PAUSE_KEY = "flags", "binlog_paused"
BINLOG_NAMESPACE = "binlog"
# A dropped (or renamed-away) table keeps its last schema in the history, marked: the binlog
# filter still needs the chunk key's type for its snapshot chunks.
DROPPED_MARK = "tidemark_dropped_at"


class SchemaChangeBehavior(StrEnum):
    EXCEPTION = "exception"
    EVOLVE = "evolve"
    TRY_EVOLVE = "try_evolve"
    LENIENT = "lenient"
    IGNORE = "ignore"

    @classmethod
    def parse(cls, text: str | SchemaChangeBehavior) -> SchemaChangeBehavior:
        try:
            return cls(str(text).strip().lower().replace("-", "_"))
        except ValueError:
            raise ValueError(f"pipeline.schema.change.behavior must be one of "
                             f"{', '.join(b.value for b in cls)}; got {text!r}") from None


class RequestStatus(StrEnum):
    IDLE = "IDLE"
    WAITING_FOR_FLUSH = "WAITING_FOR_FLUSH"
    APPLYING = "APPLYING"
    FINISHED = "FINISHED"


class SchemaChangeRefused(RuntimeError):
    """``schema.change.behavior: exception`` met a schema change (the stream stays paused)."""


class RegistryStateError(RuntimeError):
    """A step was asked for in a state it does not follow (e.g. apply before flush)."""


# -- type filter ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaChangeTypeFilter:
    """``include.schema.changes`` / ``exclude.schema.changes`` with Flink CDC's matching: an item
    names a type (``add.column``) or a family (``add``, ``column``, ``drop`` = drop.column +
    drop.table); exclude wins; create.table always passes. In lenient mode without an explicit
    exclude list, drop.table and truncate.table are excluded (Flink CDC's YAML parser default)."""

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, behavior: SchemaChangeBehavior, include: Sequence[str] | None,
           exclude: Sequence[str] | None) -> SchemaChangeTypeFilter:
        excluded = tuple(exclude) if exclude is not None else (
            ("drop.table", "truncate.table") if behavior is SchemaChangeBehavior.LENIENT else ())
        return cls(tuple(include) if include is not None else None, excluded)

    @staticmethod
    def _hit(kind: str, items: Sequence[str]) -> bool:
        return any(kind == i or kind.startswith(f"{i}.") or kind.endswith(f".{i}") for i in items)

    def accepts(self, kind: str) -> bool:
        if kind == "create.table":
            return True
        if self.include is not None and not self._hit(kind, self.include):
            return False
        return not self._hit(kind, self.exclude)


# -- derivation ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DerivedChange:
    """One change for one Doris table. ``merged``: the table receives several source tables."""

    event: SchemaChangeEvent
    target: TableId
    merged: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"event": event_to_dict(self.event), "target": str(self.target), "merged": self.merged}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DerivedChange:
        return cls(event_from_dict(data["event"]), TableId.parse(data["target"]), bool(data.get("merged")))

    def describe(self) -> str:
        return f"{self.event.type_name} → {self.target}" + (" (merged)" if self.merged else "")


def apply_to_schema(schema: TableSchema | None, event: SchemaChangeEvent) -> TableSchema | None:
    """``event`` applied to one schema, leniently (the result for the event's own table)."""
    from cdc_core.mysql.schema_history import apply_schema_change

    out = apply_schema_change(schema, event, strict=False)
    if isinstance(event, RenameTableEvent):
        return out.get(event.new_table_id) if event.new_table_id is not None else None
    return out.get(event.table_id)


class SchemaDerivator:
    """From the source's schema-change events to the changes each Doris table gets.

    ``route(source) -> targets``; ``captured(table)`` says whether a table is captured; the
    upstream schemas (``before`` / ``after`` the DDL, for every source table known) let a merged
    table be widened; ``evolved(target)`` is the Doris table's schema as Tidemark last evolved it.
    """

    def __init__(self, behavior: SchemaChangeBehavior, route: Callable[[TableId], tuple[TableId, ...]],
                 type_filter: SchemaChangeTypeFilter, captured: Callable[[TableId], bool] = lambda _t: True):
        self.behavior = behavior
        self.route = route
        self.type_filter = type_filter
        self.captured = captured

    def derive(self, events: Sequence[SchemaChangeEvent], upstream: Mapping[TableId, TableSchema | None],
               evolved: Mapping[TableId, TableSchema | None]) -> tuple[list[DerivedChange], dict[TableId, TableSchema | None]]:
        """The derived changes, and the Doris schemas they start from (bootstrapped from the
        sources where Tidemark has not evolved a table yet).

        ``upstream``: every known source table's schema *before* the DDL; ``evolved``: each Doris
        table's current schema (missing = unknown, bootstrapped from its sources).
        """
        upstream = dict(upstream)
        evolved = dict(evolved)
        for event in events:
            for target in self.route(event.table_id):
                self._bootstrap(target, upstream, evolved)
        bootstrapped = dict(evolved)
        out: list[DerivedChange] = []
        for event in events:
            before = dict(upstream)
            upstream[event.table_id] = apply_to_schema(upstream.get(event.table_id), event)
            if isinstance(event, RenameTableEvent) and event.new_table_id is not None:
                upstream[event.new_table_id] = upstream.pop(event.table_id)
                upstream[event.table_id] = None
            for change in self._derive_one(event, before, upstream, evolved):
                out.append(change)
                evolved = evolved_after(evolved, [change])
        if self.behavior is SchemaChangeBehavior.EXCEPTION:
            refused = [c for c in out if not isinstance(c.event, CreateTableEvent)]
            if refused:
                first = refused[0].event
                raise SchemaChangeRefused(
                    f"schema.change.behavior is 'exception' and {first.type_name} on {first.table_id} "
                    f"(DDL: {(first.ddl or '').strip()[:200]}) would change Doris table {refused[0].target}. "
                    "The stream stays paused at this DDL. To carry it over, set pipeline.schema.change.behavior "
                    "to lenient, evolve or try_evolve (or exclude this type with exclude.schema.changes) and run the "
                    "schema_change job again")
        return out, bootstrapped

    def sources_of(self, target: TableId, upstream: Mapping[TableId, TableSchema | None]) -> list[TableId]:
        return sorted(t for t, s in upstream.items() if s is not None and target in self.route(t))

    def _bootstrap(self, target: TableId, upstream: Mapping[TableId, TableSchema | None],
                   evolved: dict[TableId, TableSchema | None]) -> TableSchema | None:
        if target in evolved and evolved[target] is not None:
            return evolved[target]
        merged: TableSchema | None = None
        for t in self.sources_of(target, upstream):
            merged = least_common_schema(merged, upstream[t])  # type: ignore[arg-type]
        evolved[target] = None if merged is None else replace(merged, table_id=target)
        return evolved[target]

    def _derive_one(self, event: SchemaChangeEvent, before: Mapping[TableId, TableSchema | None],
                    after: Mapping[TableId, TableSchema | None], evolved: dict[TableId, TableSchema | None]
                    ) -> list[DerivedChange]:
        raw: list[DerivedChange] = []
        if isinstance(event, RenameTableEvent):
            raw = self._rename_table(event, before, after, evolved)
        else:
            for target in self.route(event.table_id):
                current = self._bootstrap(target, before, evolved)
                deps = set(self.sources_of(target, after)) | set(self.sources_of(target, before))
                merged = len(deps) > 1
                if isinstance(event, CreateTableEvent):
                    if merged and current is not None:
                        widest = self._widest(target, current, after)
                        raw += [DerivedChange(e, target, True) for e in schema_difference(event.table_id, current, widest)]
                    else:
                        raw.append(DerivedChange(event, target, merged))
                elif isinstance(event, TruncateTableEvent | DropTableEvent) or not merged:
                    raw.append(DerivedChange(event, target, merged))
                elif current is not None:
                    widest = self._widest(target, current, after)
                    raw += [DerivedChange(e, target, True) for e in schema_difference(event.table_id, current, widest)]
        out: list[DerivedChange] = []
        for change in raw:
            for rewritten in self._rewrite(change, evolved.get(change.target)):
                if self.type_filter.accepts(rewritten.event.type_name):
                    out.append(rewritten)
        return out

    def _widest(self, target: TableId, current: TableSchema, after: Mapping[TableId, TableSchema | None]) -> TableSchema:
        merged = current
        for t in self.sources_of(target, after):
            merged = least_common_schema(merged, after[t])  # type: ignore[arg-type]
        return merged

    def _rename_table(self, event: RenameTableEvent, before: Mapping[TableId, TableSchema | None],
                      after: Mapping[TableId, TableSchema | None], evolved: dict[TableId, TableSchema | None]
                      ) -> list[DerivedChange]:
        new = event.new_table_id
        new_targets = self.route(new) if new is not None and self.captured(new) else ()
        out: list[DerivedChange] = []
        for old_target in self.route(event.table_id):
            self._bootstrap(old_target, before, evolved)
            merged = len(self.sources_of(old_target, before)) > 1
            if old_target in new_targets:
                continue  # the same Doris table receives the renamed table
            if len(new_targets) == 1 and not merged and new_targets[0].database == old_target.database:
                out.append(DerivedChange(replace(event, new_table_id=new_targets[0]), old_target, False))
                continue
            out.append(DerivedChange(DropTableEvent(event.table_id, offset=event.offset, ddl=event.ddl),
                                     old_target, merged))
        for new_target in new_targets:
            if any(c.event.new_table_id == new_target for c in out if isinstance(c.event, RenameTableEvent)):
                continue
            if new_target in self.route(event.table_id):
                continue
            schema = after.get(new)  # type: ignore[arg-type]
            if schema is not None:
                out.append(DerivedChange(CreateTableEvent(new, offset=event.offset, ddl=event.ddl, schema=schema),
                                         new_target, False))
        return out

    def _rewrite(self, change: DerivedChange, current: TableSchema | None) -> list[DerivedChange]:
        b = self.behavior
        e = change.event
        if b is SchemaChangeBehavior.IGNORE:
            return [change] if isinstance(e, CreateTableEvent) else []
        if b is not SchemaChangeBehavior.LENIENT:
            return [change]
        if isinstance(e, AddColumnEvent) and e.column is not None:
            return [replace(change, event=replace(e, column=replace(e.column, nullable=True), position="LAST",
                                                  after=None))]
        if isinstance(e, DropColumnEvent):
            old = current.column(e.column_name) if current is not None and current.has_column(e.column_name) else None
            if old is None or old.nullable:
                return []
            return [replace(change, event=AlterColumnTypeEvent(e.table_id, e.offset, e.ddl, column_name=old.name,
                                                               column=replace(old, nullable=True)))]
        if isinstance(e, RenameColumnEvent):
            old = current.column(e.old_name) if current is not None and current.has_column(e.old_name) else None
            if old is None:
                return []
            out = [replace(change, event=AddColumnEvent(e.table_id, e.offset, e.ddl,
                                                        column=replace(old, name=e.new_name, nullable=True)))]
            if not old.nullable:
                out.append(replace(change, event=AlterColumnTypeEvent(e.table_id, e.offset, e.ddl, column_name=old.name,
                                                                      column=replace(old, nullable=True))))
            return out
        return [change]


def _retarget(change: DerivedChange) -> SchemaChangeEvent:
    """The derived event as a change of the Doris table's own schema."""
    e = change.event
    if isinstance(e, RenameTableEvent):
        return replace(e, table_id=change.target)
    if change.merged and isinstance(e, TruncateTableEvent | DropTableEvent):
        return TruncateTableEvent(change.target)  # a merged table is neither truncated nor dropped
    if isinstance(e, CreateTableEvent) and e.schema is not None:
        return replace(e, table_id=change.target, schema=replace(e.schema, table_id=change.target))
    return replace(e, table_id=change.target)


def evolved_after(evolved: Mapping[TableId, TableSchema | None], changes: Iterable[DerivedChange]
                  ) -> dict[TableId, TableSchema | None]:
    """The Doris schemas after the changes that were really applied (in order)."""
    out = dict(evolved)
    for change in changes:
        if isinstance(change.event, RenameTableEvent) and change.event.new_table_id is not None:
            out[change.event.new_table_id] = None if out.get(change.target) is None else replace(
                out[change.target], table_id=change.event.new_table_id)  # type: ignore[arg-type]
            out[change.target] = None
            continue
        out[change.target] = apply_to_schema(out.get(change.target), _retarget(change))
    return out


# -- the persisted state machine ---------------------------------------------------------------


def _done_key(offset: BinlogOffset) -> str:
    return f"done:{offset.sequence:020d}"


def schema_from_history(data: Any) -> TableSchema | None:
    """A schema-history entry as a schema (None: unknown, dropped or renamed away)."""
    if not data or data.get(DROPPED_MARK):
        return None
    return TableSchema.from_dict(data)


class SchemaRegistry:
    """The coordinator's state in the pipeline's state store (namespace ``schema_registry``)."""

    def __init__(self, store: Any):
        self.store = store

    # -- reading ------------------------------------------------------------------------------

    def current(self) -> dict[str, Any] | None:
        return self.store.get(NAMESPACE, CURRENT_KEY)

    @property
    def status(self) -> RequestStatus:
        cur = self.current()
        return RequestStatus(cur["status"]) if cur else RequestStatus.IDLE

    def handled(self, ddl_offset: BinlogOffset) -> dict[str, Any] | None:
        """The record of a DDL already carried over (None if it was not)."""
        return self.store.get(NAMESPACE, _done_key(ddl_offset))

    def history(self) -> list[dict[str, Any]]:
        with self.store.transaction(readonly=True) as tx:
            return [v for k, v in tx.items(NAMESPACE) if k.startswith("done:")]

    def evolved(self, target: TableId) -> TableSchema | None:
        data = self.store.get(EVOLVED_NAMESPACE, str(target))
        return None if data is None else TableSchema.from_dict(data)

    def derived(self) -> list[DerivedChange] | None:
        cur = self.current() or {}
        items = cur.get("derived")
        return None if items is None else [DerivedChange.from_dict(d["change"]) for d in items]

    def events(self) -> list[SchemaChangeEvent]:
        cur = self.current() or {}
        return [event_from_dict(e) for e in cur.get("events") or []]

    # -- transitions --------------------------------------------------------------------------

    def _expect(self, *statuses: RequestStatus) -> dict[str, Any]:
        cur = self.current()
        status = RequestStatus(cur["status"]) if cur else RequestStatus.IDLE
        if status not in statuses:
            raise RegistryStateError(f"the schema registry is {status.value}, expected "
                                     f"{' or '.join(s.value for s in statuses)}")
        return cur or {}

    def request(self, ddl_offset: BinlogOffset | None, run_id: str = "") -> dict[str, Any]:
        """A: IDLE → WAITING_FOR_FLUSH for the DDL at ``ddl_offset`` (None: the next DDL), with the
        stream paused in the same transaction. A request already in progress is returned as it is
        (a re-run resumes it; it is necessarily the first pending DDL in binlog order)."""
        with self.store.transaction() as tx:
            cur = tx.get(NAMESPACE, CURRENT_KEY)
            if cur is None:
                cur = {"status": RequestStatus.WAITING_FOR_FLUSH.value,
                       "requested_offset": None if ddl_offset is None else ddl_offset.to_dict(),
                       "requested_at": time.time(), "run_ids": [run_id] if run_id else []}
            elif run_id and run_id not in cur.get("run_ids", []):
                cur["run_ids"] = [*cur.get("run_ids", []), run_id]
            tx.put(NAMESPACE, CURRENT_KEY, cur)
            tx.put(PAUSE_NAMESPACE, PAUSE_KEY, {"reason": "schema change", "status": cur["status"],
                                                "requested_offset": cur.get("requested_offset"),
                                                "run_id": run_id, "since": time.time()})
        return cur

    def nothing_to_apply(self, committed: BinlogOffset) -> None:
        """B: the requested offset holds no DDL on a captured table (the stream reached it)."""
        cur = self._expect(RequestStatus.WAITING_FOR_FLUSH)
        with self.store.transaction() as tx:
            tx.delete(NAMESPACE, CURRENT_KEY)
            tx.delete(PAUSE_NAMESPACE, PAUSE_KEY)
            if cur.get("requested_offset"):
                off = BinlogOffset.from_dict(cur["requested_offset"])
                tx.put(NAMESPACE, _done_key(off), {"ddl_offset": off.to_dict(), "outcome": "no DDL on a captured "
                                                   f"table (stream reached {committed})", "finished_at": time.time()})

    def flushed(self, flushed_to: BinlogOffset, events: Sequence[SchemaChangeEvent], resume_after: BinlogOffset
                ) -> dict[str, Any]:
        """C: WAITING_FOR_FLUSH → APPLYING: the binlog is committed up to ``flushed_to``, just before
        the DDL whose ``events`` were read; the stream resumes at ``resume_after``."""
        cur = self._expect(RequestStatus.WAITING_FOR_FLUSH)
        first = events[0]
        cur.update({
            "status": RequestStatus.APPLYING.value,
            "flushed_to": flushed_to.to_dict(), "resume_after": resume_after.to_dict(),
            "ddl_offset": first.offset.to_dict() if first.offset else resume_after.to_dict(),
            "table_id": str(first.table_id), "ddl": first.ddl,
            "events": [event_to_dict(e) for e in events], "derived": None,
        })
        self.store.put(NAMESPACE, CURRENT_KEY, cur)
        return cur

    def set_derived(self, changes: Sequence[DerivedChange], behavior: SchemaChangeBehavior,
                    evolved_before: Mapping[TableId, TableSchema | None] | None = None) -> None:
        """The derived changes (and the Doris schemas they start from), recorded once."""
        cur = self._expect(RequestStatus.APPLYING)
        if cur.get("derived") is not None:
            return
        cur["derived"] = [{"change": c.to_dict(), "outcome": None} for c in changes]
        cur["evolved_before"] = {str(t): (None if s is None else s.to_dict()) for t, s in (evolved_before or {}).items()}
        cur["behavior"] = behavior.value
        cur.pop("error", None)
        self.store.put(NAMESPACE, CURRENT_KEY, cur)

    def outcomes(self) -> list[dict[str, Any] | None]:
        cur = self.current() or {}
        return [d.get("outcome") for d in cur.get("derived") or []]

    def record_outcome(self, index: int, outcome: Mapping[str, Any]) -> None:
        """One derived change is done (``applied``, ``skipped``, ``ignored`` or ``tolerated``)."""
        with self.store.transaction() as tx:
            cur = tx.get(NAMESPACE, CURRENT_KEY)
            if not cur or cur.get("status") != RequestStatus.APPLYING.value:
                raise RegistryStateError("record_outcome outside APPLYING")
            cur["derived"][index]["outcome"] = dict(outcome)
            tx.put(NAMESPACE, CURRENT_KEY, cur)

    def record_error(self, message: str) -> None:
        cur = self.current()
        if cur is not None:
            cur["error"] = message
            cur["error_at"] = time.time()
            self.store.put(NAMESPACE, CURRENT_KEY, cur)

    def finish(self, tx: Any, evolved: Mapping[TableId, TableSchema | None]) -> None:
        """D: APPLYING → FINISHED, in the caller's transaction (with the schema history)."""
        cur = tx.get(NAMESPACE, CURRENT_KEY)
        if not cur or cur.get("status") != RequestStatus.APPLYING.value:
            raise RegistryStateError("finish outside APPLYING")
        for target, schema in evolved.items():
            if schema is None:
                tx.delete(EVOLVED_NAMESPACE, str(target))
            else:
                tx.put(EVOLVED_NAMESPACE, str(target), schema.to_dict())
        cur["status"] = RequestStatus.FINISHED.value
        cur["applied_at"] = time.time()
        tx.put(NAMESPACE, CURRENT_KEY, cur)
        flag = tx.get(PAUSE_NAMESPACE, PAUSE_KEY)
        if flag:
            tx.put(PAUSE_NAMESPACE, PAUSE_KEY, {**flag, "status": RequestStatus.FINISHED.value})

    def release(self) -> dict[str, Any]:
        """E: FINISHED → IDLE: the committed offset moves past the DDL and the pause ends, in one
        transaction. Returns the record kept for the DDL."""
        with self.store.transaction() as tx:
            cur = tx.get(NAMESPACE, CURRENT_KEY)
            if not cur or cur.get("status") != RequestStatus.FINISHED.value:
                raise RegistryStateError("release outside FINISHED")
            resume = BinlogOffset.from_dict(cur["resume_after"])
            committed = tx.get(BINLOG_NAMESPACE, "committed_offset")
            if committed is None or BinlogOffset.from_dict(committed) < resume:
                tx.put(BINLOG_NAMESPACE, "committed_offset", resume.to_dict())
            pending = tx.get(BINLOG_NAMESPACE, "pending_ddl")
            if pending and pending.get("offset") and BinlogOffset.from_dict(pending["offset"]) <= resume:
                tx.delete(BINLOG_NAMESPACE, "pending_ddl")
            record = {k: cur.get(k) for k in ("ddl_offset", "resume_after", "flushed_to", "table_id", "ddl",
                                              "behavior", "derived", "requested_at", "applied_at", "run_ids")}
            record["finished_at"] = time.time()
            tx.put(NAMESPACE, _done_key(BinlogOffset.from_dict(cur["ddl_offset"])), record)
            tx.delete(NAMESPACE, CURRENT_KEY)
            tx.delete(PAUSE_NAMESPACE, PAUSE_KEY)
        return record


__all__ = [
    "DROPPED_MARK", "DerivedChange", "RegistryStateError", "RequestStatus", "SchemaChangeBehavior",
    "SchemaChangeRefused", "SchemaChangeTypeFilter", "SchemaDerivator", "SchemaRegistry", "evolved_after",
    "schema_from_history",
]
