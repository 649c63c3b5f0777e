"""``tidemark run`` starts Spark ahead only when the snapshot left needs it
(``orchestration/cli/spark_prestart.py``, ``cdc_core/pipeline/snapshot_estimate.py``).

``jobs.spark.start_session`` is replaced by a recorder here: what is tested is the decision and
what it reads (the real session start is the run's own, in the end-to-end tests)."""

from __future__ import annotations

import pytest

import jobs.spark
from cdc_core.config import load_pipeline
from cdc_core.model.schema import TableId
from cdc_core.pipeline.snapshot_estimate import fits_in_process, needs_spark, rows_left
from cdc_core.state import ChunkRecord, ChunkStatus, StateStore
from cdc_core.state.leases import Scope, release, try_acquire
from devstack.pipeline_file import write_pipeline
from orchestration.cli.spark_prestart import SparkPrestart
from orchestration.defs.env_overrides import state_location

pytestmark = pytest.mark.integration


@pytest.fixture
def started(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(jobs.spark, "start_session", lambda definition: calls.append(definition.name))
    return calls


@pytest.fixture
def table(root_conn, fresh_db):
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v VARCHAR(20))")
        cur.execute(f"INSERT INTO `{fresh_db}`.t SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_500")
        cur.execute(f"ANALYZE TABLE `{fresh_db}`.t")
        cur.fetchall()
    return f"{fresh_db}.t"


def pipeline(tmp_path, mysql_server, table, name="pre", in_process_rows=None, port=None, transform=None):
    extra = {"tidemark.snapshot.in-process-rows": in_process_rows} if in_process_rows is not None else {}
    return write_pipeline(tmp_path / f"{name}.yaml", host="127.0.0.1", port=port or mysql_server.port,
                          fe="127.0.0.1:1", tables=table, name=name, state_dir=tmp_path / "state" / name,
                          pipeline=extra, transform=transform)


def planned(store, table, chunks, committed):
    """A plan of ``chunks`` chunks of ``table`` in ``store``, those in ``committed`` COMMITTED."""
    with store.transaction() as tx:
        tx.add_chunks([ChunkRecord(table, i, None, None) for i in range(chunks)])
        for i in committed:
            tx.update_chunk(table, i, status=ChunkStatus.COMMITTED)


def prestart(*paths):
    ahead = SparkPrestart(list(paths)).start()
    ahead.join(60)
    return ahead


def test_a_first_snapshot_bigger_than_the_driver_reads_starts_spark_ahead_and_creates_no_state(
        tmp_path, mysql_server, table, started):
    path = pipeline(tmp_path, mysql_server, table, in_process_rows=100)
    ahead = prestart(path)
    assert started == ["pre"] and ahead.started_for == "pre"
    assert not (tmp_path / "state").exists()  # the server's estimate decided; the run creates the state


def test_a_small_snapshot_starts_nothing(tmp_path, mysql_server, table, started):
    ahead = prestart(pipeline(tmp_path, mysql_server, table))  # 500 rows, within the default 50,000
    assert started == [] and ahead.started_for is None


def test_the_rest_of_a_planned_snapshot_decides(tmp_path, mysql_server, table, started):
    path = pipeline(tmp_path, mysql_server, table, in_process_rows=100)
    definition = load_pipeline(path)
    store = StateStore.for_pipeline(definition)
    store.put("snapshot", "table_rows", {table: 1000})
    planned(store, table, chunks=10, committed=range(9))
    assert rows_left(definition, store) == {table: 100}  # a tenth of the chunks: within 100 rows
    assert prestart(path).started_for is None
    with store.transaction() as tx:
        tx.update_chunk(table, 8, status=ChunkStatus.PENDING)
    assert rows_left(definition, store) == {table: 200}
    assert prestart(path).started_for == "pre"
    with store.transaction() as tx:
        for i in (8, 9):
            tx.update_chunk(table, i, status=ChunkStatus.COMMITTED)
    assert rows_left(definition, store) == {}  # done: nothing to read, no Spark
    store.close()
    assert prestart(path).started_for is None
    assert started == ["pre"]


def test_nothing_is_started_ahead_while_another_run_holds_the_pipeline(tmp_path, mysql_server, table, started):
    """That run would decline: a JVM started for it would print its lines before the one line."""
    path = pipeline(tmp_path, mysql_server, table, in_process_rows=100)
    store = StateStore.for_pipeline(load_pipeline(path))
    try_acquire(store, [Scope.PIPELINE], owner="another-host:1:ab", purpose="tidemark run --once", ttl_s=60)
    assert prestart(path).started_for is None and started == []
    release(store, [Scope.PIPELINE], owner="another-host:1:ab")
    store.close()
    assert prestart(path).started_for == "pre" and started == ["pre"]


def test_the_state_store_the_environment_names_is_the_one_read(tmp_path, mysql_server, table, started,
                                                             monkeypatch):
    path = pipeline(tmp_path, mysql_server, table, in_process_rows=100)
    definition = load_pipeline(path)
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("TIDEMARK_PRE_STATE_DIR", str(elsewhere))
    assert state_location(definition) == (None, elsewhere)
    store = StateStore.open(elsewhere)
    store.put("snapshot", "table_rows", {table: 1000})
    planned(store, table, chunks=1, committed=[0])
    store.close()
    assert prestart(path).started_for is None  # what that store says: all committed
    assert not (tmp_path / "state").exists()  # the file's own state directory is not touched
    monkeypatch.setenv("TIDEMARK_PRE_STATE_URL", f"sqlite:///{tmp_path / 'shared.db'}")
    assert state_location(definition) == (f"sqlite:///{tmp_path / 'shared.db'}", None)


