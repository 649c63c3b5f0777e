"""The stand-in's fault injection (``/_standin/faults``): failed, dropped and delayed loads, commits and
aborts, a backend that is down, publish timeouts, failing queries."""

from __future__ import annotations

import time

import requests

from .conftest import AUTH, StandInProcess
from .helpers import JSONL, jsonl, make_users


def test_fault_injection_modes(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    try:
        f = doris.fault(target="load", mode="fail", count=1)["fault"]
        assert f["id"] > 0 and f["count"] == 1
        assert requests.get(f"{doris.fe}/_standin/faults").json()["faults"][0]["mode"] == "fail"
        res = doris.load(db, "users", jsonl({"id": 1}), label="f1", **JSONL)
        assert res["Status"] == "Fail" and res["Message"] == "[INTERNAL_ERROR]injected fault"
        assert doris.load(db, "users", jsonl({"id": 1}), label="f1", **JSONL)["Status"] == "Success"  # consumed

        doris.fault(target="load", mode="http_500")
        r = requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=jsonl({"id": 2}), auth=AUTH,
                         headers={"Expect": "100-continue", **JSONL})
        assert r.status_code == 500

        doris.fault(target="load", mode="drop_connection")
        try:
            requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=jsonl({"id": 2}), auth=AUTH,
                         headers={"Expect": "100-continue", **JSONL})
            raise AssertionError("expected a dropped connection")
        except requests.ConnectionError:
            pass

        # commit applied, reply lost: the retry sees "already visible" (idempotent commit)
        t = doris.load(db, "users", jsonl({"id": 3}), label="f3", two_phase_commit="true", **JSONL)["TxnId"]
        doris.fault(target="commit", mode="drop_connection", when="after")
        try:
            doris.txn(db, "commit", txn_id=t)
            raise AssertionError("expected a dropped connection")
        except requests.ConnectionError:
            pass
        assert doris.txn(db, "commit", txn_id=t)["msg"].endswith(f"transaction [{t}] is already visible, not "
                                                                  "pre-committed.")
        t = doris.load(db, "users", jsonl({"id": 4}), label="f4", two_phase_commit="true", **JSONL)["TxnId"]
        doris.fault(target="abort", mode="fail")
        assert doris.txn(db, "abort", txn_id=t) == {"status": "INTERNAL_ERROR", "msg": "injected fault"}
        assert doris.txn(db, "abort", txn_id=t)["status"] == "Success"

        doris.fault(target="load", mode="be_down", count=2)
        assert requests.get(f"{doris.fe}/api/health").json()["data"]["online_backend_num"] == 0
        assert requests.get(f"{doris.fe}/api/backends?is_alive=true", auth=AUTH).json()["data"]["backends"] == []
        r = requests.put(f"{doris.fe}/api/{db}/users/_stream_load", data=b"", auth=AUTH, allow_redirects=False,
                         headers={"Expect": "100-continue"})
        assert r.json() == {"status": "FAILED", "msg": "No backend alive."}
        try:
            doris.load(db, "users", jsonl({"id": 5}), **JSONL)
            raise AssertionError("expected the BE to be unreachable")
        except requests.ConnectionError:
            pass
        assert requests.get(f"{doris.fe}/api/health").json()["data"]["online_backend_num"] == 1

        doris.fault(target="load", mode="delay", delay_s=0.3)
        t0 = time.monotonic()
        assert doris.load(db, "users", jsonl({"id": 6}), **JSONL)["Status"] == "Success"
        assert time.monotonic() - t0 >= 0.3

        doris.fault(target="load", mode="publish_timeout", delay_s=0.5)
        res = doris.load(db, "users", jsonl({"id": 7}), label="pt", **JSONL)
        assert res["Status"] == "Publish Timeout"
        assert res["Message"] == "transaction commit successfully, BUT data will be visible later"
        assert requests.get(f"{doris.fe}/api/{db}/get_load_state?label=pt", auth=AUTH).json()["data"] == "COMMITTED"
        deadline = time.monotonic() + 10
        while doris.rows("SELECT count(*) FROM users WHERE id = 7", db) != [[1]]:
            assert time.monotonic() < deadline
            time.sleep(0.1)

        doris.fault(target="query", mode="fail", count=-1)
        assert doris.q("SELECT 1", db)["code"] == 1
        assert doris.q("SELECT 1", db)["code"] == 1
        assert requests.delete(f"{doris.fe}/_standin/faults").json()["cleared"] == 1
        assert doris.q("SELECT 1", db)["code"] == 0
        r = requests.post(f"{doris.fe}/_standin/faults", json={"target": "x", "mode": "fail"})
        assert r.status_code == 400
    finally:
        doris.clear_faults()
