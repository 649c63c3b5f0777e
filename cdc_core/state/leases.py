"""Run leases: one holder of a pipeline's stream (and of each table's snapshot) at a time, on any machine.

A run of a pipeline reads from the state store what is left to do, prepares it in Doris and
commits it. Two runs doing that at once read the same binlog range (or the same chunk) and load it
twice, and each one's ``resolve_pending`` aborts or commits the other's work in flight. Checking
Dagster's list of runs in flight first does not prevent it: two commands started at the same moment
both see none. So a run first takes a **lease** in the state store every machine shares:

* a ``lease`` record per scope (``kv`` namespace ``lease``, :data:`cdc_core.state.keys.LEASES`)
  naming its owner (host, pid, a token drawn per process), what it is doing, when it was taken,
  its last heartbeat and when it expires — all on the **database's** clock, so machines whose
  clocks differ agree on what expired;
* taken in one write transaction (the store's write lock, ``cdc_core/state/locking.py``): the
  check "nobody else holds a scope that overlaps" and the write of the record cannot interleave
  with another taker's, on SQLite, PostgreSQL and MySQL alike;
* kept alive by a heartbeat thread of the holding process (every third of the time to live), and
  deleted when the run ends;
* a holder killed with ``kill -9``, or a machine that died, stops its heartbeat: once the record
  expired the next taker anywhere deletes it, says so, and resolves what the dead run left
  prepared (``resolve_pending``, which then finds no live holder of that work). A taker that can
  see the holder's pid (the same boot of the same machine, the same PID namespace: the record says
  which) and finds that process gone does not wait for the expiry: a plain re-run after a crash
  goes on at once.

Why a lease row and not a session-level advisory lock (``pg_advisory_lock``/``GET_LOCK``) held for
the run: such a lock lives as long as one database session, so it needs one connection pinned for
hours, breaks behind a transaction-pooling PgBouncer (the session is not the client's), is held on
by a half-open connection from a machine that lost power until TCP keepalive gives up (hours by
default), and says nothing about who holds it. A row says who, since when and whether it is alive;
it survives poolers and reconnects, and the write lock makes taking it atomic.

Scopes overlap as the work does (:func:`overlaps`): ``pipeline`` (a whole ``tidemark run``) overlaps
every scope; ``stream`` (the binlog and schema changes) overlaps itself; ``snapshot:<db.table>``
(chunk loads) overlaps the same table's only — one table's runs never overlap, different tables'
may; ``plan`` (the split planning) overlaps itself. Scopes held by the same owner never conflict: a
``tidemark run`` holds ``pipeline`` and the jobs it executes in its own process take their narrower
scopes under it.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Connection

from cdc_core.instrumentation.proc_stat import START_TICKS, stat_fields
from cdc_core.state.keys import LEASES
from cdc_core.state.store import StateStore, StateTransaction

logger = logging.getLogger(__name__)

DEFAULT_TTL_S = 30.0
"""A lease not renewed for this long is its holder's death (``tidemark.run.lease-ttl-s``)."""
WAIT_POLL_S = 1.0


class Scope(StrEnum):
    """The fixed scopes; a table's snapshot scope is :func:`snapshot_scope`."""

    PIPELINE = "pipeline"
    STREAM = "stream"
    PLAN = "plan"


SNAPSHOT_PREFIX = "snapshot:"


def snapshot_scope(table_id: str) -> str:
    """The scope of one table's chunk loads."""
    return f"{SNAPSHOT_PREFIX}{table_id}"


def overlaps(a: str, b: str) -> bool:
    """Whether two holders of ``a`` and ``b`` would do (part of) the same work."""
    return a == b or Scope.PIPELINE in (a, b)


def db_now(conn: Connection) -> float:
    """Epoch seconds on the database server's clock: every machine measures expiry by the same one."""
    dialect = conn.dialect.name
    if dialect == "postgresql":
        return float(conn.exec_driver_sql("SELECT EXTRACT(EPOCH FROM clock_timestamp())").scalar())
    if dialect == "mysql":
        return float(conn.exec_driver_sql("SELECT UNIX_TIMESTAMP(NOW(6))").scalar())
    if dialect == "sqlite":
        return float(conn.exec_driver_sql("SELECT (julianday('now') - 2440587.5) * 86400.0").scalar())
    return time.time()


