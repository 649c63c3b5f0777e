"""Asset events written a batch at a time (issue 30: per-table Dagster events were the largest
per-table cost of a run over a whole database): Tidemark's own Dagster home keeps its event log in
``BatchingSqliteEventLogStorage`` (``orchestration/defs/event_storage.py``); a partitioned run's
materializations, its planned events and the Doris tables' run-less materializations arrive as
batches, and every one of them reads back through Dagster's APIs as if written one by one — on
SQLite and on a user's PostgreSQL instance."""

from __future__ import annotations

import os
import warnings

import pytest
import yaml
from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    Definitions,
    DynamicPartitionsDefinition,
    MaterializeResult,
    asset,
    define_asset_job,
)

from orchestration.cli.event_batches import BATCH_SIZE_ENV, enable_event_batches
from orchestration.cli.instance import prepare_home
from orchestration.defs.doris_tables import doris_table_key, report_written
from orchestration.defs.event_storage import BatchingSqliteEventLogStorage

TABLES = 40


@pytest.fixture(autouse=True)
def _batches(monkeypatch):
    monkeypatch.delenv(BATCH_SIZE_ENV, raising=False)
    enable_event_batches()
    yield
    os.environ.pop(BATCH_SIZE_ENV, None)


def _counting(storage) -> list[int]:
    """The sizes of the batches ``storage`` is handed (our own object, observed)."""
    sizes: list[int] = []
    store = storage.store_event_batch

    def counted(events):
        sizes.append(len(events))
        return store(events)

    storage.store_event_batch = counted
    return sizes


class _Update:
    def __init__(self, table: str, rows: int):
        self.target = type("T", (), {"table_id": table, "columns": ()})()
        self.rows = rows


def _updates() -> list:
    return [_Update(f"db.t{i:03d}", i) for i in range(TABLES)]


def _runless_reported(instance: DagsterInstance) -> None:
    report_written(instance, _updates(), run_id="r" * 36, by="a test commit")
    for i in range(TABLES):
        event = instance.get_latest_materialization_event(doris_table_key(f"db.t{i:03d}"))
        assert event is not None, i
        assert event.asset_materialization.metadata["dagster/row_count"].value == i


def test_tidemarks_home_keeps_its_events_in_the_batching_storage_where_dagster_would(tmp_path):
    home = prepare_home(tmp_path / "home")
    config = yaml.safe_load((home / "dagster.yaml").read_text())
    assert config["event_log_storage"]["config"] == {"dagster_home": str(home)}  # written out, no env needed
    with DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, BatchingSqliteEventLogStorage)
        sizes = _counting(storage)
        _runless_reported(instance)
        assert sizes == [TABLES]  # one batch for the whole commit
    assert (home / "history" / "runs" / "index.db").is_file()  # Dagster's own layout


def _partitioned_run(home) -> list[int]:
    """A run over TABLES partitions of one asset; the batch sizes its storage was handed."""
    partitions = DynamicPartitionsDefinition(name="chunks")

    @asset(partitions_def=partitions, check_specs=[AssetCheckSpec("parity", asset="chunks")])
    def chunks(context):
        yield MaterializeResult(metadata={"keys": len(context.partition_keys)})
        yield AssetCheckResult(check_name="parity", passed=True)

    job = Definitions(assets=[chunks], jobs=[define_asset_job("chunks_job", [chunks])]).resolve_job_def("chunks_job")
    keys = [f"p{i:03d}" for i in range(TABLES)]
    with DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions("chunks", keys)
        sizes = _counting(instance.event_log_storage)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = job.execute_in_process(instance=instance, tags={
                "dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]})
        assert result.success
        assert set(instance.get_materialized_partitions(AssetKey("chunks"))) == set(keys)
        latest = instance.get_latest_materialization_event(AssetKey("chunks"))  # the asset's row
        newest = instance.fetch_materializations(AssetKey("chunks"), limit=1).records[0]  # the events
        assert latest is not None and latest.timestamp == newest.timestamp
        assert latest.asset_materialization.partition == newest.partition_key
    return sizes


def test_a_partitioned_runs_materializations_and_planned_events_arrive_in_batches(tmp_path):
    home = prepare_home(tmp_path / "home")
    one_by_one: list[str] = []
    store = BatchingSqliteEventLogStorage.store_event

    def observed(self, event):  # our own class, observed in this test only
        one_by_one.append(event.dagster_event_type)
        return store(self, event)

    BatchingSqliteEventLogStorage.store_event = observed
    try:
        sizes = _partitioned_run(home)
    finally:
        BatchingSqliteEventLogStorage.store_event = store
    # the planned events (with the check's planned evaluation) and the materializations, each one batch
    assert sizes.count(TABLES) == 1 and sizes.count(TABLES + 1) == 1, sizes
    # ... and no asset event of theirs written one by one: only the check's planned evaluation
    assert not {"ASSET_MATERIALIZATION_PLANNED", "ASSET_MATERIALIZATION"} & set(one_by_one), one_by_one


def _postgres_home(tmp_path, url: str):
    home = tmp_path / "user-home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump({"storage": {"postgres": {"postgres_url": url}},
                                                       "telemetry": {"enabled": False}}))
    prepare_home(home)  # the user's: used as it is
    assert "event_log_storage" not in (home / "dagster.yaml").read_text()
    return home


