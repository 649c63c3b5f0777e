"""``tidemark run PIPELINE.yaml`` (without ``--once``): the pipeline kept going until interrupted.

The same Dagster jobs as ``--once`` (``orchestration/cli/run_once.py``) and the binlog sensor,
executed in this process: the snapshot if it is not done, then binlog run after binlog run. Each
binlog run streams batch after batch as the sensor's runs do (``cdc_core/pipeline/stream_run.py``:
``tidemark.binlog.run-seconds``, ``batch-interval-s`` and ``idle-wait-s`` apply as written); a run
that ended caught up is followed by the next once the server's binlog moves past the committed
offset (polled every ``batch-interval-s``), so a quiet source makes no empty runs. A batch that
stops before a DDL is followed by the schema_change job, as for ``--once``.

**Stopping.** Ctrl-C (SIGINT) or SIGTERM asks for a stop; nothing is interrupted mid-way:

* during the snapshot, the chunk run in flight is loaded and committed; the chunks not loaded stay
  pending and the next ``tidemark run`` loads them;
* during the binlog, the batch being read is finished, prepared and committed (the run's commit
  hook), and no other batch starts; waiting for the binlog to move ends at once.

Then the command prints its summary and exits 0: every transaction it prepared is committed. A
second Ctrl-C stops at once (exit 130), like a kill: a load left PREPARED is committed, or aborted
and read again, by the next run of the pipeline (``PipelineService.resolve_pending``).

The jobs run on a worker thread, so that Dagster's own interrupt handling (which replaces the
SIGINT handler only on the main thread) stays out of the way, and the main thread keeps the signal
handlers and the one live progress line: a ``rich`` status line on a terminal, otherwise a plain
line every ``PLAIN_EVERY_S`` seconds and at each change of phase (rows applied, lag, phase).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from rich.console import Console

from cdc_core.instrumentation.phases import phase
from cdc_core.model.offsets import BinlogOffset
from cdc_core.pipeline.results import BatchResult
from orchestration.cli.run_once import OnceRun, RunOnceError, Summary
from orchestration.defs import live_run

logger = logging.getLogger(__name__)

PLAIN_EVERY_S = 10.0
# Binlog runs that failed one after another (a server down): retried with a growing pause, then given up.
MAX_FAILED_RUNS = 8
RETRY_PAUSE_S = (2.0, 5.0, 10.0, 20.0, 30.0, 60.0)


class Phase(StrEnum):
    STARTING = "starting"
    SNAPSHOT = "snapshot"
    STREAMING = "streaming"
    CAUGHT_UP = "caught up"
    SCHEMA_CHANGE = "schema change"
    RETRYING = "retrying"
    STOPPING = "stopping"


@dataclass
class LiveStatus:
    """What the live line shows; written by the worker thread, read by the main thread."""

    slug: str
    phase: Phase = Phase.STARTING
    chunks_done: int = 0
    chunks_total: int = 0
    snapshot_rows: int = 0
    rows_applied: int = 0  # binlog row events committed by this command
    batches: int = 0
    lag_s: float | None = None
    offset: str = "-"
    note: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def line(self) -> str:
        with self.lock:
            parts = [f"{self.slug}: {self.phase.value}"]
            if self.phase is Phase.SNAPSHOT or (self.chunks_total and not self.batches):
                parts.append(f"{self.chunks_done} of {self.chunks_total} chunks, {self.snapshot_rows:,} rows")
            parts.append(f"{self.rows_applied:,} rows applied from the binlog in {self.batches} batch(es)")
            parts.append(f"lag {self.lag_s:.1f} s" if self.lag_s is not None else "lag -")
            parts.append(f"at {self.offset}")
            if self.note:
                parts.append(self.note)
            return " · ".join(parts)

    def set(self, **changes: Any) -> None:
        with self.lock:
            for name, value in changes.items():
                setattr(self, name, value)


class LoopRun(OnceRun):
    """One pipeline kept going until :func:`live_run.request_stop`."""

    def __init__(self, *args: Any, live: LiveStatus, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.live = live
        # events and batches of the binlog run in flight already counted through live_run
        self._run_counted = self._run_batches = 0

    def stop_requested(self) -> bool:
        return live_run.stop_requested()

    def on_chunks(self, done: int, total: int, rows: int) -> None:
        self.live.set(chunks_done=done, chunks_total=total, snapshot_rows=rows)

    def _batch_committed(self, batch: BatchResult) -> None:
        """A batch committed inside a binlog run (not its last, which the hook commits)."""
        events = sum(batch.events_per_table.values())
        self._run_counted += events
        self._run_batches += 1
        with self.live.lock:
            self.live.rows_applied += events
            self.live.batches += 1
            self.live.lag_s = batch.lag_s if batch.lag_s is not None else self.live.lag_s
            self.live.offset = _text(batch.end_offset)
        self.summary.events += events
        self.summary.batches += 1

    command = "tidemark run"

    def _work(self) -> Summary:
        live_run.add_listener(self._batch_committed)
        self._prepare()
        if not self.service.binlog_ready():
            self.live.set(phase=Phase.SNAPSHOT, chunks_total=len(self.service.chunk_keys()))
            with phase("snapshot"):
                self._snapshot()
            if self.stop_requested():
                return self.summary
        else:
            self.summary.snapshot_done_before = True
            self.summary.chunks_total = len(self.service.chunk_statuses())
        self._resume_paused()
        started = time.monotonic()
        try:
            with phase("binlog"):
                self._follow()
        finally:
            self.summary.binlog_s = time.monotonic() - started
        self._no_pending_left()
        return self.summary

    def _follow(self) -> None:
        poll_s = max(0.2, float(self.service.stream_run_policy().batch_interval_s))
        failures = 0
        must_run = True  # the first run: it materializes binlog_stream even when nothing moved
        while not self.stop_requested():
            try:
                if not must_run and not self._binlog_moved():
                    live_run.wait_unless_stopped(poll_s)
                    continue
                self.live.set(phase=Phase.STREAMING, note="")
                self._one_binlog_run()
            except (RunOnceError, ConnectionError) as exc:  # ConnectionError: MySQL down while polling
                if isinstance(exc, RunOnceError) and exc.code != 1:
                    raise
                failures += 1
                if failures >= MAX_FAILED_RUNS:
                    raise RunOnceError(f"{exc} ({failures} binlog runs failed in a row; stopped)") from exc
                pause = RETRY_PAUSE_S[min(failures, len(RETRY_PAUSE_S)) - 1]
                self.console.print(f"[yellow]tidemark run {self.handle.slug}: {exc}; trying again in "
                                   f"{pause:.0f} s[/yellow]", soft_wrap=True)
                self.live.set(phase=Phase.RETRYING, note=f"run failed {failures}x")
                live_run.wait_unless_stopped(pause)
                continue
            failures = 0
            must_run = False

    def _binlog_moved(self) -> bool:
        """Whether the server's binlog is past the committed offset (else the live line says caught up)."""
        lag = self.service.binlog_lag()
        committed, server = _offset(lag.committed_offset), _offset(lag.server_offset)
        self.live.set(offset=str(committed) if committed else "-")
        if committed is not None and server is not None and server <= committed:
            self.live.set(phase=Phase.CAUGHT_UP, lag_s=0.0, note="")
            return False
        return True

    def _one_binlog_run(self) -> None:
        self._run_counted = self._run_batches = 0
        result = self._execute(self.handle.binlog_job_name, tags=self.handle.run_tags(stream=True))
        md = result.asset_materializations_for_node(f"{self.handle.slug}__binlog_stream")[0].metadata
        # what the run applied beyond the batches the listener counted: its last batch, committed by the
        # hook (an empty last batch, "nothing to read", is no batch)
        events = max(0, int(md["events"].value) - self._run_counted)
        batches = max(0, int(md["batches"].value) - (0 if md["batch_id"].value else 1) - self._run_batches)
        lag_s = md.get("lag_s")
        with self.live.lock:
            self.live.rows_applied += events
            self.live.batches += batches
            if lag_s is not None:
                self.live.lag_s = float(lag_s.value)
            self.live.offset = str(md["end_offset"].value)
        self.summary.events += events
        self.summary.batches += batches
        self.summary.final_offset = str(md["end_offset"].value)
        if "stopped_at_ddl" in md:
            self.live.set(phase=Phase.SCHEMA_CHANGE)
            self._schema_change(_offset(md["stopped_at_ddl"].value.get("offset")))


