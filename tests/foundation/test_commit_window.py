"""``CommitWindow``: chunks let in within the running-transaction bound per database, the finished
ones committed early while others run, the last ones left for the run's commit."""

from __future__ import annotations

import threading
import time

import pytest

from cdc_core.model.schema import TableId
from cdc_core.pipeline.commit_window import CommitWindow
from cdc_core.pipeline.executor import ChunkOutcome

WAIT_S = 10.0  # only a failing test waits this long


def outcome(table: str, index: int = 0) -> ChunkOutcome:
    return ChunkOutcome(TableId.parse(table), index, 1, {}, {}, (), 0, 0.0)


class Recorder:
    """The window's ``commit``: remembers each batch; can be told to fail."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.fail: BaseException | None = None

    def __call__(self, outcomes: list[ChunkOutcome]) -> None:
        if self.fail is not None:
            raise self.fail
        self.batches.append([f"{o.table_id}#{o.index}" for o in outcomes])


def one_db(table_id: str) -> list[str]:
    return ["d"]


def acquire_in_thread(window: CommitWindow, table: str, give_up: threading.Event | None = None) -> tuple[
        threading.Thread, list[object]]:
    got: list[object] = []

    def run() -> None:
        try:
            got.append(window.acquire(table, 0, give_up))
        except BaseException as exc:  # noqa: BLE001 - the test looks at it
            got.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, got


def test_a_chunk_waits_for_room_and_the_finished_ones_are_committed_to_make_it():
    commit = Recorder()
    window = CommitWindow(2, one_db, commit)
    assert window.acquire("db.a", 0) and window.acquire("db.b", 0)
    thread, got = acquire_in_thread(window, "db.c")
    time.sleep(0.2)
    assert got == [] and commit.batches == []  # no room, and nothing finished to commit yet
    window.finished([outcome("db.a")])  # one of two finished: half the bound, a batch
    thread.join(WAIT_S)
    assert got == [True]
    assert commit.batches == [["db.a#0"]]
    window.finished([outcome("db.b"), outcome("db.c")])
    # every chunk is in: nothing waits, so the rest is left for the run's commit
    assert window.close() == {("db.a", 0)}
    assert commit.batches == [["db.a#0"]]
    assert window.peak["d"] == 2


def test_the_bound_counts_every_target_in_its_own_database():
    targets = {"db.a": ["d1", "d2"], "db.b": ["d2"], "db.c": ["d1"]}
    commit = Recorder()
    window = CommitWindow(1, targets.__getitem__, commit)
    assert window.acquire("db.a", 0)
    thread, got = acquire_in_thread(window, "db.c")  # d1 is full
    window.finished([outcome("db.a")])
    thread.join(WAIT_S)
    assert got == [True] and commit.batches == [["db.a#0"]]
    window.finished([outcome("db.c")])
    assert window.acquire("db.b", 0)  # d2 has room again: nothing to commit first
    assert commit.batches == [["db.a#0"]]
    window.close()


def test_a_chunk_larger_than_the_bound_is_refused_with_the_option_to_raise():
    window = CommitWindow(1, lambda t: ["d", "d"], Recorder())
    with pytest.raises(ValueError, match="tidemark.doris.max-running-txns-per-db"):
        window.acquire("db.a", 0)
    window.close()


def test_an_early_commit_that_fails_stops_the_acquiring_and_the_run():
    commit = Recorder()
    commit.fail = RuntimeError("Doris is down")
    window = CommitWindow(1, one_db, commit)
    assert window.acquire("db.a", 0)
    thread, got = acquire_in_thread(window, "db.b")
    window.finished([outcome("db.a")])
    thread.join(WAIT_S)
    assert len(got) == 1 and got[0] is commit.fail  # the failure itself, cause and all
    with pytest.raises(RuntimeError, match="Doris is down"):
        window.close()
    window.stop()  # after the executor raised it: nothing more to say


def test_a_waiting_chunk_gives_up_once_another_failed():
    window = CommitWindow(1, one_db, Recorder())
    assert window.acquire("db.a", 0)
    failed = threading.Event()
    thread, got = acquire_in_thread(window, "db.b", failed)
    time.sleep(0.1)
    failed.set()
    window.wake()
    thread.join(WAIT_S)
    assert got == [False]
    window.stop()


def test_drain_commits_what_finished_before_the_next_group():
    commit = Recorder()
    window = CommitWindow(3, one_db, commit)
    for table in ("db.a", "db.b"):
        assert window.acquire(table, 0)
    window.finished([outcome("db.a"), outcome("db.b")])
    window.drain()
    assert commit.batches == [["db.a#0", "db.b#0"]]
    window.drain()  # nothing finished: nothing to do
    assert window.acquire("db.c", 0)
    window.finished([outcome("db.c")])
    assert window.close() == {("db.a", 0), ("db.b", 0)}
    assert commit.batches == [["db.a#0", "db.b#0"]]
