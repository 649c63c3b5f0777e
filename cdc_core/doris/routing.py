"""Which Doris table each source table goes to: the pipeline's ``route:`` rules.

Flink CDC semantics: ``source-table`` is a table selector (``db.table`` regexes, commas for
several); ``sink-table`` is ``db.table``, in which ``replace-symbol`` (e.g. ``<>``) stands for
the source table's name; ``pipeline.route-mode`` ``ALL_MATCH`` sends a table to every rule that
matches it, ``FIRST_MATCH`` only to the first. A table no rule matches keeps its database and
name. Several source tables routed to one sink table (sharded tables) are merged there.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cdc_core.config.selectors import TableSelector
from cdc_core.model.schema import TableId


@dataclass(frozen=True)
class Route:
    selector: TableSelector
    sink_table: str
    replace_symbol: str | None = None

    @classmethod
    def from_rule(cls, rule: object) -> Route:
        """From a ``RouteRule`` of the pipeline config (or anything with the same attributes)."""
        return cls(TableSelector.parse(rule.source_table), rule.sink_table, getattr(rule, "replace_symbol", None))  # type: ignore[attr-defined]

    def target(self, source: TableId) -> TableId:
        text = self.sink_table
        if self.replace_symbol:
            text = text.replace(self.replace_symbol, source.table)
        try:
            return TableId.parse(text)
        except ValueError:
            raise ValueError(f"route sink-table {self.sink_table!r} must be 'database.table'") from None


class TableRouter:
    def __init__(self, routes: Sequence[Route] = (), mode: str = "ALL_MATCH"):
        mode = mode.upper()
        if mode not in ("ALL_MATCH", "FIRST_MATCH"):
            raise ValueError(f"pipeline.route-mode must be ALL_MATCH or FIRST_MATCH, got {mode!r}")
        self.routes = tuple(routes)
        self.mode = mode

    @classmethod
    def from_pipeline(cls, definition: object) -> TableRouter:
        rules = getattr(definition, "routes", ()) or ()
        mode = getattr(getattr(definition, "pipeline", None), "route_mode", "ALL_MATCH")
        return cls([Route.from_rule(r) for r in rules], mode)

    def route(self, source: TableId) -> tuple[TableId, ...]:
        """The Doris tables of ``source`` (one unless ALL_MATCH rules fan it out)."""
        targets: list[TableId] = []
        for r in self.routes:
            if r.selector.matches(source.database, source.table):
                t = r.target(source)
                if t not in targets:
                    targets.append(t)
                if self.mode == "FIRST_MATCH":
                    break
        return tuple(targets) or (source,)

    def sources_of(self, target: TableId, sources: Iterable[TableId]) -> tuple[TableId, ...]:
        """The source tables among ``sources`` that land in ``target``."""
        return tuple(s for s in sources if target in self.route(s))

    def is_merged(self, target: TableId, sources: Iterable[TableId]) -> bool:
        """Whether several of ``sources`` share ``target`` (table-wide DDL of one must not hit the others)."""
        return len(self.sources_of(target, sources)) > 1
