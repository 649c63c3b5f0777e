"""A pipeline file over the local stack, written as a user would write it.

Tests and benchmarks need pipeline files that differ only in a few keys (the captured tables, the
server-id range, the chunk size, a behaviour); this builds the document once, so that a change to
the file format is made here and not in every test. The result goes through the same YAML loading
as a user's file (``cdc_core.config``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def pipeline_document(*, host: str, port: int, fe: str, tables: str, name: str, state_dir: Path | str,
                      server_id: str = "5500-5520", source: dict[str, Any] | None = None,
                      sink: dict[str, Any] | None = None, pipeline: dict[str, Any] | None = None,
                      transform: list[dict[str, Any]] | None = None, route: list[dict[str, Any]] | None = None,
                      parallelism: int | None = 2) -> dict[str, Any]:
    """The pipeline file's content: the devstack's ``cdc`` user, Doris's ``root``, one replica.

    ``source``, ``sink`` and ``pipeline`` add or override keys of their blocks; ``parallelism=None``
    leaves the key out (the default applies).
    """
    document: dict[str, Any] = {
        "source": {"type": "mysql", "hostname": host, "port": port, "username": "cdc", "password": "cdc",
                   "tables": tables, "server-id": server_id, "server-time-zone": "UTC", **(source or {})},
        "sink": {"type": "doris", "fenodes": fe, "username": "root", "password": "",
                 "table.create.properties.replication_num": 1, **(sink or {})},
        "pipeline": {"name": name, **({"parallelism": parallelism} if parallelism is not None else {}),
                     "tidemark.state.dir": str(state_dir), **(pipeline or {})},
    }
    if transform:
        document["transform"] = transform
    if route:
        document["route"] = route
    return document


def pipeline_yaml(**kwargs: Any) -> str:
    """``pipeline_document(**kwargs)`` as YAML text, keys in the order a user writes them."""
    return yaml.safe_dump(pipeline_document(**kwargs), sort_keys=False, allow_unicode=True)


def write_pipeline(path: Path, **kwargs: Any) -> Path:
    """Write ``pipeline_yaml(**kwargs)`` to ``path`` and return it."""
    path.write_text(pipeline_yaml(**kwargs), encoding="utf-8")
    return path
