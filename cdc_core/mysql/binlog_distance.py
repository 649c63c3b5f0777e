"""How far a binlog offset is behind the server, in bytes and in seconds (for ``tidemark status``).

Bytes: ``SHOW BINARY LOGS`` gives every file's size, so a distance across rotations is the rest of
the first file, the whole files between and the position in the last one. A distance into a file
the server no longer lists is unknown (None), never guessed.

Seconds: how old the oldest change not yet applied is — the time in the header of the first event
after the offset, against the server's clock now (both the server's clock: no skew with the
machine asking). Only a replication client reads event headers (``SHOW BINLOG EVENTS`` has no
time), so this is one short, non-blocking dump that stops at that event. It runs under a server id
taken from the pipeline's ``server-id`` range with a named lock, the way a chunk reader takes one
(``cdc_core/mysql/server_ids.py``), never the stream's own first id: two replication clients with
one id cut each other off, and the stream may be running.
"""

from __future__ import annotations

import logging
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import (
    FormatDescriptionEvent,
    HeartbeatLogEvent,
    MariadbBinLogCheckPointEvent,
    MariadbGtidListEvent,
    PreviousGtidsEvent,
    RotateEvent,
    StopEvent,
)

from cdc_core.model.offsets import BinlogOffset, file_index
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.server_ids import acquire_server_id

logger = logging.getLogger(__name__)

# Events that frame the files or the dump rather than record a change: their time is when a file
# was opened or the dump began, not when anything was written.
_FRAMING = (RotateEvent, FormatDescriptionEvent, MariadbGtidListEvent, MariadbBinLogCheckPointEvent,
            PreviousGtidsEvent, HeartbeatLogEvent, StopEvent)


class EventTimeUnavailable(RuntimeError):
    """The first event's time cannot be read without disturbing the stream (the reason says why)."""


def bytes_between(logs: list[tuple[str, int]], start: BinlogOffset, end: BinlogOffset) -> int | None:
    """Binlog bytes from ``start`` to ``end``; ``logs`` is ``SHOW BINARY LOGS`` as (file, size).
    0 when ``end`` is not past ``start``; None when a file between them is not listed (purged)."""
    if end <= start:
        return 0
    if start.file == end.file:
        return end.position - start.position
    sizes = dict(logs)
    between = [name for name, _ in logs if start.file_index < file_index(name) < end.file_index]
    if start.file not in sizes or end.file not in sizes \
            or len(between) != end.file_index - start.file_index - 1:
        return None
    return sizes[start.file] - start.position + sum(sizes[name] for name in between) + end.position


def first_event_time(settings: MySqlConnectionSettings, server_id_range: tuple[int, int],
                     after: BinlogOffset) -> float | None:
    """The time (Unix seconds, from the event header) of the first change event after ``after``;
    None when the binlog holds nothing after it.

    Raises :class:`EventTimeUnavailable` when the ``server-id`` range has no id besides the
    stream's, or every other id is in use by a reader.
    """
    lo, hi = server_id_range
    if hi == lo:
        raise EventTimeUnavailable(
            f"the source's 'server-id' is the single id {lo}, the stream's own; give a range (e.g. "
            f"'{lo}-{lo + 8}') so that a status check can read the binlog beside the stream")
    control = pymysql.connect(**settings.pymysql_kwargs(), autocommit=True)
    try:
        try:
            server_id = acquire_server_id(control, server_id_range, reserve_first_for_stream=True)
        except RuntimeError as exc:
            raise EventTimeUnavailable(str(exc)) from exc
        stream = BinLogStreamReader(
            connection_settings=settings.pymysql_kwargs(), server_id=server_id, resume_stream=True,
            blocking=False, log_file=after.file, log_pos=after.position, only_events=None,
            filter_non_implemented_events=False, is_mariadb=False, enable_logging=False,
        )
        try:
            for event in stream:
                if isinstance(event, _FRAMING) or not event.timestamp:
                    continue
                logger.debug("first event after %s: %s at %s", after, type(event).__name__, event.timestamp)
                return float(event.timestamp)
            return None
        except pymysql.MySQLError as exc:
            raise EventTimeUnavailable(f"the binlog after {after} cannot be read: {exc.args[-1]}") from exc
        finally:
            stream.close()
    finally:
        control.close()


def server_time(cursor: Any) -> float:
    """The server's clock now, in Unix seconds (what event headers are written with)."""
    cursor.execute("SELECT UNIX_TIMESTAMP(NOW(6))")
    (value,) = cursor.fetchone()
    return float(value)


__all__ = ["EventTimeUnavailable", "bytes_between", "first_event_time", "server_time"]
