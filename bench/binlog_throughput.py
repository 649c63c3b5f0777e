"""Binlog throughput: Tidemark's whole stream path vs mysql-replication's raw decode, same run.

A 1M-row binlog: ``shop.t(id bigint pk, name varchar(64), amount decimal(10,2), ts datetime(3))``
filled by 10 × ``INSERT … SELECT … FROM seq_1_to_100000`` on a private MariaDB (the table every
benchmark here uses). Then, over exactly that binlog range:

* **raw**: mysql-replication decoding every WriteRowsEvent (``ev.rows``) — the known ceiling;
* **tidemark**: ``BinlogSplitReader.read_batch`` in bounded batches (as the stream job reads) with
  the snapshot filter (``BinlogEventFilter``, chunks behind the range) and the shared Doris value
  conversion (``DorisValueConverter``): read, decode, filter, convert, one ``DataChangeEvent`` per row;
* **mariadb-binlog -v** on the binlog file (C decoder to pseudo-SQL), for scale.

The limit is measured in the same run: tidemark rows/s must be ≥ raw rows/s (ratio ≥ 1). Prints
the figures as a markdown table, then the whole report as JSON.

    .venv/bin/python bench/binlog_throughput.py [--rows 1000000] [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pymysql
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import WriteRowsEvent

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cdc_core.model.events import DataChangeEvent  # noqa: E402
from cdc_core.model.schema import TableId  # noqa: E402
from cdc_core.mysql.binlog_filter import BinlogEventFilter  # noqa: E402
from cdc_core.mysql.binlog_reader import BinlogSplitReader  # noqa: E402
from cdc_core.mysql.binlog_status import read_current_offset  # noqa: E402
from cdc_core.mysql.discovery import read_table_schema  # noqa: E402
from cdc_core.mysql.finished_chunk import FinishedChunk  # noqa: E402
from cdc_core.mysql.types import DorisValueConverter  # noqa: E402
from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.procs import free_port  # noqa: E402


def fill(conn, rows: int, db: str = "shop") -> None:
    per = 100_000 if rows >= 100_000 else rows
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS {db}")
        cur.execute(f"CREATE DATABASE {db}")
        cur.execute(f"USE {db}")
        cur.execute(f"CREATE TABLE {db}.t (id bigint primary key, name varchar(64), amount decimal(10,2), "
                    "ts datetime(3))")
        for i in range(rows // per):
            cur.execute(
                f"INSERT INTO {db}.t SELECT seq + {i * per}, CONCAT('customer-', seq, '-', MD5(seq)), "
                f"(seq % 100000) / 100, '2026-01-01' + INTERVAL seq SECOND + INTERVAL seq MOD 1000 * 1000 "
                f"MICROSECOND FROM seq_1_to_{per}"
            )


def raw_decode(settings: dict, start, stop) -> int:
    stream = BinLogStreamReader(connection_settings=dict(settings), server_id=9901, resume_stream=True,
                                blocking=False, log_file=start.file, log_pos=start.position,
                                only_events=[WriteRowsEvent], is_mariadb=False, enable_logging=False)
    n = 0
    try:
        for ev in stream:
            n += len(ev.rows)
            if stream.log_file == stop.file and stream.log_pos >= stop.position:
                break
    finally:
        stream.close()
    return n


def tidemark(settings: dict, schema, start, stop) -> int:
    converter = DorisValueConverter("UTC")
    chunks = [FinishedChunk(schema.table_id, 0, None, None, start)]  # the snapshot is behind the range
    event_filter = BinlogEventFilter(chunks, {schema.table_id: schema}.get)
    reader = BinlogSplitReader(settings, 9902, {schema.table_id: schema}.get, converter,
                               is_captured=lambda t: t == schema.table_id)
    n = 0
    position = start
    while position < stop:
        batch = reader.read_batch(position, stop, max_events=600, event_filter=event_filter)
        n += sum(1 for e in batch.events if isinstance(e, DataChangeEvent))
        position = batch.end
    return n


def timed(fn, *args) -> tuple[int, float]:
    t0 = time.perf_counter()
    n = fn(*args)
    return n, time.perf_counter() - t0


def measure(server: MariaDBServer, rows: int, repeat: int, db: str = "shop") -> tuple[dict, pd.DataFrame]:
    """Fill ``{db}.t`` on a running ``server`` (its binlog from a fresh file) and decode that range
    three ways, best of ``repeat``. The report carries the range (``binlog_start`` / ``binlog_stop``)
    so that another reader (a peer) can be timed over the same events."""
    root = pymysql.connect(unix_socket=server.endpoint.root_socket, user="root", autocommit=True)
    try:
        with root.cursor() as cur:
            cur.execute("FLUSH BINARY LOGS")
            start = read_current_offset(cur)
        t0 = time.perf_counter()
        fill(root, rows, db)
        fill_s = time.perf_counter() - t0
        with root.cursor() as cur:
            stop = read_current_offset(cur)
        schema = read_table_schema(root, TableId(db, "t"))
    finally:
        root.close()
    ep = server.endpoint
    settings = {"host": ep.host, "port": ep.port, "user": ep.user, "password": ep.password}
    results: dict[str, list[float]] = {"raw": [], "tidemark": []}
    for _ in range(repeat):
        for name, fn in (("raw", lambda: raw_decode(settings, start, stop)),
                         ("tidemark", lambda: tidemark(settings, schema, start, stop))):
            n, secs = timed(fn)
            if n != rows:
                raise SystemExit(f"{name} decoded {n} rows, expected {rows}")
            results[name].append(n / secs)
    tool = shutil.which("mariadb-binlog") or shutil.which("mysqlbinlog")
    binlog_file = server.datadir / stop.file
    cli_rates = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([tool, "-v", f"--start-position={start.position}", f"--stop-position={stop.position}",
                        str(binlog_file)], stdout=subprocess.DEVNULL, check=True)
        cli_rates.append(rows / (time.perf_counter() - t0))
    raw, ours, cli = max(results["raw"]), max(results["tidemark"]), max(cli_rates)
    report = {
        "rows": rows, "binlog_bytes": stop.position - start.position if stop.file == start.file else None,
        "binlog_start": {"file": start.file, "position": start.position},
        "binlog_stop": {"file": stop.file, "position": stop.position},
        "fill_seconds": round(fill_s, 2),
        "raw_mysql_replication_rows_per_s": round(raw), "tidemark_rows_per_s": round(ours),
        "mariadb_binlog_v_rows_per_s": round(cli),
        "all_runs": {k: [round(v) for v in vs] for k, vs in results.items()} | {"mariadb-binlog": [round(v) for v in cli_rates]},
        "ratio_tidemark_to_raw": round(ours / raw, 2),
        "ratio_tidemark_to_mariadb_binlog": round(ours / cli, 2),
        "limit": "tidemark >= raw (ratio >= 1.0)",
        "verdict": "PASS" if ours >= raw else "FAIL",
    }
    table = pd.DataFrame(
        [("raw mysql-replication", raw, results["raw"]), ("tidemark", ours, results["tidemark"]),
         ("mariadb-binlog -v", cli, cli_rates)],
        columns=["decoder", "rows/s (best)", "rows/s (each run)"],
    )
    table["ratio to raw"] = (table["rows/s (best)"] / raw).round(2)
    table["rows/s (best)"] = table["rows/s (best)"].round().astype(int)
    table["rows/s (each run)"] = table["rows/s (each run)"].map(lambda rates: " / ".join(f"{r:,.0f}" for r in rates))
    return report, table


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="binlog-bench-"))
    server = MariaDBServer(base / "mariadb", port=free_port(), server_id=1)
    server.start()
    try:
        report, table = measure(server, args.rows, args.repeat)
        print(table.to_markdown(index=False, floatfmt=",.2f", intfmt=","))
        print()
        print(json.dumps(report, indent=2))
        return 0 if report["verdict"] == "PASS" else 1
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
