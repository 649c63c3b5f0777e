"""The Doris stand-in's own cost for many small tables: CREATE TABLE, 2PC stream loads and commits.

``python -m bench.standin_estate [TABLES] [ROWS] [WORKERS] [FORMAT]`` (default 300 × 2,000, 4 workers,
json) starts a stand-in on free ports in a temporary directory and, as a snapshot of ``tables: many.\\.*``
asks it, creates TABLES unique-keyed tables, then loads each with one two-phase stream load of ROWS JSON
lines (FORMAT ``arrow``: one Arrow stream with the hidden delete sign, as Tidemark sends) and commits it,
WORKERS at a time. It prints each phase's wall seconds, the stand-in's CPU seconds
(``/proc``: a figure that stays meaningful when the machine is busy) and the seconds its write lock was
held (``GET /_standin/txns``; absent from stand-ins before that counter) and how many loads were staged by
Arrow's kernels rather than the DuckDB query (``staged_by``, likewise) — the stand-in's
per-request cost without Tidemark, Spark or MySQL beside it (docs/performance.md).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import requests

ROOT = Path(__file__).resolve().parents[1]
AUTH = ("root", "")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _arrow_body(rows: int) -> bytes:
    table = pa.table({"id": pa.array(range(rows), pa.int64()), "v": pa.array([f"row {k}" for k in range(rows)]),
                      "n": pa.array([k % 97 for k in range(rows)], pa.int32()),
                      "__DORIS_DELETE_SIGN__": pa.array([0] * rows, pa.int8())})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def main(tables: int = 300, rows: int = 2000, workers: int = 4, fmt: str = "json") -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        fe_port, be_port = _free_port(), _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "devstack.doris", "--host", "127.0.0.1", "--fe-port", str(fe_port),
             "--be-port", str(be_port), "--data-dir", str(Path(tmp) / "data")],
            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        fe, be = f"http://127.0.0.1:{fe_port}", f"http://127.0.0.1:{be_port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if requests.get(f"{fe}/api/health", timeout=1).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError("the stand-in did not start")
                time.sleep(0.05)
            local = threading.local()

            def session() -> requests.Session:
                if not hasattr(local, "s"):
                    local.s = requests.Session()
                    local.s.auth = AUTH
                return local.s

            def query(stmt: str) -> None:
                r = session().post(f"{fe}/api/query/default_cluster/information_schema", json={"stmt": stmt}, timeout=60)
                assert r.json()["code"] == 0, r.text

            def create(i: int) -> None:
                query(f"CREATE TABLE IF NOT EXISTS many.t{i} (id BIGINT NOT NULL, v VARCHAR(32), n INT) "
                      "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS AUTO PROPERTIES ('replication_num' = '1')")

            if fmt == "arrow":
                body = _arrow_body(rows)
                fmt_headers = {"format": "arrow", "hidden_columns": "__DORIS_DELETE_SIGN__"}
            else:
                body = "".join(json.dumps({"id": k, "v": f"row {k}", "n": k % 97}) + "\n" for k in range(rows)).encode()
                fmt_headers = {"format": "json", "read_json_by_line": "true"}

            def load(i: int) -> None:
                r = session().put(f"{be}/api/many/t{i}/_stream_load", data=body, timeout=120, headers={
                    "Expect": "100-continue", **fmt_headers, "two_phase_commit": "true", "label": f"bench_{i}"}).json()
                assert r["Status"] == "Success", r
                c = session().put(f"{be}/api/many/_stream_load_2pc", timeout=60, headers={
                    "Expect": "100-continue", "txn_operation": "commit", "txn_id": str(r["TxnId"])}).json()
                assert c["status"] == "Success", c

            def held() -> tuple[float, int]:
                lock = session().get(f"{fe}/_standin/txns", timeout=10).json().get("write_lock", {})
                return lock.get("held_s", float("nan")), lock.get("holds", 0)

            def staged_by() -> dict[str, int]:
                return session().get(f"{fe}/_standin/txns", timeout=10).json().get("staged_by", {})

            query("CREATE DATABASE many")
            out: dict[str, float] = {}
            for phase, fn in (("create", create), ("load_commit", load)):
                (held0, holds0), staged0, cpu0, t0 = held(), staged_by(), _cpu_s(proc.pid), time.perf_counter()
                with ThreadPoolExecutor(workers) as pool:
                    list(pool.map(fn, range(tables)))
                out[f"{phase}_wall_s"] = round(time.perf_counter() - t0, 2)
                out[f"{phase}_standin_cpu_s"] = round(_cpu_s(proc.pid) - cpu0, 2)
                held1, holds1 = held()
                out[f"{phase}_lock_held_s"] = round(held1 - held0, 2)
                out[f"{phase}_lock_holds"] = holds1 - holds0
                for way, count in staged_by().items():
                    out[f"{phase}_staged_by_{way}"] = count - staged0.get(way, 0)
            out["loadavg_1m"] = os.getloadavg()[0]
            return out
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(*[int(a) for a in args[:3]], *args[3:4])))
