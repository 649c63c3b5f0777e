"""Is a resume point still on the server? A purged binlog must stop the pipeline, never skip data."""

from __future__ import annotations

from typing import Any

import pymysql

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.connection import MySqlConnectionSettings


class BinlogPurgedError(RuntimeError):
    """The offset to resume from lies in a binlog file the server no longer has."""

    def __init__(self, offset: BinlogOffset, available: list[str]):
        self.offset = offset
        self.available = available
        first = available[0] if available else "(none)"
        super().__init__(
            f"binlog file {offset.file} (needed to resume at {offset}) is no longer on the server: it was "
            f"purged (expire_logs_days / binlog_expire_logs_seconds or PURGE BINARY LOGS). The oldest file "
            f"still there is {first}. Changes between the committed offset and that file are lost to the "
            "binlog, so Tidemark will not skip them: run `tidemark resnapshot PIPELINE.yaml` (a new "
            "snapshot: every captured table read again from now, and the rows MySQL deleted meanwhile removed "
            "from Doris; the stream then goes on), or set pipeline option tidemark.binlog.on-purged: resnapshot "
            "to heal so unattended; "
            "and keep binlogs longer than the pipeline can be down."
        )


class GtidPurgedError(BinlogPurgedError):
    """After a failover: the new server holds every committed transaction, but the binlog files with
    the ones right after them were purged there. A purge like :class:`BinlogPurgedError` (the same
    heal: a resnapshot), not a divergence (``cdc_core/mysql/failover.py`` refuses that)."""

    def __init__(self, offset: BinlogOffset, available: list[str], oldest_position: str):
        self.offset = offset
        self.available = available
        self.oldest_position = oldest_position
        first = available[0] if available else "(none)"
        RuntimeError.__init__(
            self,
            f"the binlog to resume from after GTID position {offset.gtid_set} (committed on {offset.server}, "
            f"offset {offset}) is no longer on the source, which failed over to another server: its oldest binlog "
            f"{first} starts after GTID position {oldest_position}, so the transactions right after the committed "
            "ones were purged (expire_logs_days / binlog_expire_logs_seconds or PURGE BINARY LOGS). Changes "
            "there are lost to the binlog, so Tidemark will not skip them: run `tidemark resnapshot PIPELINE.yaml` "
            "(a new snapshot: every captured table read again from now, and the rows MySQL deleted meanwhile "
            "removed from Doris; the stream then goes on), or set pipeline option tidemark.binlog.on-purged: "
            "resnapshot to heal so unattended; and keep binlogs longer than the pipeline can be down."
        )


def binary_logs(cursor: Any) -> list[tuple[str, int]]:
    """``SHOW BINARY LOGS`` as (file, size) in order."""
    cursor.execute("SHOW BINARY LOGS")
    rows = cursor.fetchall()
    out = []
    for row in rows:
        values = list(row.values()) if isinstance(row, dict) else list(row)
        out.append((str(values[0]), int(values[1])))
    return out


def check_offset_available(cursor: Any, offset: BinlogOffset) -> None:
    logs = binary_logs(cursor)
    names = [name for name, _ in logs]
    if offset.file in names:
        return
    if names and offset.file_index > BinlogOffset(names[-1], 4).file_index:
        raise RuntimeError(
            f"binlog file {offset.file} (resume point {offset}) is newer than the server's last binlog "
            f"{names[-1]}: the offset belongs to another server, or the server's binlogs were reset "
            "(RESET MASTER). Take a new snapshot."
        )
    raise BinlogPurgedError(offset, names)


def ensure_offset_available(settings: Any, offset: BinlogOffset) -> None:
    """Raise :class:`BinlogPurgedError` if ``offset.file`` is not in ``SHOW BINARY LOGS``."""
    conn = pymysql.connect(**MySqlConnectionSettings.of(settings).pymysql_kwargs())
    try:
        with conn.cursor() as cur:
            check_offset_available(cur, offset)
    finally:
        conn.close()
