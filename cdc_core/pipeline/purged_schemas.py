"""After a resnapshot past a purged binlog: carry over the schema changes the purged range held.

When the binlog the stream would resume from was purged, the resnapshot restarts the stream at the
new chunks' watermarks and the purged range is never read (``cdc_core/pipeline/resnapshot.py``; the
same when no batch was committed yet: the stream starts at the chunks' watermarks either way). A
DDL in that range — or one the stream had stopped before, whose schema change had not finished —
then reaches neither the schema history nor Doris: the re-read chunks leave out the columns Doris
lacks, and the first binlog row of the table after the restart carries a column the history does not
know, so every batch fails with ``SchemaHistoryMismatchError`` and the pipeline is wedged (found by
the soak, ``tests/soak/``: a DDL, then the pipeline down, the binlog purged, the heal).

So, right after such a resnapshot is requested and before any chunk is read, each re-read table's
schema as the server has it now is compared with the schema history's; the differences (columns
added, dropped, or changed in type or nullability) go through the schema-change path as one schema
change at the server's position now: derived as ``schema.change.behavior`` says, applied to Doris,
recorded in the history, the stream's committed offset set there (the new chunks' high watermarks
filter it, as after any resnapshot). A schema change left unfinished from before the purge is
dropped first: its DDL lies in the purged range, and the comparison carries what it changed.

Crash safety: the carried change is a schema-change request like a DDL's, run under its own run id;
killed midway, the next resnapshot (a re-run continues it) finishes that request's steps.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from cdc_core.model import events as ev
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.discovery import TableNotFoundError
from cdc_core.schema_evolution.registry import RequestStatus, schema_from_history
from cdc_core.state.keys import (
    BINLOG_PAUSED,
    PENDING_DDL,
    SCHEMA_CHANGE_REQUEST,
    SCHEMA_CHANGES_DONE,
    done_name,
)

if TYPE_CHECKING:
    from cdc_core.pipeline.service import PipelineService

logger = logging.getLogger(__name__)

RUN_ID = "resnapshot-after-purge"
"""The run id of the schema change this module requests (tells it from a DDL's own request)."""


_INT_WIDTH = re.compile(r"^((?:tiny|small|medium|big)?int|integer)\(\d+\)")


def _type_key(column: Column) -> str:
    """The column's type for comparing: an integer's display width is left out (the history may hold a
    type as a DDL spelled it, ``int``, where the server says ``int(11)``)."""
    return _INT_WIDTH.sub(r"\1", " ".join(column.column_type.lower().split()))


def schema_drift(table_id: TableId, before: TableSchema, after: TableSchema, at: BinlogOffset,
                 ) -> list[ev.SchemaChangeEvent]:
    """The schema changes that turn ``before`` (the history's) into ``after`` (the server's): drops,
    then adds (each after the column it follows) and type or nullability changes."""
    note = "schema change in a purged binlog range, found by the resnapshot"
    out: list[ev.SchemaChangeEvent] = [
        ev.DropColumnEvent(table_id, offset=at, ddl=note, column_name=c.name)
        for c in before.columns if not after.has_column(c.name)]
    previous: str | None = None
    for col in after.columns:
        if not before.has_column(col.name):
            out.append(ev.AddColumnEvent(table_id, offset=at, ddl=note, column=col,
                                         position="AFTER" if previous else "FIRST", after=previous))
        else:
            old = before.column(col.name)
            if _type_key(old) != _type_key(col) or old.nullable != col.nullable:
                out.append(ev.AlterColumnTypeEvent(table_id, offset=at, ddl=note, column_name=old.name,
                                                   column=replace(col, name=old.name)))
        previous = col.name
    return out


def _drop_stale_request(service: PipelineService, cur: dict[str, Any], why: str) -> None:
    """Forget a schema change left unfinished before the purge (its DDL was in the purged range)."""
    store = service.context.store
    with store.transaction() as tx:
        raw = cur.get("ddl_offset") or cur.get("requested_offset")
        if raw:
            off = BinlogOffset.from_dict(raw)
            SCHEMA_CHANGES_DONE.key(done_name(off)).put(tx, {
                "ddl_offset": off.to_dict(), "ddl": cur.get("ddl"), "outcome": why, "finished_at": time.time()})
        SCHEMA_CHANGE_REQUEST.delete(tx)
        BINLOG_PAUSED.delete(tx)
    logger.warning("%s: the schema change of the DDL at %s (%s) was left unfinished before the binlog was purged; "
                   "%s", service.definition.name, raw, cur.get("ddl") or "?", why)


def carry_schema_drift(service: PipelineService, tables: Sequence[str]) -> dict[str, Any] | None:
    """Carry the re-read tables' schema changes the purged range held to the history and Doris
    (module docstring); returns what was carried, or None when nothing had changed."""
    ctx = service.context
    registry = service.schema_registry()
    cur = registry.current()
    if cur is not None and RUN_ID not in cur.get("run_ids", []):
        _drop_stale_request(service, cur, "superseded by the resnapshot after the purge, which carries the "
                                          "table's schema as the server has it now")
        cur = None
    steps = service.schema_change_steps(run_id=RUN_ID)
    carried: list[str] = []
    if cur is None:
        # in the pipeline's epoch, as the history's and the pending DDL's offsets are (after a failover)
        at = ctx.aligned_offset()
        found: list[ev.SchemaChangeEvent] = []
        with ctx.store.transaction(readonly=True) as tx:
            known = {t: schema_from_history(tx.schema_at(t, at.sequence)) for t in tables}
        for table, before in known.items():
            if before is None:
                continue
            try:
                after = ctx.live_schema(TableId.parse(table))
            except TableNotFoundError:
                continue  # gone: the chunk reads skip it (snapshot._skip_gone_tables)
            found += schema_drift(TableId.parse(table), before, after, at)
        with ctx.store.transaction() as tx:
            pending = PENDING_DDL.get(tx)
            if pending and pending.get("offset") and BinlogOffset.from_dict(pending["offset"]) < at:
                PENDING_DDL.delete(tx)  # the DDL the stream had stopped before, in the purged range
        if not found:
            return None
        carried = [f"{e.table_id}: {e.type_name} {getattr(e, 'column_name', '') or getattr(e.column, 'name', '')}"
                   for e in found]
        logger.warning("%s: the tables' schemas changed in the purged binlog range (%s); carried over as a schema "
                       "change at %s before the tables are read again", service.definition.name,
                       "; ".join(carried), at)
        registry.request(at, RUN_ID)
        registry.flushed(at, found, at)
    applied: dict[str, Any] = {}
    if registry.status is RequestStatus.APPLYING:
        applied = steps.apply()
    if registry.status is RequestStatus.FINISHED:
        steps.resume()
    return {"changes": carried or [c.get("change") for c in applied.get("changes", [])],
            "doris": applied.get("changes", [])}


__all__ = ["RUN_ID", "carry_schema_drift", "schema_drift"]
