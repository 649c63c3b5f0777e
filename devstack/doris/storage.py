"""Durable storage on one embedded DuckDB file: catalog, rows, staging and transaction records.

Layout inside ``<data-dir>/doris.duckdb``:

* ``__standin.dbs`` / ``__standin.kv`` — databases and id counters; a table's definition (catalog
  JSON) is its stored table's DuckDB comment (``__standin.tables`` holds those of data directories
  written before that, :meth:`Storage.save_table`);
* ``__standin.txns`` — one row per transaction (state machine of :mod:`transactions`), with the
  journal ``<data-dir>/txns.<gen>.journal`` holding the states recorded since its last fold;
* ``<data-dir>/staging/<txn>.arrow`` (beside the DuckDB file) — rows of a load, converted to table
  types, waiting for commit: an Arrow IPC file written and fsynced before the load's PRECOMMITTED
  record, deleted only after the transaction that applies or aborts it has committed; a small two-phase
  load's rows (:data:`INLINE_MAX_BYTES`) are instead carried by its PRECOMMITTED journal line, whose
  one ``fdatasync`` makes rows and record durable together, until a journal fold writes them here;
* ``"__data__<db>"."<t>"`` — the stored rows, with hidden ``__DORIS_DELETE_SIGN__`` (and
  ``__DORIS_SEQUENCE_COL__``) on unique tables; tombstones are kept when a sequence column exists so
  that late, lower-sequence rows stay deleted (as Doris does until compaction);
* ``"<db>"."<t>"`` — a view of the visible rows (what SELECT reads); how a load's rows apply to
  the stored ones is :mod:`devstack.doris.merge`;
* ``__standin_is.*`` — materialised ``information_schema`` tables, rebuilt after every DDL.

Why one file and one write lock: data and transaction state change together in a single DuckDB
transaction, so ``kill -9`` at any instant leaves either the old or the new state. A transaction's
state changes that touch no rows — a load's begin (PREPARE), its precommit, an abort — are not
DuckDB statements but lines appended to the transaction journal ``<data-dir>/txns.<gen>.journal``
(:meth:`Storage.journal`; one ``write`` under the transaction manager's lock, not this write lock,
``devstack/doris/transactions.py``, where a DuckDB statement cost ~1 ms of parse,
bind and plan and its ``COMMIT`` a WAL write and fsync): a line is in the file once ``write``
returns, so a ``kill -9`` after it loses nothing, and an ``fdatasync`` after the lock is released and
before the reply that depends on it (:meth:`Storage.sync_journal`, one for all the records written
meanwhile; a begin's record is synced by its load's precommit or abort, or before a reply that names
the PREPARE transaction: ``TxnManager.begin``) makes it as durable against an OS crash as DuckDB's
own commit. A change that applies rows (a commit: its rows and its
VISIBLE record) stays one DuckDB transaction. At start-up a transaction's state is the furthest one
recorded in either place (states only move forward: PREPARE, PRECOMMITTED, COMMITTED, then
VISIBLE or ABORTED); the journal is folded into ``__standin.txns`` (:meth:`TxnManager.fold_journal`
in :mod:`devstack.doris.transactions`) at start-up, when labels expire and every few thousand lines,
in one DuckDB transaction that also moves ``kv['journal']`` to the next generation, whose file then
replaces the old one — a journal of an older generation than ``kv['journal']`` is already folded and
is deleted unread. A begin writes no id counter, since its record holds its id
(:meth:`Storage._load_txn_counter`). A staged file
without a record that holds it (a load that died before its precommit, a deletion that a crash cut
short) is an orphan, removed at start-up. Staging is a file and not a DuckDB table because a load's
``CREATE TABLE AS`` and the catalog churn of creating and dropping a table per load cost DuckDB
more than the conversion itself.

A two-phase load of at least :data:`PREBUILD_MIN_ROWS` rows is also appended to its table ahead of
its commit (:meth:`Storage._prebuild`): once its file is staged, a builder thread runs the ``INSERT``
its commit would run, in a DuckDB transaction of its own left open; the commit, under the lock,
writes the VISIBLE record in that transaction and commits it (rows and record together, as ever),
or rolls it back and merges the staged file when the appended rows are no longer what the commit
would store. Nothing durable depends on the open transaction: it dies with the process, and the
staged file is what a restart finds. So the heavy write of a snapshot chunk happens at load time, in
parallel with other loads, as a BE writes a load's segments before the FE publishes it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from . import crc32
from .catalog import DELETE_SIGN, SEQUENCE_COL, Column, Table
from .merge import (
    StagedKeys,
    append_sql,
    appends_only,
    merge_arrow,
    merge_rows,
    staged_keys,
    staged_keys_arrow,
)
from .types import DorisType, quote_ident, quote_str

META = "__standin"
IS_SCHEMA = "__standin_is"

log = logging.getLogger(__name__)

# Storage.checkpoint_when_idle: no write for this long, and the database grown by this much.
CHECKPOINT_IDLE_S = 1.0
CHECKPOINT_GROWTH_BYTES = 16 * 2**20
# DuckDB's own checkpoint_threshold: the WAL's size at which a COMMIT checkpoints (Storage.__init__).
WAL_CHECKPOINT_BYTES = 128 * 2**20

# A load of at least this many rows is appended to its table ahead of its commit (Storage._prebuild);
# a smaller one costs its commit a few milliseconds of DuckDB, less than holding a DuckDB transaction
# open. The environment variable lets a test run every load through that path.
PREBUILD_MIN_ROWS = int(os.environ.get("DORIS_STANDIN_PREBUILD_MIN_ROWS") or 50_000)


# A load's staged rows of at most 1/64 of this many bytes are also kept in memory until its commit or
# abort (Storage.read_staged), while all those kept hold at most this many.
STAGED_ROWS_KEPT_BYTES = 256 << 20

# A two-phase load whose converted rows hold at most this many bytes is staged inline: its rows ride in
# its PRECOMMITTED journal line (Storage.write_staging, Storage.journal) rather than in a staged file, so
# the journal's one fdatasync makes both durable; a journal fold writes the rows of those still waiting
# for their commit to staged files first (Storage.fold_journal). Small enough that a journal of
# FOLD_AFTER_BYTES stays quick to read at start-up.
INLINE_MAX_BYTES = 16 << 10
# The journal is folded (by the ticker, devstack/doris/transactions.py) once it holds this many bytes.
FOLD_AFTER_BYTES = 32 << 20

# The staged file's schema metadata key under which its rows' key facts are kept (merge.StagedKeys).
_KEYS_META = b"standin.staged_keys"

# ``__standin.txns``'s columns, in order (a journal fold inserts its rows as one Arrow table).
_TXN_SCHEMA = pa.schema([
    ("txn_id", pa.int64()), ("db", pa.utf8()), ("label", pa.utf8()), ("tbl", pa.utf8()), ("status", pa.utf8()),
    ("reason", pa.utf8()), ("two_pc", pa.bool_()), ("prepare_ms", pa.int64()), ("precommit_ms", pa.int64()),
    ("commit_ms", pa.int64()), ("finish_ms", pa.int64()), ("staged", pa.bool_()), ("visible_at_ms", pa.int64()),
])


def data_schema(db: str) -> str:
    return f"__data__{db}"


def data_ref(db: str, name: str) -> str:
    return f"{quote_ident(data_schema(db))}.{quote_ident(name)}"


def view_ref(db: str, name: str) -> str:
    return f"{quote_ident(db)}.{quote_ident(name)}"


def legacy_staging_ref(txn_id: int) -> str:
    """Where data directories of earlier stand-in versions staged a load (a DuckDB table)."""
    return f"{META}.{quote_ident(f'stg_{txn_id}')}"


class Storage:
    """Owns the DuckDB database; every mutation happens under :attr:`lock`."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.path = data_dir / "doris.duckdb"
        self.con = duckdb.connect(str(self.path))
        # Text columns are stored without DuckDB's dictionary/FSST compression: choosing and applying it
        # was about half of the CPU of writing a snapshot chunk's rows (the appends of Storage._prebuild,
        # ~1.1-1.5 CPU-s of 5M rows of bench/snapshot_e2e.py's table), for a file ~2x larger on that
        # table (integers, decimals and dates keep their compression). docs/performance.md has the pairs.
        self.con.execute("SET disabled_compression_methods = 'dict_fsst'")
        # DuckDB checkpoints by itself once its WAL holds this much, in the COMMIT that crossed it, under
        # the write lock every commit waits for; its 16 MB default put two ~0.1-0.15 s checkpoints in the
        # commits of a 300-table snapshot (~37 MB of WAL). Raised, the checkpoint is taken when the
        # stand-in is idle and no load runs (checkpoint_when_idle, asked by the transaction ticker) or at
        # close; a WAL left by a kill -9 is replayed at start-up as before, only longer.
        # docs/performance.md has the pairs.
        self.con.execute(f"SET checkpoint_threshold = '{WAL_CHECKPOINT_BYTES // 2**20}MB'")
        self.lock = threading.RLock()
        self._counters: dict[str, int] = {}
        # Seconds the write lock was held by transaction() and locked(), and how many times:
        # the stand-in's serial part, for benchmarks (``GET /_standin/txns``, devstack/doris/admin.py).
        self.lock_held_s = 0.0
        self.lock_holds = 0
        # When the last DuckDB transaction under the write lock committed (monotonic), and the database's bytes on disk after
        # the last checkpoint: checkpoint_when_idle's inputs.
        self.last_write = time.monotonic()
        self._checkpointed_bytes = 0
        self.data_dir = data_dir
        # The transaction journal (see the module doc): its generation and open file, opened at the
        # end of start-up; the records of the files read at start-up until TxnManager takes them.
        self._journal_gen = 0
        self._journal_fd: int | None = None
        # Records written to the journal, and how many of them are known on the disk (fdatasynced,
        # or folded into DuckDB); the sync runs outside the write lock, one at a time (_sync_lock,
        # which a fold's change of file also takes), so one fdatasync covers every record written
        # before it began.
        self._journal_written = 0
        self._journal_synced = 0
        self._sync_lock = threading.Lock()
        self._journal_replay: list[dict[str, Any]] = []
        self.staging_dir = data_dir / "staging"
        self.staging_dir.mkdir(exist_ok=True)
        self._unstage_after_commit: list[int] = []
        # small loads' staged rows as written, by transaction id, until their file goes (read_staged):
        # their commit reads them here rather than from the file, and their bytes in all
        self._staged_rows: dict[int, pa.Table] = {}
        self._staged_rows_bytes = 0
        # loads staged inline (INLINE_MAX_BYTES; their rows are in _staged_rows, whatever the budget):
        # their rows encoded for the PRECOMMITTED record not yet written, and the loads whose
        # PRECOMMITTED record, in the current journal, is where their rows are durable
        self._inline_pending: dict[int, str] = {}
        self._inline_held: set[int] = set()
        self.journal_bytes = 0  # bytes appended to the current journal file
        # loads appended ahead of their commit, by transaction id (_prebuild, publish_prebuilt): done,
        # and being appended (by _builders, after the load has replied)
        self._prebuilt: dict[int, _Prebuilt] = {}
        self._building: dict[int, Future[None]] = {}
        self._prebuilt_lock = threading.Lock()
        self._builders = ThreadPoolExecutor(max_workers=2, thread_name_prefix="standin-prebuild")
        # run under the lock once the current transaction has committed (never when it rolls back)
        self._after_commit: list[Callable[[], None]] = []
        self._legacy_staging: set[int] = set()
        self.dbs: dict[str, int] = {}
        self.tables: dict[tuple[str, str], Table] = {}
        # tables whose definition was read from a ``__standin.tables`` row (save_table)
        self._catalog_rows: set[tuple[str, str]] = set()
        # the materialised information_schema is rebuilt when a query next reads it, not at every DDL:
        # a rebuild covers every table, so creating n tables cost n rebuilds of all of them (quadratic,
        # seconds per hundred tables: a cost of the stand-in, not of Doris, in `bench/estate.py`);
        # the names of its tables a DDL made stale
        self._information_schema_stale: set[str] = set()
        # Per unique table, bounds that every stored row's first key lies within (an integer key's
        # min and max, or None: no rows), kept under the lock and only ever widened or forgotten, so
        # they are always a superset of what is stored, committed or not (_outside_envelope,
        # _widen_envelope); a load whose keys lie outside them is appended without asking DuckDB
        # whether stored rows lie within its bounds. _NO_ENVELOPE: the table holds NULL keys.
        # unguarded_appends: commits that appended so.
        self._envelopes: dict[tuple[str, str], tuple[int, int] | None | object] = {}
        self.unguarded_appends = 0
        # Per unique table, how many more merges go without merge_arrow's guarded INSERT, since the
        # last one found stored rows within its load's bounds (_GUARD_BACKOFF); how many went so.
        self._guard_skips: dict[tuple[str, str], int] = {}
        self.guards_skipped = 0
        # CRC32: Doris's (and MySQL's) CRC-32 of a string's bytes, as a BIGINT. DuckDB has none; a
        # function over whole Arrow arrays (devstack/doris/crc32.py).
        crc32.warm_up()
        self.con.create_function("crc32", crc32.crc32_arrow, ["VARCHAR"], "BIGINT", type="arrow",
                                 null_handling="special")
        with self.cursor() as cur:
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {META}")
            cur.execute(f"CREATE SCHEMA IF NOT EXISTS {IS_SCHEMA}")
            # Doris functions DuckDB lacks, as macros (a SQL macro runs vectorised; a Python UDF per
            # row would make a checksum over millions of rows slow). CONV: the base 16 → 10 case
            # verification uses; other bases fail as an unsupported call rather than answer wrongly.
            cur.execute("CREATE OR REPLACE MACRO conv(num, from_base, to_base) AS CASE "
                        "WHEN num IS NULL THEN NULL "
                        "WHEN from_base = 16 AND to_base = 10 THEN CAST(CAST('0x' || num AS UBIGINT) AS VARCHAR) "
                        "ELSE error('conv(): the Doris stand-in converts base 16 to base 10 only') END")
            cur.execute(f"CREATE TABLE IF NOT EXISTS {META}.kv (k VARCHAR PRIMARY KEY, v BIGINT)")
            cur.execute(f"CREATE TABLE IF NOT EXISTS {META}.dbs (name VARCHAR PRIMARY KEY, id BIGINT)")
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {META}.tables (db VARCHAR, name VARCHAR, def VARCHAR, "
                "PRIMARY KEY (db, name))"
            )
            cur.execute(
                f"CREATE TABLE IF NOT EXISTS {META}.txns (txn_id BIGINT PRIMARY KEY, db VARCHAR, "
                "label VARCHAR, tbl VARCHAR, status VARCHAR, reason VARCHAR, two_pc BOOLEAN, "
                "prepare_ms BIGINT, precommit_ms BIGINT, commit_ms BIGINT, finish_ms BIGINT, "
                "staged BOOLEAN, visible_at_ms BIGINT)"
            )
            for (name,) in cur.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE schema_name = ? AND table_name LIKE 'stg_%'",
                    [META]).fetchall():
                with contextlib.suppress(ValueError):
                    self._legacy_staging.add(int(name[4:]))
            for (name, dbid) in cur.execute(f"SELECT name, id FROM {META}.dbs").fetchall():
                self.dbs[name] = dbid
            for (db, name, d) in cur.execute(f"SELECT db, name, def FROM {META}.tables").fetchall():
                self.tables[(db, name)] = Table.from_json(json.loads(d))
                self._catalog_rows.add((db, name))
            # a definition held by its stored table's comment (save_table) wins over a row of the same name
            for (d,) in cur.execute("SELECT comment FROM duckdb_tables() WHERE starts_with(schema_name, ?) "
                                    "AND starts_with(comment, '{')", [data_schema("")]).fetchall():
                t = Table.from_json(json.loads(d))
                self.tables[(t.db, t.name)] = t
            self._load_id_counter(cur)
            self._load_txn_counter(cur)
            self._read_journal(cur)
            self._refresh_information_schema(cur)

    # ---- plumbing ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def cursor(self) -> Iterator[duckdb.DuckDBPyConnection]:
        cur = self.con.cursor()
        try:
            yield cur
        finally:
            cur.close()

    @contextlib.contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """Write lock + one DuckDB transaction; rolls back on any exception. Staged files the
        transaction dropped are deleted once it has committed (never when it rolls back), after
        the lock is released: no record holds them any more, so nothing under the lock reads them."""
        with self.lock, self._held(), self.cursor() as cur:
            outer, outer_hooks = self._unstage_after_commit, self._after_commit
            self._unstage_after_commit, self._after_commit = [], []
            cur.execute("BEGIN TRANSACTION")
            try:
                yield cur
            except BaseException:
                self._unstage_after_commit, self._after_commit = outer, outer_hooks
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")
            self.last_write = time.monotonic()
            dropped, self._unstage_after_commit = self._unstage_after_commit, outer
            hooks, self._after_commit = self._after_commit, outer_hooks
            for hook in hooks:
                hook()
        for txn_id in dropped:
            self._forget_staged_rows(txn_id)
            self.staging_path(txn_id).unlink(missing_ok=True)

    def after_commit(self, hook: Callable[[], None]) -> None:
        """Run ``hook`` once the caller's :meth:`transaction` has committed (not if it rolls back)."""
        self._after_commit.append(hook)

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The write lock alone, for a change that must not run beside a DuckDB transaction: an
        abort, the ticker's work (``TxnManager._journaled``). Counted with the DuckDB transactions'
        holdings."""
        with self.lock, self._held():
            yield

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        """Count the write lock's holding (the caller holds the lock)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.lock_held_s += time.perf_counter() - start
            self.lock_holds += 1

    def _disk_bytes(self) -> int:
        wal = self.path.with_name(self.path.name + ".wal")
        return sum(f.stat().st_size for f in (self.path, wal) if f.exists())

    def checkpoint_when_idle(self) -> bool:
        """Checkpoint DuckDB when nothing was written for :data:`CHECKPOINT_IDLE_S` and the
        database grew by :data:`CHECKPOINT_GROWTH_BYTES` since the last checkpoint; whether it did.

        Why: after a large table's loads (each 131,072-row chunk appended ahead of its commit,
        :meth:`_prebuild`, leaving a short last row group), DuckDB's next checkpoint merges and
        rewrites nearly the whole table: ~1.3-1.5 CPU-s and ~300 MB written after 5M rows. Left to
        DuckDB's automatic checkpoint (its WAL's size), that came in the middle of whatever the
        stand-in did next — in ``make bench``, the 300-table run after the 5M-row one. A Doris BE
        compacts a load's segments in the background; this is the stand-in's background: a moment
        with no writes (the ticker asks, ``transactions.Ticker``). A writer holding the lock is
        never waited for (tried again at the next tick); DuckDB checkpoints what is committed
        beside a transaction left open, whose rows reach the WAL at its commit. A write that
        arrives meanwhile waits for the checkpoint, as for any other holder of the lock."""
        if time.monotonic() - self.last_write < CHECKPOINT_IDLE_S:
            return False
        if self._disk_bytes() - self._checkpointed_bytes < CHECKPOINT_GROWTH_BYTES:
            return False
        if not self.lock.acquire(blocking=False):
            return False
        try:
            with self.cursor() as cur:
                cur.execute("CHECKPOINT")
        except duckdb.Error as e:  # DuckDB declined (a conflicting transaction): the next idle moment
            log.debug("idle checkpoint not taken now: %s", e)
            return False
        finally:
            self.lock.release()
        self._checkpointed_bytes = self._disk_bytes()
        log.info("idle checkpoint: %.0f MB on disk", self._checkpointed_bytes / 2**20)
        return True

    # ---- the transaction journal ----------------------------------------------------------------
    def _journal_path(self, gen: int) -> Path:
        return self.data_dir / f"txns.{gen}.journal"

    def _read_journal(self, cur: duckdb.DuckDBPyConnection) -> None:
        """At start-up: read the journal of generation ``kv['journal']`` (and any later one), delete
        older ones (already folded), and open the current one for appending."""
        row = cur.execute(f"SELECT v FROM {META}.kv WHERE k = 'journal'").fetchall()  # (read whole: see _staged)
        self._journal_gen = row[0][0] if row else 0
        found: list[tuple[int, Path]] = []
        for path in self.data_dir.glob("txns.*.journal"):
            gen = path.name.split(".")[1]
            if gen.isdigit():
                found.append((int(gen), path))
        for gen, path in sorted(found):
            if gen < self._journal_gen:
                path.unlink(missing_ok=True)
                continue
            self._journal_gen = gen
            for line in path.read_bytes().splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line an OS crash cut short: its write never returned, nobody was told
                inline = rec.pop("rows", None)
                if inline is not None:  # a load staged inline: its rows, until a fold spills them to a file
                    rows = _decode_rows(inline)
                    txn_id = int(rec["txn_id"])
                    self._forget_staged_rows(txn_id)
                    self._staged_rows[txn_id] = rows
                    self._staged_rows_bytes += rows.nbytes
                    self._inline_held.add(txn_id)
                self._journal_replay.append(rec)
                self._counters["txn"] = max(self._counters["txn"], int(rec["txn_id"]))
        self._journal_fd = os.open(self._journal_path(self._journal_gen), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.journal_bytes = os.fstat(self._journal_fd).st_size

    def journal_records(self) -> list[dict[str, Any]]:
        """The journal's records read at start-up, oldest first (handed over once)."""
        recs, self._journal_replay = self._journal_replay, []
        return recs

    def journal(self, rec: dict[str, Any], *, staged_inline: bool = False) -> None:
        """Record a transaction's state (a ``__standin.txns`` row as a dict) in the journal; the
        caller holds the transaction manager's lock (``TxnManager.lock``), as does the fold. One
        ``write``: the record is in the file once it returns, for any later reader and across a
        ``kill -9``. The caller calls :meth:`sync_journal` once it has released the lock and before
        it answers (or deletes what the record says is gone).

        ``staged_inline`` (a PRECOMMITTED record): the load's rows, if it staged them inline
        (:meth:`write_staging`), ride in the record, and from then on the journal is what holds them."""
        assert self._journal_fd is not None
        txn_id = int(rec["txn_id"])
        inline = self._inline_pending.get(txn_id) if staged_inline else None
        if inline is not None:
            rec = {**rec, "rows": inline}
        line = json.dumps(rec, separators=(",", ":")).encode() + b"\n"
        _write_all(self._journal_fd, line)
        self._journal_written += 1
        self.journal_bytes += len(line)
        if inline is not None:
            with self._prebuilt_lock:
                if self._inline_pending.pop(txn_id, None) is not None:
                    self._inline_held.add(txn_id)

    def inline_staged(self, txn_id: int) -> bool:
        """Whether load ``txn_id`` staged its rows inline and they wait for its PRECOMMITTED record."""
        return txn_id in self._inline_pending

    def sync_journal(self) -> None:
        """Put every record written so far on the disk (``fdatasync``: as durable against an OS crash
        as DuckDB's commit), outside the write lock: a thread that finds its records already synced
        by another's ``fdatasync`` (a group) returns at once."""
        target = self._journal_written
        if self._journal_synced >= target:
            return
        with self._sync_lock:
            if self._journal_synced >= target or self._journal_fd is None:
                return
            upto = self._journal_written  # every record counted here was written before this sync
            os.fdatasync(self._journal_fd)
            self._journal_synced = max(self._journal_synced, upto)

    def fold_journal(self, rows: list[dict[str, Any]], delete: list[int]) -> None:
        """Write ``rows`` (the current state of every transaction the journal recorded) into
        ``__standin.txns`` and delete the rows of ``delete`` (expired labels), in one DuckDB
        transaction that also moves ``kv['journal']`` to the next generation; once it has committed,
        appends go to the next generation's (empty) file and the old one is deleted. Under the lock.

        First the rows of loads staged inline whose PRECOMMITTED record is in this journal are
        written to staged files (fsynced): once the fold commits, the journal that held them goes."""
        self._spill_inline()
        with self.transaction() as cur:
            ids = sorted({int(r["txn_id"]) for r in rows} | {int(i) for i in delete})
            if ids:
                cur.execute(f"DELETE FROM {META}.txns WHERE txn_id IN ({','.join(str(i) for i in ids)})")
            if rows:
                view = f"__fold_{threading.get_ident()}"
                cur.register(view, pa.Table.from_pylist(rows, schema=_TXN_SCHEMA))
                try:
                    cur.execute(f"INSERT INTO {META}.txns SELECT * FROM {view}")
                finally:
                    cur.unregister(view)
            if delete:  # the rows deleted may have been the ones that recorded the last id issued
                cur.execute(f"INSERT OR REPLACE INTO {META}.kv VALUES ('txn', ?)", [self._counters["txn"]])
            cur.execute(f"INSERT OR REPLACE INTO {META}.kv VALUES ('journal', ?)", [self._journal_gen + 1])
        old, self._journal_gen = self._journal_gen, self._journal_gen + 1
        with self._sync_lock:  # every record written so far is in DuckDB now
            fd, self._journal_fd = self._journal_fd, os.open(
                self._journal_path(self._journal_gen), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
            self._journal_synced = self._journal_written
            self.journal_bytes = 0
            if fd is not None:
                os.close(fd)
        self._journal_path(old).unlink(missing_ok=True)

    def _spill_inline(self) -> None:
        """Write the rows the current journal holds (loads staged inline, precommitted) to staged files."""
        with self._prebuilt_lock:  # a commit forgets the rows it applied under it (_forget_staged_rows)
            for txn_id in sorted(self._inline_held):
                rows = self._staged_rows.get(txn_id)
                if rows is not None:
                    self._write_staging_file(txn_id, rows)
            self._inline_held.clear()

    def next_txn_id(self) -> int:
        """The next transaction id, under the transaction manager's lock (``TxnManager.lock``); not
        written by itself (see :meth:`_load_txn_counter`)."""
        value = self._counters["txn"] + 1
        self._counters["txn"] = value
        return value

    def _load_txn_counter(self, cur: duckdb.DuckDBPyConnection) -> None:
        """The last transaction id issued, as recorded: the larger of ``kv['txn']`` and the largest
        ``txn_id`` in ``__standin.txns`` (999 when neither exists: ids start at 1000); the journal's
        records, read next (:meth:`_read_journal`), may raise it.

        A begin writes only its journal record — the record is what holds its id — so the counter in
        ``kv`` is written only when rows go (:meth:`fold_journal`, in the same transaction): ids are
        never reused, even after the newest transactions' rows expired and the process restarted.
        """
        kv = cur.execute(f"SELECT v FROM {META}.kv WHERE k = 'txn'").fetchall()
        top = cur.execute(f"SELECT max(txn_id) FROM {META}.txns").fetchall()[0][0]
        self._counters["txn"] = max(999, kv[0][0] if kv else 0, top or 0)

    def _load_id_counter(self, cur: duckdb.DuckDBPyConnection) -> None:
        """The last database or table id issued, as recorded: the largest of ``kv['id']`` and the ids
        the catalog's databases and table definitions hold (9999 when none exists: ids start at 10000).

        A CREATE writes no counter — the definition it writes (:meth:`save_table`) holds its id, as a
        transaction's record holds a transaction's (:meth:`_load_txn_counter`): an UPDATE of ``kv`` was
        a fifth of a CREATE TABLE's DuckDB statements. ``kv['id']`` is written when definitions go
        (:meth:`_record_id_counter`, in the DROP's transaction), so ids are never reused, even after
        the newest table was dropped and the process restarted.
        """
        kv = cur.execute(f"SELECT v FROM {META}.kv WHERE k = 'id'").fetchall()
        self._counters["id"] = max(9999, kv[0][0] if kv else 0, *self.dbs.values(),
                                   *(t.table_id for t in self.tables.values()))

    def next_id(self) -> int:
        """The next database or table id, under the lock; not written by itself (see :meth:`_load_id_counter`)."""
        value = self._counters["id"] + 1
        self._counters["id"] = value
        return value

    def _record_id_counter(self, cur: duckdb.DuckDBPyConnection) -> None:
        """Write the last id issued to ``kv['id']`` in the caller's transaction (one that deletes catalog rows)."""
        cur.execute(f"INSERT OR REPLACE INTO {META}.kv VALUES ('id', ?)", [self._counters["id"]])

    def checkpoint(self) -> None:
        with self.lock, contextlib.suppress(duckdb.Error):
            self.con.execute("CHECKPOINT")

    def close(self) -> None:
        with self.lock:
            self._builders.shutdown(wait=True, cancel_futures=True)
            for txn_id in list(self._prebuilt) + list(self._building):
                self.drop_prebuilt(txn_id)
            with contextlib.suppress(duckdb.Error):
                self.con.execute("CHECKPOINT")
            self.con.close()
            with self._sync_lock:
                if self._journal_fd is not None:
                    os.fdatasync(self._journal_fd)
                    os.close(self._journal_fd)
                    self._journal_fd = None

    # ---- catalog lookups --------------------------------------------------------------------
    def table(self, db: str, name: str) -> Table | None:
        return self.tables.get((db, name))

    def db_exists(self, db: str) -> bool:
        return db in self.dbs

    # ---- catalog persistence ----------------------------------------------------------------
    def save_table(self, cur: duckdb.DuckDBPyConnection, t: Table) -> None:
        """Write ``t``'s definition as its stored table's DuckDB comment, in the caller's transaction:
        the table and its definition are created, altered, renamed and dropped together. A row of
        ``__standin.tables`` (the primary-keyed text of ~1 KB that data directories written before
        held) cost a CREATE TABLE ~0.4 ms of DuckDB's CPU, a comment ~0.15 ms; such a row, read at
        start-up, is deleted once its table's definition is written here (the comment wins anyway)."""
        text = json.dumps(t.to_json())  # ASCII (ensure_ascii): only its quotes need doubling
        cur.execute(f"COMMENT ON TABLE {data_ref(t.db, t.name)} IS '{text.replace(chr(39), chr(39) * 2)}'")
        key = (t.db, t.name)
        if key in self._catalog_rows:
            cur.execute(f"DELETE FROM {META}.tables WHERE db = ? AND name = ?", list(key))
            self.after_commit(lambda: self._catalog_rows.discard(key))

    def rebuild_view(self, cur: duckdb.DuckDBPyConnection, t: Table) -> None:
        cols = ", ".join(quote_ident(c.name) for c in t.columns)
        where = f" WHERE {quote_ident(DELETE_SIGN)} = 0" if t.is_unique else ""
        cur.execute(f"CREATE OR REPLACE VIEW {view_ref(t.db, t.name)} AS SELECT {cols} "
                    f"FROM {data_ref(t.db, t.name)}{where}")

    def create_database(self, cur: duckdb.DuckDBPyConnection, name: str) -> None:
        dbid = self.next_id()
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(name)}")
        cur.execute(f"CREATE SCHEMA IF NOT EXISTS {quote_ident(data_schema(name))}")
        cur.execute(f"INSERT OR REPLACE INTO {META}.dbs VALUES (?, ?)", [name, dbid])
        self.dbs[name] = dbid

    def drop_database(self, cur: duckdb.DuckDBPyConnection, name: str) -> None:
        for (db, tname) in [k for k in self.tables if k[0] == name]:
            self.drop_table(cur, db, tname)
        cur.execute(f"DROP SCHEMA IF EXISTS {quote_ident(name)} CASCADE")
        cur.execute(f"DROP SCHEMA IF EXISTS {quote_ident(data_schema(name))} CASCADE")
        cur.execute(f"DELETE FROM {META}.dbs WHERE name = ?", [name])
        self._record_id_counter(cur)
        self.dbs.pop(name, None)

    def create_table(self, cur: duckdb.DuckDBPyConnection, t: Table) -> None:
        t.table_id = self.next_id()
        defs = [f"{quote_ident(c.name)} {c.dtype.duck()}" for c in t.columns]
        if t.is_unique:
            defs.append(f"{quote_ident(DELETE_SIGN)} TINYINT DEFAULT 0")
            if t.sequence_type:
                defs.append(f"{quote_ident(SEQUENCE_COL)} {DorisType.parse(t.sequence_type).duck()}")
        cur.execute(f"CREATE TABLE {data_ref(t.db, t.name)} ({', '.join(defs)})")
        # A new table holds no rows: its envelope is known empty (None), so its first load is appended
        # without asking DuckDB for the table's key bounds (Storage.merge): a statement per table saved
        # in a snapshot of many small tables. Should this transaction roll back, the entry is still a
        # superset of what is stored (nothing), and a table created again sets it afresh.
        self._envelopes[(t.db, t.name)] = None
        self.save_table(cur, t)
        self.rebuild_view(cur, t)
        self.tables[(t.db, t.name)] = t

    def drop_table(self, cur: duckdb.DuckDBPyConnection, db: str, name: str) -> None:
        cur.execute(f"DROP VIEW IF EXISTS {view_ref(db, name)}")
        cur.execute(f"DROP TABLE IF EXISTS {data_ref(db, name)}")
        self._envelopes.pop((db, name), None)
        cur.execute(f"DELETE FROM {META}.tables WHERE db = ? AND name = ?", [db, name])
        self._record_id_counter(cur)
        self.tables.pop((db, name), None)

    def truncate_table(self, cur: duckdb.DuckDBPyConnection, t: Table) -> None:
        cur.execute(f"DELETE FROM {data_ref(t.db, t.name)}")

    # ---- information_schema -----------------------------------------------------------------
    def _refresh_information_schema(self, cur: duckdb.DuckDBPyConnection,
                                    only: frozenset[str] = frozenset({"SCHEMATA", "TABLES", "COLUMNS"})) -> None:
        """Rebuild the materialised information_schema tables (``only`` these) from the catalog."""
        schemata = {
            "CATALOG_NAME": [], "SCHEMA_NAME": [], "DEFAULT_CHARACTER_SET_NAME": [],
            "DEFAULT_COLLATION_NAME": [], "SQL_PATH": [], "DEFAULT_ENCRYPTION": [],
        }
        for name in sorted(["information_schema", "mysql", *self.dbs]):
            for k, v in zip(schemata, ["internal", name, "utf8mb4", "utf8mb4_0900_bin", None, "NO"], strict=True):
                schemata[k].append(v)
        tables: dict[str, list[Any]] = {k: [] for k in (
            "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "TABLE_TYPE", "ENGINE", "VERSION", "ROW_FORMAT",
            "TABLE_ROWS", "TABLE_COLLATION", "TABLE_COMMENT")}
        columns: dict[str, list[Any]] = {k: [] for k in (
            "TABLE_CATALOG", "TABLE_SCHEMA", "TABLE_NAME", "COLUMN_NAME", "ORDINAL_POSITION", "COLUMN_DEFAULT",
            "IS_NULLABLE", "DATA_TYPE", "CHARACTER_MAXIMUM_LENGTH", "CHARACTER_OCTET_LENGTH",
            "NUMERIC_PRECISION", "NUMERIC_SCALE", "DATETIME_PRECISION", "CHARACTER_SET_NAME",
            "COLLATION_NAME", "COLUMN_TYPE", "COLUMN_KEY", "EXTRA", "PRIVILEGES", "COLUMN_COMMENT",
            "COLUMN_SIZE", "DECIMAL_DIGITS", "GENERATION_EXPRESSION", "SRS_ID")}
        numeric_precision = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19, "LARGEINT": 39,
                             "FLOAT": 12, "DOUBLE": 22}
        for (db, name), t in sorted(self.tables.items()) if only & {"TABLES", "COLUMNS"} else ():
            for k, v in zip(tables, ["internal", db, name, "BASE TABLE", "Doris", None, None, 0,
                                     "utf-8", t.comment], strict=True):
                tables[k].append(v)
            for pos, c in enumerate(t.columns, 1):
                d = c.dtype
                prec = d.precision if d.name == "DECIMALV3" else numeric_precision.get(d.name)
                row = [
                    "internal", db, name, c.name, pos, c.default, "YES" if c.nullable else "NO",
                    d.data_type(), d.char_max_length(), d.char_max_length(), prec,
                    d.scale if d.name == "DECIMALV3" else (0 if d.name in numeric_precision and d.name not in ("FLOAT", "DOUBLE") else None),
                    d.precision if d.name == "DATETIMEV2" else None,
                    "utf8mb4" if d.is_string() else None, "utf8mb4_0900_bin" if d.is_string() else None,
                    d.column_type(), ("UNI" if t.is_unique else "DUP") if c.is_key else "", "",
                    "SELECT", c.comment, d.char_max_length() or prec, d.scale, None, None,
                ]
                for k, v in zip(columns, row, strict=True):
                    columns[k].append(v)
        for tname, data, types in (
            ("SCHEMATA", schemata, None),
            ("TABLES", tables, {"TABLE_ROWS": pa.int64()}),
            ("COLUMNS", columns, {"ORDINAL_POSITION": pa.int64(), "CHARACTER_MAXIMUM_LENGTH": pa.int64(),
                                  "CHARACTER_OCTET_LENGTH": pa.int64(), "NUMERIC_PRECISION": pa.int64(),
                                  "NUMERIC_SCALE": pa.int64(), "DATETIME_PRECISION": pa.int64(),
                                  "COLUMN_SIZE": pa.int64(), "DECIMAL_DIGITS": pa.int64(), "SRS_ID": pa.int64()}),
        ):
            if tname not in only:
                continue
            fields = [pa.field(k, (types or {}).get(k, pa.utf8())) for k in data]
            arrow = pa.table({k: pa.array(v, type=f.type) for (k, v), f in zip(data.items(), fields, strict=True)})
            view = f"__is_{tname}_{threading.get_ident()}"
            cur.register(view, arrow)
            cur.execute(f'CREATE OR REPLACE TABLE {IS_SCHEMA}."{tname}" AS SELECT * FROM {view}')
            cur.unregister(view)

    def after_ddl(self, cur: duckdb.DuckDBPyConnection, *, only_created: bool = False) -> None:  # noqa: ARG002
        """After a DDL, in its transaction: information_schema is rebuilt when next read, and the
        key envelopes are asked afresh — all of them, since a DDL may rename, rewrite or recreate
        a table, unless the DDL only created tables or databases (``only_created``): those changed
        no stored table, and :meth:`create_table` sets a new table's own entry (empty). A snapshot's
        CREATE TABLEs run beside the loads of tables created before them, whose envelopes stay."""
        self._information_schema_stale = {"SCHEMATA", "TABLES", "COLUMNS"}
        if not only_created:
            self._envelopes.clear()

    def fresh_information_schema(self, sql: str) -> None:
        """Before a query (``sql``, as DuckDB runs it): rebuild the materialised information_schema
        tables it reads that a DDL changed since their last rebuild (``SCHEMATA`` alone, which a
        database check reads, costs nothing of the tables)."""
        wanted = {n for n in self._information_schema_stale if f'"{n}"' in sql}
        if not wanted:
            return
        with self.transaction() as cur:
            wanted &= self._information_schema_stale
            if wanted:
                self._refresh_information_schema(cur, frozenset(wanted))
                self._information_schema_stale -= wanted

    # ---- loads: staging and merge -----------------------------------------------------------
    def staging_path(self, txn_id: int) -> Path:
        return self.staging_dir / f"{txn_id}.arrow"

    def write_staging(self, txn_id: int, rows: pa.Table, table: Table | None = None, *, ahead: bool = False,
                      inline: bool = False) -> None:
        """Persist a load's converted rows (before its PRECOMMITTED record: see the module doc).

        With ``table`` (a unique table), what its commit's merge asks of these rows alone — their
        key bounds, whether their keys are distinct, how many — is computed here, while the load
        holds no lock, and kept in the file's schema metadata (``merge.StagedKeys``): a commit
        holds the write lock that every other commit waits for. For the same
        reason, with ``ahead`` (a two-phase load, whose commit comes later), a large load's rows are
        then appended to the table ahead of the commit (:meth:`_prebuild`).

        With ``inline`` (a two-phase load, which writes a PRECOMMITTED record next), rows of at most
        :data:`INLINE_MAX_BYTES` are not written to a file: they are kept in memory and carried by
        that record (:meth:`journal`), so one ``fdatasync`` — the journal's, which the precommit
        pays anyway — makes them durable, instead of a file's, its directory's and the journal's."""
        if table is not None and table.is_unique:
            facts = staged_keys_arrow(table, rows)
            if facts is None:
                view = f"stg_keys_{txn_id}"
                with self.cursor() as cur:
                    cur.register(view, rows)
                    try:
                        facts = staged_keys(cur, table, view)
                    finally:
                        cur.unregister(view)
            if facts is not None:
                rows = rows.replace_schema_metadata({**(rows.schema.metadata or {}), _KEYS_META: facts.to_json()})
        else:
            facts = None
        prebuild = ahead and table is not None and rows.num_rows >= PREBUILD_MIN_ROWS
        if inline and not prebuild and rows.nbytes <= INLINE_MAX_BYTES:
            encoded = _encode_rows(rows)
            with self._prebuilt_lock:
                self._forget_staged_rows_locked(txn_id)
                self._staged_rows[txn_id] = rows
                self._staged_rows_bytes += rows.nbytes
                self._inline_pending[txn_id] = encoded
            return
        self._write_staging_file(txn_id, rows)
        if rows.nbytes <= STAGED_ROWS_KEPT_BYTES // 64:
            with self._prebuilt_lock:
                if self._staged_rows_bytes + rows.nbytes <= STAGED_ROWS_KEPT_BYTES and txn_id not in self._staged_rows:
                    self._staged_rows[txn_id] = rows
                    self._staged_rows_bytes += rows.nbytes
        if prebuild:
            assert table is not None
            with self._prebuilt_lock:
                self._building[txn_id] = self._builders.submit(self._prebuild, txn_id, rows, table, facts)

    def _write_staging_file(self, txn_id: int, rows: pa.Table) -> None:
        """Write ``rows`` as load ``txn_id``'s staged file: whole and fsynced, then renamed into place."""
        path = self.staging_path(txn_id)
        tmp = path.with_suffix(".tmp")
        # Built in memory and written once: an IPC writer on a file makes a system call per buffer
        # (~40 for a 2,000-row load of a few columns), each giving up the GIL that other requests'
        # threads then contend for.
        buffer = pa.BufferOutputStream()
        with ipc.new_file(buffer, rows.schema) as writer:
            writer.write_table(rows)
        _write_durably(tmp, buffer.getvalue())
        os.replace(tmp, path)
        _fsync(self.staging_dir)

    def _prebuild(self, txn_id: int, rows: pa.Table, table: Table, facts: StagedKeys | None) -> None:
        """Append a large load's rows to its table in a DuckDB transaction of their own, left open
        until the load's commit (:meth:`publish_prebuilt`) or abort (:meth:`discard_staging`). On a
        builder thread, from the load's staging on: the load replies once its staged file is durable,
        and the client reads its next rows meanwhile (a commit waits for the appending to end,
        :meth:`wait_prebuilt`).

        Why: writing the rows into DuckDB (its compression and row groups) is nearly all of a
        large commit, ~0.1 s per 131,072 rows, and a commit holds the write lock that every other
        commit waits for. Real Doris writes a load's segments on the BE before the load returns,
        in parallel with other loads, and its publish only makes them visible; this does the same
        work at the same point, outside the lock. The staged file stays what makes the load
        durable: this transaction dies with the process, and a commit after a restart (or whenever
        the appended rows no longer fit, see :meth:`publish_prebuilt`) merges the staged file as
        before. Only rows the commit would append unchanged qualify: a duplicate table's, or a
        unique table's whose keys are distinct (whether they meet stored rows is asked at commit)."""
        try:
            pre = self._append_ahead(txn_id, rows, table, facts)
        except BaseException:
            with self._prebuilt_lock:
                self._building.pop(txn_id, None)
            raise
        with self._prebuilt_lock:
            wanted = self._building.pop(txn_id, None) is not None  # else aborted or committed meanwhile
            if pre is not None and wanted:
                self._prebuilt[txn_id] = pre
                return
        if pre is not None:
            _close_quietly(pre.cur)

    def _append_ahead(self, txn_id: int, rows: pa.Table, table: Table, facts: StagedKeys | None) -> _Prebuilt | None:
        """:meth:`_prebuild`'s transaction, or None when the load does not qualify."""
        if table.is_unique and (facts is None or not facts.bounds or not facts.distinct):
            return None
        # Both read before the transaction begins: a journal fold or a DDL after these reads makes
        # the commit refuse the appended rows (a fold rewrites transaction rows this transaction's
        # snapshot would not see; a DDL may change what the rows would be).
        fold_gen = self._journal_gen
        current = self.tables.get((table.db, table.name))
        if current is None:
            return None
        definition = json.dumps(current.to_json(), sort_keys=True)
        t = Table.from_json(json.loads(definition))
        cur = self.con.cursor()
        view = f"stg_pre_{txn_id}"
        target = data_ref(t.db, t.name)
        try:
            cur.execute("BEGIN TRANSACTION")
            if facts is not None and not appends_only(cur, target, facts):
                # keys the table already holds (a binlog batch's updates): the commit would merge
                # them anyway, so appending them now would be work thrown away
                _close_quietly(cur)
                return None
            cur.register(view, rows)
            try:
                cur.execute(append_sql(t, target, view, set(rows.column_names)))
            finally:
                cur.unregister(view)
        except duckdb.Error as e:  # the table changed under the load: its commit merges the staged file
            log.debug("load %d not appended ahead of its commit: %s", txn_id, e)
            _close_quietly(cur)
            return None
        return _Prebuilt(cur, definition, fold_gen, facts)

    def wait_prebuilt(self, txn_id: int) -> None:
        """Wait (without the lock) until the appending of load ``txn_id``'s rows, if any, has ended."""
        with self._prebuilt_lock:
            building = self._building.get(txn_id)
        if building is not None:
            with contextlib.suppress(Exception):  # a failed appending leaves the staged file to merge
                building.result()

    def has_prebuilt(self, txn_id: int) -> bool:
        """Whether load ``txn_id``'s rows are appended ahead of its commit, ready to be committed."""
        with self._prebuilt_lock:
            return txn_id in self._prebuilt

    def drop_prebuilt(self, txn_id: int) -> None:
        """Roll back the rows a load appended ahead of its commit, if any; an appending still under way
        rolls itself back when it ends."""
        with self._prebuilt_lock:
            self._building.pop(txn_id, None)
            pre = self._prebuilt.pop(txn_id, None)
        if pre is not None:
            _close_quietly(pre.cur)

    def publish_prebuilt(self, cur: duckdb.DuckDBPyConnection, t: Table, txn_id: int,
                         record: Callable[[duckdb.DuckDBPyConnection], None]) -> bool:
        """Commit the rows load ``txn_id`` appended ahead of its commit (:meth:`_prebuild`), with the
        transaction's VISIBLE record, which ``record`` writes on the cursor it is given: rows and
        record in one DuckDB transaction, as :meth:`merge` and the caller's record are. Under the
        lock, inside the caller's transaction ``cur`` (whose snapshot sees every commit so far).

        False, with nothing written, when the load appended nothing, or its rows would not be what
        the commit stores now — the table's definition changed, a journal fold rewrote transaction
        rows, a unique table now holds rows within the load's key range (the general merge
        applies), or DuckDB refuses the commit (a conflict): the caller merges the staged file."""
        with self._prebuilt_lock:
            self._building.pop(txn_id, None)  # still appending (nobody waited): it rolls itself back
            pre = self._prebuilt.pop(txn_id, None)
        if pre is None:
            return False
        try:
            if (pre.fold_gen != self._journal_gen or json.dumps(t.to_json(), sort_keys=True) != pre.definition
                    or (t.is_unique and (pre.facts is None or not pre.facts.matches(t)
                                         or not appends_only(cur, data_ref(t.db, t.name), pre.facts)))):
                return False
            record(pre.cur)
            self._envelopes.pop((t.db, t.name), None)  # (before: a refused COMMIT may still have written)
            pre.cur.execute("COMMIT")
        except duckdb.Error as e:
            log.info("load %d: the rows appended ahead of its commit were refused (%s); merging its staged rows",
                     txn_id, e)
            return False
        finally:
            _close_quietly(pre.cur)
        return True

    def discard_staging(self, txn_id: int) -> None:
        """Delete what a load staged: before it failed (no record holds the file yet), or once its
        ABORTED record is in the journal (no record holds it any more); no transaction is needed.
        Rows it appended ahead of its commit are rolled back."""
        self.drop_prebuilt(txn_id)
        self._forget_staged_rows(txn_id)
        self.staging_path(txn_id).unlink(missing_ok=True)

    def _forget_staged_rows(self, txn_id: int) -> None:
        with self._prebuilt_lock:
            self._forget_staged_rows_locked(txn_id)

    def _forget_staged_rows_locked(self, txn_id: int) -> None:
        rows = self._staged_rows.pop(txn_id, None)
        if rows is not None:
            self._staged_rows_bytes -= rows.nbytes
        self._inline_pending.pop(txn_id, None)
        self._inline_held.discard(txn_id)

    def has_legacy_staging(self, txn_id: int) -> bool:
        """Whether ``txn_id`` staged its rows in a DuckDB table (a data directory of an earlier stand-in)."""
        return txn_id in self._legacy_staging

    def drop_staging(self, cur: duckdb.DuckDBPyConnection, txn_id: int) -> None:
        """Forget a load's staged rows once the caller's transaction commits."""
        if txn_id in self._legacy_staging:
            cur.execute(f"DROP TABLE IF EXISTS {legacy_staging_ref(txn_id)}")
        self._unstage_after_commit.append(txn_id)

    def remove_orphan_staging(self, keep: set[int]) -> None:
        """Delete staged files no transaction record holds (only ``keep`` do), and forget the rows
        of loads staged inline that no record holds either (their journal is read at start-up)."""
        with self._prebuilt_lock:
            for txn_id in [i for i in self._staged_rows if i not in keep]:
                self._forget_staged_rows_locked(txn_id)
        for path in self.staging_dir.iterdir():
            stem = path.name.split(".", 1)[0]
            if not (path.suffix == ".arrow" and stem.isdigit() and int(stem) in keep):
                path.unlink(missing_ok=True)

    def read_staged(self, txn_id: int) -> pa.Table | None:
        """A load's staged rows, read without the lock (None: no staged file).

        A staged file is written whole before the PRECOMMITTED record that holds it and never
        changes after, so a commit may read it before it takes the lock — the file's footer,
        schema and key facts, ~1 ms a load not spent under the lock. The reader must still check,
        under the lock, that a record holds the file (the transaction may have been aborted, and
        its file deleted, meanwhile): :meth:`merge` uses rows read here only for the transaction
        it was given them for. A small load's rows are still in memory as it wrote them, kept until
        its file goes (:data:`STAGED_ROWS_KEPT_BYTES`): the file is only read after a restart.
        """
        self.wait_prebuilt(txn_id)
        if self.has_prebuilt(txn_id):  # its commit needs the rows only if it cannot use the appended ones
            return None
        return self._staged_table(txn_id)

    def _staged_table(self, txn_id: int) -> pa.Table | None:
        """A load's staged rows: kept in memory (a small load's), else its staged file's; None when
        neither exists (nothing staged, or staged in a DuckDB table by an earlier stand-in)."""
        with self._prebuilt_lock:
            kept = self._staged_rows.get(txn_id)
        if kept is not None:
            return kept
        try:
            return ipc.open_file(pa.memory_map(str(self.staging_path(txn_id)))).read_all()  # the map closes
        except FileNotFoundError:  # with its last buffer
            return None

    @contextlib.contextmanager
    def staged_rows(self, cur: duckdb.DuckDBPyConnection, txn_id: int) -> Iterator[tuple[str, list[str]]]:
        """The staged rows as a relation name on ``cur``, and their columns (none: nothing staged)."""
        with self._staged(cur, txn_id) as (view, columns, _facts):
            yield view, columns

    @contextlib.contextmanager
    def _staged(self, cur: duckdb.DuckDBPyConnection, txn_id: int,
                rows: pa.Table | None = None) -> Iterator[tuple[str, list[str], StagedKeys | None]]:
        """``staged_rows``, and the key facts computed at staging (None: staged without them);
        ``rows``: the staged file's rows, already read (:meth:`read_staged`)."""
        if rows is None:
            rows = self._staged_table(txn_id)
        if rows is None:
            if txn_id in self._legacy_staging:
                rel = cur.execute(f"SELECT * FROM {legacy_staging_ref(txn_id)} LIMIT 0")
                yield legacy_staging_ref(txn_id), [d[0] for d in rel.description or []], None
            else:
                yield "", [], None
            return
        meta = (rows.schema.metadata or {}).get(_KEYS_META)
        facts = StagedKeys.from_json(meta) if meta else None
        view = f"stg_{txn_id}"
        cur.register(view, rows)
        try:
            yield view, rows.column_names, facts
        finally:
            cur.unregister(view)  # (DuckDB refuses while a result is half-read: read results whole)

    def merge(self, cur: duckdb.DuckDBPyConnection, t: Table, txn_id: int, rows: pa.Table | None = None) -> int:
        """Apply a staged load (one that staged rows) to its table inside the caller's transaction;
        returns rows applied. ``rows``: its staged file's rows, read before the lock (:meth:`read_staged`)."""
        work = f"{META}.{quote_ident(f'merge_{txn_id}')}"
        if rows is None:
            rows = self._staged_table(txn_id)
        if rows is None:  # nothing staged, or staged in a DuckDB table by an earlier stand-in
            with self._staged(cur, txn_id) as (stg, columns, facts):
                if not columns:
                    return 0
                return merge_rows(cur, t, data_ref(t.db, t.name), stg, set(columns), work, facts)
        meta = (rows.schema.metadata or {}).get(_KEYS_META)
        facts = StagedKeys.from_json(meta) if meta else None
        span = _int_key_span(t, rows, facts)
        outside = span is not None and self._outside_envelope(cur, t, span)
        if span is None and self._known_empty(t, facts):
            outside = True  # any key type: no stored row at all, so none lies within the load's bounds
        key = (t.db, t.name)
        skips = 0 if outside else self._guard_skips.get(key, 0)
        guarded: list[bool] = []
        try:
            n = merge_arrow(cur, t, data_ref(t.db, t.name), rows, work, facts, view=f"stg_{txn_id}",
                            new_keys=outside, guard=not skips, guarded=guarded)
        finally:  # widened even when the merge fails: its rows may be in the transaction
            self._widen_envelope(t, span)
        if outside:
            self.unguarded_appends += 1
        if skips:
            self.guards_skipped += 1
            self._guard_skips[key] = skips - 1
        elif guarded:  # the guarded INSERT ran: it found stored rows (skip it a while) or appended
            self._guard_skips[key] = 0 if guarded[0] else _GUARD_BACKOFF
        return n

    def _outside_envelope(self, cur: duckdb.DuckDBPyConnection, t: Table, span: tuple[int, int]) -> bool:
        """Whether no stored row's first key lies within ``span`` (a load's first-key min and max),
        by the table's envelope, asked of DuckDB (one query) when not known. Under the lock."""
        key = (t.db, t.name)
        if key not in self._envelopes:
            q = quote_ident(t.key_names[0])
            lo, hi, nulls = cur.execute(f"SELECT min({q}), max({q}), count(*) FILTER (WHERE {q} IS NULL) "
                                        f"FROM {data_ref(t.db, t.name)}").fetchall()[0]
            self._envelopes[key] = _NO_ENVELOPE if nulls else None if lo is None else (int(lo), int(hi))
        env = self._envelopes[key]
        if env is None:
            return True
        if not isinstance(env, tuple):
            return False
        return span[1] < env[0] or span[0] > env[1]

    def _known_empty(self, t: Table, facts: StagedKeys | None) -> bool:
        """Whether ``t`` is known to hold no row (its envelope is None: created since and not merged
        into, :meth:`create_table`) and the load's keys are distinct with known bounds (the facts
        kept at staging still match the table): then its rows are appended as they are, whatever
        the key's type. Under the lock."""
        return (t.is_unique and facts is not None and facts.distinct and bool(facts.bounds) and facts.matches(t)
                and (t.db, t.name) in self._envelopes and self._envelopes[(t.db, t.name)] is None)

    def _widen_envelope(self, t: Table, span: tuple[int, int] | None) -> None:
        """After a merge into ``t`` of a load whose first keys span ``span`` (None: not known, the
        envelope is forgotten): the envelope widened to cover them."""
        key = (t.db, t.name)
        if span is None:
            self._envelopes.pop(key, None)
            return
        env = self._envelopes.get(key, _NO_ENVELOPE)
        if env is None:
            self._envelopes[key] = span
        elif isinstance(env, tuple):
            self._envelopes[key] = (min(env[0], span[0]), max(env[1], span[1]))

    # ---- transactions -----------------------------------------------------------------------
    def save_txn(self, cur: duckdb.DuckDBPyConnection, rec: dict[str, Any], *, new: bool = False) -> None:
        """Insert a new transaction's row, or update the changing fields of an existing one
        (an UPDATE costs DuckDB a third of an ``INSERT OR REPLACE``)."""
        if new:
            cur.execute(
                f"INSERT INTO {META}.txns VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [rec["txn_id"], rec["db"], rec["label"], rec["tbl"], rec["status"], rec["reason"], rec["two_pc"],
                 rec["prepare_ms"], rec["precommit_ms"], rec["commit_ms"], rec["finish_ms"], rec["staged"],
                 rec["visible_at_ms"]],
            )
            return
        cur.execute(
            f"UPDATE {META}.txns SET status = ?, reason = ?, precommit_ms = ?, commit_ms = ?, finish_ms = ?, "
            "staged = ?, visible_at_ms = ? WHERE txn_id = ?",
            [rec["status"], rec["reason"], rec["precommit_ms"], rec["commit_ms"], rec["finish_ms"], rec["staged"],
             rec["visible_at_ms"], rec["txn_id"]],
        )

    def save_txns(self, cur: duckdb.DuckDBPyConnection, recs: list[tuple[dict[str, Any], bool]]) -> None:
        """:meth:`save_txn` for several transactions (each record with whether it is ``new``) in two
        statements at most, whatever their number: the existing rows deleted, then every record
        inserted from one Arrow table."""
        if len(recs) <= 1:
            for rec, new in recs:
                self.save_txn(cur, rec, new=new)
            return
        old = [int(rec["txn_id"]) for rec, new in recs if not new]
        if old:
            cur.execute(f"DELETE FROM {META}.txns WHERE txn_id IN ({','.join(str(i) for i in old)})")
        # read by DuckDB's replacement scan (a local of this frame; one leading underscore, as a name
        # with two would be mangled in a class body); no Doris database or table name starts with _
        _standin_txn_records = pa.Table.from_pylist([rec for rec, _ in recs], schema=_TXN_SCHEMA)  # noqa: F841
        cur.execute(f"INSERT INTO {META}.txns SELECT * FROM _standin_txn_records").fetchall()

    def load_txns(self) -> list[dict[str, Any]]:
        with self.cursor() as cur:
            rel = cur.execute(f"SELECT * FROM {META}.txns ORDER BY txn_id")
            names = [d[0] for d in rel.description]  # type: ignore[union-attr]
            return [dict(zip(names, r, strict=True)) for r in rel.fetchall()]


