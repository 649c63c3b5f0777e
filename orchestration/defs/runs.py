"""Run bookkeeping the sensors, the schema-change job and ``tidemark run --once`` share.

(What a step prepared, for its hooks, is kept by the pipeline service:
``PipelineService.step_ledger``, ``cdc_core/pipeline/ledger.py``.)

* ``runs_in_flight``: the runs of a pipeline that have not finished, whatever launched them
  (sensor, schedule, backfill, the UI's Materialize button), found by the asset keys they
  select rather than by tags, because UI launches carry no Tidemark tags.
* ``IN_FLIGHT_STATUSES`` / ``EXECUTING_STATUSES``: the one list of "not finished" run states
  (and the part of it that is actually running), for every check of that kind.
* ``record_run_process`` / ``fail_dead_runs``: a run that executes writes down its host, pid and
  the pid's start time in one hidden tag (``RUN_PROCESS_TAG``, not shown on the UI's run rows); a run still marked executing whose process on this host is
  gone (a ``kill -9``, an OOM kill, a reboot) is marked failed, so it no longer blocks the
  pipeline. Its prepared work is resolved by the next run (``PipelineService.resolve_pending``).
  A run on another host is recognised by its lease (``fail_runs_of_dead_holders``).
* ``fail_runs_of_dead_holders``: the runs whose expired leases another run took over (any host)
  are marked failed the same way.
* ``fail_leaseless_runs``: a run that died before it took any lease (in its resource setup, on
  another host) leaves no lease to expire; one executing with no lease of its own and nothing
  in its event log for longer than the lease's time to live is marked failed by the run that
  holds the pipeline's lease (and by a sensor when nobody holds any of it), so it never needs a
  hand edit in the UI.
* ``latest_failed_run`` / ``failure_message``: the most recent failed run of a pipeline that no
  later run of the same work (job and asset selection) made good, and why it failed (``tidemark
  status``): after an outage, once the binlog job succeeds again, its old ConnectionError is history,
  not the pipeline's last error.
* ``next_run_key``: the run key a sensor asks for when the run of a key may fail. Dagster
  launches one run per run key, so after a failure the same work is asked for again under a
  numbered key (``<base>~retry1`` ...), a bounded number of times.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dagster import AssetKey, DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

# Dagster's tag for a run's run key; it has no public name for it.
from dagster._core.storage.tags import RUN_KEY_TAG

from cdc_core.instrumentation.proc_stat import START_TICKS, STATE, stat_fields
from cdc_core.state.leases import LeaseRecord, process_space

# A run in one of these states has been launched but has not started executing.
WAITING_STATUSES = (DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED)
# A run in one of these states is executing (a canceling run may still be writing).
EXECUTING_STATUSES = (DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING)
# Not finished: waiting or executing.
IN_FLIGHT_STATUSES = WAITING_STATUSES + EXECUTING_STATUSES
# Failed for good: the run key's work was not done and will not be by this run.
UNSUCCESSFUL_STATUSES = (DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED)

MAX_RETRIES = 3

logger = logging.getLogger(__name__)


# Where a run executes, as one tag: {"host", "pid", "pid_start", "pid_space"} (JSON). Dagster hides tags under its
# ``.dagster/`` prefix (dagster._core.storage.tags.HIDDEN_TAG_PREFIX) from the UI's run rows: this one
# is bookkeeping for fail_dead_runs, not something a user reads.
RUN_PROCESS_TAG = ".dagster/tidemark_run_process"


@dataclass(frozen=True)
class RunProcess:
    """The process executing a run: its host, pid, the pid's start time (empty: unknown) and the
    boot and PID namespace the pid means something in (``cdc_core/state/leases.py:process_space``;
    empty: unknown). A hostname alone is not enough: two containers may share one."""

    host: str
    pid: int
    pid_start: str
    pid_space: str = ""

    def to_tag(self) -> str:
        return json.dumps({"host": self.host, "pid": self.pid, "pid_start": self.pid_start,
                           "pid_space": self.pid_space})

    @classmethod
    def of(cls, run: DagsterRun) -> RunProcess | None:
        """The process the run's tag names; None without the tag (or with one that does not parse)."""
        try:
            value = json.loads(run.tags[RUN_PROCESS_TAG])
            return cls(str(value["host"]), int(value["pid"]), str(value.get("pid_start") or ""),
                       str(value.get("pid_space") or ""))
        except (KeyError, ValueError, TypeError):
            return None


