"""A PySpark data sink for Doris: each task precommits its rows with a two-phase-commit stream load.

Nothing a task loads is visible: every load is precommitted, and the prepared transactions go
back as the task's commit message. When every task has succeeded, Spark calls ``commit`` on
the driver side, which does *not* commit them in Doris: it hands them to the caller through
the pipeline's state store (``cdc_core/state/keys.py:SPARK_RESULTS``, by the job's token). The
orchestration commits after the materialization succeeds. When the job fails, ``abort`` aborts
what the successful tasks prepared.

Retries are safe by construction. Labels are deterministic per (target table, batch), and:

* a **snapshot chunk** may read different rows on a retry (a later high watermark), so its
  load aborts whatever an earlier attempt left under its label and loads afresh (``fresh``);
* a **binlog batch** is the same events on a retry, so an earlier attempt's precommitted load
  under the same label is reused as it is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import TaskContext
from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from cdc_core.config import PipelineDefinition
from cdc_core.doris.labels import snapshot_batch_id
from cdc_core.doris.sink import DorisSink
from cdc_core.doris.table_creation import DorisTable
from cdc_core.instrumentation import faults
from cdc_core.model.schema import TableId
from cdc_core.state import StateStore
from cdc_core.state.keys import SPARK_RESULTS
from jobs.snapshot_source import CHUNK, META
from jobs.specs import ResultsSpec, WriteMode, WriterSpec

logger = logging.getLogger(__name__)

FORMAT = "tidemark_doris"


class LoadMessage(WriterCommitMessage):
    """One task's outcome: its prepared transactions and any chunk bookkeeping it carried."""

    def __init__(self, committables: list[dict[str, Any]], chunks: list[dict[str, Any]], rows: int):
        self.committables = committables
        self.chunks = chunks
        self.rows = rows

    def to_dict(self) -> dict[str, Any]:
        return {"committables": self.committables, "chunks": self.chunks, "rows": self.rows}


# Python workers are reused across tasks: keep one sink (HTTP session, table layouts) per worker.
_SINKS: dict[str, DorisSink] = {}


def make_sink(spec: WriterSpec, password: str) -> DorisSink:
    """The worker's ``DorisSink`` for this job (``SinkSpec.build``: the driver's factory, the
    driver's label prefix); nothing secret in the spec."""

    cache_key = json.dumps([spec.sink.to_dict(), spec.token], sort_keys=True)
    sink = _SINKS.get(cache_key)
    if sink is None:
        sink = spec.sink.build(password)
        for stale in _SINKS.values():
            stale.close()
        _SINKS.clear()
        _SINKS[cache_key] = sink
    return sink


def discard_sink(sink: DorisSink) -> None:
    """After a failed load: the next task of this worker starts with a fresh sink."""
    _SINKS.clear()
    sink.close()


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
                faults.fault_point("snapshot.after_precommit", table=spec.source_table, chunk=chunks[0]["index"],
                                   label=",".join(c["label"] for c in committables))
            else:
                batch_id = f"{spec.source_table}:{spec.batch_id}:p{partition}"
                for target_text in spec.targets:
                    if table.num_rows:
                        committables.append(sink.load(TableId.parse(target_text), batch_id, table).to_dict())
        except BaseException:
            discard_sink(sink)
            raise
        logger.debug("task %d precommitted %d row(s) of %s: %s", partition, table.num_rows, spec.source_table,
                     [c["label"] for c in committables])
        return LoadMessage(committables, chunks, table.num_rows)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        results = [m.to_dict() for m in messages if isinstance(m, LoadMessage)]
        store = _open_store(self.spec.results)
        try:
            SPARK_RESULTS.key(self.spec.token).put(store, results)
        finally:
            store.close()

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        committables = [c for m in messages if isinstance(m, LoadMessage) for c in m.committables]
        if not committables:
            return
        make_sink(self.spec, self.password).abort(committables)


def load_chunk(sink: DorisSink, spec: WriterSpec, chunk: dict[str, Any], table: pa.Table) -> list[dict[str, Any]]:
    """Precommit one snapshot chunk into every target; returns the prepared transactions.

    An earlier attempt may have read the chunk at another watermark: whatever it left under the
    label is aborted, never reused (``fresh``). An empty chunk loads nothing, so it aborts such a
    leftover itself.
    """
    batch_id = snapshot_batch_id(spec.source_table, chunk["index"], spec.generation(chunk["index"]))
    committables = []
    for target_text in spec.targets:
        target = TableId.parse(target_text)
        layout = spec.layouts.get(target_text)
        if layout is not None:
            sink.remember(target, DorisTable.from_dict(layout))
        if table.num_rows:
            committables.append(sink.load(target, batch_id, table, fresh=True,
                                          source=TableId.parse(spec.source_table)).to_dict())
        else:
            sink.committer.abort_label(target.database, sink.label(target, batch_id))
    return committables


def _open_store(results: ResultsSpec) -> StateStore:
    return StateStore.open(results.state_dir, results.state_url)


# -- driver side --------------------------------------------------------------------------------


def write_to_doris(df: Any, definition: PipelineDefinition, spec: WriterSpec) -> list[dict[str, Any]]:
    """Run the Spark write of ``df`` into Doris and return the tasks' messages (precommitted loads
    and chunk bookkeeping), taken back out of the state store."""
    # The state URL may carry a password: like the sink's password it travels as an option of its
    # own, which Spark redacts in plans and logs (``spark.sql.redaction.options.regex``: url), and
    # never inside the ``spec`` JSON (``WriterSpec.to_json``), which Spark shows as it is.
    (
        df.write.format(FORMAT)
        .option("spec", spec.to_json())
        .option("password", definition.sink.password.get_secret_value())
        .option("state_url", spec.results.state_url or "")
        .mode("append")
        .save()
    )
    store = _open_store(spec.results)
    try:
        with store.transaction() as tx:
            results = SPARK_RESULTS.key(spec.token)
            messages = results.get_or(tx, [])
            results.delete(tx)
    finally:
        store.close()
    return messages


class DorisDataSource(DataSource):
    """``df.write.format("tidemark_doris").option("spec", json).option("password", pw).mode("append").save()``.

    ``spec``: ``WriterSpec.to_json()`` (``jobs/specs.py``); the state URL, when the store has
    one, is the ``state_url`` option.
    """

    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> StructType:
        raise NotImplementedError("tidemark_doris is a sink; it cannot be read")

    def writer(self, schema: StructType, overwrite: bool) -> DorisArrowWriter:
        if overwrite:
            raise ValueError("tidemark_doris only appends (upserts by key); use mode('append')")
        spec = WriterSpec.from_json(self.options["spec"], self.options.get("state_url") or None)
        return DorisArrowWriter(spec, self.options.get("password", ""))
