"""Dagster's event log on SQLite, written a batch at a time.

A snapshot run over a database of small tables records, per table, a planned and a done
materialization of its ``snapshot_chunks`` partition and, after its commit, a materialization of
its Doris table; a binlog batch over the database records one per table it wrote. Dagster's
SQLite storage opens a connection (a new engine: it keeps no pool) and commits twice, in the
run's file and in the index, for every event: ~6 ms of CPU each, seconds for 300 tables, the
largest per-table cost left in a run (docs/performance.md).

Dagster can hand a storage a batch of asset events at once (``DAGSTER_EVENT_BATCH_SIZE``: a
partitioned output's materializations, a run's planned events, and the run-less ones Tidemark
reports together, ``orchestration/defs/doris_tables.py``). dagster-postgres writes such a batch
with one statement; Dagster's SQLite storage only loops over it. ``BatchingSqliteEventLogStorage``
writes it as the loop would, event by event and with Dagster's own index bookkeeping, but in one
connection and one transaction per file. Every connection it makes (a single event's too) comes
from one engine kept per file instead of an engine built and disposed of each time (``_connect``). Tidemark's ``dagster.yaml`` template names it; a user's
own ``dagster.yaml`` is never changed (``orchestration/cli/instance.py``).

When a batch fails part-way (the index locked too long, a full disk), Dagster stores each of its
events again one at a time (``store_event``). The run's file and the index are two SQLite files, so
a batch can fail after the run's file took its events: the storage remembers what of the failed
batch is already written, and the retry writes only the rest — each event is in the run's log and
in the index once.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

import sqlalchemy as db
from dagster import DagsterEventType, DagsterInstance
from dagster import _check as check
from dagster._config import StringSource
from dagster._core.events import ASSET_CHECK_EVENTS, ASSET_EVENTS, EVENT_TYPE_TO_PIPELINE_RUN_STATUS
from dagster._core.events.log import EventLogEntry
from dagster._core.instance.utils import _is_batch_writing_enabled
from dagster._core.storage.event_log.schema import SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sqlalchemy_compat import db_result
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from sqlalchemy.pool import NullPool

from orchestration.defs import alembic_cache
from orchestration.defs.sqlite_sync import relax_sqlite_sync

logger = logging.getLogger(__name__)

# Engines kept per SQLite file (the index and the latest runs' files): a webserver reading many runs
# keeps its memory flat.
MAX_ENGINES = 64


class Written(StrEnum):
    """How far an event of the batch being written got."""

    RUN_FILE = "run file"
    BOTH = "run file and index"

class BatchingSqliteEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` whose ``store_event_batch`` shares one connection and transaction
    per file (see the module docstring). ``dagster_home``: the instance's directory; the events
    live where Dagster's default storage keeps them (``history/runs`` under it)."""

    def __init__(self, dagster_home: str, inst_data: ConfigurableClassData | None = None):
        self._dagster_home = check.str_param(dagster_home, "dagster_home")
        # per thread (Dagster retries a failed batch in the thread that wrote it): the events of
        # the batch being written, by id, as (the event, how far it was written);
        # kept after the batch failed, for Dagster's one-at-a-time retry of it
        self._batch = threading.local()
        # one SQLAlchemy engine per file, reused (see _connect); its connections are not pooled
        self._engines: OrderedDict[str, Any] = OrderedDict()
        # its files (and the home's others opened after it): WAL from the start, synchronous=NORMAL
        relax_sqlite_sync(dagster_home)
        # Dagster's schema revisions read once per process, not once per run's file (alembic_cache.py)
        alembic_cache.install()
        super().__init__(str(Path(dagster_home) / "history" / "runs"), inst_data=inst_data)

    @classmethod
    def config_type(cls) -> Any:
        return {"dagster_home": StringSource}

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData | None,  # type: ignore[override]
                          config_value: Mapping[str, Any]) -> BatchingSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Any]:
        """Dagster's ``_connect`` with the file's engine reused. Dagster builds an engine for every
        connection and disposes of it after: ~1.5-3 ms of CPU each time (the engine, and SQLAlchemy's
        first-connect set-up of its dialect), and an event makes two connections, one to the run's
        file and one to the index. The engine keeps no connection open (``NullPool``, as Dagster's):
        each use still connects, commits and closes, so the file is checkpointed on close and a
        webserver following the run's file sees every event as before (docs/performance.md)."""
        with self._db_lock:
            check.str_param(shard, "shard")
            engine = self._engines.pop(shard, None)
            if engine is None:
                engine = db.create_engine(self.conn_string_for_shard(shard), poolclass=NullPool,
                                          connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
            self._engines[shard] = engine  # the newest last
            while len(self._engines) > MAX_ENGINES:
                self._engines.popitem(last=False)[1].dispose()
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    @property
    def _written(self) -> dict[int, tuple[EventLogEntry, Written]]:
        if not hasattr(self._batch, "written"):
            self._batch.written = {}
        return self._batch.written

    def store_event(self, event: EventLogEntry) -> None:
        written = self._written.pop(id(event), None)
        if written is None or written[0] is not event:
            super().store_event(event)
        elif written[1] is Written.RUN_FILE:  # a failed batch's event, in the run's file only: the index's part
            self._store_in_index([event], [self.prepare_insert_event(event)])
        # (Written.BOTH: written whole before its batch failed)

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        self._written.clear()
        self._store_batch(events)
        self._written.clear()  # (kept when the batch raised: Dagster's retry of each event reads it)

    def _store_batch(self, events: Sequence[EventLogEntry]) -> None:
        # In order, a stretch at a time: the asset events together, anything else (a run's planned
        # asset-check evaluations come in the same batch as its planned materializations) the usual way.
        start = 0
        while start < len(events):
            batchable = _batchable(events[start])
            end = start + 1
            while end < len(events) and _batchable(events[end]) == batchable:
                end += 1
            if batchable and end - start > 1:
                self._store_asset_events_together(events[start:end])
            else:
                for event in events[start:end]:
                    super().store_event(event)
                    self._written[id(event)] = (event, Written.BOTH)
            start = end

    def _store_asset_events_together(self, events: Sequence[EventLogEntry]) -> None:
        # one statement per event for both files, as store_event has (serializing an event is
        # about a third of a batch's CPU)
        inserts = [self.prepare_insert_event(event) for event in events]
        by_run: dict[str, list[Any]] = {}
        for event, insert in zip(events, inserts, strict=True):
            by_run.setdefault(event.run_id, []).append(insert)
        for run_id, run_inserts in by_run.items():
            with self.run_connection(run_id) as conn:
                for insert in run_inserts:
                    conn.execute(insert)
            self._written.update({id(e): (e, Written.RUN_FILE) for e in events if e.run_id == run_id})
        self._store_in_index(events, inserts)

    def _store_in_index(self, events: Sequence[EventLogEntry], inserts: Sequence[Any]) -> None:
        """The asset events mirrored in the cross-run index, as ``store_event`` does, in one transaction."""
        with self.index_transaction() as conn:
            event_ids: list[int] = []
            for event, insert, following in zip(events, inserts, [*events[1:], None], strict=True):
                with db_result(conn, insert) as result:
                    event_id = result.inserted_primary_key[0]
                check.invariant(event_id is not None, "Cannot store asset event tags for null event id.")
                event_ids.append(event_id)
                if not _overwritten(event, following):
                    self._store_asset_event(conn, event, event_id)
            self._store_asset_event_tags(conn, events, event_ids)  # (as dagster-postgres: one call)
        self._written.update({id(e): (e, Written.BOTH) for e in events})


def _batchable(event: EventLogEntry) -> bool:
    """An asset event ``store_event`` would write to the run's file and the index only."""
    kind = event.dagster_event_type if event.is_dagster_event else None
    return (kind in ASSET_EVENTS and kind not in ASSET_CHECK_EVENTS
            and kind not in EVENT_TYPE_TO_PIPELINE_RUN_STATUS)


def _overwritten(event: EventLogEntry, following: EventLogEntry | None) -> bool:
    """The asset-keys row ``event`` would write is written over at once by the next event (same
    asset, same kind: the same columns, set from the event alone), so only the last of such a run
    writes it — a partitioned output's batch touches its asset's row once, not once per partition."""
    return (following is not None
            and following.dagster_event_type == event.dagster_event_type
            and following.dagster_event is not None and event.dagster_event is not None
            and following.dagster_event.asset_key == event.dagster_event.asset_key)


def store_together_on_postgres(instance: DagsterInstance, entries: Sequence[EventLogEntry]) -> bool:
    """Write run-less asset events of many assets to a dagster-postgres event log in one
    transaction, each asset's row updated as ``store_event`` would (dagster-postgres's own
    ``store_event_batch`` updates only the last event's asset: it is meant for one asset's
    partitions). False, and nothing written, for any other storage or with batches off
    (``DAGSTER_EVENT_BATCH_SIZE`` unset or 0): the caller writes them the usual way. Run-less
    events have no run to mirror and no subscriber to tell, so leaving ``handle_new_event`` out
    skips nothing it would do for them."""
    storage = instance.event_log_storage
    if len(entries) < 2 or not _is_batch_writing_enabled():  # Dagster's own reading of the setting
        return False
    try:
        from dagster_postgres.event_log.event_log import PostgresEventLogStorage
    except ImportError:
        return False
    if not isinstance(storage, PostgresEventLogStorage) or not all(
            e.is_dagster_event and e.dagster_event_type == DagsterEventType.ASSET_MATERIALIZATION for e in entries):
        return False
    insert = storage.prepare_insert_event_batch(entries).returning(SqlEventLogStorageTable.c.id)
    with storage.index_transaction() as conn:
        event_ids = [int(row[0]) for row in conn.execute(insert).fetchall()]
        check.invariant(len(event_ids) == len(entries), "an event batch's ids do not match its events")
        storage._store_asset_event_tags(conn, entries, event_ids)
        for entry, event_id in zip(entries, event_ids, strict=True):
            storage._store_asset_event(conn, entry, event_id)
    return True