@pytest.mark.parametrize("batches", [True, False])
def test_on_a_users_postgresql_instance_every_doris_table_reads_as_materialized(tmp_path, postgres_db, batches):
    """dagster-postgres's store_event_batch records only its last event as its asset's latest
    (Dagster batches one asset's partitions): the Doris tables, one asset each, go in one
    transaction of Tidemark's (batches on) or one by one (off), and read the same either way."""
    from dagster._core.instance.utils import RUNLESS_RUN_ID

    if not batches:
        os.environ[BATCH_SIZE_ENV] = "0"  # a user's own setting: batches off
    with DagsterInstance.from_config(str(_postgres_home(tmp_path, postgres_db))) as instance:
        sizes = _counting(instance.event_log_storage)
        _runless_reported(instance)
        assert sizes == []  # never dagster-postgres's batch
        assert len(instance.all_logs(RUNLESS_RUN_ID)) == TABLES
        records = instance.fetch_materializations(doris_table_key("db.t007"), limit=5).records
        assert [r.asset_materialization.metadata["dagster/row_count"].value for r in records] == [7]


def test_a_partitioned_run_on_postgresql_is_batched_by_dagster_postgres(tmp_path, postgres_db):
    sizes = _partitioned_run(_postgres_home(tmp_path, postgres_db))
    assert sizes.count(TABLES) == 1 and sizes.count(TABLES + 1) == 1, sizes


def test_without_the_batch_setting_each_event_is_written_alone_and_reads_the_same(tmp_path):
    os.environ.pop(BATCH_SIZE_ENV, None)
    home = prepare_home(tmp_path / "home")
    with DagsterInstance.from_config(str(home)) as instance:
        sizes = _counting(instance.event_log_storage)
        _runless_reported(instance)
        assert sizes == []




KILLED = """
import os, sys
from dagster import DagsterEventType, DagsterInstance
sys.path.insert(0, {tests!r})
import test_event_storage as t
from orchestration.cli.event_batches import enable_event_batches
from orchestration.defs.event_storage import BatchingSqliteEventLogStorage as Storage

enable_event_batches()
store = Storage.store_event_batch
if {where!r} == "index":  # the run's file written, the process dies before the index's transaction
    Storage.index_transaction = lambda self: os._exit(9)
else:  # the planned events written, the process dies before the materializations' batch
    def store_or_die(self, events):
        if events[0].dagster_event_type is DagsterEventType.ASSET_MATERIALIZATION:
            os._exit(9)
        return store(self, events)
    Storage.store_event_batch = store_or_die
with DagsterInstance.from_config({home!r}) as instance:
    exec({call!r}, vars(t) | {{"instance": instance}})
"""


def _killed(home, where: str, call: str) -> None:
    """``call`` run in a process killed (``os._exit``) at ``where`` (a fault put into our own
    storage class in that process only)."""
    import subprocess
    import sys
    from pathlib import Path

    script = KILLED.format(tests=str(Path(__file__).parent), home=str(home), where=where, call=call)
    done = subprocess.run([sys.executable, "-c", script], env=os.environ, capture_output=True, text=True)
    assert done.returncode == 9, done.stderr[-2000:]


def test_a_kill_inside_a_batch_leaves_the_index_whole_and_a_rerun_reports_every_table(tmp_path):
    """Killed between the run's file and the index: the index holds none of the batch (one
    transaction), the instance opens and reads as before, and the next report records every table."""
    home = prepare_home(tmp_path / "home")
    _killed(home, "index", "report_written(instance, _updates(), run_id='r' * 36, by='a killed commit')")
    with DagsterInstance.from_config(str(home)) as instance:
        assert all(instance.get_latest_materialization_event(doris_table_key(f"db.t{i:03d}")) is None
                   for i in range(TABLES))
        _runless_reported(instance)  # the re-run's report: every table there and readable


def test_a_run_killed_between_its_planned_and_done_events_heals_with_a_rerun(tmp_path):
    home = prepare_home(tmp_path / "home")
    _killed(home, "materializations", f"_partitioned_run({str(home)!r})")
    with DagsterInstance.from_config(str(home)) as instance:
        assert not instance.get_materialized_partitions(AssetKey("chunks"))
    _partitioned_run(home)  # the re-run: every partition materialized and readable


