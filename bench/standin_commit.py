"""The Doris stand-in's commit of a snapshot's chunks: seconds under the write lock, and at staging.

``python -m bench.standin_commit [ROWS] [CHUNKS]`` stages CHUNKS two-phase loads of a unique
BIGINT-keyed table (ROWS in all, in key order, as a snapshot sends them), then commits each by
``TxnManager.commit_2pc`` once all are loaded (as a snapshot run does): once with the table given to
the staging (what ``StreamLoader`` does, outside the lock: the loads' key facts, and a large load's
rows appended ahead of its commit on a builder thread, ``Storage._prebuild``), once without (the
commit computes the facts and writes the rows under the lock). It prints both: the loads' and the
commits' wall seconds, the write lock's, and the process's CPU seconds, so that what moved out of
the lock is measured, not assumed (docs/performance.md).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from devstack.doris.catalog import Column, Table
from devstack.doris.storage import Storage
from devstack.doris.transactions import TxnManager


def _chunk(start: int, n: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"__ord": pa.array(range(n), pa.int64()), "id": ids,
                     "v": pa.array([f"row {i}" for i in range(start, start + n)]),
                     "__sign": pa.array([0] * n, pa.int8())})


def run(rows: int, chunks: int, facts: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        st = Storage(Path(tmp))
        try:
            txns = TxnManager(st)
            table = Table("d", "t", "UNIQUE_KEYS", [Column("id", "BIGINT", False, True), Column("v", "VARCHAR(32)")],
                          ["id"])
            with st.transaction() as cur:
                st.create_database(cur, "d")
                st.create_table(cur, table)
            size = rows // chunks
            t0, c0 = time.perf_counter(), time.process_time()
            loads = []
            for i in range(chunks):
                txn = txns.begin("d", f"chunk_{i}", "t", True)
                st.write_staging(txn.txn_id, _chunk(i * size, size), table if facts else None, ahead=facts)
                txns.precommit(txn, True)
                loads.append(txn)
            t1 = time.perf_counter()
            for txn in loads:  # as a snapshot run commits: once every chunk is loaded
                txns.commit_2pc("d", txn.txn_id, None)
            t2, c2 = time.perf_counter(), time.process_time()
            return {"loads_s": round(t1 - t0, 3), "commits_s": round(t2 - t1, 3),
                    "lock_held_s": round(st.lock_held_s, 3), "cpu_s": round(c2 - c0, 3)}
        finally:
            st.close()


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    chunks = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    for facts in (False, True, False, True):
        print("table given at staging" if facts else "everything at commit", run(rows, chunks, facts))


if __name__ == "__main__":
    main()
