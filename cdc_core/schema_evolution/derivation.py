"""Deriving the changes for Doris from a DDL's schema-change events (``schema.change.behavior``).

:class:`SchemaDerivator` is Flink CDC's ``SchemaDerivator`` + ``SchemaCoordinator`` derivation, as
their code implements it:

* ``exception`` — any change but CreateTable raises :class:`SchemaChangeRefused`;
* ``evolve`` — every change applied; a failure raises;
* ``try_evolve`` — every change applied; a change Doris refuses is tolerated (later rows are
  loaded into the old column types: "not guaranteed to be lossless");
* ``lenient`` (default) — AddColumn appended at the end and nullable; DropColumn keeps the column
  (only made nullable); RenameColumn adds the new name (nullable) and keeps the old one (made
  nullable); AlterColumnType passed through; TruncateTable and DropTable excluded unless
  ``exclude.schema.changes`` is given;
* ``ignore`` — only CreateTable.

A column move, a table default charset change (``AlterColumnPositionEvent``,
``AlterTableCharsetEvent``) and an AlterColumnType that changes only a column's charset change the
source's schema history only: stream loads match columns by name and Doris has no charsets, so
they derive no change under any behavior (not even a refusal under ``exception``). Nor does
partition maintenance that removed rows (``PartitionRowsEvent``): that is data, which the schema
change reloads (``cdc_core/pipeline/reload.py``) whatever the behavior. A primary-key change is derived like any other change (for a
merged table too); the metadata applier refuses it unless Doris is keyed so already.

Several source tables routed to one Doris table evolve it to the widest schema of all of them
(``cdc_core.schema_evolution.merging``), never dropping a column.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, assert_never

from cdc_core.model import events as ev
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.model.schema_change_codec import event_from_dict, event_to_dict
from cdc_core.model.schema_changes import apply_schema_change
from cdc_core.mysql.types.defaults import added_rows_default
from cdc_core.schema_evolution.merging import least_common_schema, schema_difference


def _charset_only(event: ev.AlterColumnTypeEvent, before: TableSchema | None) -> bool:
    """An AlterColumnType that changes only the column's charset (``CONVERT TO CHARACTER SET`` of a
    VARCHAR, say): Doris has no charsets, so there is nothing to derive."""
    if event.column is None or before is None or not before.has_column(event.column_name):
        return False
    old = before.column(event.column_name)
    return replace(old, charset=None) == replace(event.column, name=old.name, charset=None)


class _WhenMerged(StrEnum):
    """What a change becomes for a Doris table that merges several source tables."""

    AS_IS = "as_is"  # table-wide: truncate, drop, primary key (the applier decides)
    WIDEN = "widen"  # column changes: the merged table widens to all its sources, if known
    WIDEN_OR_CREATE = "widen_or_create"  # create.table: widen a known table, else create it


class SchemaChangeBehavior(StrEnum):
    EXCEPTION = "exception"
    EVOLVE = "evolve"
    TRY_EVOLVE = "try_evolve"
    LENIENT = "lenient"
    IGNORE = "ignore"

    @classmethod
    def parse(cls, text: str | SchemaChangeBehavior) -> SchemaChangeBehavior:
        try:
            return cls(str(text).strip().lower().replace("-", "_"))
        except ValueError:
            raise ValueError(f"pipeline.schema.change.behavior must be one of "
                             f"{', '.join(b.value for b in cls)}; got {text!r}") from None


class SchemaChangeRefused(RuntimeError):
    """``schema.change.behavior: exception`` met a schema change (the stream stays paused)."""


# -- type filter ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SchemaChangeTypeFilter:
    """``include.schema.changes`` / ``exclude.schema.changes`` with Flink CDC's matching: an item
    names a type (``add.column``) or a family (``add``, ``column``, ``drop`` = drop.column +
    drop.table); exclude wins; create.table always passes. In lenient mode without an explicit
    exclude list, drop.table and truncate.table are excluded (Flink CDC's YAML parser default)."""

    include: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, behavior: SchemaChangeBehavior, include: Sequence[str] | None,
           exclude: Sequence[str] | None) -> SchemaChangeTypeFilter:
        excluded = tuple(exclude) if exclude is not None else (
            ("drop.table", "truncate.table") if behavior is SchemaChangeBehavior.LENIENT else ())
        return cls(tuple(include) if include is not None else None, excluded)

    @staticmethod
    def _hit(kind: str, items: Sequence[str]) -> bool:
        return any(kind == i or kind.startswith(f"{i}.") or kind.endswith(f".{i}") for i in items)

    def accepts(self, kind: str) -> bool:
        if kind == "create.table":
            return True
        if self.include is not None and not self._hit(kind, self.include):
            return False
        return not self._hit(kind, self.exclude)


