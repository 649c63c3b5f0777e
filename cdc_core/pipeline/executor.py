"""The Spark-side work the service hands off, as a ``typing.Protocol``.

The exactly-once protocol needs neither Spark nor Dagster: it decides what to read, records what
was prepared and commits or aborts it. Reading many chunks in parallel and compacting a large
binlog batch are what Spark is for; ``jobs/spark_executor.py`` implements this protocol with Spark,
and the service receives it (with a lazy session, so a run that needs no Spark starts none).
Tests of the service's own logic can pass any object with these two methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cdc_core.config import PipelineDefinition
from cdc_core.doris.sink import DorisSink
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.pipeline.changes import ChangeRow

if TYPE_CHECKING:
    from cdc_core.pipeline.commit_window import CommitWindow


@dataclass(frozen=True)
class ChunkTask:
    """One chunk to read: its key range and the generation its load's label carries."""

    table_id: TableId
    index: int
    start: list[Any] | None
    end: list[Any] | None
    generation: int


@dataclass(frozen=True)
class ChunkOutcome:
    """What one chunk's task reports: rows, watermarks and the transactions it precommitted."""

    table_id: TableId
    index: int
    rows: int
    low_watermark: dict[str, Any]
    high_watermark: dict[str, Any]
    committables: tuple[dict[str, Any], ...]
    backfill_events: int
    duration_s: float


@dataclass(frozen=True)
class TableWork:
    """One table's chunks for the snapshot job, with the schema and chunk key they are read by."""

    schema: TableSchema
    key_columns: tuple[str, ...]
    tasks: tuple[ChunkTask, ...]
    # About how many rows these chunks hold (the plan's chunk size × chunks, at most the table's
    # approximate rows when planned); None: unknown. Decides whether Spark is worth starting.
    estimated_rows: int | None = None
    # The pipeline's offset that decides the epoch of the chunks' watermarks (PipelineContext.
    # epoch_reference): after a failover the chunks' rows must outrank what the stream wrote there.
    epoch_reference: BinlogOffset | None = None
    # The table's planned rows (the whole table, not only these chunks); None: unknown. A table
    # larger than ``tidemark.snapshot.in-process-rows`` goes to Spark in every run of its chunks, as
    # ``tidemark run``'s prestart decided from the whole snapshot (a run holds a slice of its chunks).
    table_rows: int | None = None


class PipelineExecutor(Protocol):
    """The Spark-side work of the pipeline service."""

    def run_snapshot(self, definition: PipelineDefinition, sink: Any, work: list[TableWork], *,
                     window: CommitWindow | None = None) -> list[ChunkOutcome]:
        """Read and precommit these chunks (nothing becomes visible); one outcome per chunk.

        ``window`` (a run of more chunks than Doris's running-transaction bound): begin no chunk's
        loads before ``window.acquire(table, index)`` has returned for it, and hand each chunk's
        outcome to ``window.finished`` as soon as it is done. The window commits finished chunks
        early to make room."""
        ...

    def load_binlog_changes(self, definition: PipelineDefinition, sink: DorisSink, targets: tuple[TableId, ...],
                            batch_id: str, rows: list[ChangeRow], schema: TableSchema) -> list[dict[str, Any]]:
        """Compact, transform and precommit one table's changes of a batch under ``sink``'s label
        prefix; returns the committables."""
        ...


class NoExecutor:
    """The executor of a service built without one: it says what was asked of it and why it
    cannot do it (a service that answers sensors and checks needs no Spark)."""

    def run_snapshot(self, definition: PipelineDefinition, sink: Any, work: list[TableWork], *,
                     window: CommitWindow | None = None) -> list[ChunkOutcome]:
        raise RuntimeError("this pipeline service has no executor: reading snapshot chunks needs Spark "
                           "(give the service jobs.spark_executor.SparkExecutor)")

    def load_binlog_changes(self, definition: PipelineDefinition, sink: DorisSink, targets: tuple[TableId, ...],
                            batch_id: str, rows: list[ChangeRow], schema: TableSchema) -> list[dict[str, Any]]:
        raise RuntimeError("this pipeline service has no executor: a large binlog batch or a table with a transform "
                           "is loaded with Spark (give the service jobs.spark_executor.SparkExecutor)")
