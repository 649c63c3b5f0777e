"""Conformance of the Doris stand-in with Doris' HTTP protocol (shared/reference/doris-http-api.md).

Everything goes through plain HTTP with ``requests``, as Tidemark's sink will.
"""

from __future__ import annotations

import base64
import concurrent.futures
import gzip
import io
import json
import re
import time

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
import requests

from .conftest import AUTH, StandInProcess

RESPONSE_KEYS = [
    "TxnId", "Label", "Comment", "TwoPhaseCommit", "Status", "Message", "NumberTotalRows", "NumberLoadedRows",
    "NumberFilteredRows", "NumberUnselectedRows", "LoadBytes", "LoadTimeMs", "BeginTxnTimeMs",
    "StreamLoadPutTimeMs", "ReadDataTimeMs", "WriteDataTimeMs", "CommitAndPublishTimeMs",
]
LABEL_EXISTS = re.compile(r"Label \[(.*)\] has already been used, relate to txn \[(\d+)\]")
JSONL = {"format": "json", "read_json_by_line": "true"}


def make_users(doris: StandInProcess, db: str, extra_props: str = "", extra_cols: str = "") -> None:
    doris.ok(
        f"CREATE TABLE IF NOT EXISTS `{db}`.`users` (\n"
        "  `id` BIGINT NOT NULL COMMENT 'primary key',\n"
        "  `name` VARCHAR(20) COMMENT 'who',\n"
        f"  `amount` DECIMALV3(10, 2) COMMENT 'money'{extra_cols}\n"
        ") UNIQUE KEY(`id`) COMMENT 'users table' DISTRIBUTED BY HASH(`id`) BUCKETS AUTO\n"
        f"PROPERTIES ('replication_num' = '1', 'light_schema_change' = 'true'{extra_props})"
    )


def jsonl(*rows: dict) -> str:
    return "\n".join(json.dumps(r) for r in rows) + "\n"


