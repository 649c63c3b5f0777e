"""TLS to MySQL and HTTPS to Doris by configuration, end to end (issue #15 item 8).

A private MariaDB offers TLS with a certificate signed by a throw-away CA (``devstack/tls.py``), and
the pipeline's user is created ``REQUIRE SSL``: any connection Tidemark opened in plain TCP (a
control query, a connectorx chunk scan, the binlog dump, the server check) would be refused, so a
snapshot and a binlog batch that load — and a verify that finds Doris equal — show every one of
them is encrypted, with ``ssl-mode: verify-ca`` checking the server's certificate. The Doris
stand-in serves HTTPS with a certificate from the same CA; the sink reaches it as
``fenodes: https://…`` with ``ssl-ca``. Then the failures a user meets: ``ssl-mode: required``
against a server without TLS, and a CA that did not sign the server's certificate, each told in one
line naming the option.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from devstack.mysql import MariaDBServer
from devstack.procs import free_port, two_free_ports
from devstack.stack import DorisStandIn
from devstack.tls import make_certificates
from tests.conftest import _root_connection
from tests.orchestration.test_e2e_dagster import _create_tables

pytestmark = pytest.mark.integration  # its own MariaDB and stand-in, started by this module

ROOT = Path(__file__).resolve().parents[2]
USER, PASSWORD = "tls_cdc", "tls-pw"

PIPELINE = """
source:
  type: mysql
  hostname: 127.0.0.1
  port: {port}
  username: {user}
  password: {password}
  tables: {db}.\\.*
  server-id: 5700-5704
  scan.incremental.snapshot.chunk.size: 500
  scan.incremental.snapshot.chunk.key-column: {db}.logs:log_id
{tls}
sink:
  type: doris
  fenodes: https://{fe}
  ssl-ca: {doris_ca}
  username: root
  password: ""
  table.create.properties.replication_num: 1
pipeline:
  name: {name}
  parallelism: 2
  tidemark.state.dir: {state}
"""


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    base = tmp_path_factory.mktemp("tls")
    return make_certificates(base / "ca"), make_certificates(base / "other-ca")


@pytest.fixture(scope="module")
def tls_mysql(certificates, tmp_path_factory):
    """A MariaDB offering TLS, with a user that may only connect over it."""
    server = MariaDBServer(tmp_path_factory.mktemp("mariadb-tls"), port=free_port(), server_id=9,
                           tls=certificates[0])
    server.start()
    server.root_sql("\n".join(
        f"CREATE USER IF NOT EXISTS '{USER}'@'{host}' IDENTIFIED BY '{PASSWORD}' REQUIRE SSL;\n"
        f"GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '{USER}'@'{host}';"
        for host in ("%", "localhost", "127.0.0.1")))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def https_doris(certificates, tmp_path_factory):
    fe, be = two_free_ports()
    standin = DorisStandIn(tmp_path_factory.mktemp("doris-https"), fe_port=fe, be_port=be,
                           tls=certificates[0])
    standin.start()
    yield standin
    standin.stop()


def _pipeline(base: Path, server: MariaDBServer, doris: DorisStandIn, db: str, tls: str, doris_ca: Path,
              user: str = USER, password: str = PASSWORD) -> Path:
    name = f"tls_{db}"
    path = base / f"{name}.yaml"
    path.write_text(PIPELINE.format(port=server.port, user=user, password=password, db=db, tls=tls,
                                    fe=doris.fe_http, doris_ca=doris_ca, name=name, state=base / "state"))
    return path


def _cli(*args: str, base: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(base / "dagster")}
    env.pop("TIDEMARK_FAULTS", None)
    return subprocess.run([sys.executable, "-m", "orchestration.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


def test_snapshot_and_binlog_over_verified_tls_to_mysql_and_https_to_doris(tls_mysql, https_doris, certificates,
                                                                          tmp_path):
    ca = certificates[0].ca
    db = f"tls_{uuid.uuid4().hex[:8]}"
    root = _root_connection(tls_mysql)
    try:
        with root.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{db}`")
        _create_tables(root, db)
        path = _pipeline(tmp_path, tls_mysql, https_doris, db, f"  ssl-mode: verify-ca\n  ssl-ca: {ca}", ca)
        checked = _cli("validate", "--connect", str(path), base=tmp_path)
        assert checked.returncode == 0, checked.stderr
        snapshot = _cli("run", str(path), "--once", base=tmp_path)
        assert snapshot.returncode == 0, snapshot.stderr[-4000:]
        with root.cursor() as cur:  # the binlog half: updates, deletes, inserts
            cur.execute(f"UPDATE `{db}`.items SET qty = qty + 7 WHERE id <= 300")
            cur.execute(f"DELETE FROM `{db}`.items WHERE id BETWEEN 1000 AND 1099")
            cur.executemany(f"INSERT INTO `{db}`.logs VALUES (%s, 'tls', '2026-11-23 00:00:00')",
                            [(i,) for i in range(5000, 5050)])
        stream = _cli("run", str(path), "--once", base=tmp_path)
        assert stream.returncode == 0, stream.stderr[-4000:]
        verify = _cli("verify", str(path), "--json", base=tmp_path)
        assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
        assert '"equal": true' in verify.stdout
        # The same user without TLS is refused by the server: what made every connection above TLS.
        plain = _pipeline(tmp_path, tls_mysql, https_doris, db, "  ssl-mode: disabled", ca)
        refused = _cli("validate", "--connect", str(plain), base=tmp_path)
        assert refused.returncode == 1
        assert "Access denied" in refused.stderr and "REQUIRE SSL" in refused.stderr, refused.stderr
    finally:
        with root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
        root.close()


def test_required_tls_against_a_server_without_it_fails_clearly(mysql_server, certificates, https_doris, tmp_path):
    endpoint = mysql_server.endpoint
    path = _pipeline(tmp_path, mysql_server, https_doris, "nodb", "  ssl-mode: required", certificates[0].ca,
                     user=endpoint.user, password=endpoint.password)
    done = _cli("validate", "--connect", str(path), base=tmp_path)
    assert done.returncode == 1
    line = done.stderr.strip().splitlines()[-1]
    assert "ssl-mode: required" in line and "does not offer TLS" in line, done.stderr


def test_a_ca_that_did_not_sign_the_servers_certificate_fails_naming_ssl_ca(tls_mysql, certificates, https_doris,
                                                                           tmp_path):
    wrong = certificates[1].ca
    path = _pipeline(tmp_path, tls_mysql, https_doris, "nodb", f"  ssl-mode: verify-ca\n  ssl-ca: {wrong}",
                     certificates[0].ca)
    done = _cli("validate", "--connect", str(path), base=tmp_path)
    assert done.returncode == 1
    line = done.stderr.strip().splitlines()[-1]
    assert "certificate verify failed" in line and f"ssl-ca ({wrong})" in line, done.stderr
