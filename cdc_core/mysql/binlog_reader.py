"""Reading the binlog: bounded ranges for chunk backfill, bounded batches for the stream.

Built on mysql-replication's ``BinLogStreamReader`` with the workarounds its MariaDB use needs
(see ``docs/mysql.md``):

* we always dump by **file and position** (``is_mariadb=False``): with ``is_mariadb=True`` the
  library ignores ``log_file``/``log_pos`` and streams from the first binlog. A GTID start is first
  resolved to a file and position (:func:`cdc_core.mysql.startup.resolve_gtid`).
* how each event moves the position and frames transactions is in :mod:`cdc_core.mysql.binlog_steps`.

Two ways to read:

* :meth:`BinlogSplitReader.read_range` — every change whose end offset lies in ``(start, stop]``
  (what a snapshot chunk's backfill needs; ``stop`` is a high watermark, so it ends on a
  transaction boundary anyway).
* :meth:`BinlogSplitReader.read_batch` — from a resume point up to a stop offset, a number of
  events or bytes, never ending inside a transaction; the batch's ``end`` is a valid resume point
  (file, position and GTID state), and it advances even when nothing captured changed.
* :meth:`BinlogSplitReader.stream` — blocking, with server heartbeats, for tailing.

One module: the three reads share the reader's connection, its schema cache and the handling of
the DDL and rows events the steps hand back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, WriteRowsEvent

from cdc_core.model.events import CreateTableEvent, DataChangeEvent, DropTableEvent, Op, SchemaChangeEvent
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.model.schema_changes import SchemaChangeError, apply_schema_change
from cdc_core.mysql.binlog_steps import BinlogStep, ChangeEvent, StreamPosition, step
from cdc_core.mysql.binlog_values import RowImageConverter
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.ddl import DdlParseError, MySqlDdlParser, is_shadow_table
from cdc_core.mysql.gtid import GtidState
from cdc_core.mysql.purge import check_offset_available
from cdc_core.mysql.server_ids import stream_server_id
from cdc_core.mysql.startup import resolve_gtid
from cdc_core.mysql.table_map_binding import SchemaHistoryMismatchError, has_binlog_names, remember_charsets
from cdc_core.mysql.table_map_cache import install as install_table_map_cache
from cdc_core.mysql.types import DorisValueConverter

log = logging.getLogger(__name__)
install_table_map_cache()  # a repeated TableMap (one per statement) is parsed once

ValueConverter = Callable[[Any, Any], Any]
"""``converter(column: Column, value) -> value``: the same conversion the snapshot path uses
(``cdc_core.mysql.types.to_doris_value`` with its time zone bound)."""

SchemaLookup = Callable[[TableId], TableSchema]


class BinlogReadError(RuntimeError):
    """The binlog cannot be read as asked (bad range, purged file, unparseable DDL...)."""


@dataclass(frozen=True)
class Heartbeat:
    """No captured change, but the stream has safely reached ``offset`` (a resume point)."""

    offset: BinlogOffset


@dataclass(frozen=True)
class BinlogBatch:
    """What one bounded read produced. ``end`` is a transaction boundary: resume from it.

    ``schema_change`` is set when the batch stopped just before a DDL on a captured table
    (``stop_at_schema_change=True``): ``end`` is then the resume point *before* the DDL and
    ``schema_change_end`` the resume point just after it.
    """

    start: BinlogOffset
    end: BinlogOffset
    events: list[ChangeEvent]
    events_read: int = 0
    bytes_read: int = 0
    schema_change: list[SchemaChangeEvent] | None = None
    schema_change_end: BinlogOffset | None = None


def _event_fast(table_id: TableId, op: Op, before: Any, after: Any, offset: BinlogOffset, row_index: int,
                gtid: str | None, commit_ms: int | None) -> DataChangeEvent:
    """``DataChangeEvent(...)`` without the frozen-dataclass ``__init__`` (one per row: the hot path)."""
    event = _new(DataChangeEvent)
    event.__dict__.update(table_id=table_id, op=op, before=before, after=after, offset=offset, row_index=row_index,
                          gtid=gtid, commit_time_ms=commit_ms)
    return event


_new = object.__new__
# the shortcut is only valid while DataChangeEvent is a plain frozen dataclass with exactly these fields
_event = _event_fast if (
    not hasattr(DataChangeEvent, "__post_init__") and "__slots__" not in DataChangeEvent.__dict__
    and tuple(DataChangeEvent.__dataclass_fields__) == ("table_id", "op", "before", "after", "offset", "row_index",
                                                        "gtid", "commit_time_ms")
) else DataChangeEvent


def _filtered(event_filter: Callable[[ChangeEvent], Any] | None, events: list[ChangeEvent]) -> list[ChangeEvent]:
    if event_filter is None or not events:
        return list(events)
    apply = getattr(event_filter, "apply", None)
    if apply is not None:
        return list(apply(events))
    out: list[ChangeEvent] = []
    for ev in events:
        verdict = event_filter(ev)
        if verdict is True:
            out.append(ev)
        elif verdict:
            out.extend(verdict)
    return out


class BinlogSplitReader:
    """Reads changes of captured tables from a MySQL/MariaDB binlog.

    ``schemas(table_id)`` gives the schema valid at the start of a read; the reader keeps its own
    copy and evolves it through the DDL it passes (``cdc_core.mysql.schema_history``), so rows after
    an ``ALTER`` decode against the altered schema. ``converter(column, value)`` turns a decoded
    binlog value into the sink's value, the same function the snapshot path uses.
    """

    def __init__(
        self,
        settings: Any,
        server_id: int,
        schemas: SchemaLookup,
        converter: ValueConverter | None = None,
        *,
        heartbeat_interval: float = 30.0,
        ddl_parser: MySqlDdlParser | None = None,
        is_captured: Callable[[TableId], bool] | None = None,
        fast_decoder: bool = True,
    ) -> None:
        self.settings = MySqlConnectionSettings.of(settings)
        if not isinstance(server_id, int) or server_id <= 0:
            raise ValueError(f"server_id must be a positive integer, got {server_id!r}")
        self.server_id = server_id
        self._schemas_lookup = schemas
        self._rows = RowImageConverter(converter, fast=fast_decoder)
        self.heartbeat_interval = heartbeat_interval
        self._ddl_parser = ddl_parser if ddl_parser is not None else MySqlDdlParser()
        self._is_captured = is_captured
        self._schema_cache: dict[TableId, TableSchema] = {}
        self._untrusted: dict[TableId, str] = {}  # table → why its evolved history cannot name columns
        self._control_conn: Any = None
        self._table_ids: dict[tuple[str, str], TableId] = {}
        self._continues_at: BinlogOffset | None = None
        self._wanted_rows: dict[TableId, bool] = {}  # rows events' tables wanted, within one read

    @classmethod
    def from_source(cls, source: Any, schemas: SchemaLookup, *, server_id: int | None = None,
                    converter: ValueConverter | None = None, mariadb: bool = True) -> BinlogSplitReader:
        """The stream's reader for a pipeline's ``source:`` block (``MySqlSourceOptions``): its
        connection, the first server id of its range, the shared Doris value converter bound to
        ``server-time-zone``/``treat-tinyint1-as-boolean.enabled``, its table selector, heartbeat
        and online-schema-change options."""
        selector = source.selector
        return cls(
            source,
            server_id if server_id is not None else stream_server_id(source),
            schemas,
            converter if converter is not None else DorisValueConverter(source.server_time_zone or "UTC",
                                                                        source.tinyint1_as_boolean),
            heartbeat_interval=source.heartbeat_interval,
            ddl_parser=MySqlDdlParser(parse_online_schema_changes=source.parse_online_schema_changes,
                                      mariadb=mariadb),
            is_captured=lambda t: selector.matches(t.database, t.table),
        )

    # -- public API ------------------------------------------------------------------------------

    def offset_for_gtid(self, gtid_set: str) -> BinlogOffset:
        """Where a GTID set resumes, as a file and position this reader can start from (the GTID
        dump itself cannot start at a file position: see ``docs/mysql.md``)."""
        return resolve_gtid(self.settings, gtid_set, self.server_id)

    def read_range(
        self, start: BinlogOffset, stop: BinlogOffset, tables: set[TableId] | None = None
    ) -> Iterator[DataChangeEvent | SchemaChangeEvent]:
        """Changes whose end offset lies in ``(start, stop]``, for ``tables`` (None = all captured).

        Values are converted; ``DataChangeEvent.offset`` is the rows event's end offset and
        ``row_index`` the row's index within that rows event.
        """
        if stop < start:
            raise BinlogReadError(f"binlog range ends before it starts: ({start}, {stop}]")
        if stop == start:
            return
        self._reset_schemas(start)
        try:
            for item in self._items(start, blocking=False, tables=tables):
                if item.offset > stop:
                    return
                yield from item.events
                if item.offset >= stop:
                    return
        finally:
            self.close()  # a range read (a chunk's backfill) is usually the reader's only read
        # Non-blocking dump hit the end of the log before ``stop``.
        raise BinlogReadError(
            f"the binlog ends before {stop} (read from {start}); the stop offset must be a position the "
            "server has already written (e.g. a high watermark from SHOW MASTER STATUS)"
        )

    def read_batch(
        self,
        start: BinlogOffset,
        stop: BinlogOffset | None = None,
        *,
        max_events: int | None = None,
        max_bytes: int | None = None,
        tables: set[TableId] | None = None,
        stop_at_schema_change: bool = False,
        event_filter: Callable[[ChangeEvent], Any] | None = None,
        skip_rows: int = 0,
    ) -> BinlogBatch:
        """Read from ``start`` to ``stop`` (or the end of the log), at most about ``max_events`` binlog
        events / ``max_bytes`` bytes, and end on a transaction boundary.

        ``event_filter`` (e.g. :class:`cdc_core.mysql.binlog_filter.BinlogEventFilter`) decides which
        change events are kept — it returns a bool or a list of events, and its ``apply(events)`` is
        used per transaction when it has one; positions advance regardless, so an idle or filtered
        stream still moves. ``skip_rows`` drops the first row changes (startup ``skip-rows``).
        """
        self._reset_schemas(start)
        events: list[ChangeEvent] = []
        pending: list[ChangeEvent] = []
        end = start
        events_read = bytes_read = 0
        to_skip = skip_rows
        for item in self._items(start, blocking=False, tables=tables):
            if stop is not None and item.offset > stop:
                break
            schema_changes = [e for e in item.events if isinstance(e, SchemaChangeEvent)]
            if stop_at_schema_change and schema_changes and item.boundary and not pending:
                self._continues_at = None  # the DDL was applied to the cache; the caller records it first
                return BinlogBatch(start, end, events, events_read, bytes_read, schema_changes, item.offset)
            if item.is_data:
                events_read += 1
            bytes_read += item.size
            for ev in item.events:
                if to_skip and isinstance(ev, DataChangeEvent):
                    to_skip -= 1
                    continue
                pending.append(ev)
            if item.boundary:
                events.extend(_filtered(event_filter, pending))
                pending.clear()
                end = item.offset
                if stop is not None and end >= stop:
                    break
                if max_events is not None and events_read >= max_events:
                    break
                if max_bytes is not None and bytes_read >= max_bytes:
                    break
        self._continues_at = end
        return BinlogBatch(start, end, events, events_read, bytes_read)

    def stream(
        self, start: BinlogOffset, tables: set[TableId] | None = None
    ) -> Iterator[ChangeEvent | Heartbeat]:
        """Tail the binlog forever (blocking). Yields change events, and a :class:`Heartbeat` with the
        current resume point whenever a transaction ends or the server sends a heartbeat."""
        self._reset_schemas(start)
        for item in self._items(start, blocking=True, tables=tables):
            yield from item.events
            if item.boundary:
                yield Heartbeat(item.offset)

    # -- internals -------------------------------------------------------------------------------

    def _open(self, start: BinlogOffset, blocking: bool) -> BinLogStreamReader:
        return BinLogStreamReader(
            connection_settings=self.settings.pymysql_kwargs(),
            server_id=self.server_id,
            resume_stream=True,
            blocking=blocking,
            log_file=start.file,
            log_pos=start.position,
            # Every event, not just the ones we decode: an offset (a watermark) may end on any event,
            # e.g. MariaDB's binlog checkpoint written after a rotation.
            only_events=None,
            filter_non_implemented_events=False,
            is_mariadb=False,  # file/pos dump; see module docstring
            slave_heartbeat=self.heartbeat_interval if blocking and self.heartbeat_interval > 0 else None,
            enable_logging=False,
        )

    def _reset_schemas(self, start: BinlogOffset) -> None:
        """Schemas evolve through the DDL the reader passes. A read that continues exactly where the
        previous one ended keeps them; any other start asks ``schemas`` again."""
        if self._continues_at is None or self._continues_at != start:
            self._schema_cache.clear()
            self._untrusted.clear()

    def _control(self) -> Any:
        """A plain connection for the checks before each read (kept across batches)."""
        if self._control_conn is not None:
            try:
                self._control_conn.ping(reconnect=False)
                return self._control_conn
            except pymysql.MySQLError:
                self._control_conn = None
        self._control_conn = pymysql.connect(**self.settings.pymysql_kwargs(), autocommit=True)
        return self._control_conn

    def close(self) -> None:
        if self._control_conn is not None:
            try:
                self._control_conn.close()
            finally:
                self._control_conn = None

    def __enter__(self) -> BinlogSplitReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _prepare(self, start: BinlogOffset) -> GtidState:
        """Refuse a purged start (never skip data) and find the GTID state there."""
        with self._control().cursor() as cur:
            check_offset_available(cur, start)
            if start.gtid_set:
                return GtidState.parse(start.gtid_set)
            return GtidState.at_cursor(cur, start)

    def schema(self, table_id: TableId) -> TableSchema:
        cached = self._schema_cache.get(table_id)
        if cached is None:
            cached = self._schemas_lookup(table_id)
            if cached is None:
                raise BinlogReadError(f"no schema known for captured table {table_id}")
            self._schema_cache[table_id] = cached
        return cached

    def _wanted(self, table_id: TableId, tables: set[TableId] | None) -> bool:
        if is_shadow_table(table_id.table):
            return False  # gh-ost / pt-osc copies: the original table's own events carry the changes
        if tables is not None:
            return table_id in tables
        if self._is_captured is not None:
            return self._is_captured(table_id)
        return True

    def _items(self, start: BinlogOffset, *, blocking: bool, tables: set[TableId] | None) -> Iterator[BinlogStep]:
        pos = StreamPosition(start.file, start.position, self._prepare(start), epoch=start.epoch, server=start.server)
        stream = self._open(start, blocking)
        self._wanted_rows = {}  # per read: ``tables`` is fixed for its length

        def on_query(query: str, default_db: str, offset: BinlogOffset) -> tuple[ChangeEvent, ...]:
            return self._on_query(query, default_db, offset, tables)

        def on_rows(ev: Any, offset: BinlogOffset, gtid: str | None) -> tuple[ChangeEvent, ...]:
            return self._on_rows(ev, offset, gtid, tables)

        try:
            for ev in stream:
                if isinstance(ev, TableMapEvent):
                    remember_charsets(ev)  # the MINIMAL binding checks charsets against the history
                item = step(ev, pos, on_query, on_rows)
                if item is not None:
                    yield item
        finally:
            stream.close()

    def _on_query(self, query: str, default_db: str, offset: BinlogOffset, tables: set[TableId] | None
                  ) -> tuple[ChangeEvent, ...]:
        """A query that is no transaction marker: DDL on a captured table becomes schema-change events."""
        try:
            changes = self._ddl_parser.parse_captured(
                query, default_db, lambda t: self._wanted(t, tables), self.schema_or_none
            )
        except DdlParseError as exc:
            raise DdlParseError(
                f"binlog stopped at {offset}, before any later row of the table was mapped: "
                f"{exc.args[0].splitlines()[0]}. The schema history cannot follow this statement; with "
                "binlog_row_metadata=MINIMAL it is the only source of the table's column names, order, types "
                "and charsets. Fix: re-snapshot the table from a point after this statement (or drop it "
                "from the captured tables), and set binlog_row_metadata=FULL on the server to have the "
                "binlog name the columns", query) from exc
        events: tuple[ChangeEvent, ...] = tuple(replace(c, offset=offset) for c in changes)
        self._apply_schema_changes(events)
        return events

    def schema_or_none(self, table_id: TableId) -> TableSchema | None:
        try:
            return self.schema(table_id)
        except Exception:  # noqa: BLE001 - an unknown table simply has no schema yet
            return None

    def _apply_schema_changes(self, changes: Iterable[SchemaChangeEvent]) -> None:
        """Evolve the cached schemas. A change that does not fit (an unknown column, a duplicate) is
        applied leniently — with ``binlog_row_metadata=FULL`` the rows name their columns — but the
        table's history is marked untrusted: rows without names then stop (:meth:`_on_rows`)."""
        for change in changes:
            current = self._schema_cache.get(change.table_id)
            if current is None:
                current = self.schema_or_none(change.table_id)
            if isinstance(change, CreateTableEvent | DropTableEvent):
                self._untrusted.pop(change.table_id, None)  # the table's history starts anew
            try:
                updated = apply_schema_change(current, change, strict=True)
            except SchemaChangeError as exc:
                updated = apply_schema_change(current, change, strict=False)
                self._untrusted[change.table_id] = f"{exc} (DDL at {change.offset}: {(change.ddl or '').strip()[:200]})"
            self._schema_cache.pop(change.table_id, None)
            for table_id, schema in updated.items():
                if schema is None:
                    self._schema_cache.pop(table_id, None)
                else:
                    self._schema_cache[table_id] = schema

    def _on_rows(self, ev: Any, offset: BinlogOffset, gtid: str | None, tables: set[TableId] | None
                 ) -> tuple[ChangeEvent, ...]:
        table_id = self._table_ids.get((ev.schema, ev.table))
        if table_id is None:  # one TableId object per table: identity checks downstream stay cheap
            table_id = self._table_ids.setdefault((ev.schema, ev.table), TableId(ev.schema, ev.table))
        wanted = self._wanted_rows.get(table_id)
        if wanted is None:
            wanted = self._wanted_rows[table_id] = self._wanted(table_id, tables)
        if not wanted:
            return ()
        schema = self.schema(table_id)
        untrusted = self._untrusted.get(table_id)
        if untrusted is not None and not has_binlog_names(ev.table_map[ev.table_id]):
            raise SchemaHistoryMismatchError(
                f"binlog rows of {table_id} at {offset} carry no column names (binlog_row_metadata=MINIMAL) and the "
                f"table's schema history did not fit an earlier DDL: {untrusted}. No row was mapped. Fix: set "
                "binlog_row_metadata=FULL on the server, or re-snapshot the table from a point after the change.")
        commit_ms = ev.timestamp * 1000 if ev.timestamp else None
        images = self._rows.images(ev, schema)
        if isinstance(ev, WriteRowsEvent):
            out = [_event(table_id, Op.INSERT, None, after, offset, i, gtid, commit_ms)
                   for i, (_, after) in enumerate(images)]
        elif isinstance(ev, DeleteRowsEvent):
            out = [_event(table_id, Op.DELETE, before, None, offset, i, gtid, commit_ms)
                   for i, (before, _) in enumerate(images)]
        else:
            out = [_event(table_id, Op.UPDATE, before, after, offset, i, gtid, commit_ms)
                   for i, (before, after) in enumerate(images)]
        return tuple(out)
