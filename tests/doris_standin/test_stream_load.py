"""Stream Load as Doris serves it: the FE's 307 redirect to a BE, authentication, the response,
formats (JSON, CSV, Arrow), filtering and strict mode, compression, errors, concurrent clients."""

from __future__ import annotations

import base64
import concurrent.futures
import gzip
import io
import json
import re

import pyarrow as pa
import pyarrow.ipc as ipc
import requests

from .conftest import AUTH, StandInProcess
from .helpers import JSONL, RESPONSE_KEYS, jsonl, make_users


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


def test_basic_auth_user_with_cluster_suffix_is_accepted(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    token = base64.b64encode(b"root@default_cluster:").decode()
    r = requests.put(f"{doris.be}/api/{db}/users/_stream_load", data=jsonl({"id": 1}),
                     headers={"Authorization": f"Basic {token}", "Expect": "100-continue", **JSONL})
    assert r.json()["Status"] == "Success"


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
    # a timestamp lands as from_unixtime in +08:00, Doris's Arrow reader's zone (devstack/doris/loads.py)
    assert doris.rows("SELECT id, name, amount, ts FROM users ORDER BY id", db) == [
        [1, "a", 1.25, "2026-01-01 08:00:01.123"], [2, None, 2.5, "2026-01-01 08:00:02.000"]]


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


def test_json_numbers_for_largeint_and_decimal_are_read_exactly(doris: StandInProcess, db: str) -> None:
    """Doris reads a JSON number's digits for a LARGEINT or DECIMAL column, never through a double."""
    doris.ok(
        f"CREATE TABLE `{db}`.`wide` (`id` BIGINT NOT NULL, `big` LARGEINT, `dec` DECIMALV3(38, 9), `s` STRING) "
        "UNIQUE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES ('replication_num' = '1')"
    )
    rows = ('{"id": 1, "big": 18446744073709551615, "dec": 12345678901234567890.123456789, "s": 1}\n'
            '{"id": 2, "big": -170141183460469231731687303715884105728, "dec": -0.000000001, "s": "y"}\n')
    res = doris.load(db, "wide", rows, **JSONL)
    assert res["Status"] == "Success", res
    array = '[{"id": 3, "big": 9223372036854775809, "dec": 99999999999999999999999999999.999999999, "s": "x"}]'
    res = doris.load(db, "wide", array, format="json", strip_outer_array="true")
    assert res["Status"] == "Success", res
    got = doris.rows("SELECT id, CAST(big AS STRING), CAST(dec AS STRING), s FROM wide ORDER BY id", db)
    assert got == [
        [1, "18446744073709551615", "12345678901234567890.123456789", "1"],
        [2, "-170141183460469231731687303715884105728", "-0.000000001", "y"],
        [3, "9223372036854775809", "99999999999999999999999999999.999999999", "x"],
    ]


def test_bytes_that_are_not_utf8_are_error_rows_never_replaced(doris: StandInProcess, db: str) -> None:
    """Doris validates a CSV line (CsvReader::_validate_line) and a JSON document (simdjson) as UTF-8:
    a row that is not is filtered with its reason, never stored with U+FFFD in place of its bytes."""
    make_users(doris, db)
    csv = b"1,caf\xc3\xa9,1\n2,caf\xe9,2\n3,ok,3\n"  # row 2 is latin1
    res = doris.load(db, "users", csv, column_separator=",", max_filter_ratio="0.5")
    assert res["Status"] == "Success" and (res["NumberLoadedRows"], res["NumberFilteredRows"]) == (2, 1), res
    assert "only support csv data in utf8 codec" in requests.get(res["ErrorURL"]).text
    body = b'{"id": 4, "name": "\xff\xfe"}\n{"id": 5, "name": "\xc5\x81"}\n'
    res = doris.load(db, "users", body, max_filter_ratio="0.5", **JSONL)
    assert res["Status"] == "Success" and (res["NumberLoadedRows"], res["NumberFilteredRows"]) == (1, 1), res
    assert "not valid UTF-8" in requests.get(res["ErrorURL"]).text
    res = doris.load(db, "users", csv, column_separator=",")  # no filtering allowed: the load fails
    assert res["Status"] == "Fail" and res["Message"] == "[DATA_QUALITY_ERROR]too many filtered rows"
    rows = doris.rows("SELECT id, name FROM users ORDER BY id", db)
    assert rows == [[1, "café"], [3, "ok"], [5, "Ł"]]
    assert "\ufffd" not in json.dumps(rows, ensure_ascii=False)
