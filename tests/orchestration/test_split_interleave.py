"""A huge table planned as it is read, on a real MariaDB: ``tidemark run`` loads the first chunks of
a table whose split is not finished, and a ``kill -9`` mid-split resumes the split from the cursor
stored in the state (``ASSIGNER_STATE``), not from the start.

The table has a VARCHAR key, so it is split by queries, one chunk per step (a stand-in for a table
too big to split before loading: ``tidemark.snapshot.split-steps-per-run`` is 5 here, 2000 by
default). The billion-row case and the partition cap are ``tests/snapshot/test_split_budget.py``.
"""

from __future__ import annotations

import json
import math
import signal

import psycopg2
import pytest

from tests.orchestration.test_e2e_dagster import _doris_count
from tests.orchestration.test_run_guard import Hosts, _finish, doris_standin, lan, mysql_server  # noqa: F401

ROWS = 1500
CHUNK = 100  # 16 chunks


@pytest.fixture
def host(lan, mysql_server, root_conn, fresh_db, doris_standin, postgres_databases, tmp_path):  # noqa: F811
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.big (k VARCHAR(20) PRIMARY KEY, n INT NOT NULL)")
        cur.executemany(f"INSERT INTO `{fresh_db}`.big VALUES (%s,%s)", [(f"key{i:06d}", i) for i in range(ROWS)])
    state_url = postgres_databases()
    pipeline = dict(host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                    tables=f"{fresh_db}.big", name=f"split_{fresh_db}", server_id="5550-5554",
                    source={"scan.incremental.snapshot.chunk.size": CHUNK},
                    pipeline={"tidemark.state.url": state_url, "tidemark.snapshot.split-steps-per-run": 5,
                              "tidemark.snapshot.split-pause-ms": 0})
    return Hosts(tmp_path, lan, postgres_databases(), state_url, pipeline)


def _state(url: str) -> tuple[dict, dict[int, tuple[str, str, str]]]:
    with psycopg2.connect(url) as conn, conn.cursor() as cur:
        cur.execute("SELECT value FROM kv WHERE namespace = 'snapshot' AND key = 'assigner'")
        row = cur.fetchone()
        cur.execute('SELECT chunk_index, status, start, "end" FROM chunks')
        chunks = {i: (status, start, end) for i, status, start, end in cur.fetchall()}
    return (json.loads(row[0]) if row else {}), chunks


def test_a_run_loads_the_first_chunks_while_the_split_goes_on_and_a_kill_resumes_it(host, root_conn, fresh_db,
                                                                                    doris_standin):  # noqa: F811
    # killed right after the 12th chunk's split step: two slices of 5 were planned and loaded
    killed = host.start("host_a", {"plan.after_step": {"action": "kill", "when": {"chunk": 11}}})
    code, _, err = _finish(killed)
    assert code == -signal.SIGKILL, err[-3000:]
    assigner, chunks = _state(host.state_url)
    assert assigner["remaining_tables"] == [f"{fresh_db}.big"]  # the split is not finished
    assert assigner["splitter"]["next_chunk_id"] == 12
    assert sorted(chunks) == list(range(12))
    committed = sorted(i for i, (status, _, _) in chunks.items() if status == "COMMITTED")
    assert committed == list(range(10))  # loaded while chunks 10.. were not split yet
    with root_conn.cursor() as cur:  # the rows of chunks 0..9: keys below chunk 9's end
        cur.execute(f"SELECT COUNT(*) FROM `{fresh_db}`.big WHERE k < %s", (json.loads(chunks[9][2])[0],))
        loaded = cur.fetchone()[0]
    assert loaded > 0 and _doris_count(doris_standin.fe_http, fresh_db, "big") == loaded

    code, _, err = _finish(host.start("host_a"))  # a plain re-run: the dead process is seen gone
    assert code == 0, err[-3000:]
    assert "Traceback" not in err
    assigner, after = _state(host.state_url)
    assert assigner["remaining_tables"] == []
    # a chunk [prev, end) holds CHUNK - 1 rows (its end is the CHUNK-th key from prev): Flink's plan
    assert sorted(after) == list(range(math.ceil(ROWS / (CHUNK - 1))))
    # resumed from the cursor: the chunks split before the kill are the same records, the next one
    # starts where the last of them ended, every chunk is committed once
    assert {i: after[i][1:] for i in chunks} == {i: chunks[i][1:] for i in chunks}
    assert all(after[i + 1][1] == after[i][2] for i in range(len(after) - 1))
    assert {status for status, _, _ in after.values()} == {"COMMITTED"}
    assert host.verify()["equal"]
    assert _doris_count(doris_standin.fe_http, fresh_db, "big") == ROWS
