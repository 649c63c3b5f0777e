"""``DROP TABLE``, ``TRUNCATE TABLE`` and ``RENAME TABLE``: statements on whole tables."""

from __future__ import annotations

from dataclasses import replace

from cdc_core.model.events import (
    CreateTableEvent,
    DropTableEvent,
    RenameTableEvent,
    SchemaChangeEvent,
    TruncateTableEvent,
)
from cdc_core.model.schema import TableId
from cdc_core.mysql.ddl.errors import DdlSyntaxError
from cdc_core.mysql.ddl.online_schema_change import is_shadow_table
from cdc_core.mysql.ddl.statement import Statement


def parse_drop(stmt: Statement) -> list[SchemaChangeEvent]:
    cur = stmt.cur
    cur.expect_word("DROP")
    temporary = cur.accept("TEMPORARY")
    if not cur.accept("TABLE", "TABLES"):
        return []
    cur.accept_seq("IF", "EXISTS")
    events: list[SchemaChangeEvent] = []
    while True:
        t = stmt.table()
        if not temporary:
            stmt.shadows.pending.pop(t, None)
            stmt.emit(events, DropTableEvent(t))
        if not cur.accept_punct(","):
            break
    cur.accept("RESTRICT", "CASCADE")
    return [e for e in events if not is_shadow_table(e.table_id.table)]


def parse_truncate(stmt: Statement) -> list[SchemaChangeEvent]:
    cur = stmt.cur
    cur.expect_word("TRUNCATE")
    cur.accept("TABLE")
    return [TruncateTableEvent(stmt.table())]


def parse_rename(stmt: Statement) -> list[SchemaChangeEvent]:
    """``RENAME TABLE a TO b [, c TO d ...]``; the pairs are applied in order (a swap is three pairs)."""
    cur = stmt.cur
    cur.expect_word("RENAME")
    if not cur.accept("TABLE", "TABLES"):
        return []
    if_exists = cur.accept_seq("IF", "EXISTS")
    pairs = []
    while True:
        old = stmt.table()
        stmt.wait_clause()
        cur.expect_word("TO")
        new = stmt.table()
        pairs.append((old, new))
        if not cur.accept_punct(","):
            break
    events: list[SchemaChangeEvent] = []
    for old, new in pairs:
        if if_exists and stmt.captured(old) and stmt.schema(old) is None:
            continue  # MariaDB's RENAME TABLE IF EXISTS skips a pair whose table does not exist
        events.extend(_rename_one(stmt, old, new))
    return events


def _rename_one(stmt: Statement, old: TableId, new: TableId) -> list[SchemaChangeEvent]:
    migration = stmt.shadows.rename(old, new, stmt.captured, stmt.working)
    if migration is not None:
        return migration
    events: list[SchemaChangeEvent] = []
    if stmt.captured(old):
        stmt.emit(events, RenameTableEvent(old, new_table_id=new))
    elif stmt.captured(new):
        # Doris has none of its rows: the schema change reads them (cdc_core/pipeline/schema_change.py)
        # Not captured, so never in the history: the server's schema of the new name (the old name's, which
        # a lookup would answer from the server too, may be another table's by now: renamed away, created again)
        schema = stmt.schema(new) or stmt.schema(old)
        if schema is None:
            raise DdlSyntaxError(f"table {old} is renamed into the captured name {new}, but its schema is unknown")
        stmt.emit(events, CreateTableEvent(new, schema=replace(schema, table_id=new), renamed_from=old))
    return events