# -- derivation ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DerivedChange:
    """One change for one Doris table. ``merged``: the table receives several source tables."""

    event: ev.SchemaChangeEvent
    target: TableId
    merged: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"event": event_to_dict(self.event), "target": str(self.target), "merged": self.merged}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DerivedChange:
        return cls(event_from_dict(data["event"]), TableId.parse(data["target"]), bool(data.get("merged")))

    def describe(self) -> str:
        return f"{self.event.type_name} → {self.target}" + (" (merged)" if self.merged else "")


def apply_to_schema(schema: TableSchema | None, event: ev.SchemaChangeEvent) -> TableSchema | None:
    """``event`` applied to one schema, leniently (the result for the event's own table)."""
    out = apply_schema_change(schema, event, strict=False)
    if isinstance(event, ev.RenameTableEvent):
        return out.get(event.new_table_id) if event.new_table_id is not None else None
    return out.get(event.table_id)


class SchemaDerivator:
    """From the source's schema-change events to the changes each Doris table gets.

    ``route(source) -> targets``; ``captured(table)`` says whether a table is captured; the
    upstream schemas (``before`` / ``after`` the DDL, for every source table known) let a merged
    table be widened; ``evolved(target)`` is the Doris table's schema as Tidemark last evolved it.
    """

    def __init__(self, behavior: SchemaChangeBehavior, route: Callable[[TableId], tuple[TableId, ...]],
                 type_filter: SchemaChangeTypeFilter, captured: Callable[[TableId], bool] = lambda _t: True):
        self.behavior = behavior
        self.route = route
        self.type_filter = type_filter
        self.captured = captured

    def derive(self, events: Sequence[ev.SchemaChangeEvent], upstream: Mapping[TableId, TableSchema | None],
               evolved: Mapping[TableId, TableSchema | None]) -> tuple[list[DerivedChange], dict[TableId, TableSchema | None]]:
        """The derived changes, and the Doris schemas they start from (bootstrapped from the
        sources where Tidemark has not evolved a table yet).

        ``upstream``: every known source table's schema *before* the DDL; ``evolved``: each Doris
        table's current schema (missing = unknown, bootstrapped from its sources).
        """
        upstream = dict(upstream)
        evolved = dict(evolved)
        for event in events:
            for target in self.route(event.table_id):
                self._bootstrap(target, upstream, evolved)
        bootstrapped = dict(evolved)
        out: list[DerivedChange] = []
        for event in events:
            before = dict(upstream)
            upstream[event.table_id] = apply_to_schema(upstream.get(event.table_id), event)
            if isinstance(event, ev.RenameTableEvent) and event.new_table_id is not None:
                upstream[event.new_table_id] = upstream.pop(event.table_id)
                upstream[event.table_id] = None
            for change in self._derive_one(event, before, upstream, evolved):
                out.append(change)
                evolved = evolved_after(evolved, [change])
        if self.behavior is SchemaChangeBehavior.EXCEPTION:
            refused = [c for c in out if not isinstance(c.event, ev.CreateTableEvent)]
            if refused:
                first = refused[0].event
                raise SchemaChangeRefused(
                    f"schema.change.behavior is 'exception' and {first.type_name} on {first.table_id} "
                    f"(DDL: {(first.ddl or '').strip()[:200]}) would change Doris table {refused[0].target}. "
                    "The stream stays paused at this DDL. To carry it over, set pipeline.schema.change.behavior "
                    "to lenient, evolve or try_evolve (or exclude this type with exclude.schema.changes) and run the "
                    "schema_change job again")
        return out, bootstrapped

    def sources_of(self, target: TableId, upstream: Mapping[TableId, TableSchema | None]) -> list[TableId]:
        return sorted(t for t, s in upstream.items() if s is not None and target in self.route(t))

    def _bootstrap(self, target: TableId, upstream: Mapping[TableId, TableSchema | None],
                   evolved: dict[TableId, TableSchema | None]) -> TableSchema | None:
        if target in evolved and evolved[target] is not None:
            return evolved[target]
        merged: TableSchema | None = None
        for t in self.sources_of(target, upstream):
            merged = least_common_schema(merged, upstream[t])  # type: ignore[arg-type]
        evolved[target] = None if merged is None else replace(merged, table_id=target)
        return evolved[target]

    def _derive_one(self, event: ev.SchemaChangeEvent, before: Mapping[TableId, TableSchema | None],
                    after: Mapping[TableId, TableSchema | None], evolved: dict[TableId, TableSchema | None]
                    ) -> list[DerivedChange]:
        match event:
            case ev.AlterColumnPositionEvent() | ev.AlterTableCharsetEvent() | ev.PartitionRowsEvent():
                return []  # the source's schema only (see the module docstring)
            case ev.AlterColumnTypeEvent() if _charset_only(event, before.get(event.table_id)):
                return []
            case ev.RenameTableEvent():
                raw = self._rename_table(event, before, after, evolved)
            case ev.CreateTableEvent():
                raw = self._to_targets(event, before, after, evolved, _WhenMerged.WIDEN_OR_CREATE)
            case ev.TruncateTableEvent() | ev.DropTableEvent() | ev.AlterPrimaryKeyEvent():
                raw = self._to_targets(event, before, after, evolved, _WhenMerged.AS_IS)
            case (ev.AddColumnEvent() | ev.DropColumnEvent() | ev.RenameColumnEvent() | ev.AlterColumnTypeEvent()
                  | ev.AlterColumnCommentEvent() | ev.AlterTableCommentEvent()):
                raw = self._to_targets(event, before, after, evolved, _WhenMerged.WIDEN)
            case _:
                assert_never(event)
        out: list[DerivedChange] = []
        for change in raw:
            for rewritten in self._rewrite(change, evolved.get(change.target)):
                if self.type_filter.accepts(rewritten.event.type_name):
                    out.append(rewritten)
        return out

    def _to_targets(self, event: ev.SchemaChangeEvent, before: Mapping[TableId, TableSchema | None],
                    after: Mapping[TableId, TableSchema | None], evolved: dict[TableId, TableSchema | None],
                    when_merged: _WhenMerged) -> list[DerivedChange]:
        """``event`` for each Doris table its source routes to (widened where that table is merged)."""
        raw: list[DerivedChange] = []
        for target in self.route(event.table_id):
            current = self._bootstrap(target, before, evolved)
            deps = set(self.sources_of(target, after)) | set(self.sources_of(target, before))
            merged = len(deps) > 1
            if not merged or when_merged is _WhenMerged.AS_IS \
                    or (when_merged is _WhenMerged.WIDEN_OR_CREATE and current is None):
                raw.append(DerivedChange(event, target, merged))
            elif current is not None:
                widest = self._widest(target, current, after)
                raw += [DerivedChange(e, target, True) for e in schema_difference(event.table_id, current, widest)]
        return raw

    def _widest(self, target: TableId, current: TableSchema, after: Mapping[TableId, TableSchema | None]) -> TableSchema:
        merged = current
        for t in self.sources_of(target, after):
            merged = least_common_schema(merged, after[t])  # type: ignore[arg-type]
        return merged

    def _rename_table(self, event: ev.RenameTableEvent, before: Mapping[TableId, TableSchema | None],
                      after: Mapping[TableId, TableSchema | None], evolved: dict[TableId, TableSchema | None]
                      ) -> list[DerivedChange]:
        new = event.new_table_id
        new_targets = self.route(new) if new is not None and self.captured(new) else ()
        out: list[DerivedChange] = []
        for old_target in self.route(event.table_id):
            self._bootstrap(old_target, before, evolved)
            merged = len(self.sources_of(old_target, before)) > 1
            if old_target in new_targets:
                continue  # the same Doris table receives the renamed table
            if len(new_targets) == 1 and not merged and new_targets[0].database == old_target.database:
                out.append(DerivedChange(replace(event, new_table_id=new_targets[0]), old_target, False))
                continue
            out.append(DerivedChange(ev.DropTableEvent(event.table_id, offset=event.offset, ddl=event.ddl),
                                     old_target, merged))
        for new_target in new_targets:
            if any(c.event.new_table_id == new_target for c in out if isinstance(c.event, ev.RenameTableEvent)):
                continue
            if new_target in self.route(event.table_id):
                continue
            schema = after.get(new)  # type: ignore[arg-type]
            if schema is not None:
                out.append(DerivedChange(ev.CreateTableEvent(new, offset=event.offset, ddl=event.ddl, schema=schema),
                                         new_target, False))
        return out

    def _rewrite(self, change: DerivedChange, current: TableSchema | None) -> list[DerivedChange]:
        b = self.behavior
        e = change.event
        if b is SchemaChangeBehavior.IGNORE:
            return [change] if isinstance(e, ev.CreateTableEvent) else []
        if b is not SchemaChangeBehavior.LENIENT:
            return [change]
        match e:
            case ev.AddColumnEvent():
                if e.column is None:
                    return [change]
                # nullable in Doris, but the rows MySQL already holds keep the value MySQL gave them
                # (a NOT NULL column's implicit default), which the Doris column's DEFAULT carries
                column = replace(e.column, nullable=True, default=added_rows_default(e.column))
                return [replace(change, event=replace(e, column=column, position="LAST", after=None))]
            case ev.DropColumnEvent():
                old = current.column(e.column_name) if current is not None and current.has_column(e.column_name) \
                    else None
                if old is None or old.nullable:
                    return []
                return [replace(change, event=ev.AlterColumnTypeEvent(e.table_id, e.offset, e.ddl, column_name=old.name,
                                                                      column=replace(old, nullable=True)))]
            case ev.RenameColumnEvent():
                old = current.column(e.old_name) if current is not None and current.has_column(e.old_name) else None
                if old is None:
                    return []
                out = [replace(change, event=ev.AddColumnEvent(e.table_id, e.offset, e.ddl,
                                                               column=replace(old, name=e.new_name, nullable=True)))]
                if not old.nullable:
                    out.append(replace(change, event=ev.AlterColumnTypeEvent(
                        e.table_id, e.offset, e.ddl, column_name=old.name, column=replace(old, nullable=True))))
                return out
            case (ev.CreateTableEvent() | ev.AlterColumnTypeEvent() | ev.AlterColumnPositionEvent()
                  | ev.AlterPrimaryKeyEvent() | ev.AlterTableCharsetEvent() | ev.AlterColumnCommentEvent()
                  | ev.AlterTableCommentEvent() | ev.TruncateTableEvent() | ev.PartitionRowsEvent()
                  | ev.DropTableEvent() | ev.RenameTableEvent()):
                return [change]  # lenient passes these as they are (truncate/drop: by the type filter)
            case _:
                assert_never(e)


