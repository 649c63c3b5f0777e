"""Transactions: two-phase commit through ``_stream_load_2pc``, its exact messages, labels and their
reuse, a load aborted while it runs, and precommitted transactions that time out."""

from __future__ import annotations

import concurrent.futures
import time

import pytest
import requests

from .conftest import AUTH, StandInProcess
from .helpers import JSONL, LABEL_EXISTS, jsonl, make_users


def test_two_phase_commit_visibility_commit_and_abort(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    res = doris.load(db, "users", jsonl({"id": 1, "name": "a"}), label="p1", two_phase_commit="true", **JSONL)
    assert res["Status"] == "Success" and res["TwoPhaseCommit"] == "true"
    txn = res["TxnId"]
    assert doris.rows("SELECT count(*) FROM users", db) == [[0]]  # precommitted: invisible
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state?label=p1", auth=AUTH).json()["data"] == "PRECOMMITTED"
    assert doris.txn(db, "commit", txn_id=txn) == {"status": "Success",
                                                    "msg": f"transaction [{txn}] commit successfully."}
    assert doris.rows("SELECT id, name FROM users", db) == [[1, "a"]]
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state?label=p1", auth=AUTH).json() == {
        "msg": "success", "code": 0, "data": "VISIBLE", "count": 0}

    res = doris.load(db, "users", jsonl({"id": 2, "name": "b"}), label="p2", two_phase_commit="true", **JSONL)
    assert doris.txn(db, "abort", txn_id=res["TxnId"]) == {
        "status": "Success", "msg": f"transaction [{res['TxnId']}] abort successfully."}
    assert doris.rows("SELECT id FROM users", db) == [[1]]
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state?label=p2", auth=AUTH).json()["data"] == "ABORTED"
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state?label=zz", auth=AUTH).json()["data"] == "UNKNOWN"
    # the 2PC endpoint on the FE redirects like stream load
    r = requests.put(f"{doris.fe}/api/{db}/_stream_load_2pc", auth=AUTH, allow_redirects=False,
                     headers={"txn_id": "1", "txn_operation": "commit"})
    assert r.status_code == 307 and r.headers["Location"].endswith(f":{doris.be_port}/api/{db}/_stream_load_2pc?")


