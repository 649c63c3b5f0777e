"""Dagster's schema revisions are read once per process (``orchestration/defs/alembic_cache.py``):
a new home and its runs' files are stamped with Dagster's newest revision exactly as before, an
existing file is still checked against it, and Alembic's scripts are loaded once, not per file."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from dagster import DagsterInstance, Definitions, MaterializeResult, asset, define_asset_job
from dagster._core.storage.runs.sqlite import sqlite_run_storage
from dagster._core.storage.sql import get_alembic_config

from orchestration.cli.instance import prepare_home
from orchestration.defs import alembic_cache


def _head() -> str:
    """Dagster's newest revision, read by Alembic itself without the cache."""
    return ScriptDirectory.from_config(get_alembic_config(sqlite_run_storage.__file__)).as_revision_number("head")


def _revision(path: Path) -> str | None:
    with sqlite3.connect(path) as conn:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return row[0] if row else None


@pytest.fixture
def builds(monkeypatch) -> list[str]:
    """Every ``ScriptDirectory`` built from now on (its script location), with the cache emptied first."""
    monkeypatch.setattr(alembic_cache, "_scripts", {})
    built: list[str] = []
    original = ScriptDirectory.from_config.__func__

    def counted(cls, config, *args, **kwargs):
        built.append(config.get_main_option("script_location"))
        return original(cls, config, *args, **kwargs)

    monkeypatch.setattr(ScriptDirectory, "from_config", classmethod(counted))
    return built


def _job():
    @asset
    def numbers() -> MaterializeResult:
        return MaterializeResult(metadata={"rows": 3})

    return Definitions(assets=[numbers], jobs=[define_asset_job("numbers_job")]).resolve_job_def("numbers_job")


def test_a_new_home_and_its_runs_are_stamped_with_dagsters_newest_revision_read_once(tmp_path, builds):
    home = prepare_home(tmp_path / "dagster")  # installs the cache
    job = _job()
    with warnings.catch_warnings(), DagsterInstance.from_config(str(home)) as instance:
        warnings.simplefilter("ignore")
        runs = [job.execute_in_process(instance=instance) for _ in range(2)]
    assert all(r.success for r in runs)
    head = _head()
    files = [home / "history" / "runs.db", home / "history" / "runs" / "index.db", home / "schedules" / "schedules.db",
             *(home / "history" / "runs" / f"{r.run_id}.db" for r in runs)]
    assert {f.name: _revision(f) for f in files} == {f.name: head for f in files}
    # the home's three files and two runs' files, each checked and stamped: Dagster's scripts read once
    assert len(builds) == 1 + 1  # (the +1: _head() above, uncached on purpose)


def test_an_existing_home_is_checked_and_read_back_as_before(tmp_path, builds):
    home = prepare_home(tmp_path / "dagster")
    job = _job()
    with warnings.catch_warnings(), DagsterInstance.from_config(str(home)) as instance:
        warnings.simplefilter("ignore")
        run_id = job.execute_in_process(instance=instance).run_id
    with DagsterInstance.from_config(str(home)) as instance:  # as the next command would open it
        assert instance.get_run_by_id(run_id) is not None
        assert len(instance.all_logs(run_id)) > 0
    assert len(builds) == 1


def test_install_is_idempotent_and_keeps_dagsters_functions():
    from dagster._core.storage import sql

    alembic_cache.install()
    alembic_cache.install()
    assert sql.ScriptDirectory is alembic_cache._CachedScriptDirectory  # noqa: SLF001
    assert sql.stamp is alembic_cache._stamp  # noqa: SLF001
    assert callable(sql.check_alembic_revision) and callable(sql.stamp_alembic_rev)
