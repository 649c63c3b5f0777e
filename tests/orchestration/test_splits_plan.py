"""``tidemark splits`` prints the plan the next ``tidemark run --once`` loads: one planning path
(``cdc_core/pipeline/planning.py``), checked as a user runs the commands (subprocesses, the
session's MariaDB, a private Doris stand-in), and ``splits`` records nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cdc_core.config import load_pipeline
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.planning import next_plan
from cdc_core.pipeline.results import PlanSource
from cdc_core.pipeline.service import PipelineService
from cdc_core.state import StateStore
from cdc_core.state.keys import LABEL_EPOCH, PLANNED_TABLES
from devstack.pipeline_file import write_pipeline
from orchestration.cli.demo import DATABASE, load_demo
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestration.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster"), **extra}


def _analyze(root_conn, database: str) -> None:
    """Fresh statistics, so the row estimates planning reads do not move between the two commands
    (InnoDB refreshes them in the background after a bulk load)."""
    with root_conn.cursor() as cur:
        cur.execute("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s", (database,))
        for (table,) in cur.fetchall():
            cur.execute(f"ANALYZE TABLE `{database}`.`{table}`")
            cur.fetchall()


def _recorded_plan(pipeline: Path) -> list[dict]:
    """The chunks the run recorded, in the run's order (``PipelineService.chunk_keys``)."""
    store = StateStore.open_existing(load_pipeline(pipeline))
    assert store is not None, "the run recorded no state"
    try:
        with store.transaction(readonly=True) as tx:
            order = {t: i for i, t in enumerate(PLANNED_TABLES.get_or(tx, []))}
            chunks = tx.chunks()
    finally:
        store.close()
    chunks.sort(key=lambda c: (order.get(c.table_id, len(order)), c.chunk_index))
    return [{"table": c.table_id, "index": c.chunk_index, "start": c.start, "end": c.end} for c in chunks]


def _splits_then_run(pipeline: Path, state_dir: Path, env: dict[str, str]) -> tuple[list[dict], str]:
    """``splits --json`` (which must write no state), then ``run --once``; returns the printed plan
    and the human ``splits`` output of the same moment."""
    human = _cli("splits", str(pipeline), env=env)
    assert human.returncode == 0, human.stderr[-3000:]
    printed = _cli("splits", str(pipeline), "--json", env=env)
    assert printed.returncode == 0, printed.stderr[-3000:]
    assert not state_dir.exists(), "tidemark splits wrote state for a pipeline without a plan"
    plan = json.loads(printed.stdout)
    run = _cli("run", str(pipeline), "--once", env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "chunks loaded" in run.stderr, run.stderr[-2000:]
    return plan, human.stdout


def _assert_status_matches(pipeline: Path, plan: list[dict], env: dict[str, str]) -> None:
    status = _cli("status", str(pipeline), "--json", env=env)
    assert status.returncode == 0, status.stderr[-3000:]
    snapshot = json.loads(status.stdout)["snapshot"]
    per_table: dict[str, int] = {}
    for chunk in plan:
        per_table[chunk["table"]] = per_table.get(chunk["table"], 0) + 1
    assert snapshot["done"] and snapshot["chunks"]["chunks"] == snapshot["chunks"]["committed"] == len(plan)
    assert {t["table"]: t["chunks"] for t in snapshot["tables"]} == per_table


@pytest.mark.slow  # the demo shop's case stays in the default suite
def test_splits_prints_the_plan_the_run_makes_when_the_partition_cap_grows_the_chunks(
        mysql_server, root_conn, fresh_db, doris_standin, tmp_path):  # noqa: F811
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.items (id BIGINT PRIMARY KEY, qty INT NOT NULL)")
        cur.execute(f"INSERT INTO `{fresh_db}`.items SELECT seq, seq % 97 FROM `{fresh_db}`.seq_1_to_3000")
        # a text key: split by queries (uneven chunks), not by arithmetic
        cur.execute(f"CREATE TABLE `{fresh_db}`.tags (code VARCHAR(20) PRIMARY KEY, n INT NOT NULL)")
        cur.execute(f"INSERT INTO `{fresh_db}`.tags SELECT CONCAT('tag-', LPAD(seq, 5, '0')), seq "
                    f"FROM `{fresh_db}`.seq_1_to_800")
    _analyze(root_conn, fresh_db)
    state_dir = tmp_path / "state"
    pipeline = write_pipeline(
        tmp_path / "capped.yaml", host=mysql_server.endpoint.host, port=mysql_server.endpoint.port,
        fe=doris_standin.fe_http, tables=f"{fresh_db}.\\.*", name=f"capped_{fresh_db}", state_dir=state_dir,
        server_id="5600-5604", source={"scan.incremental.snapshot.chunk.size": 100},
        # 38 chunks of 100 rows; a cap of 12 partitions (8 after the 2 per table held back) grows them
        pipeline={"tidemark.snapshot.max-partitions": 12})
    env = _env(tmp_path)

    plan, human = _splits_then_run(pipeline, state_dir, env)

    assert "note: chunk sizes grown" in human and "no plan recorded yet" in human
    assert len(plan) <= 12 < 38
    assert {c["table"] for c in plan} == {f"{fresh_db}.items", f"{fresh_db}.tags"}
    assert sum(1 for c in plan if c["table"] == f"{fresh_db}.tags") > 1  # grown, still split
    assert _recorded_plan(pipeline) == plan
    _assert_status_matches(pipeline, plan, env)
    # with a plan recorded, `splits` prints that plan
    again = _cli("splits", str(pipeline), "--json", env=env)
    assert again.returncode == 0 and json.loads(again.stdout) == plan


def test_splits_prints_the_plan_the_run_makes_on_the_demo_shop(mysql_server, root_conn, doris_standin,  # noqa: F811
                                                               tmp_path):
    try:
        load_demo(root_conn)
        root_conn.commit()
        _analyze(root_conn, DATABASE)
        state_dir = tmp_path / "state"
        pipeline = tmp_path / "demo.yaml"
        # pipelines/demo.yaml as shipped, its state kept in this test's directory
        text = (ROOT / "pipelines" / "demo.yaml").read_text(encoding="utf-8")
        assert text.rstrip().endswith("schema.change.behavior: lenient")  # the pipeline block is last
        pipeline.write_text(text.rstrip() + f"\n  tidemark.state.dir: {state_dir}\n", encoding="utf-8")
        env = _env(tmp_path, TIDEMARK_MYSQL_HOST=mysql_server.endpoint.host,
                   TIDEMARK_MYSQL_PORT=str(mysql_server.endpoint.port), TIDEMARK_DORIS_FE=doris_standin.fe_http)

        plan, _ = _splits_then_run(pipeline, state_dir, env)

        assert {c["table"] for c in plan} == {f"{DATABASE}.{t}" for t in
                                              ("customers", "products", "orders", "order_items", "events")}
        assert _recorded_plan(pipeline) == plan
        _assert_status_matches(pipeline, plan, env)
    finally:
        with root_conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DATABASE}")


