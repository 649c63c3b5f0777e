"""A steady write workload against MySQL: the end-to-end tests and the freshness and
schema-pause benchmarks drive the pipeline with it while Dagster streams the binlog. A test
and bench helper: production never imports it, and it imports nothing of Tidemark's.

``SteadyWriter`` commits small transactions on a fixed schedule (not "as fast as possible"),
so a rate of 200 rows/s means 200 rows/s whatever the machine, and records when each inserted
id was committed, which is what freshness is measured from.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class WriteStats:
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    transactions: int = 0
    late_ticks: int = 0  # ticks that started after their slot (the writer could not keep the rate)
    commit_times: dict[int, float] = field(default_factory=dict)  # id → time.time() after COMMIT


class SteadyWriter(threading.Thread):
    """Writes ``rate`` rows/s into ``table`` (``id BIGINT PRIMARY KEY`` plus the columns that
    ``make_row`` fills), as ``ticks_per_s`` transactions per second. Updates and deletes touch
    earlier ids when ``update_share`` / ``delete_share`` are set."""

    def __init__(self, connect: Callable[[], Any], table: str, columns: tuple[str, ...],
                 make_row: Callable[[int, random.Random], tuple], rate: float = 200.0, ticks_per_s: float = 20.0,
                 first_id: int = 1, update_share: float = 0.0, delete_share: float = 0.0,
                 update_sql: str | None = None, seed: int = 1):
        super().__init__(daemon=True, name=f"writer-{table}")
        self.connect, self.table, self.columns, self.make_row = connect, table, columns, make_row
        self.rate, self.ticks_per_s = rate, ticks_per_s
        self.next_id = first_id
        self.update_share, self.delete_share = update_share, delete_share
        self.update_sql = update_sql
        self.rng = random.Random(seed)
        self.stats = WriteStats()
        self.error: BaseException | None = None
        self._halt = threading.Event()
        self._live: list[int] = []

    def stop(self, timeout_s: float = 30.0) -> WriteStats:
        self._halt.set()
        self.join(timeout_s)
        if self.error is not None:
            raise RuntimeError(f"the write workload on {self.table} failed: {self.error}") from self.error
        return self.stats

    def run(self) -> None:
        try:
            self._loop()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def _loop(self) -> None:
        conn = self.connect()
        placeholders = ",".join(["%s"] * (len(self.columns) + 1))
        insert = f"INSERT INTO {self.table} (id,{','.join(self.columns)}) VALUES ({placeholders})"
        interval = 1.0 / self.ticks_per_s
        carry = 0.0
        start = time.monotonic()
        tick = 0
        try:
            while not self._halt.is_set():
                slot = start + tick * interval
                now = time.monotonic()
                if now < slot:
                    time.sleep(slot - now)
                elif now - slot > interval:
                    self.stats.late_ticks += 1
                tick += 1
                carry += self.rate * interval
                rows = int(carry)
                carry -= rows
                if rows <= 0:
                    continue
                ids: list[int] = []
                with conn.cursor() as cur:
                    if not (self.delete_share or self.update_share):
                        # inserts only: one multi-row INSERT (pymysql's executemany), so that a
                        # rate of 10,000 rows/s is the server's work, not 10,000 round trips
                        ids = list(range(self.next_id, self.next_id + rows))
                        self.next_id += rows
                        cur.executemany(insert, [(i, *self.make_row(i, self.rng)) for i in ids])
                        rows = 0
                    for _ in range(rows):
                        roll = self.rng.random()
                        if self._live and roll < self.delete_share:
                            victim = self._live.pop(self.rng.randrange(len(self._live)))
                            cur.execute(f"DELETE FROM {self.table} WHERE id = %s", (victim,))
                            self.stats.deleted += 1
                        elif self._live and roll < self.delete_share + self.update_share and self.update_sql:
                            cur.execute(self.update_sql, (self.rng.choice(self._live),))
                            self.stats.updated += 1
                        else:
                            new_id = self.next_id
                            self.next_id += 1
                            cur.execute(insert, (new_id, *self.make_row(new_id, self.rng)))
                            ids.append(new_id)
                conn.commit()
                committed_at = time.time()
                self.stats.transactions += 1
                self.stats.inserted += len(ids)
                for i in ids:
                    self.stats.commit_times[i] = committed_at
                self._live.extend(ids)
        finally:
            conn.close()
