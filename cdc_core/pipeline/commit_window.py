"""Chunks in flight within Doris's running-transaction bound, those finished committed early.

Doris refuses a load once a database holds ``max_running_txn_num_per_db`` transactions begun or
precommitted and not yet committed (``txn_groups``). A snapshot run of more chunks than
``tidemark.doris.max-running-txns-per-db`` used to go group by group: read and precommit a group,
stop reading, commit it, start the next. The reads paused for every early commit, and every group
started with its workers idle until its first tables were prepared (docs/performance.md).

The window keeps the bound without the pauses. The executor asks :meth:`CommitWindow.acquire`
before a chunk's loads begin, which returns once the chunk's loads fit beside those held, and
hands each chunk's outcome to :meth:`CommitWindow.finished` as soon as the chunk is done. A
thread of the window commits the finished chunks (``commit``: recorded PREPARED, committed,
recorded COMMITTED, as a group was) whenever a chunk waits for room: the reads go on meanwhile.
A chunk holds its room from ``acquire`` until its commit has ended, so the loads begun and not
yet committed never pass the bound. Once every chunk has been acquired nothing more is committed
early: the chunks still held (at most the bound) are left PREPARED for the run's own commit, as
the last group was.

The finished chunks are committed together once their loads reach :data:`MIN_BATCH` (or half the
bound, when that is less), or when nothing else runs: each batch costs two state-store
transactions and a round of Doris commits. An executor that cannot hold single chunks back (one
Spark job for many tables) lets in a group at a time and calls :meth:`CommitWindow.drain` before
the next.

A failure of an early commit is raised to whoever acquires (or drains) next, and by :meth:`close`:
the executor's job then fails as when a chunk fails. The chunks committed early stay COMMITTED,
those of the failed batch PREPARED for ``resolve_pending`` (``snapshot.abandon_chunks`` aborts
only the chunks still RUNNING).
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Iterable

from cdc_core.pipeline.executor import ChunkOutcome
from cdc_core.pipeline.txn_groups import check_bound, loads_of

logger = logging.getLogger(__name__)

MIN_BATCH = 40
"""The fewest loads of finished chunks committed together while others still run; half the bound
when that is less. Alternated runs of 300 one-chunk tables (bound 80) took longest with batches of
10 and least with 40 (docs/performance.md): each batch's commits are Doris transactions that hold
its write lock while the loads beside them wait."""


class CommitWindow:
    """The room for chunks' loads in each Doris database, given back by early commits.

    ``databases(table_id)``: the Doris database of each load a chunk of that table begins (one per
    target). ``commit(outcomes)``: record and commit these finished chunks (called on the window's
    thread, one batch at a time). ``on_close``: called by :meth:`close` when the run's chunks have
    all been read."""

    def __init__(self, limit: int, databases: Callable[[str], Iterable[str]],
                 commit: Callable[[list[ChunkOutcome]], None],
                 on_close: Callable[[], None] | None = None) -> None:
        self.limit = check_bound(limit)
        self._databases = databases
        self._commit = commit
        self._on_close = on_close
        self._cond = threading.Condition()
        self._held: Counter[str] = Counter()  # loads per database: acquired, not yet committed
        self._needs: dict[tuple[str, int], Counter[str]] = {}
        self._running = 0  # chunks acquired and not finished
        self._finished: list[ChunkOutcome] = []
        self._finished_loads = 0  # the most loads in one database of the finished chunks
        self._waiting = 0
        self._draining = False
        self._committing = False
        self._closed = False
        self._error: BaseException | None = None
        self._raised = False  # acquire raised it: the executor's error is that failure
        self.peak: Counter[str] = Counter()  # the most loads held at once, per database
        self._done: set[tuple[str, int]] = set()
        self._batch = max(1, min(MIN_BATCH, limit // 2))
        self._thread = threading.Thread(target=self._committer, name="tidemark-commit-window", daemon=True)
        self._thread.start()

    # ---- the executor's side -------------------------------------------------------------------
    def acquire(self, table_id: str, index: int, give_up: threading.Event | None = None) -> bool:
        """Return True once the chunk's loads fit in every database it loads into (they are held
        from now until its commit); False, holding nothing, once ``give_up`` is set (another chunk
        failed: the executor stops, see :meth:`wake`). Raises an early commit's failure."""
        needs = loads_of(table_id, self._databases(table_id), self.limit)
        with self._cond:
            while True:
                if self._error is not None:
                    self._raised = True
                    raise self._error
                if give_up is not None and give_up.is_set():
                    return False
                if self._closed:
                    raise RuntimeError("the commit window is closed")
                if all(self._held[db] + n <= self.limit for db, n in needs.items()):
                    break
                self._waiting += 1
                self._cond.notify_all()
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1
            self._held.update(needs)
            for db in needs:
                self.peak[db] = max(self.peak[db], self._held[db])
            self._needs[(table_id, index)] = needs
            self._running += 1
        return True

    def wake(self) -> None:
        """Have a waiting :meth:`acquire` look at its ``give_up`` again."""
        with self._cond:
            self._cond.notify_all()

    def finished(self, outcomes: Iterable[ChunkOutcome]) -> None:
        """These acquired chunks are done: their loads are precommitted."""
        outcomes = list(outcomes)
        with self._cond:
            self._finished += outcomes
            self._finished_loads += sum(max(self._needs.get((str(o.table_id), o.index), {"": 1}).values())
                                        for o in outcomes)
            self._running -= len(outcomes)
            self._cond.notify_all()

    def drain(self) -> None:
        """Commit every finished chunk now and return once that is done (an executor that lets in
        a group at a time, before its next group). Raises an early commit's failure."""
        with self._cond:
            self._draining = True
            self._cond.notify_all()
            try:
                while (self._finished or self._committing) and self._error is None:
                    self._cond.wait()
            finally:
                self._draining = False
            if self._error is not None:
                self._raised = True
                raise self._error

    # ---- the run's side ------------------------------------------------------------------------
    def close(self) -> set[tuple[str, int]]:
        """Stop committing early (waiting for a commit under way), call ``on_close`` and return
        the chunks committed early (table id, index): those the run must not record again.
        Raises an early commit's failure."""
        self._end()
        if self._error is not None:
            raise self._error
        if self._on_close is not None:
            self._on_close()
        return self.committed

    def stop(self) -> None:
        """After the executor failed: stop committing early. An early commit's failure is the
        executor's own error (``acquire`` raised it); should the executor have failed first, for
        another reason, it is logged with its cause here, and the run's error stands."""
        self._end()
        if self._error is not None and not self._raised:
            logger.warning("an early commit failed too", exc_info=self._error)

    def _end(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()

    @property
    def committed(self) -> set[tuple[str, int]]:
        """The chunks whose early commit has ended (kept, or PENDING again when Doris lost a load)."""
        return set(self._done)

    # ---- the committing thread -----------------------------------------------------------------
    def _due(self) -> bool:
        """Draining, or a chunk waits for room and enough have finished (or nothing else runs).
        Once every chunk is acquired none waits: the rest is left for the run's commit."""
        return bool(self._finished) and (self._draining or self._waiting > 0 and (
            self._finished_loads >= self._batch or self._running == 0))

    def _committer(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._due():
                    self._cond.wait()
                if self._closed:
                    return
                batch, self._finished, self._finished_loads = self._finished, [], 0
                self._committing = True
            try:
                self._commit(batch)
            except BaseException as exc:  # noqa: BLE001 - raised to the executor and by close()
                logger.info("an early commit of %d chunk(s) failed; the run stops", len(batch))
                with self._cond:
                    self._error = exc
                    self._committing = False
                    self._cond.notify_all()
                return
            with self._cond:
                self._committing = False
                for o in batch:
                    key = (str(o.table_id), o.index)
                    self._done.add(key)
                    needs = self._needs.pop(key, None)
                    if needs is not None:
                        self._held.subtract(needs)
                self._cond.notify_all()
