"""The server's current binlog end, read by whichever status statement the server understands.

The position itself is the model's :class:`~cdc_core.model.offsets.BinlogOffset`; this module is
the one place that asks a live MySQL/MariaDB for it (the model package does no I/O).
"""

from __future__ import annotations

from typing import Any

from cdc_core.model.offsets import BinlogOffset


def read_current_offset(cursor: Any) -> BinlogOffset:
    """The server's current binlog end, by whichever statement the server understands.

    MySQL 8.4 dropped ``SHOW MASTER STATUS`` for ``SHOW BINARY LOG STATUS``; MariaDB 10.5.2+
    calls it ``SHOW BINLOG STATUS``. Both still accept ``SHOW MASTER STATUS`` on older releases.
    """
    last_error: Exception | None = None
    for statement in ("SHOW MASTER STATUS", "SHOW BINARY LOG STATUS", "SHOW BINLOG STATUS"):
        try:
            cursor.execute(statement)
            row = cursor.fetchone()
        except Exception as exc:  # noqa: BLE001 - try the next spelling; report the last failure
            last_error = exc
            continue
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
        if gtid is None:
            gtid = _mariadb_gtid(cursor)
        return BinlogOffset(str(values[0]), int(values[1]), gtid)
    raise RuntimeError(f"Cannot read the binlog position: {last_error}")


def _mariadb_gtid(cursor: Any) -> str | None:
    try:
        cursor.execute("SELECT @@gtid_binlog_pos")
        row = cursor.fetchone()
    except Exception:  # noqa: BLE001 - MySQL has no such variable; GTID then comes from the status row
        return None
    if not row:
        return None
    value = next(iter(row.values())) if isinstance(row, dict) else row[0]
    return value or None
