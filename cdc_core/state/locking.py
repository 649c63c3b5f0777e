"""One writer at a time on a state store, whatever process or machine it runs on.

A pipeline's runs read-modify-write their state (a batch's status, the committed offset, a
chunk's transactions); two writers interleaving would lose an update. Each backend gets the
lock it has natively, held for exactly one write transaction:

* **SQLite**: ``BEGIN IMMEDIATE`` (set up where the engine is made, ``cdc_core/state/store.py``) —
  the database file's write lock, taken before the first read.
* **PostgreSQL**: ``pg_advisory_xact_lock(key)`` as the transaction's first statement. It is
  released by the commit or rollback itself, so a crashed writer cannot leave it held; readers
  (``readonly`` transactions) never take it and never wait. Chosen over row locks (``SELECT …
  FOR UPDATE`` locks only rows that already exist: two first inserts of a key still race, and a
  transaction touches several tables) and over SERIALIZABLE (correct, but a conflict surfaces as
  a serialization failure every caller would have to retry). Under READ COMMITTED every statement
  after the lock sees everything the previous holder committed.
* **MySQL / MariaDB**: ``GET_LOCK(name)`` before the transaction and ``RELEASE_LOCK`` after it:
  MySQL has no transaction-scoped advisory lock; a session's locks go with its connection, so a
  crashed writer frees them too.

The key names the database (and schema), since one store's tables live in one: two pipelines
never share a store, and a pipeline's writers never run in parallel anyway.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.engine import Connection

logger = logging.getLogger(__name__)

LOCK_NAMESPACE = "tidemark.state"
MYSQL_LOCK_TIMEOUT_S = 600
"""How long a MySQL writer waits for another's transaction before it gives up (an error, not a hang)."""


def advisory_key(name: str) -> int:
    """A signed 64-bit key for ``pg_advisory_xact_lock``, stable across processes and machines
    (Python's ``hash`` is salted per process)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "big", signed=True)


def _postgres_lock_name(conn: Connection, purpose: str) -> str:
    schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
    return f"{LOCK_NAMESPACE}:{purpose}:{schema}"


@contextmanager
def write_transaction(conn: Connection, purpose: str = "write") -> Iterator[Connection]:
    """Open a transaction on ``conn`` holding the store's ``purpose`` lock (``write`` for the
    pipeline's updates, ``migrate`` for table creation), committed on success."""
    dialect = conn.dialect.name
    if dialect == "mysql":
        name = f"{LOCK_NAMESPACE}:{purpose}:{conn.exec_driver_sql('SELECT DATABASE()').scalar()}"[:64]
        got = conn.exec_driver_sql("SELECT GET_LOCK(%s, %s)", (name, MYSQL_LOCK_TIMEOUT_S)).scalar()
        conn.commit()  # the session lock outlives this; the transaction below starts clean
        if got != 1:
            raise TimeoutError(f"the state store's {purpose} lock was held for over {MYSQL_LOCK_TIMEOUT_S} s")
        try:
            with conn.begin():
                yield conn
        finally:
            conn.exec_driver_sql("SELECT RELEASE_LOCK(%s)", (name,))
            conn.commit()
        return
    with conn.begin():
        if dialect == "postgresql":
            key = advisory_key(_postgres_lock_name(conn, purpose))
            conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%(key)s)", {"key": key})
        yield conn
