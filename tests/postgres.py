"""The machine's PostgreSQL server for tests: started when it is down, a fresh database per test.

Tests that need PostgreSQL use the ``postgres_db`` fixture (``tests/conftest.py``). The server is
the one the machine runs (``127.0.0.1:5432``, user ``postgres``, trust auth; ``TIDEMARK_TEST_PG_*``
move it); when it does not answer, the fixture starts it (``pg_ctlcluster``, then ``service``) and
fails the test naming the server if it still does not: never a silent skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid

import psycopg2
import pytest

HOST = os.environ.get("TIDEMARK_TEST_PG_HOST", "127.0.0.1")
PORT = int(os.environ.get("TIDEMARK_TEST_PG_PORT", "5432"))
USER = os.environ.get("TIDEMARK_TEST_PG_USER", "postgres")
SERVER = f"PostgreSQL at {HOST}:{PORT} (user {USER})"


def admin_connection(database: str = "postgres"):
    conn = psycopg2.connect(host=HOST, port=PORT, user=USER, dbname=database, connect_timeout=5)
    conn.autocommit = True
    return conn


def _answers() -> str | None:
    """None when the server answers, else why not."""
    try:
        admin_connection().close()
    except psycopg2.OperationalError as exc:
        return str(exc).strip().splitlines()[0]
    return None


def ensure_server() -> None:
    """The server answers, or is started, or the test fails naming it."""
    why = _answers()
    if why is None:
        return
    attempts = []
    if shutil.which("pg_ctlcluster"):
        attempts.append(["pg_ctlcluster", "15", "main", "start"])
    if shutil.which("service"):
        attempts.append(["service", "postgresql", "start"])
    for argv in attempts:
        subprocess.run(argv, capture_output=True, timeout=60, check=False)
        for _ in range(30):
            if _answers() is None:
                return
            time.sleep(0.5)
    pytest.fail(f"{SERVER} is needed by this test and does not answer ({why}); tried to start it with "
                f"{[' '.join(a) for a in attempts] or 'nothing (no pg_ctlcluster, no service)'}", pytrace=False)


def create_database(prefix: str = "tidemark_test") -> str:
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
    finally:
        conn.close()
    return name


def drop_database(name: str) -> None:
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        conn.close()


def url(database: str) -> str:
    """The plain ``postgresql://`` form the documentation gives."""
    return f"postgresql://{USER}@{HOST}:{PORT}/{database}"
