"""Which Dagster home Tidemark's commands use, and that a user's ``dagster.yaml`` is never rewritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestration.cli.instance import (
    MARKER,
    TEMPLATE,
    DagsterHome,
    HomeOwner,
    HomeSource,
    dagster_home_for,
    local_instance_note,
    prepare_home,
    rendered_template,
)
from orchestration.cli.status import instance_exists
from orchestration.defs.pipelines import PipelineHandle
from tests.orchestration.fakes import write_pipeline

USERS_YAML = "storage:\n  postgres:\n    postgres_url:\n      env: DAGSTER_PG_URL\n"


@pytest.fixture
def clean_env(monkeypatch):
    monkeypatch.delenv("TIDEMARK_DAGSTER_HOME", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return monkeypatch


def test_a_users_dagster_home_is_used_as_it_is(clean_env, tmp_path):
    home = tmp_path / "mine"
    home.mkdir()
    (home / "dagster.yaml").write_text(USERS_YAML)
    clean_env.setenv("DAGSTER_HOME", str(home))
    where = dagster_home_for([])
    assert where == DagsterHome(home.resolve(), HomeSource.DAGSTER_ENV, HomeOwner.USER)
    for _ in range(2):
        assert prepare_home(where) == home.resolve()
    assert (home / "dagster.yaml").read_text() == USERS_YAML
    assert sorted(p.name for p in home.iterdir()) == ["dagster.yaml"]
    assert where.describe() == (f"Dagster instance: {home.resolve()} (from DAGSTER_HOME; "
                                "the user's dagster.yaml, used as it is)")
    assert instance_exists(home), "storage on PostgreSQL: the instance is there, though no local file is"


def test_a_users_dagster_home_without_a_dagster_yaml_is_not_written_either(clean_env, tmp_path):
    clean_env.setenv("DAGSTER_HOME", str(tmp_path))
    where = dagster_home_for([])
    prepare_home(where)
    assert list(tmp_path.iterdir()) == []
    assert "no dagster.yaml: Dagster's defaults, nothing written" in where.describe()
    clean_env.setenv("DAGSTER_HOME", str(tmp_path / "missing"))
    with pytest.raises(FileNotFoundError, match="DAGSTER_HOME .*missing is not a directory"):
        prepare_home(dagster_home_for([]))


def test_a_home_tidemark_creates_is_marked_and_keeps_the_template(clean_env, tmp_path):
    clean_env.setenv("TIDEMARK_DAGSTER_HOME", str(tmp_path / "ours"))
    clean_env.setenv("DAGSTER_HOME", str(tmp_path / "ignored"))  # TIDEMARK_DAGSTER_HOME comes first
    where = dagster_home_for([])
    assert where.owner is HomeOwner.TIDEMARK and where.source is HomeSource.TIDEMARK_ENV
    home = prepare_home(where)
    assert (home / MARKER).is_file()
    assert (home / "dagster.yaml").read_text() == rendered_template(home)
    assert "BatchingSqliteEventLogStorage" in TEMPLATE.read_text() and str(home) in rendered_template(home)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")
    prepare_home(dagster_home_for([]))  # Tidemark's own: the template again
    assert (home / "dagster.yaml").read_text() == rendered_template(home)
    assert "Tidemark's own home, dagster.yaml from Tidemark's template" in dagster_home_for([]).describe()


def test_an_unmarked_home_with_a_dagster_yaml_is_the_users(clean_env, tmp_path: Path):
    home = tmp_path / "edited"
    home.mkdir()
    (home / "dagster.yaml").write_text(USERS_YAML)
    clean_env.setenv("TIDEMARK_DAGSTER_HOME", str(home))
    where = dagster_home_for([])
    assert where.owner is HomeOwner.USER
    prepare_home(where)
    prepare_home(home)  # a bare path is judged the same way
    assert (home / "dagster.yaml").read_text() == USERS_YAML and not (home / MARKER).exists()


def test_shared_state_with_a_local_dagster_instance_is_pointed_out(clean_env, tmp_path):
    """No local disk in the path: a pipeline whose state is on a server, run against an instance in
    local files, gets one line saying where its runs go and how to share them (docs/deploy.md)."""
    local = write_pipeline(tmp_path, name="local")
    shared = write_pipeline(tmp_path, name="shared")
    shared.write_text(shared.read_text() + "  tidemark.state.url: postgresql://tidemark@pg.internal:5432/shared\n")
    handles = [PipelineHandle.load(local), PipelineHandle.load(shared)]
    ours = prepare_home(dagster_home_for(handles))  # Tidemark's home: SQLite files under it
    note = local_instance_note(ours, handles)
    assert note is not None and note.startswith("note: the state of shared is on a database server")
    assert str(ours) in note and "DAGSTER_HOME" in note and "pg.internal" not in note
    assert local_instance_note(ours, handles[:1]) is None  # local state, local instance: nothing to say
    users = tmp_path / "users_home"
    users.mkdir()
    (users / "dagster.yaml").write_text(USERS_YAML)
    assert local_instance_note(users, handles) is None  # the instance is on PostgreSQL


def test_an_installed_tidemark_ships_its_dagster_template(tmp_path):
    """A wheel of the project (what ``pip install`` without ``-e`` installs) holds the template
    :data:`TEMPLATE` names: without it an installed Tidemark could not write its homes' settings."""
    import shutil
    import subprocess
    import sys
    import zipfile

    root, source = Path(__file__).resolve().parents[2], tmp_path / "source"
    # built from a copy: setuptools writes build/ and *.egg-info beside the sources it builds
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, source / name)
    for package in ("cdc_core", "jobs", "orchestration", "devstack"):
        shutil.copytree(root / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(tmp_path / "dist"), str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        assert z.read("orchestration/cli/dagster.yaml").decode() == TEMPLATE.read_text()


def test_a_missing_template_is_named_with_the_fix(monkeypatch, tmp_path):
    import orchestration.cli.instance as instance

    monkeypatch.setattr(instance, "TEMPLATE", tmp_path / "absent" / "dagster.yaml")
    with pytest.raises(FileNotFoundError, match="dagster.yaml is missing: this install of Tidemark is incomplete"):
        rendered_template(tmp_path)
