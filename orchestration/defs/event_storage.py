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
writes it in one connection and one transaction per file, each file's rows with one statement
(executemany), each event serialized once (an asset's latest materialization is built around the
JSON of the event's row), and each asset's row in the index written once for the batch, with the
values Dagster's own bookkeeping of each event in turn would leave. Every connection it makes (a
single event's too) comes from one engine kept per file instead of an engine built and disposed
of each time (``_connect``). Tidemark's ``dagster.yaml`` template names it; a user's
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
from dagster._core.storage.event_log.schema import AssetKeyTable, SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sqlalchemy_compat import db_select
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._serdes import ConfigurableClassData
from dagster._time import datetime_from_timestamp
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
            self._store_in_index([event], [self._event_to_row(event)])
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
        # each event serialized once (Dagster's store_event builds a statement per event, and its
        # asset's row serializes the event a second time: the largest part of a batch's CPU)
        rows = [self._event_to_row(event) for event in events]
        by_run: dict[str, list[dict[str, Any]]] = {}
        for event, row in zip(events, rows, strict=True):
            by_run.setdefault(event.run_id, []).append(row)
        for run_id, run_rows in by_run.items():
            with self.run_connection(run_id) as conn:
                conn.execute(SqlEventLogStorageTable.insert(), run_rows)  # one executemany
            self._written.update({id(e): (e, Written.RUN_FILE) for e in events if e.run_id == run_id})
        self._store_in_index(events, rows)

    def _store_in_index(self, events: Sequence[EventLogEntry], rows: Sequence[dict[str, Any]]) -> None:
        """The asset events mirrored in the cross-run index, as ``store_event`` does, in one
        transaction: their rows in one statement, each asset's row written once for the batch."""
        with self.index_transaction() as conn:
            conn.execute(SqlEventLogStorageTable.insert(), list(rows))
            event_ids = _inserted_ids(conn, len(rows))
            self._store_asset_rows(conn, events, rows, event_ids)
            self._store_asset_event_tags(conn, events, event_ids)  # (as dagster-postgres: one call)
        self._written.update({id(e): (e, Written.BOTH) for e in events})

    def _store_asset_rows(self, conn: Any, events: Sequence[EventLogEntry], rows: Sequence[dict[str, Any]],
                          event_ids: Sequence[int]) -> None:
        """The ``asset_keys`` rows the events leave, as Dagster's ``_store_asset_event`` of each in
        turn leaves them: each asset's values of its events laid over one another in order (what an
        insert and the updates after it leave), then one insert for the new assets and one update
        for the known ones."""
        has_index_cols = self._has_asset_key_index_cols_on_connection(conn)  # a PRAGMA: once a batch
        latest: dict[str, dict[str, Any]] = {}
        for event, row, event_id in zip(events, rows, event_ids, strict=True):
            if not (event.dagster_event and event.dagster_event.asset_key):
                continue
            values = self._asset_entry_values(event, row["event"], event_id, has_index_cols)
            if values:
                latest.setdefault(row["asset_key"], {}).update(values)
        if not latest:
            return
        keys = list(latest)
        known: set[str] = set()
        for start in range(0, len(keys), IN_LIST):
            known.update(conn.execute(db_select([AssetKeyTable.c.asset_key]).where(
                AssetKeyTable.c.asset_key.in_(keys[start:start + IN_LIST]))).scalars())
        for params in _by_columns([{"asset_key": key, **values} for key, values in latest.items() if key not in known]):
            conn.execute(AssetKeyTable.insert(), params)
        for params in _by_columns([{"key_": key, **values} for key, values in latest.items() if key in known]):
            conn.execute(AssetKeyTable.update().where(AssetKeyTable.c.asset_key == db.bindparam("key_")), params)

    def _asset_entry_values(self, event: EventLogEntry, event_json: str, event_id: int,
                            has_index_cols: bool) -> dict[str, Any]:
        """Dagster's ``_get_asset_entry_values``, with a materialization's record built around the
        event's JSON already made for its row instead of serializing the event again. The first
        materialization a process writes is also built Dagster's way and compared: if a Dagster
        version lays it out differently, its own function serves from then on."""
        global _SPLICE_CHECKED
        dagster_event = check.not_none(event.dagster_event)
        if not dagster_event.is_step_materialization or _SPLICE_CHECKED is False:
            return self._get_asset_entry_values(event, event_id, has_index_cols)
        values: dict[str, Any] = {"last_materialization": _record_json(event_json, event_id),
                                  "last_run_id": event.run_id}
        if has_index_cols:
            values["last_materialization_timestamp"] = datetime_from_timestamp(event.timestamp)
        if _SPLICE_CHECKED is None:
            _SPLICE_CHECKED = values == self._get_asset_entry_values(event, event_id, has_index_cols)
            if not _SPLICE_CHECKED:
                logger.warning("Dagster serializes an asset's latest materialization differently from what "
                               "this storage expects; it serializes each event twice from now on")
                return self._get_asset_entry_values(event, event_id, has_index_cols)
        return values


# The most asset keys one ``IN (...)`` lists (SQLite's limit on bound variables is far above).
IN_LIST = 500

# Whether an asset's latest materialization built around the event's JSON is what Dagster writes:
# None until the first one is compared (``_asset_entry_values``).
_SPLICE_CHECKED: bool | None = None


def _record_json(event_json: str, event_id: int) -> str:
    """``serialize_value(EventLogRecord(storage_id=event_id, event_log_entry=event))`` from the
    event's own JSON: Dagster writes a record's fields in name order, the event as it writes it alone."""
    return f'{{"__class__": "EventLogRecord", "event_log_entry": {event_json}, "storage_id": {event_id}}}'


def _inserted_ids(conn: Any, count: int) -> list[int]:
    """The ids of the ``count`` rows just inserted into the index's ``event_logs``, in order. SQLite
    gives each new row one more than the largest id, and the transaction holds the file's write lock
    from its first insert on: the batch's ids are the ``count`` up to the last one inserted (checked:
    no other row from the first on)."""
    last = int(conn.exec_driver_sql("SELECT last_insert_rowid()").scalar_one())
    first = last - count + 1
    found = conn.execute(db_select([db.func.count()]).select_from(SqlEventLogStorageTable).where(
        SqlEventLogStorageTable.c.id >= first)).scalar_one()
    check.invariant(found == count, f"an event batch's {count} rows are not the index's last {count} ids")
    return list(range(first, last + 1))


def _by_columns(params: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Parameter sets grouped by the columns they set (one executemany each)."""
    grouped: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for p in params:
        grouped.setdefault(tuple(sorted(p)), []).append(p)
    return list(grouped.values())


def _batchable(event: EventLogEntry) -> bool:
    """An asset event ``store_event`` would write to the run's file and the index only."""
    kind = event.dagster_event_type if event.is_dagster_event else None
    return (kind in ASSET_EVENTS and kind not in ASSET_CHECK_EVENTS
            and kind not in EVENT_TYPE_TO_PIPELINE_RUN_STATUS)


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
