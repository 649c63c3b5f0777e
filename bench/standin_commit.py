"""The Doris stand-in's commit of a snapshot's chunks: seconds under the write lock, and at staging.

``python -m bench.standin_commit [ROWS] [CHUNKS]`` stages CHUNKS loads of a unique BIGINT-keyed
table (ROWS in all, in key order, as a snapshot sends them) and applies each in a write transaction,
as ``TxnManager.commit_2pc`` does: once with the loads' key facts computed at staging (what
``StreamLoader`` does, outside the lock), once without (the merge computes them under the lock, as
before). It prints both, so that what moved out of the lock is measured, not assumed
(docs/performance.md).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from devstack.doris.catalog import Column, Table
from devstack.doris.storage import Storage


def _chunk(start: int, n: int) -> pa.Table:
    ids = pa.array(range(start, start + n), pa.int64())
    return pa.table({"__ord": pa.array(range(n), pa.int64()), "id": ids,
                     "v": pa.array([f"row {i}" for i in range(start, start + n)]),
                     "__sign": pa.array([0] * n, pa.int8())})


def run(rows: int, chunks: int, facts: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        st = Storage(Path(tmp))
        try:
            table = Table("d", "t", "UNIQUE_KEYS", [Column("id", "BIGINT", False, True), Column("v", "VARCHAR(32)")],
                          ["id"])
            with st.transaction() as cur:
                st.create_database(cur, "d")
                st.create_table(cur, table)
            size = rows // chunks
            staging = locked = 0.0
            for i in range(chunks):
                data = _chunk(i * size, size)
                t0 = time.perf_counter()
                st.write_staging(i + 1, data, table if facts else None)
                t1 = time.perf_counter()
                with st.transaction() as cur:
                    st.merge(cur, table, i + 1)
                    st.drop_staging(cur, i + 1)
                t2 = time.perf_counter()
                staging += t1 - t0
                locked += t2 - t1
            return {"staging_s": round(staging, 3), "under_lock_s": round(locked, 3)}
        finally:
            st.close()


def main() -> None:
    rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    chunks = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    for facts in (False, True, False, True):
        print("facts at staging" if facts else "facts under lock", run(rows, chunks, facts))


if __name__ == "__main__":
    main()
