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
    AssetKey,
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

    @asset(partitions_def=partitions)
    def chunks(context) -> MaterializeResult:
        return MaterializeResult(metadata={"keys": len(context.partition_keys)})

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
        assert instance.get_latest_materialization_event(AssetKey("chunks")) is not None
    return sizes


def test_a_partitioned_runs_materializations_and_planned_events_arrive_in_batches(tmp_path):
    sizes = _partitioned_run(prepare_home(tmp_path / "home"))
    assert sizes.count(TABLES) == 2, sizes  # the planned events and the materializations, each one batch


def test_on_a_users_postgresql_instance_each_doris_table_is_reported_alone(tmp_path, postgres_db):
    """dagster-postgres's batch records only its last event as its asset's latest (Dagster batches
    one asset's partitions): the Doris tables, one asset each, are not batched there."""
    home = tmp_path / "user-home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump({"storage": {"postgres": {"postgres_url": postgres_db}},
                                                       "telemetry": {"enabled": False}}))
    prepare_home(home)  # the user's: used as it is
    assert "event_log_storage" not in (home / "dagster.yaml").read_text()
    with DagsterInstance.from_config(str(home)) as instance:
        sizes = _counting(instance.event_log_storage)
        _runless_reported(instance)
        assert sizes == []


def test_a_partitioned_run_on_postgresql_is_batched_by_dagster_postgres(tmp_path, postgres_db):
    home = tmp_path / "user-home"
    home.mkdir()
    (home / "dagster.yaml").write_text(yaml.safe_dump({"storage": {"postgres": {"postgres_url": postgres_db}},
                                                       "telemetry": {"enabled": False}}))
    assert _partitioned_run(home).count(TABLES) == 2


def test_without_the_batch_setting_each_event_is_written_alone_and_reads_the_same(tmp_path):
    os.environ.pop(BATCH_SIZE_ENV, None)
    home = prepare_home(tmp_path / "home")
    with DagsterInstance.from_config(str(home)) as instance:
        sizes = _counting(instance.event_log_storage)
        _runless_reported(instance)
        assert sizes == []

