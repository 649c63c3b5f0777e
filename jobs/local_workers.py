"""Snapshot chunks read and loaded by a few local worker processes: Spark's fused tasks without the JVM.

On one machine, Spark's local mode runs a table's chunks (``jobs/fused_chunks.py``) as Python
functions in ``parallelism`` Python workers; the JVM around them only schedules. Its start (~3 s
on 2 quiet cores, ~6 CPU-s of JIT and class loading) and its share of the cores cost more than
the scheduling is worth until a run is large: a 1M-row table spent 2.8 s in Spark's start against
4.4 s of reading and loading (bench/RESULTS.md, 2026-11-24). So a run within
``tidemark.snapshot.in-process-rows`` that names no Spark master nor Connect server runs the same
per-chunk function (:func:`jobs.fused_chunks.chunk_messages`) in a pool of ``parallelism``
processes of this Python (:class:`LocalWorkers`), one chunk per submission so that a slow chunk
never holds up the others' share.

The processes start once per Tidemark process and are kept for its life. They are forks of a
fork server (``multiprocessing``'s ``forkserver``) that imported the chunk path once, not forks of
the CLI (it has threads) nor fresh interpreters that each import it again: that import is 1.2–1.5
CPU-s a worker, paid on the same two cores while the driver imports Dagster (docs/performance.md).
``tidemark run`` warms them while it imports Dagster and plans (``orchestration/cli/spark_prestart.py``),
and every snapshot run of the process reuses them, each keeping its MySQL reader and Doris sink
between chunks. Each worker ends itself within a fraction of a second when the Tidemark process
that started it is gone (killed, or a zombie not yet reaped): no load is started by a worker whose
run is over. Secrets go to the workers through the pool's pipe, never on a command line.

Failures are those of the Spark path: when a chunk fails, the chunks not started are cancelled,
the driver waits for the ones running to end, then aborts every chunk label of the table
(:func:`jobs.fused_chunks.abort_chunk_labels`) before the error propagates.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol


class ChunkGate(Protocol):
    """What :meth:`LocalWorkers.run_many` asks before each chunk and tells after it
    (``jobs/snapshot_job.py`` adapts the run's ``cdc_core`` commit window to it)."""

    def acquire(self, table_id: str, index: int, give_up: threading.Event) -> bool: ...

    def finished(self, table: int, message: str) -> None: ...

    def wake(self) -> None: ...


if TYPE_CHECKING:  # only the standard library here: ``tidemark run``'s prestart thread imports this module
    # while the main thread imports the rest of Tidemark, and two threads entering cdc_core.doris's
    # circular imports at once fail (a partially initialised module)
    from jobs.specs import ReadSpec, WriterSpec

logger = logging.getLogger(__name__)

PRELOAD = ("jobs.worker_preload",)
"""What the workers' fork server imports before its first fork: the chunk path, pandas and the
MySQL client's TLS context (:mod:`jobs.worker_preload` says why each)."""

PARENT_POLL_S = 0.2
"""How often a worker checks that the process that spawned it is still there."""

_lock = threading.Lock()
_pool: LocalWorkers | None = None


def _watch_parent(parent: int) -> None:
    while True:
        if not _alive(parent):
            os._exit(1)  # the run is gone: start nothing more (an unfinished load is never precommitted)
        time.sleep(PARENT_POLL_S)


def _alive(pid: int) -> bool:
    """Whether ``pid`` still runs. A zombie does not: a killed ``tidemark`` stays one until whoever
    started it reaps it, and that one may be waiting for this worker's end (its inherited stdout)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # no /proc here: whether the pid exists at all
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat[stat.rindex(")") + 2] not in "ZX"


def _init_worker(parent: int) -> None:
    # ``parent`` and not this process's parent: that is the pool's fork server, which outlives
    # ``parent`` for as long as a worker it forked lives
    threading.Thread(target=_watch_parent, args=(parent,), name="tidemark-parent-watch", daemon=True).start()
    import jobs.fused_chunks  # noqa: F401 - the fork server imported it already: a no-op unless that failed
    from cdc_core.instrumentation.collector import freeze_start_up

    freeze_start_up()  # the chunk path's modules, out of the collector's walks at every chunk's garbage


def _context() -> multiprocessing.context.BaseContext:
    """A fork server that has imported the chunk path (:data:`PRELOAD`) once: each worker is a fork
    of it, not a new interpreter importing it again (1.2–1.5 CPU-s a worker on this machine, paid
    while the driver imports Dagster on the same cores). The fork server has no thread, so the
    forks are safe; the driver itself, which has threads, is never forked."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))
    return context


def _ready() -> int:
    return os.getpid()


def _one_chunk(read_spec: ReadSpec, source_password: str, write_spec: WriterSpec, sink_password: str,
               position: int) -> str:
    from jobs.fused_chunks import chunk_messages

    (message,) = chunk_messages(read_spec, source_password, write_spec, sink_password)([position])
    return message


class LocalWorkers:
    """``size`` spawned Python processes that run snapshot chunks (see the module docstring)."""

    def __init__(self, size: int):
        self.size = size
        self._executor = ProcessPoolExecutor(max_workers=size, mp_context=_context(),
                                             initializer=_init_worker, initargs=(os.getpid(),))

    def warm(self) -> None:
        """Start every worker now (each imports the chunk path once) rather than at the first chunk."""
        pids = {f.result() for f in [self._executor.submit(_ready) for _ in range(self.size * 2)]}
        logger.debug("%d local snapshot worker(s) ready: %s", len(pids), sorted(pids))

    def run_many(self, tables: Iterable[tuple[ReadSpec, WriterSpec]], source_password: str,
                 sink_password: str, taken: list[tuple[ReadSpec, WriterSpec]] | None = None,
                 window: ChunkGate | None = None) -> list[list[str]]:
        """Every chunk of every table, one submission each (a database of small tables keeps every
        worker busy, rather than one table at a time); each table's messages in chunk order.
        ``tables`` is consumed as it comes: a table's chunks start as soon as it is there (the
        driver prepares the next ones meanwhile), each table taken is appended to ``taken``. On a
        failure (a chunk's, or ``tables``' own) nothing more is taken, the chunks not started are
        cancelled and the running ones waited for, then it raises.

        ``window``: each chunk is submitted only once ``window.acquire`` let it in, and each chunk
        done is handed to ``window.finished(table position, message)`` (its loads precommitted);
        a chunk's failure stops the acquiring."""
        taken = [] if taken is None else taken
        failure = threading.Event()
        reported: list[BaseException] = []  # a window's own failure on a chunk done

        def note(future: Future[str], table: int) -> None:
            if future.cancelled():
                return
            if future.exception() is not None:
                failure.set()
            elif window is not None:
                try:
                    window.finished(table, future.result())
                except BaseException as exc:  # noqa: BLE001 - raised by run_many below
                    reported.append(exc)
                    failure.set()
            if failure.is_set() and window is not None:
                window.wake()

        futures: list[tuple[int, Future[str]]] = []
        try:
            for read_spec, write_spec in tables:
                if failure.is_set():
                    break
                taken.append((read_spec, write_spec))
                table = len(taken) - 1
                for position in range(len(read_spec.chunks)):
                    if window is not None and not window.acquire(read_spec.table_id, read_spec.chunks[position].index,
                                                                 failure):
                        break  # a chunk failed meanwhile: its error is raised below
                    future = self._executor.submit(_one_chunk, read_spec, source_password, write_spec,
                                                   sink_password, position)
                    future.add_done_callback(lambda f, t=table: note(f, t))
                    futures.append((table, future))
        except BaseException:
            _stop([f for _, f in futures])
            raise
        wait([f for _, f in futures], return_when=FIRST_EXCEPTION)
        failed = next((f for _, f in futures if f.done() and not f.cancelled() and f.exception() is not None), None)
        if failed is not None or reported:
            _stop([f for _, f in futures])
            raise failed.exception() if failed is not None else reported[0]  # type: ignore[misc]
        out: list[list[str]] = [[] for _ in taken]
        for t, future in futures:
            out[t].append(future.result())
        return out

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def _stop(futures: list[Future[str]]) -> None:
    """Cancel the chunks not started and wait for the running ones (their labels are aborted next)."""
    for future in futures:
        future.cancel()
    wait(futures)


def local_workers(size: int) -> LocalWorkers:
    """The process's pool of ``size`` workers, started on first use (a pool of another size, or a
    broken one, is replaced)."""
    global _pool
    with _lock:
        if _pool is not None and (_pool.size != size or _broken(_pool)):
            _pool.shutdown()
            _pool = None
        if _pool is None:
            _pool = LocalWorkers(size)
            atexit.register(_pool.shutdown)
        return _pool


def warm_local_workers(size: int) -> None:
    """Spawn the process's workers ahead of the run (``tidemark run``'s prestart thread)."""
    local_workers(size).warm()


def end_local_workers() -> None:
    """Stop the process's workers at once: the process is ending and no chunk is running (every
    run waited for its chunks). Terminated rather than asked to finish, so that an ending
    ``tidemark`` command does not wait for each to wind down; a worker holds nothing to flush."""
    global _pool
    with _lock:
        pool, _pool = _pool, None
    if pool is None:
        return
    for process in list((getattr(pool._executor, "_processes", None) or {}).values()):
        process.terminate()
    pool.shutdown()
    _end_fork_server()


def _end_fork_server() -> None:
    """Kill the workers' fork server and reap it. Left alone, it notices the end of the process that
    started it and exits as Python does: tearing down the chunk path it preloaded (pandas, pyarrow,
    sqlglot, connectorx), 0.4-1.1 s of CPU after ``tidemark`` itself had exited, during which it
    still held the command's stdout and stderr, so whoever waits for their end (a pipe, ``$(...)``,
    the bench) waited for it too (docs/performance.md). It holds nothing to flush: it only forks,
    and its workers are gone. SIGKILL rather than SIGTERM: a preloaded library may have installed
    a handler for the latter. A fork server needed later in this process is started anew
    (``multiprocessing`` starts one whenever it has none)."""
    import contextlib
    import signal
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if server is None or pid is None or not hasattr(server, "_stop"):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    try:
        server._stop()  # closes its "alive" pipe and reaps it; the next use starts a new one
    except OSError:  # already reaped, or its socket file gone: nothing is left of it
        logger.debug("the fork server %d was already gone", pid, exc_info=True)


def discard_local_workers() -> None:
    """Drop the pool after a failure that may have left a worker dead or stuck (the next use spawns anew)."""
    global _pool
    with _lock:
        if _pool is not None:
            _pool.shutdown()
            _pool = None


def _broken(pool: LocalWorkers) -> bool:
    return bool(getattr(pool._executor, "_broken", False))


def run_local_many(tables: Iterable[tuple[ReadSpec, WriterSpec]], source_password: str, sink_password: str,
                   driver_sink: Any, parallelism: int, window: ChunkGate | None = None) -> list[list[dict[str, Any]]]:
    """:func:`run_local` of many tables' chunks, each table's messages in chunk order, a table's
    chunks submitted as soon as ``tables`` yields it (:meth:`LocalWorkers.run_many`, ``window``
    as there); on failure every chunk label of every table taken is aborted once no chunk runs
    any more (those of chunks a window committed early are committed: their abort changes nothing)."""
    import json

    from jobs.fused_chunks import abort_chunk_labels

    taken: list[tuple[ReadSpec, WriterSpec]] = []
    try:
        messages = local_workers(max(1, parallelism)).run_many(tables, source_password, sink_password, taken, window)
    except BaseException as exc:
        if isinstance(exc, BrokenProcessPool | KeyboardInterrupt):
            discard_local_workers()
        for read_spec, write_spec in taken:
            abort_chunk_labels(driver_sink, write_spec, [c.index for c in read_spec.chunks])
        raise
    return [[json.loads(m) for m in table] for table in messages]


def run_local(read_spec: ReadSpec, source_password: str, write_spec: WriterSpec, sink_password: str,
              driver_sink: Any, parallelism: int) -> list[dict[str, Any]]:
    """The same work as :func:`jobs.fused_chunks.run_fused`, by the local workers; on failure every
    chunk label of the table is aborted once no chunk of it runs any more."""
    return run_local_many([(read_spec, write_spec)], source_password, sink_password, driver_sink, parallelism)[0]
