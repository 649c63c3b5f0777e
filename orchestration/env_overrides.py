"""The environment variables that override a pipeline file's settings in a deployment, named in
one place: ``TIDEMARK_<PIPELINE>_<FIELD>`` (e.g. ``TIDEMARK_DEMO_STATE_URL``).

The Dagster resources read them as ``EnvVar`` fields (``orchestration/resources.py``);
``tidemark run`` reads the state store's before it imports Dagster
(``orchestration/spark_prestart.py``). No Dagster here, for that reason.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def env_prefix(definition: Any) -> str:
    """``TIDEMARK_<PIPELINE NAME>_``."""
    return f"TIDEMARK_{definition.name.upper()}_"


def state_location(definition: Any, environ: Mapping[str, str] | None = None) -> tuple[str | None, Path | None]:
    """The state store the pipeline's resource opens: a URL, or else a directory (one of them set).

    ``..._STATE_URL``, else ``..._STATE_DIR``, else the file's ``tidemark.state.url``, else its
    state directory — the order of ``StateStoreResource.open`` and ``StateStore.for_pipeline``.
    """
    env = os.environ if environ is None else environ
    prefix = env_prefix(definition)
    if env.get(prefix + "STATE_URL"):
        return env[prefix + "STATE_URL"], None
    if env.get(prefix + "STATE_DIR"):
        return None, Path(env[prefix + "STATE_DIR"])
    url = definition.pipeline.state_url
    if url:
        return url.get_secret_value(), None
    return None, Path(definition.state_dir)