def _offset(value: dict[str, Any] | None) -> BinlogOffset | None:
    return BinlogOffset.from_dict(value) if value else None


def _text(offset: dict[str, Any] | None) -> str:
    return f"{offset.get('file')}:{offset.get('position')}" if offset else "-"


@dataclass
class _Outcome:
    summary: Summary | None = None
    error: BaseException | None = None


class SignalStop:
    """SIGINT and SIGTERM ask for a stop; the second one stops at once (KeyboardInterrupt)."""

    def __init__(self, console: Console, live: LiveStatus):
        self.console, self.live = console, live
        self.count = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> SignalStop:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, _frame: Any) -> None:
        self.count += 1
        if self.count > 1:
            raise KeyboardInterrupt
        live_run.request_stop()
        self.live.set(phase=Phase.STOPPING, note="finishing the work in flight (Ctrl-C again: stop at once)")
        self.console.print(f"tidemark run: {signal.Signals(signum).name}: stopping after the work in flight is "
                           "committed (Ctrl-C again stops at once; the next run finishes what that leaves)")


def run_until_stopped(run: LoopRun, console: Console) -> Summary:
    """Run ``run`` on a worker thread until it ends or a signal stops it; draw the live line meanwhile."""
    outcome = _Outcome()

    def work() -> None:
        try:
            outcome.summary = run.run()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which raises it
            outcome.error = exc

    worker = threading.Thread(target=work, name=f"tidemark-run-{run.handle.slug}", daemon=True)
    with SignalStop(console, run.live):
        worker.start()
        _draw_until_done(worker, run.live, console)
    if outcome.error is not None:
        raise outcome.error
    assert outcome.summary is not None
    return outcome.summary


def _draw_until_done(worker: threading.Thread, live: LiveStatus, console: Console) -> None:
    if console.is_terminal:
        status = None
        while worker.is_alive():
            drawing = live.phase not in (Phase.SNAPSHOT, Phase.STARTING)  # the snapshot draws its own bar
            if drawing and status is None:
                status = console.status(live.line())
                status.start()
            elif status is not None:
                status.update(live.line())
            worker.join(0.5)
        if status is not None:
            status.stop()
        return
    last_line, last_at, last_phase = "", 0.0, None
    while worker.is_alive():
        now = time.monotonic()
        line = live.line()
        if live.phase is not last_phase or (now - last_at >= PLAIN_EVERY_S and line != last_line):
            console.print(line, soft_wrap=True, highlight=False)
            last_line, last_at, last_phase = line, now, live.phase
        worker.join(0.5)
    console.print(live.line(), soft_wrap=True, highlight=False)
