"""Durability: state survives SIGTERM and kill -9, including open precommitted transactions."""

from __future__ import annotations

import contextlib
import json
import signal
import threading
import time

import pytest
import requests

from .conftest import AUTH, StandInProcess

pytestmark = pytest.mark.integration  # each test starts (and kills) its own stand-in

JSONL = {"format": "json", "read_json_by_line": "true"}


def _rows(*rows: dict) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


def test_kill_9_with_precommitted_txn_then_commit_after_restart(tmp_path) -> None:
    data = tmp_path / "data"
    srv = StandInProcess(data).start()
    srv.ok("CREATE DATABASE d")
    srv.ok("CREATE TABLE d.t (id BIGINT NOT NULL, v VARCHAR(20), ver BIGINT) UNIQUE KEY(id) "
           "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ('function_column.sequence_col' = 'ver')")
    assert srv.load("d", "t", _rows({"id": 1, "v": "committed", "ver": 1}), label="base", **JSONL)["Status"] == "Success"
    pre = srv.load("d", "t", _rows({"id": 1, "v": "pending", "ver": 2}, {"id": 2, "v": "new", "ver": 2}),
                   label="pending", two_phase_commit="true", **JSONL)
    assert pre["Status"] == "Success"
    gone = srv.load("d", "t", _rows({"id": 3, "v": "aborted", "ver": 1}), label="gone", two_phase_commit="true", **JSONL)
    srv.txn("d", "abort", txn_id=gone["TxnId"])
    visible = srv.rows("SELECT id, v FROM t ORDER BY id", "d")
    assert visible == [[1, "committed"]]
    staging = data / "staging"  # only the precommitted load's rows wait there
    assert sorted(p.name for p in staging.iterdir()) == [f"{pre['TxnId']}.arrow"]
    (staging / "99999.arrow").write_bytes(b"a load that died before its precommit")
    (staging / "99998.tmp").write_bytes(b"a staged file cut short")
    assert srv.stop(signal.SIGKILL) == -signal.SIGKILL

    again = StandInProcess(data)
    again.fe_port, again.be_port = srv.fe_port, srv.be_port
    again.start()
    try:
        assert again.rows("SELECT id, v FROM t ORDER BY id", "d") == visible  # unchanged, pending still invisible
        state = requests.get(f"{again.fe}/api/d/get_load_state?label=pending", auth=AUTH).json()["data"]
        assert state == "PRECOMMITTED"
        assert sorted(p.name for p in staging.iterdir()) == [f"{pre['TxnId']}.arrow"]  # orphans removed
        dup = again.load("d", "t", b"", label="pending", two_phase_commit="true", **JSONL)
        assert dup["Status"] == "Label Already Exists" and dup["ExistingJobStatus"] == "PRECOMMITTED"
        assert again.txn("d", "commit", txn_id=pre["TxnId"])["status"] == "Success"
        assert again.rows("SELECT id, v FROM t ORDER BY id", "d") == [[1, "pending"], [2, "new"]]
        assert list(staging.iterdir()) == []  # applied, then deleted
        assert again.txn("d", "abort", txn_id=gone["TxnId"])["msg"].endswith("is already aborted, abort reason: User Abort")
        # schema, labels and txn ids carry on
        assert again.load("d", "t", _rows({"id": 1}), label="base", **JSONL)["ExistingJobStatus"] == "FINISHED"
        fresh = again.load("d", "t", _rows({"id": 4, "v": "x", "ver": 1}), **JSONL)
        assert fresh["TxnId"] > pre["TxnId"]
        assert again.stop() == 0  # clean SIGTERM shutdown
    finally:
        if again.proc and again.proc.poll() is None:
            again.proc.kill()

    third = StandInProcess(data).start()
    try:
        assert third.rows("SELECT count(*) FROM t", "d") == [[3]]
        assert requests.get(f"{third.fe}/api/d/t/_schema", auth=AUTH).json()["data"]["keysType"] == "UNIQUE_KEYS"
    finally:
        third.stop()


def test_kill_9_during_a_load_aborts_its_prepare_txn(tmp_path) -> None:
    data = tmp_path / "data"
    srv = StandInProcess(data).start()
    srv.ok("CREATE DATABASE d")
    srv.ok("CREATE TABLE d.t (id BIGINT, v VARCHAR(20)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
    srv.fault(target="load", mode="delay", delay_s=30)
    t = threading.Thread(target=lambda: _swallow(srv, "d", "t"), daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while requests.get(f"{srv.fe}/api/d/get_load_state?label=inflight", auth=AUTH).json()["data"] != "PREPARE":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    srv.stop(signal.SIGKILL)
    again = StandInProcess(data).start()
    try:
        assert requests.get(f"{again.fe}/api/d/get_load_state?label=inflight", auth=AUTH).json()["data"] == "ABORTED"
        assert again.load("d", "t", _rows({"id": 1, "v": "retry"}), label="inflight", **JSONL)["Status"] == "Success"
        assert again.rows("SELECT v FROM t", "d") == [["retry"]]
    finally:
        again.stop()


def _swallow(srv: StandInProcess, db: str, table: str) -> None:
    """The in-flight load dies with the server; its client error is expected."""
    with contextlib.suppress(requests.RequestException):
        srv.load(db, table, _rows({"id": 1, "v": "lost"}), label="inflight", **JSONL)