def test_a_batch_failing_after_the_runs_file_is_retried_without_writing_any_event_twice(tmp_path, monkeypatch):
    """The index refuses the materializations' batch once, after the run's file took it (a lock held
    too long): Dagster stores each event again one at a time, and each is once in the run's log and
    once in the index."""
    import sqlite3

    home = prepare_home(tmp_path / "home")
    index_transaction = BatchingSqliteEventLogStorage.index_transaction
    store_event_batch = BatchingSqliteEventLogStorage.store_event_batch
    storing: list[int] = []  # the size of the materializations' batch while it is being stored
    refused: list[int] = []

    def observed(self, events):
        kinds = {e.dagster_event_type for e in events}
        storing[:] = [len(events)] if kinds == {DagsterEventType.ASSET_MATERIALIZATION} else []
        try:
            return store_event_batch(self, events)
        finally:
            storing.clear()

    def refuse_once(self):
        if storing and not refused:
            refused.append(storing[0])
            raise sqlite3.OperationalError("database is locked")
        return index_transaction(self)

    monkeypatch.setattr(BatchingSqliteEventLogStorage, "store_event_batch", observed)
    monkeypatch.setattr(BatchingSqliteEventLogStorage, "index_transaction", refuse_once)
    _partitioned_run(home)
    assert refused == [TABLES]  # the whole batch was in the run's file when the index refused it
    with DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        logged = [e.dagster_event.partition for e in instance.all_logs(run.run_id)
                  if e.dagster_event_type is DagsterEventType.ASSET_MATERIALIZATION]
        indexed = instance.fetch_materializations(AssetKey("chunks"), limit=10 * TABLES).records
        assert sorted(logged) == [f"p{i:03d}" for i in range(TABLES)]
        assert sorted(r.partition_key for r in indexed) == sorted(logged)


def _asset_events(run_id: str, start: float) -> list:
    """Planned, done and observed events of a few assets, some repeated and interleaved, with tags
    and a column schema (the Doris tables' metadata): what a batch can hold."""
    import logging

    from dagster import AssetMaterialization, AssetObservation
    from dagster._core.events import (
        AssetMaterializationPlannedData,
        AssetObservationData,
        DagsterEvent,
        StepMaterializationData,
    )
    from dagster._core.events.log import EventLogEntry

    from orchestration.defs.doris_tables import column_schema

    columns = [type("C", (), {"name": "id", "type": "BIGINT", "key": True, "nullable": False})()]
    kinds = []
    for n, name in enumerate(["a", "b", "a", "c", "b", "a"]):
        key = AssetKey(["doris", f"db.{name}"])
        kinds.append(DagsterEvent(event_type_value=DagsterEventType.ASSET_MATERIALIZATION_PLANNED.value,
                                  job_name="j", event_specific_data=AssetMaterializationPlannedData(key)))
        kinds.append(DagsterEvent(event_type_value=DagsterEventType.ASSET_MATERIALIZATION.value, job_name="j",
                                  event_specific_data=StepMaterializationData(AssetMaterialization(
                                      key, metadata={"dagster/row_count": n, "dagster/column_schema": column_schema(columns)},
                                      tags={"dagster/data_version": f"v{n}"}))))
        if n % 2:
            kinds.append(DagsterEvent(event_type_value=DagsterEventType.ASSET_OBSERVATION.value, job_name="j",
                                      event_specific_data=AssetObservationData(AssetObservation(key))))
    return [EventLogEntry(user_message="", level=logging.INFO, job_name="j", run_id=run_id, error_info=None,
                          timestamp=start + n, step_key=None, dagster_event=e) for n, e in enumerate(kinds)]


def _index_rows(home) -> dict[str, list[tuple]]:
    import sqlite3

    with sqlite3.connect(home / "history" / "runs" / "index.db") as conn:
        return {
            "asset_keys": conn.execute(
                "SELECT asset_key, last_materialization, last_run_id, asset_details, wipe_timestamp, "
                "last_materialization_timestamp, tags, cached_status_data FROM asset_keys ORDER BY asset_key").fetchall(),
            "event_logs": conn.execute(
                "SELECT id, run_id, event, dagster_event_type, timestamp, step_key, asset_key, partition "
                "FROM event_logs ORDER BY id").fetchall(),
            "asset_event_tags": conn.execute(
                "SELECT event_id, asset_key, key, value, event_timestamp FROM asset_event_tags ORDER BY id").fetchall(),
        }


def test_a_batch_leaves_the_index_as_dagsters_storage_writing_each_event_in_turn(tmp_path):
    """The batch writes its rows with one statement per file, serializes each event once and each
    asset's row once: the index it leaves is, row for row, the one Dagster's own SQLite storage
    leaves storing the same events one by one — assets new and known, kinds interleaved."""
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    homes = {kind: prepare_home(tmp_path / kind) for kind in ("dagster", "batch")}
    for kind, home in homes.items():
        with DagsterInstance.from_config(str(home)) as instance:
            storage = instance.event_log_storage
            for n in range(2):  # the second batch updates the assets the first one created
                events = _asset_events(f"run{n}", start=1_000_000.0 + 100 * n)
                if kind == "dagster":
                    for event in events:
                        SqliteEventLogStorage.store_event(storage, event)
                else:
                    storage.store_event_batch(events)
            assert len(instance.all_logs("run1")) == len(events)
    assert _index_rows(homes["batch"]) == _index_rows(homes["dagster"])
    with DagsterInstance.from_config(str(homes["batch"])) as instance:
        latest = instance.get_latest_materialization_event(AssetKey(["doris", "db.a"]))
        assert latest is not None and latest.asset_materialization.metadata["dagster/row_count"].value == 5
