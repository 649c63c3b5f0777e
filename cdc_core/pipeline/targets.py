"""The Doris tables a pipeline writes (its targets): which they are, their columns, their rows.

The orchestration shows each target as an asset of its own. It needs two answers, at two costs:

- ``doris_targets`` — every target and its expected columns, from the state store alone (the
  schema history the planner and the schema changes recorded, mapped to Doris types and routed by
  the pipeline's ``route:`` rules). No MySQL, no Doris: it runs when a code location loads.
- ``target_updates`` — for the targets one chunk set or one binlog batch wrote, the table as
  Doris has it after the commit: its columns (``GET _schema``, a few tables at a time) and its
  row count (one ``COUNT(*)`` statement for up to ``COUNTS_PER_STATEMENT`` tables of a database,
  joined by ``UNION ALL``: a commit over hundreds of small tables is not hundreds of queries),
  made only after rows became visible.

A table with a ``transform:`` rule gets the columns its projection makes, which only Spark
knows; its load-time entry therefore has no columns, and its columns come from Doris once written.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from cdc_core.doris.catalog import qualified
from cdc_core.doris.routing import TableRouter
from cdc_core.doris.row_identity import is_identity_column
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.doris.table_creation import TableCreator, default_type_mapper
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.pipeline.context import PipelineContext, transform_rule_index

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class TargetColumn:
    """One column of a Doris table as Tidemark creates it (hidden bookkeeping columns left out)."""

    name: str
    type: str
    key: bool
    nullable: bool


@dataclass(frozen=True)
class DorisTarget:
    """One Doris table the pipeline loads, the source tables routed into it, its columns."""

    table_id: str  # db.table in Doris
    sources: tuple[str, ...]  # db.table in MySQL
    columns: tuple[TargetColumn, ...]  # empty: not known without Doris (a transformed table)

    @property
    def database(self) -> str:
        return TableId.parse(self.table_id).database

    @property
    def table(self) -> str:
        return TableId.parse(self.table_id).table


@dataclass(frozen=True)
class TargetUpdate:
    """A target right after a commit made rows visible in it: Doris's columns and row count."""

    target: DorisTarget
    rows: int


def _latest_schemas(ctx: PipelineContext) -> dict[TableId, TableSchema]:
    found: dict[TableId, TableSchema] = {}
    with ctx.store.transaction(readonly=True) as tx:
        latest = tx.latest_schemas()  # one query, not one per table
    for name, data in sorted(latest.items()):
        if data is not None:  # None: the table was dropped
            found[TableId.parse(name)] = TableSchema.from_dict(data)
    return found


def _expected_columns(creator: TableCreator, schema: TableSchema) -> tuple[TargetColumn, ...]:
    """The source's columns as Doris has them (a keyless table's identity columns left out)."""
    keys = set(schema.primary_key and creator.key_columns(schema))
    return tuple(
        TargetColumn(c.name, creator.doris_type(c, key=c.name in keys), c.name in keys,
                     c.name not in keys and bool(getattr(c, "nullable", True)))
        for c in creator.ordered_columns(schema)
    )


def doris_targets(ctx: PipelineContext) -> list[DorisTarget]:
    """Every Doris table the pipeline writes, from the state store only (empty before planning)."""
    definition = ctx.definition
    router = TableRouter.from_pipeline(definition)
    creator = TableCreator(None, default_type_mapper(definition.source.tinyint1_as_boolean))  # type: ignore[arg-type]
    sources: dict[TableId, list[TableSchema]] = {}
    for table_id, schema in sorted(_latest_schemas(ctx).items(), key=lambda kv: str(kv[0])):
        for target in router.route(table_id):
            sources.setdefault(target, []).append(schema)
    targets = []
    for target, schemas in sorted(sources.items(), key=lambda kv: str(kv[0])):
        transformed = any(transform_rule_index(definition, s.table_id) is not None for s in schemas)
        columns = () if transformed else _expected_columns(creator, schemas[0])
        targets.append(DorisTarget(str(target), tuple(str(s.table_id) for s in schemas), columns))
    return targets


def targets_of_sources(ctx: PipelineContext, source_tables: Iterable[str]) -> list[DorisTarget]:
    """The targets the given source tables are routed into."""
    wanted = set(source_tables)
    return [t for t in doris_targets(ctx) if wanted.intersection(t.sources)]