def test_2pc_exact_messages(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    err = "TStatus: errCode = 2, detailMessage = "
    t1 = doris.load(db, "users", jsonl({"id": 1}), label="m1", two_phase_commit="true", **JSONL)["TxnId"]
    doris.txn(db, "commit", txn_id=t1)
    assert doris.txn(db, "commit", txn_id=t1) == {
        "status": "ANALYSIS_ERROR", "msg": f"{err}transaction [{t1}] is already visible, not pre-committed."}
    assert doris.txn(db, "abort", txn_id=t1) == {
        "status": "ANALYSIS_ERROR", "msg": f"{err}transaction [{t1}] is already VISIBLE, could not abort."}
    t2 = doris.load(db, "users", jsonl({"id": 2}), label="m2", two_phase_commit="true", **JSONL)["TxnId"]
    doris.txn(db, "abort", txn_id=t2)
    assert doris.txn(db, "abort", txn_id=t2) == {
        "status": "ANALYSIS_ERROR", "msg": f"{err}transaction [{t2}] is already aborted, abort reason: User Abort"}
    assert doris.txn(db, "commit", txn_id=t2) == {
        "status": "ANALYSIS_ERROR", "msg": f"{err}transaction [{t2}] is already aborted. abort reason: User Abort"}
    assert doris.txn(db, "commit", txn_id=987654321) == {
        "status": "ANALYSIS_ERROR", "msg": f"{err}transaction [987654321] not found"}
    assert doris.txn(db, "commit", label="never") == {
        "status": "ANALYSIS_ERROR", "msg": f"{err}transaction not found, label=never"}
    assert doris.txn(db, "commit", label="m2") == {
        "status": "ANALYSIS_ERROR", "msg": f"{err}running transaction not found, label=m2"}
    # by label
    doris.load(db, "users", jsonl({"id": 3}), label="m3", two_phase_commit="true", **JSONL)
    assert doris.txn(db, "commit", label="m3") == {"status": "Success", "msg": "label [m3] commit successfully."}
    doris.load(db, "users", jsonl({"id": 4}), label="m4", two_phase_commit="true", **JSONL)
    assert doris.txn(db, "abort", label="m4") == {"status": "Success", "msg": "label [m4] abort successfully."}
    assert doris.rows("SELECT id FROM users ORDER BY id", db) == [[1], [3]]
    # malformed requests
    assert doris.txn(db, "explode", txn_id=1)["msg"] == "transaction operation should be 'commit' or 'abort'"
    r = requests.put(f"{doris.be}/api/{db}/_stream_load_2pc", auth=AUTH,
                     headers={"txn_id": "x1", "txn_operation": "commit"})
    assert r.json()["msg"] == "convert txn_id [x1] failed"
    assert doris.txn("no_such_db", "commit", txn_id=t1)["msg"] == f"{err}unknown database, database=no_such_db"


def test_labels_exist_running_precommitted_finished_and_aborted_reuse(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    bad = doris.load(db, "users", jsonl({"id": 1}), label="bad label!", **JSONL)
    assert bad["Status"] == "Fail" and "Label format error. regex: ^[-_A-Za-z0-9:]{1,128}$" in bad["Message"]
    assert doris.load(db, "users", "", label="x" * 129, **JSONL)["Status"] == "Fail"

    first = doris.load(db, "users", jsonl({"id": 1}), label="L1", two_phase_commit="true", **JSONL)
    dup = doris.load(db, "users", jsonl({"id": 9}), label="L1", two_phase_commit="true", **JSONL)
    assert list(dup)[:7] == ["TxnId", "Label", "Comment", "TwoPhaseCommit", "Status", "ExistingJobStatus", "Message"]
    assert dup["Status"] == "Label Already Exists" and dup["ExistingJobStatus"] == "PRECOMMITTED"
    assert dup["TxnId"] == -1
    assert dup["Message"] == ("[LABEL_ALREADY_EXISTS]TStatus: errCode = 2, detailMessage = Label [L1] has already "
                              f"been used, relate to txn [{first['TxnId']}]")
    assert LABEL_EXISTS.search(dup["Message"]).group(2) == str(first["TxnId"])
    doris.txn(db, "commit", txn_id=first["TxnId"])
    dup = doris.load(db, "users", jsonl({"id": 9}), label="L1", **JSONL)
    assert dup["Status"] == "Label Already Exists" and dup["ExistingJobStatus"] == "FINISHED"

    # RUNNING: the label is held by a load still in flight (held by a delay fault)
    doris.fault(target="load", mode="delay", delay_s=1.5, label_prefix="L2")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        slow = pool.submit(doris.load, db, "users", jsonl({"id": 2}), label="L2", **JSONL)
        time.sleep(0.7)
        dup = doris.load(db, "users", jsonl({"id": 2}), label="L2", **JSONL)
        assert slow.result()["Status"] == "Success"
    assert dup["Status"] == "Label Already Exists" and dup["ExistingJobStatus"] == "RUNNING"

    # an aborted label is free again at once; so is a failed load's label
    t = doris.load(db, "users", jsonl({"id": 3}), label="L3", two_phase_commit="true", **JSONL)["TxnId"]
    doris.txn(db, "abort", txn_id=t)
    again = doris.load(db, "users", jsonl({"id": 3}), label="L3", **JSONL)
    assert again["Status"] == "Success" and again["TxnId"] != t
    failed = doris.load(db, "users", "1,2,3,4\n", label="L4", column_separator=",")
    assert failed["Status"] == "Fail"
    assert doris.load(db, "users", "4,d,1\n", label="L4", column_separator=",")["Status"] == "Success"
    # labels are per database
    other = db + "_other"
    doris.ok(f"CREATE DATABASE {other}")
    make_users(doris, other)
    assert doris.load(other, "users", jsonl({"id": 1}), label="L1", **JSONL)["Status"] == "Success"


def test_prepare_is_not_precommitted(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    doris.fault(target="load", mode="delay", delay_s=1.5, label_prefix="slow")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(doris.load, db, "users", jsonl({"id": 1}), label="slow1", two_phase_commit="true", **JSONL)
        time.sleep(0.7)
        dup = doris.load(db, "users", jsonl({"id": 1}), label="slow1", two_phase_commit="true", **JSONL)
        txn = int(LABEL_EXISTS.search(dup["Message"]).group(2))
        res = doris.txn(db, "commit", txn_id=txn)
        assert res == {"status": "ANALYSIS_ERROR",
                       "msg": f"TStatus: errCode = 2, detailMessage = transaction [{txn}] is prepare, not pre-committed."}
        assert fut.result()["TxnId"] == txn
    assert doris.txn(db, "commit", txn_id=txn)["status"] == "Success"


def test_a_load_aborted_while_it_runs_fails_and_stays_aborted(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    doris.fault(target="load", mode="delay", delay_s=1.5, label_prefix="doomed")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        fut = pool.submit(doris.load, db, "users", jsonl({"id": 1}), label="doomed1", two_phase_commit="true", **JSONL)
        deadline = time.monotonic() + 10
        while requests.get(f"{doris.fe}/api/{db}/get_load_state?label=doomed1", auth=AUTH).json()["data"] != "PREPARE":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert doris.txn(db, "abort", label="doomed1")["status"] == "Success"
        res = fut.result()
    assert res["Status"] == "Fail" and "is already aborted. abort reason: User Abort" in res["Message"], res
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state?label=doomed1", auth=AUTH).json()["data"] == "ABORTED"
    assert doris.rows("SELECT count(*) FROM users", db) == [[0]]


def test_empty_body_2pc_probe_loads(doris: StandInProcess, db: str) -> None:
    """The connector's lingering-transaction loop: empty 2PC loads per label until one is new."""
    make_users(doris, db)
    held = doris.load(db, "users", jsonl({"id": 1}), label="pfx_t_0_1", two_phase_commit="true", **JSONL)
    aborted = []
    chk = 1
    while True:
        res = doris.load(db, "users", b"", label=f"pfx_t_0_{chk}", two_phase_commit="true", **JSONL)
        assert res["TwoPhaseCommit"] == "true"
        if res["Status"] == "Label Already Exists":
            assert res["ExistingJobStatus"] != "FINISHED"
            txn = int(LABEL_EXISTS.search(res["Message"]).group(2))
            assert doris.txn(db, "abort", txn_id=txn)["status"] == "Success"
            aborted.append(txn)
            chk += 1
            continue
        assert res["Status"] == "Success" and res["NumberTotalRows"] == 0 and res["TxnId"] > 0
        assert doris.txn(db, "abort", txn_id=res["TxnId"])["status"] == "Success"
        break
    assert aborted == [held["TxnId"]] and chk == 2
    assert doris.rows("SELECT count(*) FROM users", db) == [[0]]


@pytest.mark.integration  # starts its own server
def test_precommitted_transactions_time_out(tmp_path) -> None:
    srv = StandInProcess(tmp_path / "data", "--txn-timeout-s", "1").start()
    try:
        srv.ok("CREATE DATABASE d")
        make_users(srv, "d")
        txn = srv.load("d", "users", jsonl({"id": 1}), label="to", two_phase_commit="true", **JSONL)["TxnId"]
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            state = requests.get(f"{srv.fe}/api/d/get_load_state?label=to", auth=AUTH).json()["data"]
            if state == "ABORTED":
                break
            time.sleep(0.2)
        assert state == "ABORTED"
        assert srv.txn("d", "commit", txn_id=txn)["msg"] == (
            f"TStatus: errCode = 2, detailMessage = transaction [{txn}] is already aborted. abort reason: "
            "timeout by txn manager")
        assert srv.load("d", "users", jsonl({"id": 1}), label="to", **JSONL)["Status"] == "Success"
    finally:
        srv.stop()