@dataclass(frozen=True)
class LeaseRecord:
    """Who holds one scope, and until when unless it renews."""

    scope: str
    owner: str
    host: str
    pid: int
    purpose: str
    acquired_at: float
    heartbeat_at: float
    expires_at: float
    run_id: str | None = None
    pid_space: str | None = None  # the machine's boot and PID namespace (:func:`process_space`)
    pid_start: str | None = None  # when the pid started: a reused pid is another process

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LeaseRecord:
        return cls(**{k: data.get(k) for k in cls.__dataclass_fields__})

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def ttl_s(self) -> float:
        """How long it lives without a heartbeat."""
        return self.expires_at - self.heartbeat_at

    def expired(self, now: float) -> bool:
        return self.expires_at <= now

    def gone_here(self) -> bool:
        """Its holder ran where this process can see its pid (the same boot of the same machine, the
        same PID namespace), and that process no longer exists: dead now, no need to wait for expiry."""
        space = process_space()
        if space is None or self.pid_space != space:
            return False
        start = pid_start(self.pid)
        return start is None or (bool(self.pid_start) and start != self.pid_start)

    def death(self) -> str:
        """How its holder was found dead, for the line that says so."""
        return "its process is gone" if self.gone_here() else f"no heartbeat for over {self.ttl_s:.0f} s"

    def describe(self, now: float) -> str:
        """``tidemark run --once on host-a (pid 4242), since 12 s, heartbeat 2 s ago``."""
        return (f"{self.purpose} on {self.host} (pid {self.pid}), since {max(0.0, now - self.acquired_at):.0f} s, "
                f"heartbeat {max(0.0, now - self.heartbeat_at):.0f} s ago")


class LeaseHeld(RuntimeError):
    """Another live holder has a scope overlapping the one asked for; ``str()`` is one line."""

    def __init__(self, wanted: str, holder: LeaseRecord, now: float, pipeline: str = ""):
        self.wanted = wanted
        self.holder = holder
        what = f"pipeline '{pipeline}'" if pipeline else "this pipeline"
        scope = "all of it" if holder.scope == Scope.PIPELINE else f"its {holder.scope}"
        super().__init__(f"another run of {what} holds {scope}: {holder.describe(now)}; this run wrote nothing. "
                         f"Run it again when that one has ended (if it died, its lease expires in "
                         f"{max(0.0, holder.expires_at - now):.0f} s)")


class LeaseLost(RuntimeError):
    """This process's lease was taken over (its heartbeat could not be written in time)."""


