"""Load-rate benchmark of the Doris stand-in: 1M-row JSON-lines and Arrow stream loads.

Run: ``python bench/doris_standin_load.py [--rows 1000000]``. Starts a stand-in on free ports in a
temporary directory, creates ``UNIQUE KEY(id)`` tables, PUTs the body to the BE (as the connector does)
and reports seconds and rows/s for each format, end to end (HTTP upload, parse, convert, stage, merge), plus
the stand-in's own CPU seconds (a figure that stays meaningful when the machine is busy): a markdown
table, then the same figures as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import requests

ROOT = Path(__file__).resolve().parents[1]
AUTH = ("root", "")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def json_body(n: int) -> bytes:
    lines = [
        f'{{"id": {i}, "name": "customer-{i}-{hashlib.md5(str(i).encode()).hexdigest()}", '
        f'"amount": {i % 100000}.{i % 100:02d}, "ts": "2026-01-01 00:00:01.000"}}'
        for i in range(1, n + 1)
    ]
    return ("\n".join(lines) + "\n").encode()


def arrow_body(n: int) -> bytes:
    import numpy as np

    ids = np.arange(1, n + 1, dtype=np.int64)
    tbl = pa.table({
        "id": ids,
        "name": pa.array([f"customer-{i}-{hashlib.md5(str(i).encode()).hexdigest()}" for i in range(1, n + 1)]),
        "amount": pc.cast(pa.array((ids % 100000) + (ids % 100) / 100.0), pa.decimal128(12, 2), safe=False),
        "ts": pa.array(np.full(n, 1767225601000, dtype="datetime64[ms]")),
    })
    sink = io.BytesIO()
    with ipc.new_stream(sink, tbl.schema) as w:
        w.write_table(tbl)
    return sink.getvalue()


def cpu_seconds(pid: int) -> float:
    """User+system CPU of the stand-in process (robust to other load on a shared machine)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    n = args.rows
    with tempfile.TemporaryDirectory() as tmp:
        fe, be = free_port(), free_port()
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "devstack.doris", "--fe-port", str(fe), "--be-port", str(be),
                                 "--data-dir", tmp], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            for _ in range(200):
                try:
                    if requests.get(f"http://127.0.0.1:{fe}/api/health", timeout=1).status_code == 200:
                        break
                except requests.ConnectionError:
                    time.sleep(0.1)

            def q(stmt: str) -> dict:
                return requests.post(f"http://127.0.0.1:{fe}/api/query/default_cluster/bench", json={"stmt": stmt},
                                     auth=AUTH).json()

            q("CREATE DATABASE bench")
            for t in ("t_json", "t_arrow"):
                q(f"CREATE TABLE {t} (id BIGINT NOT NULL, name VARCHAR(64), amount DECIMALV3(12,2), "
                  "ts DATETIMEV2(3)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 8 "
                  "PROPERTIES ('replication_num'='1')")
            print(f"generating {n} rows ...", file=sys.stderr, flush=True)
            results = []
            bodies = {"json": json_body(n), "arrow": arrow_body(n)}
            for fmt, body in bodies.items():
                headers = {"Expect": "100-continue", "format": fmt, "label": f"bench_{fmt}"}
                if fmt == "json":
                    headers["read_json_by_line"] = "true"
                t0 = time.perf_counter()
                c0 = cpu_seconds(proc.pid)
                r = requests.put(f"http://127.0.0.1:{be}/api/bench/t_{fmt}/_stream_load", data=body, headers=headers,
                                 auth=AUTH, timeout=600)
                secs = time.perf_counter() - t0
                cpu = cpu_seconds(proc.pid) - c0
                res = r.json()
                assert res["Status"] == "Success", res
                count = q(f"SELECT count(*) FROM t_{fmt}")["data"]["data"][0][0]
                results.append({"format": fmt, "rows": n, "body_mb": round(len(body) / 1e6, 1),
                                "seconds": round(secs, 2), "rows_per_s": round(n / secs),
                                "load_time_ms": res["LoadTimeMs"], "standin_cpu_s": round(cpu, 2),
                                "visible_rows": count})
                print(f"{fmt}: {secs:.2f} s", file=sys.stderr, flush=True)
            print(pd.DataFrame(results).to_markdown(index=False, intfmt=","))
            print()
            print(json.dumps(results, indent=2))
        finally:
            proc.terminate()
            proc.wait(timeout=30)


if __name__ == "__main__":
    main()
