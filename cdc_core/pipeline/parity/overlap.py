"""The MySQL side of chunk parity, computed while the same chunks are read and loaded, then committed.

Why: MySQL's side is most of what the parity check costs (its canonical text is built row by row),
and the snapshot step's reads leave MySQL mostly idle (a scan costs it far less than the checksums),
as do the commits that follow (Doris writes a load's rows when it loads them; its publish is short).
Computed beside them, it costs the run little; the check that follows in the same run then has only
Doris's side left, and MySQL's for the chunks the reads and commits did not leave time for.

When a stored segment may stand in for reading MySQL again (``Prefetched.valid``):
- the same Dagster run asks (a later check, ``tidemark verify`` or another run reads MySQL);
- the table's checksum statement and the chunk's range are the ones it was computed with;
- the server's binlog position is the one read just before it was computed: no binlogged write
  has touched MySQL since, so its rows are what they were, and the check's verdict is exactly as
  authoritative as if MySQL had been read at check time (``orchestration/defs/checks.py`` still
  requires the binlog not to move during the check).
A write made without a binlog event (``sql_log_bin = 0``) between the two is missed by this one
check, as one made just after the check would be; the next check and ``tidemark verify`` see it.

Chunks that are their whole table (every small table of a database captured whole) are computed
the way the check computes them, up to ``whole_tables.TABLES_PER_STATEMENT`` tables a statement
(``whole_tables.mysql_wholes``), their plans read on the thread: a database of 300 small tables
otherwise had all of MySQL's side in its check, after the commits (issue 30).

The work stops when the commits are done: what is left is computed by the check, as before.
A failure here is logged (with its cause) and changes nothing: the check reads MySQL itself.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cdc_core.instrumentation.phases import phase
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.connection import connect
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.parity.row_checksum import ChecksumPlan, KeyRange, Segment, mysql_segment
from cdc_core.pipeline.parity.whole_tables import TABLES_PER_STATEMENT, mysql_wholes, whole_plans
from cdc_core.state.keys import PARITY_MYSQL_SIDE

logger = logging.getLogger(__name__)

def fingerprint(plan: ChecksumPlan, key_range: KeyRange | None) -> str:
    """What a stored segment was computed from: the statement's row text and the range (None: the
    whole table, named, since no range names it)."""
    if key_range is None:
        text = json.dumps([plan.mysql_row_hash(), str(plan.schema.table_id), "whole table"])
    else:
        text = json.dumps([plan.mysql_row_hash(), key_range.column, str(key_range.start), str(key_range.end)])
    return hashlib.sha1(text.encode()).hexdigest()


@dataclass(frozen=True)
class Prefetched:
    """MySQL's count and checksum of one chunk's range, with what makes it reusable."""

    run_id: str
    server_offset: dict[str, Any]
    fingerprint: str
    segment: Segment

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "server_offset": self.server_offset, "fingerprint": self.fingerprint,
                "count": self.segment.count, "total": str(self.segment.total)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Prefetched:
        return cls(data["run_id"], data["server_offset"], data["fingerprint"],
                   Segment(int(data["count"]), int(data["total"])))

    def valid(self, run_id: str | None, server_offset: dict[str, Any], fp: str) -> bool:
        return run_id == self.run_id and server_offset == self.server_offset and fp == self.fingerprint


@dataclass(frozen=True)
class Work:
    """One chunk the check will compare by range in the databases (``key_range`` None: a chunk
    that is its whole table, compared whole)."""

    key: str
    plan: ChecksumPlan
    key_range: KeyRange | None


def take(ctx: PipelineContext, run_id: str | None, server_offset: dict[str, Any],
         work: list[Work]) -> dict[str, Segment]:
    """The stored segments of these chunks that are still valid (by chunk key); every stored one
    of these chunks is dropped, used or not (a later check reads MySQL itself)."""
    found: dict[str, Segment] = {}
    with ctx.store.transaction() as tx:  # a few statements for hundreds of chunks, not two each
        stored_data = PARITY_MYSQL_SIDE.get_many(tx, [item.key for item in work])
        PARITY_MYSQL_SIDE.delete_many(tx, list(stored_data))
    for item in work:
        data = stored_data.get(item.key)
        if data is None:
            continue
        stored = Prefetched.from_dict(data)
        if stored.valid(run_id, server_offset, fingerprint(item.plan, item.key_range)):
            found[item.key] = stored.segment
    if found:
        logger.info("parity: MySQL's side of %d of %d chunk(s) was computed during their commits", len(found),
                    len(work))
    return found


def _stored(ctx: PipelineContext, run_id: str, keys: list[str]) -> set[str]:
    """The chunk keys among ``keys`` with a segment stored by run ``run_id``."""
    if not keys:
        return set()
    with ctx.store.transaction(readonly=True) as tx:
        stored = PARITY_MYSQL_SIDE.get_many(tx, keys)
    return {key for key, data in stored.items() if data.get("run_id") == run_id}


def _not_stored(ctx: PipelineContext, run_id: str, work: list[Work]) -> list[Work]:
    """The items of ``work`` with no segment stored by run ``run_id``."""
    stored = _stored(ctx, run_id, [item.key for item in work])
    return [item for item in work if item.key not in stored]


def _whole_work(ctx: PipelineContext, whole: dict[str, str]) -> list[Work]:
    """Work items of the whole-table chunks ``whole`` (chunk key → table) that the check compares
    whole (``whole_tables.whole_plans``: the others are compared another way)."""
    plans = whole_plans(ctx, sorted(set(whole.values())))
    return [Work(key, plans[table_id], None) for key, table_id in whole.items() if table_id in plans]


def _compute_wholes(conn: Any, items: list[Work], stop: threading.Event) -> Iterator[tuple[Work, Segment]]:
    """MySQL's whole-table segments of ``items``, ``TABLES_PER_STATEMENT`` tables a statement,
    checking ``stop`` between statements."""
    for i in range(0, len(items), TABLES_PER_STATEMENT):
        if stop.is_set():
            return
        part = items[i: i + TABLES_PER_STATEMENT]
        segments = mysql_wholes(conn, {item.key: item.plan for item in part})
        for item in part:
            if item.key in segments:
                yield item, segments[item.key]


@contextmanager
def alongside(ctx: PipelineContext, run_id: str, work: list[Work],
              whole: dict[str, str] | None = None) -> Iterator[None]:
    """Compute MySQL's side of ``work`` on a thread of its own while the block runs (the reads, then
    the commits); stop at the first chunk not started when the block ends, and store what was
    computed. A chunk whose side this run already stored (during its reads) is not computed again.

    ``whole``: chunks that are their whole table (chunk key → table); their plans are made on the
    thread (a schema read of every table: not before the block starts), then they are computed
    whole, many tables a statement, after ``work``."""
    work = _not_stored(ctx, run_id, work)
    whole = whole or {}
    if whole:
        stored = _stored(ctx, run_id, list(whole))
        whole = {key: table for key, table in whole.items() if key not in stored}
    if not work and not whole:
        yield
        return
    stop = threading.Event()
    done: list[tuple[str, Prefetched]] = []
    failure: list[BaseException] = []

    def compute() -> None:
        try:
            with phase("parity_overlap"):
                conn = connect(ctx.settings, text_values=True)
                try:
                    with conn.cursor() as cur:  # the position before reading (this thread's own connection)
                        offset = read_current_offset(cur).to_dict()
                    for item in work:
                        if stop.is_set():
                            return
                        segment = mysql_segment(conn, item.plan, item.key_range)
                        done.append((item.key, Prefetched(run_id, offset, fingerprint(item.plan, item.key_range),
                                                          segment)))
                    if whole and not stop.is_set():
                        for item, segment in _compute_wholes(conn, _whole_work(ctx, whole), stop):
                            done.append((item.key, Prefetched(run_id, offset, fingerprint(item.plan, None), segment)))
                finally:
                    conn.close()
        except Exception as exc:  # noqa: BLE001 - the check reads MySQL itself; the cause is logged below
            failure.append(exc)

    thread = threading.Thread(target=compute, name="tidemark-parity-overlap", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        if failure:
            logger.warning("parity: MySQL's side could not be computed during the commits; the check reads it "
                           "itself", exc_info=failure[0])
        if done:
            with ctx.store.transaction() as tx:
                PARITY_MYSQL_SIDE.put_many(tx, [(key, stored.to_dict()) for key, stored in done])
            logger.info("parity: MySQL's side of %d of %d chunk(s) computed during their commits", len(done),
                        len(work) + len(whole))
