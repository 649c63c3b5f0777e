"""The snapshot job on Spark: chunks read between watermarks and precommitted into the Doris stand-in."""

from __future__ import annotations

import gc
import json
from decimal import Decimal

import pytest

from cdc_core.doris.labels import snapshot_batch_id
from cdc_core.instrumentation import faults
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.mysql.discovery import read_table_schema
from jobs.fused_chunks import MAX_CHUNKS_PER_TASK, run_fused, task_count
from jobs.spark_executor import spark_service
from jobs.specs import ChunkSpec, ReadSpec, SourceSpec, WriteMode, WriterSpec
from tests.jobs.conftest import doris_load_state, doris_query


def fill(root_conn, db: str) -> None:
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.orders (id BIGINT PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), "
                    "ts DATETIME(3), flag TINYINT(1), big BIGINT UNSIGNED)")
        cur.execute(f"INSERT INTO `{db}`.orders SELECT seq, CONCAT('n', seq), seq / 4, "
                    "'2026-01-01' + INTERVAL seq SECOND, seq % 2, 18446744073709551615 - seq FROM `{db}`.seq_1_to_2500")
        cur.execute(f"CREATE TABLE `{db}`.events (event_id INT NOT NULL, kind VARCHAR(10), KEY (event_id))")
        cur.execute(f"INSERT INTO `{db}`.events SELECT seq, IF(seq % 3 = 0, 'a', 'b') FROM `{db}`.seq_1_to_1700")


def test_fused_tasks_take_long_runs_of_chunks_in_a_multiple_of_the_parallelism():
    assert task_count(0, 2) == 0
    assert task_count(1, 2) == 1
    assert task_count(123, 2) == 2  # 1M rows of the bench table: one run per slot
    assert task_count(618, 2) == 10  # 5M rows: five runs per slot
    assert task_count(618, 4) == 12
    for chunks in range(1, 3000, 37):
        for parallelism in (1, 2, 3, 8):
            n = task_count(chunks, parallelism)
            assert 1 <= n <= chunks
            assert n == chunks or n % parallelism == 0  # every slot gets as many tasks
            assert chunks / n <= MAX_CHUNKS_PER_TASK or n == chunks  # no run is longer
            assert n <= parallelism or chunks / n > MAX_CHUNKS_PER_TASK / 2  # nor needlessly short


def test_snapshot_loads_invisibly_then_commits(pipeline_factory, root_conn, fresh_db, doris_standin, spark_session):
    fill(root_conn, fresh_db)
    definition = pipeline_factory(
        f"{fresh_db}.\\.*",
        source={"scan.incremental.snapshot.chunk.size": 1000,
                "scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.events:event_id"},
    )
    runner = spark_service(definition)
    plan = runner.plan_splits()
    assert plan.complete and set(plan.tables) == {f"{fresh_db}.orders", f"{fresh_db}.events"}
    assert len(plan.chunk_keys) == 3 + 2  # 2500 ids evenly in 1000s; 1700 rows of events

    results = runner.run_chunks(list(plan.chunk_keys))
    assert sum(r.rows for r in results) == 2500 + 1700
    assert all(BinlogOffset.from_dict(r.high_watermark) >= BinlogOffset.from_dict(r.low_watermark) for r in results)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM orders") == [[0]], "precommitted = invisible"
    assert not runner.snapshot_done()

    runner.commit_chunks(list(plan.chunk_keys))
    assert runner.snapshot_done()
    assert runner.pending_transactions() == []
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM orders") == [[2500]]
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM events") == [[1700]]
    row = doris_query(doris_standin, fresh_db, "SELECT id, name, amount, ts, flag, big FROM orders WHERE id = 7")
    assert row[0][0] == 7 and row[0][1] == "n7"
    assert Decimal(str(row[0][2])) == Decimal("1.75")
    assert str(row[0][3]).startswith("2026-01-01 00:00:07")
    assert row[0][4] in (True, 1, "1", "true")
    assert int(row[0][5]) == 18446744073709551615 - 7
    # Committing again is harmless.
    runner.commit_chunks(list(plan.chunk_keys))
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM events") == [[1700]]
    runner.close()


