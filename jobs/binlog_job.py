"""The binlog batch on Spark: one table's changes compacted to the last change per key, the
table's transform applied, loaded through the Doris writer.

Used for large batches and for every table with a transform; small batches are compacted and
loaded in process (``cdc_core/pipeline/changes.py``), which gives the same rows: per key the last
change by sequence, then by position in the batch.
"""

from __future__ import annotations

import logging
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.pipeline.changes import ORDER, ChangeRow, arrow_rows
from jobs.doris_writer import write_to_doris
from jobs.spark import activate_in_thread
from jobs.specs import WriteMode, WriterSpec
from jobs.transforms import transform_for

logger = logging.getLogger(__name__)

def load_with_spark(spark: Any, definition: PipelineDefinition, sink: DorisSink, targets: tuple[TableId, ...],
                    batch_id: str, rows: list[ChangeRow], schema: TableSchema) -> list[dict[str, Any]]:
    """The table's changes as a DataFrame, compacted by a window over the key, transformed, loaded
    under ``sink``'s label prefix."""
    from pyspark.sql import Window  # here: a process that never loads on Spark imports no PySpark
    from pyspark.sql import functions as F

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
    logger.debug("%s: %d change(s) of batch %s compacted and loaded on Spark", schema.table_id, len(rows), batch_id)
    spec = WriterSpec.create(sink, definition, WriteMode.BINLOG, str(schema.table_id), [str(t) for t in targets],
                             batch_id=batch_id)
    messages = write_to_doris(df, definition, spec)
    return [c for m in messages for c in m["committables"]]
