"""Dagster's SQLite files in a Tidemark-owned home: write-ahead log from their first statement,
and ``synchronous=NORMAL``.

Why: Dagster keeps a SQLite file per run (its event log), plus the index, the runs and the
schedules, each created when first opened. It creates a file's tables and indexes in SQLite's
default rollback-journal mode, one committed statement each, and only then switches the file to
the write-ahead log (WAL); every event it stores afterwards is a commit of its own, which SQLite's
default ``synchronous=FULL`` follows with an fsync of the log. A `tidemark run --once` creates three
run files (planning, snapshot, binlog) and, on its first run, the home's other three, and stores
about a hundred events: on this machine's shared disk each new file cost 0.3-0.8 s of wall for
0.1 s of CPU, nearly all of it waiting for fsyncs (docs/performance.md).

So every connection to a SQLite file under a registered home is put into WAL mode before
Dagster's first statement (for a new file its tables are then written to the log, not synced one by
one; for an existing file, which Dagster left in WAL mode, it changes nothing) and gets
``synchronous=NORMAL``, which SQLite documents as safe in WAL mode: the file is never corrupted,
a process that is killed loses nothing it committed, and only a power cut or an operating-system
crash can take back the last commits. What this weakens is therefore limited to Dagster's record
of the last moments before such a crash. Exactly-once does not rest on it: what is committed where
is in Tidemark's state store and in Doris's labels, whose writes are untouched (the filter below
is by path: the state store lives beside the home, never under it).

Only homes Tidemark owns are registered (``orchestration/cli/instance.py:prepare_home``), and the
event log of Tidemark's ``dagster.yaml`` template registers its own (``event_storage.py``); a
user's own Dagster home is used exactly as it is.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_homes: tuple[str, ...] = ()
_listening = False


def relax_sqlite_sync(home: Path | str) -> None:
    """Apply the pragmas above to every SQLite connection this process opens under ``home``
    from now on (idempotent)."""
    global _homes, _listening
    prefix = os.path.join(os.path.realpath(home), "")
    with _lock:
        if prefix not in _homes:
            _homes = (*_homes, prefix)
        if not _listening:
            from sqlalchemy import event
            from sqlalchemy.engine import Engine

            event.listen(Engine, "connect", _on_connect)
            _listening = True


def registered_homes() -> tuple[str, ...]:
    """The homes registered so far, each with a trailing separator."""
    return _homes


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    if not _homes or not isinstance(dbapi_connection, sqlite3.Connection):
        return
    try:
        files = dbapi_connection.execute("PRAGMA database_list").fetchall()
        main = next((row[2] for row in files if row[1] == "main"), "")
        if not main or not os.path.realpath(main).startswith(_homes):
            return
        dbapi_connection.execute("PRAGMA journal_mode=WAL")
        dbapi_connection.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.Error:  # busy with another process's init: Dagster's own statements retry and decide
        logger.debug("could not set the WAL pragmas on a Dagster SQLite file", exc_info=True)
