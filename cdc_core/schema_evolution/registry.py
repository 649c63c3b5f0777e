"""The schema registry: Flink CDC's schema-change coordinator, persisted in the state store.

Flink CDC's schema operator carries a DDL to the sink in four states::

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

How the changes for Doris are derived from a DDL's events is :mod:`cdc_core.schema_evolution.derivation`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from cdc_core.model.events import SchemaChangeEvent
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.model.schema_change_codec import event_from_dict, event_to_dict
from cdc_core.schema_evolution.derivation import DerivedChange, SchemaChangeBehavior
from cdc_core.state.keys import (
    BINLOG_PAUSED,
    COMMITTED_OFFSET,
    EVOLVED_SCHEMAS,
    PENDING_DDL,
    SCHEMA_CHANGE_REQUEST,
    SCHEMA_CHANGES_DONE,
    done_name,
)

# A dropped (or renamed-away) table keeps its last schema in the history, marked: the binlog
# filter still needs the chunk key's type for its snapshot chunks.
DROPPED_MARK = "tidemark_dropped_at"


class RequestStatus(StrEnum):
    IDLE = "IDLE"
    WAITING_FOR_FLUSH = "WAITING_FOR_FLUSH"
    APPLYING = "APPLYING"
    FINISHED = "FINISHED"


class RegistryStateError(RuntimeError):
    """A step was asked for in a state it does not follow (e.g. apply before flush)."""


def schema_from_history(data: Any) -> TableSchema | None:
    """A schema-history entry as a schema (None: unknown, dropped or renamed away)."""
    if not data or data.get(DROPPED_MARK):
        return None
    return TableSchema.from_dict(data)


class SchemaRegistry:
    """The coordinator's state in the pipeline's state store (``cdc_core/state/keys.py``: the request,
    the finished changes, the evolved schemas, the pause flag)."""

    def __init__(self, store: Any):
        self.store = store

    # -- reading ------------------------------------------------------------------------------

    def current(self) -> dict[str, Any] | None:
        return SCHEMA_CHANGE_REQUEST.get(self.store)

    @property
    def status(self) -> RequestStatus:
        cur = self.current()
        return RequestStatus(cur["status"]) if cur else RequestStatus.IDLE

    def handled(self, ddl_offset: BinlogOffset) -> dict[str, Any] | None:
        """The record of a DDL already carried over (None if it was not)."""
        return SCHEMA_CHANGES_DONE.key(done_name(ddl_offset)).get(self.store)

    def history(self) -> list[dict[str, Any]]:
        with self.store.transaction(readonly=True) as tx:
            return [v for _, v in SCHEMA_CHANGES_DONE.items(tx)]

    def evolved(self, target: TableId) -> TableSchema | None:
        data = EVOLVED_SCHEMAS.key(str(target)).get(self.store)
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
            cur = SCHEMA_CHANGE_REQUEST.get(tx)
            if cur is None:
                cur = {"status": RequestStatus.WAITING_FOR_FLUSH.value,
                       "requested_offset": None if ddl_offset is None else ddl_offset.to_dict(),
                       "requested_at": time.time(), "run_ids": [run_id] if run_id else []}
            elif run_id and run_id not in cur.get("run_ids", []):
                cur["run_ids"] = [*cur.get("run_ids", []), run_id]
            SCHEMA_CHANGE_REQUEST.put(tx, cur)
            BINLOG_PAUSED.put(tx, {"reason": "schema change", "status": cur["status"],
                                   "requested_offset": cur.get("requested_offset"),
                                   "run_id": run_id, "since": time.time()})
        return cur

    def nothing_to_apply(self, committed: BinlogOffset) -> None:
        """B: the requested offset holds no DDL on a captured table (the stream reached it)."""
        cur = self._expect(RequestStatus.WAITING_FOR_FLUSH)
        with self.store.transaction() as tx:
            SCHEMA_CHANGE_REQUEST.delete(tx)
            BINLOG_PAUSED.delete(tx)
            if cur.get("requested_offset"):
                off = BinlogOffset.from_dict(cur["requested_offset"])
                SCHEMA_CHANGES_DONE.key(done_name(off)).put(tx, {
                    "ddl_offset": off.to_dict(), "outcome": f"no DDL on a captured table (stream reached {committed})",
                    "finished_at": time.time()})

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
        SCHEMA_CHANGE_REQUEST.put(self.store, cur)
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
        SCHEMA_CHANGE_REQUEST.put(self.store, cur)

    def outcomes(self) -> list[dict[str, Any] | None]:
        cur = self.current() or {}
        return [d.get("outcome") for d in cur.get("derived") or []]

    def record_outcome(self, index: int, outcome: Mapping[str, Any]) -> None:
        """One derived change is done (``applied``, ``skipped``, ``ignored`` or ``tolerated``)."""
        with self.store.transaction() as tx:
            cur = SCHEMA_CHANGE_REQUEST.get(tx)
            if not cur or cur.get("status") != RequestStatus.APPLYING.value:
                raise RegistryStateError("record_outcome outside APPLYING")
            cur["derived"][index]["outcome"] = dict(outcome)
            SCHEMA_CHANGE_REQUEST.put(tx, cur)

    def record_error(self, message: str) -> None:
        cur = self.current()
        if cur is not None:
            cur["error"] = message
            cur["error_at"] = time.time()
            SCHEMA_CHANGE_REQUEST.put(self.store, cur)

    def recreate(self, tables: Sequence[str]) -> None:
        """``tidemark resnapshot --table`` at a change Doris refused: the apply step re-creates these
        Doris tables from the source's schema after the DDL (instead of altering them) and reads their
        rows again; the error is cleared, the stream stays paused until the step has run."""
        with self.store.transaction() as tx:
            cur = SCHEMA_CHANGE_REQUEST.get(tx)
            if not cur or cur.get("status") != RequestStatus.APPLYING.value:
                raise RegistryStateError("recreate outside APPLYING")
            cur["recreate"] = sorted(set(cur.get("recreate") or []) | set(tables))
            cur.pop("error", None)
            cur.pop("error_at", None)
            SCHEMA_CHANGE_REQUEST.put(tx, cur)

    def recreating(self) -> list[str]:
        """The Doris tables the apply step re-creates (``recreate``)."""
        return list((self.current() or {}).get("recreate") or [])

    def finish(self, tx: Any, evolved: Mapping[TableId, TableSchema | None]) -> None:
        """D: APPLYING → FINISHED, in the caller's transaction (with the schema history)."""
        cur = SCHEMA_CHANGE_REQUEST.get(tx)
        if not cur or cur.get("status") != RequestStatus.APPLYING.value:
            raise RegistryStateError("finish outside APPLYING")
        for target, schema in evolved.items():
            if schema is None:
                EVOLVED_SCHEMAS.key(str(target)).delete(tx)
            else:
                EVOLVED_SCHEMAS.key(str(target)).put(tx, schema.to_dict())
        cur["status"] = RequestStatus.FINISHED.value
        cur["applied_at"] = time.time()
        SCHEMA_CHANGE_REQUEST.put(tx, cur)
        flag = BINLOG_PAUSED.get(tx)
        if flag:
            BINLOG_PAUSED.put(tx, {**flag, "status": RequestStatus.FINISHED.value})

    def release(self) -> dict[str, Any]:
        """E: FINISHED → IDLE: the committed offset moves past the DDL and the pause ends, in one
        transaction. Returns the record kept for the DDL."""
        with self.store.transaction() as tx:
            cur = SCHEMA_CHANGE_REQUEST.get(tx)
            if not cur or cur.get("status") != RequestStatus.FINISHED.value:
                raise RegistryStateError("release outside FINISHED")
            resume = BinlogOffset.from_dict(cur["resume_after"])
            committed = COMMITTED_OFFSET.get(tx)
            if committed is None or committed < resume:
                COMMITTED_OFFSET.put(tx, resume)
            pending = PENDING_DDL.get(tx)
            if pending and pending.get("offset") and BinlogOffset.from_dict(pending["offset"]) <= resume:
                PENDING_DDL.delete(tx)
            record = {k: cur.get(k) for k in ("ddl_offset", "resume_after", "flushed_to", "table_id", "ddl",
                                              "behavior", "derived", "requested_at", "applied_at", "run_ids")}
            record["finished_at"] = time.time()
            SCHEMA_CHANGES_DONE.key(done_name(BinlogOffset.from_dict(cur["ddl_offset"]))).put(tx, record)
            SCHEMA_CHANGE_REQUEST.delete(tx)
            BINLOG_PAUSED.delete(tx)
        return record


__all__ = ["DROPPED_MARK", "RegistryStateError", "RequestStatus", "SchemaRegistry", "schema_from_history"]
