"""Stream-load throughput into the Doris stand-in: JSON vs CSV vs Arrow (and gzip), 1M rows.

    .venv/bin/python bench/sink_load.py [--rows 1000000] [--fe host:port]
    .venv/bin/python bench/sink_load.py --requests 600 [--tables 50] [--direct] [--fe host:port]

Starts its own stand-in on free ports (unless --fe is given). For each format it reports (a
markdown table, then the same figures as JSON):

* ``sink``  — rows/s of DorisSink.load + commit end to end (encoding, HTTP, the stand-in's parse
  and merge), for dict input (what the binlog path hands over) and for Arrow input (Spark);
* ``limit`` — rows/s of a bare PUT + commit of the same body already encoded in memory, measured in
  the same run: what the stand-in itself can ingest. ``sink/limit`` is the share our client keeps.

``--requests N``: Tidemark's own CPU per Doris HTTP request instead. N small 2PC loads (a few rows,
dict rows handed to ``StreamLoader.load``) over ``--tables`` tables, then their commits (80 at a
time: the stand-in, as Doris, holds at most 100 running transactions per database), the shape of
a binlog batch; by default within ``DorisHttpClient.reusing_redirects`` (as a batch runs:
most loads and commits go straight to the remembered BE), with ``--direct`` every load asks an FE
for its 307 and every commit follows one. Prints this process's CPU-seconds (``time.process_time``)
per load+commit and the stand-in's (from ``/proc``), after one warm-up round.
"""

from __future__ import annotations

import argparse
import decimal
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cdc_core.doris.client import DorisHttpClient  # noqa: E402
from cdc_core.doris.committable import Committable  # noqa: E402
from cdc_core.doris.payloads import PayloadBuilder  # noqa: E402
from cdc_core.doris.sink import DorisSink  # noqa: E402
from cdc_core.model.schema import Column, TableId, TableSchema  # noqa: E402
from devstack.procs import free_port  # noqa: E402

TYPES = {"bigint": "BIGINT", "varchar": "VARCHAR(192)", "decimal": "DECIMALV3(12,2)", "int": "INT"}


def type_mapper(column: Column) -> str:
    return TYPES[column.data_type]


def schema(db: str, table: str) -> TableSchema:
    return TableSchema(TableId(db, table), (
        Column("id", "bigint(20)", "bigint", False),
        Column("name", "varchar(64)", "varchar", char_length=64),
        Column("amount", "decimal(12,2)", "decimal", numeric_precision=12, numeric_scale=2),
        Column("qty", "int(11)", "int"),
        Column("note", "varchar(64)", "varchar", char_length=64),
    ), primary_key=("id",))


def make_rows(n: int) -> tuple[list[dict], pa.Table]:
    ids = list(range(n))
    names = [f"customer-{i % 9973}" for i in ids]
    amounts = [decimal.Decimal(i % 100000) / 100 for i in ids]
    qty = [i % 50 for i in ids]
    notes = [None if i % 7 == 0 else "some note text" for i in ids]
    table = pa.table({"id": pa.array(ids, pa.int64()), "name": names,
                      "amount": pa.array(amounts, pa.decimal128(12, 2)), "qty": pa.array(qty, pa.int32()),
                      "note": notes})
    dicts = [{"id": i, "name": names[i], "amount": str(amounts[i]), "qty": qty[i], "note": notes[i]} for i in ids]
    return dicts, table


