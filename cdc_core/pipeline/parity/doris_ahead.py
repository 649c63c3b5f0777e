"""Doris's side of whole-table chunk parity, computed as soon as chunks are committed early.

A run of more chunks than ``tidemark.doris.max-running-txns-per-db`` allows in flight commits
finished chunks early while it reads the others (``cdc_core/pipeline/snapshot.py:run_chunks_bounded``,
``commit_window.py``). For a database of small tables (a chunk that is its whole table), the
``chunk_parity`` check that follows the run compared every table's count and checksum in Doris after
the last commit, many tables a statement (``whole_tables.doris_wholes``): 1.4 s of a 300-table run's
10.6 s snapshot, all of it waiting for Doris (issue 30). Here Doris's side of the chunks committed
early is computed on a thread, about a bound's worth at a time (an early group), while the reads go
on; the check then asks Doris only for the tables left for the run's commit.

When a stored segment may stand in for asking Doris again (``DorisAhead.valid``), beside the same
statement and table (the fingerprint):
- the same Dagster run asks (its check; a later check or ``tidemark verify`` asks Doris itself);
- the server's binlog position is the one read before it was computed, and the stream's committed
  offset too: no binlogged write has reached MySQL since, and no binlog batch committed into Doris
  since. What else writes a committed table's rows in Doris is excluded meanwhile: the chunks are
  their whole tables, read by this run alone under its leases (a repair or a resnapshot of those
  tables waits for them), and they were computed while the run held them. A batch that the stream
  committed into Doris but not yet into the state would need binlog events past the committed
  offset: the check is then not authoritative anyway (``orchestration/defs/checks.py``: Doris
  behind the server's position).
The segment is Doris's rows right after their commit; the check compares them with MySQL's side
as before (computed during the reads, ``overlap.py``, or at check time), so a difference is still
caught and reported per chunk.

A failure here is logged (with its cause) and changes nothing: the check asks Doris itself.

The commit hook reports each table's row count after the run's last commit
(``cdc_core/pipeline/targets.py:target_updates``); a stored segment still valid for the same run,
as above, already has that count (``counts_after_commit``): Doris is asked to count only the other
tables. The segments stay stored for the check.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cdc_core.instrumentation.phases import phase
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.parity.row_checksum import ChecksumPlan, Segment
from cdc_core.pipeline.parity.whole_tables import doris_wholes, whole_plans
from cdc_core.state.keys import COMMITTED_OFFSET, PARITY_DORIS_SIDE

logger = logging.getLogger(__name__)


def fingerprint(plan: ChecksumPlan) -> str:
    """What a stored segment was computed from: Doris's row text and the table, whole."""
    text = json.dumps([plan.doris_row_hash(), str(plan.target), "whole table"])
    return hashlib.sha1(text.encode()).hexdigest()


def committed_offset(ctx: PipelineContext) -> dict[str, Any] | None:
    """The stream's committed offset as the state has it (None before the first batch)."""
    offset = COMMITTED_OFFSET.get(ctx.store)
    return None if offset is None else offset.to_dict()


@dataclass(frozen=True)
class DorisAhead:
    """Doris's count and checksum of one whole-table chunk, with what makes it reusable."""

    run_id: str
    server_offset: dict[str, Any]
    committed_offset: dict[str, Any] | None
    fingerprint: str
    segment: Segment
    target: str | None = None  # the Doris table counted whole (None: stored before it was kept)

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "server_offset": self.server_offset,
                "committed_offset": self.committed_offset, "fingerprint": self.fingerprint,
                "count": self.segment.count, "total": str(self.segment.total), "target": self.target}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DorisAhead:
        return cls(data["run_id"], data["server_offset"], data.get("committed_offset"), data["fingerprint"],
                   Segment(int(data["count"]), int(data["total"])), data.get("target"))

    def valid(self, run_id: str | None, server_offset: dict[str, Any], committed: dict[str, Any] | None,
              fp: str) -> bool:
        return (run_id == self.run_id and server_offset == self.server_offset and committed == self.committed_offset
                and fp == self.fingerprint)


