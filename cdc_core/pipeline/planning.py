"""Planning the snapshot: check the server, discover the captured tables, split them into chunks.

The first round fixes what the whole pipeline builds on, in one transaction: the binlog offset
the plan starts at, each table's schema at that offset, the chunk size. Before that it checks
the server (binlog settings and grants, ``cdc_core/mysql/server_check.py``), so a server that
cannot be captured fails the first step with the setting or grant to change rather than a
stream that breaks hours later. Splitting is resumable: steps' chunks and the splitter's cursor
are committed together (each step of a table split chunk by chunk; up to 64 steps that each finish
a table), so a huge table's plan resumes where it stopped.

The plan is made here and nowhere else: :func:`plan_splits` records it for a run, and
:func:`next_plan` (``tidemark splits``) shows the one the next run will load: the recorded plan
when there is one, else what :func:`plan_splits` makes now, in a throw-away store.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.names import DorisNameError, name_problems
from cdc_core.doris.routing import TableRouter
from cdc_core.doris.table_creation import TableCreator, default_type_mapper
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.chunk_sizing import table_chunk_rows
from cdc_core.mysql.chunk_splitter import BatchedKeyQueries, SplitOptions
from cdc_core.mysql.discovery import (
    DiscoveryError,
    chunk_key_column,
    read_table_schemas,
    require_matching_tables,
    table_statuses,
)
from cdc_core.mysql.server_check import check_server
from cdc_core.mysql.snapshot_assigner import (
    AssignerState,
    SnapshotSplitAssigner,
    assign_into_store,
)
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types.charsets import UndecodableTextError, charset_problems
from cdc_core.mysql.types.kinds import is_tinyint1
from cdc_core.pipeline.context import PipelineContext, transform_rule_index
from cdc_core.pipeline.keys import chunk_key, parse_chunk_key
from cdc_core.pipeline.results import NextPlan, PlanResult, PlanSource
from cdc_core.pipeline.snapshot_estimate import SNAPSHOT_MODES
from cdc_core.state import ChunkRecord, StateStore
from cdc_core.state.keys import (
    ASSIGNER_STATE,
    CHUNK_SIZE,
    CHUNK_SIZES,
    PLAN_NOTES,
    PLAN_OFFSET,
    PLANNED_TABLES,
    TABLE_ROWS,
    StateKey,
)

logger = logging.getLogger(__name__)


def plan_splits(ctx: PipelineContext, max_steps: int | None = None) -> PlanResult:
    """Discover tables and split them into chunks (resumable), recording the plan.

    If the whole plan would exceed ``tidemark.snapshot.max-partitions`` chunks (Dagster's
    guidance for one partitioned asset: 100k), the chunk size is grown for the pipeline and the
    reason is returned in ``notes``.
    """
    source = ctx.definition.source
    with ctx.store.transaction(readonly=True) as tx:
        saved_state = ASSIGNER_STATE.get(tx)
        notes: list[str] = list(PLAN_NOTES.get_or(tx, []))
    with ctx.connection() as conn:
        read: dict[TableId, TableSchema] = {}
        if saved_state is None:
            saved_state, read = _first_round(ctx, ctx.definition.pipeline.snapshot_max_partitions, notes)
        state = AssignerState.from_dict(saved_state)
        if not state.finished:
            options = planned_split_options(ctx)
            # every remaining table's schema in a few queries, not a few per table (the first round's,
            # read a moment ago on this connection, when it just ran)
            remaining = list(state.remaining_tables)
            schemas = read if all(t in read for t in remaining) else read_table_schemas(conn, remaining,
                                                                                          skip_missing=True)
            # the key bounds of many tables a statement (chunk_splitter.py: BatchedKeyQueries)
            queries = BatchedKeyQueries(conn, [(t, _key_column(schemas.get(t), options)) for t in remaining])
            assigner = SnapshotSplitAssigner(
                queries, [], lambda t: schemas.get(t) or ctx.live_schema(t), options,
                unbounded_chunk_first=source.unbounded_chunk_first, state=state,
            )
            added = assign_into_store(assigner, ctx.store, max_steps=max_steps)
            logger.info("%s: %d chunk(s) planned this round", ctx.definition.name, added)
    with ctx.store.transaction(readonly=True) as tx:
        state = AssignerState.from_dict(ASSIGNER_STATE.get(tx))
        tables = tuple(PLANNED_TABLES.get_or(tx, []))
    if state.finished:
        logger.debug("%s: the split plan is complete", ctx.definition.name)
    return PlanResult(tuple(chunk_keys(ctx)), tables, state.finished, tuple(notes))


def _key_column(schema: TableSchema | None, options: SplitOptions) -> Column | None:
    """The table's chunk key column, None when its schema is not at hand or names none (the splitter
    then reads its bounds alone, and says what is wrong)."""
    if schema is None:
        return None
    try:
        return chunk_key_column(schema, options.chunk_key_column)
    except DiscoveryError:
        return None


def _first_round(ctx: PipelineContext, max_partitions: int, notes: list[str]
                 ) -> tuple[dict, dict[TableId, TableSchema]]:
    """Check the server, then record the tables, their schemas, the chunk size and the plan's offset;
    return the assigner's state and the schemas read."""
    source = ctx.definition.source
    captured = ctx.captured_tables()
    with ctx.connection() as conn:
        # A pattern that matches nothing was a silent no-op ("0 of 0 chunks"): no match at all fails the
        # plan, naming the pattern and the tables it could have meant; a pattern of several that matches
        # nothing yet is a note (a table created later that matches is captured as it appears).
        for unmatched in require_matching_tables(conn, source.selector):
            logger.warning("%s: source.tables: %s", ctx.definition.name, unmatched.describe())
            notes.append(f"source.tables: {unmatched.describe()}; a table created later that matches is captured")
        check_server(conn, captured, user=f"'{ctx.settings.user}'",
                     needs_reload=ctx.definition.pipeline.binlog_on_purged == "resnapshot")
        tables: list[TableId] = captured if source.startup_mode in SNAPSHOT_MODES else []
        start_offset = ctx.aligned_offset()
        chunk_size = SplitOptions.from_source(source).chunk_size
        statuses = table_statuses(conn, tables)
        sizes = table_chunk_rows(statuses, source.chunk_size)
        if tables:
            total = sum(rows for rows, _ in statuses.values())
            chunks = sum(rows / sizes[str(t)] for t, (rows, _) in statuses.items())
            budget = max(1, max_partitions - 2 * len(tables))
            if chunks > budget:
                factor = chunks / budget * 1.1
                grown = {t: int(math.ceil(size * factor)) for t, size in sizes.items()}
                notes.append(
                    f"chunk sizes grown {factor:.1f}x (to {min(grown.values())}-{max(grown.values())} rows): ~{total} "
                    f"rows in {len(tables)} table(s) would need more than {max_partitions} partitions"
                )
                sizes = grown
                chunk_size = int(math.ceil(chunk_size * factor))
        by_table = read_table_schemas(conn, tables)
        schemas = [by_table[t] for t in tables]
    check_doris_names(ctx, schemas)
    check_charsets(schemas)
    state = AssignerState(tuple(tables)).to_dict()
    with ctx.store.transaction() as tx:
        tx.put_schemas((str(schema.table_id), start_offset.sequence, start_offset.to_dict(), schema.to_dict())
                       for schema in schemas)
        CHUNK_SIZE.put(tx, chunk_size)
        CHUNK_SIZES.put(tx, sizes)
        TABLE_ROWS.put(tx, {str(t): rows for t, (rows, _) in statuses.items()})
        PLAN_NOTES.put(tx, notes)
        PLANNED_TABLES.put(tx, [str(t) for t in tables])
        ASSIGNER_STATE.put(tx, state)
        PLAN_OFFSET.put(tx, start_offset)
    logger.info("%s: planning %d table(s) from %s, chunks of %s rows", ctx.definition.name, len(tables),
                start_offset, _sizes_text(sizes) if sizes else chunk_size)
    return state, by_table


