"""Writers of one pipeline's state in several processes: serialised, no update lost.

Each of ``PROCESSES`` processes opens the store itself (so the first ones race to create the
tables: migrations run once, under their lock) and runs ``ROUNDS`` read-modify-write transactions
on one key. Without the store's write lock, PostgreSQL's READ COMMITTED lets two of them read the
same value and one increment vanishes; with it the count is exact.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from cdc_core.state import BatchRecord, BatchStatus, StateStore
from cdc_core.state.store import SQLITE_FILE

ROOT = Path(__file__).resolve().parents[2]
PROCESSES = 6
ROUNDS = 40


def hammer(where: str, start_at: float, rounds: int) -> None:
    """One worker: ``rounds`` increments of ``test/counter`` (a URL or a state directory)."""
    time.sleep(max(0.0, start_at - time.time()))  # every process starts at once, tables not yet made
    store = StateStore.open(url=where) if "://" in where else StateStore.open(where)
    try:
        for _ in range(rounds):
            with store.transaction() as tx:
                value = tx.get("test", "counter", 0)
                time.sleep(0.001)  # widen the window between the read and the write
                tx.put("test", "counter", value + 1)
                tx.put_batch(BatchRecord(f"b{os.getpid()}", {"n": value}, {"n": value + 1}, BatchStatus.COMMITTED))
    finally:
        store.close()


def _run_workers(where: str) -> None:
    start_at = time.time() + 3.0  # the interpreters' imports done before anyone begins
    code = f"from tests.foundation.test_state_concurrency import hammer; hammer({where!r}, {start_at!r}, {ROUNDS})"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(PROCESSES)]
    failures = []
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        if proc.returncode != 0:
            failures.append(err[-2000:])
    assert not failures, failures


def _assert_exact(store: StateStore) -> None:
    with store.transaction(readonly=True) as tx:
        assert tx.get("test", "counter") == PROCESSES * ROUNDS
        batches = tx.batches()
    assert len(batches) == PROCESSES  # one row per worker, upserted ROUNDS times
    assert sorted(b.end_offset["n"] for b in batches)[-1] == PROCESSES * ROUNDS


def test_concurrent_writers_on_postgresql_lose_no_update(postgres_db):
    _run_workers(postgres_db)
    store = StateStore.open(url=postgres_db)
    try:
        _assert_exact(store)
        assert store.engine.dialect.driver == "psycopg2"  # the plain URL means psycopg2 (pyproject.toml)
    finally:
        store.close()


def test_concurrent_writers_on_sqlite_lose_no_update(tmp_path):
    _run_workers(str(tmp_path / "state"))
    store = StateStore.open(tmp_path / "state")
    try:
        _assert_exact(store)
    finally:
        store.close()


def test_a_new_sqlite_store_opened_while_another_process_switches_it_to_wal_waits(tmp_path):
    """Found by the test above in a loaded run: the processes opening a new file race to switch it
    to WAL, and SQLite answers the loser "database is locked" at once, busy timeout or not (it
    holds its read while another holds the write lock). Here another connection holds the write
    lock of a file still in rollback mode for a moment: the store's open waits for it."""
    (tmp_path / "state").mkdir()
    other = sqlite3.connect(tmp_path / "state" / SQLITE_FILE, isolation_level=None, check_same_thread=False)
    other.execute("CREATE TABLE other (x INTEGER)")
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO other VALUES (1)")
    released = threading.Timer(0.5, other.execute, ["COMMIT"])
    released.start()
    try:
        store = StateStore.open(tmp_path / "state")
    finally:
        released.join()
        other.close()
    try:
        with store.transaction() as tx:
            tx.put("test", "opened", True)
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    finally:
        store.close()


def test_concurrent_writers_on_mysql_lose_no_update(mysql_server, fresh_db):
    url = f"mysql://root@localhost/{fresh_db}?unix_socket={mysql_server.endpoint.root_socket}"
    _run_workers(url)
    store = StateStore.open(url=url)
    try:
        _assert_exact(store)
        assert store.engine.dialect.driver == "pymysql"  # a plain mysql:// means PyMySQL (engine_url)
    finally:
        store.close()
