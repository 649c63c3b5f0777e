"""How long one binlog run keeps streaming: batch after batch while the binlog moves on.

Each ``binlog_stream`` run launched by the sensor is a new process, whose start costs seconds
(Dagster's run launcher, ~4 s measured) before any binlog is read; one batch per run pays that
for every batch, and under a steady write load a stream that pays it falls behind for good. So a
run goes on: after a batch is committed, the next one reads what arrived meanwhile (a batch
always reads up to the server's position when it starts, so it grows with the lag), until

* the time budget (``tidemark.binlog.run-seconds``) is spent, or
* the binlog has not moved past the committed offset for ``tidemark.binlog.idle-wait-s`` after
  a batch (caught up: the run commits its batch and waits that long for more before it ends, so
  a steady stream whose commits come a fraction of a second apart is not cut into runs, each
  paying a run's start; 0: a caught-up run ends at once), or
* a batch stopped before a DDL (the schema change's work) or found nothing to read, or
* the pause flag is set (a schema change waits for the in-flight runs to end), or
* the process was asked to stop (``tidemark run``'s Ctrl-C or SIGTERM): the batch in flight is the
  run's last, committed by the hook.

Every batch keeps the whole protocol of a single-batch run: read, precommit, recorded PREPARED,
then committed (``binlog_batch.commit_batch``) before the next batch starts; a crash anywhere
leaves at most one PREPARED batch, which the next run's ``resolve_pending`` finishes. Whether the
run goes on is decided before the commit: the batch a run ends with is committed by the commit
hook, as a single-batch run's is, and a commit that fails inside the run ends it, leaving the
batch PREPARED for the hook's retry and ``resolve_pending`` (never aborting a complete batch).

Within a run a batch's loads begin no sooner than ``tidemark.binlog.batch-interval-s`` after the
previous loads began: a quiet stream's batches take a fraction of a second, and back to back they
would give Doris a new version of the table several times a second. ``binlog_batch.run_batch`` holds
the same interval across runs and processes (when the last batch with loads began them is in the
state store); a batch with nothing to load does not wait.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from cdc_core.pipeline.results import BatchResult


class StreamRunEnd(StrEnum):
    """Why a run applied no further batch."""

    ONE_BATCH = "one batch per run"
    BUDGET = "time budget spent"
    CAUGHT_UP = "caught up"
    NOTHING_READ = "nothing to read"
    DDL = "stopped before a DDL"
    PAUSED = "paused"
    LOST_LOAD = "Doris lost a load"
    COMMIT_FAILED = "a commit failed"
    STOPPED = "stop requested"  # tidemark run's Ctrl-C / SIGTERM: the batch in flight is the run's last


@dataclass(frozen=True)
class StreamRunPolicy:
    """A run's time budget (0: one batch per run) and the least time between batch starts."""

    budget_s: float
    batch_interval_s: float = 1.0
    idle_wait_s: float = 0.0

    def __post_init__(self) -> None:
        if self.budget_s < 0 or self.batch_interval_s < 0 or self.idle_wait_s < 0:
            raise ValueError(f"a stream run's budget, batch interval and idle wait must be ≥ 0, got {self.budget_s} s, "
                             f"{self.batch_interval_s} s and {self.idle_wait_s} s (tidemark.binlog.run-seconds, "
                             "tidemark.binlog.batch-interval-s, tidemark.binlog.idle-wait-s)")

    def idle_deadline(self, run_started: float, now: float) -> float | None:
        """A caught-up run: until when it waits for the binlog to move (its batch committed), or
        None when it ends at once (no idle wait, or no budget left for another batch)."""
        if self.budget_s <= 0 or self.idle_wait_s <= 0:
            return None
        deadline = min(now + self.idle_wait_s, run_started + self.budget_s)
        return deadline if deadline > now else None

    def before_commit(self, batch: BatchResult, run_started: float, now: float) -> StreamRunEnd | None:
        """Whether the run ends with this batch, known before it is committed (the commit hook
        then commits it, as for a single-batch run)."""
        if self.budget_s <= 0:
            return StreamRunEnd.ONE_BATCH
        if not batch.batch_id:
            return StreamRunEnd.NOTHING_READ
        if batch.stopped_at_ddl:
            return StreamRunEnd.DDL
        if now - run_started >= self.budget_s:
            return StreamRunEnd.BUDGET
        return None

    def next_batch(self, server_ahead: bool, paused: bool, batch_started: float, run_started: float,
                   now: float) -> StreamRunEnd | float:
        """After a batch was prepared: why the run ends with it, or how long to wait, once it is
        committed, before the next batch. ``server_ahead``: the server's binlog position is past
        the batch's end (there is more to read)."""
        if paused:
            return StreamRunEnd.PAUSED
        if not server_ahead:
            return StreamRunEnd.CAUGHT_UP
        wait = max(0.0, batch_started + self.batch_interval_s - now)
        if now + wait - run_started >= self.budget_s:
            return StreamRunEnd.BUDGET
        return wait
