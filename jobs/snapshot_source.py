"""A PySpark data source that reads snapshot chunks: one input partition per chunk.

Each partition runs ``cdc_core``'s chunk read (low watermark, range scan, high watermark,
binlog backfill) in the Python worker and yields the chunk as Arrow record batches of Doris
values. Every row carries three bookkeeping columns:

* ``__tidemark_seq`` — the chunk's high watermark as a sequence value: Doris's sequence column;
* ``__tidemark_chunk`` — the chunk index;
* ``__tidemark_meta`` — NULL on data rows. Each partition ends with one bookkeeping row (all data
  columns NULL) whose ``__tidemark_meta`` holds the chunk's watermarks and row count as JSON.
  That row is how a partition reports back to the driver: the Doris writer takes it out of the
  load and hands it on in its commit message.

Spark has no unsigned 64-bit integer, so BIGINT UNSIGNED (and BIT(64)) travel as
``decimal(20,0)``.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from cdc_core.instrumentation import faults
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.mysql.connection import MySqlConnectionSettings, MySqlTls
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import doris_arrow_type
from jobs.specs import ChunkSpec, ReadSpec

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

logger = logging.getLogger(__name__)

SEQ = "__tidemark_seq"
CHUNK = "__tidemark_chunk"
META = "__tidemark_meta"
BOOKKEEPING = (SEQ, CHUNK, META)
FORMAT = "tidemark_snapshot"


def spark_schema(arrow_schema: pa.Schema) -> StructType:
    """The Spark schema of what ``read`` yields: derived from its Arrow schema."""
    from pyspark.sql.pandas.types import from_arrow_schema  # here: the in-process path needs no PySpark

    return from_arrow_schema(spark_schema_arrow(arrow_schema))


def arrow_schema_of(spec: ReadSpec) -> pa.Schema:
    """The Arrow schema of the spec's table as a chunk read yields it (before :func:`spark_typed`)."""
    tinyint = spec.source.tinyint1_as_boolean
    return pa.schema([pa.field(c.name, doris_arrow_type(c, tinyint1_as_boolean=tinyint)) for c in spec.schema.columns])


def spark_typed(table: pa.Table) -> pa.Table:
    """uint64 → decimal128(20,0) (Spark's only exact type for it), everything else as is."""
    columns = []
    for field in table.schema:
        column = table.column(field.name)
        if pa.types.is_uint64(field.type):
            column = column.cast(pa.decimal128(20, 0))
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


# Python workers are reused across tasks: keep one chunk reader (its MySQL connection and its
# server id) per worker, for the job it was made for.
_READERS: dict[str, Any] = {}


def _during_read(split: SnapshotSplit) -> None:
    """Between a chunk's range scan and its high watermark: the fault point of a chunk read."""
    faults.fault_point("snapshot.read", table=str(split.table_id), chunk=split.index)


def _chunk_reader(spec: ReadSpec, password: str) -> Any:
    source = spec.source
    cache_key = json.dumps(source.to_dict(), sort_keys=True)
    reader = _READERS.get(cache_key)
    if reader is None:
        for stale in _READERS.values():
            stale.close()
        _READERS.clear()
        settings = MySqlConnectionSettings(
            host=source.host, port=source.port, user=source.user, password=password,
            connect_timeout=source.connect_timeout, tls=MySqlTls(source.ssl_mode, source.ssl_ca),
        )
        reader = SnapshotSplitReader(
            settings, server_id_range=source.server_id_range, server_time_zone=source.time_zone,
            tinyint1_as_boolean=source.tinyint1_as_boolean, fetch_size=source.fetch_size,
            backfill_skip=source.backfill_skip, pause_after_scan=_during_read,
        )
        _READERS[cache_key] = reader
    return reader


def forget_watermarks() -> None:
    """The chunk just read was not loaded (its load failed): the worker's next chunk, perhaps the
    same one again, takes a fresh low watermark (``SnapshotSplitReader.forget_watermark``)."""
    for reader in _READERS.values():
        reader.forget_watermark()


def read_chunk(spec: ReadSpec, password: str, chunk: ChunkSpec, *,
               native: bool = False) -> tuple[pa.Table, dict[str, Any]]:
    """One chunk as it was at its high watermark, Spark-typed (:func:`spark_typed`), with the
    ``__tidemark_seq`` column; and its report: index, rows, watermarks, backfill events, timings.
    ``native``: the rows go straight to an Arrow load (the fused path): decimals, dates and
    datetimes stay as read (``SnapshotSplitReader.native_columns``)."""

    spec.adopt_faults()
    split = SnapshotSplit(TableId.parse(spec.table_id), chunk.index, chunk.start, chunk.end, chunk.key_columns)
    reader = _chunk_reader(spec, password)
    # the reader is kept per worker across jobs: this job's epoch, whatever an earlier job's was
    reader.epoch_reference = None if spec.epoch_reference is None else BinlogOffset.from_dict(spec.epoch_reference)
    try:
        result = reader.read(split, spec.schema, native=native, job=spec.job)
    except BaseException:
        _READERS.clear()
        reader.close()
        raise
    logger.debug("chunk %s#%d read: %d row(s), high watermark %s", spec.table_id, chunk.index, result.rows,
                 result.high_watermark)
    seq = result.high_watermark.sequence
    data = spark_typed(result.table)
    data = data.append_column(SEQ, pa.repeat(pa.scalar(seq, pa.int64()), data.num_rows))  # no list of n ints
    meta = {
        "index": chunk.index,
        "rows": result.rows,
        "sequence": seq,
        "low_watermark": result.low_watermark.to_dict(),
        "high_watermark": result.high_watermark.to_dict(),
        "backfill_events": result.backfill_events,
        "timings": result.timings,
    }
    return data, meta


def spark_schema_arrow(arrow_schema: pa.Schema) -> pa.Schema:
    """The Arrow schema matching :func:`spark_schema` (what ``read`` yields)."""
    fields = [pa.field(f.name, pa.decimal128(20, 0) if pa.types.is_uint64(f.type) else f.type, True)
              for f in arrow_schema]
    fields += [pa.field(SEQ, pa.int64()), pa.field(CHUNK, pa.int32()), pa.field(META, pa.string())]
    return pa.schema(fields)
