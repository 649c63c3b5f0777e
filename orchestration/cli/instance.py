"""The Dagster instance Tidemark uses: ``DAGSTER_HOME`` under the pipeline's state directory.

``tidemark run`` and ``tidemark dev`` share it, so the runs of ``tidemark run --once`` (and the
chunk partitions it registered) show up in the UI that ``tidemark dev`` opens afterwards.
``TIDEMARK_DAGSTER_HOME`` overrides the place; the instance settings come from the repository's
``dagster.yaml`` (telemetry and nux off, the queued run coordinator and its limits).
"""

from __future__ import annotations

import os
from pathlib import Path

from orchestration.defs.pipelines import PipelineHandle

HOME_ENV = "TIDEMARK_DAGSTER_HOME"
TEMPLATE = Path(__file__).resolve().parents[2] / "dagster.yaml"
FALLBACK_CONFIG = "telemetry:\n  enabled: false\nnux:\n  enabled: false\n"


def dagster_home_for(handles: list[PipelineHandle]) -> Path:
    """``$TIDEMARK_DAGSTER_HOME``, else ``<first pipeline's state dir>/dagster``."""
    if os.environ.get(HOME_ENV):
        return Path(os.environ[HOME_ENV]).resolve()
    if not handles:
        raise ValueError("no pipeline given: name at least one pipeline file")
    return handles[0].definition.state_dir / "dagster"


def prepare_home(home: Path) -> Path:
    """Create the home and (re)write its dagster.yaml from the repository's template."""
    home.mkdir(parents=True, exist_ok=True)
    config = TEMPLATE.read_text() if TEMPLATE.is_file() else FALLBACK_CONFIG
    target = home / "dagster.yaml"
    if not target.is_file() or target.read_text() != config:
        target.write_text(config)
    return home