def take(ctx: PipelineContext, run_id: str | None, server_offset: dict[str, Any],
         work: dict[str, ChecksumPlan]) -> dict[str, Segment]:
    """The stored Doris segments of these whole-table chunks (chunk key → the table's plan) that
    are still valid, by chunk key; every stored one of these chunks is dropped, used or not."""
    if not work:
        return {}
    found: dict[str, Segment] = {}
    committed = committed_offset(ctx)
    with ctx.store.transaction() as tx:
        stored_data = PARITY_DORIS_SIDE.get_many(tx, list(work))
        PARITY_DORIS_SIDE.delete_many(tx, list(stored_data))
    for key, data in stored_data.items():
        stored = DorisAhead.from_dict(data)
        if stored.valid(run_id, server_offset, committed, fingerprint(work[key])):
            found[key] = stored.segment
    if found:
        logger.info("parity: Doris's side of %d of %d whole-table chunk(s) was computed after their group's "
                    "commit", len(found), len(work))
    return found


def counts_after_commit(ctx: PipelineContext, run_id: str, chunk_keys: Sequence[str]) -> dict[str, int]:
    """The row counts of Doris tables (by table id) that stored segments of ``run_id``'s chunks still
    give (``DorisAhead.valid``'s run and offsets; the segment's own table): the tables of its early
    groups, counted whole right after their commit. Read, not taken: the check uses them after.
    Empty when none is stored (no MySQL asked) or on any failure (the caller counts)."""
    if not chunk_keys:
        return {}
    try:
        with ctx.store.transaction(readonly=True) as tx:
            stored = [DorisAhead.from_dict(d) for d in PARITY_DORIS_SIDE.get_many(tx, list(chunk_keys)).values()]
        stored = [s for s in stored if s.run_id == run_id and s.target is not None]
        if not stored:
            return {}
        committed = committed_offset(ctx)
        offset = ctx.server_offset().to_dict()
        counts = {s.target: s.segment.count for s in stored  # type: ignore[misc]
                  if s.server_offset == offset and s.committed_offset == committed}
        logger.info("row counts of %d of %d table(s) as counted after their group's commit", len(counts),
                    len(chunk_keys))
        return counts
    except Exception:  # noqa: BLE001 - Doris counts them all
        logger.warning("could not read the row counts computed after the early groups' commits; Doris counts "
                       "every table", exc_info=True)
        return {}


def _compute(ctx: PipelineContext, run_id: str, whole: dict[str, str]) -> list[tuple[str, DorisAhead]]:
    """Doris's whole-table segments of ``whole`` (chunk key → table), the offsets read first."""
    with phase("parity_doris_ahead"):
        plans = whole_plans(ctx, sorted(set(whole.values())))
        if not plans:
            return []
        committed = committed_offset(ctx)
        offset = ctx.server_offset().to_dict()  # on this thread's own connection (PipelineContext.connection)
        segments = doris_wholes(ctx.sink.catalog, plans)
        return [(key, DorisAhead(run_id, offset, committed, fingerprint(plans[table]), segments[table],
                                 str(plans[table].target)))
                for key, table in whole.items() if table in segments]


@contextmanager
def alongside(ctx: PipelineContext, run_id: str) -> Iterator[Callable[[dict[str, str]], None]]:
    """Yield ``submit(whole)``: compute Doris's side of the whole-table chunks ``whole`` (chunk key
    → table), committed just now, on a thread of its own, one group after the other, while the
    block goes on. When the block ends, wait for what was submitted and store it."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tidemark-parity-doris")
    futures: list[Future[list[tuple[str, DorisAhead]]]] = []

    def submit(whole: dict[str, str]) -> None:
        if whole:
            futures.append(pool.submit(_compute, ctx, run_id, dict(whole)))

    try:
        yield submit
    finally:
        done: list[tuple[str, DorisAhead]] = []
        for future in futures:
            try:
                done += future.result()
            except Exception:  # noqa: BLE001 - the check asks Doris itself
                logger.warning("parity: Doris's side could not be computed after a group's commit; the check asks "
                               "Doris itself", exc_info=True)
        pool.shutdown()
        if done:
            try:
                with ctx.store.transaction() as tx:
                    PARITY_DORIS_SIDE.put_many(tx, [(key, stored.to_dict()) for key, stored in done])
            except Exception:  # noqa: BLE001 - the check asks Doris itself
                logger.warning("parity: could not store Doris's side computed after the commits", exc_info=True)
                return
            logger.info("parity: Doris's side of %d whole-table chunk(s) computed after their group's commit",
                        len(done))
