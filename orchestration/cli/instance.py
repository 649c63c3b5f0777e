"""The Dagster instance Tidemark's commands use, and who owns its ``dagster.yaml``.

``tidemark run`` and ``tidemark dev`` share it, so the runs of ``tidemark run --once`` (and the
chunk partitions it registered) show up in the UI that ``tidemark dev`` opens afterwards. Where it is:

1. ``$TIDEMARK_DAGSTER_HOME``, else
2. ``$DAGSTER_HOME`` — the user's own instance (e.g. storage on PostgreSQL, ``docs/deploy.md``),
   used exactly as it is: Tidemark never writes into it, not even a missing ``dagster.yaml``;
3. else ``<first pipeline's state dir>/dagster``.

Tidemark writes its template (``orchestration/cli/dagster.yaml``, shipped in the package so that an
installed Tidemark has it as a checkout does: telemetry and nux off, the queued
run coordinator, the per-pipeline concurrency limits) only into a home it owns: one it created
itself, which it marks with :data:`MARKER`. An existing home without the marker that already holds
a ``dagster.yaml`` is the user's and is left alone (a marker, not a comparison with the template:
a user's copy of an older template is still the user's). Every command that opens the instance
prints :meth:`DagsterHome.describe`, so which settings a run used is never a guess.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import yaml

from orchestration.defs import alembic_cache
from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.sqlite_sync import relax_sqlite_sync

logger = logging.getLogger(__name__)

HOME_ENV = "TIDEMARK_DAGSTER_HOME"
DAGSTER_HOME_ENV = "DAGSTER_HOME"
TEMPLATE = Path(__file__).resolve().with_name("dagster.yaml")
"""Package data (``pyproject.toml``): without it a home would get Dagster's defaults — no run queue,
no per-pipeline pools, Dagster's own event storage (~3× the driver's CPU over 300 tables)."""
MARKER = ".tidemark-owned"
"""Written by Tidemark into a Dagster home it created; only such a home gets the template."""
MARKER_TEXT = ("This Dagster home was created by Tidemark, which rewrites its dagster.yaml from its\n"
               "template on every run. Delete this file to keep your own dagster.yaml.\n")


class HomeSource(StrEnum):
    TIDEMARK_ENV = "TIDEMARK_DAGSTER_HOME"
    DAGSTER_ENV = "DAGSTER_HOME"
    STATE_DIR = "the pipeline's state directory"


class HomeOwner(StrEnum):
    TIDEMARK = "tidemark"  # created by Tidemark (marker): dagster.yaml is the template
    USER = "user"  # the user's: used as it is, never written


@dataclass(frozen=True)
class DagsterHome:
    path: Path
    source: HomeSource
    owner: HomeOwner

    @property
    def config_file(self) -> Path:
        return self.path / "dagster.yaml"

    def describe(self) -> str:
        """One line: which instance, and whose settings."""
        if self.owner is HomeOwner.TIDEMARK:
            whose = "Tidemark's own home, dagster.yaml from Tidemark's template"
        elif self.config_file.is_file():
            whose = "the user's dagster.yaml, used as it is"
        else:
            whose = "no dagster.yaml: Dagster's defaults, nothing written"
        return f"Dagster instance: {self.path} (from {self.source.value}; {whose})"


def dagster_home_for(handles: list[PipelineHandle]) -> DagsterHome:
    """Where the instance is (see the module docstring) and who owns it; nothing is written."""
    if os.environ.get(HOME_ENV):
        path, source = Path(os.environ[HOME_ENV]).resolve(), HomeSource.TIDEMARK_ENV
    elif os.environ.get(DAGSTER_HOME_ENV):
        return DagsterHome(Path(os.environ[DAGSTER_HOME_ENV]).resolve(), HomeSource.DAGSTER_ENV, HomeOwner.USER)
    else:
        if not handles:
            raise ValueError("no pipeline given: name at least one pipeline file")
        path, source = handles[0].definition.state_dir / "dagster", HomeSource.STATE_DIR
    return DagsterHome(path, source, owner_of(path))


def owner_of(path: Path) -> HomeOwner:
    """Tidemark's when marked, or when there is no ``dagster.yaml`` yet (Tidemark will create and mark it)."""
    if (path / MARKER).is_file() or not (path / "dagster.yaml").is_file():
        return HomeOwner.TIDEMARK
    return HomeOwner.USER


