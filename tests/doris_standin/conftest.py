"""Fixtures: a Doris stand-in subprocess on free ports in a tmp dir, plus a small HTTP client."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

ROOT = Path(__file__).resolve().parents[2]
AUTH = ("root", "")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StandInProcess:
    """Launches ``python -m devstack.doris`` exactly as other code does, and talks to it."""

    def __init__(self, data_dir: Path, *extra: str) -> None:
        self.data_dir = data_dir
        self.extra = list(extra)
        self.fe_port = free_port()
        self.be_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = data_dir.parent / f"{data_dir.name}.log"

    @property
    def fe(self) -> str:
        return f"http://127.0.0.1:{self.fe_port}"

    @property
    def be(self) -> str:
        return f"http://127.0.0.1:{self.be_port}"

    def start(self) -> StandInProcess:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "devstack.doris", "--host", "127.0.0.1", "--fe-port", str(self.fe_port),
                 "--be-port", str(self.be_port), "--data-dir", str(self.data_dir), *self.extra],
                env=env, stdout=log, stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                r = requests.get(f"{self.fe}/api/health", timeout=1)
                if r.status_code == 200:
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.05)
        raise AssertionError("stand-in did not become ready:\n" + self.log.read_text())

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=30)

    # ---- client helpers -------------------------------------------------------------------------
    def q(self, stmt: str, db: str = "information_schema", **extra: Any) -> dict[str, Any]:
        r = requests.post(f"{self.fe}/api/query/default_cluster/{db}", json={"stmt": stmt, **extra}, auth=AUTH,
                          timeout=60)
        assert r.status_code == 200
        return r.json()

    def ok(self, stmt: str, db: str = "information_schema") -> dict[str, Any]:
        res = self.q(stmt, db)
        assert res["code"] == 0, res
        return res["data"]

    def rows(self, stmt: str, db: str) -> list[list[Any]]:
        return self.ok(stmt, db)["data"]

    def load(self, db: str, table: str, body: bytes | str, auth: Any = AUTH, headers: dict[str, str] | None = None,
             **kw: str) -> dict[str, Any]:
        hdrs = {"Expect": "100-continue", **(headers or {}), **kw}
        data = body.encode() if isinstance(body, str) else body
        r = requests.put(f"{self.be}/api/{db}/{table}/_stream_load", data=data, headers=hdrs, auth=auth, timeout=120)
        assert r.status_code == 200, r.text
        return r.json()

    def txn(self, db: str, op: str, txn_id: int | None = None, label: str | None = None) -> dict[str, Any]:
        headers = {"Expect": "100-continue", "txn_operation": op}
        if txn_id is not None:
            headers["txn_id"] = str(txn_id)
        if label is not None:
            headers["label"] = label
        r = requests.put(f"{self.be}/api/{db}/_stream_load_2pc", headers=headers, auth=AUTH, timeout=60)
        assert r.status_code == 200, r.text
        return r.json()

    def fault(self, **spec: Any) -> dict[str, Any]:
        r = requests.post(f"{self.fe}/_standin/faults", json=spec, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()

    def clear_faults(self) -> None:
        requests.delete(f"{self.fe}/_standin/faults", timeout=10)


@pytest.fixture(scope="session")
def doris(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandInProcess]:
    srv = StandInProcess(tmp_path_factory.mktemp("doris") / "data").start()
    yield srv
    srv.stop()


@pytest.fixture
def db(doris: StandInProcess, request: pytest.FixtureRequest) -> str:
    """A fresh database per test, named after it."""
    name = "t_" + request.node.name.replace("[", "_").replace("]", "").replace("-", "_")[:50]  # Doris database names: at most 64 characters (tests add suffixes)
    doris.ok(f"CREATE DATABASE `{name}`")
    return name
