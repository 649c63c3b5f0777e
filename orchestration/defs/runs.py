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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dagster import AssetKey, DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

# Dagster's tag for a run's run key; it has no public name for it.
from dagster._core.storage.tags import RUN_KEY_TAG

from cdc_core.state.leases import LeaseRecord

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


# Where a run executes, as one tag: {"host", "pid", "pid_start"} (JSON). Dagster hides tags under its
# ``.dagster/`` prefix (dagster._core.storage.tags.HIDDEN_TAG_PREFIX) from the UI's run rows: this one
# is bookkeeping for fail_dead_runs, not something a user reads.
RUN_PROCESS_TAG = ".dagster/tidemark_run_process"


@dataclass(frozen=True)
class RunProcess:
    """The process executing a run: its host, pid and the pid's start time (empty: unknown)."""

    host: str
    pid: int
    pid_start: str

    def to_tag(self) -> str:
        return json.dumps({"host": self.host, "pid": self.pid, "pid_start": self.pid_start})

    @classmethod
    def of(cls, run: DagsterRun) -> RunProcess | None:
        """The process the run's tag names; None without the tag (or with one that does not parse)."""
        try:
            value = json.loads(run.tags[RUN_PROCESS_TAG])
            return cls(str(value["host"]), int(value["pid"]), str(value.get("pid_start") or ""))
        except (KeyError, ValueError, TypeError):
            return None


def _pid_start(pid: int) -> str | None:
    """When the process started (clock ticks since boot; None: no such process), so a pid the
    kernel has given to a new process is not taken for the run's."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else fields[19]


def record_run_process(instance: DagsterInstance, run_id: str) -> None:
    """Tag the run with the process executing it (called as its first step sets up)."""
    pid = os.getpid()
    process = RunProcess(socket.gethostname(), pid, _pid_start(pid) or "")
    instance.add_run_tags(run_id, {RUN_PROCESS_TAG: process.to_tag()})


def run_process_gone(run: DagsterRun) -> bool:
    """The run says it executes in a process of this host that no longer exists."""
    process = RunProcess.of(run)
    if process is None or process.host != socket.gethostname():
        return False
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
        logger.warning("run %s: %s", run.run_id, message)
        if run.status == DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, message=message)
        else:
            instance.report_run_failed(run, message=message)
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
        logger.warning("run %s: %s", run.run_id, message)
        if run.status == DagsterRunStatus.CANCELING:
            instance.report_run_canceled(run, message=message)
        else:
            instance.report_run_failed(run, message=message)
        failed.append(run.run_id)
    return failed


def runs_in_flight(instance: DagsterInstance, asset_keys: set[AssetKey] | None = None,
                   prefix: tuple[str, ...] | None = None, exclude_run_id: str | None = None) -> list[Any]:
    """Unfinished runs that materialize any of ``asset_keys`` or any asset under ``prefix``; a run
    whose process is gone is marked failed on the way and is not among them."""
    out = []
    runs = instance.get_runs(filters=RunsFilter(statuses=IN_FLIGHT_STATUSES), limit=500)
    for run in fail_dead_runs(instance, [r for r in runs if r.run_id != exclude_run_id]):
        selected = _selected_asset_keys(instance, run)
        by_key = asset_keys is not None and bool(selected & asset_keys)
        by_prefix = prefix is not None and any(tuple(k.path[: len(prefix)]) == prefix for k in selected)
        if by_key or by_prefix:
            out.append(run)
    return out


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
