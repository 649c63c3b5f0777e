"""The snapshot job: read and load a set of chunks in parallel on Spark.

One Spark job for every table without a transform: tasks that read their chunks and load them
(``jobs.fused_chunks``; without Spark, the local workers or this process); for a table with a
transform, a job of its own: chunk source (one partition per chunk) → transform → Doris writer,
run from driver threads beside the shared job so that ``pipeline.parallelism`` tasks stay busy. Nothing becomes
visible: each task precommits its chunk, and the per-chunk outcome (rows, watermarks, prepared
transactions) comes back to the caller to record and commit.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.errors import TableMismatchError
from cdc_core.doris.sink import DorisTables
from cdc_core.instrumentation import faults
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.pipeline.commit_window import CommitWindow
from cdc_core.pipeline.executor import ChunkOutcome, ChunkTask, TableWork
from cdc_core.pipeline.snapshot_estimate import fits_in_process, local_workers_for
from cdc_core.pipeline.txn_groups import txn_groups
from jobs.doris_writer import write_to_doris
from jobs.fused_chunks import run_fused, run_fused_many, run_in_process
from jobs.local_workers import run_local, run_local_many
from jobs.snapshot_source import BOOKKEEPING
from jobs.snapshot_source import FORMAT as SNAPSHOT_FORMAT
from jobs.spark import activate_in_thread
from jobs.specs import ChunkSpec, ReadSpec, SourceSpec, WriteMode, WriterSpec
from jobs.transforms import TableTransform, transform_for, transformed_schema

logger = logging.getLogger(__name__)


def target_schema(schema: TableSchema, transform: TableTransform | None, df: Any) -> TableSchema:
    """The schema Doris sees: the source's, or the projection's when a transform reshapes it."""
    if transform is None or transform.projection is None:
        if transform is not None and transform.primary_keys:
            return schema.with_columns(schema.columns, primary_key=transform.primary_keys)
        return schema
    return transformed_schema(schema, transform, list(df.schema.fields))


def loadable_schema(sink: Any, schema: TableSchema, targets: tuple[TableId, ...] | list[TableId],
                    known: DorisTables | None = None) -> TableSchema:
    """The source columns every existing target table can receive (``known``: the tables and
    columns one read of the run's databases found, ``DorisSink.doris_tables``; a target it does not
    cover is asked of Doris).

    A column added at the source while the snapshot runs reaches Doris only when the
    schema-change job carries its DDL over — which waits for the snapshot to finish. Chunks read
    meanwhile leave such columns out rather than fail; the job reads again every chunk whose
    high watermark lies past the DDL once Doris has the column (``SchemaChangeSteps.apply``).
    """
    names: set[str] | None = None
    for target in targets:
        if known is not None and target in known.absent:
            continue  # just seen missing: created from the whole schema
        if known is not None and target in known.columns:
            have = {c.lower() for c in known.columns[target]}
        else:
            try:
                table = sink.table(target, refresh=True)
            except TableMismatchError:
                continue  # not there yet: it is created from the whole schema
            have = {c.lower() for c in table.columns}
        names = have if names is None else names & have
    if names is None:
        return schema
    keep = [c for c in schema.columns if c.name.lower() in names]
    if len(keep) == len(schema.columns):
        return schema
    missing_keys = [k for k in schema.primary_key if k.lower() not in names]
    if missing_keys:
        raise RuntimeError(
            f"the Doris table(s) of {schema.table_id} lack its key column(s) {', '.join(missing_keys)}: the source's "
            "key changed after the Doris table was created; drop the Doris table and snapshot the table again"
        )
    left_out = [c.name for c in schema.columns if c.name.lower() not in names]
    logger.warning("%s: column(s) %s are not in Doris yet; the chunks read now leave them out and are read again "
                "when the schema change carries them over", schema.table_id, ", ".join(left_out))
    return schema.with_columns(keep)


@dataclass(frozen=True)
class _Prepared:
    """One table's job, ready to run: the schema Doris gets, its transform and its specs."""

    schema: TableSchema
    tasks: tuple[ChunkTask, ...]
    transform: TableTransform | None
    targets: tuple[TableId, ...]
    read_spec: ReadSpec
    write_spec: WriterSpec
    fused: bool  # read and loaded in the same task (jobs/fused_chunks.py), else through the DataFrame


