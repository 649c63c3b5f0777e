"""``max_running_txn_num_per_db``: a database holding that many running transactions (begun, not yet
VISIBLE or ABORTED) refuses the next begin, as the FE's ``checkRunningTxnExceedLimit`` does; commits,
aborts and timeouts free slots; the stand-in-only ``/_standin/txns`` reports running and peak counts."""

from __future__ import annotations

import os
import threading
import time

import pytest
import requests

from .conftest import AUTH, StandInProcess
from .helpers import JSONL, RESPONSE_KEYS, jsonl, make_users


def _limit_message(db_id: int, running: int, limit: int) -> str:
    return (f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = current running txns on db {db_id} is "
            f"{running}, larger than limit {limit}")


def _stats(srv: StandInProcess, port: str = "fe") -> dict:
    r = requests.get(f"{srv.fe if port == 'fe' else srv.be}/_standin/txns", timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def _precommit(srv: StandInProcess, db: str, label: str, row_id: int) -> dict:
    return srv.load(db, "users", jsonl({"id": row_id, "name": label}), label=label, two_phase_commit="true", **JSONL)


def test_default_limit_is_100_and_the_refusal_is_doris_shaped(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    other = f"{db}_other"
    doris.ok(f"CREATE DATABASE `{other}`")
    make_users(doris, other)
    txns = [_precommit(doris, db, f"l{i}", i)["TxnId"] for i in range(100)]
    stats = _stats(doris)
    assert stats["max_running_txn_num_per_db"] == 100
    db_id = stats["databases"][db]["db_id"]
    assert stats["databases"][db] == {"db_id": db_id, "running": 100, "peak_running": 100}

    r = requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=jsonl({"id": 1000}), auth=AUTH, timeout=60,
                     headers={"Expect": "100-continue", "label": "one_too_many", "two_phase_commit": "true", **JSONL})
    assert r.status_code == 200  # a refusal is a stream-load reply like any other
    refused = r.json()
    assert list(refused) == RESPONSE_KEYS
    assert refused["Status"] == "Fail" and refused["TxnId"] == -1 and refused["Label"] == "one_too_many"
    assert refused["Message"] == _limit_message(db_id, 100, 100)
    assert refused["NumberLoadedRows"] == 0
    # the label was never used: it is free, and nothing began
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state?label=one_too_many", auth=AUTH).json()["data"] == "UNKNOWN"
    # a label already held is answered as such first (the FE checks the label before the limit)
    dup = _precommit(doris, db, "l5", 5)
    assert dup["Status"] == "Label Already Exists" and dup["ExistingJobStatus"] == "PRECOMMITTED"
    # a non-2PC load counts the same way
    plain = doris.load(db, "users", jsonl({"id": 1001}), label="plain", **JSONL)
    assert plain["Status"] == "Fail" and plain["Message"] == _limit_message(db_id, 100, 100)
    # the limit is per database
    assert _precommit(doris, other, "elsewhere", 1)["Status"] == "Success"

    assert doris.txn(db, "commit", txn_id=txns[0])["status"] == "Success"  # a commit frees a slot
    ok = _precommit(doris, db, "one_too_many", 1000)
    assert ok["Status"] == "Success", ok["Message"]
    assert _precommit(doris, db, "again_too_many", 1001)["Status"] == "Fail"
    assert doris.txn(db, "abort", txn_id=txns[1])["status"] == "Success"  # so does an abort
    assert _precommit(doris, db, "again_too_many", 1001)["Status"] == "Success"
    stats = _stats(doris, "be")  # either port answers
    assert stats["databases"][db] == {"db_id": db_id, "running": 100, "peak_running": 100}
    for label in [f"l{i}" for i in range(2, 100)] + ["one_too_many", "again_too_many"]:
        assert doris.txn(db, "abort", label=label)["status"] == "Success"
    assert doris.txn(other, "abort", label="elsewhere")["status"] == "Success"
    assert _stats(doris)["databases"][db]["running"] == 0


@pytest.mark.integration  # starts its own server
def test_limit_is_configurable_and_prepare_counts_until_the_load_ends(tmp_path) -> None:
    srv = StandInProcess(tmp_path / "data", "--max-running-txn-num-per-db", "2", "--txn-timeout-s", "4").start()
    try:
        srv.ok("CREATE DATABASE d")
        make_users(srv, "d")
        srv.fault(target="load", mode="delay", delay_s=2, label_prefix="slow")
        slow: dict = {}
        t = threading.Thread(target=lambda: slow.update(_precommit(srv, "d", "slow", 1)), daemon=True)
        t.start()
        deadline = time.monotonic() + 10
        while requests.get(f"{srv.fe}/api/d/get_load_state?label=slow", auth=AUTH).json()["data"] != "PREPARE":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert _precommit(srv, "d", "p1", 2)["Status"] == "Success"
        refused = _precommit(srv, "d", "p2", 3)  # PREPARE (the slow load) + PRECOMMITTED = 2
        db_id = _stats(srv)["databases"]["d"]["db_id"]
        assert refused["Message"] == _limit_message(db_id, 2, 2)
        t.join(10)
        assert slow["Status"] == "Success"  # the slow load precommits; still two running
        assert _precommit(srv, "d", "p2", 3)["Status"] == "Fail"
        # the precommit timeout (4 s here) aborts both: their slots are free again
        deadline = time.monotonic() + 15
        while _stats(srv)["databases"]["d"]["running"] != 0:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert requests.get(f"{srv.fe}/api/d/get_load_state?label=p1", auth=AUTH).json()["data"] == "ABORTED"
        assert srv.load("d", "users", jsonl({"id": 4}), label="plain", **JSONL)["Status"] == "Success"
        assert _stats(srv)["databases"]["d"] == {"db_id": db_id, "running": 0, "peak_running": 2}

        # the limit changes at run time (as ADMIN SET FRONTEND CONFIG), the peak can be reset
        r = requests.post(f"{srv.fe}/_standin/txns", json={"max_running_txn_num_per_db": 3, "reset_peak": True},
                          timeout=10)
        assert r.json()["max_running_txn_num_per_db"] == 3 and r.json()["databases"]["d"]["peak_running"] == 0
        assert [_precommit(srv, "d", f"q{i}", 10 + i)["Status"] for i in range(4)] == ["Success"] * 3 + ["Fail"]
        assert _stats(srv)["databases"]["d"]["peak_running"] == 3
        bad = requests.post(f"{srv.fe}/_standin/txns", json={"max_running_txn_num_per_db": 0}, timeout=10)
        assert bad.status_code == 400 and "positive integer" in bad.json()["msg"]
    finally:
        srv.stop()


@pytest.mark.integration  # starts its own server
def test_limit_from_the_environment_and_kept_across_a_restart(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(os.environ, "DORIS_STANDIN_MAX_RUNNING_TXN_NUM_PER_DB", "1")
    data = tmp_path / "data"
    srv = StandInProcess(data).start()
    srv.ok("CREATE DATABASE d")
    make_users(srv, "d")
    assert _precommit(srv, "d", "kept", 1)["Status"] == "Success"
    assert _precommit(srv, "d", "refused", 2)["Status"] == "Fail"
    srv.stop()
    again = StandInProcess(data)
    again.start()
    try:  # the PRECOMMITTED transaction survived the restart and still holds its slot
        stats = _stats(again)
        assert stats["max_running_txn_num_per_db"] == 1
        assert stats["databases"]["d"]["running"] == 1
        assert _precommit(again, "d", "refused", 2)["Status"] == "Fail"
        assert again.txn("d", "commit", label="kept")["status"] == "Success"
        assert _precommit(again, "d", "refused", 2)["Status"] == "Success"
    finally:
        again.stop()


def test_the_write_lock_counter_counts_a_loads_commit(doris: StandInProcess, db: str) -> None:
    """``write_lock`` in ``/_standin/txns``: how long and how often the storage's write lock was held
    (for benchmarks); a 2PC load's commit takes it (its begin and precommit take the transaction
    manager's lock alone; the ticker takes the write lock too)."""
    make_users(doris, db)
    before = _stats(doris)["write_lock"]
    res = _precommit(doris, db, "counted", 1)
    assert doris.txn(db, "commit", txn_id=res["TxnId"])["status"] == "Success"
    after = _stats(doris, "be")["write_lock"]
    assert after["holds"] >= before["holds"] + 1
    assert after["held_s"] > before["held_s"]
