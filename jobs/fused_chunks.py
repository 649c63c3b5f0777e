"""Snapshot chunks read and loaded in the same Spark task: rows never enter the JVM.

A table without a transform needs nothing from Spark SQL between the chunk read and the Doris
load, and moving its rows through the JVM is the dearest part of the DataFrame path: a Python
data source hands its Arrow batches to the JVM, which turns them into rows, and the Python
writer gets them back as Arrow. On this 2-core machine that round trip cost ~15 s per million
rows of the bench table (``bench/snapshot_spark.py``), against ~1.2 s for the chunk reads and
~4 s for the stream loads.

So, by default, such tables' chunks run as one Spark job over the chunk positions (an RDD, or
``mapInArrow`` on Spark Connect: :func:`run_fused_many`), one job for all such tables of a run. Each task
takes a contiguous run of up to :data:`MAX_CHUNKS_PER_TASK` chunks, and there are as few tasks
as that allows (:func:`task_count`), because a Spark task with a Python function costs ~0.1 s
of its own here (~45 ms of JVM and as much of Python worker CPU, measured with trivial tasks),
about as much as reading and loading two 8096-row chunks. For each chunk the task does what
the ``tidemark_snapshot`` source and the ``tidemark_doris`` writer do —
:func:`jobs.snapshot_source.read_chunk`, then :func:`jobs.doris_writer.load_chunk` — in one
Python worker, and returns only its message: the prepared transactions and the chunk's rows and
watermarks. Spark still schedules the tasks, runs ``pipeline.parallelism`` of them at a time,
retries a failed one and runs them on any cluster. ``tidemark.spark.fused-chunk-tasks: false``
sends every table through the DataFrame (source → writer, one task per chunk) instead; a table
with a transform always takes that path.

Failures: a retried task reads and loads all its chunks again, each load replacing what an
earlier attempt left under the chunk's label (:func:`load_chunk`). When the job fails as
a whole, the driver waits for its other tasks to stop, then aborts every chunk label of the
job — what the writer's ``abort`` does for the DataFrame path.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from cdc_core.config.durations import parse_duration
from cdc_core.doris.arrow_layout import arrow_ready, arrow_types
from cdc_core.doris.labels import snapshot_batch_id
from cdc_core.doris.table_creation import DorisTable
from cdc_core.instrumentation import faults
from cdc_core.model.schema import TableId
from jobs.doris_writer import discard_sink, load_chunk, make_sink
from jobs.snapshot_source import forget_watermarks, read_chunk
from jobs.spark import spark_context
from jobs.specs import ReadSpec, WriterSpec

logger = logging.getLogger(__name__)

MESSAGE_SCHEMA = "message string"
CONNECT_STOP_GRACE_S = 30.0
"""Spark Connect: how long after a failure the driver waits before aborting the job's loads."""
MAX_CHUNKS_PER_TASK = 64
"""Chunks per task at the most: long runs keep the per-task cost a few per cent of the chunks'
work, and a retried task redoes at most this many chunks (a few seconds of work here)."""


