"""gh-ost and pt-osc: their shadow tables, and replaying a migration onto the original table.

Both tools copy a table into a shadow table, ALTER the shadow, and swap it in with one
``RENAME TABLE orders TO _orders_del, _orders_gho TO orders`` (pt-osc: ``_old`` / ``_new``). The
shadow tables (gh-ost ``_t_gho``, ``_t_ghc``, ``_t_del``; pt-osc ``_t_new``, ``_t_old``) are never
captured tables. With ``scan.parse.online.schema.changes.enabled`` the ALTERs on the shadow are
held here and replayed onto the original table at the cut-over; without it the cut-over of a
captured table is an error that names the option.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cdc_core.model.events import CreateTableEvent, SchemaChangeEvent
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.ddl.errors import DdlSyntaxError

_SHADOW = re.compile(r"^_(?P<orig>.+)_(?P<kind>gho|ghc|del|new|old)$")
_GHOST_OR_NEW = ("gho", "new")  # the shadow that receives the ALTERs and replaces the original
_MOVED_ASIDE = ("del", "old")  # the name the original table is renamed to at the cut-over


def shadow_table_of(table: str) -> tuple[str, str] | None:
    """``_orders_gho`` → (``orders``, ``gho``): an online-schema-change helper table, or None."""
    m = _SHADOW.match(table)
    return (m.group("orig"), m.group("kind")) if m else None


def is_shadow_table(table: str) -> bool:
    return shadow_table_of(table) is not None


@dataclass
class PendingMigration:
    """ALTERs seen on an online-schema-change shadow table, to replay at the cut-over."""

    original: TableId
    schema: TableSchema | None
    events: list[SchemaChangeEvent] = field(default_factory=list)


class ShadowTables:
    """The migrations in progress; kept across statements by the parser."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.pending: dict[TableId, PendingMigration] = {}

    def tracks(self, t: TableId, captured: Callable[[TableId], bool]) -> bool:
        """Whether ``t`` is the shadow of a captured table whose ALTERs we replay."""
        shadow = shadow_table_of(t.table)
        if not shadow or shadow[1] not in _GHOST_OR_NEW or not self.enabled:
            return False
        return captured(TableId(t.database, shadow[0]))

    def route(self, events: list[SchemaChangeEvent], captured: Callable[[TableId], bool],
              working: dict[TableId, TableSchema | None]) -> list[SchemaChangeEvent]:
        """Hold back events on gh-ost/pt-osc shadow tables until the cut-over; pass the others on."""
        out = []
        for e in events:
            shadow = shadow_table_of(e.table_id.table)
            if shadow is None:
                out.append(e)
                continue
            if not self.tracks(e.table_id, captured):
                continue
            t = e.table_id
            if isinstance(e, CreateTableEvent):
                self.pending[t] = PendingMigration(TableId(t.database, shadow[0]), e.schema)
            else:
                pending = self.pending.get(t)
                if pending is None:
                    continue
                pending.events.append(e)
                pending.schema = working.get(t, pending.schema)
        return out

    def rename(self, old: TableId, new: TableId, captured: Callable[[TableId], bool],
               working: dict[TableId, TableSchema | None]) -> list[SchemaChangeEvent] | None:
        """Events of one ``old TO new`` pair of a RENAME that involves a shadow table, or None for an
        ordinary rename."""
        old_shadow = shadow_table_of(old.table)
        new_shadow = shadow_table_of(new.table)
        if new_shadow and new_shadow[1] in _MOVED_ASIDE and new_shadow[0] == old.table:
            # the original table moves aside for the cut-over; its successor arrives in the same RENAME
            working[old] = None
            return []
        if old_shadow and old_shadow[1] in _GHOST_OR_NEW and old_shadow[0] == new.table:
            return self._cut_over(old, new, captured, working)
        if old_shadow or new_shadow:
            return []
        return None

    def _cut_over(self, shadow: TableId, original: TableId, captured: Callable[[TableId], bool],
                  working: dict[TableId, TableSchema | None]) -> list[SchemaChangeEvent]:
        pending = self.pending.pop(shadow, None)
        if not captured(original):
            return []
        if not self.enabled:
            raise DdlSyntaxError(
                f"online schema change cut-over replaces captured table {original} with {shadow.table}; enable "
                "scan.parse.online.schema.changes.enabled so its ALTERs are applied to the table"
            )
        if pending is None:
            raise DdlSyntaxError(f"online schema change cut-over for {original}, but the shadow table {shadow} "
                                 "was not seen being created (the stream started in the middle of the migration)")
        working[original] = replace(pending.schema, table_id=original) if pending.schema else None
        return [replace(e, table_id=original) for e in pending.events]
