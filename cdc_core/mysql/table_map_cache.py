"""Parse each distinct binlog TableMap once: the stream's largest cost on a busy table.

MySQL and MariaDB write a TableMap event before every statement's rows, so a workload of
single-row statements carries one TableMap per row. mysql-replication parses each one in full
(column types, metadata, the ``binlog_row_metadata=FULL`` optional metadata, column objects) and
builds a new table object, about as much work as decoding the row itself: profiled on a batch of
single-row INSERTs (``bench/stream_batch.py``) it was ~45 % of the stream's time, and every new
table object also defeated the row decoders' per-layout caches.

A TableMap's parse is a function of its bytes (table id, names, types, metadata) and of the
reader's options, so two TableMaps with identical bytes parse to identical results. This module
wraps ``TableMapEvent.__init__``: the body's bytes (with the options that steer the parse) are the
key, and a repeated TableMap takes the fields of the first one's parse — including its table
object, which rows events then share. A table id is not reused for another definition while the
server runs, and when it is (after a restart, or when an ALTER gives the table a new id) the
bytes differ anyway: the key is the whole event, not the id.

Only TableMaps that name their columns are cached. Without names (``binlog_row_metadata=MINIMAL``)
the library asks the server for them and ``table_map_binding`` then fills them in from the schema
history, which depends on more than the bytes; those are parsed every time, as before.
"""

from __future__ import annotations

import logging
from typing import Any

from pymysqlreplication.event import BinLogEvent
from pymysqlreplication.row_event import TableMapEvent
from pymysqlreplication.table import Table

logger = logging.getLogger(__name__)

MAX_ENTRIES = 1024
_cache: dict[tuple, dict[str, Any]] = {}
_library_init = TableMapEvent.__init__


class _SharedTable(Table):
    """A cached parse's table object, shared by the rows events of every repeated TableMap.

    Every rows event asks ``table.data["primary_key"]``, and the library's ``data`` builds a new
    dict of the table's public attributes each time (a tenth of a row's decode); a shared table's
    public attributes no longer change, so its ``data`` is built once (and copied for each caller).
    """

    @property
    def data(self) -> dict[str, Any]:
        cached = self.__dict__.get("_shared_data")
        if cached is None:
            cached = self.__dict__["_shared_data"] = dict(super().data)
        return dict(cached)


def _frozen(value: Any) -> Any:
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(sorted(map(repr, value))) if isinstance(value, set | frozenset) else tuple(value)
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def _key(body: bytes, ctl_connection: Any, kwargs: dict[str, Any]) -> tuple | None:
    options = tuple(kwargs.items())  # the reader passes the same options, in the same order, every time
    try:
        hash(options)
    except TypeError:  # e.g. a list of ``only_tables``
        options = tuple(sorted((k, _frozen(v)) for k, v in kwargs.items()))
        try:
            hash(options)
        except TypeError:
            return None  # an option of a shape we do not know: no caching, the library parses
    return body, ctl_connection._get_dbms(), options


def _cached_init(self: TableMapEvent, from_packet: Any, event_size: int, table_map: dict, ctl_connection: Any,
                 **kwargs: Any) -> None:
    if kwargs.get("verify_checksum"):  # the checksum check rewinds the packet: the library's way
        _library_init(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
        return
    # Peek at the body without moving the packet: the library's own parse measures what is left by
    # the pymysql packet's position (``BinLogPacketWrapper.bytes_to_read``), not by its own reads.
    raw = from_packet.packet
    body = bytes(raw._data[raw._position:raw._position + event_size])
    key = _key(body, ctl_connection, kwargs)
    parsed = _cache.get(key) if key is not None else None
    if parsed is not None:
        from_packet.advance(event_size)
        self.__dict__.update(parsed)
        # what belongs to this event (its packet, timestamp, size...) replaces the first one's
        BinLogEvent.__init__(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
        table_map[self.table_id] = self.table_obj
        return
    _library_init(self, from_packet, event_size, table_map, ctl_connection, **kwargs)
    table = getattr(self, "table_obj", None)
    if key is None or not self._processed or table is None or not all(c.name for c in table.columns):
        return
    if type(table) is Table:
        table.__class__ = _SharedTable
    if len(_cache) >= MAX_ENTRIES:
        _cache.clear()
    _cache[key] = dict(self.__dict__)


def install() -> None:
    """Wrap ``TableMapEvent.__init__`` (idempotent; every reader of this process benefits)."""
    if TableMapEvent.__init__ is not _cached_init:
        TableMapEvent.__init__ = _cached_init  # type: ignore[method-assign]
        logger.debug("TableMap parses are cached by their bytes")


def clear() -> None:
    """Forget every cached parse (tests)."""
    _cache.clear()