def _pid_start(pid: int) -> str | None:
    """When the process started (clock ticks since boot; None: no such process), so a pid the
    kernel has given to a new process is not taken for the run's."""
    fields = stat_fields(pid)
    return None if fields is None or fields[STATE] == "Z" else fields[START_TICKS]


def record_run_process(instance: DagsterInstance, run_id: str) -> None:
    """Tag the run with the process executing it (called as its first step sets up)."""
    pid = os.getpid()
    process = RunProcess(socket.gethostname(), pid, _pid_start(pid) or "", process_space() or "")
    instance.add_run_tags(run_id, {RUN_PROCESS_TAG: process.to_tag()})


def run_process_gone(run: DagsterRun) -> bool:
    """The run says it executes in a process of this host (this boot, this PID namespace) that no
    longer exists."""
    process = RunProcess.of(run)
    if process is None or process.host != socket.gethostname():
        return False
    if process.pid_space and process.pid_space != (process_space() or ""):
        return False  # another PID namespace or boot: its pid means nothing here
    start = _pid_start(process.pid)
    return start is None or (bool(process.pid_start) and start != process.pid_start)


def fail_dead_runs(instance: DagsterInstance, runs: list[DagsterRun]) -> list[DagsterRun]:
    """Mark the runs whose process is gone failed (canceled, if they were canceling); returns the
    others."""
    alive = []
    for run in runs:
        if run.status not in EXECUTING_STATUSES or not run_process_gone(run):
            alive.append(run)
            continue
        process = RunProcess.of(run)
        where = f"pid {process.pid} on {process.host}" if process else "its pid"
        message = (f"the process executing this run ({where}) is gone: it "
                   "was killed or its machine restarted. Tidemark marked the run failed; the pipeline's next run "
                   "finishes or redoes what it had prepared.")
        _mark_ended(instance, run, message)
    return alive


def fail_runs_of_dead_holders(instance: DagsterInstance, dead: list[LeaseRecord]) -> list[str]:
    """The Dagster runs whose expired leases a run just took over (``cdc_core/state/leases.py``):
    their process stopped its heartbeat — killed, or its machine gone, on any host — so they are
    marked failed (canceled, if they were canceling) rather than left executing forever (Dagster's
    run monitoring cannot tell with the default run launcher, and never sees ``tidemark run``'s
    runs). Returns their ids."""
    failed = []
    for record in dead:
        run = instance.get_run_by_id(record.run_id) if record.run_id else None
        if run is None or run.status not in EXECUTING_STATUSES:
            continue
        message = (f"the process executing this run (pid {record.pid} on {record.host}) stopped renewing its lease on "
                   f"the pipeline's {record.scope} ({record.death()}): it was killed or its "
                   "machine is gone. Tidemark marked the run failed; the run that took the lease over finishes or "
                   "redoes what it had prepared.")
        _mark_ended(instance, run, message)
        failed.append(run.run_id)
    return failed


@dataclass(frozen=True)
class LeaseView:
    """What the pipeline's leases say, for ``runs_in_flight`` to tell a dead run from a live one.

    ``leased_run_ids``: the Dagster runs holding a live lease. ``ttl_s``: the leases' time to live.
    ``any_steps``: whether a run that already started a step may be judged (only the holder of the
    pipeline's lease may: no live run can then be doing leased work; a sensor holding nothing judges
    only runs that never started a step, i.e. died in their setup)."""

    leased_run_ids: frozenset[str]
    ttl_s: float
    any_steps: bool


@dataclass(frozen=True)
class LeaselessRun:
    """A run marked failed by :func:`fail_leaseless_runs`; ``line`` says so, for the user."""

    run_id: str
    line: str


def _last_activity(instance: DagsterInstance, run: DagsterRun) -> float | None:
    """Epoch seconds of the newest entry in the run's event log (else its record's creation)."""
    records = instance.get_records_for_run(run.run_id, limit=1, ascending=False).records
    if records:
        return float(records[0].event_log_entry.timestamp)
    record = instance.get_run_record_by_id(run.run_id)
    return record.create_timestamp.timestamp() if record is not None else None


def _started_a_step(instance: DagsterInstance, run: DagsterRun) -> bool:
    from dagster import DagsterEventType

    return bool(instance.get_records_for_run(run.run_id, of_type=DagsterEventType.STEP_START, limit=1).records)