@pytest.mark.parametrize("fused", [True, False], ids=["fused-tasks", "dataframe"])
def test_a_task_failing_after_precommit_is_retried_without_duplicates(
    fused, pipeline_factory, root_conn, fresh_db, doris_standin, spark_session, tmp_path, monkeypatch
):
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.logs (seq_no INT NOT NULL, msg VARCHAR(20), KEY (seq_no))")
        cur.execute(f"INSERT INTO `{fresh_db}`.logs SELECT seq, CONCAT('m', seq) FROM `{fresh_db}`.seq_1_to_900")
    definition = pipeline_factory(
        f"{fresh_db}.logs",
        source={"scan.incremental.snapshot.chunk.size": 400,
                "scan.incremental.snapshot.chunk.key-column": f"{fresh_db}.logs:seq_no"},
        pipeline={"tidemark.spark.fused-chunk-tasks": fused},
    )
    runner = spark_service(definition)
    keys = list(runner.plan_splits().chunk_keys)
    marker = tmp_path / "failed-once"
    monkeypatch.setenv(faults.ENV, json.dumps(
        {"snapshot.after_precommit": {"action": "raise_once", "marker": str(marker)}}))
    results = runner.run_chunks(keys)
    assert marker.exists(), "one task really failed after its load was precommitted"
    assert sum(r.rows for r in results) == 900
    runner.commit_chunks(keys)
    # A DUPLICATE-model table keeps every loaded row: a leftover attempt would show as extra rows.
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*), COUNT(DISTINCT seq_no) FROM logs") == [[900, 900]]
    for r in results:
        for txn in r.transactions:
            assert doris_load_state(doris_standin, fresh_db, txn["label"]) == "VISIBLE"
    runner.close()


def test_a_failed_fused_job_leaves_no_prepared_load(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                    spark_session, monkeypatch):
    """Every attempt of the first chunk's task fails after its precommit, while the other tasks
    are still busy: the job fails, and the driver — once those tasks have stopped — aborts what
    every task prepared, including loads that landed after the failure."""
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.pay (id INT PRIMARY KEY, amount INT)")
        cur.execute(f"INSERT INTO `{fresh_db}`.pay SELECT seq, seq FROM `{fresh_db}`.seq_1_to_1000")
    definition = pipeline_factory(f"{fresh_db}.pay", source={"scan.incremental.snapshot.chunk.size": 100})
    runner = spark_service(definition)
    table = TableId(fresh_db, "pay")
    schema = read_table_schema(root_conn, table)
    runner.sink.create_table(schema, table)
    chunks = tuple(ChunkSpec(i, None if i == 0 else (i * 100 + 1,), None if i == 9 else ((i + 1) * 100 + 1,), ("id",))
                   for i in range(10))
    read_spec = ReadSpec(str(table), schema, SourceSpec.from_options(definition.source), chunks)
    monkeypatch.setenv(faults.ENV, json.dumps(
        {"snapshot.after_precommit": {"action": "raise", "when": {"chunk": 0}, "sleep_s": 0.8}}))
    write_spec = WriterSpec.create(runner.sink, definition, WriteMode.SNAPSHOT, str(table), [str(table)])
    with pytest.raises(Exception, match="injected failure at snapshot.after_precommit"):
        run_fused(spark_session, read_spec, "cdc", write_spec, "", runner.sink, parallelism=2)
    states = {doris_load_state(doris_standin, fresh_db, runner.sink.label(table, snapshot_batch_id(str(table), i)))
              for i in range(10)}
    assert states <= {"ABORTED", "UNKNOWN"} and "ABORTED" in states, states
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM pay") == [[0]]
    runner.close()