def test_what_it_cannot_read_starts_nothing_and_raises_nothing(tmp_path, mysql_server, table, started):
    missing = tmp_path / "missing.yaml"
    down = pipeline(tmp_path, mysql_server, table, name="down", in_process_rows=100, port=1)
    assert prestart(missing, down).started_for is None
    assert started == []
    good = pipeline(tmp_path, mysql_server, table, in_process_rows=100)
    assert prestart(missing, good).started_for == "pre"  # the first file that needs Spark


def test_the_in_process_rule_is_the_runs(tmp_path):
    def definition(in_process_rows, transform=None):
        path = write_pipeline(tmp_path / "p.yaml", host="127.0.0.1", port=3306, fe="127.0.0.1:1",
                              tables="shop.t", name="p", state_dir=tmp_path / "state",
                              pipeline={"tidemark.snapshot.in-process-rows": in_process_rows}, transform=transform)
        return load_pipeline(path, env={})

    t = TableId.parse("shop.t")
    plain = definition(1000)
    assert fits_in_process(plain, 1000, [t]) and not fits_in_process(plain, 1001, [t])
    assert not needs_spark(plain, {}) and needs_spark(plain, {"shop.t": 1001})
    with_transform = definition(1000, transform=[{"source-table": "shop.t", "projection": "*"}])
    assert not fits_in_process(with_transform, 10, [t])  # transforms run in Spark SQL
    assert not fits_in_process(definition(0), 10, [t])  # 0: always Spark


def test_a_named_master_or_connect_server_always_gets_spark(tmp_path):
    """Spark is the user's choice when the file names a master or a Connect server: never the local path."""
    t = TableId.parse("shop.t")
    for key, value in (("tidemark.spark.master", "spark://127.0.0.1:7077"), ("tidemark.spark.remote", "sc://127.0.0.1")):
        path = write_pipeline(tmp_path / "p.yaml", host="127.0.0.1", port=3306, fe="127.0.0.1:1", tables="shop.t",
                              name="p", state_dir=tmp_path / "state", pipeline={key: value})
        named = load_pipeline(path, env={})
        assert not fits_in_process(named, 10, [t]) and needs_spark(named, {"shop.t": 10})


def test_a_large_run_without_spark_uses_the_local_workers_a_small_one_the_driver(tmp_path):
    from cdc_core.pipeline.snapshot_estimate import SERIAL_MAX_ROWS, local_workers_for

    path = write_pipeline(tmp_path / "p.yaml", host="127.0.0.1", port=3306, fe="127.0.0.1:1", tables="shop.t",
                          name="p", state_dir=tmp_path / "state", parallelism=3)
    definition = load_pipeline(path, env={})
    assert fits_in_process(definition, 1_000_000, [TableId.parse("shop.t")])  # the default covers 1M rows
    assert local_workers_for(definition, SERIAL_MAX_ROWS, chunks=5) == 1
    assert local_workers_for(definition, SERIAL_MAX_ROWS + 1, chunks=1) == 1  # one chunk: nothing to share
    assert local_workers_for(definition, SERIAL_MAX_ROWS + 1, chunks=2) == 3


def test_a_table_larger_than_the_limit_goes_to_spark_in_every_run_of_its_chunks(tmp_path):
    """A run holds a slice of a big table's chunks, fewer rows than the limit; the table's planned rows decide, as
    the prestart's estimate of the whole snapshot does, so the JVM started ahead is the one used."""
    from types import SimpleNamespace

    from jobs.snapshot_job import runs_in_process

    path = write_pipeline(tmp_path / "p.yaml", host="127.0.0.1", port=3306, fe="127.0.0.1:1", tables="shop.t",
                          name="p", state_dir=tmp_path / "state", pipeline={"tidemark.snapshot.in-process-rows": 1000})
    definition = load_pipeline(path, env={})
    schema = SimpleNamespace(table_id=TableId.parse("shop.t"))
    assert runs_in_process(definition, [SimpleNamespace(schema=schema, estimated_rows=800, table_rows=1000)])
    assert not runs_in_process(definition, [SimpleNamespace(schema=schema, estimated_rows=800, table_rows=5000)])
    assert needs_spark(definition, {"shop.t": 5000})  # what the prestart decides for the same table
    assert runs_in_process(definition, [SimpleNamespace(schema=schema, estimated_rows=800, table_rows=None)])


def test_the_first_estimate_of_many_tables_is_one_query_not_one_per_table(tmp_path, mysql_server, root_conn, fresh_db,
                                                                          monkeypatch):
    """Before the first plan, the estimate reads every captured table's rows in one
    information_schema query: a ``SHOW TABLE STATUS`` per table cost 300 tables ~1.8 s."""
    import cdc_core.mysql.discovery as discovery

    with root_conn.cursor() as cur:
        for i in range(5):
            cur.execute(f"CREATE TABLE `{fresh_db}`.m{i} (id INT PRIMARY KEY)")
    asked: list[TableId] = []
    real = discovery.table_status
    monkeypatch.setattr(discovery, "table_status", lambda conn, t: asked.append(t) or real(conn, t))
    path = pipeline(tmp_path, mysql_server, f"{fresh_db}.m.*")
    left = rows_left(load_pipeline(path), None)
    assert sorted(left) == [f"{fresh_db}.m{i}" for i in range(5)]
    assert asked == []  # nothing asked table by table