def _prepare(spark: Any, definition: PipelineDefinition, sink: Any, schema: TableSchema,
             key_columns: tuple[str, ...], tasks: list[ChunkTask] | tuple[ChunkTask, ...],
             epoch_reference: BinlogOffset | None, known: DorisTables | None = None,
             job: str | None = None) -> _Prepared:
    """The driver's part before a table's chunks are read: the columns Doris can take and the
    specs; on the fused path, its Doris tables created (``known``: what one read of the run's
    databases found, ``DorisSink.doris_tables``; ``job``: the snapshot job's token, ``ReadSpec.job``)."""
    transform = transform_for(definition, schema.table_id)
    targets = tuple(sink.route(schema.table_id))
    if transform is None:
        schema = loadable_schema(sink, schema, targets, known)
    read_spec = ReadSpec(
        table_id=str(schema.table_id), schema=schema, source=SourceSpec.from_options(definition.source),
        chunks=tuple(ChunkSpec.from_task(t, key_columns) for t in tasks),
        faults=faults.forwarded(),  # a test's fault points reach the read tasks (cdc_core/faults.py)
        epoch_reference=None if epoch_reference is None else epoch_reference.to_dict(),
        job=job,
    )
    write_spec = WriterSpec.create(sink, definition, WriteMode.SNAPSHOT, str(schema.table_id),
                                   [str(t) for t in targets], generations={t.index: t.generation for t in tasks})
    fused = transform is None and definition.pipeline.spark_fused_chunk_tasks
    if fused:
        layouts = {str(target): sink.create_table(schema, target, absent=known is not None and target in known.absent)
                   .to_dict() for target in targets}
        write_spec = dataclasses.replace(write_spec, layouts=layouts)  # the tasks' sinks need not ask again
    return _Prepared(schema, tuple(tasks), transform, targets, read_spec, write_spec, fused)


def _outcomes(prepared: _Prepared, messages: list[dict[str, Any]], elapsed: float, *,
              whole: bool = True) -> list[ChunkOutcome]:
    """Each chunk's outcome from the job's messages; a chunk without one fails the run (``whole``:
    the messages are all the table's; else those of some of its chunks, as each is done)."""
    outcomes = []
    for message in messages:
        for chunk in message["chunks"]:
            outcomes.append(
                ChunkOutcome(
                    prepared.schema.table_id, chunk["index"], chunk["rows"], chunk["low_watermark"],
                    chunk["high_watermark"], tuple(message["committables"]), chunk.get("backfill_events", 0),
                    elapsed,
                )
            )
    missing = {t.index for t in prepared.tasks} - {o.index for o in outcomes}
    if missing and whole:
        raise RuntimeError(
            f"the snapshot job of {prepared.schema.table_id} finished without reporting chunk(s) {sorted(missing)}; "
            "their loads (if any) are left for recovery to abort"
        )
    return outcomes


def _run_prepared(spark: Any, definition: PipelineDefinition, sink: Any, prepared: _Prepared,
                  local_workers: int = 1) -> list[dict[str, Any]]:
    """One table's job on its own: fused (without Spark: in this process, or by the local workers),
    or the DataFrame path."""
    password = definition.source.password.get_secret_value()
    sink_password = definition.sink.password.get_secret_value()
    read_spec, write_spec = prepared.read_spec, prepared.write_spec
    if prepared.fused:
        if spark is None and local_workers > 1 and len(read_spec.chunks) > 1:
            return run_local(read_spec, password, write_spec, sink_password, sink, local_workers)
        if spark is None:
            return run_in_process(read_spec, password, write_spec, sink_password, sink)
        return run_fused(spark, read_spec, password, write_spec, sink_password, sink, definition.pipeline.parallelism)
    df = spark.read.format(SNAPSHOT_FORMAT).option("spec", read_spec.to_json()).option("password", password).load()
    if prepared.transform is not None:
        df = prepared.transform.apply(df, BOOKKEEPING)
    out_schema = target_schema(prepared.schema, prepared.transform, df)
    for target in prepared.targets:
        sink.create_table(out_schema, target)
    return write_to_doris(df, definition, write_spec)


def run_table(
    spark: Any,
    definition: PipelineDefinition,
    sink: Any,
    schema: TableSchema,
    key_columns: tuple[str, ...],
    tasks: list[ChunkTask] | tuple[ChunkTask, ...],
    epoch_reference: BinlogOffset | None = None,
    local_workers: int = 1,
) -> list[ChunkOutcome]:
    """One Spark job over one table's chunks (``spark`` None: without Spark, in this process when
    ``local_workers`` is 1, else by that many local worker processes, ``jobs/local_workers.py``);
    returns each chunk's outcome. ``epoch_reference``: the pipeline's offset that decides the epoch
    of the chunks' watermarks (``TableWork.epoch_reference``)."""
    if spark is not None:
        activate_in_thread(spark)
    started = time.monotonic()
    prepared = _prepare(spark, definition, sink, schema, key_columns, tasks, epoch_reference)
    messages = _run_prepared(spark, definition, sink, prepared, local_workers)
    return _outcomes(prepared, messages, time.monotonic() - started)