def start_standin(tmp: Path) -> tuple[subprocess.Popen, str]:
    fe, be = free_port(), free_port()
    proc = subprocess.Popen([sys.executable, "-m", "devstack.doris", "--fe-port", str(fe), "--be-port", str(be),
                             "--data-dir", str(tmp / "data")], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    for _ in range(300):
        try:
            if requests.get(f"http://127.0.0.1:{fe}/api/health", timeout=1).status_code == 200:
                return proc, f"127.0.0.1:{fe}"
        except requests.RequestException:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("stand-in did not start")


def _proc_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def per_request(fe: str, pid: int | None, requests_n: int, tables: int, direct: bool, rounds: int) -> None:
    """Tidemark's CPU per small load + commit (see the module docstring)."""
    from contextlib import nullcontext

    client = DorisHttpClient(fe, "root", "", auto_redirect=True)
    sink = DorisSink(client, "bench", type_mapper=type_mapper, table_properties={"replication_num": "1"})
    db = f"reqs_{int(time.time())}"
    targets = [TableId(db, f"t{i}") for i in range(tables)]
    columns = [sink.create_table(schema(db, t.table), t).columns for t in targets][0]
    rows = [{"id": i, "name": f"n{i}", "amount": "1.50", "qty": i, "note": None} for i in range(5)]
    loader, committer = sink.loader, sink.committer
    results = []
    for r in range(rounds + 1):
        cpu0, wall0, times0 = time.process_time(), time.perf_counter(), os.times()
        stand0 = _proc_cpu(pid) if pid else 0.0
        with nullcontext() if direct else client.reusing_redirects():
            for start in range(0, requests_n, 80):  # under the stand-in's 100 running txns per database
                done = [loader.load(db, targets[i % tables].table, f"r{r}_{i}", rows, columns=columns, sequence=1)
                        for i in range(start, min(requests_n, start + 80))]
                for c in done:
                    committer.commit(c)
        cpu, wall, times = time.process_time() - cpu0, time.perf_counter() - wall0, os.times()
        user, system = times.user - times0.user, times.system - times0.system
        stand = _proc_cpu(pid) - stand0 if pid else float("nan")
        line = (f"round {r}{' (warm-up)' if r == 0 else ''}: {requests_n} loads + commits, tidemark "
                f"{cpu:.3f} CPU-s = {cpu / requests_n * 1000:.2f} ms per load+commit (user {user:.2f} s, system "
                f"{system:.2f} s), stand-in {stand:.3f} CPU-s, "
                f"wall {wall:.2f} s")
        print(line, file=sys.stderr, flush=True)
        if r:
            results.append(cpu / requests_n * 1000)
    print(json.dumps({"requests": requests_n, "direct": direct,
                      "tidemark_ms_per_load_commit": [round(x, 3) for x in results],
                      "mean": round(sum(results) / len(results), 3)}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--fe", default=None)
    ap.add_argument("--requests", type=int, default=0, help="per-request CPU of N small loads + commits")
    ap.add_argument("--tables", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--direct", action="store_true", help="no reusing_redirects: every load and commit via an FE")
    ap.add_argument("--standin-pid", type=int, default=None, help="with --fe: the stand-in's pid, for its CPU")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sink-bench-"))
    proc, fe = (None, args.fe) if args.fe else start_standin(tmp)
    try:
        if args.requests:
            pid = proc.pid if proc is not None else args.standin_pid
            per_request(fe, pid, args.requests, args.tables, args.direct, args.rounds)
            return
        client = DorisHttpClient(fe, "root", "", auto_redirect=True)
        sink = DorisSink(client, "bench", type_mapper=type_mapper, table_properties={"replication_num": "1"})
        dicts, table = make_rows(args.rows)
        db = f"bench_{int(time.time())}"
        print(f"rows={args.rows}  stand-in FE={fe}", file=sys.stderr)
        results = []
        cases = [("json dicts", "json", dicts, False), ("csv dicts", "csv", dicts, False),
                 ("json arrow", "json", table, False), ("csv arrow", "csv", table, False),
                 ("arrow arrow", "arrow", table, False), ("arrow arrow gzip", "arrow", table, True),
                 ("json dicts gzip", "json", dicts, True)]
        for i, (name, fmt, data, gz) in enumerate(cases):
            target = TableId(db, f"t{i}")
            layout = sink.create_table(schema(db, target.table), target)
            sink = DorisSink(client, "bench", type_mapper=type_mapper, fmt=fmt, gzip=gz,
                             table_properties={"replication_num": "1"})
            t0 = time.perf_counter()
            c = sink.load(target, "chunk-0-g0", data, sequence=1)
            sink.commit([c])
            sink_s = time.perf_counter() - t0
            assert c.rows == args.rows, c
            # limit: the same body, pre-encoded, one bare PUT + commit
            payload = PayloadBuilder(fmt, gzip=gz).build(data, columns=layout.columns, sequence=1)
            body = b"".join(payload.chunks())
            limit_target = TableId(db, f"l{i}")
            sink.create_table(schema(db, limit_target.table), limit_target)
            be_url = sink.loader.resolve_redirect(db, limit_target.table,
                                                  f"/api/{db}/{limit_target.table}/_stream_load", 0)
            headers = {"Expect": "100-continue", "two_phase_commit": "true", "label": f"limit{i}", **payload.headers}
            t0 = time.perf_counter()
            resp = requests.put(be_url, data=io.BytesIO(body), headers=headers, auth=("root", ""), timeout=3600)
            answer = resp.json()
            assert answer["Status"] == "Success", answer
            sink.committer.commit(Committable(db, limit_target.table, f"limit{i}", answer["TxnId"]))
            limit_s = time.perf_counter() - t0
            results.append({"case": name, "sink_rows_per_s": round(args.rows / sink_s),
                            "limit_rows_per_s": round(args.rows / limit_s), "sink_to_limit": round(limit_s / sink_s, 2),
                            "body_mb": round(len(body) / 1e6, 1)})
            print(f"{name}: sink {sink_s:.2f} s, limit {limit_s:.2f} s", file=sys.stderr, flush=True)
        print(pd.DataFrame(results).to_markdown(index=False, intfmt=","))
        print()
        print(json.dumps({"rows": args.rows, "cases": results}, indent=2))
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(30)


if __name__ == "__main__":
    main()