@dataclass(frozen=True)
class _Prebuilt:
    """A load's rows appended to its table in an open DuckDB transaction (``Storage._prebuild``)."""

    cur: duckdb.DuckDBPyConnection  # the open transaction
    definition: str  # the table's definition (sorted JSON) the rows were appended under
    fold_gen: int  # the journal's generation before the transaction began
    facts: StagedKeys | None  # a unique table's staged keys


_NO_ENVELOPE = object()  # Storage._envelopes: unknown or unusable (NULL keys)

# After merge_arrow's guarded INSERT found stored rows within a load's key bounds (it appended
# nothing: a wasted statement), the table's next this many merges go straight to its DELETE and
# INSERT, which store the same rows (Storage.merge); then the guard is tried again.
_GUARD_BACKOFF = 8


def _int_key_span(t: Table, rows: pa.Table, facts: StagedKeys | None) -> tuple[int, int] | None:
    """A unique table's load's first-key min and max when that key is an integer, the load holds no
    NULL key and its keys are distinct (the facts kept at staging still match the table); else None."""
    if (not t.is_unique or facts is None or not facts.matches(t) or not facts.distinct or not facts.bounds
            or rows.num_rows == 0):
        return None
    column = rows.column(t.key_names[0]) if t.key_names[0] in rows.column_names else None
    if column is None or not pa.types.is_integer(column.type) or column.null_count:
        return None
    bounds = pc.min_max(column)
    return int(bounds["min"].as_py()), int(bounds["max"].as_py())


