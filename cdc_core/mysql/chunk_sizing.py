"""How many rows a snapshot chunk holds when the pipeline file does not say.

Flink CDC's ``scan.incremental.snapshot.chunk.size`` defaults to 8096 rows, a size chosen for a
JDBC reader inside a long-lived Flink task, where a chunk costs little beyond its rows. Here
each chunk also costs a fixed amount whatever its size: a Dagster partition with its events,
a stream load and its two-phase commit (a new version of the Doris table), the watermark
queries. On the bench table (``bench/snapshot_e2e.py``, 5M rows, ~100 bytes per row) that fixed
part was half of ``tidemark run --once`` with 8096-row chunks (59 s, against 32 s with 65,536 and
30 s with 131,072 rows).

So when the option is not set, each table's chunks are sized by its rows' width: about
:data:`TARGET_CHUNK_BYTES` of rows by ``AVG_ROW_LENGTH`` (``SHOW TABLE STATUS``), between
:data:`MIN_AUTO_ROWS` and :data:`MAX_AUTO_ROWS`. A narrow table gets the maximum; a table of
1 KB rows ~16k rows; a table of large BLOBs small chunks, so one chunk never holds much more
than that in a worker's memory or in one stream load. A value in the pipeline file is used as
written, for every table, as Flink does.
"""

from __future__ import annotations

from collections.abc import Mapping

from cdc_core.model.schema import TableId

TARGET_CHUNK_BYTES = 16 * 2**20
MIN_AUTO_ROWS = 1_024
MAX_AUTO_ROWS = 131_072
FLINK_DEFAULT_ROWS = 8096
"""Flink CDC's default of ``scan.incremental.snapshot.chunk.size``, written here only: the chunk
size of a table whose row width is unknown (the server reports none), and of
``SplitOptions.from_source`` before the plan's sizes are applied."""


def auto_chunk_rows(avg_row_bytes: int | None) -> int:
    """Rows per chunk for a table whose rows take ``avg_row_bytes`` on average (None: unknown)."""
    if not avg_row_bytes or avg_row_bytes <= 0:
        return FLINK_DEFAULT_ROWS
    return max(MIN_AUTO_ROWS, min(MAX_AUTO_ROWS, TARGET_CHUNK_BYTES // avg_row_bytes))


def table_chunk_rows(statuses: Mapping[TableId, tuple[int, int | None]], configured: int | None) -> dict[str, int]:
    """Rows per chunk of each table, by ``db.table``, from its ``table_status`` (rows, average row
    length): ``configured`` for all when the pipeline file sets it."""
    return {str(t): configured or auto_chunk_rows(avg) for t, (_, avg) in statuses.items()}
