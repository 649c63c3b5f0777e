"""How much of the snapshot is left, read cheaply: whether a run will need Spark at all.

A run of at most ``tidemark.snapshot.in-process-rows`` rows reads its chunks in the driver, and
starting Spark would cost it more than its work (``jobs/snapshot_job.py``). ``tidemark run``
wants to know that before it has imported the rest of Tidemark, so that it can start Spark while
it does (``orchestration/cli/spark_prestart.py``). So this module needs only the state store and,
before the first plan, the MySQL client: no Doris sink, no Spark, no Dagster. The transform rule
lookup lives here for the same reason; ``cdc_core/pipeline/context.py`` re-exports it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from cdc_core.config import PipelineDefinition
from cdc_core.config.selectors import TableSelector
from cdc_core.model.schema import TableId
from cdc_core.state import ChunkStatus, StateStore
from cdc_core.state.keys import TABLE_ROWS

logger = logging.getLogger(__name__)

SNAPSHOT_MODES = ("initial", "snapshot")
"""The ``scan.startup.mode`` values that take a snapshot."""


def transform_rule_index(definition: PipelineDefinition, table_id: TableId) -> int | None:
    """The index of the first ``transform:`` rule that matches ``table_id`` (None: no transform).

    The rules are applied in Spark (``jobs/transforms.py``); the service only needs to know
    whether a table has one: such a table always goes through Spark, and parity cannot compare
    its rows with the source's.
    """
    for index, rule in enumerate(getattr(definition, "transforms", ()) or ()):
        if TableSelector.parse(rule.source_table).matches(table_id.database, table_id.table):
            return index
    return None


SERIAL_MAX_ROWS = 50_000
"""A run without Spark of at most this many rows (or of one chunk) is read in the driver itself,
one chunk after the other: spawning the local workers (~1 CPU-s each) would cost more than it."""


def fits_in_process(definition: PipelineDefinition, rows: int, tables: Iterable[TableId]) -> bool:
    """Whether ``rows`` of these tables are read and loaded without Spark (in the driver or by its
    local worker processes, ``jobs/local_workers.py``): the option is on (> 0), the fused chunk
    tasks are (that path is theirs), the rows are within it, the pipeline names no Spark master nor
    Connect server (Spark is then the user's choice), and no table has a transform (transforms run
    in Spark SQL)."""
    options = definition.pipeline
    limit = options.snapshot_in_process_rows
    return (limit > 0 and options.spark_fused_chunk_tasks and rows <= limit
            and not options.spark_master and not options.spark_remote
            and all(transform_rule_index(definition, t) is None for t in tables))


def local_workers_for(definition: PipelineDefinition, rows: int, chunks: int) -> int:
    """How many processes read and load a run without Spark: 1 (the driver, one chunk after the
    other) for at most :data:`SERIAL_MAX_ROWS` rows or a single chunk, else ``pipeline.parallelism``."""
    parallelism = max(1, int(definition.pipeline.parallelism or 1))
    return 1 if rows <= SERIAL_MAX_ROWS or chunks <= 1 else parallelism


def needs_spark(definition: PipelineDefinition, rows_left: dict[str, int]) -> bool:
    """Whether reading ``rows_left`` (rows per table) will start Spark, by :func:`fits_in_process`
    applied to the whole rest of the snapshot."""
    if not rows_left:
        return False
    return not fits_in_process(definition, sum(rows_left.values()), [TableId.parse(t) for t in rows_left])


def rows_left(definition: PipelineDefinition, store: StateStore | None) -> dict[str, int]:
    """An estimate of the rows each table has still to be read by the snapshot (empty: none).

    ``store`` None (the pipeline has no state yet) or no plan in it: the server's estimate for
    every captured table (``SHOW TABLE STATUS``, the figure planning records). Once planned: a
    table's planned rows times the share of its planned chunks not committed yet (all of them
    while it has none). Only for deciding ahead; nothing depends on it being exact.
    """
    if definition.source.startup_mode not in SNAPSHOT_MODES:
        return {}
    if store is None:
        return _server_estimates(definition)
    with store.transaction(readonly=True) as tx:  # the plan's row figures and its chunks, as of one moment
        planned = TABLE_ROWS.get(tx)
        chunks = tx.chunks() if planned is not None else []
    if planned is None:
        return _server_estimates(definition)
    total: dict[str, int] = {}
    open_: dict[str, int] = {}
    for chunk in chunks:
        total[chunk.table_id] = total.get(chunk.table_id, 0) + 1
        if chunk.status is not ChunkStatus.COMMITTED:
            open_[chunk.table_id] = open_.get(chunk.table_id, 0) + 1
    left = {}
    for table_id, rows in planned.items():
        share = open_.get(table_id, 0) / total[table_id] if total.get(table_id) else 1.0
        if share > 0:
            left[table_id] = int(int(rows) * share)
    return left


def chunk_rows(store: StateStore) -> dict[str, int]:
    """An estimate of each planned chunk's rows (chunk key → rows): its table's planned rows shared
    evenly among the table's chunks; a table without an estimate counts 0. What decides how many
    chunks one run of ``tidemark run`` takes (``orchestration/cli/run_once.py``)."""
    from cdc_core.pipeline.keys import chunk_key

    with store.transaction(readonly=True) as tx:
        planned = TABLE_ROWS.get_or(tx, {})
        chunks = tx.chunks()
    per_table: dict[str, int] = {}
    for chunk in chunks:
        per_table[chunk.table_id] = per_table.get(chunk.table_id, 0) + 1
    return {chunk_key(c.table_id, c.chunk_index): int(planned.get(c.table_id, 0)) // per_table[c.table_id]
            for c in chunks}


def _server_estimates(definition: PipelineDefinition) -> dict[str, int]:
    from cdc_core.mysql.connection import MySqlConnectionSettings, connect
    from cdc_core.mysql.discovery import list_captured_tables, table_statuses

    conn = connect(MySqlConnectionSettings.from_options(definition.source), text_values=True)
    try:
        # one information_schema query for all tables (a SHOW TABLE STATUS each cost a database of
        # 300 tables ~1.8 s beside planning, which reads the same figures the same way)
        statuses = table_statuses(conn, list_captured_tables(conn, definition.source.selector))
        return {str(t): rows for t, (rows, _avg) in statuses.items()}
    finally:
        conn.close()
