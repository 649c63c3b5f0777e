"""Recovery: finish whatever a crash or a failed hook left, before anything else in a run.

A PREPARED record is complete (its transactions are precommitted and named), so it is
committed; a RUNNING one is not (a task may have precommitted loads no record names yet), so its
loads are found by their deterministic labels and aborted. Transactions a Spark job reported but
the driver never recorded (``spark_results``) are aborted too. What cannot be resolved now is
reported as ``failed`` (with its cause; the caller says it, the log file has its stack trace) and
retried on the next run; the ``no_pending_transactions`` check shows it. Once Doris is found unavailable
(a node restarting, after the client's retries), the PREPARED records after it are reported failed
without a try each: the next run commits them. A load Doris lost before its commit (it aborted the transaction on its own) is work
to redo, reported as ``redo``: its chunk is PENDING again under its next generation, its binlog
batch ABORTED so that the next batch reads the same range again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cdc_core.doris.errors import DorisUnavailableError
from cdc_core.pipeline.binlog_batch import abandon_batch, commit_batch
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.results import ResolveReport
from cdc_core.pipeline.snapshot import abandon_chunks, commit_record
from cdc_core.state import BatchStatus, ChunkStatus
from cdc_core.state.keys import SPARK_RESULTS
from cdc_core.state.leases import SNAPSHOT_PREFIX, Scope, live_holders, process_owner

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Busy:
    """The work live runs of other processes hold leases on (``cdc_core/state/leases.py``): theirs
    to finish, never resolved under them (a RUNNING chunk of theirs is being loaded, not lost)."""

    everything: bool = False
    stream: bool = False
    tables: frozenset[str] = frozenset()

    @classmethod
    def now(cls, ctx: PipelineContext) -> Busy:
        others = live_holders(ctx.store, other_than=process_owner())
        return cls(any(r.scope == Scope.PIPELINE for r in others), any(r.scope == Scope.STREAM for r in others),
                   frozenset(r.scope[len(SNAPSHOT_PREFIX):] for r in others if r.scope.startswith(SNAPSHOT_PREFIX)))

    @property
    def any_loads(self) -> bool:
        return self.everything or self.stream or bool(self.tables)


def resolve_pending(ctx: PipelineContext) -> ResolveReport:
    """Commit complete PREPARED records, abort the rest and any lingering transaction of our
    label prefix that a record names — except the work a live run of another process holds a
    lease on (a dead run's lease has expired: its work is resolved here)."""
    busy = Busy.now(ctx)
    if busy.everything:
        logger.info("recovery: another run holds the whole pipeline; its work is left to it")
        return ResolveReport((), (), (), ())
    report = _resolve_chunks(ctx, busy) + _resolve_batches(ctx, busy)
    if report.committed or report.aborted or report.failed or report.redo:
        logger.info("recovery: %d label(s) committed, %d aborted, %d left for later; %d chunk(s)/batch(es) to read "
                    "again (Doris lost their loads)", len(report.committed), len(report.aborted), len(report.failed),
                    len(report.redo))
    return report


def _resolve_chunks(ctx: PipelineContext, busy: Busy) -> ResolveReport:
    committed: list[str] = []
    aborted: list[str] = []
    failed: list[str] = []
    redo: list[str] = []
    with ctx.store.transaction(readonly=True) as tx:
        chunks = tx.chunks()
        leftovers = SPARK_RESULTS.items(tx)
    unavailable: DorisUnavailableError | None = None
    for record in chunks:
        if record.table_id in busy.tables:
            continue
        labels = [t["label"] for t in record.transactions or []]
        if record.status is ChunkStatus.PREPARED:
            if unavailable is not None:  # Doris is down: the rest waits for the next run, untried
                failed.extend(f"{label}: {unavailable}" for label in labels)
                continue
            try:
                done = commit_record(ctx, record)
            except Exception as exc:  # noqa: BLE001 - reported by the check, retried next run
                logger.info("recovery could not commit chunk %s", chunk_key(*record.key), exc_info=True)
                failed.extend(f"{label}: {exc}" for label in labels)
                if isinstance(exc, DorisUnavailableError):
                    unavailable = exc
                continue
            if done:
                committed.extend(labels)
            else:
                redo.append(chunk_key(*record.key))
        elif record.status is ChunkStatus.RUNNING:
            abandon_chunks(ctx, [record])
            aborted.append(chunk_key(*record.key))
    for token, messages in leftovers if not busy.any_loads else ():  # a live run's Spark job may be writing them
        stray = [c for m in messages or [] for c in m.get("committables", [])]
        if stray:
            ctx.sink.abort(stray)
            aborted.extend(c["label"] for c in stray)
        with ctx.store.transaction() as tx:
            SPARK_RESULTS.key(token).delete(tx)
    return ResolveReport(tuple(committed), tuple(aborted), tuple(failed), tuple(redo))


def _resolve_batches(ctx: PipelineContext, busy: Busy) -> ResolveReport:
    committed: list[str] = []
    aborted: list[str] = []
    failed: list[str] = []
    redo: list[str] = []
    if busy.stream:
        return ResolveReport((), (), (), ())
    with ctx.store.transaction(readonly=True) as tx:
        batches = tx.batches()
    for batch in batches:
        labels = [t["label"] for t in batch.transactions or []]
        if batch.status is BatchStatus.PREPARED:
            try:
                if commit_batch(ctx, batch.batch_id):
                    committed.extend(labels)
                else:
                    redo.append(batch.batch_id)
            except Exception as exc:  # noqa: BLE001 - reported by the check, retried next run
                logger.info("recovery could not commit binlog batch %s", batch.batch_id, exc_info=True)
                failed.extend(f"{label}: {exc}" for label in labels)
        elif batch.status is BatchStatus.RUNNING:
            abandon_batch(ctx, batch)
            aborted.append(batch.batch_id)
    return ResolveReport(tuple(committed), tuple(aborted), tuple(failed), tuple(redo))


def pending_transactions(ctx: PipelineContext) -> list[dict[str, Any]]:
    """PREPARED-but-not-finished transactions (for the ``no_pending_transactions`` check)."""
    out = []
    with ctx.store.transaction(readonly=True) as tx:
        for record in tx.chunks(status=ChunkStatus.PREPARED):
            for txn in record.transactions or []:
                out.append({**txn, "owner": chunk_key(*record.key)})
        for batch in tx.batches(status=BatchStatus.PREPARED):
            for txn in batch.transactions or []:
                out.append({**txn, "owner": batch.batch_id})
    return out