def _retarget(change: DerivedChange) -> ev.SchemaChangeEvent:
    """The derived event as a change of the Doris table's own schema."""
    e = change.event
    match e:
        case ev.TruncateTableEvent() | ev.DropTableEvent() if change.merged:
            return ev.TruncateTableEvent(change.target)  # a merged table is neither truncated nor dropped
        case ev.CreateTableEvent() if e.schema is not None:
            return replace(e, table_id=change.target, schema=replace(e.schema, table_id=change.target))
        case (ev.CreateTableEvent() | ev.AddColumnEvent() | ev.DropColumnEvent() | ev.RenameColumnEvent()
              | ev.AlterColumnTypeEvent() | ev.AlterColumnPositionEvent() | ev.AlterPrimaryKeyEvent()
              | ev.AlterTableCharsetEvent() | ev.AlterColumnCommentEvent() | ev.AlterTableCommentEvent()
              | ev.TruncateTableEvent() | ev.PartitionRowsEvent() | ev.DropTableEvent() | ev.RenameTableEvent()):
            return replace(e, table_id=change.target)
        case _:
            assert_never(e)


def evolved_after(evolved: Mapping[TableId, TableSchema | None], changes: Iterable[DerivedChange]
                  ) -> dict[TableId, TableSchema | None]:
    """The Doris schemas after the changes that were really applied (in order)."""
    out = dict(evolved)
    for change in changes:
        if isinstance(change.event, ev.RenameTableEvent) and change.event.new_table_id is not None:
            out[change.event.new_table_id] = None if out.get(change.target) is None else replace(
                out[change.target], table_id=change.event.new_table_id)  # type: ignore[arg-type]
            out[change.target] = None
            continue
        out[change.target] = apply_to_schema(out.get(change.target), _retarget(change))
    return out