def fail_leaseless_runs(instance: DagsterInstance, runs: list[DagsterRun], leases: LeaseView,
                        now: float | None = None) -> tuple[list[DagsterRun], list[LeaselessRun]]:
    """Mark failed the executing runs that hold no lease and whose event log has been silent for
    longer than the lease's time to live: their process died before it took a lease (a run that is
    alive takes one as its first step starts, or waits for one at most that long, logging as it
    goes). Returns the other runs and a line per run marked failed.

    The clock is this machine's against the run process's event timestamps: a skew between hosts
    larger than the time to live delays (or advances) the judgement by that much; nothing worse,
    because the work itself is guarded by the leases, not by Dagster's run status."""
    now = time.time() if now is None else now
    alive: list[DagsterRun] = []
    failed: list[LeaselessRun] = []
    for run in runs:
        if run.status not in EXECUTING_STATUSES or run.run_id in leases.leased_run_ids:
            alive.append(run)
            continue
        last = _last_activity(instance, run)
        if last is None or now - last <= leases.ttl_s or (not leases.any_steps and _started_a_step(instance, run)):
            alive.append(run)
            continue
        process = RunProcess.of(run)
        where = f"pid {process.pid} on {process.host}" if process else "a process that never said where"
        silent = now - last
        message = (f"the process executing this run ({where}) holds no lease of the pipeline and has logged nothing "
                   f"for {silent:.0f} s (the lease's time to live is {leases.ttl_s:.0f} s): it died before taking its "
                   "lease (killed, or its machine is gone). Tidemark marked the run failed; it had prepared nothing.")
        _mark_ended(instance, run, message)
        failed.append(LeaselessRun(run.run_id, f"run {run.run_id[:8]} ({run.job_name}, {where}) was still marked "
                                                f"{run.status.value.lower()} with no lease and nothing logged for "
                                                f"{silent:.0f} s: its process died before taking a lease; marked it "
                                                "failed"))
    return alive, failed


def runs_in_flight(instance: DagsterInstance, asset_keys: set[AssetKey] | None = None,
                   prefix: tuple[str, ...] | None = None, exclude_run_id: str | None = None,
                   leases: LeaseView | None = None, on_failed: Callable[[LeaselessRun], None] | None = None,
                   ) -> list[Any]:
    """Unfinished runs that materialize any of ``asset_keys`` or any asset under ``prefix``; a run
    whose process is gone is marked failed on the way and is not among them, and so (given
    ``leases``) is a run that died before taking its lease (:func:`fail_leaseless_runs`; each is
    passed to ``on_failed``)."""
    out = []
    runs = instance.get_runs(filters=RunsFilter(statuses=IN_FLIGHT_STATUSES), limit=500)
    candidates = fail_dead_runs(instance, [r for r in runs if r.run_id != exclude_run_id])
    if leases is not None:
        mine = [r for r in candidates if _belongs(instance, r, asset_keys, prefix)]
        _alive, failed = fail_leaseless_runs(instance, mine, leases)
        gone = {f.run_id for f in failed}
        candidates = [r for r in candidates if r.run_id not in gone]
        for item in failed:
            if on_failed is not None:
                on_failed(item)
    for run in candidates:
        if _belongs(instance, run, asset_keys, prefix):
            out.append(run)
    return out


def _belongs(instance: DagsterInstance, run: DagsterRun, asset_keys: set[AssetKey] | None,
             prefix: tuple[str, ...] | None) -> bool:
    selected = _selected_asset_keys(instance, run)
    by_key = asset_keys is not None and bool(selected & asset_keys)
    by_prefix = prefix is not None and any(tuple(k.path[: len(prefix)]) == prefix for k in selected)
    return by_key or by_prefix


def _selected_asset_keys(instance: DagsterInstance, run: DagsterRun) -> set[AssetKey]:
    selected = set(run.asset_selection or ()) | {k.asset_key for k in (run.asset_check_selection or ())}
    # A run of an op job, or an asset job without a stored selection: look at its plan.
    return selected or _planned_asset_keys(instance, run)


def latest_failed_run(instance: DagsterInstance, prefix: tuple[str, ...], job_names: set[str],
                      look_at: int = 200) -> DagsterRun | None:
    """The most recent failed run (of the last ``look_at`` finished runs) of the pipeline whose
    assets are under ``prefix`` or whose jobs are ``job_names``, however it was launched, unless a
    later run of the same work succeeded: that failure is over (a run that failed while Doris was
    down, followed by good runs once it was back, is not the pipeline's last error)."""
    runs = instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.FAILURE, DagsterRunStatus.SUCCESS]),
                             limit=look_at)
    made_good: set[tuple[str, frozenset[AssetKey]]] = set()
    for run in runs:  # newest first
        work = (run.job_name, frozenset(run.asset_selection or ()))
        if run.status == DagsterRunStatus.SUCCESS:
            made_good.add(work)
            continue
        if work in made_good:
            continue
        if run.job_name in job_names:
            return run
        if any(tuple(k.path[: len(prefix)]) == prefix for k in _selected_asset_keys(instance, run)):
            return run
    return None


