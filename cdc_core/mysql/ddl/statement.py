"""What every statement's grammar shares: the cursor, table names, and the schemas as they change.

A statement may change a table several times (``ALTER TABLE t ADD a int, DROP b``); each event is
applied to a working copy of the schema at once, so a later clause sees what an earlier one did.
"""

from __future__ import annotations

from collections.abc import Callable

from cdc_core.model.events import SchemaChangeEvent
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.model.schema_changes import apply_schema_change
from cdc_core.mysql.ddl.column_definitions import ColumnParser
from cdc_core.mysql.ddl.errors import DdlSyntaxError
from cdc_core.mysql.ddl.online_schema_change import ShadowTables
from cdc_core.mysql.ddl.tokens import Cursor

SchemaOf = Callable[[TableId], TableSchema | None]
IsCaptured = Callable[[TableId], bool]


class Statement:
    """One statement being parsed."""

    def __init__(self, cur: Cursor, default_db: str | None, captured: IsCaptured, schema_of: SchemaOf,
                 shadows: ShadowTables, *, mariadb: bool):
        self.cur = cur
        self.default_db = default_db
        self.captured = captured
        self.schema_of = schema_of
        self.shadows = shadows
        self.mariadb = mariadb
        self.working: dict[TableId, TableSchema | None] = {}

    def columns(self) -> ColumnParser:
        return ColumnParser(self.cur, self.mariadb)

    def table(self) -> TableId:
        db, name = self.cur.qualified()
        db = db or self.default_db
        if not db:
            raise DdlSyntaxError(f"table {name!r} is not qualified and the statement has no default database")
        return TableId(db, name)

    def schema(self, t: TableId) -> TableSchema | None:
        """The table's schema as of this point of the statement (None: unknown or dropped)."""
        if t in self.working:
            return self.working[t]
        pending = self.shadows.pending.get(t)
        if pending is not None:
            return pending.schema
        return self.schema_of(t)

    def emit(self, events: list[SchemaChangeEvent], event: SchemaChangeEvent) -> None:
        """Append ``event`` and apply it to the working schemas."""
        current = self.schema(event.table_id)
        for t, s in apply_schema_change(current, event, strict=False).items():
            self.working[t] = s
        events.append(event)

    def is_relevant(self, t: TableId) -> bool:
        """A captured table, or the shadow of one whose migration is replayed."""
        return self.captured(t) or self.shadows.tracks(t, self.captured)

    def route_shadow(self, events: list[SchemaChangeEvent]) -> list[SchemaChangeEvent]:
        return self.shadows.route(events, self.captured, self.working)

    def wait_clause(self) -> None:
        """MariaDB's ``WAIT n`` / ``NOWAIT`` lock-timeout clause."""
        if self.cur.accept("WAIT"):
            self.cur.next()
        else:
            self.cur.accept("NOWAIT")

    def key_columns(self) -> list[str]:
        """``[USING BTREE] [name] (col [(len)] [ASC|DESC], ...)`` of a key definition → the column names."""
        cur = self.cur
        while cur.is_word("USING", "BTREE", "HASH"):
            cur.next()
        if not cur.is_punct("("):
            cur.ident()  # index name
        cur.expect_punct("(")
        names = []
        while True:
            names.append(cur.ident())
            cur.skip_to_item_end()
            if cur.accept_punct(","):
                continue
            cur.expect_punct(")")
            break
        cur.skip_to_item_end()
        return names
