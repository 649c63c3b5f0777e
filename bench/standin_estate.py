"""The Doris stand-in's own cost for many small tables: CREATE TABLE, 2PC stream loads and commits.

``python -m bench.standin_estate [TABLES] [ROWS] [WORKERS] [FORMAT] [ROUNDS] [SHAPE]`` (default 300 × 2,000, 4
workers, json, 0) starts a stand-in on free ports in a temporary directory and, as a snapshot of
``tables: many.\\.*`` asks it, creates TABLES unique-keyed tables, then loads each with one two-phase
stream load of ROWS JSON lines (FORMAT ``arrow``: one Arrow stream with the hidden delete sign, as
Tidemark sends) and commits it, WORKERS at a time. FORMAT ``tidemark`` is the estate of
``bench/estate.py`` as Tidemark writes it: half the tables keyed by a BIGINT, a quarter by ``(INT,
VARCHAR(16))``, a quarter by a ``VARCHAR(32)``, with DECIMAL and DATETIME columns and the sequence
column ``__tidemark_seq``, Arrow bodies sent to the FE and followed through its 307 (loads and
commits). ROUNDS more rounds then load 30 new rows into every table (a steady stream's binlog
batches, each table's rows a few dozen), committed the same way; with SHAPE ``batch`` (a sixth argument)
each round is shaped as a binlog batch is sent (cdc_core/pipeline/binlog_batch.py): tables 75 at a
time (under the 100 running transactions a database allows), their loads WORKERS at a time, then
their commits 8 at a time, straight to the BE as a sink that reuses the FE's redirect does.

It prints each phase's wall seconds, the stand-in's CPU seconds (``/proc``: a figure that stays
meaningful when the machine is busy) and the seconds its write lock was held (``GET
/_standin/txns``; absent from stand-ins before that counter) and how many loads were staged by
Arrow's kernels rather than the DuckDB query (``staged_by``, likewise) — the stand-in's per-request
cost without Tidemark, Spark or MySQL beside it (docs/performance.md). ``$STANDIN_ROOT`` runs the
stand-in of another checkout (an A/B pair), ``$STANDIN_PYSPY=FILE`` runs it under ``py-spy record``
(a speedscope profile in FILE; CPU seconds are then py-spy's).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
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


def _tidemark_kind(i: int, tables: int) -> str:
    return "bigint" if i < tables // 2 else "composite" if i < tables * 3 // 4 else "varchar"


_TIDEMARK_DDL = {
    "bigint": "id BIGINT NOT NULL, name VARCHAR(64), amount DECIMAL(10, 2), ts DATETIME(3), "
              "__tidemark_seq BIGINT) UNIQUE KEY(id) DISTRIBUTED BY HASH(id)",
    "composite": "a INT NOT NULL, b VARCHAR(16) NOT NULL, name VARCHAR(64), amount DECIMAL(10, 2), ts DATETIME(3), "
                 "__tidemark_seq BIGINT) UNIQUE KEY(a, b) DISTRIBUTED BY HASH(a, b)",
    "varchar": "k VARCHAR(32) NOT NULL, name VARCHAR(64), amount DECIMAL(10, 2), ts DATETIME(3), "
               "__tidemark_seq BIGINT) UNIQUE KEY(k) DISTRIBUTED BY HASH(k)",
}


def _tidemark_body(kind: str, start: int, rows: int) -> bytes:
    """Rows as Tidemark's Arrow loads carry them (cdc_core/doris/arrow_layout.py): keys, values, the
    sequence column, then the hidden delete sign."""
    seq = range(start, start + rows)
    keys: dict[str, pa.Array] = {
        "bigint": {"id": pa.array(seq, pa.int64())},
        "composite": {"a": pa.array([s // 10 for s in seq], pa.int32()), "b": pa.array([f"b{s % 10}" for s in seq])},
        "varchar": {"k": pa.array([f"{s * 2654435761 % 10**20:020d}-{s}" for s in seq])},
    }[kind]
    table = pa.table({
        **keys,
        "name": pa.array([f"customer-{s}" for s in seq]),
        "amount": pa.array([Decimal(s % 100000) / 100 for s in seq], pa.decimal128(10, 2)),
        "ts": pa.array([1_767_225_600_000_000 + s * 1_000_000 - 8 * 3_600_000_000 for s in seq],
                       pa.timestamp("us", tz="+08:00")),
        "__tidemark_seq": pa.array(seq, pa.int64()),
        "__DORIS_DELETE_SIGN__": pa.array([0] * rows, pa.int8()),
    })
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def wait_until_up(fe: str, get: Callable[..., requests.Response] = requests.get, limit_s: float = 30.0) -> None:
    """Wait until the stand-in at ``fe`` answers its health check (``get``: a session's, to reuse it)."""
    deadline = time.monotonic() + limit_s
    while True:
        try:
            if get(f"{fe}/api/health", timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("the stand-in did not start")
        time.sleep(0.05)


def main(tables: int = 300, rows: int = 2000, workers: int = 4, fmt: str = "json", rounds: int = 0,
         shape: str = "serial") -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        fe_port, be_port = _free_port(), _free_port()
        wrap = os.environ.get("STANDIN_PYSPY")  # a speedscope profile of the stand-in, written there
        prefix = ["py-spy", "record", "--format", "speedscope", "-o", wrap, "--"] if wrap else []
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "devstack.doris", "--host", "127.0.0.1", "--fe-port", str(fe_port),
             "--be-port", str(be_port), "--data-dir", str(Path(tmp) / "data")],
            # ``-m`` puts the working directory first on the path: the checkout's own, not ours
            cwd=os.environ.get("STANDIN_ROOT") or str(ROOT),
            env=dict(os.environ, PYTHONPATH=os.environ.get("STANDIN_ROOT") or str(ROOT)), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        fe, be = f"http://127.0.0.1:{fe_port}", f"http://127.0.0.1:{be_port}"
        try:
            wait_until_up(fe)
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
                if fmt == "tidemark":
                    query(f"CREATE TABLE IF NOT EXISTS many.t{i} ({_TIDEMARK_DDL[_tidemark_kind(i, tables)]} BUCKETS "
                          "AUTO PROPERTIES ('replication_num' = '1', 'function_column.sequence_col' = '__tidemark_seq')")
                    return
                query(f"CREATE TABLE IF NOT EXISTS many.t{i} (id BIGINT NOT NULL, v VARCHAR(32), n INT) "
                      "UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS AUTO PROPERTIES ('replication_num' = '1')")

            bodies: dict[tuple[str, int, int], bytes] = {}

            def tidemark_body(i: int, start: int, n: int) -> bytes:
                kind = _tidemark_kind(i, tables)
                if (kind, start, n) not in bodies:  # the same rows in every table of a kind: built once
                    bodies[(kind, start, n)] = _tidemark_body(kind, start, n)
                return bodies[(kind, start, n)]

            if fmt == "tidemark":
                body = b""
                fmt_headers = {"format": "arrow", "hidden_columns": "__DORIS_DELETE_SIGN__", "timezone": "+08:00"}
                for kind in ("bigint", "composite", "varchar"):  # built before the clock starts
                    for start, n in [(0, rows)] + [(rows + 30 * r, 30) for r in range(rounds)]:
                        bodies[(kind, start, n)] = _tidemark_body(kind, start, n)
            elif fmt == "arrow":
                body = _arrow_body(rows)
                fmt_headers = {"format": "arrow", "hidden_columns": "__DORIS_DELETE_SIGN__"}
            else:
                body = "".join(json.dumps({"id": k, "v": f"row {k}", "n": k % 97}) + "\n" for k in range(rows)).encode()
                fmt_headers = {"format": "json", "read_json_by_line": "true"}

            def put(path: str, headers: dict[str, str], data: bytes = b"", direct: bool = False) -> dict:
                if fmt != "tidemark" or direct:
                    return session().put(f"{be}{path}", data=data, timeout=120, headers=headers).json()
                # through the FE, following its 307 by hand as the sink does (cdc_core/doris/client.py)
                r = session().put(f"{fe}{path}", data=b"", timeout=120, headers=headers, allow_redirects=False)
                assert r.status_code == 307, r.text
                to = urllib.parse.urlsplit(r.headers["Location"])
                return session().put(f"{be}{to.path}?{to.query}", data=data, timeout=120, headers=headers).json()

            def load_rows(i: int, label: str, data: bytes) -> None:
                r = put(f"/api/many/t{i}/_stream_load", {
                    "Expect": "100-continue", **fmt_headers, "two_phase_commit": "true", "label": label}, data)
                assert r["Status"] == "Success", r
                c = put("/api/many/_stream_load_2pc", {
                    "Expect": "100-continue", "txn_operation": "commit", "txn_id": str(r["TxnId"])})
                assert c["status"] == "Success", c

            def load(i: int) -> None:
                load_rows(i, f"bench_{i}", tidemark_body(i, 0, rows) if fmt == "tidemark" else body)

            def stream_round(r: int) -> Callable[[int], None]:
                def one(i: int) -> None:
                    start = rows + 30 * r
                    data = tidemark_body(i, start, 30) if fmt == "tidemark" else body[:0]
                    load_rows(i, f"stream_{r}_{i}", data)
                return one

            def batch_round(r: int) -> Callable[[int], None]:
                """The whole round as one binlog batch (SHAPE ``batch``): run once, for table 0."""
                def one(i: int) -> None:
                    if i:
                        return
                    start = rows + 30 * r
                    for first in range(0, tables, 75):
                        chunk = range(first, min(tables, first + 75))

                        def load_one(k: int) -> int:
                            data = tidemark_body(k, start, 30) if fmt == "tidemark" else body[:0]
                            res = put(f"/api/many/t{k}/_stream_load", {"Expect": "100-continue", **fmt_headers,
                                      "two_phase_commit": "true", "label": f"batch_{r}_{k}"}, data, direct=True)
                            assert res["Status"] == "Success", res
                            return int(res["TxnId"])

                        def commit_one(txn_id: int) -> None:
                            c = put("/api/many/_stream_load_2pc", {"Expect": "100-continue", "txn_operation": "commit",
                                                                  "txn_id": str(txn_id)}, direct=True)
                            assert c["status"] == "Success", c

                        with ThreadPoolExecutor(workers) as loaders:
                            txn_ids = list(loaders.map(load_one, chunk))
                        with ThreadPoolExecutor(8) as committers:
                            list(committers.map(commit_one, txn_ids))
                return one

            def held() -> tuple[float, int]:
                lock = session().get(f"{fe}/_standin/txns", timeout=10).json().get("write_lock", {})
                return lock.get("held_s", float("nan")), lock.get("holds", 0)

            def staged_by() -> dict[str, int]:
                return session().get(f"{fe}/_standin/txns", timeout=10).json().get("staged_by", {})

            query("CREATE DATABASE many")
            out: dict[str, float] = {}
            phases: list[tuple[str, Callable[[int], None]]] = [("create", create), ("load_commit", load)]
            phases += [(f"stream_{r}", batch_round(r) if shape == "batch" else stream_round(r)) for r in range(rounds)]
            for phase, fn in phases:
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
            if rounds:
                out["stream_standin_cpu_s"] = round(sum(out[f"stream_{r}_standin_cpu_s"] for r in range(rounds)), 2)
                out["stream_wall_s"] = round(sum(out[f"stream_{r}_wall_s"] for r in range(rounds)), 2)
            out["loadavg_1m"] = os.getloadavg()[0]
            return out
        finally:
            if wrap:
                proc.send_signal(signal.SIGINT)  # py-spy writes its profile on an interrupt
            else:
                proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps(main(*[int(a) for a in args[:3]], *args[3:4], *[int(a) for a in args[4:5]], *args[5:6])))
