"""The naive full reload a user might write instead of a CDC tool: the bench's peer for the snapshot.

pandas ``read_sql`` through a SQLAlchemy engine (PyMySQL driver) reads the whole table into a
DataFrame, ``to_csv`` encodes it, and one non-2PC Doris stream load per table puts it into a
``UNIQUE KEY`` table of the same shape (created here, in database ``naive``). The FE answers a
stream load with a 307 to the BE; like ``curl --location-trusted`` in Doris's documentation, the
redirect is followed by hand so that the credentials go along.

    .venv/bin/python bench/naive_reload.py --port 3307 --fe 127.0.0.1:8030 [--db shop] [--table t]

Prints one JSON line: rows, seconds per step (read, encode, load) and in total, rows/s, and the
count in Doris afterwards.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid

import pandas as pd
import requests
import sqlalchemy

AUTH = ("root", "")
TARGET_DB = "naive"


def doris_sql(fe: str, stmt: str, db: str = "information_schema") -> list:
    body = requests.post(f"http://{fe}/api/query/default_cluster/{db}", auth=AUTH, json={"stmt": stmt},
                         timeout=120).json()
    if body.get("code") != 0:
        raise RuntimeError(f"Doris refused {stmt!r}: {str(body)[:300]}")
    return (body.get("data") or {}).get("data") or []


def stream_load(fe: str, db: str, table: str, body: bytes, columns: list[str]) -> dict:
    # no column_separator header: a tab is Doris's default (and a bare tab is no valid header value)
    headers = {"Expect": "100-continue", "label": f"naive-{uuid.uuid4().hex}", "format": "csv",
               "columns": ",".join(columns)}
    url = f"http://{fe}/api/{db}/{table}/_stream_load"
    first = requests.put(url, data=body, headers=headers, auth=AUTH, allow_redirects=False, timeout=600)
    if first.status_code in (301, 302, 307, 308):
        first = requests.put(first.headers["Location"], data=body, headers=headers, auth=AUTH, timeout=600)
    result = first.json()
    if result.get("Status") != "Success":
        raise RuntimeError(f"stream load into {db}.{table} failed: {str(result)[:500]}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", default="cdc")
    parser.add_argument("--password", default="cdc")
    parser.add_argument("--fe", required=True, help="Doris FE host:port")
    parser.add_argument("--db", default="shop")
    parser.add_argument("--table", default="t")
    args = parser.parse_args()

    doris_sql(args.fe, f"CREATE DATABASE IF NOT EXISTS {TARGET_DB}")
    doris_sql(args.fe, f"DROP TABLE IF EXISTS {TARGET_DB}.{args.table}")
    doris_sql(args.fe, f"CREATE TABLE {TARGET_DB}.{args.table} (id BIGINT, name VARCHAR(64), amount DECIMAL(10,2), "
                       "ts DATETIME(3)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1 "
                       'PROPERTIES ("replication_num" = "1")')
    engine = sqlalchemy.create_engine(
        sqlalchemy.URL.create("mysql+pymysql", username=args.user, password=args.password, host=args.host,
                              port=args.port, database=args.db))
    t0 = time.perf_counter()
    with engine.connect() as conn:
        frame = pd.read_sql(f"SELECT * FROM {args.table}", conn)
    t1 = time.perf_counter()
    body = frame.to_csv(sep="\t", header=False, index=False, date_format="%Y-%m-%d %H:%M:%S.%f").encode()
    t2 = time.perf_counter()
    loaded = stream_load(args.fe, TARGET_DB, args.table, body, list(frame.columns))
    t3 = time.perf_counter()
    (count,), = doris_sql(args.fe, f"SELECT COUNT(*) FROM {args.table}", TARGET_DB)
    rows = len(frame)
    if int(count) != rows:
        raise SystemExit(f"Doris holds {count} rows of {TARGET_DB}.{args.table}, expected {rows}")
    print(json.dumps({"rows": rows, "read_sql_s": round(t1 - t0, 2), "to_csv_s": round(t2 - t1, 2),
                      "stream_load_s": round(t3 - t2, 2), "wall_s": round(t3 - t0, 2),
                      "rows_per_s": round(rows / (t3 - t0)), "csv_bytes": len(body),
                      "loaded_rows": loaded.get("NumberLoadedRows"), "doris_count": int(count)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
