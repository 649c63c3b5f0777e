"""The Doris stand-in for the sink tests: one process per session on free ports, killed at the end.

It runs with a password, so every test also checks that the password never leaks into errors.
"""

from __future__ import annotations

import itertools
import uuid
from pathlib import Path

import pytest
import requests

from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import Column, TableId, TableSchema
from devstack.procs import free_port
from devstack.stack import DorisStandIn

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "s3cr3t-Pw!"


class StandIn(DorisStandIn):
    """The devstack's stand-in launcher, with the fault-injection admin calls the tests use."""

    @property
    def fe(self) -> str:
        return self.fe_http

    @property
    def be(self) -> str:
        return self.be_http

    @property
    def verify(self) -> str | bool:
        return str(self.tls.ca) if self.tls is not None else True

    def faults(self, *specs: dict) -> None:
        resp = requests.post(f"{self.fe_url}/_standin/faults", json=list(specs), timeout=5, verify=self.verify)
        resp.raise_for_status()

    def active_faults(self) -> list:
        return requests.get(f"{self.fe_url}/_standin/faults", timeout=5, verify=self.verify).json()["faults"]

    def clear_faults(self) -> None:
        requests.delete(f"{self.fe_url}/_standin/faults", timeout=5, verify=self.verify).raise_for_status()


@pytest.fixture(scope="session")
def doris(tmp_path_factory) -> StandIn:
    standin = StandIn(tmp_path_factory.mktemp("doris-standin"), fe_port=free_port(), be_port=free_port(),
                      password=PASSWORD)
    standin.start()
    yield standin
    standin.stop()


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


@pytest.fixture
def users(sink, doris_db) -> TableId:
    """The Doris table ``users`` (:func:`users_schema`) created in this test's database."""
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    return target


def select(sink: DorisSink, target: TableId, columns: str = "*", order: str = "id") -> list[tuple]:
    res = sink.catalog.execute(target.database,
                               f"SELECT {columns} FROM `{target.database}`.`{target.table}` ORDER BY {order}")
    return [tuple(r) for r in res.rows]