@pytest.mark.parametrize("existing", [False, True])
def test_splits_records_nothing_without_a_plan(mysql_server, root_conn, fresh_db, tmp_path, existing):
    """Without a plan, ``next_plan`` plans in memory: no state file appears, and a state that exists
    (here one the label epoch was drawn into) is left exactly as it was."""
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
        cur.execute(f"INSERT INTO `{fresh_db}`.t SELECT seq FROM `{fresh_db}`.seq_1_to_50")
    state_dir = tmp_path / "state"
    definition = load_pipeline(write_pipeline(
        tmp_path / "p.yaml", host=mysql_server.endpoint.host, port=mysql_server.endpoint.port,
        fe="127.0.0.1:1", tables=f"{fresh_db}.\\.*", name=f"dry_{fresh_db}", state_dir=state_dir,
        source={"scan.incremental.snapshot.chunk.size": 10}))
    if existing:
        store = StateStore.for_pipeline(definition)
        with store.transaction() as tx:
            LABEL_EPOCH.put(tx, "abc123")
        store.close()

    plan = next_plan(definition)

    assert plan.source is PlanSource.COMPUTED
    assert [(str(s.table_id), s.index) for s in plan.splits] == [(f"{fresh_db}.t", i) for i in range(5)]
    if existing:
        store = StateStore.open_existing(definition)
        try:
            with store.transaction(readonly=True) as tx:
                assert tx.items("meta") == [("label_epoch", "abc123")]
                assert tx.chunks() == [] and tx.items("snapshot") == [] and tx.items("binlog") == []
                assert tx.schema_tables() == []
        finally:
            store.close()
    else:
        assert not state_dir.exists()


def test_splits_finishes_a_plan_still_being_split_without_recording_the_rest(mysql_server, root_conn, fresh_db,
                                                                            tmp_path):
    """A plan stopped between rounds (a text key splits one chunk per step): ``next_plan`` prints the
    recorded chunks and the rest split from the recorded cursor, and the store keeps only what it had;
    the run that finishes the plan then makes exactly those chunks."""
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.tags (code VARCHAR(20) PRIMARY KEY, n INT NOT NULL)")
        cur.execute(f"INSERT INTO `{fresh_db}`.tags SELECT CONCAT('tag-', LPAD(seq, 5, '0')), seq "
                    f"FROM `{fresh_db}`.seq_1_to_300")
    definition = load_pipeline(write_pipeline(
        tmp_path / "p.yaml", host=mysql_server.endpoint.host, port=mysql_server.endpoint.port,
        fe="127.0.0.1:1", tables=f"{fresh_db}.\\.*", name=f"rounds_{fresh_db}", state_dir=tmp_path / "state",
        source={"scan.incremental.snapshot.chunk.size": 50}))
    service = PipelineService(definition)
    try:
        first = service.plan_splits(max_steps=2)
        assert not first.complete and len(first.chunk_keys) == 2

        plan = next_plan(definition)

        assert plan.source is PlanSource.RESUMED
        assert service.chunk_keys() == list(first.chunk_keys)  # nothing recorded by `splits`
        done = service.plan_splits()
        assert done.complete
        with service.store.transaction(readonly=True) as tx:
            ranges = {(c.table_id, c.chunk_index): (c.start, c.end) for c in tx.chunks()}
    finally:
        service.close()
    assert [chunk_key(str(s.table_id), s.index) for s in plan.splits] == list(done.chunk_keys)
    assert len(plan.splits) > len(first.chunk_keys)  # the rest was split by `splits`, as the run then did
    assert all(ranges[(str(s.table_id), s.index)] == (None if s.start is None else list(s.start),
                                                      None if s.end is None else list(s.end))
               for s in plan.splits)
    assert next_plan(definition).source is PlanSource.RECORDED