def targets_of_chunks(ctx: PipelineContext, chunk_keys: Iterable[str]) -> list[DorisTarget]:
    """The targets a set of snapshot chunks (``db.table#00012``) loaded into."""
    return targets_of_sources(ctx, {key.rpartition("#")[0] for key in chunk_keys})


def targets_of_batch(ctx: PipelineContext, batch_id: str) -> list[DorisTarget]:
    """The targets a binlog batch loaded changes into (none for a batch without row changes)."""
    with ctx.store.transaction(readonly=True) as tx:
        record = tx.batch(batch_id)
    if record is None:
        raise KeyError(f"binlog batch {batch_id} is not in the state store of pipeline '{ctx.definition.name}'")
    return targets_of_sources(ctx, ((record.detail or {}).get("events_per_table") or {}).keys())


def target_update(ctx: PipelineContext, target: DorisTarget) -> TargetUpdate:
    """The target as Doris has it now: its columns (from Doris) and its row count."""
    columns = _doris_columns(ctx, target)
    result = ctx.sink.catalog.execute(target.database,
                                      f"SELECT COUNT(*) FROM {qualified(target.database, target.table)}")
    rows = int(result.rows[0][0]) if result.rows else 0
    return TargetUpdate(DorisTarget(target.table_id, target.sources, columns), rows)


def _doris_columns(ctx: PipelineContext, target: DorisTarget) -> tuple[TargetColumn, ...]:
    """The target's columns as Doris has them (the expected ones when Doris has no such table):
    as the sink last created or read the table in this process, which its loads went by
    (``DorisSink.table_info``), else asked of Doris."""
    info = ctx.sink.table_info(TableId(target.database, target.table))
    if info is None:
        return target.columns
    return tuple(
        TargetColumn(c.name, c.type, c.is_key, c.nullable) for c in info.columns
        if c.name not in (DELETE_SIGN, SEQUENCE_COLUMN) and not c.name.startswith("__DORIS_")
        and not is_identity_column(c.name)
    )


COUNTS_PER_STATEMENT = 100  # tables counted by one UNION ALL statement
SCHEMA_STREAMS = 4  # schema requests in flight at once


def target_updates(ctx: PipelineContext, chosen: Sequence[DorisTarget],
                   counted: Mapping[str, int] | None = None) -> list[TargetUpdate]:
    """``target_update`` of many targets, in their order: the row counts of a database's tables
    by one statement per ``COUNTS_PER_STATEMENT`` of them, the schemas ``SCHEMA_STREAMS`` at a time.
    ``counted``: counts already known by table id, still Doris's now (a snapshot run's early
    groups, ``cdc_core/pipeline/parity/doris_ahead.py:counts_after_commit``); Doris counts the others."""
    counts: dict[str, int] = {t.table_id: counted[t.table_id] for t in chosen if t.table_id in (counted or {})}
    if len(chosen) <= 1 and not counts:
        return [target_update(ctx, t) for t in chosen]
    catalog = ctx.sink.catalog
    by_database: dict[str, list[DorisTarget]] = {}
    for target in chosen:
        if target.table_id not in counts:
            by_database.setdefault(target.database, []).append(target)
    for database, targets in by_database.items():
        for i in range(0, len(targets), COUNTS_PER_STATEMENT):
            part = targets[i: i + COUNTS_PER_STATEMENT]
            statement = " UNION ALL ".join(
                f"SELECT {n} AS n, COUNT(*) AS c FROM {qualified(t.database, t.table)}" for n, t in enumerate(part))
            for n, count in catalog.execute(database, statement).rows:
                counts[part[int(n)].table_id] = int(count)

    def with_columns(target: DorisTarget) -> TargetUpdate:
        return TargetUpdate(DorisTarget(target.table_id, target.sources, _doris_columns(ctx, target)),
                            counts.get(target.table_id, 0))

    with ThreadPoolExecutor(max_workers=min(SCHEMA_STREAMS, len(chosen)), thread_name_prefix="tidemark-targets") as pool:
        return list(pool.map(with_columns, chosen))


__all__ = ["DorisTarget", "TargetColumn", "TargetUpdate", "doris_targets", "target_update", "target_updates", "targets_of_batch",
           "targets_of_chunks", "targets_of_sources"]
