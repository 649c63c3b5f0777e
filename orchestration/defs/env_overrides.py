"""The environment variables that override a pipeline file's settings in a deployment, named in
one place: ``TIDEMARK_<PIPELINE>_<FIELD>`` (e.g. ``TIDEMARK_DEMO_STATE_URL``).

The Dagster resources read them as ``EnvVar`` fields (``orchestration/defs/resources.py``);
``tidemark run`` reads the state store's before it imports Dagster
(``orchestration/cli/spark_prestart.py``). No Dagster here, for that reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cdc_core.state import StateStore


def env_prefix(definition: Any) -> str:
    """``TIDEMARK_<PIPELINE NAME>_``."""
    return f"TIDEMARK_{definition.name.upper()}_"


def state_location(definition: Any, environ: Mapping[str, str] | None = None) -> tuple[str | None, Path | None]:
    """The state store the pipeline's resource opens (``StateStore.location``, with
    ``..._STATE_URL`` and ``..._STATE_DIR`` from the environment as its overrides)."""
    env = os.environ if environ is None else environ
    prefix = env_prefix(definition)
    return StateStore.location(definition, url=env.get(prefix + "STATE_URL") or None,
                               state_dir=env.get(prefix + "STATE_DIR") or None)