def pid_start(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot), None when there is no such process."""
    fields = stat_fields(pid)
    return None if fields is None else fields[START_TICKS]


def process_space() -> str | None:
    """This machine's boot and PID namespace: where a pid names one process (None off Linux). A
    hostname is not enough: two containers may share one, and pids mean nothing across them."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        return f"{boot}/{os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return None


def process_owner() -> str:
    """This process's owner token: host, pid and a random part (a reused pid is another owner)."""
    global _OWNER
    if _OWNER is None or _OWNER[0] != os.getpid():
        _OWNER = (os.getpid(), f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}")
    return _OWNER[1]


_OWNER: tuple[int, str] | None = None


def holders(tx: StateTransaction) -> list[LeaseRecord]:
    """Every lease record, live or expired."""
    return [LeaseRecord.from_dict(value) for _name, value in LEASES.items(tx)]


def live_holders(store: StateStore, *, other_than: str | None = None) -> list[LeaseRecord]:
    """The unexpired leases (of owners other than ``other_than``), read without the write lock."""
    with store.transaction(readonly=True) as tx:
        now = db_now(tx.conn)
        return [r for r in holders(tx) if not r.expired(now) and r.owner != other_than]


def try_acquire(store: StateStore, scopes: Sequence[str], *, owner: str, purpose: str, ttl_s: float,
                run_id: str | None = None, pipeline: str = "") -> list[LeaseRecord]:
    """Take every scope in ``scopes`` or none: one write transaction. Returns the expired leases of
    dead holders this removed (their work is for the caller's ``resolve_pending``); raises
    :class:`LeaseHeld` when a live holder of another owner has an overlapping scope."""
    with store.transaction() as tx:
        now = db_now(tx.conn)
        dead: list[LeaseRecord] = []
        records = holders(tx)  # read once: a run of 300 tables takes 300 scopes
        for record in records:
            if record.owner == owner or not any(overlaps(s, record.scope) for s in scopes):
                continue
            if record.expired(now) or record.gone_here():
                dead.append(record)
                continue
            raise LeaseHeld(scopes[0], record, now, pipeline)
        LEASES.delete_many(tx, [record.scope for record in dead])
        mine = {r.scope: r for r in records if r.owner == owner}
        host, pid, space, started = socket.gethostname(), os.getpid(), process_space(), pid_start(os.getpid())
        taken = []
        for scope in scopes:
            current = mine.get(scope)
            acquired = float(current.acquired_at or now) if current is not None else now
            taken.append((scope, LeaseRecord(scope, owner, host, pid, purpose, acquired, now, now + ttl_s, run_id,
                                             space, started).to_dict()))
        LEASES.put_many(tx, taken)  # one statement for all of them (a run of 300 tables: 300 scopes)
    for record in dead:
        logger.warning("the lease on %s of %s is a dead run's (%s): taken over; what it left prepared is resolved now",
                       record.scope, record.describe(now), record.death())
    return dead


def renew(store: StateStore, scopes: Iterable[str], *, owner: str, ttl_s: float) -> list[str]:
    """Move the heartbeat of ``owner``'s leases on ``scopes``; returns the scopes it no longer holds."""
    lost: list[str] = []
    with store.transaction() as tx:
        now = db_now(tx.conn)
        records = dict(LEASES.items(tx))  # read once, not once per scope
        renewed = []
        for scope in scopes:
            current = records.get(scope)
            if current is None or current.get("owner") != owner:
                lost.append(scope)
                continue
            renewed.append((scope, {**current, "heartbeat_at": now, "expires_at": now + ttl_s}))
        LEASES.put_many(tx, renewed)  # written in one statement, as read
    return lost


def release_run(store: StateStore, run_id: str) -> list[str]:
    """Delete the leases taken for the Dagster run ``run_id``, whichever process took them (its
    step's hook may run in another process than its step); returns their scopes."""
    with store.transaction() as tx:
        mine = [r.scope for r in holders(tx) if r.run_id == run_id]
        LEASES.delete_many(tx, mine)
    return mine


def release(store: StateStore, scopes: Iterable[str], *, owner: str) -> None:
    """Delete ``owner``'s leases on ``scopes`` (another owner's record is left alone)."""
    with store.transaction() as tx:
        mine = {r.scope for r in holders(tx) if r.owner == owner}  # read once, not once per scope
        LEASES.delete_many(tx, [scope for scope in dict.fromkeys(scopes) if scope in mine])


class LeaseKeeper:
    """The leases this process holds on one store, kept alive by a heartbeat thread.

    Acquisitions nest: a scope taken twice is released by the second release. The thread renews
    every ``ttl_s / 3``; a renewal that fails (the database does not answer) is retried at the next
    beat, and a scope found taken over (this process was presumed dead) is reported by :meth:`check`.
    """

    def __init__(self, store: StateStore, ttl_s: float = DEFAULT_TTL_S, pipeline: str = ""):
        self.store = store
        self.ttl_s = ttl_s
        self.pipeline = pipeline
        self.owner = process_owner()
        self._counts: dict[str, int] = {}
        self._by_run: dict[str, list[str]] = {}
        self._lost: set[str] = set()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._counts)

    def acquire(self, scopes: Sequence[str], *, purpose: str, run_id: str | None = None,
                wait_s: float = 0.0) -> list[LeaseRecord]:
        """Take ``scopes`` (waiting up to ``wait_s`` for a live holder to end); the dead holders found."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                dead = try_acquire(self.store, scopes, owner=self.owner, purpose=purpose, ttl_s=self.ttl_s,
                                   run_id=run_id, pipeline=self.pipeline)
                break
            except LeaseHeld:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(min(WAIT_POLL_S, max(0.05, deadline - time.monotonic())))
        with self._lock:
            for scope in scopes:
                self._counts[scope] = self._counts.get(scope, 0) + 1
                self._lost.discard(scope)
            if run_id is not None:
                self._by_run.setdefault(run_id, []).extend(scopes)
            self._start()
        return dead

    def release_run(self, run_id: str) -> None:
        """Give back what was taken for the Dagster run ``run_id`` (here or in another process)."""
        with self._lock:
            scopes = self._by_run.pop(run_id, [])
        if scopes:
            self.release(scopes)
        release_run(self.store, run_id)

    def release(self, scopes: Sequence[str]) -> None:
        """Give back one acquisition of each scope; the record goes when the last one does."""
        gone = []
        with self._lock:
            for scope in scopes:
                count = self._counts.get(scope, 0) - 1
                if count <= 0:
                    self._counts.pop(scope, None)
                    gone.append(scope)
                else:
                    self._counts[scope] = count
        if gone:
            release(self.store, gone, owner=self.owner)

    def check(self) -> None:
        """Raise :class:`LeaseLost` when a scope this process holds was taken over."""
        with self._lock:
            lost = sorted(self._lost)
        if lost:
            raise LeaseLost(f"this run's lease on {', '.join(lost)} of pipeline '{self.pipeline}' was taken over "
                            f"(no heartbeat reached the state store for {self.ttl_s:.0f} s); it stops before "
                            "committing anything more")

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._beat, name=f"tidemark-lease-{self.pipeline}", daemon=True)
            self._thread.start()

    def _beat(self) -> None:
        while not self._wake.wait(self.ttl_s / 3):
            scopes = self.held
            if not scopes:
                continue
            try:
                lost = renew(self.store, scopes, owner=self.owner, ttl_s=self.ttl_s)
            except Exception:  # noqa: BLE001 - retried at the next beat; a lease that expires meanwhile is lost
                logger.warning("the lease heartbeat of pipeline '%s' could not be written; retrying", self.pipeline,
                               exc_info=True)
                continue
            if lost:
                with self._lock:
                    self._lost.update(s for s in lost if s in self._counts)
                logger.error("the lease on %s of pipeline '%s' was taken over by another run", ", ".join(lost),
                             self.pipeline)

    def stop(self) -> None:
        self._wake.set()


_KEEPERS: dict[str, LeaseKeeper] = {}
_KEEPERS_LOCK = threading.Lock()


def keeper_for(store: StateStore, ttl_s: float = DEFAULT_TTL_S, pipeline: str = "") -> LeaseKeeper:
    """This process's keeper of the leases on ``store``'s database: one per database, whichever
    ``StateStore`` object (a Dagster step's, a hook's, ``tidemark run``'s) asks."""
    url = store.engine.url
    name = url.render_as_string(hide_password=False)
    if url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"):
        name = f"{name}#{id(store.engine)}"  # each in-memory engine is a database of its own
    with _KEEPERS_LOCK:
        keeper = _KEEPERS.get(name)
        if keeper is None or keeper.owner != process_owner():
            keeper = _KEEPERS[name] = LeaseKeeper(store, ttl_s, pipeline)
        keeper.ttl_s = ttl_s
        return keeper


def find_keeper(store: StateStore) -> LeaseKeeper | None:
    """The keeper of ``store``'s database when this process took a lease on it."""
    url = store.engine.url
    name = url.render_as_string(hide_password=False)
    with _KEEPERS_LOCK:
        return _KEEPERS.get(name) or _KEEPERS.get(f"{name}#{id(store.engine)}")


__all__ = ["DEFAULT_TTL_S", "LeaseHeld", "LeaseKeeper", "LeaseLost", "LeaseRecord", "Scope", "db_now", "find_keeper",
           "keeper_for", "live_holders", "overlaps", "process_owner", "release", "release_run", "renew",
           "snapshot_scope", "try_acquire"]