def failure_message(instance: DagsterInstance, run: DagsterRun) -> str:
    """Why the run failed: its failed steps' errors (the exception and its causes), else the run
    failure's own message (e.g. Tidemark's, for a run whose process was killed)."""
    from dagster import DagsterEventType

    steps = []
    for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_FAILURE):
        event = entry.dagster_event
        data = event.event_specific_data if event is not None else None
        user_failure = getattr(data, "user_failure_data", None)
        if user_failure is not None and user_failure.description:  # an expected failure: its one line
            steps.append(f"{event.step_key}: {user_failure.description}")
            continue
        error = getattr(data, "error", None)
        if error is None:
            continue
        causes = []
        cause = getattr(error, "cause", None)
        while cause is not None:
            causes.append(cause.message.strip())
            cause = getattr(cause, "cause", None)
        # the innermost cause is the exception the step raised; Dagster's wrappers only say where
        steps.append(f"{event.step_key}: {causes[-1] if causes else error.message.strip()}")
    if steps:
        return "; ".join(steps)
    for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.RUN_FAILURE):
        event = entry.dagster_event
        message = (event.message if event is not None else None) or entry.user_message
        if message:
            return message.strip()
    return "the run failed (its event log holds no error)"


def _planned_asset_keys(instance: DagsterInstance, run: Any) -> set[AssetKey]:
    snapshot_id = getattr(run, "execution_plan_snapshot_id", None)
    if not snapshot_id:
        return set()
    try:
        plan = instance.get_execution_plan_snapshot(snapshot_id)
    except Exception:  # noqa: BLE001 - a missing snapshot means we cannot tell; treat as unrelated
        return set()
    keys: set[AssetKey] = set()
    for step in plan.steps:
        for output in step.outputs:
            info = getattr(output, "properties", None)
            key = getattr(info, "asset_key", None) if info is not None else None
            if key is not None:
                keys.add(key)
    return keys


@dataclass(frozen=True)
class RunKeyChoice:
    """The outcome of :func:`next_run_key`.

    ``run_key`` is the key to request, or ``None`` when the base key and all its retry keys are
    spent. ``run`` is the latest run under ``run_key`` (``None``: the key is unused), or, when
    every key is spent, the run under the last one (whose log has the cause).
    """

    base_key: str
    run_key: str | None
    run: DagsterRun | None
    attempts: int  # keys looked at


def retry_key(base_key: str, attempt: int) -> str:
    """The run key of the ``attempt``-th retry of ``base_key`` (attempt 0 is the base key itself)."""
    return base_key if attempt == 0 else f"{base_key}~retry{attempt}"


def latest_run_with_key(instance: DagsterInstance, run_key: str) -> DagsterRun | None:
    runs = instance.get_runs(filters=RunsFilter(tags={RUN_KEY_TAG: run_key}), limit=1)
    return runs[0] if runs else None


def failed(run: DagsterRun) -> bool:
    """The default test of a spent key: its run failed or was canceled."""
    return run.status in UNSUCCESSFUL_STATUSES


def next_run_key(instance: DagsterInstance, base_key: str, spent: Callable[[DagsterRun], bool] = failed,
                 max_retries: int = MAX_RETRIES) -> RunKeyChoice:
    """The first of ``base_key``, ``base_key~retry1`` ... ``base_key~retry<max_retries>`` that is
    unused or whose latest run is not ``spent``.

    A key that is in use and not spent is returned with its run: requesting it again is a no-op
    for Dagster (one run per run key), and the caller may read the run to say why it skips.
    """
    run: DagsterRun | None = None
    for attempt in range(max_retries + 1):
        key = retry_key(base_key, attempt)
        run = latest_run_with_key(instance, key)
        if run is None or not spent(run):
            return RunKeyChoice(base_key, key, run, attempt + 1)
    return RunKeyChoice(base_key, None, run, max_retries + 1)


def _mark_ended(instance: DagsterInstance, run: DagsterRun, message: str) -> None:
    """A run whose process is gone ends as what it was heading for: canceled if it was canceling,
    failed otherwise; the message (why Tidemark judged it dead) goes to the log and the run."""
    logger.warning("run %s: %s", run.run_id, message)
    if run.status == DagsterRunStatus.CANCELING:
        instance.report_run_canceled(run, message=message)
    else:
        instance.report_run_failed(run, message=message)