def task_count(chunks: int, parallelism: int) -> int:
    """The fewest tasks for a table's chunks with at most :data:`MAX_CHUNKS_PER_TASK` chunks each,
    rounded up to a multiple of ``parallelism`` so that every slot gets as many (so a task
    holds more than half of that many once there are more than ``parallelism`` × that many)."""
    if chunks <= 0:
        return 0
    parallelism = max(1, parallelism)
    per_slot = max(1, -(-chunks // (parallelism * MAX_CHUNKS_PER_TASK)))
    return min(chunks, parallelism * per_slot)


def chunk_messages(read_spec: ReadSpec, source_password: str, write_spec: WriterSpec,
                    sink_password: str) -> Callable[[Iterable[int]], Iterator[str]]:
    """The function each task runs: chunk positions in, one JSON message per chunk out."""
    chunks = read_spec.chunks

    def run(positions: Iterable[int]) -> Iterator[str]:
        write_spec.adopt_faults()
        for position in positions:
            chunk = chunks[position]
            sink = make_sink(write_spec, sink_password)
            table, meta = read_chunk(read_spec, source_password, chunk, native=arrow_loads(sink, write_spec))
            try:
                committables = load_chunk(sink, write_spec, meta, table)
                faults.fault_point("snapshot.after_precommit", table=write_spec.source_table,
                                   chunk=chunk.index, label=",".join(c["label"] for c in committables))
            except BaseException:
                forget_watermarks()
                discard_sink(sink)
                raise
            yield json.dumps({"committables": committables, "chunks": [meta], "rows": table.num_rows})

    return run


def arrow_loads(sink: Any, write_spec: WriterSpec) -> bool:
    """Whether every target of the chunk loads it as Arrow with every column typed (the pipeline's
    default format on Doris 2.1 or later, and no column Tidemark sends as JSON: ``arrow_layout.py``)
    and none is a keyless table's exact form (whose rows' identity hashes the values as text:
    ``row_identity.py``). Then the chunk's decimals, dates and datetimes need not become text to be
    parsed back into the same Arrow types by the load (``read_chunk``'s ``native``). The layouts
    come from the driver (``WriterSpec.layouts``): no request to Doris."""
    if sink.loader.explicit_format or not sink.loads_arrow or not write_spec.targets:
        return False
    for target_text in write_spec.targets:
        layout = write_spec.layouts.get(target_text)
        if layout is None:
            return False
        table = DorisTable.from_dict(layout)
        if table.row_identity or not arrow_ready(arrow_types(table.column_types)):
            return False
    return True


def _many_messages(tables: Sequence[tuple[ReadSpec, WriterSpec]], positions: Sequence[tuple[int, int]],
                   source_password: str, sink_password: str) -> Callable[[Iterable[int]], Iterator[str]]:
    """:func:`chunk_messages` over many tables: indexes into ``positions`` (a table's place in
    ``tables``, a chunk's in its read spec) in, one message per chunk out, naming its table's place."""
    per_table = [chunk_messages(read_spec, source_password, write_spec, sink_password)
                 for read_spec, write_spec in tables]

    def run(indexes: Iterable[int]) -> Iterator[str]:
        for index in indexes:
            t, position = positions[index]
            for message in per_table[t]([position]):
                yield json.dumps({"table": t, **json.loads(message)})

    return run


def _arrow_task(messages: Callable[[Iterable[int]], Iterator[str]],
                ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """``messages`` as a ``mapInArrow`` function (Spark Connect, which has no RDDs)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for message in messages(batch.column(0).to_pylist()):
                yield pa.RecordBatch.from_pydict({"message": [message]})

    return run


def run_fused(spark: Any, read_spec: ReadSpec, source_password: str, write_spec: WriterSpec,
              sink_password: str, driver_sink: Any, parallelism: int) -> list[dict[str, Any]]:
    """One Spark job over ``read_spec.chunks``; returns one message per chunk (:func:`run_fused_many`
    of one table)."""
    return run_fused_many(spark, [(read_spec, write_spec)], source_password, sink_password, driver_sink,
                          parallelism)[0]


def run_fused_many(spark: Any, tables: Sequence[tuple[ReadSpec, WriterSpec]], source_password: str,
                   sink_password: str, driver_sink: Any, parallelism: int) -> list[list[dict[str, Any]]]:
    """One Spark job over the chunks of all ``tables``; returns each table's messages, one per chunk.

    Many small tables (a whole database of them) cost one job, not one each: a Spark job of its
    own per table cost ~0.1-0.3 s of scheduling and task start here whatever its rows, which made
    300 tables of one chunk each as dear as millions of rows in one table. The chunks of all the
    tables, in order, are cut into as few tasks as :func:`task_count` allows, each a contiguous run.

    With a SparkContext (local mode, a cluster) the job is an RDD of chunk positions: the first
    DataFrame job of a session costs ~4 s more here (SQL planning, code generation, Arrow) for
    nothing the chunks need. Spark Connect has no RDDs, so there it is ``mapInArrow`` over
    ``spark.range``. Either way each task holds a contiguous run of positions.

    On failure, once the job's other tasks have stopped (:func:`stop_job`), every chunk label of
    the job is aborted in every target before the error propagates, so nothing the job prepared
    is left behind.
    """
    positions = [(t, p) for t, (read_spec, _) in enumerate(tables) for p in range(len(read_spec.chunks))]
    out: list[list[dict[str, Any]]] = [[] for _ in tables]
    count = len(positions)
    if count == 0:
        return out
    tasks = task_count(count, parallelism)
    messages = _many_messages(tables, positions, source_password, sink_password)
    group = f"tidemark-snapshot-{uuid.uuid4().hex}"
    context = spark_context(spark)
    names = tables[0][0].table_id + (f" and {len(tables) - 1} more table(s)" if len(tables) > 1 else "")
    if context is not None:
        context.setJobGroup(group, f"snapshot of {names}", interruptOnCancel=True)
    try:
        if context is not None:
            collected = context.parallelize(range(count), tasks).mapPartitions(messages).collect()
        else:
            job = spark.range(0, count, 1, tasks).mapInArrow(_arrow_task(messages), MESSAGE_SCHEMA)
            collected = [row["message"] for row in job.collect()]
    except BaseException:
        stop_job(spark, context, group)
        for read_spec, write_spec in tables:
            abort_chunk_labels(driver_sink, write_spec, [c.index for c in read_spec.chunks])
        raise
    finally:
        if context is not None:
            context.setLocalProperty("spark.jobGroup.id", None)
    for text in collected:
        message = json.loads(text)
        out[message.pop("table")].append(message)
    return out


def run_in_process(read_spec: ReadSpec, source_password: str, write_spec: WriterSpec,
                   sink_password: str, driver_sink: Any) -> list[dict[str, Any]]:
    """The same work as :func:`run_fused`, in this process, without Spark (a small snapshot run):
    the task function over every chunk position; on failure every chunk label is aborted."""
    count = len(read_spec.chunks)
    if count == 0:
        return []
    try:
        collected = list(chunk_messages(read_spec, source_password, write_spec, sink_password)(range(count)))
    except BaseException:
        abort_chunk_labels(driver_sink, write_spec, [c.index for c in read_spec.chunks])
        raise
    return [json.loads(m) for m in collected]


def stop_job(spark: Any, context: Any, group: str, timeout_s: float = 120.0) -> None:
    """Cancel a failed job's remaining tasks and wait until none runs.

    When one task has failed for good, the others may still be loading: a load precommitted
    after the driver's aborts would linger. A cancelled task ends when its executor thread does;
    its Python worker is killed ``spark.python.task.killTimeout`` later (2 s by default), so the
    wait ends that much after the last task. Spark Connect shows no task state: there the wait
    is that grace plus the time a chunk may take (``stop_grace_s``).
    """
    kill_timeout = 2.0
    with contextlib.suppress(Exception):  # an unreadable setting keeps the default
        kill_timeout = parse_duration(spark.conf.get("spark.python.task.killTimeout", "2s"))
    if context is None:
        time.sleep(kill_timeout + CONNECT_STOP_GRACE_S)
        return
    context.cancelJobGroup(group)
    tracker = context.statusTracker()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stages = [s for j in tracker.getJobIdsForGroup(group) if (info := tracker.getJobInfo(j)) is not None
                  for s in info.stageIds]
        if not any((st := tracker.getStageInfo(s)) is not None and st.numActiveTasks > 0 for s in stages):
            break
        time.sleep(0.2)
    else:
        logger.warning("tasks of the failed snapshot job %s still run after %.0f s; aborting its loads anyway",
                    group, timeout_s)
    time.sleep(kill_timeout + 0.5)


def abort_chunk_labels(sink: Any, write_spec: WriterSpec, indexes: list[int]) -> None:
    """Abort whatever the chunks' loads left prepared, in every target (the sink's recovery
    probe: unknown and aborted labels are fine).

    Labels that cannot be aborted now stay for the runner's recovery, which aborts prepared
    loads of chunks that were not recorded as done."""
    probes = [(TableId.parse(target), snapshot_batch_id(write_spec.source_table, index, write_spec.generation(index)))
              for index in indexes for target in write_spec.targets]
    try:
        sink.recover(probe=probes)
    except Exception as exc:  # noqa: BLE001 - the job's error is the one to raise
        logger.warning("could not abort the loads of the failed snapshot job of %s (recovery will): %s",
                    write_spec.source_table, exc)
