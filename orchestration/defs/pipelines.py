"""Which pipeline files the Dagster code location serves, and the Dagster names each one gets.

``TIDEMARK_PIPELINES`` lists files or glob patterns separated by the path separator (``:``) or
commas; without it the code location serves ``pipelines/*.yaml`` under the working directory.
Every Dagster name derived from a pipeline is built here, so assets, jobs, sensors, the
dagster.yaml limits and the CLI agree on them.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass
from pathlib import Path

from dagster import AssetCheckKey, AssetKey

from cdc_core.config import PipelineDefinition, load_pipeline

PIPELINES_ENV = "TIDEMARK_PIPELINES"
DEFAULT_PATTERN = "pipelines/*.yaml"

# Run tags every run of a pipeline carries when launched by Tidemark (sensor, schedule, CLI).
PIPELINE_TAG = "tidemark/pipeline"
# binlog_stream and schema_change runs carry this tag; dagster.yaml limits it to one per value.
STREAM_TAG = "tidemark/stream"
# A run tag overriding the pipeline's ``tidemark.binlog.run-seconds`` for one binlog_stream run
# (``tidemark run --once`` sets 0: one batch per run, each up to the target it follows).
BINLOG_RUN_SECONDS_TAG = "tidemark/binlog_run_seconds"


def pipeline_paths(spec: str | None = None, cwd: Path | None = None) -> list[Path]:
    """The pipeline files named by ``spec`` (default: ``$TIDEMARK_PIPELINES``, else ``pipelines/*.yaml``)."""
    spec = spec if spec is not None else os.environ.get(PIPELINES_ENV) or DEFAULT_PATTERN
    base = Path(cwd or Path.cwd())
    paths: list[Path] = []
    for item in (p.strip() for p in re.split(rf"[{re.escape(os.pathsep)},]", spec)):
        if not item:
            continue
        pattern = item if os.path.isabs(item) else str(base / item)
        if glob.has_magic(pattern):
            matches = sorted(Path(m) for m in glob.glob(pattern))
        else:
            if not Path(pattern).is_file():
                raise FileNotFoundError(
                    f"pipeline file {item} not found (from {PIPELINES_ENV}={spec!r}; working directory {base})"
                )
            matches = [Path(pattern)]
        paths.extend(m.resolve() for m in matches if m.resolve() not in paths)
    return paths


@dataclass(frozen=True)
class PipelineHandle:
    """A loaded pipeline and the names of its Dagster objects (asset key prefix = its name)."""

    path: Path
    definition: PipelineDefinition

    @classmethod
    def load(cls, path: Path | str) -> PipelineHandle:
        path = Path(path).resolve()
        return cls(path=path, definition=load_pipeline(path))

    @property
    def slug(self) -> str:
        return self.definition.name

    # -- assets and checks ------------------------------------------------------------------

    def asset_key(self, name: str) -> AssetKey:
        return AssetKey([self.slug, name])

    @property
    def splits_key(self) -> AssetKey:
        return self.asset_key("snapshot_splits")

    @property
    def chunks_key(self) -> AssetKey:
        return self.asset_key("snapshot_chunks")

    @property
    def binlog_key(self) -> AssetKey:
        return self.asset_key("binlog_stream")

    @property
    def group_name(self) -> str:
        """The Dagster asset group of the pipeline's own assets (snapshot_splits, snapshot_chunks,
        binlog_stream)."""
        return self.slug

    def database_group_name(self, database: str) -> str:
        """The asset group of the Doris tables the pipeline loads into ``database``:
        ``<pipeline>__<database>``, so the asset graph shows one box per database (collapsed until
        opened) beside the pipeline's, and two pipelines writing databases of one name never share a
        group. Not a nested group (``<pipeline>/<database>``, which Dagster reads since 1.13.9): the UI
        of 1.13 opens a nested group's own page (Catalog, an asset's group tag) as an empty graph.
        Dagster wants ``[A-Za-z0-9_]+``: any other character of the database name becomes ``_``."""
        segment = re.sub(r"[^A-Za-z0-9_]+", "_", database).strip("_") or "database"
        return f"{self.group_name}__{segment}"

    def check_key(self, asset: AssetKey, name: str) -> AssetCheckKey:
        return AssetCheckKey(asset, name)

    @property
    def partitions_name(self) -> str:
        """The dynamic partitions definition holding one key per snapshot chunk."""
        return f"{self.slug}_chunks"

    # -- resources, pools, jobs, automation -------------------------------------------------

    @property
    def resource_key(self) -> str:
        return f"tidemark_{self.slug}"

    @property
    def pool(self) -> str:
        """Every asset that writes to this pipeline's Doris tables or state takes this pool
        (dagster.yaml: one run at a time per pool), so runs of one pipeline never overlap."""
        return f"tidemark_{self.slug}"

    @property
    def snapshot_job_name(self) -> str:
        return f"{self.slug}_snapshot_job"

    @property
    def splits_job_name(self) -> str:
        return f"{self.slug}_splits_job"

    @property
    def binlog_job_name(self) -> str:
        return f"{self.slug}_binlog_job"

    @property
    def verify_job_name(self) -> str:
        return f"{self.slug}_verify_job"

    @property
    def sensor_name(self) -> str:
        return f"{self.slug}_binlog_sensor"

    @property
    def schedule_name(self) -> str:
        return f"{self.slug}_incremental_schedule"

    @property
    def owns_asset_prefix(self) -> tuple[str]:
        return (self.slug,)

    def run_tags(self, stream: bool = False) -> dict[str, str]:
        tags = {PIPELINE_TAG: self.slug}
        if stream:
            tags[STREAM_TAG] = self.slug
        return tags


def load_handles(paths: list[Path]) -> list[PipelineHandle]:
    handles = [PipelineHandle.load(p) for p in paths]
    seen: dict[str, Path] = {}
    for handle in handles:
        if handle.slug in seen:
            raise ValueError(
                f"pipelines {seen[handle.slug]} and {handle.path} are both named '{handle.slug}'; "
                "give one of them another pipeline.name (the name is the asset key prefix and the state directory)"
            )
        seen[handle.slug] = handle.path
    return handles