@pytest.mark.parametrize("path", ["spark", "local-workers"])
def test_many_small_tables_share_one_job(path, pipeline_factory, root_conn, fresh_db, doris_standin, spark_session,
                                         monkeypatch):
    """A run over a database of small tables (one chunk each) reads and loads them all in one job
    (one Spark job; without Spark, one submission of every chunk to the local workers), not one job
    per table (issue 30: per-table cost); each chunk's outcome reaches its own table, and Doris
    equals MySQL once committed."""
    import cdc_core.pipeline.snapshot_estimate
    import jobs.snapshot_job

    tables = 7
    with root_conn.cursor() as cur:
        for i in range(tables):
            cur.execute(f"CREATE TABLE `{fresh_db}`.s{i} (id INT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(f"INSERT INTO `{fresh_db}`.s{i} SELECT seq, CONCAT('t{i}-', seq) FROM `{fresh_db}`.seq_1_to_{10 + i}")
    jobs_run: list[list[str]] = []
    name = "run_fused_many" if path == "spark" else "run_local_many"
    shared = getattr(jobs.snapshot_job, name)

    def counting(*args, **kwargs):
        if path == "spark":
            jobs_run.append([read_spec.table_id for read_spec, _ in args[1]])
            return shared(*args, **kwargs)
        seen: list[str] = []
        jobs_run.append(seen)

        def passing(specs):  # the local workers take the tables as they are prepared
            for read_spec, write_spec in specs:
                seen.append(read_spec.table_id)
                yield read_spec, write_spec

        return shared(passing(args[0]), *args[1:], **kwargs)

    monkeypatch.setattr(jobs.snapshot_job, name, counting)
    if path == "local-workers":  # a run this small would be read in the driver itself
        monkeypatch.setattr(cdc_core.pipeline.snapshot_estimate, "SERIAL_MAX_ROWS", 0)
    in_process = 0 if path == "spark" else 1_000_000
    runner = spark_service(pipeline_factory(f"{fresh_db}.s.*", pipeline={"tidemark.snapshot.in-process-rows": in_process}))
    keys = list(runner.plan_splits().chunk_keys)
    assert len(keys) == tables
    results = runner.run_chunks(keys)
    assert len(jobs_run) == 1 and sorted(jobs_run[0]) == sorted(f"{fresh_db}.s{i}" for i in range(tables))
    assert {r.table_id: r.rows for r in results} == {f"{fresh_db}.s{i}": 10 + i for i in range(tables)}
    runner.commit_chunks(keys)
    for i in range(tables):
        assert doris_query(doris_standin, fresh_db, f"SELECT COUNT(*), MIN(v) FROM s{i}") == [[10 + i, f"t{i}-1"]]
    assert all(v.equal for v in runner.verify())
    runner.close()


def _no_spark():
    raise AssertionError("a small snapshot run started Spark")


def _pay_service(pipeline_factory, root_conn, fresh_db):
    """1,000 rows in ~100-row chunks, under an in-process limit of 5,000 rows; Spark refused."""
    from cdc_core.pipeline.service import PipelineService
    from jobs.spark_executor import SparkExecutor

    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.pay (id INT PRIMARY KEY, amount INT)")
        cur.execute(f"INSERT INTO `{fresh_db}`.pay SELECT seq, seq FROM `{fresh_db}`.seq_1_to_1000")
    definition = pipeline_factory(f"{fresh_db}.pay", source={"scan.incremental.snapshot.chunk.size": 100},
                                  pipeline={"tidemark.snapshot.in-process-rows": 5_000})
    return PipelineService(definition, executor=SparkExecutor(_no_spark))


def test_a_small_run_reads_and_loads_in_process_without_spark(pipeline_factory, root_conn, fresh_db, doris_standin):
    """A run of at most ``tidemark.snapshot.in-process-rows`` rows (chunks × chunk size) never asks
    for a Spark session: the same read-and-load task runs in the driver, prepared then committed."""
    service = _pay_service(pipeline_factory, root_conn, fresh_db)
    keys = list(service.plan_splits().chunk_keys)
    # ~100-row chunks: the splitter scales the chunk size by InnoDB's approximate row count, which
    # right after the INSERT may be off by a few percent (10 or 11 chunks, both under 5,000 rows).
    assert 10 <= len(keys) <= 12, keys
    results = service.run_chunks(keys[:5])  # 5 × ~100 ≤ 5,000
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM pay") == [[0]]  # prepared, not visible
    service.commit_chunks(keys[:5])
    results += service.run_chunks(keys[5:])
    service.commit_chunks(keys[5:])
    assert sum(r.rows for r in results) == 1000
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*), SUM(amount) FROM pay") == [[1000, 500500]]
    assert all(r.ok for r in service.chunks_parity(keys))
    service.close()


def _five_chunks_with_the_third_failing(pipeline_factory, root_conn, fresh_db, doris_standin, monkeypatch,
                                        labels_checked: int):
    """Run the first five chunks of ``pay`` with the third failing after its precommit; check that the
    first ``labels_checked`` labels are aborted (or never begun) and nothing is recorded. Returns the
    service and every chunk key, for the plain re-run."""
    from cdc_core.state import ChunkStatus

    service = _pay_service(pipeline_factory, root_conn, fresh_db)
    keys = list(service.plan_splits().chunk_keys)
    monkeypatch.setenv(faults.ENV, json.dumps({"snapshot.after_precommit": {"action": "raise", "when": {"chunk": 2}}}))
    with pytest.raises(Exception, match="injected failure at snapshot.after_precommit"):
        service.run_chunks(keys[:5])
    monkeypatch.delenv(faults.ENV)
    table = TableId(fresh_db, "pay")
    states = {doris_load_state(doris_standin, fresh_db, service.sink.label(table, snapshot_batch_id(str(table), i)))
              for i in range(labels_checked)}
    assert states <= {"ABORTED", "UNKNOWN"} and "ABORTED" in states, states
    assert set(service.chunk_statuses().values()) == {ChunkStatus.PENDING}
    return service, keys