def runs_in_process(definition: PipelineDefinition, work: list[TableWork]) -> bool:
    """A run small enough to read and load without Spark (``tidemark.snapshot.in-process-rows``)."""
    if any(w.estimated_rows is None for w in work):
        return False
    if any(not fits_in_process(definition, w.table_rows, [w.schema.table_id]) for w in work if w.table_rows):
        return False  # a table too large for it: Spark in every run of its chunks (TableWork.table_rows)
    return fits_in_process(definition, sum(w.estimated_rows or 0 for w in work), [w.schema.table_id for w in work])


def local_worker_count(definition: PipelineDefinition, work: list[TableWork]) -> int:
    """How many processes read and load a run without Spark: 1 (this process) for a run of at
    most :data:`SERIAL_MAX_ROWS` rows or of one chunk, else ``pipeline.parallelism`` local workers."""
    return local_workers_for(definition, sum(w.estimated_rows or 0 for w in work), sum(len(w.tasks) for w in work))


PREPARE_STREAMS = 4  # tables prepared at once in the driver (each a few requests to Doris's FE)


def run_snapshot(
    spark: Any,
    definition: PipelineDefinition,
    sink: Any,
    work: list[TableWork],
    local_workers: int = 1,
    window: CommitWindow | None = None,
) -> list[ChunkOutcome]:
    """Every table's chunks; outcomes in input order.

    ``window`` (``PipelineExecutor.run_snapshot``): the local workers take each chunk once the
    window lets it in and hand it back as soon as it is done; Spark's one job and this process's
    table-by-table reads cannot hold single chunks back, so there the work goes by groups of
    the window's bound, each let in whole before it starts (``_in_groups``).

    The tables read and loaded in fused tasks (every table without a transform, by default) share
    one job: on Spark one Spark job (``run_fused_many``), without Spark the local workers' pool
    takes all their chunks (``run_local_many``): a whole database of small tables costs one
    job's scheduling, not one per table. A table with a transform (or all of them with
    ``tidemark.spark.fused-chunk-tasks: false``) has a Spark job of its own, ``pipeline.parallelism``
    of them at a time, beside the shared one. In this process (``spark`` None, one worker) one table
    after another: the chunk reader keeps one connection per process.

    The driver's part of each table (the columns Doris has, ``CREATE TABLE``: requests to Doris's
    FE, the dearest per-table cost of small tables) starts from one read of the tables and columns
    of the run's Doris databases (``DorisSink.doris_tables``), then runs ``PREPARE_STREAMS`` tables at a
    time; without Spark a table's chunks start loading as soon as its table is prepared (the local
    workers, or this process), so the FE's work on later tables overlaps the loads of earlier ones.
    Spark's shared job needs all its chunks at once: it starts once every table is prepared."""
    if not work:
        return []
    if window is not None and (spark is not None or local_workers <= 1):
        return _in_groups(spark, definition, sink, work, local_workers, window)
    started = time.monotonic()
    if spark is not None:
        activate_in_thread(spark)
    # which Doris tables are missing, and the others' columns: one statement per database rather
    # than two or three requests per table
    known = sink.doris_tables(t for item in work for t in sink.route(item.schema.table_id)) if len(work) > 1 \
        else None

    # this job's token: a worker's reader carries watermarks between its chunks, never from another
    # job's (SnapshotSplitReader.read)
    job = uuid.uuid4().hex

    def prepare(item: TableWork) -> _Prepared:
        if spark is not None:
            activate_in_thread(spark)
        return _prepare(spark, definition, sink, item.schema, item.key_columns, item.tasks, item.epoch_reference,
                        known, job)

    with ThreadPoolExecutor(max_workers=max(1, min(len(work), PREPARE_STREAMS)),
                            thread_name_prefix="tidemark-prepare") as prepare_pool:
        ready = prepare_pool.map(prepare, work)  # in input order, each as soon as it (and those before) are done
        try:
            if spark is None:
                return _run_without_spark(definition, sink, ready, local_workers, started, window)
            return _run_on_spark(spark, definition, sink, list(ready), started)
        except BaseException:
            prepare_pool.shutdown(wait=True, cancel_futures=True)  # no table prepared for a failed run
            raise


