"""Chunk-read throughput as a ratio to the C client scanning the same table, in the same run.

    .venv/bin/python bench/snapshot_read.py [--rows 1000000] [--chunk-size ROWS (default: Flink's, FLINK_DEFAULT_ROWS)]

Starts a private MariaDB (``--dir``, ``--port``), fills ``shop.t(id bigint pk, name varchar(64),
amount decimal(10,2), ts datetime(3))`` (the table every benchmark here uses) by
``INSERT … SELECT … FROM seq_…`` in steps of 100,000 rows, then measures (best of ``--runs``):

* limit: ``mariadb --quick -e 'SELECT * FROM shop.t' > /dev/null`` as the cdc user over TCP;
* ours: one ``SnapshotSplitReader`` reading every chunk of the split plan in turn (each with its
  low watermark, Arrow range scan, conversion to Doris values, high watermark), and the whole
  table as one chunk.

Prints rows/s and the ratio to the limit (a markdown table, then the report as JSON); exits 1 if
the chunked read is under 50 % of it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cdc_core.model.schema import TableId  # noqa: E402
from cdc_core.mysql.chunk_sizing import FLINK_DEFAULT_ROWS  # noqa: E402
from cdc_core.mysql.chunk_splitter import SplitOptions  # noqa: E402
from cdc_core.mysql.connection import MySqlConnectionSettings, connect  # noqa: E402
from cdc_core.mysql.discovery import read_table_schema  # noqa: E402
from cdc_core.mysql.snapshot_assigner import SnapshotSplitAssigner  # noqa: E402
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader  # noqa: E402
from cdc_core.mysql.splits import SnapshotSplit  # noqa: E402
from devstack.mysql import MariaDBServer  # noqa: E402


def fill(server: MariaDBServer, rows: int) -> None:
    existing = server.root_sql("SELECT COUNT(*) FROM shop.t") if "t" in server.root_sql(
        "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA='shop'") else ""
    if existing.strip() == str(rows):
        return
    server.root_sql(
        "DROP DATABASE IF EXISTS shop; CREATE DATABASE shop; USE shop;"
        "CREATE TABLE t (id BIGINT PRIMARY KEY, name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3));"
    )
    step = 100_000
    for lo in range(0, rows, step):
        hi = min(rows, lo + step) - 1
        server.root_sql(
            f"INSERT INTO t SELECT seq, CONCAT('customer-', seq, '-', MD5(seq)), (seq % 100000) / 100, "
            f"'2026-01-01' + INTERVAL seq SECOND FROM seq_{lo}_to_{hi}", database="shop")
    server.root_sql("ANALYZE TABLE shop.t")


def c_client_seconds(settings: MySqlConnectionSettings) -> float:
    cmd = ["mariadb", "--no-defaults", "--quick", "-h", settings.host, "-P", str(settings.port), "-u",
           settings.user, f"-p{settings.password}", "-e", "SELECT * FROM shop.t"]
    t0 = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0


def chunked_seconds(settings: MySqlConnectionSettings, chunk_size: int, fetch_size: int) -> tuple[float, int, int]:
    conn = connect(settings, text_values=True)
    table = TableId("shop", "t")
    schema = read_table_schema(conn, table)
    splits = SnapshotSplitAssigner(conn, [table], lambda _t: schema,
                                   SplitOptions(chunk_size=chunk_size, split_pause_s=0)).plan()
    conn.close()
    rows = 0
    t0 = time.perf_counter()
    with SnapshotSplitReader(settings, server_id_range=(5400, 5410), fetch_size=fetch_size) as reader:
        for split in splits:
            rows += reader.read(split, schema).rows
    return time.perf_counter() - t0, rows, len(splits)


def whole_table_seconds(settings: MySqlConnectionSettings, fetch_size: int) -> tuple[float, int]:
    conn = connect(settings, text_values=True)
    schema = read_table_schema(conn, TableId("shop", "t"))
    conn.close()
    t0 = time.perf_counter()
    with SnapshotSplitReader(settings, server_id_range=(5400, 5410), fetch_size=fetch_size) as reader:
        rows = reader.read(SnapshotSplit(schema.table_id, 0, None, None, ("id",)), schema).rows
    return time.perf_counter() - t0, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--chunk-size", type=int, default=FLINK_DEFAULT_ROWS)
    ap.add_argument("--fetch-size", type=int, default=1024)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/tidemark-bench-snapshot")
    ap.add_argument("--port", type=int, default=33907)
    ap.add_argument("--keep", action="store_true", help="leave the server running")
    args = ap.parse_args()

    server = MariaDBServer(Path(args.dir), port=args.port)
    server.start()
    try:
        fill(server, args.rows)
        ep = server.endpoint
        settings = MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password)
        c_client = min(c_client_seconds(settings) for _ in range(args.runs))
        chunked = min((chunked_seconds(settings, args.chunk_size, args.fetch_size) for _ in range(args.runs)),
                      key=lambda r: r[0])
        whole = min((whole_table_seconds(settings, args.fetch_size) for _ in range(args.runs)), key=lambda r: r[0])
        c_client_again = min(c_client_seconds(settings) for _ in range(args.runs))
        limit = args.rows / min(c_client, c_client_again)
        result = {
            "rows": args.rows,
            "c_client_rows_per_s": round(limit),
            "chunked_rows_per_s": round(chunked[1] / chunked[0]),
            "chunked_ratio": round(chunked[1] / chunked[0] / limit, 3),
            "chunks": chunked[2],
            "chunk_size": args.chunk_size,
            "fetch_size": args.fetch_size,
            "whole_table_rows_per_s": round(whole[1] / whole[0]),
            "whole_table_ratio": round(whole[1] / whole[0] / limit, 3),
        }
        assert chunked[1] == args.rows and whole[1] == args.rows, "read row counts differ from the table"
        table = pd.DataFrame([
            ("C client (mariadb --quick)", result["c_client_rows_per_s"], 1.0),
            (f"chunked ({chunked[2]} chunks of {args.chunk_size})", result["chunked_rows_per_s"],
             result["chunked_ratio"]),
            ("whole table as one chunk", result["whole_table_rows_per_s"], result["whole_table_ratio"]),
        ], columns=["read", "rows/s", "ratio to the C client"])
        print(table.to_markdown(index=False, intfmt=",", floatfmt=".3f"))
        print()
        print(json.dumps(result, indent=2))
        return 0 if result["chunked_ratio"] >= 0.5 else 1
    finally:
        if not args.keep:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
