"""The Doris stand-in for the sink tests: one process per session on free ports, killed at the end.

It runs with a password, so every test also checks that the password never leaks into errors.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests

from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.sink import DorisSink
from cdc_core.schema import Column, TableId, TableSchema
from devstack.procs import free_port

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "s3cr3t-Pw!"


@dataclass
class StandIn:
    host: str
    fe_port: int
    be_port: int
    user: str
    password: str
    process: subprocess.Popen

    @property
    def fe(self) -> str:
        return f"{self.host}:{self.fe_port}"

    @property
    def be(self) -> str:
        return f"{self.host}:{self.be_port}"

    def faults(self, *specs: dict) -> None:
        resp = requests.post(f"http://{self.fe}/_standin/faults", json=list(specs), timeout=5)
        resp.raise_for_status()

    def active_faults(self) -> list:
        return requests.get(f"http://{self.fe}/_standin/faults", timeout=5).json()["faults"]

    def clear_faults(self) -> None:
        requests.delete(f"http://{self.fe}/_standin/faults", timeout=5).raise_for_status()


@pytest.fixture(scope="session")
def doris(tmp_path_factory) -> StandIn:
    data = tmp_path_factory.mktemp("doris-standin")
    fe, be = free_port(), free_port()
    while be == fe:
        be = free_port()
    log = open(data / "standin.log", "wb")  # noqa: SIM115 - closed at teardown
    proc = subprocess.Popen(
        [sys.executable, "-m", "devstack.doris", "--host", "127.0.0.1", "--fe-port", str(fe), "--be-port", str(be),
         "--data-dir", str(data / "data"), "--password", PASSWORD],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if requests.get(f"http://127.0.0.1:{fe}/api/health", timeout=1).status_code == 200:
                break
        except requests.RequestException:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"Doris stand-in did not start; see {data / 'standin.log'}")
        time.sleep(0.1)
    yield StandIn("127.0.0.1", fe, be, "root", PASSWORD, proc)
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
    log.close()


@pytest.fixture(autouse=True)
def _no_faults_left(request):
    yield
    if "doris" in request.fixturenames:
        request.getfixturevalue("doris").clear_faults()


_counter = itertools.count()


@pytest.fixture
def doris_db(doris) -> str:
    """A fresh Doris database name (created by the test through the sink)."""
    return f"sink{next(_counter)}_{uuid.uuid4().hex[:6]}"


def make_client(doris: StandIn, **kwargs) -> DorisHttpClient:
    kwargs.setdefault("backoff_s", 0.05)
    return DorisHttpClient(doris.fe, doris.user, doris.password, **kwargs)


TEST_TYPES = {
    "int": "INT", "bigint": "BIGINT", "varchar": "VARCHAR({n})", "decimal": "DECIMALV3({p},{s})",
    "datetime": "DATETIMEV2(0)", "text": "STRING", "tinyint": "TINYINT", "date": "DATEV2",
}


def test_type_mapper(column: Column) -> str:
    """A small local MySQL → Doris mapping for the tests (the real one is cdc_core.mysql.types)."""
    template = TEST_TYPES[column.data_type]
    return template.format(n=(column.char_length or 1) * 3, p=column.numeric_precision, s=column.numeric_scale)


test_type_mapper.__test__ = False  # not a test


@pytest.fixture
def sink(doris) -> DorisSink:
    s = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper,
                  table_properties={"replication_num": "1"})
    yield s
    s.close()


def users_schema(db: str, table: str = "users") -> TableSchema:
    return TableSchema(
        TableId(db, table),
        (
            Column("name", "varchar(32)", "varchar", True, None, "user name", char_length=32),
            Column("id", "int(11)", "int", False),
            Column("score", "decimal(10,2)", "decimal", True, numeric_precision=10, numeric_scale=2),
        ),
        primary_key=("id",),
        comment="people",
    )


def select(sink: DorisSink, target: TableId, columns: str = "*", order: str = "id") -> list[tuple]:
    res = sink.catalog.execute(target.database,
                               f"SELECT {columns} FROM `{target.database}`.`{target.table}` ORDER BY {order}")
    return [tuple(r) for r in res.rows]
