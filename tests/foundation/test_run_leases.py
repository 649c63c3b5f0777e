"""Run leases (``cdc_core/state/leases.py``): of several processes taking a scope at the same
moment exactly one gets it; overlapping scopes exclude each other, different tables' snapshots do
not; a holder that stopped its heartbeat is recognised by the expiry and taken over; the heartbeat
keeps a live holder's lease; ``resolve_pending`` leaves a live holder's work alone."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cdc_core.state import StateStore
from cdc_core.state.keys import LEASES
from cdc_core.state.leases import (
    LeaseHeld,
    LeaseKeeper,
    LeaseLost,
    Scope,
    live_holders,
    overlaps,
    release,
    snapshot_scope,
    try_acquire,
)

ROOT = Path(__file__).resolve().parents[2]
RACERS = 6


def race(url: str, start_at: float, scope: str, done_dir: str, racers: int) -> None:
    """One racer: take ``scope`` at ``start_at``; prints WON or HELD (the other's one line).

    Every racer stays alive until all have tried: a lease whose holder's pid is gone on this machine
    is taken over by design, so a winner that exited before a racer started late (imports under a
    loaded machine) would hand its lease on, and the test would see two winners for the wrong reason.
    """
    store = StateStore.open(url=url)
    time.sleep(max(0.0, start_at - time.time()))
    try:
        try:
            try_acquire(store, [scope], owner=f"racer-{os.getpid()}", purpose="a race", ttl_s=60)
        except LeaseHeld as exc:
            print("HELD", exc)
        else:
            print("WON")
        Path(done_dir, str(os.getpid())).touch()
        deadline = time.monotonic() + 100
        while len(os.listdir(done_dir)) < racers and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.sqlite'}"
    return request.getfixturevalue("postgres_db")


def test_of_processes_taking_one_scope_at_the_same_moment_exactly_one_wins(store_url, tmp_path):
    StateStore.open(url=store_url).close()  # the tables exist: the race is on the lease alone
    start_at = time.time() + 2.5
    done = tmp_path / "done"
    done.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    code = (f"from tests.foundation.test_run_leases import race; "
            f"race({store_url!r}, {start_at!r}, 'stream', {str(done)!r}, {RACERS})")
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(RACERS)]
    outs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-2000:]
        outs.append(out.strip())
    assert sorted(o.split()[0] for o in outs) == ["HELD"] * (RACERS - 1) + ["WON"], outs
    held = next(o for o in outs if o.startswith("HELD"))
    assert "\n" not in held and "a race on" in held and "holds its stream" in held


def test_scopes_overlap_as_the_work_does(tmp_path):
    store = StateStore.open(tmp_path)
    try:
        t1, t2 = snapshot_scope("db.t1"), snapshot_scope("db.t2")
        assert overlaps(Scope.PIPELINE, t1) and overlaps(Scope.STREAM, Scope.PIPELINE) and overlaps(t1, t1)
        assert not overlaps(t1, t2) and not overlaps(Scope.STREAM, t1) and not overlaps(Scope.PLAN, Scope.STREAM)
        try_acquire(store, [t1], owner="a", purpose="chunks of t1", ttl_s=60)
        try_acquire(store, [t2, Scope.STREAM], owner="b", purpose="chunks of t2", ttl_s=60)  # other tables may
        with pytest.raises(LeaseHeld, match="chunks of t1"):
            try_acquire(store, [t1], owner="c", purpose="t1 again", ttl_s=60)
        with pytest.raises(LeaseHeld):
            try_acquire(store, [Scope.PIPELINE], owner="c", purpose="a whole run", ttl_s=60)
        # all or none: c got nothing of what it asked for
        assert {r.owner for r in live_holders(store)} == {"a", "b"}
        try_acquire(store, [t1], owner="a", purpose="nested", ttl_s=60)  # an owner never conflicts with itself
        release(store, [t1], owner="a")
        release(store, [t2, Scope.STREAM], owner="c")  # not c's: left alone
        assert {r.scope for r in live_holders(store)} == {t2, Scope.STREAM}
        try_acquire(store, [t1], owner="c", purpose="t1 again", ttl_s=60)
    finally:
        store.close()


def test_a_holder_without_heartbeat_is_recognised_by_its_expiry_and_taken_over(tmp_path):
    store = StateStore.open(tmp_path)
    try:
        try_acquire(store, [Scope.STREAM], owner="dead", purpose="a killed run", ttl_s=3)
        with pytest.raises(LeaseHeld, match="a killed run"):
            try_acquire(store, [Scope.STREAM], owner="next", purpose="the next run", ttl_s=60)
        time.sleep(3.2)
        dead = try_acquire(store, [Scope.STREAM], owner="next", purpose="the next run", ttl_s=60)
        assert [(r.owner, r.purpose) for r in dead] == [("dead", "a killed run")]
        assert [r.owner for r in live_holders(store)] == ["next"]
    finally:
        store.close()


def test_the_heartbeat_keeps_a_live_holders_lease(tmp_path):
    store = StateStore.open(tmp_path)
    keeper = LeaseKeeper(store, ttl_s=3, pipeline="p")
    try:
        keeper.acquire([Scope.PIPELINE], purpose="a long run")
        first = live_holders(store)[0]
        time.sleep(4)  # past the first expiry: renewed meanwhile
        with pytest.raises(LeaseHeld):
            try_acquire(store, [Scope.STREAM], owner="other", purpose="x", ttl_s=3)
        assert live_holders(store)[0].heartbeat_at > first.heartbeat_at
        keeper.check()  # nothing lost
        keeper.release([Scope.PIPELINE])
        assert live_holders(store) == []
    finally:
        keeper.stop()
        store.close()


def hold_and_die(url: str) -> None:
    """Take the stream's lease, then die as ``kill -9`` would (no release, no heartbeat)."""
    store = StateStore.open(url=url)
    try_acquire(store, [Scope.STREAM], owner=f"doomed-{os.getpid()}", purpose="a run killed", ttl_s=600)
    os.kill(os.getpid(), 9)


def test_a_dead_holder_whose_pid_this_machine_sees_is_taken_over_at_once(tmp_path):
    """The same boot and PID namespace: a plain re-run after a crash does not wait for the expiry."""
    url = f"sqlite:///{tmp_path / 'state.sqlite'}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    code = f"from tests.foundation.test_run_leases import hold_and_die; hold_and_die({url!r})"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr[-2000:]
    store = StateStore.open(url=url)
    try:
        (held,) = live_holders(store)  # not expired: 600 s to live
        assert held.gone_here() and held.death() == "its process is gone"
        dead = try_acquire(store, [Scope.STREAM], owner="next", purpose="the re-run", ttl_s=60)
        assert [r.purpose for r in dead] == ["a run killed"]
        # a live holder here is not taken for dead
        try_acquire(store, [Scope.PLAN], owner="me", purpose="alive", ttl_s=60)
        (mine,) = [r for r in live_holders(store) if r.owner == "me"]
        assert not mine.gone_here()
    finally:
        store.close()


def test_a_holder_whose_lease_was_taken_over_stops_before_committing(tmp_path):
    """A holder presumed dead (no heartbeat reached the store in time) and taken over learns it at
    its next beat; ``check`` (called before every commit) then refuses to go on."""
    store = StateStore.open(tmp_path)
    keeper = LeaseKeeper(store, ttl_s=3, pipeline="p")
    try:
        keeper.acquire([Scope.STREAM], purpose="a stalled run")
        with store.transaction() as tx:  # as a taker does with an expired lease
            LEASES.key(Scope.STREAM).delete(tx)
        try_acquire(store, [Scope.STREAM], owner="taker", purpose="the next run", ttl_s=60)
        time.sleep(1.5)  # a beat (every ttl/3)
        with pytest.raises(LeaseLost, match="lease on stream of pipeline 'p' was taken over"):
            keeper.check()
        assert [r.owner for r in live_holders(store)] == ["taker"]  # the beat did not take it back
    finally:
        keeper.stop()
        store.close()
