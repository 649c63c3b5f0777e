"""Which server the pipeline reads: the identity recorded with every offset.

A file and position only mean something on the server that wrote them. The identity is stored
with each offset (``BinlogOffset.server``) so that a stream pointed at another server — a
promoted replica after a failover — notices, and resumes by GTID instead of by a file position
of the old server (``cdc_core/mysql/failover.py``).

* MySQL: ``@@server_uuid``, unique per server (generated at first start).
* MariaDB has no ``@@server_uuid`` (MariaDB 10.11 neither): ``@@server_id``, which must differ
  between every server of a replication topology (a replica ignores events carrying its own id),
  so a primary and the replica promoted in its place always differ.
"""

from __future__ import annotations

from typing import Any

import pymysql


def mariadb_identity(server_id: int) -> str:
    return f"server_id={server_id}"


def read_identity(cursor: Any) -> str:
    """``server_uuid=…`` on MySQL, ``server_id=N`` on MariaDB."""
    try:
        cursor.execute("SELECT @@server_uuid")
        row = cursor.fetchone()
        value = (next(iter(row.values())) if isinstance(row, dict) else row[0]) if row else None
        if value:
            return f"server_uuid={value}"
    except pymysql.MySQLError:  # MariaDB: unknown system variable
        pass
    cursor.execute("SELECT @@server_id")
    row = cursor.fetchone()
    return mariadb_identity(int(next(iter(row.values())) if isinstance(row, dict) else row[0]))