def _in_groups(spark: Any, definition: PipelineDefinition, sink: Any, work: list[TableWork], local_workers: int,
               window: CommitWindow) -> list[ChunkOutcome]:
    """The chunks by groups within the window's bound, each group's chunks let in before it runs
    and handed back when it has run; the window commits a group before the next is let in."""
    items = [(w, t) for w in work for t in w.tasks]
    groups = txn_groups(items, lambda item: [t.database for t in sink.route(item[0].schema.table_id)], window.limit)
    outcomes: list[ChunkOutcome] = []
    for group in groups:
        tasks: dict[int, tuple[TableWork, list[ChunkTask]]] = {}
        for w, t in group:
            tasks.setdefault(id(w), (w, []))[1].append(t)
        window.drain()  # the group before, committed: the whole bound is free
        for w, t in group:
            window.acquire(str(w.schema.table_id), t.index)
        done = run_snapshot(spark, definition, sink, [dataclasses.replace(w, tasks=tuple(ts)) for w, ts in tasks.values()],
                            local_workers)
        window.finished(done)
        outcomes += done
    return outcomes


class _WindowGate:
    """The run's commit window as the local workers' gate: a chunk's message becomes its outcome."""

    def __init__(self, window: CommitWindow, prepared: list[_Prepared], started: float) -> None:
        self.window, self.prepared, self.started = window, prepared, started

    def acquire(self, table_id: str, index: int, give_up: threading.Event) -> bool:
        return self.window.acquire(table_id, index, give_up)

    def finished(self, table: int, message: str) -> None:
        self.window.finished(_outcomes(self.prepared[table], [json.loads(message)], time.monotonic() - self.started,
                                       whole=False))

    def wake(self) -> None:
        self.window.wake()


def _run_without_spark(definition: PipelineDefinition, sink: Any, ready: Iterator[_Prepared], local_workers: int,
                       started: float, window: CommitWindow | None = None) -> list[ChunkOutcome]:
    """Each table's chunks as soon as it is prepared: in this process one table after another (the
    chunk reader keeps one connection per process), else all submitted to the local workers
    (through ``window``'s gate, when given)."""
    if local_workers <= 1:
        return [o for p in ready for o in _outcomes(p, _run_prepared(None, definition, sink, p),
                                                    time.monotonic() - started)]
    prepared: list[_Prepared] = []

    def specs() -> Iterator[tuple[ReadSpec, WriterSpec]]:
        for p in ready:  # a table that cannot be prepared raises here: the job stops, its loads aborted
            if not p.fused:
                raise RuntimeError(f"{p.schema.table_id} needs Spark (a transform, or fused chunk tasks off)")
            prepared.append(p)
            # one token for the job, the first table's: a worker keeps one Doris sink for every table
            yield p.read_spec, dataclasses.replace(p.write_spec, token=prepared[0].write_spec.token)

    gate = _WindowGate(window, prepared, started) if window is not None else None
    out = run_local_many(specs(), definition.source.password.get_secret_value(),
                         definition.sink.password.get_secret_value(), sink, local_workers, gate)
    elapsed = time.monotonic() - started
    outcomes = [o for p, messages in zip(prepared, out, strict=True) for o in _outcomes(p, messages, elapsed)]
    logger.debug("%d table(s), %d chunk(s) read and precommitted by the local workers", len(prepared), len(outcomes))
    return outcomes


def _run_on_spark(spark: Any, definition: PipelineDefinition, sink: Any, prepared: list[_Prepared],
                  started: float) -> list[ChunkOutcome]:
    """The shared Spark job of the fused tables, and a job of its own for each other table beside it."""
    fused = [p for p in prepared if p.fused]
    alone = [p for p in prepared if not p.fused]
    messages: dict[int, list[dict[str, Any]]] = {}
    password = definition.source.password.get_secret_value()
    sink_password = definition.sink.password.get_secret_value()

    def shared_job() -> None:
        # one token for the job: a worker keeps one Doris sink (its HTTP session) for every table
        token = fused[0].write_spec.token
        specs = [(p.read_spec, dataclasses.replace(p.write_spec, token=token)) for p in fused]
        activate_in_thread(spark)
        out = run_fused_many(spark, specs, password, sink_password, sink, definition.pipeline.parallelism)
        messages.update({id(p): m for p, m in zip(fused, out, strict=True)})

    def one(p: _Prepared) -> None:
        activate_in_thread(spark)
        messages[id(p)] = _run_prepared(spark, definition, sink, p)

    workers = max(1, min(len(alone) + bool(fused), definition.pipeline.parallelism))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tidemark-snapshot") as pool:
        futures = ([pool.submit(shared_job)] if fused else []) + [pool.submit(one, p) for p in alone]
        for future in futures:
            future.result()
    elapsed = time.monotonic() - started
    outcomes = [o for p in prepared for o in _outcomes(p, messages[id(p)], elapsed)]
    logger.debug("%d table(s), %d chunk(s) read and precommitted (%d in one shared job)", len(prepared),
                 len(outcomes), sum(len(p.tasks) for p in fused))
    return outcomes
