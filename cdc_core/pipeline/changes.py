"""A binlog batch's changes as rows for Doris, compacted to the last change per key.

Within a batch only the last change of each key matters: Doris upserts whole rows, deletes go
through the delete sign, and every row carries its event's offset as the sequence value, so
what a batch loads can never overwrite a newer row. A primary-key change is a delete of the old
key plus an upsert of the new one. A table without a primary key gets its rows keyed by their
hidden identity first (``cdc_core/pipeline/keyless.py``) and is then compacted like any other;
only its appending form (a Doris DUPLICATE table) takes the keyless rows here, whose inserts and
updates' new images are appended.

Small batches are compacted here, in Python, and loaded with one load per table
(``load_in_process``): a Spark job's seconds would dominate the latency from MySQL commit to
Doris. Large batches and tables with a transform go to Spark (``jobs/binlog_job.py``), which
compacts the same rows (``arrow_rows``) with a window over the key and gives the same result. Either
way the rows travel in the sink's format: Arrow where Doris reads it (2.1 and later), else JSON lines.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.model.events import DataChangeEvent, Op
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.types import doris_arrow_type

logger = logging.getLogger(__name__)

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
    if len(pk) == 1 and all(e.op is Op.INSERT and e.after is not None for e in events):
        # the common insert-only batch of a one-column key: the loop below, without its branches
        (name,) = pk
        return [ChangeRow((e.after.get(name),), e.after, False, e.offset.sequence, order)
                for order, e in enumerate(events)]
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


def arrow_rows(rows: list[ChangeRow], schema: TableSchema, tinyint1_as_boolean: bool, *,
               order: bool = True) -> pa.Table:
    """The uncompacted rows as Arrow, typed as the snapshot path types them (uint64 as decimal);
    ``order`` False leaves out the order column (rows already compacted: ``load_in_process``)."""
    arrow_schema = _arrow_schema(schema.columns, tinyint1_as_boolean, order)
    # column by column (a binlog batch over hundreds of tables builds one small table each)
    data = [[r.values.get(column.name) for r in rows] for column in schema.columns]
    data.append([1 if r.delete else 0 for r in rows])
    data.append([r.sequence for r in rows])
    if order:
        data.append([r.order for r in rows])
    return pa.Table.from_arrays([pa.array(values, type=f.type) for values, f in zip(data, arrow_schema, strict=True)],
                                schema=arrow_schema)


@functools.lru_cache(maxsize=4096)
def _arrow_schema(columns: tuple[Column, ...], tinyint1_as_boolean: bool, order: bool) -> pa.Schema:
    """The Arrow schema of ``arrow_rows`` for a table's columns (worked out once per table and
    form, not once per table and batch)."""
    fields = []
    for column in columns:
        t = doris_arrow_type(column, tinyint1_as_boolean=tinyint1_as_boolean)
        fields.append(pa.field(column.name, pa.decimal128(20, 0) if pa.types.is_uint64(t) else t))
    fields += [pa.field(DELETE_SIGN, pa.int32()), pa.field(SEQUENCE_COLUMN, pa.int64())]
    if order:
        fields.append(pa.field(ORDER, pa.int64()))
    return pa.schema(fields)


def load_in_process(sink: Any, targets: tuple[TableId, ...], batch_id: str, rows: list[ChangeRow],
                    schema: TableSchema, *, tinyint1_as_boolean: bool = True) -> list[dict[str, Any]]:
    """Compact in Python and precommit one load per target; returns the committables.

    Where the loads into every target travel as Arrow (Doris 2.1 or later and a table whose
    columns all go as Arrow, or ``sink.properties.format: arrow``: ``DorisSink.loads_arrow_into``),
    the rows are built as Arrow typed from the schema, as the Spark path and the snapshot type them
    (``arrow_rows``): dicts carry no types, and Doris's Arrow reader takes a column only in its own
    type. Else they are dicts, sent as JSON lines."""
    kept = compact(rows)
    if not kept:
        return []
    data: Any
    if all(sink.loads_arrow_into(target) for target in targets):
        data = arrow_rows(kept, schema, tinyint1_as_boolean, order=False)
    else:
        data = as_doris_dicts(kept, schema)
    logger.debug("%s: %d change(s) compacted to %d row(s) for batch %s", schema.table_id, len(rows),
                 len(kept), batch_id)
    return [sink.load(target, f"{schema.table_id}:{batch_id}:p0", data).to_dict() for target in targets]