# ---------------------------------------------------------------------------------------------
# 1. Stream Load endpoint
# ---------------------------------------------------------------------------------------------
def test_fe_redirects_to_be_with_doris_location(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    r = requests.put(f"{doris.fe}/api/{db}/users/_stream_load?foo=bar", data=b"", auth=AUTH,
                     headers={"Expect": "100-continue", "label": "x"}, allow_redirects=False)
    assert r.status_code == 307
    assert r.headers["Content-Type"].startswith("text/html")
    assert r.headers["Location"] == (
        f"http://root%40default_cluster:@127.0.0.1:{doris.be_port}/api/{db}/users/_stream_load?foo=bar")


def test_fe_requires_expect_100_continue(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    r = requests.put(f"{doris.fe}/api/{db}/users/_stream_load", data=b"{}", auth=AUTH, allow_redirects=False)
    assert r.status_code == 200
    assert r.json() == {"status": "FAILED", "msg": "There is no 100-continue header"}


def test_fe_rejects_wrong_credentials_with_unauthorized_envelope(doris: StandInProcess, db: str) -> None:
    r = requests.put(f"{doris.fe}/api/{db}/users/_stream_load", data=b"{}", auth=("root", "nope"),
                     headers={"Expect": "100-continue"}, allow_redirects=False)
    assert r.status_code == 200
    body = r.json()
    assert body["code"] == 401 and body["msg"] == "Unauthorized" and body["count"] == 0
    assert "Access denied for user 'root" in body["data"]
    r = requests.get(f"{doris.fe}/api/{db}/get_load_state?label=x")
    assert r.json()["code"] == 401 and r.json()["data"] == "Need auth information."


def test_be_rejects_missing_and_wrong_credentials(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    r = requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=jsonl({"id": 1}),
                     headers={"Expect": "100-continue", **JSONL})
    assert r.status_code == 200
    assert r.json()["Status"] == "Fail" and r.json()["Message"] == "no valid Basic authorization"
    res = doris.load(db, "users", jsonl({"id": 1}), auth=("root", "bad"), **JSONL)
    assert res["Status"] == "Fail" and "Access denied" in res["Message"]
    assert doris.rows("SELECT count(*) FROM users", db) == [[0]]


def test_load_through_fe_redirect_keeping_auth(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    s = requests.Session()
    s.should_strip_auth = lambda old, new: False  # what pydoris does; curl --location-trusted
    r = s.put(f"{doris.fe}/api/{db}/users/_stream_load", data=jsonl({"id": 1, "name": "a"}), auth=AUTH,
              headers={"Expect": "100-continue", "label": "via_fe", **JSONL})
    assert [h.status_code for h in r.history] == [307]
    assert r.json()["Status"] == "Success"
    # requests' default strips Authorization on the port change, and the BE refuses like Doris' does
    r = requests.put(f"{doris.fe}/api/{db}/users/_stream_load", data=jsonl({"id": 2}), auth=AUTH,
                     headers={"Expect": "100-continue", "label": "via_fe2", **JSONL})
    assert r.json()["Message"] == "no valid Basic authorization"


def test_success_response_shape_and_types(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    body = jsonl({"id": 1, "name": "a", "amount": 1.5}, {"id": 2, "name": "b", "amount": "2.25"})
    r = requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=body, auth=AUTH,
                     headers={"Expect": "100-continue", "label": "shape_1", **JSONL})
    assert r.status_code == 200
    res = r.json()
    assert list(res) == RESPONSE_KEYS
    assert isinstance(res["TxnId"], int) and res["TxnId"] > 0
    assert res["Label"] == "shape_1" and res["Comment"] == ""
    assert res["TwoPhaseCommit"] == "false" and res["Status"] == "Success" and res["Message"] == "OK"
    assert (res["NumberTotalRows"], res["NumberLoadedRows"], res["NumberFilteredRows"],
            res["NumberUnselectedRows"]) == (2, 2, 0, 0)
    assert res["LoadBytes"] == len(body.encode())
    assert all(isinstance(res[k], int) for k in RESPONSE_KEYS if k.endswith("Ms"))
    assert doris.rows("SELECT id, name, amount FROM users ORDER BY id", db) == [[1, "a", 1.5], [2, "b", 2.25]]
    # no label: the BE generates one (a UUID)
    res = doris.load(db, "users", jsonl({"id": 3}), **JSONL)
    assert res["Status"] == "Success" and re.fullmatch(r"[0-9a-f-]{36}", res["Label"])


def test_json_strip_outer_array_and_single_object(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    body = json.dumps([{"id": 1, "name": "a"}, {"id": 2, "name": "b"}])
    assert doris.load(db, "users", body, format="json", strip_outer_array="true")["NumberLoadedRows"] == 2
    assert doris.load(db, "users", json.dumps({"id": 3, "name": "c"}), format="json")["NumberLoadedRows"] == 1
    res = doris.load(db, "users", body, format="json")  # array without strip_outer_array
    assert res["Status"] == "Fail" and res["Message"] == "[DATA_QUALITY_ERROR]too many filtered rows"
    log = requests.get(res["ErrorURL"]).text
    assert "JSON data is array-object, `strip_outer_array` must be TRUE." in log
    assert doris.rows("SELECT id FROM users ORDER BY id", db) == [[1], [2], [3]]


def test_csv_separator_delimiter_columns_and_null(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    res = doris.load(db, "users", "1,a,1.00\n2,\\N,2.50\n", column_separator=",")
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 2
    res = doris.load(db, "users", "x|3|7.5##y|4|8", column_separator="|", line_delimiter="##",
                     columns="name,id,amount")
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 2, res
    res = doris.load(db, "users", "5\t10\n", columns="id,tmp,name=concat('n', tmp)")
    assert res["Status"] == "Success", res
    res = doris.load(db, "users", "6\x01f\n", column_separator="\\x01", columns="id,name")
    assert res["Status"] == "Success", res
    assert doris.rows("SELECT id, name, amount FROM users ORDER BY id", db) == [
        [1, "a", 1.0], [2, None, 2.5], [3, "x", 7.5], [4, "y", 8.0], [5, "n10", None], [6, "f", None]]


def test_csv_column_count_mismatch_filters_and_max_filter_ratio(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    body = "1,a,1\n2,b\n3,c,3,extra\n4,d,4\n"
    res = doris.load(db, "users", body, column_separator=",")
    assert res["Status"] == "Fail" and res["Message"] == "[DATA_QUALITY_ERROR]too many filtered rows"
    assert (res["NumberTotalRows"], res["NumberFilteredRows"]) == (4, 2)
    log = requests.get(res["ErrorURL"])
    assert log.status_code == 200
    assert "actual column number in csv file is  less than  schema column number" in log.text
    assert "actual column number in csv file is  more than  schema column number" in log.text
    assert doris.rows("SELECT count(*) FROM users", db) == [[0]]
    res = doris.load(db, "users", body, column_separator=",", max_filter_ratio="0.5")
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 2 and res["NumberFilteredRows"] == 2
    assert res["ErrorURL"].startswith(f"http://127.0.0.1:{doris.be_port}/api/_load_error_log?file=__shard_0/")
    assert doris.rows("SELECT id FROM users ORDER BY id", db) == [[1], [4]]


def test_strict_mode_filters_bad_conversions(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    body = jsonl({"id": 1, "amount": "abc"}, {"id": 2, "amount": "2.5"})
    res = doris.load(db, "users", body, **JSONL)  # non-strict: the bad value becomes NULL
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 2
    assert doris.rows("SELECT id, amount FROM users ORDER BY id", db) == [[1, None], [2, 2.5]]
    res = doris.load(db, "users", body, strict_mode="true", max_filter_ratio="0.9", **JSONL)
    assert res["Status"] == "Success" and res["NumberFilteredRows"] == 1 and res["NumberLoadedRows"] == 1
    assert "value is incorrect while strict mode is true" in requests.get(res["ErrorURL"]).text
    res = doris.load(db, "users", jsonl({"id": 3, "name": "x" * 21}), **JSONL)  # VARCHAR(20) overflow
    assert res["Status"] == "Fail" and "too long than schema" in requests.get(res["ErrorURL"]).text


def test_arrow_format(doris: StandInProcess, db: str) -> None:
    make_users(doris, db, extra_cols=",\n  `ts` DATETIMEV2(3)")
    tbl = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", None],
                    "amount": pa.array([1.25, 2.5]).cast(pa.decimal128(10, 2)),
                    "ts": pa.array([1767225601123, 1767225602000], pa.timestamp("ms")), "ignored": [1, 2]})
    sink = io.BytesIO()
    with ipc.new_stream(sink, tbl.schema) as w:
        w.write_table(tbl)
    res = doris.load(db, "users", sink.getvalue(), format="arrow")
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 2, res
    assert doris.rows("SELECT id, name, amount, ts FROM users ORDER BY id", db) == [
        [1, "a", 1.25, "2026-01-01 00:00:01.123"], [2, None, 2.5, "2026-01-01 00:00:02.000"]]


def test_gzip_compressed_bodies(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    res = doris.load(db, "users", gzip.compress(jsonl({"id": 1, "name": "gz"}).encode()), compress_type="gz",
                     **JSONL)
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 1
    res = doris.load(db, "users", gzip.compress(b"2,csv,1\n"), compress_type="gz", column_separator=",")
    assert res["Status"] == "Success"
    assert doris.rows("SELECT id, name FROM users ORDER BY id", db) == [[1, "gz"], [2, "csv"]]


def test_load_errors_unknown_table_format_and_chunked_body(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    res = doris.load(db, "nope", "1", column_separator=",")
    assert res["Status"] == "Fail" and "unknown table, tableName=nope" in res["Message"]
    res = doris.load(db, "users", "1", format="xml")
    assert res["Status"] == "Fail" and res["Message"] == "[INVALID_ARGUMENT]unknown data format, format=xml"

    def chunks():
        yield b'{"id": 1, "name": "chunk'
        yield b'ed"}\n{"id": 2}\n'

    r = requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=chunks(), auth=AUTH,
                     headers={"Expect": "100-continue", **JSONL})
    assert r.json()["Status"] == "Success" and r.json()["NumberLoadedRows"] == 2


# ---------------------------------------------------------------------------------------------
# 2-4. Transactions, labels, 2PC
# ---------------------------------------------------------------------------------------------
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


# ---------------------------------------------------------------------------------------------
# 5. Metadata endpoints
# ---------------------------------------------------------------------------------------------
def test_schema_light_schema_change_backends_health(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    r = requests.get(f"{doris.fe}/api/{db}/users/_schema", auth=AUTH).json()
    assert r["code"] == 0 and r["msg"] == "success"
    data = r["data"]
    assert data["status"] == 200 and data["keysType"] == "UNIQUE_KEYS"
    props = {p["name"]: p for p in data["properties"]}
    assert props["id"]["type"] == "BIGINT" and props["id"]["is_key"] == "Yes" and props["id"]["comment"] == "primary key"
    assert props["amount"]["type"] == "DECIMAL64" and (props["amount"]["precision"], props["amount"]["scale"]) == (
        "10", "2")
    assert props["name"]["aggregation_type"] == "REPLACE"
    r = requests.get(f"{doris.fe}/api/{db}/nope/_schema", auth=AUTH).json()
    assert r["code"] == 1 and r["msg"] == "Error"

    url = f"{doris.fe}/api/enable_light_schema_change/{db}/users"
    assert requests.get(url, auth=AUTH, json={"isDropColumn": False, "columnName": "x"}).json() == {
        "msg": "success", "code": 0, "data": None, "count": 0}
    r = requests.get(url, auth=AUTH, json={"isDropColumn": True, "columnName": "id"}).json()
    assert r["code"] == 1 and r["data"] == ("Column id is primary key in materializedIndex that can't do the light "
                                            "schema change")
    assert requests.get(url, auth=AUTH, json={"isDropColumn": True, "columnName": "name"}).json()["code"] == 0

    r = requests.get(f"{doris.fe}/api/backends?is_alive=true", auth=AUTH).json()
    assert r["code"] == 0 and r["data"]["backends"] == [{"ip": "127.0.0.1", "http_port": doris.be_port,
                                                         "is_alive": True}]
    assert requests.get(f"{doris.fe}/api/health").json() == {
        "msg": "success", "code": 0, "data": {"online_backend_num": 1, "total_backend_num": 1}, "count": 0}
    assert requests.get(f"{doris.be}/").status_code == 200
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state", auth=AUTH).json()["code"] == 403


# ---------------------------------------------------------------------------------------------
# 6. SQL over HTTP
# ---------------------------------------------------------------------------------------------
def test_sql_ddl_and_queries(doris: StandInProcess, db: str) -> None:
    res = doris.q(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    assert res["code"] == 0 and res["data"]["type"] == "exec_status" and res["msg"] == "success"
    res = doris.q(f"CREATE DATABASE `{db}`")
    assert res == {"msg": "Error", "code": 1, "count": 0, "data": res["data"]}
    assert res["data"].startswith("Failed to execute sql: ") and f"Can't create database '{db}'" in res["data"]
    doris.ok(f"""CREATE TABLE IF NOT EXISTS `{db}`.`orders`(
        `id` BIGINT NOT NULL COMMENT 'pk',
        `cust` VARCHAR(30) DEFAULT 'anon' COMMENT 'it''s a customer',
        `total` DECIMALV3(12,2) COMMENT 't',
        `placed` DATETIMEV2(6),
        `day` DATEV2,
        `flag` BOOLEAN,
        `tiny` TINYINT, `small` SMALLINT, `i` INT, `big` LARGEINT,
        `f` FLOAT, `d` DOUBLE, `c` CHAR(3), `s` STRING, `j` JSONB,
        `seq` BIGINT
    ) UNIQUE KEY(`id`) COMMENT 'orders'
    DISTRIBUTED BY HASH(`id`) BUCKETS 4
    PROPERTIES ("replication_num" = "1", "function_column.sequence_col" = "seq")""")
    row = {"id": 1, "cust": "ann", "total": "12345678.91", "placed": "2026-01-02 03:04:05.123456", "day": "2026-01-02",
           "flag": True, "tiny": -128, "small": 32767, "i": 2147483647, "big": "170141183460469231731687303715884105727",
           "f": 1.5, "d": 2.25, "c": "abc", "s": "long text", "j": {"a": [1, 2]}, "seq": 1}
    res = doris.load(db, "orders", jsonl(row), **JSONL)
    assert res["Status"] == "Success", res
    data = doris.ok("SELECT * FROM orders", db)
    assert [m["name"] for m in data["meta"]] == list(row)
    assert data["data"] == [[1, "ann", 12345678.91, "2026-01-02 03:04:05.123456", "2026-01-02", True, -128, 32767,
                             2147483647, 170141183460469231731687303715884105727, 1.5, 2.25, "abc", "long text",
                             '{"a":[1,2]}', 1]]
    # exact decimals are JSON numbers in the raw body
    raw = requests.post(f"{doris.fe}/api/query/default_cluster/{db}", json={"stmt": "SELECT total FROM orders"},
                        auth=AUTH).text
    assert '"data":[[12345678.91]]' in raw

    for i in range(2, 8):
        doris.load(db, "orders", jsonl({"id": i, "cust": f"c{i % 3}", "total": i * 10, "seq": 1}), **JSONL)
    assert doris.rows("SELECT cust, count(*), sum(total) FROM orders WHERE id > 1 GROUP BY cust ORDER BY cust", db) == [
        ["c0", 2, 90.0], ["c1", 2, 110.0], ["c2", 2, 70.0]]
    agg = doris.ok("SELECT count(*), max(id) FROM orders", db)
    assert [m["name"] for m in agg["meta"]] == ["count(*)", "max(id)"]
    assert doris.rows("SELECT id FROM orders ORDER BY id DESC LIMIT 2", db) == [[7], [6]]
    assert len(doris.ok("SELECT id FROM orders", db, )["data"]) == 7
    assert len(doris.q("SELECT id FROM orders", db, limit=3)["data"]["data"]) == 3

    # information_schema lookups exactly as the connector issues them
    q = (f"SELECT COLUMN_NAME FROM information_schema.`COLUMNS` WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = "
         "'orders' AND COLUMN_NAME = 'cust'")
    assert doris.rows(q, db) == [["cust"]]
    assert doris.rows(f"SELECT `SCHEMA_NAME` FROM `INFORMATION_SCHEMA`.`SCHEMATA` WHERE SCHEMA_NAME = '{db}'",
                      "information_schema") == [[db]]
    assert doris.rows("SELECT DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_COMMENT FROM "
                      f"information_schema.COLUMNS WHERE TABLE_SCHEMA = '{db}' AND COLUMN_NAME IN ('id', 'cust') "
                      "ORDER BY ORDINAL_POSITION", db) == [
        ["bigint", "bigint", "NO", "UNI", "pk"], ["varchar", "varchar(30)", "YES", "", "it's a customer"]]

    # SHOW FULL COLUMNS (row[0] name, row[5] default)
    cols = doris.ok(f"SHOW FULL COLUMNS FROM `{db}`.`orders`", db)
    assert [m["name"] for m in cols["meta"]] == ["Field", "Type", "Collation", "Null", "Key", "Default", "Extra",
                                                 "Privileges", "Comment"]
    assert cols["data"][1][0] == "cust" and cols["data"][1][5] == "anon"

    # ALTER TABLE: add / drop / rename / modify, as the connector writes them
    doris.ok(f"ALTER TABLE `{db}`.`orders` ADD COLUMN `note` VARCHAR(10) DEFAULT 'n/a' COMMENT 'new'")
    assert doris.rows("SELECT note FROM orders WHERE id = 1", db) == [["n/a"]]
    doris.ok(f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `note` VARCHAR(50) COMMENT 'wider'")
    doris.ok(f"ALTER TABLE `{db}`.`orders` RENAME COLUMN `note` `remark`")
    doris.ok(f"ALTER TABLE `{db}`.`orders` DROP COLUMN `s`")
    doris.ok(f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `small` INT")
    schema = requests.get(f"{doris.fe}/api/{db}/orders/_schema", auth=AUTH).json()["data"]
    by_name = {p["name"]: p for p in schema["properties"]}
    assert "s" not in by_name and by_name["remark"]["comment"] == "wider" and by_name["small"]["type"] == "INT"
    assert schema["schema_version"] == 5
    assert doris.rows("SELECT remark, small FROM orders WHERE id = 1", db) == [["n/a", 32767]]
    for stmt, msg in [
        (f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `remark` VARCHAR(5)", "Cannot shorten string length"),
        (f"ALTER TABLE `{db}`.`orders` DROP COLUMN `id`", "Can not drop key column in Unique data model table"),
        (f"ALTER TABLE `{db}`.`orders` ADD COLUMN `cust` INT", "Can not add column which already exists"),
        (f"ALTER TABLE `{db}`.`orders` DROP COLUMN `zzz`", "Column does not exists: zzz"),
        ("SELECT * FROM missing_table", "does not exist"),
        ("INSERT INTO orders VALUES (1)", "Unsupported statement type"),
        (f"CREATE TABLE `{db}`.`bad` (`a` INT, `b` INT) UNIQUE KEY(`b`) DISTRIBUTED BY HASH(`b`)",
         "Key columns should be a ordered prefix of the schema"),
        (f"CREATE TABLE `{db}`.`bad` (`a` INT) DUPLICATE KEY(`a`) DISTRIBUTED BY HASH(`a`) "
         "PROPERTIES ('replication_num'='3')", "Failed to find enough backend"),
    ]:
        res = doris.q(stmt, db)
        assert res["code"] == 1 and res["msg"] == "Error" and msg in res["data"], (stmt, res)

    doris.ok(f"TRUNCATE TABLE `{db}`.`orders`")
    assert doris.rows("SELECT count(*) FROM orders", db) == [[0]]
    doris.ok(f"DROP TABLE `{db}`.`orders`")
    assert doris.q("SELECT * FROM orders", db)["code"] == 1
    assert doris.rows(f"SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{db}'", db) == [[0]]
    assert doris.q("", db)["code"] == 403


# ---------------------------------------------------------------------------------------------
# 7. Data semantics
# ---------------------------------------------------------------------------------------------
def test_unique_upsert_whole_row_and_json_key_matching(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    doris.load(db, "users", jsonl({"id": 1, "name": "a", "amount": 1}, {"id": 2, "name": "b", "amount": 2}), **JSONL)
    # whole-row replace: the missing 'amount' becomes NULL; unknown keys are ignored
    res = doris.load(db, "users", jsonl({"id": 1, "name": "a2", "unknown": {"x": 1}}), **JSONL)
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 1
    assert doris.rows("SELECT id, name, amount FROM users ORDER BY id", db) == [[1, "a2", None], [2, "b", 2.0]]
    # NOT NULL violations filter the row
    res = doris.load(db, "users", jsonl({"name": "no id"}, {"id": 3}), max_filter_ratio="0.5", **JSONL)
    assert (res["NumberLoadedRows"], res["NumberFilteredRows"]) == (1, 1)
    assert "column(id) values is null while columns is not nullable" in requests.get(res["ErrorURL"]).text
    # within one load the last row of a key wins
    doris.load(db, "users", jsonl({"id": 5, "name": "first"}, {"id": 5, "name": "last"}), **JSONL)
    assert doris.rows("SELECT name FROM users WHERE id = 5", db) == [["last"]]


def test_delete_sign_hidden_columns_and_merge_types(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    doris.load(db, "users", jsonl(*[{"id": i, "name": f"n{i}"} for i in range(1, 7)]), **JSONL)
    res = doris.load(db, "users", jsonl({"id": 1, "__DORIS_DELETE_SIGN__": "1"}, {"id": 2, "name": "keep",
                                        "__DORIS_DELETE_SIGN__": "0"}),
                     hidden_columns="__DORIS_DELETE_SIGN__", **JSONL)
    assert res["Status"] == "Success"
    assert doris.rows("SELECT id, name FROM users ORDER BY id", db)[:2] == [[2, "keep"], [3, "n3"]]
    # without hidden_columns the key is ignored (plain upsert)
    doris.load(db, "users", jsonl({"id": 3, "name": "still", "__DORIS_DELETE_SIGN__": 1}), **JSONL)
    assert doris.rows("SELECT name FROM users WHERE id = 3", db) == [["still"]]
    doris.load(db, "users", jsonl({"id": 3}), merge_type="DELETE", **JSONL)
    doris.load(db, "users", "4,x,1\n5,y,0\n", column_separator=",", columns="id,name,flag",
               merge_type="MERGE", delete="flag=1")
    assert doris.rows("SELECT id, name FROM users ORDER BY id", db) == [[2, "keep"], [5, "y"], [6, "n6"]]
    res = doris.load(db, "users", jsonl({"id": 6}), delete="id=6", **JSONL)
    assert res["Message"].endswith("Not support DELETE ON clause when merge type is not MERGE.")
    # Doris reads the sign as a number: 1 and 1.0 delete just as "1" does.
    doris.load(db, "users", jsonl({"id": 7, "name": "a"}, {"id": 8, "name": "b"}), **JSONL)
    doris.load(db, "users", jsonl({"id": 7, "__DORIS_DELETE_SIGN__": 1}, {"id": 8, "__DORIS_DELETE_SIGN__": 1.0}),
               hidden_columns="__DORIS_DELETE_SIGN__", **JSONL)
    assert doris.rows("SELECT COUNT(*) FROM users WHERE id IN (7, 8)", db) == [[0]]
    res = doris.load(db, "users", jsonl({"id": 6}), merge_type="UPSERT", **JSONL)
    assert res["Status"] == "Fail" and "Invalid merge type UPSERT" in res["Message"]


def test_sequence_column_orders_upserts_and_deletes(doris: StandInProcess, db: str) -> None:
    make_users(doris, db, extra_props=", 'function_column.sequence_col' = 'ver'", extra_cols=",\n  `ver` BIGINT")
    h = {**JSONL, "hidden_columns": "__DORIS_DELETE_SIGN__"}
    doris.load(db, "users", jsonl({"id": 1, "name": "v5", "ver": 5}), headers=h)
    doris.load(db, "users", jsonl({"id": 1, "name": "v3", "ver": 3}), headers=h)  # older: ignored
    assert doris.rows("SELECT name, ver FROM users", db) == [["v5", 5]]
    doris.load(db, "users", jsonl({"id": 1, "name": "v5b", "ver": 5}), headers=h)  # tie: newer load wins
    assert doris.rows("SELECT name FROM users", db) == [["v5b"]]
    # in one batch the highest sequence wins regardless of order
    doris.load(db, "users", jsonl({"id": 2, "name": "b9", "ver": 9}, {"id": 2, "name": "b7", "ver": 7}), headers=h)
    assert doris.rows("SELECT name FROM users WHERE id = 2", db) == [["b9"]]
    # deletes obey the sequence: an older delete is ignored, a newer one hides the row and blocks older rows
    doris.load(db, "users", jsonl({"id": 1, "ver": 4, "__DORIS_DELETE_SIGN__": "1"}), headers=h)
    assert doris.rows("SELECT name FROM users WHERE id = 1", db) == [["v5b"]]
    doris.load(db, "users", jsonl({"id": 1, "ver": 6, "__DORIS_DELETE_SIGN__": "1"}), headers=h)
    assert doris.rows("SELECT count(*) FROM users WHERE id = 1", db) == [[0]]
    doris.load(db, "users", jsonl({"id": 1, "name": "late", "ver": 5}), headers=h)
    assert doris.rows("SELECT count(*) FROM users WHERE id = 1", db) == [[0]]
    doris.load(db, "users", jsonl({"id": 1, "name": "newer", "ver": 7}), headers=h)
    assert doris.rows("SELECT name FROM users WHERE id = 1", db) == [["newer"]]


def test_sequence_type_requires_mapping(doris: StandInProcess, db: str) -> None:
    doris.ok(f"CREATE TABLE `{db}`.`st` (`id` INT, `v` VARCHAR(10), `pos` BIGINT) UNIQUE KEY(`id`) "
             "DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES ('function_column.sequence_type' = 'bigint')")
    res = doris.load(db, "st", jsonl({"id": 1, "v": "a", "pos": 2}), **JSONL)
    assert res["Status"] == "Fail" and "Table st has sequence column, need to specify the sequence column" in res[
        "Message"]
    h = {**JSONL, "function_column.sequence_col": "pos"}
    doris.load(db, "st", jsonl({"id": 1, "v": "a", "pos": 2}), headers=h)
    doris.load(db, "st", jsonl({"id": 1, "v": "old", "pos": 1}), headers=h)
    assert doris.rows("SELECT v FROM st", db) == [["a"]]


def test_duplicate_key_tables_append(doris: StandInProcess, db: str) -> None:
    doris.ok(f"CREATE TABLE `{db}`.`ev` (`k` INT, `v` STRING) DUPLICATE KEY(`k`) DISTRIBUTED BY HASH(`k`) BUCKETS 1")
    doris.load(db, "ev", jsonl({"k": 1, "v": "a"}, {"k": 1, "v": "a"}), **JSONL)
    doris.load(db, "ev", jsonl({"k": 1, "v": "b"}), **JSONL)
    assert doris.rows("SELECT k, v FROM ev ORDER BY v", db) == [[1, "a"], [1, "a"], [1, "b"]]
    res = doris.load(db, "ev", jsonl({"k": 1}), merge_type="DELETE", **JSONL)
    assert res["Status"] == "Fail" and "need to upgrade table to support batch delete" in res["Message"]
    schema = requests.get(f"{doris.fe}/api/{db}/ev/_schema", auth=AUTH).json()["data"]
    assert schema["keysType"] == "DUP_KEYS"


# ---------------------------------------------------------------------------------------------
# 8. Concurrency
# ---------------------------------------------------------------------------------------------
def test_concurrent_loads_from_many_clients(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)

    def one(i: int) -> dict:
        rows = [{"id": i * 1000 + j, "name": f"c{i}"} for j in range(200)]
        res = doris.load(db, "users", jsonl(*rows), label=f"cc_{i}", two_phase_commit="true", **JSONL)
        assert res["Status"] == "Success", res
        assert doris.txn(db, "commit", txn_id=res["TxnId"])["status"] == "Success"
        return res

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(16)))
    assert len({r["TxnId"] for r in results}) == 16
    assert doris.rows("SELECT count(*), count(DISTINCT name) FROM users", db) == [[3200, 16]]
    # racing the same label: exactly one wins
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        races = list(pool.map(lambda i: doris.load(db, "users", jsonl({"id": 99}), label="race", **JSONL), range(6)))
    assert sorted(r["Status"] for r in races).count("Success") == 1


# ---------------------------------------------------------------------------------------------
# 9. Fault injection
# ---------------------------------------------------------------------------------------------
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


def test_basic_auth_user_with_cluster_suffix_is_accepted(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    token = base64.b64encode(b"root@default_cluster:").decode()
    r = requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=jsonl({"id": 1}),
                     headers={"Authorization": f"Basic {token}", "Expect": "100-continue", **JSONL})
    assert r.json()["Status"] == "Success"


def test_upserts_replace_their_rows_whatever_the_key(doris: StandInProcess, db: str) -> None:
    """A merge narrows its search to the batch's key range: rows of every key type are still found,
    including keys that need quoting and a NULL key."""
    cases = {
        "k_str": ("`k` VARCHAR(20)", ["a'b", "{x}", "z\\\\q", "m"], "UNIQUE KEY(`k`)"),
        "k_dt": ("`k` DATETIME(3)", ["2026-01-01 00:00:00.250", "2026-01-02 10:00:00.000", "2025-12-31 23:59:59.999"],
                 "UNIQUE KEY(`k`)"),
        "k_dec": ("`k` DECIMAL(12,4)", ["-1.5000", "2.2500", "100000.0001"], "UNIQUE KEY(`k`)"),
        "k_null": ("`k` INT NULL", [None, 5, 7], "UNIQUE KEY(`k`)"),
    }
    for name, (column, keys, model) in cases.items():
        doris.ok(f"CREATE TABLE `{db}`.`{name}` ({column}, `v` VARCHAR(10)) {model} DISTRIBUTED BY HASH(`k`) "
                 "BUCKETS 1 PROPERTIES ('replication_num' = '1')")
        doris.load(db, name, jsonl(*[{"k": k, "v": "old"} for k in keys]), **JSONL)
        doris.load(db, name, jsonl(*[{"k": k, "v": "new"} for k in keys[:2]]), **JSONL)
        doris.load(db, name, jsonl({"k": keys[-1], "v": "newest"}), **JSONL)
        got = sorted(r[0] for r in doris.rows(f"SELECT v FROM `{name}`", db))
        assert got == sorted(["new"] * 2 + ["old"] * (len(keys) - 3) + ["newest"]), (name, got)
    doris.ok(f"CREATE TABLE `{db}`.`k_two` (`a` INT, `b` VARCHAR(5), `v` INT) UNIQUE KEY(`a`, `b`) "
             "DISTRIBUTED BY HASH(`a`) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    doris.load(db, "k_two", jsonl(*[{"a": a, "b": b, "v": 0} for a in (1, 2, 3) for b in ("x", "y")]), **JSONL)
    doris.load(db, "k_two", jsonl({"a": 2, "b": "y", "v": 1}, {"a": 3, "b": "x", "v": 1}), **JSONL)
    assert doris.rows("SELECT a, b, v FROM k_two WHERE v = 1 ORDER BY a", db) == [[2, "y", 1], [3, "x", 1]]
    assert doris.rows("SELECT count(*) FROM k_two", db) == [[6]]