def _sizes_text(sizes: dict[str, int]) -> str:
    low, high = min(sizes.values()), max(sizes.values())
    return str(low) if low == high else f"{low}-{high}"


def planned_split_options(ctx: PipelineContext) -> SplitOptions:
    """The split options the plan fixed in its first round: the chunk size and row estimate per table
    (the estimates were read for all tables at once; the splitter need not ask for each again).

    A plan recorded before per-table sizes existed has one ``chunk_size`` for every table."""
    with ctx.store.transaction(readonly=True) as tx:
        chunk_size = CHUNK_SIZE.get(tx)
        sizes = CHUNK_SIZES.get_or(tx, {})
        rows = TABLE_ROWS.get_or(tx, {})
    options = SplitOptions.from_source(ctx.definition.source)
    # the hard cap: the splitter keeps to it whatever the estimates were (chunk_splitter.py's module doc)
    cap = ctx.definition.pipeline.snapshot_max_partitions
    return dataclasses.replace(options, chunk_size=int(chunk_size or options.chunk_size), max_partitions=cap,
                               table_chunk_sizes=tuple(sorted((t, int(n)) for t, n in sizes.items())),
                               table_rows=tuple(sorted((t, int(n)) for t, n in rows.items())),
                               split_pause_s=ctx.definition.pipeline.snapshot_split_pause_ms / 1000)


