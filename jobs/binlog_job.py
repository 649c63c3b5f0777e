"""The incremental job: one binlog batch into Doris, compacted to the last change per key.

Within a batch only the last change of each key matters: Doris upserts whole rows, deletes go
through the delete sign, and every row carries its event's offset as the sequence value, so
what a batch loads can never overwrite a newer row. A primary-key change is a delete of the old
key plus an upsert of the new one. Tables without a primary key (Doris DUPLICATE model) cannot
be compacted or deleted from; their inserts are appended.

Two paths give the same rows:

* **Spark** — per table a DataFrame of the batch's changes, compacted with a window over the key
  (last by sequence, then by position in the event), the table's transform applied, loaded
  through the Doris writer; used for large batches and for every table with a transform;
* **in process** — the same compaction in Python and one load per table, for small batches,
  where a Spark job's seconds would dominate the latency from MySQL commit to Doris.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cdc_core.config import PipelineDefinition
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.events import DataChangeEvent, Op
from cdc_core.mysql.types import doris_arrow_type
from cdc_core.schema import TableId, TableSchema
from jobs.doris_writer import write_to_doris
from jobs.transforms import transform_for

ORDER = "__tidemark_order"


@dataclass(frozen=True)
class ChangeRow:
    """One row for Doris from one change: the image, the delete sign, the sequence, the order."""

    key: tuple[Any, ...] | None
    values: dict[str, Any]
    delete: bool
    sequence: int
    order: int  # position of the change in the batch (ties in sequence: the later wins)


def change_rows(events: list[DataChangeEvent], schema: TableSchema) -> list[ChangeRow]:
    """The rows a batch's changes of one table produce, in binlog order, before compaction."""
    pk = schema.primary_key
    out: list[ChangeRow] = []
    for order, event in enumerate(events):
        seq = event.offset.sequence
        if not pk:
            if event.op is not Op.DELETE and event.after is not None:
                out.append(ChangeRow(None, event.after, False, seq, order))
            continue
        if event.op is Op.DELETE:
            out.append(ChangeRow(_key(event.before, pk), event.before or {}, True, seq, order))
            continue
        if event.op is Op.UPDATE and event.before is not None and _key(event.before, pk) != _key(event.after, pk):
            out.append(ChangeRow(_key(event.before, pk), event.before, True, seq, order))
        out.append(ChangeRow(_key(event.after, pk), event.after or {}, False, seq, order))
    return out


def _key(image: dict[str, Any] | None, pk: tuple[str, ...]) -> tuple[Any, ...]:
    image = image or {}
    return tuple(image.get(k) for k in pk)


def compact(rows: list[ChangeRow]) -> list[ChangeRow]:
    """The last change per key (by sequence, then order); keyless rows all stay."""
    last: dict[tuple[Any, ...], ChangeRow] = {}
    keyless: list[ChangeRow] = []
    for row in rows:
        if row.key is None:
            keyless.append(row)
            continue
        seen = last.get(row.key)
        if seen is None or (row.sequence, row.order) >= (seen.sequence, seen.order):
            last[row.key] = row
    return keyless + sorted(last.values(), key=lambda r: (r.sequence, r.order))


def as_doris_dicts(rows: list[ChangeRow], schema: TableSchema) -> list[dict[str, Any]]:
    names = schema.column_names
    return [
        {**{n: r.values.get(n) for n in names}, DELETE_SIGN: 1 if r.delete else 0, SEQUENCE_COLUMN: r.sequence}
        for r in rows
    ]


def arrow_rows(rows: list[ChangeRow], schema: TableSchema, tinyint1_as_boolean: bool) -> pa.Table:
    """The uncompacted rows as Arrow, typed as the snapshot path types them (uint64 as decimal)."""
    fields = []
    for column in schema.columns:
        t = doris_arrow_type(column, tinyint1_as_boolean=tinyint1_as_boolean)
        fields.append(pa.field(column.name, pa.decimal128(20, 0) if pa.types.is_uint64(t) else t))
    fields += [pa.field(DELETE_SIGN, pa.int32()), pa.field(SEQUENCE_COLUMN, pa.int64()), pa.field(ORDER, pa.int64())]
    arrow_schema = pa.schema(fields)
    data: dict[str, list[Any]] = {f.name: [] for f in fields}
    for r in rows:
        for column in schema.columns:
            data[column.name].append(r.values.get(column.name))
        data[DELETE_SIGN].append(1 if r.delete else 0)
        data[SEQUENCE_COLUMN].append(r.sequence)
        data[ORDER].append(r.order)
    return pa.table(data, schema=arrow_schema)


def load_in_process(sink: Any, targets: tuple[TableId, ...], batch_id: str, rows: list[ChangeRow],
                    schema: TableSchema) -> list[dict[str, Any]]:
    """Compact in Python and precommit one load per target; returns the committables."""
    compacted = as_doris_dicts(compact(rows), schema)
    if not compacted:
        return []
    return [sink.load(target, f"{schema.table_id}:{batch_id}:p0", compacted).to_dict() for target in targets]


def load_with_spark(spark: Any, definition: PipelineDefinition, label_prefix: str, targets: tuple[TableId, ...],
                    batch_id: str, rows: list[ChangeRow], schema: TableSchema) -> list[dict[str, Any]]:
    """The table's changes as a DataFrame, compacted by a window over the key, transformed, loaded."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from jobs.spark import activate_in_thread

    activate_in_thread(spark)
    table = arrow_rows(rows, schema, definition.source.tinyint1_as_boolean)
    df = spark.createDataFrame(table)
    if schema.primary_key:
        window = Window.partitionBy(*[F.col(f"`{k}`") for k in schema.primary_key]).orderBy(
            F.col(SEQUENCE_COLUMN).desc(), F.col(ORDER).desc()
        )
        df = df.withColumn("__tidemark_rank", F.row_number().over(window)).filter("__tidemark_rank = 1")
        df = df.drop("__tidemark_rank")
    df = df.drop(ORDER)
    transform = transform_for(definition, schema.table_id)
    if transform is not None:
        df = transform.apply(df, (DELETE_SIGN, SEQUENCE_COLUMN))
    # One load per table per batch, under the same label the in-process path uses (…:p0).
    df = df.coalesce(1)
    messages = write_to_doris(df, definition, label_prefix, "binlog", str(schema.table_id),
                              [str(t) for t in targets], batch_id=batch_id)
    return [c for m in messages for c in m["committables"]]
