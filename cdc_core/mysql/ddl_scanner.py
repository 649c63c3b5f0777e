"""Finding the first DDL on a captured table in a binlog range, cheaply (for the DDL sensor).

The sensor must notice a DDL as soon as it is in the binlog, every few seconds, without reading
the rows in between: ``SHOW BINLOG EVENTS`` lets the server walk its own files and send one short
line per event (rows events are a few bytes of text), so only the query events are parsed, with
the same :class:`~cdc_core.mysql.ddl.MySqlDdlParser` the stream uses. It needs no
replication connection (no server id to collide with the stream's) and the privilege the
pipeline user already has (``REPLICATION CLIENT`` = MariaDB's ``BINLOG MONITOR``).

A DDL the parser cannot read on a captured table counts as found: the schema-change job reads it
again with the stream's reader and reports the parse error in full.

It lives beside the binlog readers, not in the ``ddl`` package: it talks to the server, while the
parser only turns text into events.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.ddl import DdlParseError, MySqlDdlParser
from cdc_core.mysql.purge import BinlogPurgedError

_USE = re.compile(r"^use `((?:[^`]|``)*)`; (.*)$", re.DOTALL)
_SKIP_HEADS = ("BEGIN", "COMMIT", "ROLLBACK", "XA ", "SAVEPOINT", "RELEASE")


@dataclass(frozen=True)
class FoundDdl:
    """A DDL on captured table(s): its end offset (what the stream stops before) and its text."""

    offset: BinlogOffset
    ddl: str
    database: str
    tables: tuple[str, ...]
    event_types: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset.to_dict(), "ddl": self.ddl, "database": self.database,
                "tables": list(self.tables), "event_types": list(self.event_types)}


@dataclass(frozen=True)
class ScanResult:
    found: FoundDdl | None
    scanned_to: BinlogOffset  # no DDL on a captured table before this offset (from the scan's start)
    events_scanned: int


def split_query_info(info: str) -> tuple[str, str]:
    """``SHOW BINLOG EVENTS``' Info of a query event → (default database, statement)."""
    m = _USE.match(info)
    if m:
        return m.group(1).replace("``", "`"), m.group(2)
    return "", info


class DdlScanner:
    """Scans ``(start, stop]`` of the binlog for the first DDL on a captured table."""

    def __init__(self, connect: Callable[[], Any], is_captured: Callable[[TableId], bool],
                 schema_of: Callable[[TableId], TableSchema | None], *, parse_online_schema_changes: bool = False,
                 page_size: int = 5000):
        self._connect = connect
        self.is_captured = is_captured
        self.schema_of = schema_of
        self.parse_online_schema_changes = parse_online_schema_changes
        self.page_size = page_size

    def scan(self, start: BinlogOffset, stop: BinlogOffset) -> ScanResult:
        parser = MySqlDdlParser(parse_online_schema_changes=self.parse_online_schema_changes)
        conn = self._connect()
        scanned = 0
        try:
            with conn.cursor() as cur:
                cur.execute("SHOW BINARY LOGS")
                files = [row[0] for row in cur.fetchall()]
                if start.file not in files:
                    # the stream cannot resume there either: its run heals (on-purged: resnapshot)
                    # or stops naming the fix; the caller says so instead of failing a sensor tick
                    raise BinlogPurgedError(start, files)
                last = start
                for name in files[files.index(start.file):]:
                    if BinlogOffset(name, 0).file_index > stop.file_index:
                        break
                    pos = start.position if name == start.file else 4
                    while True:
                        cur.execute(f"SHOW BINLOG EVENTS IN %s FROM {int(pos)} LIMIT {int(self.page_size)}", (name,))
                        rows = cur.fetchall()
                        for _log, _pos, kind, _server, end, info in rows:
                            scanned += 1
                            # on the start's server and epoch: after a failover an unstamped offset
                            # (epoch 0) orders before every offset of the stream (epoch ≥ 1), and the
                            # schema change took its DDL for one the stream had passed (found by the soak)
                            offset = BinlogOffset(name, int(end), epoch=start.epoch, server=start.server)
                            if offset > stop:
                                return ScanResult(None, last, scanned)
                            if kind == "Query" and info and not info.lstrip().upper().startswith(_SKIP_HEADS):
                                found = self._ddl(parser, offset, info)
                                if found is not None:
                                    return ScanResult(found, last, scanned)
                            last = offset
                            pos = int(end)
                        if len(rows) < self.page_size:
                            break
                return ScanResult(None, last, scanned)
        finally:
            conn.close()

    def _ddl(self, parser: MySqlDdlParser, offset: BinlogOffset, info: str) -> FoundDdl | None:
        database, statement = split_query_info(info)
        try:
            events = parser.parse_captured(statement, database, self.is_captured, self.schema_of)
        except DdlParseError:
            return FoundDdl(offset, statement, database, (), ("unparsed",))
        if not events:
            return None
        tables = tuple(dict.fromkeys(str(e.table_id) for e in events))
        return FoundDdl(offset, statement, database, tables, tuple(e.type_name for e in events))


__all__ = ["DdlScanner", "FoundDdl", "ScanResult", "split_query_info"]