def check_doris_names(ctx: PipelineContext, schemas: list[TableSchema]) -> None:
    """Refuse, before anything is recorded or loaded, a table or column name (or a key column type)
    Doris would refuse."""
    problems = doris_name_problems(ctx.definition, schemas)
    if problems:
        raise DorisNameError("Doris cannot take these tables as they are (nothing was loaded):\n  "
                             + "\n  ".join(problems))


def check_charsets(schemas: list[TableSchema]) -> None:
    """Refuse, before anything is recorded or loaded, a text column in a charset Tidemark cannot decode
    exactly (never read with a guess: ``cdc_core.mysql.types.charsets``)."""
    problems = charset_problems(schemas)
    if problems:
        raise UndecodableTextError("Tidemark cannot read these columns exactly:\n  " + "\n  ".join(problems))


def doris_name_problems(definition: PipelineDefinition, schemas: list[TableSchema]) -> list[str]:
    """Each name of the Doris tables ``schemas`` go to (by the ``route:`` rules) Doris would refuse,
    and each primary-key column Doris cannot key on (``TableCreator.key_problems``).

    A table with a transform is checked by its Doris table's name only: its columns are the
    projection's.
    """
    router = TableRouter.from_pipeline(definition)
    creator = TableCreator(None, default_type_mapper(definition.source.tinyint1_as_boolean))  # type: ignore[arg-type]
    problems: list[str] = []
    for schema in schemas:
        transformed = transform_rule_index(definition, schema.table_id) is not None
        columns = () if transformed else [c.name for c in schema.columns]
        for target in router.route(schema.table_id):
            problems += name_problems(schema.table_id, target, columns)
            if not transformed:  # a transform's key columns are the projection's
                problems += creator.key_problems(schema, target)
        if not transformed:
            problems += boolean_key_problems(schema, definition.source.tinyint1_as_boolean)
    return problems


def boolean_key_problems(schema: TableSchema, tinyint1_as_boolean: bool) -> list[str]:
    """Each primary-key column that ``treat-tinyint1-as-boolean.enabled`` would read as a boolean.

    A TINYINT(1) holds -128..127; read as a boolean every non-zero value becomes ``true``, so as a
    key column the rows keyed 1, 2, … would overwrite one another in Doris: rows lost without a
    word. Such a table is refused by name, with the way out, before anything is created.
    """
    if not tinyint1_as_boolean:
        return []
    return [
        f"{schema.table_id}: primary-key column {name} is {schema.column(name).column_type}, which "
        "treat-tinyint1-as-boolean.enabled (default true) reads as a boolean, so rows whose keys differ "
        "only in it (1, 2, -1, ...) would overwrite one another in Doris. Set "
        "'treat-tinyint1-as-boolean.enabled: false' in the source block (TINYINT(1) then arrives as TINYINT), "
        "or give the table a transform: rule whose projection casts the column "
        f"(e.g. `CAST({name} AS TINYINT) AS {name}`)"
        for name in schema.primary_key
        if is_tinyint1(schema.column(name))
    ]


