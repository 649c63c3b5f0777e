"""Startup modes → where the stream starts and whether a snapshot comes first.

Flink CDC's ``scan.startup.mode``, as ``docs/mysql.md`` describes it:

==================  ========  ===============================================================
mode                snapshot  stream start
==================  ========  ===============================================================
initial             yes       min high watermark of the chunks (known once they are finished)
snapshot            yes       min HW, and the stream *stops* at the max HW
latest-offset       no        the server's current binlog end
earliest-offset     no        the first binlog file still on the server, position 4
specific-offset     no        file+pos (``skip-events`` moves it on by whole events), or a GTID
                              set resolved to the file and position where it resumes
timestamp           no        the start of the first transaction committed at or after the time
==================  ========  ===============================================================

``skip-rows`` cannot be an offset (rows share their event's offset); it is carried in the plan for
the first batch (:meth:`BinlogSplitReader.read_batch` ``skip_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, RotateEvent

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.gtid import GtidState, is_mariadb_gtid
from cdc_core.mysql.purge import binary_logs, check_offset_available
from cdc_core.mysql.source_identity import read_identity


class StartupError(ValueError):
    """The startup options cannot be resolved against this server."""


@dataclass(frozen=True)
class StartupPlan:
    mode: str
    snapshot: bool
    start: BinlogOffset | None  # None: the min HW of the chunks, once they are finished
    stop_at_max_high_watermark: bool = False
    skip_rows: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "snapshot": self.snapshot,
                "start": None if self.start is None else self.start.to_dict(),
                "stop_at_max_high_watermark": self.stop_at_max_high_watermark, "skip_rows": self.skip_rows}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StartupPlan:
        return cls(data["mode"], bool(data["snapshot"]),
                   None if data.get("start") is None else BinlogOffset.from_dict(data["start"]),
                   bool(data.get("stop_at_max_high_watermark")), int(data.get("skip_rows") or 0))


def _connect(settings: MySqlConnectionSettings) -> Any:
    return pymysql.connect(**settings.pymysql_kwargs())


def _with_gtid(cur: Any, offset: BinlogOffset) -> BinlogOffset:
    """The offset with its GTID position (MariaDB's ``BINLOG_GTID_POS``) and the server's identity:
    a start a failover can resume from."""
    try:
        cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.position))
        row = cur.fetchone()
        gtid = row[0] if row else None
    except pymysql.MySQLError:  # MySQL has no such function: the offset keeps the set it was given
        gtid = None
    return BinlogOffset(offset.file, offset.position, gtid or offset.gtid_set, server=read_identity(cur))


def _stream(settings: MySqlConnectionSettings, server_id: int, **kwargs: Any) -> BinLogStreamReader:
    return BinLogStreamReader(connection_settings=settings.pymysql_kwargs(), server_id=server_id, blocking=False,
                              enable_logging=False, **kwargs)


def resolve_gtid(settings: Any, gtid_set: str, server_id: int) -> BinlogOffset:
    """The file and position where a GTID set resumes: the start of the first transaction after it.

    MariaDB: a GTID dump (``is_mariadb=True, auto_position``) starts right after the set; the
    first GTID event's start position is the resume point. MySQL: the same with
    ``COM_BINLOG_DUMP_GTID``. If nothing follows the set, the server's current end is the answer.
    """
    settings = MySqlConnectionSettings.of(settings)
    mariadb = is_mariadb_gtid(gtid_set)
    stream = _stream(settings, server_id, auto_position=gtid_set, is_mariadb=mariadb,
                     only_events=[RotateEvent, MariadbGtidEvent, GtidEvent])
    file: str | None = None
    try:
        for ev in stream:
            if isinstance(ev, RotateEvent):
                file = ev.next_binlog
            elif isinstance(ev, MariadbGtidEvent | GtidEvent) and file is not None:
                return BinlogOffset(file, ev.packet.log_pos - ev.packet.event_size, gtid_set)
    except pymysql.MySQLError as exc:
        raise StartupError(f"the server cannot resume from GTID set {gtid_set!r}: {exc.args[-1]}") from None
    finally:
        stream.close()
    conn = _connect(settings)
    try:
        with conn.cursor() as cur:
            current = read_current_offset(cur)
    finally:
        conn.close()
    if mariadb and GtidState.parse(gtid_set).mariadb != GtidState.parse(current.gtid_set).mariadb:
        raise StartupError(f"GTID set {gtid_set!r} is not in this server's binlog (its position is "
                           f"{current.gtid_set!r})")
    return current


def _skip_events(settings: MySqlConnectionSettings, start: BinlogOffset, count: int, server_id: int) -> BinlogOffset:
    if count <= 0:
        return start
    stream = _stream(settings, server_id, resume_stream=True, log_file=start.file, log_pos=start.position,
                     only_events=None, filter_non_implemented_events=False)
    file, position, seen = start.file, start.position, 0
    try:
        for ev in stream:
            if isinstance(ev, RotateEvent):
                file = ev.next_binlog
                continue
            if not ev.packet.log_pos:
                continue
            position = ev.packet.log_pos
            seen += 1
            if seen >= count:
                break
    finally:
        stream.close()
    return BinlogOffset(file, position)


def _first_timestamp(settings: MySqlConnectionSettings, file: str, server_id: int) -> int | None:
    stream = _stream(settings, server_id, resume_stream=True, log_file=file, log_pos=4,
                     only_events=[MariadbGtidEvent, GtidEvent, QueryEvent])
    try:
        for ev in stream:
            return int(ev.timestamp) * 1000
    finally:
        stream.close()
    return None


def offset_for_timestamp(settings: Any, timestamp_ms: int, server_id: int) -> BinlogOffset:
    """The start of the first transaction (GTID event) whose time is at or after ``timestamp_ms``."""
    settings = MySqlConnectionSettings.of(settings)
    conn = _connect(settings)
    try:
        with conn.cursor() as cur:
            files = [name for name, _ in binary_logs(cur)]
            current = read_current_offset(cur)
    finally:
        conn.close()
    # the last file that begins at or before the time (files are in time order)
    chosen = files[0]
    lo, hi = 0, len(files) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        first = _first_timestamp(settings, files[mid], server_id)
        if first is not None and first <= timestamp_ms:
            chosen = files[mid]
            lo = mid + 1
        elif first is None:
            hi = mid - 1
        else:
            hi = mid - 1
    stream = _stream(settings, server_id, resume_stream=True, log_file=chosen, log_pos=4,
                     only_events=[RotateEvent, MariadbGtidEvent, GtidEvent])
    file = chosen
    try:
        for ev in stream:
            if isinstance(ev, RotateEvent):
                file = ev.next_binlog
                continue
            if int(ev.timestamp) * 1000 >= timestamp_ms:
                return BinlogOffset(file, ev.packet.log_pos - ev.packet.event_size)
    finally:
        stream.close()
    return current


def resolve_startup(source: Any, settings: Any = None, *, server_id: int | None = None) -> StartupPlan:
    """Resolve ``scan.startup.mode`` of ``source`` (``MySqlSourceOptions``) against the server.

    ``settings`` defaults to the source's own connection options; ``server_id`` (for the short
    replication reads that GTID/timestamp resolution needs) to the first of ``server-id``.
    """
    mode = source.startup_mode
    if mode == "initial":
        return StartupPlan(mode, True, None)
    if mode == "snapshot":
        return StartupPlan(mode, True, None, stop_at_max_high_watermark=True)
    settings = MySqlConnectionSettings.of(settings if settings is not None else source)
    sid = server_id if server_id is not None else source.server_id_range()[0]
    conn = _connect(settings)
    try:
        with conn.cursor() as cur:
            if mode == "latest-offset":
                return StartupPlan(mode, False, read_current_offset(cur))
            if mode == "earliest-offset":
                logs = binary_logs(cur)
                if not logs:
                    raise StartupError("the server has no binary logs (is log_bin on?)")
                return StartupPlan(mode, False, _with_gtid(cur, BinlogOffset(logs[0][0], 4)))
            if mode == "specific-offset":
                if source.startup_file and source.startup_pos is not None:
                    start = BinlogOffset(source.startup_file, int(source.startup_pos), source.startup_gtid_set)
                    check_offset_available(cur, start)
                    start = _skip_events(settings, start, int(source.startup_skip_events or 0), sid)
                    return StartupPlan(mode, False, _with_gtid(cur, start), skip_rows=int(source.startup_skip_rows or 0))
                start = resolve_gtid(settings, source.startup_gtid_set, sid)
                start = _skip_events(settings, start, int(source.startup_skip_events or 0), sid)
                return StartupPlan(mode, False, _with_gtid(cur, start), skip_rows=int(source.startup_skip_rows or 0))
            if mode == "timestamp":
                start = offset_for_timestamp(settings, int(source.startup_timestamp_millis), sid)
                return StartupPlan(mode, False, _with_gtid(cur, start))
    finally:
        conn.close()
    raise StartupError(f"unknown scan.startup.mode {mode!r}")