def prepare_home(home: DagsterHome | Path) -> Path:
    """Make the instance usable and return its directory. A home Tidemark owns is created, marked
    and gets the template's ``dagster.yaml``; the user's is only checked to exist."""
    if isinstance(home, Path):
        home = DagsterHome(home.resolve(), HomeSource.TIDEMARK_ENV, owner_of(home))
    # Dagster's schema revisions read once in this process, whoever owns the home: nothing in its
    # files changes (orchestration/defs/alembic_cache.py)
    alembic_cache.install()
    if home.owner is HomeOwner.USER:
        if not home.path.is_dir():
            raise FileNotFoundError(f"{home.source.value} {home.path} is not a directory: create it "
                                    "(with your dagster.yaml) or unset the variable")
        return home.path
    home.path.mkdir(parents=True, exist_ok=True)
    marker = home.path / MARKER
    if not marker.is_file():
        marker.write_text(MARKER_TEXT)
    config = rendered_template(home.path)
    target = home.config_file
    if not target.is_file() or target.read_text() != config:
        target.write_text(config)
    relax_sqlite_sync(home.path)  # its SQLite files: WAL from the start, synchronous=NORMAL (sqlite_sync.py)
    return home.path


def rendered_template(path: Path) -> str:
    """The template's text for the home at ``path``: its event log's ``dagster_home`` written out
    (``env: DAGSTER_HOME`` in the template, for a copy used with plain ``dagster dev``), so that no
    process needs ``DAGSTER_HOME`` set to open it."""
    if not TEMPLATE.is_file():
        raise FileNotFoundError(
            f"Tidemark's Dagster template {TEMPLATE} is missing: this install of Tidemark is incomplete; "
            "reinstall it (pip install the project, which ships orchestration/cli/dagster.yaml)")
    config = TEMPLATE.read_text()
    return config.replace("    dagster_home:\n      env: DAGSTER_HOME\n", f"    dagster_home: {json.dumps(str(path))}\n")


def local_instance_note(home: Path, handles: list[PipelineHandle]) -> str | None:
    """A line for a pipeline whose state is shared (``tidemark.state.url`` on a database server) run
    against a Dagster instance kept in local files: its runs are guarded all the same (the leases are
    in the state), but another machine's runs are not in this instance, nor its in theirs."""
    shared = [h.slug for h in handles if (h.definition.pipeline.state_url is not None
                                          and not h.definition.pipeline.state_url.get_secret_value()
                                          .startswith("sqlite"))]
    if not shared or has_external_storage(home):
        return None
    return (f"note: the state of {', '.join(shared)} is on a database server (tidemark.state.url) but this Dagster "
            f"instance keeps its runs in local files under {home}: another machine's runs do not show in it; set "
            "DAGSTER_HOME to a directory whose dagster.yaml puts the storage on PostgreSQL (docs/deploy.md)")


def has_external_storage(home: Path) -> bool:
    """The home's ``dagster.yaml`` names its storage (PostgreSQL, MySQL, ...) instead of the
    default SQLite files under the home."""
    config = home / "dagster.yaml"
    if not config.is_file():
        return False
    try:
        data = yaml.safe_load(config.read_text()) or {}
    except yaml.YAMLError as exc:
        logger.warning("cannot read %s: %s", config, exc)
        return False
    return isinstance(data, dict) and any(k in data for k in ("storage", "run_storage"))
