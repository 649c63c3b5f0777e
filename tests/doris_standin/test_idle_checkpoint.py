"""The stand-in checkpoints DuckDB when idle (``Storage.checkpoint_when_idle``): after writes have
grown the database and none came for a while, never while a writer holds the lock; beside a
transaction left open (a load appended ahead of its commit) nothing is lost, and what was written
survives a restart."""

from __future__ import annotations

import threading
import time

import pytest

from devstack.doris import storage as storage_module
from devstack.doris.query import QueryExecutor
from devstack.doris.storage import Storage, data_ref

DDL = "(id BIGINT NOT NULL, v VARCHAR(8)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1"


@pytest.fixture
def storage(tmp_path, monkeypatch):
    monkeypatch.setattr(storage_module, "CHECKPOINT_IDLE_S", 0.2)
    monkeypatch.setattr(storage_module, "CHECKPOINT_GROWTH_BYTES", 1)
    s = Storage(tmp_path)
    QueryExecutor(s).execute("CREATE DATABASE d", "")
    QueryExecutor(s).execute(f"CREATE TABLE d.a {DDL}", "")
    yield s
    s.close()


def _write(storage: Storage, start: int, rows: int) -> None:
    with storage.transaction() as cur:
        cur.execute(
            f"INSERT INTO {data_ref('d', 'a')} (id, v) SELECT range, 'x' FROM range({start}, {start + rows})"
        )


def _wal_bytes(storage: Storage) -> int:
    wal = storage.path.with_name(storage.path.name + ".wal")
    return wal.stat().st_size if wal.exists() else 0


def test_an_idle_stand_in_checkpoints_what_was_written_and_keeps_it(storage: Storage, tmp_path) -> None:
    _write(storage, 0, 50_000)
    assert _wal_bytes(storage) > 0
    assert not storage.checkpoint_when_idle()  # written just now: not idle yet
    time.sleep(0.3)
    assert storage.checkpoint_when_idle()
    assert _wal_bytes(storage) == 0
    assert not storage.checkpoint_when_idle()  # nothing grew since
    storage.close()
    again = Storage(tmp_path)
    try:
        with again.cursor() as cur:
            assert cur.execute(f"SELECT count(*) FROM {data_ref('d', 'a')}").fetchone() == (50_000,)
    finally:
        again.close()


def test_a_checkpoint_beside_an_open_transaction_loses_none_of_its_rows(storage: Storage, tmp_path) -> None:
    _write(storage, 0, 1_000)
    time.sleep(0.3)
    # a load appended ahead of its commit holds a DuckDB transaction open on its own cursor
    open_cur = storage.con.cursor()
    open_cur.execute("BEGIN TRANSACTION")
    open_cur.execute(f"INSERT INTO {data_ref('d', 'a')} (id, v) VALUES (5000, 'y')")
    storage.checkpoint_when_idle()  # DuckDB 2 checkpoints what is committed beside it, or declines
    open_cur.execute("COMMIT")
    open_cur.close()
    storage.close()
    again = Storage(tmp_path)
    try:
        with again.cursor() as cur:
            assert cur.execute(f"SELECT count(*), max(id) FROM {data_ref('d', 'a')}").fetchone() == (
                1_001,
                5000,
            )
    finally:
        again.close()


def test_no_checkpoint_while_a_writer_holds_the_lock(storage: Storage) -> None:
    _write(storage, 0, 1_000)
    time.sleep(0.3)

    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with storage.lock:
            held.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        assert not storage.checkpoint_when_idle()  # a writer holds the lock: never waited for
    finally:
        release.set()
        holder.join()
    assert storage.checkpoint_when_idle()
    assert _wal_bytes(storage) == 0