def test_an_in_process_run_that_fails_leaves_no_prepared_load(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                               monkeypatch):
    service, keys = _five_chunks_with_the_third_failing(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                        monkeypatch, labels_checked=3)
    service.run_chunks(keys)  # a plain re-run: everything, once
    service.commit_chunks(keys)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*), COUNT(DISTINCT id) FROM pay") == [[1000, 1000]]
    service.close()


@pytest.fixture
def local_workers_on(monkeypatch):
    """Runs without Spark of any size go to the local worker processes (``jobs/local_workers.py``),
    as runs above ``SERIAL_MAX_ROWS`` rows do; the pool is dropped afterwards."""
    import cdc_core.pipeline.snapshot_estimate as estimate
    from jobs.local_workers import discard_local_workers

    monkeypatch.setattr(estimate, "SERIAL_MAX_ROWS", 0)
    yield
    discard_local_workers()


def test_a_run_without_spark_is_read_and_loaded_by_local_worker_processes(pipeline_factory, root_conn, fresh_db,
                                                                           doris_standin, local_workers_on):
    """Within ``tidemark.snapshot.in-process-rows`` and above the serial limit, ``parallelism``
    spawned processes run the chunks (never Spark): prepared, invisible, then committed once."""
    import jobs.local_workers

    service = _pay_service(pipeline_factory, root_conn, fresh_db)
    keys = list(service.plan_splits().chunk_keys)
    results = service.run_chunks(keys)
    pool = jobs.local_workers._pool
    assert pool is not None and pool.size == 2  # the pipeline's parallelism
    # each worker put the chunk path's modules out of the collector's walks (collector.py)
    assert all(f.result() > 0 for f in [pool._executor.submit(gc.get_freeze_count) for _ in range(4)])
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM pay") == [[0]]  # prepared, not visible
    service.commit_chunks(keys)
    assert sorted(r.index for r in results) == list(range(len(keys)))
    assert sum(r.rows for r in results) == 1000
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*), SUM(amount) FROM pay") == [[1000, 500500]]
    assert all(r.ok for r in service.chunks_parity(keys))
    service.close()


def test_a_local_worker_run_that_fails_leaves_no_prepared_load(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                                monkeypatch, local_workers_on):
    """A chunk failing in a worker: the others end, every label of the table is aborted, nothing is
    recorded; a plain re-run loads every row once."""
    service, keys = _five_chunks_with_the_third_failing(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                        monkeypatch, labels_checked=5)
    service.run_chunks(keys)
    service.commit_chunks(keys)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*), COUNT(DISTINCT id) FROM pay") == [[1000, 1000]]
    service.close()


def _python_script(tmp_path, name: str, source: str):
    """Run ``source`` as script ``name`` in a Python process of its own (a pool's fork server is then
    that process's, not this test session's); its completed process, output as text. ``run`` returns
    only once every holder of its pipes is gone: the fork servers and workers included."""
    import subprocess
    import sys

    script = tmp_path / name
    script.write_text(source)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)


def test_a_local_worker_ends_itself_when_its_parent_is_gone(tmp_path):
    """A worker whose Tidemark process died (killed mid-run) starts nothing more: it exits, though the
    dead process stays a zombie (unreaped while ``subprocess.run`` waits for the pipes the worker holds)."""
    import time

    import psutil

    done = _python_script(tmp_path, "parent.py",
        "import os\n"
        "from jobs.local_workers import local_workers\n"
        "if __name__ == '__main__':\n"
        "    pool = local_workers(1)\n"
        "    pool.warm()\n"
        "    print(' '.join(str(p) for p in pool._executor._processes), flush=True)\n"
        "    os._exit(9)\n")
    workers = [int(p) for p in done.stdout.split()]
    assert done.returncode == 9 and workers, done.stderr
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"
                                              for p in workers):
        time.sleep(0.2)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in workers)


