"""Shared fixtures: the real local stack (a private MariaDB; the Doris stand-in once it exists).

Session scope: one MariaDB per test session, on a free port in a temporary directory, started by
the same launcher as ``tidemark devstack up``. Tests isolate themselves by database name.
"""

from __future__ import annotations

import itertools
import os
import uuid

import pymysql
import pytest

from devstack.mysql import MariaDBServer
from devstack.procs import free_port

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.fixture(scope="session")
def mysql_server(tmp_path_factory) -> MariaDBServer:
    server = MariaDBServer(tmp_path_factory.mktemp("mariadb"), port=free_port())
    server.start()
    yield server
    server.stop()


def _root_connection(server: MariaDBServer, database: str | None = None) -> pymysql.connections.Connection:
    return pymysql.connect(unix_socket=server.endpoint.root_socket, user="root", database=database,
                           autocommit=True, charset="utf8mb4")


@pytest.fixture
def root_conn(mysql_server):
    """A root connection over the socket (autocommit), for test set-up and writers."""
    conn = _root_connection(mysql_server)
    yield conn
    conn.close()


_db_counter = itertools.count()


@pytest.fixture
def fresh_db(mysql_server, root_conn) -> str:
    """A new, empty database for one test; dropped afterwards."""
    name = f"t{next(_db_counter)}_{uuid.uuid4().hex[:8]}"
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE DATABASE `{name}`")
    yield name
    with root_conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.fixture(scope="session")
def doris_standin(tmp_path_factory):
    """The Doris stand-in on free ports (one per test session), as ``tidemark devstack up`` runs it."""
    from devstack.stack import DorisStandIn

    standin = DorisStandIn(tmp_path_factory.mktemp("doris"), fe_port=free_port(), be_port=free_port())
    standin.start()
    yield standin
    standin.stop()


@pytest.fixture(scope="session")
def spark_session():
    """One local Spark session for the whole test session (~10 s to start), with task retries."""
    from jobs.spark import build_session

    class _Local:
        parallelism = 2
        spark_master = None
        spark_remote = None
        spark_conf: dict = {}

    session = build_session(_Local)
    yield session
    session.stop()
