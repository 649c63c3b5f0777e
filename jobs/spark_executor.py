"""The pipeline service's Spark-side work (``cdc_core.pipeline.executor.PipelineExecutor``) on Spark.

The executor holds no session of its own: it asks its ``session`` provider when a step first
needs Spark — under Dagster the PySpark resource's lazy session, so a run that needs no Spark
(a small binlog batch, a sensor tick, a check) starts none, and every step of a process shares
the one session the resource owns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.pipeline.changes import ChangeRow
from cdc_core.pipeline.commit_window import CommitWindow
from cdc_core.pipeline.executor import ChunkOutcome, TableWork
from cdc_core.pipeline.service import PipelineService
from cdc_core.state import StateStore
from jobs.binlog_job import load_with_spark
from jobs.snapshot_job import local_worker_count, run_snapshot, runs_in_process
from jobs.spark import build_session, prepare_session

logger = logging.getLogger(__name__)


class SparkExecutor:
    """Runs the snapshot job and large binlog loads on the session ``session()`` returns."""

    def __init__(self, session: Callable[[], Any]):
        self._provider = session

    @classmethod
    def for_pipeline(cls, definition: PipelineDefinition) -> SparkExecutor:
        """An executor that builds the pipeline's session itself on first use (tests, benchmarks)."""
        return cls(lambda: build_session(definition))

    def session(self) -> Any:
        return prepare_session(self._provider())

    def run_snapshot(self, definition: PipelineDefinition, sink: Any, work: list[TableWork], *,
                     window: CommitWindow | None = None) -> list[ChunkOutcome]:
        if not work:
            return []
        chunks = sum(len(w.tasks) for w in work)
        if runs_in_process(definition, work):
            # Small enough that starting Spark would cost more than the work (the option's comment).
            workers = local_worker_count(definition, work)
            logger.info("snapshot: %d chunk(s) of %d table(s) %s (no Spark)", chunks, len(work),
                        "in this process" if workers <= 1 else f"by {workers} local worker processes")
            return run_snapshot(None, definition, sink, work, local_workers=workers, window=window)
        logger.info("snapshot job: %d chunk(s) of %d table(s) on Spark", chunks, len(work))
        return run_snapshot(self.session(), definition, sink, work, window=window)

    def load_binlog_changes(self, definition: PipelineDefinition, sink: DorisSink, targets: tuple[TableId, ...],
                            batch_id: str, rows: list[ChangeRow], schema: TableSchema) -> list[dict[str, Any]]:
        return load_with_spark(self.session(), definition, sink, targets, batch_id, rows, schema)


def spark_service(definition: PipelineDefinition, store: StateStore | None = None) -> PipelineService:
    """A pipeline service whose Spark work builds the pipeline's session on first use — for
    tests, benchmarks and tools that run without Dagster (under Dagster the resource owns it)."""
    return PipelineService(definition, store, executor=SparkExecutor.for_pipeline(definition))
