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
    staging = data / "staging"  # a small load's rows wait in its PRECOMMITTED journal line, not in a file
    assert list(staging.iterdir()) == []
    lines = [json.loads(line) for path in data.glob("txns.*.journal") for line in path.read_bytes().splitlines()]
    assert [r["txn_id"] for r in lines if r["status"] == "PRECOMMITTED" and "rows" in r] == [pre["TxnId"], gone["TxnId"]]
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
        # orphans removed; the start-up's journal fold wrote the rows still waiting to a staged file
        assert sorted(p.name for p in staging.iterdir()) == [f"{pre['TxnId']}.arrow"]
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


# ---- a restart of the BE or of the FE alone, in place (devstack/doris/restarts.py) ----------------

def _restart(srv: StandInProcess, port: str, **spec: object) -> dict:
    base = srv.fe if port == "fe" else srv.be
    r = requests.post(f"{base}/_standin/restart", json=spec, timeout=10)
    assert r.status_code == 200, r.text
    return r.json()


def _node_state(srv: StandInProcess, port: str, node: str) -> str:
    base = srv.fe if port == "fe" else srv.be
    return requests.get(f"{base}/_standin/restart", timeout=10).json()["nodes"][node]["state"]


def _wait_state(srv: StandInProcess, port: str, node: str, state: str, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while _node_state(srv, port, node) != state:
        assert time.monotonic() < deadline, f"{node} not {state}"
        time.sleep(0.05)


def _until(done, what: str, timeout_s: float = 30) -> None:
    """Poll ``done()`` until it is true; fail naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _restarts(srv: StandInProcess) -> list:
    return requests.get(f"{srv.fe}/_standin/restart", timeout=5).json()["nodes"]["be"]["restarts"]


def _state(srv: StandInProcess, label: str) -> str:
    return requests.get(f"{srv.fe}/api/d/get_load_state?label={label}", auth=AUTH, timeout=10).json()["data"]


def _in_flight(srv: StandInProcess, label: str, out: dict) -> threading.Thread:
    """A 2PC load held in PREPARE by a delay fault; ``out`` gets its reply or its client error."""
    def run() -> None:
        try:
            out["reply"] = srv.load("d", "t", _rows({"id": 9, "v": label}), label=label, two_phase_commit="true",
                                    **JSONL)
        except requests.RequestException as e:
            out["error"] = e
    t = threading.Thread(target=run, daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while _state(srv, label) != "PREPARE":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return t


def _setup(tmp_path) -> StandInProcess:
    srv = StandInProcess(tmp_path / "data").start()
    srv.ok("CREATE DATABASE d")
    srv.ok("CREATE TABLE d.t (id BIGINT NOT NULL, v VARCHAR(20)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
    return srv


def test_be_restart_keeps_precommitted_txns_and_fails_the_load_in_flight(tmp_path) -> None:
    srv = _setup(tmp_path)
    try:
        pre = srv.load("d", "t", _rows({"id": 1, "v": "pre"}), label="pre", two_phase_commit="true", **JSONL)
        assert pre["Status"] == "Success"
        srv.fault(target="load", mode="delay", delay_s=3, label_prefix="flight")
        out: dict = {}
        t = _in_flight(srv, "flight", out)
        assert _restart(srv, "fe", node="be", downtime_s=2)["status"] == "OK"
        # the BE is down: its port refuses, the FE says so
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{srv.be}/api/health", timeout=5)
        health = requests.get(f"{srv.fe}/api/health", timeout=5).json()["data"]
        assert health == {"online_backend_num": 0, "total_backend_num": 1}
        backends = requests.get(f"{srv.fe}/api/backends", auth=AUTH, timeout=5).json()["data"]["backends"]
        assert backends[0]["is_alive"] is False
        r = requests.put(f"{srv.fe}/api/d/t/_stream_load", data=_rows({"id": 5}), auth=AUTH, timeout=5,
                         headers={"Expect": "100-continue", "label": "during", **JSONL})
        assert r.json() == {"status": "FAILED", "msg": "No backend alive."}
        t.join(15)
        assert "reply" not in out and isinstance(out["error"], requests.ConnectionError)  # it died with the BE
        assert _state(srv, "flight") == "ABORTED"
        _wait_state(srv, "fe", "be", "up")
        listed = requests.get(f"{srv.fe}/_standin/restart", timeout=5).json()["nodes"]["be"]["restarts"]
        assert len(listed) == 1 and listed[0]["aborted_txns"] and listed[0]["finished_ms"] is not None
        # back: the precommitted transaction survived and commits; the dead load's label is free again
        assert _state(srv, "pre") == "PRECOMMITTED"
        assert srv.txn("d", "commit", label="pre")["status"] == "Success"
        srv.clear_faults()
        assert srv.load("d", "t", _rows({"id": 2, "v": "retry"}), label="flight", **JSONL)["Status"] == "Success"
        assert srv.rows("SELECT id, v FROM t ORDER BY id", "d") == [[1, "pre"], [2, "retry"]]
        # down long enough that the next request finds it still restarting however loaded the machine
        # (a 0.5 s restart could end before the next request came, under a busy test run)
        again = requests.post(f"{srv.be}/_standin/restart", json={"node": "be", "downtime_s": 10}, timeout=5)
        assert again.status_code == 200
        twice = requests.post(f"{srv.fe}/_standin/restart", json={"node": "be", "downtime_s": 1}, timeout=5)
        assert twice.status_code == 409 and "already restarting" in twice.json()["msg"]
    finally:
        assert srv.stop() == 0  # a clean stop, even right after a restart


def test_fe_restart_refuses_then_answers_503_and_keeps_every_txn(tmp_path) -> None:
    srv = _setup(tmp_path)
    try:
        pre = srv.load("d", "t", _rows({"id": 1, "v": "pre"}), label="pre", two_phase_commit="true", **JSONL)
        assert pre["Status"] == "Success"
        srv.fault(target="load", mode="delay", delay_s=1.5, label_prefix="flight")
        out: dict = {}
        t = _in_flight(srv, "flight", out)
        # asked on the BE port: the FE's own port is about to go away
        assert _restart(srv, "be", node="fe", downtime_s=2.5, unavailable_s=1.5)["status"] == "OK"
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{srv.fe}/api/health", timeout=5)
        # the BE cannot reach the FE: a new load and a 2PC commit fail with its thrift error
        refused = srv.load("d", "t", _rows({"id": 5}), label="during", **JSONL)
        unreachable = "Couldn't open transport for 127.0.0.1:9020 (connect() failed: Connection refused)"
        assert refused["Status"] == "Fail" and refused["Message"] == f"[THRIFT_RPC_ERROR]{unreachable}"
        assert srv.txn("d", "commit", txn_id=pre["TxnId"]) == {"status": "THRIFT_RPC_ERROR", "msg": unreachable}
        t.join(15)  # the load in flight reaches its precommit while the FE is down
        assert out["reply"]["Status"] == "Fail" and out["reply"]["Message"] == f"[THRIFT_RPC_ERROR]{unreachable}"
        _wait_state(srv, "be", "fe", "unavailable")
        r = requests.get(f"{srv.fe}/api/health", timeout=5)
        assert r.status_code == 503
        _wait_state(srv, "be", "fe", "up")
        # the FE's journal kept every transaction: the precommitted one commits, the one whose load
        # died stays PREPARE (its rollback never reached the FE) until its label is aborted
        assert _state(srv, "pre") == "PRECOMMITTED" and _state(srv, "flight") == "PREPARE"
        assert srv.txn("d", "commit", txn_id=pre["TxnId"])["status"] == "Success"
        assert srv.txn("d", "abort", label="flight")["status"] == "Success"
        srv.clear_faults()
        assert srv.load("d", "t", _rows({"id": 2, "v": "after"}), label="flight", **JSONL)["Status"] == "Success"
        assert srv.rows("SELECT id, v FROM t ORDER BY id", "d") == [[1, "pre"], [2, "after"]]
    finally:
        assert srv.stop() == 0


def test_a_be_restart_under_a_load_then_ended_on_request(tmp_path) -> None:
    """The ``be_restart`` load fault: the BE dies under the load once its transaction has begun (the
    load's connection reset, its transaction aborted, a precommitted one kept); asked on the FE port
    the restart's answer comes once the BE is down; ``end`` brings it back before its downtime."""
    srv = _setup(tmp_path)
    try:
        assert srv.load("d", "t", _rows({"id": 1, "v": "pre"}), label="pre", two_phase_commit="true",
                        **JSONL)["Status"] == "Success"
        srv.fault(target="load", mode="be_restart", delay_s=600, label_prefix="flight")
        with pytest.raises(requests.ConnectionError):  # no reply: the BE died under the load
            srv.load("d", "t", _rows({"id": 2, "v": "lost"}), label="flight", two_phase_commit="true", **JSONL)
        # the connection is reset first, then the FE aborts the load's transaction (as Doris's FE
        # does once it sees the BE restarted) and the restart is recorded: the client may ask before
        _until(lambda: _restarts(srv), "the BE restart was never recorded")
        assert _state(srv, "flight") == "ABORTED" and _state(srv, "pre") == "PRECOMMITTED"
        assert _node_state(srv, "fe", "be") == "down"
        [record] = _restarts(srv)
        assert record["downtime_s"] == 600 and len(record["aborted_txns"]) == 1 and record["finished_ms"] is None
        commit = requests.put(f"{srv.fe}/api/d/_stream_load_2pc", auth=AUTH, timeout=10,
                              headers={"txn_operation": "commit", "label": "pre"})
        assert commit.json() == {"status": "FAILED", "msg": "No backend alive."}  # the FE has no BE to send it to

        ended = requests.post(f"{srv.fe}/_standin/restart", json={"node": "be", "end": True}, timeout=30)
        assert ended.json() == {"status": "OK", "node": "be", "state": "up"}  # answered once it is up
        assert requests.get(f"{srv.be}/api/health", timeout=5).status_code == 200
        assert srv.txn("d", "commit", label="pre")["status"] == "Success"  # it survived the restart
        again = requests.post(f"{srv.fe}/_standin/restart", json={"node": "be", "end": True}, timeout=30)
        assert again.status_code == 409 and "not restarting" in again.json()["msg"]

        # asked on the FE's port, a BE restart answers once the BE is down: the next request meets it
        assert _restart(srv, "fe", node="be", downtime_s=600)["status"] == "OK"
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{srv.be}/api/health", timeout=5)
        # asked on the BE's port, an FE restart likewise; a long 503 period ends on request too
        requests.post(f"{srv.fe}/_standin/restart", json={"node": "be", "end": True}, timeout=30).raise_for_status()
        assert _restart(srv, "be", node="fe", downtime_s=0.2, unavailable_s=600)["status"] == "OK"
        _wait_state(srv, "be", "fe", "unavailable")
        assert requests.get(f"{srv.fe}/api/health", timeout=5).status_code == 503
        assert requests.post(f"{srv.be}/_standin/restart", json={"node": "fe", "end": True},
                             timeout=30).json()["state"] == "up"
        assert requests.get(f"{srv.fe}/api/health", timeout=5).status_code == 200
        assert srv.rows("SELECT id, v FROM t ORDER BY id", "d") == [[1, "pre"]]
    finally:
        assert srv.stop() == 0


def test_txn_ids_are_never_reused_after_the_newest_labels_expire_and_a_kill_9(tmp_path) -> None:
    """A begin records its id in its own journal record only; when the newest rows are
    forgotten (label expiry), the id counter they recorded survives a ``kill -9`` all the same."""
    data = tmp_path / "data"
    srv = StandInProcess(data, "--label-keep-max-s", "0.2").start()
    srv.ok("CREATE DATABASE d")
    srv.ok("CREATE TABLE d.t (id BIGINT NOT NULL, v VARCHAR(20)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
    ids = [srv.load("d", "t", _rows({"id": i, "v": "x"}), label=f"l{i}", **JSONL)["TxnId"] for i in range(3)]
    assert ids == sorted(set(ids))
    _until(lambda: all(_state(srv, f"l{i}") == "UNKNOWN" for i in range(3)),
           "the loads' rows of __standin.txns were never forgotten")
    assert srv.stop(signal.SIGKILL) == -signal.SIGKILL

    again = StandInProcess(data)
    again.start()
    try:
        res = again.load("d", "t", _rows({"id": 9, "v": "after"}), label="l9", **JSONL)
        assert res["Status"] == "Success"
        assert res["TxnId"] > ids[-1]  # above the forgotten loads' ids
        assert again.rows("SELECT id FROM t ORDER BY id", "d") == [[0], [1], [2], [9]]
    finally:
        again.stop()


def test_kill_9_after_begins_and_precommits_keeps_each_durable_state(tmp_path) -> None:
    """Begin and precommit are one journal record each: after ``kill -9`` a begun load is
    aborted (its label free again), a precommitted one is still PRECOMMITTED and commits, and no
    transaction id is handed out twice."""
    data = tmp_path / "data"
    srv = StandInProcess(data).start()
    srv.ok("CREATE DATABASE d")
    srv.ok("CREATE TABLE d.t (id BIGINT NOT NULL, v VARCHAR(20)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
    pre = [srv.load("d", "t", _rows({"id": i, "v": "pre"}), label=f"pre{i}", two_phase_commit="true", **JSONL)
           for i in range(3)]
    assert all(p["Status"] == "Success" for p in pre)
    srv.fault(target="load", mode="delay", delay_s=60, label_prefix="held")  # held in PREPARE
    held = threading.Thread(target=lambda: _swallow_held(srv), daemon=True)
    held.start()
    _until(lambda: _state(srv, "held") == "PREPARE", "the held load never began")
    assert srv.stop(signal.SIGKILL) == -signal.SIGKILL

    again = StandInProcess(data)
    again.start()
    try:
        assert _state(again, "held") == "ABORTED"
        for p in pre:
            assert _state(again, p["Label"]) == "PRECOMMITTED"
            assert again.txn("d", "commit", txn_id=p["TxnId"])["status"] == "Success"
        res = again.load("d", "t", _rows({"id": 7, "v": "again"}), label="held", **JSONL)
        assert res["Status"] == "Success"
        assert res["TxnId"] > max(p["TxnId"] for p in pre) + 1  # the aborted begin's id is not reused
        assert again.rows("SELECT id, v FROM t ORDER BY id", "d") == [[0, "pre"], [1, "pre"], [2, "pre"], [7, "again"]]
    finally:
        again.stop()


def _swallow_held(srv: StandInProcess) -> None:
    with contextlib.suppress(requests.RequestException):
        srv.load("d", "t", _rows({"id": 7, "v": "held"}), label="held", **JSONL)


def test_kill_9_after_create_tables_answered_keeps_each_table_as_shown(tmp_path) -> None:
    """CREATE TABLEs sent at once (created in groups, each definition its stored table's comment),
    then ``kill -9`` as soon as all are answered: after a restart every table is there, and
    ``_schema``, ``SHOW CREATE TABLE`` and ``information_schema`` show it as a stand-in that was not
    killed shows the same tables."""
    from concurrent.futures import ThreadPoolExecutor

    names = [f"t{i}" for i in range(12)]

    def create(s: StandInProcess) -> None:
        s.ok("CREATE DATABASE d")
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda n: s.ok(
                f"CREATE TABLE d.{n} (id BIGINT NOT NULL, v VARCHAR(20) COMMENT 'it''s {n}', ver BIGINT) UNIQUE KEY(id) "
                "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ('function_column.sequence_col' = 'ver')"), names))

    def shown(s: StandInProcess) -> list:
        return [[requests.get(f"{s.fe}/api/d/{n}/_schema", auth=AUTH, timeout=10).json()["data"],
                 s.rows(f"SHOW CREATE TABLE {n}", "d")] for n in names] + [s.rows("SHOW TABLES", "d"), s.rows(
            "SELECT TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, COLUMN_KEY, COLUMN_COMMENT FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA = 'd' ORDER BY TABLE_NAME, ORDINAL_POSITION", "d")]

    reference = StandInProcess(tmp_path / "reference").start()
    try:
        create(reference)
        expected = shown(reference)
    finally:
        reference.stop()
    assert expected[-2] == [[n] for n in sorted(names)] and len(expected[-1]) == 3 * len(names)

    data = tmp_path / "data"
    srv = StandInProcess(data).start()
    create(srv)
    assert srv.stop(signal.SIGKILL) == -signal.SIGKILL
    again = StandInProcess(data)
    again.fe_port, again.be_port = srv.fe_port, srv.be_port
    again.start()
    try:
        assert shown(again) == expected
    finally:
        again.stop()