def test_ending_the_local_workers_ends_their_fork_server_at_once(tmp_path):
    """``end_local_workers`` (a ``tidemark`` command's end) leaves no process holding the command's
    stdout: the fork server is killed and reaped, not left to tear its preloaded modules down after
    the command exited; a pool needed afterwards in the same process gets a new fork server."""
    done = _python_script(tmp_path, "ending.py",
        "from multiprocessing import forkserver\n"
        "from jobs.local_workers import end_local_workers, local_workers\n"
        "if __name__ == '__main__':\n"
        "    local_workers(1).warm()\n"
        "    first = forkserver._forkserver._forkserver_pid\n"
        "    end_local_workers()\n"
        "    print(first, forkserver._forkserver._forkserver_pid, flush=True)\n"
        "    local_workers(1).warm()\n"
        "    print(forkserver._forkserver._forkserver_pid, flush=True)\n"
        "    end_local_workers()\n")
    assert done.returncode == 0, done.stderr
    (first, after_end), (second,) = (line.split() for line in done.stdout.splitlines())
    assert after_end == "None"  # reaped, not merely signalled
    assert second not in (first, "None")  # the next pool started its own


def test_the_local_workers_start_with_the_preferred_tls_context_built(tmp_path):
    """The workers' fork server builds the MySQL client's TLS context of the default ``ssl-mode:
    preferred`` before its first fork (``jobs/worker_preload.py``): a worker starts with it and does
    not load the system's CA bundle at its first connection. The process that asked for the pool
    has not built one (nothing is inherited from it: the fork server is a fresh interpreter)."""
    done = _python_script(tmp_path, "tls.py",
        "import cdc_core.mysql.connection as connection\n"
        "from jobs.local_workers import end_local_workers, local_workers\n"
        "if __name__ == '__main__':\n"
        "    pool = local_workers(1)\n"
        "    built = pool._executor.submit(eval, \"len(__import__('cdc_core.mysql.connection', fromlist=['_'])\"\n"
        "                                  \"._preferred_ssl_ctx)\").result()\n"
        "    print(built, len(connection._preferred_ssl_ctx), flush=True)\n"
        "    end_local_workers()\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "0"]


def _small_tables(root_conn, db: str, count: int, prefix: str = "m") -> None:
    with root_conn.cursor() as cur:
        for i in range(count):
            cur.execute(f"CREATE TABLE `{db}`.{prefix}{i} (id INT PRIMARY KEY, v VARCHAR(20))")
            cur.execute(f"INSERT INTO `{db}`.{prefix}{i} SELECT seq, CONCAT('r', seq) FROM `{db}`.seq_1_to_3")


def test_a_snapshot_of_many_tables_asks_the_fe_little_per_table(pipeline_factory, root_conn, fresh_db, doris_standin,
                                                                monkeypatch):
    """Twenty one-chunk tables, read and loaded in this process (every request to Doris leaves
    from here): per table its CREATE TABLE and the read of what Doris made (which the loading
    sink takes from the job's spec), its stream load (FE, then BE); what Doris already holds is
    read once for the run and the database's existence asked once, not per table (issue 30)."""
    from cdc_core.doris.client import DorisHttpClient
    from cdc_core.pipeline.service import PipelineService
    from jobs.spark_executor import SparkExecutor

    tables = 20
    _small_tables(root_conn, fresh_db, tables)
    seen: list[str] = []
    real = DorisHttpClient.request

    def request(self, method, path, **kwargs):
        stmt = (kwargs.get("json_body") or {}).get("stmt", "")
        seen.append(f"{method} {path.split('?')[0]} {stmt[:100]}")
        return real(self, method, path, **kwargs)

    monkeypatch.setattr(DorisHttpClient, "request", request)
    service = PipelineService(pipeline_factory(f"{fresh_db}.m.*", pipeline={"tidemark.snapshot.in-process-rows": 10_000}),
                              executor=SparkExecutor(_no_spark))
    keys = list(service.plan_splits().chunk_keys)
    assert len(keys) == tables
    before = len(seen)
    service.run_chunks(keys)
    run = seen[before:]
    assert sum("SCHEMATA" in s for s in run) <= 1, run  # the database, once
    assert sum("CREATE DATABASE" in s for s in run) <= 1
    assert sum("CREATE TABLE" in s for s in run) == tables
    assert sum(s.endswith("/_schema ") for s in run) <= tables, run  # after CREATE (the loading sink takes it)
    assert len(run) <= 2 * tables + 3, run  # (the stream loads and commits go by the loader's own requests)
    service.commit_chunks(keys)
    for i in (0, tables - 1):
        assert doris_query(doris_standin, fresh_db, f"SELECT COUNT(*) FROM m{i}") == [[3]]
    service.close()


@pytest.mark.parametrize("path", ["in-process", "local-workers"])
def test_a_tables_chunks_load_while_later_tables_are_prepared(path, pipeline_factory, root_conn, fresh_db,
                                                              doris_standin, monkeypatch, request):
    """Without Spark, the first table's chunks are loading before the last table is prepared
    (its Doris table created): the FE's per-table work overlaps the loads. The last table's
    preparation waits (up to 60 s) for the first load to start; it records what came first."""
    import threading

    import jobs.snapshot_job as snapshot_job
    from cdc_core.pipeline.service import PipelineService
    from jobs.spark_executor import SparkExecutor

    if path == "local-workers":
        request.getfixturevalue("local_workers_on")
    tables = 8
    _small_tables(root_conn, fresh_db, tables, prefix="o")
    events: list[str] = []
    loading = threading.Event()
    real_prepare = snapshot_job._prepare

    def prepare(spark, definition, sink, schema, *args, **kwargs):
        if schema.table_id.table == f"o{tables - 1}":
            loading.wait(60)
        events.append(f"prepared {schema.table_id.table}")
        return real_prepare(spark, definition, sink, schema, *args, **kwargs)

    monkeypatch.setattr(snapshot_job, "_prepare", prepare)
    if path == "in-process":
        real_run = snapshot_job._run_prepared

        def run_prepared(spark, definition, sink, prepared, *args, **kwargs):
            events.append(f"loading {prepared.schema.table_id.table}")
            loading.set()
            return real_run(spark, definition, sink, prepared, *args, **kwargs)

        monkeypatch.setattr(snapshot_job, "_run_prepared", run_prepared)
    else:
        real_many = snapshot_job.run_local_many

        def run_local_many(specs, *args, **kwargs):
            def passing():
                for read_spec, write_spec in specs:
                    events.append(f"loading {TableId.parse(read_spec.table_id).table}")
                    loading.set()
                    yield read_spec, write_spec

            return real_many(passing(), *args, **kwargs)

        monkeypatch.setattr(snapshot_job, "run_local_many", run_local_many)
    service = PipelineService(pipeline_factory(f"{fresh_db}.o.*", pipeline={"tidemark.snapshot.in-process-rows": 10_000}),
                              executor=SparkExecutor(_no_spark))
    keys = list(service.plan_splits().chunk_keys)
    results = service.run_chunks(keys)
    assert events.index("loading o0") < events.index(f"prepared o{tables - 1}"), events
    assert sorted(r.table_id for r in results) == sorted(f"{fresh_db}.o{i}" for i in range(tables))
    service.commit_chunks(keys)
    assert doris_query(doris_standin, fresh_db, f"SELECT COUNT(*) FROM o{tables - 1}") == [[3]]
    service.close()


def test_a_table_doris_has_with_fewer_columns_is_loaded_without_them_from_the_runs_one_read(
        pipeline_factory, root_conn, fresh_db, doris_standin, monkeypatch):
    """A Doris table that lacks a source column (a column added at the source meanwhile): its chunks
    leave the column out, as before, from the columns the run read for all its tables at once (no
    read of that table's schema for it; ``ensure`` still reads and checks the table)."""
    from cdc_core.doris.client import DorisHttpClient
    from cdc_core.pipeline.service import PipelineService
    from jobs.spark_executor import SparkExecutor

    _small_tables(root_conn, fresh_db, 3, prefix="f")
    service = PipelineService(pipeline_factory(f"{fresh_db}.f.*", pipeline={"tidemark.snapshot.in-process-rows": 10_000}),
                              executor=SparkExecutor(_no_spark))
    schema = read_table_schema(root_conn, TableId(fresh_db, "f0"))
    service.sink.create_table(schema.with_columns([c for c in schema.columns if c.name != "v"]), TableId(fresh_db, "f0"))
    seen: list[str] = []
    real = DorisHttpClient.request
    monkeypatch.setattr(DorisHttpClient, "request",
                        lambda self, method, path, **kw: seen.append(f"{method} {path}") or real(self, method, path, **kw))
    keys = list(service.plan_splits().chunk_keys)
    service.run_chunks(keys)
    service.commit_chunks(keys)
    assert sum(s.endswith(f"/{fresh_db}/f0/_schema") for s in seen) == 1, seen  # ensure's (the loading sink takes it)
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM f0") == [[3]]
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*), MIN(v) FROM f2") == [[3, "r1"]]
    service.close()
