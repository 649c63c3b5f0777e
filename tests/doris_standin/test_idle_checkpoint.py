"""The stand-in checkpoints DuckDB when idle (``Storage.checkpoint_when_idle``): after writes have
grown the database and none came for a while, never while a writer holds the lock; beside a
transaction left open (a load appended ahead of its commit) nothing is lost, and what was written
survives a restart."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from devstack.doris import storage as storage_module
from devstack.doris.query import QueryExecutor
from devstack.doris.storage import Storage, data_ref
from devstack.doris.transactions import TxnManager

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


def test_commits_leave_a_wal_beyond_duckdbs_default_threshold_to_the_idle_checkpoint(storage: Storage) -> None:
    """DuckDB's own checkpoint (at 16 MB of WAL by default) would run in the COMMIT that crossed it,
    under the write lock; the stand-in raises it (``WAL_CHECKPOINT_BYTES``) and checkpoints when idle."""
    for start in range(0, 1_600_000, 100_000):  # ~22 MB of WAL in commits of fewer rows than a row group
        with storage.transaction() as cur:
            cur.execute(f"INSERT INTO {data_ref('d', 'a')} (id, v) SELECT range, 'x' FROM range({start}, {start + 100_000})")
    assert _wal_bytes(storage) > 16 * 2**20  # no commit checkpointed
    time.sleep(0.3)
    assert storage.checkpoint_when_idle()
    assert _wal_bytes(storage) == 0


def test_a_wal_beyond_duckdbs_default_threshold_survives_a_kill_9(tmp_path) -> None:
    """What the commits left in the WAL (no checkpoint since) is replayed after a ``kill -9``."""
    data = tmp_path / "killed"
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from devstack.doris.query import QueryExecutor\n"
        "from devstack.doris.storage import Storage, data_ref\n"
        "s = Storage(Path(sys.argv[1]))\n"
        f"QueryExecutor(s).execute('CREATE DATABASE d', '')\n"
        f"QueryExecutor(s).execute('CREATE TABLE d.a {DDL}', '')\n"
        "for start in range(0, 1_600_000, 100_000):\n"
        "    with s.transaction() as cur:\n"
        "        cur.execute(f\"INSERT INTO {data_ref('d', 'a')} (id, v) SELECT range, 'x' FROM range({start}, {start + 100_000})\")\n"
        "wal = s.path.with_name(s.path.name + '.wal')\n"
        "assert wal.stat().st_size > 16 * 2**20, wal.stat().st_size\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(data)], cwd=str(Path(__file__).resolve().parents[2]),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr
    again = Storage(data)
    try:
        with again.cursor() as cur:
            assert cur.execute(f"SELECT count(*), max(id) FROM {data_ref('d', 'a')}").fetchone() == (1_600_000, 1_599_999)
    finally:
        again.close()


def test_the_ticker_does_not_checkpoint_while_a_load_transaction_runs(storage: Storage) -> None:
    """A snapshot's loads write no DuckDB row until their group's commits: a quiet second between
    those is not idle while their transactions run (``TxnManager.checkpoint_when_idle``)."""
    txns = TxnManager(storage)
    _write(storage, 0, 1_000)
    time.sleep(0.3)
    t = txns.begin("d", "running", "a", two_pc=True)
    assert not txns.checkpoint_when_idle()
    txns.fail(t, "the client gave up")
    assert txns.checkpoint_when_idle()
    assert _wal_bytes(storage) == 0
