"""Tidemark's PySpark data sources: the snapshot chunk reader and the Doris writer, as Spark sees them.

The work they do lives in ``jobs/snapshot_source.py`` (a chunk's read) and ``jobs/doris_writer.py``
(a task's precommitted load, the driver's write); this module only wraps it in PySpark's
``DataSource`` classes. Kept apart so that a run whose snapshot never reaches Spark (the local
workers, or the CLI's own process) does not import PySpark at all: only ``jobs/spark.py``
imports this module, when it registers the sources on a session.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from cdc_core.instrumentation import faults
from cdc_core.model.schema import TableId
from cdc_core.state.keys import SPARK_RESULTS
from jobs.doris_writer import FORMAT as DORIS_FORMAT
from jobs.doris_writer import discard_sink, load_chunk, make_sink, open_results_store
from jobs.snapshot_source import (
    CHUNK,
    META,
    SEQ,
    arrow_schema_of,
    read_chunk,
    spark_schema,
    spark_schema_arrow,
)
from jobs.snapshot_source import FORMAT as SNAPSHOT_FORMAT
from jobs.specs import ChunkSpec, ReadSpec, WriteMode, WriterSpec

logger = logging.getLogger(__name__)


# -- the snapshot chunk source ----------------------------------------------------------------------


class ChunkPartition(InputPartition):
    def __init__(self, chunk: ChunkSpec):
        super().__init__(chunk.index)
        self.chunk = chunk


class SnapshotChunkReader(DataSourceReader):
    def __init__(self, spec: ReadSpec, password: str):
        self.spec = spec
        self.password = password

    def partitions(self) -> list[InputPartition]:
        return [ChunkPartition(c) for c in self.spec.chunks]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        spec, chunk = self.spec, partition.chunk  # type: ignore[attr-defined]
        data, meta = read_chunk(spec, self.password, chunk)
        target = spark_schema_arrow(arrow_schema_of(spec))
        seq = meta["sequence"]
        if data.num_rows:
            data = data.append_column(CHUNK, pa.array([chunk.index] * data.num_rows, pa.int32()))
            data = data.append_column(META, pa.nulls(data.num_rows, pa.string()))
            yield from data.cast(target).to_batches(max_chunksize=spec.batch_rows)
        marker = {f.name: [None] for f in target}
        marker.update({SEQ: [seq], CHUNK: [chunk.index], META: [json.dumps(meta)]})
        yield pa.RecordBatch.from_pydict(marker, schema=target)


class SnapshotChunkDataSource(DataSource):
    """``spark.read.format("tidemark_snapshot").option("spec", json).option("password", pw)``.

    ``spec``: ``ReadSpec.to_json()`` (``jobs/specs.py``). The password travels as its own option
    (Spark redacts options named like passwords in plans and logs).
    """

    @classmethod
    def name(cls) -> str:
        return SNAPSHOT_FORMAT

    def schema(self) -> StructType:
        return spark_schema(arrow_schema_of(ReadSpec.from_json(self.options["spec"])))

    def reader(self, schema: StructType) -> DataSourceReader:
        return SnapshotChunkReader(ReadSpec.from_json(self.options["spec"]), self.options.get("password", ""))


# -- the Doris sink -----------------------------------------------------------------------------------


class LoadMessage(WriterCommitMessage):
    """One task's outcome: its prepared transactions and any chunk bookkeeping it carried."""

    def __init__(self, committables: list[dict[str, Any]], chunks: list[dict[str, Any]], rows: int):
        self.committables = committables
        self.chunks = chunks
        self.rows = rows

    def to_dict(self) -> dict[str, Any]:
        return {"committables": self.committables, "chunks": self.chunks, "rows": self.rows}


def _task_context() -> tuple[int, int]:
    try:
        context = TaskContext.get()
        if context is not None:
            return context.partitionId(), context.attemptNumber()
    except Exception:  # noqa: BLE001 - outside a Spark task (tests calling write directly)
        pass
    return 0, 0


class DorisArrowWriter(DataSourceArrowWriter):
    def __init__(self, spec: WriterSpec, password: str):
        self.spec = spec
        self.password = password

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LoadMessage:
        spec = self.spec
        spec.adopt_faults()
        batches = [b for b in iterator if b.num_rows]
        if not batches:
            return LoadMessage([], [], 0)
        table = pa.Table.from_batches(batches)
        chunks: list[dict[str, Any]] = []
        if META in table.column_names:
            is_meta = pc.is_valid(table.column(META))
            chunks = [json.loads(m) for m in table.filter(is_meta).column(META).to_pylist()]
            table = table.filter(pc.invert(is_meta))
        table = table.drop_columns([c for c in (META, CHUNK) if c in table.column_names])

        partition, _attempt = _task_context()
        sink = make_sink(spec, self.password)
        committables: list[dict[str, Any]] = []
        try:
            if spec.mode is WriteMode.SNAPSHOT:
                if len(chunks) != 1:
                    raise RuntimeError(
                        f"a snapshot write task must carry exactly one chunk, got {len(chunks)}: "
                        "the DataFrame was repartitioned between the chunk source and the Doris writer"
                    )
                committables = load_chunk(sink, spec, chunks[0], table)
                faults.fault_point(
                    "snapshot.after_precommit",
                    table=spec.source_table,
                    chunk=chunks[0]["index"],
                    label=",".join(c["label"] for c in committables),
                )
            else:
                batch_id = f"{spec.source_table}:{spec.batch_id}:p{partition}"
                for target_text in spec.targets:
                    if table.num_rows:
                        committables.append(sink.load(TableId.parse(target_text), batch_id, table).to_dict())
        except BaseException:
            discard_sink(sink)
            raise
        logger.debug(
            "task %d precommitted %d row(s) of %s: %s",
            partition,
            table.num_rows,
            spec.source_table,
            [c["label"] for c in committables],
        )
        return LoadMessage(committables, chunks, table.num_rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        results = [m.to_dict() for m in messages if isinstance(m, LoadMessage)]
        store = open_results_store(self.spec.results)
        try:
            SPARK_RESULTS.key(self.spec.token).put(store, results)
        finally:
            store.close()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        committables = [c for m in messages if isinstance(m, LoadMessage) for c in m.committables]
        if not committables:
            return
        make_sink(self.spec, self.password).abort(committables)


class DorisDataSource(DataSource):
    """``df.write.format("tidemark_doris").option("spec", json).option("password", pw).mode("append").save()``.

    ``spec``: ``WriterSpec.to_json()`` (``jobs/specs.py``); the state URL, when the store has
    one, is the ``state_url`` option.
    """

    @classmethod
    def name(cls) -> str:
        return DORIS_FORMAT

    def schema(self) -> StructType:
        raise NotImplementedError("tidemark_doris is a sink; it cannot be read")

    def writer(self, schema: StructType, overwrite: bool) -> DorisArrowWriter:
        if overwrite:
            raise ValueError("tidemark_doris only appends (upserts by key); use mode('append')")
        spec = WriterSpec.from_json(self.options["spec"], self.options.get("state_url") or None)
        return DorisArrowWriter(spec, self.options.get("password", ""))
