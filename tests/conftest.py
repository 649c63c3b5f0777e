"""Shared fixtures: the real local stack (a private MariaDB, the Doris stand-in, local Spark), and the tiers.

Session scope: one MariaDB per test session, on a free port in a temporary directory, started by
the same launcher as ``tidemark devstack up``. Tests isolate themselves by database name.

Tiers: a test that needs a server (MariaDB, the Doris stand-in, Dagster's webserver or daemon) or Spark
is marked ``integration``: automatically when it uses one of ``SERVER_FIXTURES`` (directly or through
another fixture), explicitly with ``@pytest.mark.integration`` when it starts its servers itself. Every
other test is the unit tier, ``make test-unit`` (``-m "not integration"``), which runs with
``--no-servers``: any launch of a server process from the test process then fails the test, so a
test that needs a server and lacks the mark cannot hide in the fast tier. ``make test`` runs both
tiers in one session, the unit tier first.

Under pytest-xdist (``make test`` runs ``-n 2 --dist worksteal``) each worker is a pytest process of
its own: it collects and orders the tests as above, and the session fixtures below (MariaDB, the
stand-in, Spark, Dagster's test instance) start once per worker, on free ports in the worker's own
temp directory. worksteal gives each worker a contiguous share of that order, so the unit tier runs
first on the first worker.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import PurePath

import pymysql
import pytest

from devstack.mysql import MariaDBServer
from devstack.procs import free_port

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# The CLI's log file (orchestration/cli/cli_logging.py), for every in-process and subprocess run of
# `tidemark` in the session: under the temp directory, not the working tree.
os.environ.setdefault("TIDEMARK_LOG_FILE", os.path.join(tempfile.gettempdir(),
                                                        f"tidemark-tests-{os.getpid()}", "tidemark.log"))

# The fixtures that start a server or Spark; a test using any of them is in the integration tier.
# ``doris`` is the stand-in of tests/sink and of tests/doris_standin; ``private_standin`` is a
# module's own stand-in (tests/schema/test_daemon_sensor.py).
# ``postgres_db`` / ``postgres_databases``: fresh databases on the machine's PostgreSQL server (tests/postgres.py).
# ``mariadb_servers``: MariaDB servers of a test's own (a primary and its replicas: failover tests).
SERVER_FIXTURES = frozenset({"mysql_server", "doris_standin", "doris", "private_standin", "spark_session",
                             "postgres_db", "postgres_databases", "mariadb_servers"})

# Programs whose launch means a server or Spark: MariaDB, the stand-in, Dagster's services, the JVM.
_SERVER_PROGRAMS = frozenset({
    "mariadbd", "mysqld", "mariadb-install-db", "mysql_install_db", "dagster-webserver", "dagster-daemon",
    "spark-submit", "spark-class", "java",
})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-servers", action="store_true",
                     help="fail any test that launches a server or Spark (proves the unit tier needs none)")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SERVER_FIXTURES.intersection(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)
    # The unit tier first (a stable sort keeps each tier's order): its failures show within a minute.
    items.sort(key=lambda item: item.get_closest_marker("integration") is not None)


def _launches_a_server(args: str | bytes | Sequence) -> bool:
    argv = [os.fsdecode(a) for a in ([args] if isinstance(args, str | bytes | os.PathLike) else args)]
    if (any(PurePath(a).name in _SERVER_PROGRAMS for a in argv) or "devstack.doris" in argv
            or "orchestration.cli.dagster_daemon" in argv):
        return True
    cli = any(a == "orchestration.cli" or PurePath(a).name == "tidemark" for a in argv)
    return cli and bool({"devstack", "dev"} & set(argv)) and "down" not in argv


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("--no-servers"):
        return
    original = subprocess.Popen.__init__

    def refuse_servers(self, args, *more, **kwargs):
        if _launches_a_server(args):
            raise RuntimeError(f"--no-servers: this test launches a server ({args!r}); "
                               "mark it @pytest.mark.integration or use a fixture in SERVER_FIXTURES")
        original(self, args, *more, **kwargs)

    subprocess.Popen.__init__ = refuse_servers


@pytest.fixture(scope="session")
def mysql_server(tmp_path_factory) -> MariaDBServer:
    server = MariaDBServer(tmp_path_factory.mktemp("mariadb"), port=free_port())
    server.start()
    yield server
    server.stop()


@pytest.fixture
def mariadb_servers():
    """``mariadb_servers(cls, base_dir, ...)`` builds a server of a test's own — a
    :class:`~devstack.mysql.MariaDBServer`, or a :class:`~devstack.mysql_replica.MariaDBReplica` of
    one (the test starts it) — and stops every one it built after the test, replicas first."""
    started: list[MariaDBServer] = []

    def make(cls: type, *args, **kw) -> MariaDBServer:
        server = cls(*args, **kw)
        started.append(server)
        return server

    yield make
    for server in reversed(started):
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


@pytest.fixture
def postgres_databases():
    """``postgres_databases()`` makes a new database on the machine's PostgreSQL server (started if
    it is down, the test failed naming it if it cannot be) and returns its plain ``postgresql://``
    URL; every one is dropped after the test."""
    from tests import postgres

    postgres.ensure_server()
    made: list[str] = []

    def make() -> str:
        made.append(postgres.create_database())
        return postgres.url(made[-1])

    yield make
    for name in made:
        postgres.drop_database(name)


@pytest.fixture
def postgres_db(postgres_databases) -> str:
    """One new database on the machine's PostgreSQL server: its ``postgresql://`` URL."""
    return postgres_databases()


@pytest.fixture(scope="session")
def doris_standin(tmp_path_factory):
    """The Doris stand-in on free ports (one per test session), as ``tidemark devstack up`` runs it."""
    from devstack.stack import DorisStandIn

    standin = DorisStandIn(tmp_path_factory.mktemp("doris"), fe_port=free_port(), be_port=free_port())
    standin.start()
    yield standin
    standin.stop()


@pytest.fixture
def doris_txn_limit(doris_standin):
    """``doris_txn_limit(n)`` sets the session stand-in's ``max_running_txn_num_per_db`` (Doris's
    default, 100, otherwise) for one test; the limit in force before is restored afterwards."""
    before = doris_standin.txn_stats()["max_running_txn_num_per_db"]
    yield doris_standin.set_txn_limit
    doris_standin.set_txn_limit(before)


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