def chunk_keys(ctx: PipelineContext) -> list[str]:
    """Every planned chunk, in assignment order (plan order is insertion order in the store)."""
    with ctx.store.transaction(readonly=True) as tx:
        order = PLANNED_TABLES.get_or(tx, [])
        chunks = tx.chunks()
    rank = {t: i for i, t in enumerate(order)}
    chunks.sort(key=lambda c: (rank.get(c.table_id, len(rank)), c.chunk_index))
    return [chunk_key(c.table_id, c.chunk_index) for c in chunks]


def next_plan(definition: PipelineDefinition) -> NextPlan:
    """The split plan the next run of ``definition`` makes, recording nothing (``tidemark splits``).

    A plan is fixed by a run's first planning round (its offset, chunk sizes and the row
    estimates of that moment) and kept in the state store; the run loads those chunks whatever
    the server's estimates say later. So when the state holds a plan, that plan is the answer.
    When it holds none, the plan is made by :func:`plan_splits` itself — the same server check,
    sizing, growth under ``tidemark.snapshot.max-partitions`` and splitter — into an in-memory
    state store that is dropped afterwards: one code path, and nothing written (no state file
    is created for a pipeline that never ran). A second, read-only planner would be a second
    copy of those decisions to keep in step; a dry-run flag through the planner would put "do
    not write" checks into every step that writes. A plan still being split (a huge table
    between rounds) is finished the same way from a copy of its recorded part.

    What ``plan_splits`` computes for a pipeline without a plan still depends on the server's
    row estimates (``SHOW TABLE STATUS``), which InnoDB refreshes in the background: the run
    that follows makes this plan when the estimates have not moved in between.
    """
    recorded = StateStore.open_existing(definition)
    if recorded is not None:
        try:
            with recorded.transaction(readonly=True) as tx:
                state = ASSIGNER_STATE.get(tx)
                planned = [(key, key.get(tx)) for key in _PLAN_KEYS]
                chunks = tx.chunks()
        finally:
            recorded.close()
        if state is not None and AssignerState.from_dict(state).finished:
            ctx = PipelineContext(definition, _store_with(planned, chunks))
            return _next_plan(ctx, PlanSource.RECORDED)
        if state is not None:
            ctx = PipelineContext(definition, _store_with(planned, chunks))
            plan_splits(ctx)
            return _next_plan(ctx, PlanSource.RESUMED)
    ctx = PipelineContext(definition, StateStore.in_memory())
    plan_splits(ctx)
    return _next_plan(ctx, PlanSource.COMPUTED)


_PLAN_KEYS: tuple[StateKey[Any], ...] = (ASSIGNER_STATE, PLANNED_TABLES, CHUNK_SIZE, CHUNK_SIZES, TABLE_ROWS,
                                          PLAN_NOTES)
"""What :func:`plan_splits` reads back to resume a plan (with the chunks)."""


def _store_with(planned: list[tuple[StateKey[Any], Any]], chunks: list[ChunkRecord]) -> StateStore:
    """An in-memory store holding a copy of a recorded plan (its keys and chunks)."""
    store = StateStore.in_memory()
    with store.transaction() as tx:
        for key, value in planned:
            if value is not None:
                key.put(tx, value)
        tx.add_chunks(chunks)
    return store


def _next_plan(ctx: PipelineContext, source: PlanSource) -> NextPlan:
    """The plan in ``ctx``'s store, in :func:`chunk_keys` order (the run's); closes ``ctx``."""
    try:
        with ctx.store.transaction(readonly=True) as tx:
            records = {(c.table_id, c.chunk_index): c for c in tx.chunks()}
            tables = tuple(PLANNED_TABLES.get_or(tx, []))
            notes = tuple(PLAN_NOTES.get_or(tx, []))
        splits = []
        for key in chunk_keys(ctx):
            record = records[parse_chunk_key(key)]
            splits.append(SnapshotSplit(TableId.parse(record.table_id), record.chunk_index,
                                        None if record.start is None else tuple(record.start),
                                        None if record.end is None else tuple(record.end)))
        return NextPlan(tuple(splits), tables, source, notes)
    finally:
        ctx.close()