def _close_quietly(cur: duckdb.DuckDBPyConnection) -> None:
    """Close a cursor, rolling back its open transaction (if any)."""
    with contextlib.suppress(duckdb.Error):
        cur.execute("ROLLBACK")
    with contextlib.suppress(duckdb.Error):
        cur.close()


def _encode_rows(rows: pa.Table) -> str:
    """A load's staged rows (schema metadata included) as journal text: an Arrow IPC stream, base64."""
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, rows.schema) as writer:
        writer.write_table(rows)
    return base64.b64encode(sink.getvalue().to_pybytes()).decode("ascii")


def _decode_rows(text: str) -> pa.Table:
    return ipc.open_stream(base64.b64decode(text)).read_all()


def _write_all(fd: int, data: Any) -> None:
    """All of ``data`` (bytes or a buffer) to ``fd``: a regular file takes it whole, bar a full disk."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_durably(path: Path, data: Any) -> None:
    """``data`` (bytes or a buffer) as the whole of ``path``, fsynced before it returns."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def now_ms() -> int:
    return int(time.time() * 1000)


def quote_default(c: Column) -> str | None:
    """DuckDB literal for a column's DEFAULT, or None when it has none (or it is not constant)."""
    if c.default is None:
        return None
    if c.default.upper() == "CURRENT_TIMESTAMP":
        return "CURRENT_TIMESTAMP::TIMESTAMP"
    return f"{c.dtype.convert_sql(quote_str(c.default))}"
