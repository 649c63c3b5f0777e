"""The server's current binlog end, read by whichever status statement the server understands.

The position itself is the model's :class:`~cdc_core.model.offsets.BinlogOffset`; this module is
the one place that asks a live MySQL/MariaDB for it (the model package does no I/O). Every offset
it returns carries the GTID position at exactly that file and position and the server's identity
(``cdc_core/mysql/source_identity.py``): a watermark or a stream start is then a point a failover
can resume from (``docs/mysql.md``, "Failover by GTID").
"""

from __future__ import annotations

import logging
from typing import Any

import pymysql

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.source_identity import mariadb_identity, read_identity

logger = logging.getLogger(__name__)

_STABLE_TRIES = 5


_STATUS_STATEMENTS = ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS", "SHOW BINLOG STATUS")


def _status(cursor: Any) -> tuple[str, int, str | None]:
    """(file, position, MySQL's ``Executed_Gtid_Set`` or None) from the first status statement
    the server accepts.

    MySQL 8.4 dropped ``SHOW MASTER STATUS`` for ``SHOW BINARY LOG STATUS``; MariaDB 10.5.2+
    calls it ``SHOW BINLOG STATUS``. Both still accept ``SHOW MASTER STATUS`` on older releases.
    """
    return _status_and_statement(cursor)[0]


def _status_and_statement(cursor: Any) -> tuple[tuple[str, int, str | None], str]:
    last_error: Exception | None = None
    for statement in _STATUS_STATEMENTS:
        try:
            cursor.execute(statement)
            row = cursor.fetchone()
        except Exception as exc:  # noqa: BLE001 - try the next spelling; report the last failure
            last_error = exc
            continue
        return _status_row(row), statement
    raise RuntimeError(f"Cannot read the binlog position: {last_error}")


def _status_row(row: Any) -> tuple[str, int, str | None]:
    if not row:
        raise RuntimeError(
            "The MySQL server has no binary log (SHOW MASTER STATUS is empty): start it with "
            "log_bin enabled (e.g. --log-bin=binlog) and binlog_format=ROW"
        )
    values = list(row.values()) if isinstance(row, dict) else list(row)
    gtid = None
    if isinstance(row, dict):
        gtid = row.get("Executed_Gtid_Set") or None
    elif len(values) >= 5:
        gtid = values[4] or None
    return str(values[0]), int(values[1]), (str(gtid).replace("\n", "") if gtid else None)


def read_current_offset(cursor: Any) -> BinlogOffset:
    """The server's current binlog end, with its GTID position and the server's identity.

    MySQL's status row holds the executed GTID set of that very position. MariaDB's GTID position
    is a variable read by a second statement: a transaction committed between the two would put a
    GTID into the offset that lies after its position (and a failover would skip it), so the
    status is read again and the pair kept only when the position did not move (else MariaDB's
    ``BINLOG_GTID_POS`` of the position decides).
    """
    file, position, gtid = _status(cursor)
    if gtid is not None:
        return BinlogOffset(file, position, gtid, server=read_identity(cursor))
    mariadb = _mariadb_gtid_and_identity(cursor)
    if mariadb is None:  # MySQL without GTIDs (gtid_mode=OFF): nothing to carry
        return BinlogOffset(file, position, None, server=read_identity(cursor))
    for _ in range(_STABLE_TRIES):
        gtid, identity = mariadb
        again = _status(cursor)
        if again[:2] == (file, position):
            return BinlogOffset(file, position, gtid, server=identity)
        file, position, _ = again
        mariadb = _mariadb_gtid_and_identity(cursor) or mariadb
    cursor.execute("SELECT BINLOG_GTID_POS(%s, %s)", (file, position))
    row = cursor.fetchone()
    value = (next(iter(row.values())) if isinstance(row, dict) else row[0]) if row else None
    logger.debug("binlog moved during %d status reads; GTID position of %s:%d by BINLOG_GTID_POS", _STABLE_TRIES,
                 file, position)
    return BinlogOffset(file, position, value or None, server=mariadb[1])


def _mariadb_gtid_and_identity(cursor: Any) -> tuple[str | None, str] | None:
    """MariaDB's ``@@gtid_binlog_pos`` and identity in one statement; None on MySQL."""
    try:
        cursor.execute("SELECT @@gtid_binlog_pos, @@server_id")
        row = cursor.fetchone()
    except pymysql.MySQLError:  # MySQL has no such variable
        return None
    values = list(row.values()) if isinstance(row, dict) else list(row)
    return (values[0] or None), mariadb_identity(int(values[1]))


class CurrentOffsetReader:
    """:func:`read_current_offset` in one round trip, on a connection opened with several
    statements per query allowed (``connect(..., multi_statements=True)``).

    On MariaDB the offset takes three statements (status, GTID position and identity, status
    again): a chunk read's watermark paid three round trips to the server, each a wake-up of a
    server thread on a busy machine. The first call here reads as :func:`read_current_offset` does
    and learns the server's spelling of the status statement; later calls send the same three
    statements as one query and keep the pair only when both status rows agree (else the full
    read, with its retries). MySQL reads as :func:`read_current_offset` always does.
    """

    def __init__(self) -> None:
        self._batch: str | None = None
        self._learned = False

    def read(self, cursor: Any) -> BinlogOffset:
        if self._batch is not None:
            offset = self._read_batch(cursor, self._batch)
            if offset is not None:
                return offset
            return read_current_offset(cursor)
        if self._learned:
            return read_current_offset(cursor)
        self._learned = True
        (file, position, gtid), statement = _status_and_statement(cursor)
        mariadb = None if gtid is not None else _mariadb_gtid_and_identity(cursor)
        if mariadb is not None:
            self._batch = f"{statement}; SELECT @@gtid_binlog_pos, @@server_id; {statement}"
        return read_current_offset(cursor)

    @staticmethod
    def _read_batch(cursor: Any, batch: str) -> BinlogOffset | None:
        cursor.execute(batch)
        try:
            first = _status_row(cursor.fetchone())
            cursor.nextset()
            row = cursor.fetchone()
            cursor.nextset()
            again = _status_row(cursor.fetchone())
        finally:
            while cursor.nextset():
                pass
        if first[:2] != again[:2]:
            return None
        values = list(row.values()) if isinstance(row, dict) else list(row)
        return BinlogOffset(first[0], first[1], values[0] or None, server=mariadb_identity(int(values[1])))
