"""Doris restarts under ``tidemark run --once``, as a user meets them (issue #28 item 4).

The Doris stand-in restarts its BE or FE the way Doris does (``devstack/doris/restarts.py``): a
restarted BE resets the loads it was serving and the FE aborts their PREPARE transactions, while
PRECOMMITTED transactions keep their data on the BE's disk and can be committed once it is back; a
restarted FE refuses connections, then answers 5xx while it replays its journal, and keeps every
transaction. Each restart is set off at an exact moment, not after a sleep:

* **a BE restart mid-load** — the stand-in's ``be_restart`` load fault: the BE goes down under a
  snapshot chunk's stream load once its transaction has begun;
* **a BE restart mid-2PC** — the fault point ``snapshot.after_state_write`` (the chunks' loads
  precommitted and recorded PREPARED, none committed) POSTs the restart to the stand-in
  (``cdc_core/instrumentation/faults.py``, action ``post``);
* **an FE restart during a binlog batch's commit** — ``binlog.after_state_write`` (the batch
  precommitted and recorded PREPARED) POSTs an FE restart that refuses connections, then answers
  HTTP 503 for a while.

Each restart outlasts the sink's retries (``sink.max-retries``, 3 with 0.5 + 1 + 2 s of backoff),
as a real node restart does (the node stays down until the test ends its restart — a shorter one is
absorbed by the retries and the run succeeds), so the run fails: exit 1 (``docs/cli.md``) and one
line on the terminal that says Doris is restarting and to run again, no traceback and no other
warning. Once the node is back a plain re-run finishes the work — the precommitted loads committed,
not loaded again — and ``tidemark verify`` finds Doris equal to MySQL: nothing doubled, nothing lost.
"""

from __future__ import annotations

import re
import uuid

import pytest
import requests

from tests.orchestration.crash_trials import CrashPipeline
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401 - a stand-in of this module's own

DOWN_S = 600.0  # "until told": the test ends the restart once the run has failed (the stand-in's "end")


def _db() -> str:
    return f"restart_{uuid.uuid4().hex[:10]}"


def _other_port(standin, node: str) -> str:
    """Where to ask about ``node``: the other node's port (``node``'s own may be down)."""
    return standin.be_http if node == "fe" else standin.fe_http


def _restart_at(point: str, standin, node: str, **spec: float) -> dict:
    """TIDEMARK_FAULTS: at ``point`` the run POSTs a restart of ``node`` (it goes on once the node is down)."""
    return {point: {"action": "post", "url": f"http://{_other_port(standin, node)}/_standin/restart",
                    "body": {"node": node, "downtime_s": DOWN_S, **spec}}}


def _end_restart(standin, node: str) -> dict:
    """Doris is back: end ``node``'s restart; its record (the transactions the restart aborted)."""
    record = standin.end_restart(node)
    assert record is not None, f"the {node} was up again before the failed run was over"
    return record


def _failed_with_one_line(done, *words: str) -> str:
    """The failed run's terminal, as docs/cli.md says: exit 1 and one line saying why (naming the
    restart and what to do), no traceback, no other warning or error."""
    assert done.returncode == 1, done.stderr[-4000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith("tidemark run ")]
    assert len(said) == 1, done.stderr[-4000:]
    noise = [line for line in lines if line not in said and re.search(r"(?i)warning|error|fail|traceback", line)]
    assert not noise, done.stderr[-4000:]
    for word in (*words, "run again once Doris is back"):
        assert word in said[0], said[0]
    return said[0]


def _changes(pipeline: CrashPipeline) -> None:
    """Inserts, updates (a hot key many times) and deletes for a binlog batch."""
    with pipeline.root_conn.cursor() as cur:
        cur.execute(f"USE `{pipeline.db}`")
        cur.execute("UPDATE items SET qty = qty + 3 WHERE id <= 300")
        cur.execute("DELETE FROM items WHERE id BETWEEN 1900 AND 1950")
        cur.executemany("INSERT INTO items VALUES (%s, 'late', 1, 1.50, NOW(3))", [(i,) for i in range(5001, 5101)])
        for _ in range(30):
            cur.execute("UPDATE items SET qty = qty + 1 WHERE id = 7")
        cur.execute("INSERT INTO logs VALUES (9001, 'after', '2026-11-22 00:00:00')")


@pytest.fixture
def pipeline(mysql_server, root_conn, doris_standin, tmp_path):  # noqa: F811
    made = CrashPipeline(mysql_server, root_conn, doris_standin, tmp_path, _db())
    yield made
    requests.delete(f"http://{doris_standin.fe_http}/_standin/faults", timeout=5)
    for node in ("be", "fe"):  # a test that failed early must not leave a node down for the next
        doris_standin.end_restart(node)
    made.drop()


@pytest.mark.parametrize("phase", ["snapshot", pytest.param("binlog", marks=pytest.mark.slow)])
def test_a_be_restart_mid_load_fails_the_run_and_a_rerun_loads_again(phase, pipeline, doris_standin):  # noqa: F811
    """A snapshot chunk's load (default suite), or a binlog batch's (slow: the same path)."""
    if phase == "binlog":
        pipeline.plain_run()
        _changes(pipeline)
    requests.post(f"http://{doris_standin.fe_http}/_standin/faults", timeout=5, json={
        "target": "load", "mode": "be_restart", "delay_s": DOWN_S, "db": pipeline.db, "table": "items"}).raise_for_status()
    failed = pipeline.run_once()
    _failed_with_one_line(failed, "snapshot_chunks" if phase == "snapshot" else "binlog_stream", "no live BE")
    restart = _end_restart(doris_standin, "be")
    assert restart["aborted_txns"], restart  # the load in flight died with the BE, its transaction aborted
    pipeline.plain_run()
    pipeline.verify()


@pytest.mark.slow  # suite time; the FE restart at a commit and the BE restart mid-load stay in the default suite
def test_a_be_restart_between_precommit_and_commit_leaves_the_loads_for_the_rerun(pipeline,
                                                                                   doris_standin):  # noqa: F811
    failed = pipeline.run_once(faults=_restart_at("snapshot.after_state_write", doris_standin, "be"))
    _failed_with_one_line(failed, "stay precommitted", "no live BE")
    restart = _end_restart(doris_standin, "be")
    assert restart["aborted_txns"] == []  # precommitted transactions survive a BE restart
    rerun = pipeline.run_once()
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    assert "Doris lost" not in rerun.stderr  # committed as they were, not read again
    pipeline.verify()


def test_an_fe_restart_during_a_binlog_commit_leaves_the_batch_for_the_rerun(pipeline, doris_standin):  # noqa: F811
    pipeline.plain_run()
    _changes(pipeline)
    faults = _restart_at("binlog.after_state_write", doris_standin, "fe", downtime_s=2.0, unavailable_s=DOWN_S)
    failed = pipeline.run_once(faults=faults)
    _failed_with_one_line(failed, "stay precommitted", "FE is not ready")
    _end_restart(doris_standin, "fe")
    rerun = pipeline.run_once()
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    assert "Doris lost" not in rerun.stderr
    pipeline.verify()

