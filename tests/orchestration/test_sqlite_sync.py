"""Dagster's SQLite files in a Tidemark-owned home are in WAL mode from their first statement and
use ``synchronous=NORMAL`` (``orchestration/defs/sqlite_sync.py``); files elsewhere (a user's own
home, Tidemark's state store beside the home) keep SQLite's defaults, and Dagster reads back what
a run wrote exactly as before."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import sqlalchemy as sa
from dagster import DagsterInstance, Definitions, MaterializeResult, asset, define_asset_job

from orchestration.cli.instance import prepare_home
from orchestration.defs.sqlite_sync import registered_homes

SYNC_NORMAL, SYNC_FULL = 1, 2


def _pragmas(path: Path) -> tuple[str, int]:
    """The journal mode of the file and the synchronous level of a new SQLAlchemy connection to it."""
    engine = sa.create_engine(f"sqlite:///{path}", poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
            sync = conn.exec_driver_sql("PRAGMA synchronous").scalar()
    finally:
        engine.dispose()
    return str(mode), int(sync)


def test_a_new_file_under_a_tidemark_home_is_wal_before_any_table(tmp_path):
    home = prepare_home(tmp_path / "state" / "dagster")
    assert str(home.resolve()) + "/" in registered_homes()
    fresh = home / "history" / "runs" / "new.db"
    fresh.parent.mkdir(parents=True)
    assert _pragmas(fresh) == ("wal", SYNC_NORMAL)
    # nothing created in it: the mode was set on an empty file, before Dagster's CREATE TABLEs
    assert sqlite3.connect(fresh).execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


def test_files_outside_the_home_keep_sqlites_defaults(tmp_path):
    prepare_home(tmp_path / "state" / "dagster")
    beside = tmp_path / "state" / "tidemark.db"  # where a pipeline's state store lives: beside the home
    elsewhere = tmp_path / "state" / "dagster-other" / "runs.db"  # a prefix of the home's name, not under it
    elsewhere.parent.mkdir()
    assert _pragmas(beside) == ("delete", SYNC_FULL)
    assert _pragmas(elsewhere) == ("delete", SYNC_FULL)


def test_a_run_in_a_tidemark_home_reads_back_as_before(tmp_path):
    home = prepare_home(tmp_path / "dagster")

    @asset
    def numbers() -> MaterializeResult:
        return MaterializeResult(metadata={"rows": 3})

    job = Definitions(assets=[numbers], jobs=[define_asset_job("numbers_job")]).resolve_job_def("numbers_job")
    with warnings.catch_warnings(), DagsterInstance.from_config(str(home)) as instance:
        warnings.simplefilter("ignore")
        result = job.execute_in_process(instance=instance)
        run_file = home / "history" / "runs" / f"{result.run_id}.db"
        assert result.success
        assert _pragmas(run_file) == ("wal", SYNC_NORMAL)
        assert _pragmas(home / "history" / "runs.db") == ("wal", SYNC_NORMAL)
    with DagsterInstance.from_config(str(home)) as instance:  # a new process would read the same
        record = instance.fetch_materializations(numbers.key, limit=1).records[0]
        assert record.run_id == result.run_id
        assert record.asset_materialization.metadata["rows"].value == 3
