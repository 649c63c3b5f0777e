"""``tidemark splits``: the split plan of a pipeline, as Flink CDC would make it."""

from __future__ import annotations

import dataclasses
from typing import Any

from cdc_core.model.schema import TableId
from cdc_core.mysql.chunk_sizing import table_chunk_rows
from cdc_core.mysql.chunk_splitter import SplitOptions
from cdc_core.mysql.connection import MySqlConnectionSettings, connect
from cdc_core.mysql.discovery import list_captured_tables, read_table_schema, table_status
from cdc_core.mysql.snapshot_assigner import SnapshotSplitAssigner
from cdc_core.mysql.splits import SnapshotSplit


def plan_splits(source: Any, tables: list[str] | None = None) -> list[SnapshotSplit]:
    """The chunks of every captured table (or of ``tables``, each ``db.tbl``), in assignment order."""
    settings = MySqlConnectionSettings.from_options(source)
    conn = connect(settings, text_values=True)
    try:
        captured = list_captured_tables(conn, source.selector)
        if tables:
            wanted = [TableId.parse(t) for t in tables]
            missing = [str(t) for t in wanted if t not in captured]
            if missing:
                raise ValueError(
                    f"table(s) {', '.join(missing)} are not captured by this pipeline (check 'tables' / "
                    f"'tables.exclude', and that the table exists); captured: "
                    + (", ".join(str(t) for t in captured) or "none")
                )
            captured = [t for t in captured if t in wanted]
        sizes = table_chunk_rows({t: table_status(conn, t) for t in captured}, source.chunk_size)
        options = dataclasses.replace(SplitOptions.from_source(source), table_chunk_sizes=tuple(sorted(sizes.items())))
        assigner = SnapshotSplitAssigner(
            conn, captured, lambda t: read_table_schema(conn, t), options,
            unbounded_chunk_first=source.unbounded_chunk_first,
        )
        return assigner.plan()
    finally:
        conn.close()
