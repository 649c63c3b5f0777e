from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import dagster as dg
import pytest

from orchestration.definitions import build_definitions
from orchestration.defs.pipelines import PipelineHandle
from tests.orchestration.fakes import RUNNERS, RecordingRunner, recording_resource, write_pipeline

warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)


@dataclass
class Harness:
    handle: PipelineHandle
    defs: dg.Definitions
    instance: dg.DagsterInstance

    @property
    def runner(self) -> RecordingRunner:
        resource = self.defs.resources[self.handle.resource_key]
        return resource.service()  # the shared double

    def job(self, name: str):
        return self.defs.resolve_job_def(name)

    def run_splits(self):
        return self.job(self.handle.splits_job_name).execute_in_process(instance=self.instance)

    def run_chunks(self, start: str, end: str, raise_on_error: bool = True):
        return self.job(self.handle.snapshot_job_name).execute_in_process(
            instance=self.instance, raise_on_error=raise_on_error,
            tags={"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end},
        )

    def run_binlog(self, raise_on_error: bool = True, tags: dict[str, str] | None = None):
        return self.job(self.handle.binlog_job_name).execute_in_process(instance=self.instance,
                                                                       raise_on_error=raise_on_error, tags=tags)


@pytest.fixture(scope="session")
def dagster_instance():
    """One instance for the unit tests: each test has its own pipeline name, hence its own
    partitions and asset keys (creating an instance costs seconds)."""
    with dg.instance_for_test() as instance:
        yield instance


_names = itertools.count()


@pytest.fixture
def harness(tmp_path, dagster_instance):
    RUNNERS.clear()
    handle = PipelineHandle.load(write_pipeline(tmp_path, name=f"shop{next(_names)}"))
    defs = build_definitions([handle], resources={handle.slug: recording_resource(handle)})
    yield Harness(handle, defs, dagster_instance)
    for runner in RUNNERS.values():
        runner.store.close()
    RUNNERS.clear()
