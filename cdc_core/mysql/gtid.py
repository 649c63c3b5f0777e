"""GTID state carried along binlog offsets, so a resume point can also be given by GTID.

MariaDB's GTID position is one ``domain-server-seq`` per replication domain (``@@gtid_binlog_pos``
syntax, e.g. ``0-1-42,1-5-7``); MySQL's is a ``uuid:intervals`` set. We only ever *carry* it: the
order of offsets comes from file and position (``cdc_core.model.offsets``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pymysql
from pymysqlreplication.gtid import Gtid, GtidSet

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.connection import MySqlConnectionSettings


def is_mariadb_gtid(text: str) -> bool:
    parts = [p.strip() for p in text.split(",") if p.strip()]
    return bool(parts) and all(len(p.split("-")) == 3 and all(x.isdigit() for x in p.split("-")) for p in parts)


@dataclass
class GtidState:
    """The GTID position after the last event read (mutable while reading)."""

    mariadb: dict[int, tuple[int, int]] = field(default_factory=dict)
    mysql: GtidSet | None = None

    @classmethod
    def parse(cls, text: str | None) -> GtidState:
        state = cls()
        if not text or not text.strip():
            return state
        if is_mariadb_gtid(text):
            for part in text.split(","):
                if part.strip():
                    domain, server, seq = (int(x) for x in part.strip().split("-"))
                    state.mariadb[domain] = (server, seq)
        else:
            try:
                state.mysql = GtidSet(text.strip())
            except Exception as exc:  # noqa: BLE001 - library raises bare ValueErrors/asserts
                raise ValueError(
                    f"cannot parse GTID set {text!r}: expected MariaDB 'domain-server-seq[,...]' "
                    "or MySQL 'uuid:1-5[,...]'"
                ) from exc
        return state

    @classmethod
    def at_cursor(cls, cursor: Any, offset: BinlogOffset) -> GtidState:
        """As :meth:`at`, on an open cursor."""
        try:
            cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.position))
            row = cursor.fetchone()
        except pymysql.MySQLError:
            return cls()
        value = (next(iter(row.values())) if isinstance(row, dict) else row[0]) if row else None
        return cls.parse(value or None)

    @classmethod
    def at(cls, settings: Any, offset: BinlogOffset) -> GtidState:
        """The GTID position at a file/position, asked of the server (MariaDB's ``BINLOG_GTID_POS``).

        MySQL has no such function; the state then starts empty and fills as GTID events pass.
        """
        try:
            conn = pymysql.connect(**MySqlConnectionSettings.of(settings).pymysql_kwargs())
        except pymysql.MySQLError:
            return cls()
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.position))
                row = cur.fetchone()
            return cls.parse(row[0] if row and row[0] else None)
        except pymysql.MySQLError:
            return cls()
        finally:
            conn.close()

    def add_mariadb(self, domain: int, server: int, seq: int) -> None:
        self.mariadb[domain] = (server, seq)

    def add_mysql(self, gtid: str) -> None:
        if self.mysql is None:
            self.mysql = GtidSet(gtid)
        else:
            self.mysql = self.mysql + Gtid(gtid)

    def text(self) -> str | None:
        if self.mariadb:
            return ",".join(f"{d}-{s}-{n}" for d, (s, n) in sorted(self.mariadb.items()))
        if self.mysql is not None:
            return str(self.mysql)
        return None
