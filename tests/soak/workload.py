"""The soak's write workload: mixed INSERT / UPDATE / DELETE over the soak's tables at a fixed rate.

Cheap on purpose (the machine has two cores, shared with MariaDB, the stand-in, Dagster and the
runs): each tick is one transaction of a few multi-row statements — per touched table one
multi-row INSERT, one ``UPDATE … WHERE id IN (…)``, one ``DELETE … WHERE id IN (…)`` — so 2,000
rows/s cost ~10 transactions and ~170 statements a second, not 2,000 round trips.

What the mix holds, per tick (``plan_tick``, a pure function of the random generator and the key
sets, so a unit test checks it without a server):

* ``TABLES_PER_TICK`` tables in rotation, each getting inserts of absent keys, updates and deletes of
  present keys (about one third each, so the tables keep their size);
* the hot keys ``HOT_KEYS`` of table ``t00`` updated ``HOT_REPEATS`` times in every tick — the same
  rows changed ~30 times a second, several times within one transaction;
* one churn key of the first touched table deleted, inserted again and updated in the same
  transaction.

The rows written are counted from the server's affected-row counts. A statement that fails (the
server restarted, a failover) rolls the transaction back; the writer reconnects and re-reads its
key sets from MySQL, since a COMMIT whose answer was lost may or may not have happened: the
comparison is always against what MySQL holds, never against the writer's model.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing as mp
import queue
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

log = logging.getLogger(__name__)

TABLE_COUNT = 20
TABLES_PER_TICK = 4
TICKS_PER_S = 10
HOT_TABLE = 0
HOT_KEYS = (1, 2, 3, 4, 5)
HOT_REPEATS = 3
CHURN_KEYS = (6, 7, 8, 9, 10)
FIRST_POOL_KEY = 11
KEY_SPACE = 4000  # keys 11..KEY_SPACE come and go; about half are present at a time
INITIAL_ROWS = 2000  # per table, before the soak (the snapshot reads 40,000 rows, in the driver)


def table_name(index: int) -> str:
    return f"t{index:02d}"


TABLES = tuple(table_name(i) for i in range(TABLE_COUNT))

CREATE_TABLE = """CREATE TABLE `{table}` (
  id BIGINT NOT NULL PRIMARY KEY,
  k INT NOT NULL,
  v VARCHAR(64) NULL,
  amount DECIMAL(12,2) NOT NULL,
  ts DATETIME(3) NOT NULL
)"""


class Counter(IntEnum):
    """Slots of the shared counter array."""

    INSERTED = 0
    UPDATED = 1
    DELETED = 2
    TRANSACTIONS = 3
    LATE_TICKS = 4
    ERRORS = 5
    ACTIVE_MS = 6  # milliseconds spent writing (not paused)
    TICKS = 7


@dataclass(frozen=True)
class TableOps:
    """The statements one tick runs on one table (keys only; values come from the tick number)."""

    table: str
    inserts: tuple[int, ...] = ()
    updates: tuple[int, ...] = ()
    deletes: tuple[int, ...] = ()
    hot_repeats: int = 0  # times HOT_KEYS are updated (the hot table)
    churn: int | None = None  # deleted, inserted and updated again in the same transaction

    @property
    def rows(self) -> int:
        return (len(self.inserts) + len(self.updates) + len(self.deletes) + self.hot_repeats * len(HOT_KEYS)
                + (3 if self.churn is not None else 0))


@dataclass(frozen=True)
class TickPlan:
    tick: int
    ops: tuple[TableOps, ...]

    @property
    def rows(self) -> int:
        return sum(o.rows for o in self.ops)


@dataclass
class KeySets:
    """Which pool keys each table holds (the writer's model, re-read from MySQL after an error)."""

    present: dict[str, set[int]] = field(default_factory=dict)

    def absent(self, table: str) -> list[int]:
        held = self.present[table]
        return [k for k in range(FIRST_POOL_KEY, KEY_SPACE + 1) if k not in held]


def rows_per_table(rate: float) -> int:
    """Pool rows per touched table and tick, so that a tick writes ``rate / TICKS_PER_S`` rows."""
    per_tick = rate / TICKS_PER_S
    fixed = HOT_REPEATS * len(HOT_KEYS) + 3  # the hot keys and the churn key
    return max(3, round((per_tick - fixed) / TABLES_PER_TICK))


def plan_tick(tick: int, rng: random.Random, keys: KeySets, rate: float) -> TickPlan:
    """The tick's statements: ``TABLES_PER_TICK`` tables in rotation, a third each of inserts,
    updates and deletes; the hot keys; one churn key."""
    n = rows_per_table(rate)
    first = (tick * TABLES_PER_TICK) % TABLE_COUNT
    touched = [TABLES[(first + i) % TABLE_COUNT] for i in range(TABLES_PER_TICK)]
    ops: list[TableOps] = []
    for j, table in enumerate(touched):
        present = sorted(keys.present[table])
        n_ins = n // 3
        n_del = min(n // 3, len(present))
        n_upd = min(n - n_ins - n_del, len(present))
        absent = keys.absent(table)
        inserts = tuple(sorted(rng.sample(absent, min(n_ins, len(absent)))))
        deletes = tuple(sorted(rng.sample(present, n_del)))
        rest = [k for k in present if k not in set(deletes)]
        updates = tuple(sorted(rng.sample(rest, min(n_upd, len(rest)))))
        ops.append(TableOps(table, inserts, updates, deletes,
                            churn=CHURN_KEYS[tick % len(CHURN_KEYS)] if j == 0 else None))
    ops.append(TableOps(TABLES[HOT_TABLE], hot_repeats=HOT_REPEATS))
    return TickPlan(tick, tuple(ops))


def apply_plan(keys: KeySets, plan: TickPlan) -> None:
    """The key sets after the plan committed."""
    for op in plan.ops:
        held = keys.present[op.table]
        held.difference_update(op.deletes)
        held.update(op.inserts)


def _row(key: int, tick: int) -> tuple[Any, ...]:
    return (key, (key * 7 + tick) % 100_000, f"v{key}-{tick}", f"{(key * 13 + tick) % 1_000_000 / 100:.2f}")


def execute_plan(cur: Any, plan: TickPlan) -> tuple[int, int, int]:
    """Run the plan's statements on ``cur`` (inside an open transaction); returns the rows
    inserted, updated and deleted as the server counted them."""
    ins = upd = dele = 0
    t = plan.tick
    for op in plan.ops:
        table = f"`{op.table}`"
        if op.inserts:
            values = ",".join(["(%s,%s,%s,%s,NOW(3))"] * len(op.inserts))
            ins += cur.execute(f"INSERT INTO {table} (id,k,v,amount,ts) VALUES {values}",
                               [x for key in op.inserts for x in _row(key, t)])
        if op.updates:
            marks = ",".join(["%s"] * len(op.updates))
            upd += cur.execute(f"UPDATE {table} SET k = k + 1, v = %s, amount = amount + 0.01, ts = NOW(3) "
                               f"WHERE id IN ({marks})", [f"u{t}", *op.updates])
        if op.deletes:
            marks = ",".join(["%s"] * len(op.deletes))
            dele += cur.execute(f"DELETE FROM {table} WHERE id IN ({marks})", list(op.deletes))
        for r in range(op.hot_repeats):
            upd += cur.execute(f"UPDATE {table} SET k = k + 1, v = %s, ts = NOW(3) WHERE id IN "
                               f"({','.join(str(k) for k in HOT_KEYS)})", [f"hot{t}.{r}"])
        if op.churn is not None:
            dele += cur.execute(f"DELETE FROM {table} WHERE id = %s", [op.churn])
            ins += cur.execute(f"INSERT INTO {table} (id,k,v,amount,ts) VALUES (%s,%s,%s,%s,NOW(3))",
                               list(_row(op.churn, t)))
            upd += cur.execute(f"UPDATE {table} SET k = k + 1, v = %s WHERE id = %s", [f"churn{t}", op.churn])
    return ins, upd, dele


def initial_rows(table_index: int) -> list[tuple[Any, ...]]:
    """The rows a table starts with: the hot and churn keys, and every other pool key up to
    ``INITIAL_ROWS`` rows."""
    keys = [*HOT_KEYS, *CHURN_KEYS]
    k = FIRST_POOL_KEY + table_index % 2
    while len(keys) < INITIAL_ROWS:
        keys.append(k)
        k += 2
    return [_row(key, 0) for key in keys]


def read_keys(conn: Any, tables: Sequence[str] = TABLES) -> KeySets:
    keys = KeySets()
    with conn.cursor() as cur:
        for table in tables:
            cur.execute(f"SELECT id FROM `{table}` WHERE id >= %s", [FIRST_POOL_KEY])
            keys.present[table] = {int(r[0]) for r in cur.fetchall()}
    conn.commit()
    return keys


# ---- the writer process ------------------------------------------------------------------------


@dataclass(frozen=True)
class WriterConfig:
    socket: str
    database: str
    rate: float
    seed: int


class Writer:
    """The workload in a process of its own (the harness's threads and GIL do not slow it):
    ``pause`` (returns once the transaction in flight has ended), ``resume`` (optionally against
    another server's socket, after a failover), ``stop``; counters in shared memory."""

    def __init__(self, config: WriterConfig):
        ctx = mp.get_context("spawn")
        self.config = config
        self.counters = ctx.Array("q", len(Counter), lock=False)
        self.commands: Any = ctx.Queue()
        self.paused = ctx.Event()
        self.failed: Any = ctx.Queue()
        self.process = ctx.Process(target=_writer_main, name="soak-writer",
                                   args=(config, self.counters, self.commands, self.paused, self.failed),
                                   daemon=True)

    def start(self) -> None:
        self.process.start()

    def pause(self, timeout_s: float = 60.0) -> None:
        self.paused.clear()
        self.commands.put(("pause", None))
        if not self.paused.wait(timeout_s):
            raise RuntimeError(f"the writer did not pause within {timeout_s:.0f} s")

    def resume(self, socket: str | None = None) -> None:
        self.paused.clear()
        self.commands.put(("resume", socket))

    def stop(self, timeout_s: float = 60.0) -> None:
        self.commands.put(("stop", None))
        self.process.join(timeout_s)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)

    def error(self) -> str | None:
        try:
            return self.failed.get_nowait()
        except queue.Empty:
            return None

    def counter(self, c: Counter) -> int:
        return int(self.counters[c])

    def totals(self) -> dict[str, int]:
        return {c.name.lower(): int(self.counters[c]) for c in Counter}


def _connect(socket: str, database: str) -> Any:
    import pymysql

    return pymysql.connect(unix_socket=socket, user="root", database=database, autocommit=False,
                           charset="utf8mb4", connect_timeout=5, read_timeout=120, write_timeout=120)


def _writer_main(config: WriterConfig, counters: Any, commands: Any, paused: Any, failed: Any) -> None:
    import pymysql

    logging.basicConfig(level=logging.INFO, format="%(asctime)s writer %(message)s")
    rng = random.Random(config.seed)
    socket = config.socket
    conn: Any = None
    keys: KeySets | None = None
    interval = 1.0 / TICKS_PER_S
    tick = 0
    running = True
    clock = time.monotonic()
    slot = clock
    try:
        while True:
            try:
                cmd, arg = commands.get_nowait()
            except queue.Empty:
                cmd, arg = None, None
            if cmd == "stop":
                return
            if cmd == "pause":
                running = False
                paused.set()
            elif cmd == "resume":
                if arg and arg != socket:
                    socket = arg
                    if conn is not None:
                        conn.close()
                    conn, keys = None, None
                running = True
                slot = time.monotonic()
            if not running:
                time.sleep(0.05)
                continue
            started = time.monotonic()
            if started < slot:
                time.sleep(slot - started)
            elif started - slot > interval:
                counters[Counter.LATE_TICKS] += 1
                slot = started  # do not burst to catch up: the rate achieved is what it is
            slot += interval
            try:
                if conn is None:
                    conn = _connect(socket, config.database)
                    keys = read_keys(conn)
                plan = plan_tick(tick, rng, keys, config.rate)
                with conn.cursor() as cur:
                    ins, upd, dele = execute_plan(cur, plan)
                conn.commit()
            except pymysql.Error as exc:
                counters[Counter.ERRORS] += 1
                log.info("tick %d failed (%s); reconnecting", tick, exc)
                try:
                    if conn is not None:
                        conn.close()
                except pymysql.Error:
                    pass
                conn, keys = None, None
                time.sleep(0.5)
                continue
            apply_plan(keys, plan)
            tick += 1
            counters[Counter.TICKS] = tick
            counters[Counter.INSERTED] += ins
            counters[Counter.UPDATED] += upd
            counters[Counter.DELETED] += dele
            counters[Counter.TRANSACTIONS] += 1
            counters[Counter.ACTIVE_MS] += int(interval * 1000)
    except BaseException as exc:  # noqa: BLE001 - reported to the harness, which fails the soak
        failed.put(f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if conn is not None:
            with contextlib.suppress(Exception):  # closing a dead connection
                conn.close()
