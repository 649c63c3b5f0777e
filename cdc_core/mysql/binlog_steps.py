"""One binlog event → one step: where the stream is, whether it is between transactions, and the
change events the event carries.

The framing rules live here, apart from the reads built on them (``binlog_reader``):

* ``ev.packet.log_pos`` is the END offset of an event, which is exactly our
  :class:`~cdc_core.model.offsets.BinlogOffset` convention; the file name follows RotateEvents.
* MariaDB writes no ``BEGIN`` for DML: a transaction is ``GTID`` (not standalone), TableMap,
  Rows…, ``XID`` (or a ``COMMIT`` query for non-transactional engines). A DDL is a standalone GTID
  followed by its query. MySQL writes a GTID, then ``BEGIN`` or the DDL.
* A DDL commits implicitly and stands alone; statement-based DML (binlog_format STATEMENT/MIXED)
  belongs to the transaction around it, which must not be cut there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pymysqlreplication.event import (
    FormatDescriptionEvent,
    GtidEvent,
    HeartbeatLogEvent,
    MariadbGtidEvent,
    QueryEvent,
    RotateEvent,
    XidEvent,
)
from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent

from cdc_core.model.events import DataChangeEvent, SchemaChangeEvent
from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.gtid import GtidState
from cdc_core.mysql.query_text import statement
from cdc_core.mysql.types.charsets import UndecodableTextError

ChangeEvent = DataChangeEvent | SchemaChangeEvent

ROWS_EVENTS = (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)
_MARIADB_FL_STANDALONE = 0x01
_TRANSACTIONAL_STATEMENTS = {"INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD", "SELECT", "SET", "DO", "CALL",
                             "SAVEPOINT", "RELEASE", "XA", "HANDLER"}

QueryHandler = Callable[[str, str, BinlogOffset], tuple[ChangeEvent, ...]]
"""``(statement, default database, offset) -> events`` for a query that is no transaction marker."""
RowsHandler = Callable[[Any, BinlogOffset, "str | None"], tuple[ChangeEvent, ...]]
"""``(rows event, offset, transaction GTID) -> events``."""


@dataclass
class StreamPosition:
    """The reader's place while iterating (mutable, private to one read)."""

    file: str
    position: int
    gtid: GtidState
    in_transaction: bool = False
    transaction_gtid: str | None = None
    gtid_text: str | None = None  # ``gtid.text()``, kept up to date by ``gtid_moved`` (every event needs it)
    epoch: int = 0  # the start's epoch and server: every offset of one read is on one server
    server: str | None = None

    def __post_init__(self) -> None:
        self.gtid_moved()

    def gtid_moved(self) -> None:
        self.gtid_text = self.gtid.text()

    def offset(self, with_gtid: bool = True) -> BinlogOffset:
        return BinlogOffset(self.file, self.position, self.gtid_text if with_gtid else None, self.epoch, self.server)


@dataclass(frozen=True)
class BinlogStep:
    """One decoded binlog event: the events it yields and whether it closed a transaction."""

    offset: BinlogOffset
    events: tuple[ChangeEvent, ...] = ()
    boundary: bool = False  # after this step the stream is between transactions
    size: int = 0
    heartbeat: bool = False
    is_data: bool = True  # false for protocol noise (rotate, format description) not counted as events


def _first_word(query: str) -> str:
    text = query.lstrip()
    while text.startswith("/*") and "*/" in text and not text.startswith("/*!"):
        text = text[text.index("*/") + 2:].lstrip()
    return text.split(None, 1)[0].upper().rstrip(";") if text else ""


def step(ev: Any, pos: StreamPosition, on_query: QueryHandler, on_rows: RowsHandler) -> BinlogStep | None:
    """Advance ``pos`` past ``ev``; None for artificial events that have no place in the log."""
    end = ev.packet.log_pos
    size = getattr(ev, "event_size", 0) or 0
    if isinstance(ev, RotateEvent):
        pos.file = ev.next_binlog
        pos.position = ev.position
        return BinlogStep(pos.offset(), boundary=not pos.in_transaction, is_data=False)
    if isinstance(ev, HeartbeatLogEvent):
        return BinlogStep(pos.offset(), boundary=not pos.in_transaction, heartbeat=True, is_data=False)
    if not end:  # artificial events (e.g. the format description sent on connect)
        return None
    if isinstance(ev, FormatDescriptionEvent):
        pos.position = end
        return BinlogStep(pos.offset(), boundary=not pos.in_transaction, size=size, is_data=False)
    pos.position = end
    if isinstance(ev, MariadbGtidEvent):
        pos.transaction_gtid = ev.gtid
        pos.gtid.add_mariadb(ev.domain_id, ev.server_id, ev.gtid_seq_no)
        pos.gtid_moved()
        pos.in_transaction = not (ev.flags & _MARIADB_FL_STANDALONE)
        return BinlogStep(pos.offset(), size=size)
    if isinstance(ev, GtidEvent):
        pos.transaction_gtid = ev.gtid
        pos.gtid.add_mysql(ev.gtid)
        pos.gtid_moved()
        pos.in_transaction = True  # a BEGIN query or a DDL follows; both end the group
        return BinlogStep(pos.offset(), size=size)
    if isinstance(ev, XidEvent):
        pos.in_transaction = False
        return BinlogStep(pos.offset(), boundary=True, size=size)
    if isinstance(ev, QueryEvent):
        return _query(ev, pos, on_query, size)
    if isinstance(ev, TableMapEvent):
        return BinlogStep(pos.offset(), size=size)
    if isinstance(ev, ROWS_EVENTS):
        offset = pos.offset()
        return BinlogStep(offset, on_rows(ev, offset, pos.transaction_gtid), size=size)
    return BinlogStep(pos.offset(), boundary=not pos.in_transaction, size=size)


def _query(ev: QueryEvent, pos: StreamPosition, on_query: QueryHandler, size: int) -> BinlogStep:
    try:
        query = statement(ev)  # in the client's charset, exactly (mysql-replication reads it as UTF-8)
    except UndecodableTextError:
        if _first_word(str(ev.query)) not in _TRANSACTIONAL_STATEMENTS:
            raise  # a DDL: its names, ENUM members, defaults and comments must be exact
        query = str(ev.query)  # DML logged as a statement: only its first word is read (framing), never data
    head = query.lstrip()[:10].upper()
    if head.startswith("BEGIN") or head.startswith("XA START"):
        pos.in_transaction = True
        return BinlogStep(pos.offset(), size=size)
    if head.startswith("COMMIT") or head.startswith("ROLLBACK") or head.startswith("XA COMMIT"):
        pos.in_transaction = False
        return BinlogStep(pos.offset(), boundary=True, size=size)
    inside = pos.in_transaction and _first_word(query) in _TRANSACTIONAL_STATEMENTS
    pos.in_transaction = inside
    offset = pos.offset()
    default_db = ev.schema.decode() if isinstance(ev.schema, bytes | bytearray) else (ev.schema or "")
    return BinlogStep(offset, on_query(query, default_db, offset), boundary=not inside, size=size)
