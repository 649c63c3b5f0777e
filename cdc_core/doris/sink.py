"""The Doris sink as the jobs and the Dagster hooks use it: one object, one method per step.

::

    sink = DorisSink.from_pipeline(definition, label_epoch=..., type_mapper=...)
    sink.recover(commit=[...], abort=[...], probe=[...])     # at start (exactly-once rule 2)
    target = sink.route(source_table_id)[0]                   # routing rules
    sink.create_table(schema, target)                         # CREATE or check, cached layout
    c = sink.load(target, "chunk-3-g0", rows, sequence=hw.sequence)   # → Committable (PRECOMMITTED)
    ...state store records c.to_dict() as PREPARED...
    sink.commit([c])  /  sink.abort([c])                      # idempotent
    sink.apply_schema_change(event, target)                   # DDL, idempotent

The sink itself holds no state that matters across processes: labels are deterministic, the
layout of each table is read from Doris when first needed, and committables are plain values.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from cdc_core.config.selectors import TableSelector
from cdc_core.config.sink_options import DorisSinkOptions
from cdc_core.doris import oversize
from cdc_core.doris.arrow_layout import arrow_ready, arrow_types
from cdc_core.doris.catalog import DorisCatalog, DorisTableInfo, qualified
from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.committable import Committable
from cdc_core.doris.errors import StreamLoadError, TableMismatchError, TransactionLostError
from cdc_core.doris.labels import label_prefix, make_label
from cdc_core.doris.metadata_applier import AppliedChange, DorisMetadataApplier
from cdc_core.doris.partitioning import PartitionSpec, auto_partition_spec, partition_unit
from cdc_core.doris.routing import TableRouter
from cdc_core.doris.row_identity import ROW_HASH, salt_of, with_identity
from cdc_core.doris.rows import DELETE_SIGN
from cdc_core.doris.stream_load import StreamLoader
from cdc_core.doris.table_creation import (
    DorisTable,
    KeylessMode,
    TableCreator,
    TypeMapper,
    default_type_mapper,
)
from cdc_core.doris.transaction_recovery import LabelRef, RecoveryReport, TransactionRecovery
from cdc_core.doris.transactions import TwoPhaseCommitter
from cdc_core.model.events import SchemaChangeEvent
from cdc_core.model.schema import TableId, TableSchema

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DorisTables:
    """What one read of the run's Doris databases found (:meth:`DorisSink.doris_tables`): the
    targets that do not exist, and the column names (in order) of those that do; a target in
    neither was not read (asked table by table)."""

    absent: frozenset[TableId] = frozenset()
    columns: Mapping[TableId, tuple[str, ...]] = field(default_factory=dict)


class DorisSink:
    """One pipeline's Doris side. ``label_prefix`` is the effective prefix of its labels, the
    state store's epoch included (``labels.label_prefix``): the sink owns it, and the Spark jobs
    take it from the sink (``jobs/specs.py:SinkSpec``), never from the definition."""

    def __init__(self, client: DorisHttpClient, label_prefix: str, *, router: TableRouter | None = None,
                 type_mapper: TypeMapper | None = None, table_properties: Mapping[str, str] | None = None,
                 stream_load_properties: Mapping[str, str] | None = None, fmt: str | None = None,
                 gzip: bool = False, enable_delete: bool = True,
                 include_schema_changes: Sequence[str] | None = None,
                 exclude_schema_changes: Sequence[str] | None = None,
                 table_options: Callable[[TableId], Mapping[str, str]] | None = None,
                 partition_keys: Callable[[TableId], tuple[int, tuple[str, ...]] | None] | None = None,
                 auto_partition_properties: Mapping[str, str] | None = None,
                 keyless: KeylessMode | str = KeylessMode.EXACT,
                 transformed: Callable[[TableId], bool] | None = None,
                 merged: Callable[[TableId], bool] | None = None, default_format: str | None = None):
        self.client = client
        self.label_prefix = label_prefix
        self.router = router or TableRouter()
        self.committer = TwoPhaseCommitter(client)
        # ``default_format``: how typed rows travel when the pipeline names no format, when already
        # known (a task's sink gets the driver's); else the FE is asked once (cdc_core/doris/version.py)
        self.loader = StreamLoader(client, properties=stream_load_properties, fmt=fmt, gzip=gzip,
                                   committer=self.committer, default_format=default_format)
        self.catalog = DorisCatalog(client)
        self._type_mapper = type_mapper
        self.table_properties = dict(table_properties or {})
        # a transform rule's ``table-options``, per source table: Doris properties at creation
        self.table_options = table_options or (lambda _source: {})
        # a transform rule's ``partition-keys`` per source table (the rule's index, the columns), and
        # ``table.create.auto-partition.properties.*``: how tables are partitioned at creation
        self.partition_keys = partition_keys or (lambda _source: None)
        self.auto_partition_properties = dict(auto_partition_properties or {})
        self.enable_delete = enable_delete
        # table.create.keyless; a keyless table with a transform: rule is created APPEND (the binlog
        # path cannot hash its projected images: cdc_core/doris/table_creation.py)
        self.keyless = KeylessMode(keyless)
        self.transformed = transformed or (lambda _source: False)
        # whether a source's Doris table receives other source tables too (asked only when a
        # keyless table is created: its identity is then salted with the source's name)
        self.merged = merged or (lambda _source: False)
        self.include_schema_changes = tuple(include_schema_changes) if include_schema_changes is not None else None
        self.exclude_schema_changes = tuple(exclude_schema_changes or ())
        self._tables: dict[TableId, DorisTable] = {}
        # what Doris said of each table this sink created or read (``table_info``), forgotten with
        # its layout
        self._infos: dict[TableId, DorisTableInfo] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_options(cls, options: DorisSinkOptions, label_prefix: str, **kwargs: Any) -> DorisSink:
        """The one factory of a sink from its ``sink:`` options: the driver's (:meth:`from_pipeline`,
        which adds the routes, the transforms' table options and the type mapper) and every Spark
        worker's (``jobs/doris_writer.py:make_sink``, which loads into named targets and needs none
        of those). ``label_prefix`` is the effective one, epoch included (``labels.label_prefix``)."""
        settings: dict[str, Any] = {
            "table_properties": options.table_create_properties,
            "stream_load_properties": options.stream_load_properties,
            "enable_delete": options.enable_delete,
            "include_schema_changes": options.include_schema_changes,
            "exclude_schema_changes": options.exclude_schema_changes,
            "auto_partition_properties": options.table_create_auto_partition_properties,
            "keyless": options.table_create_keyless,
        }
        settings.update(kwargs)
        return cls(DorisHttpClient.from_options(options), label_prefix, **settings)

    @classmethod
    def from_pipeline(cls, definition: Any, *, label_epoch: str | None, type_mapper: TypeMapper | None = None,
                      **overrides: Any) -> DorisSink:
        """From a ``PipelineDefinition``: ``sink:`` options, ``route:`` rules, transform table options.

        ``label_epoch``: the state store's (``PipelineContext.label_epoch``), None for a sink
        without one; with the pipeline's configured prefix it makes :attr:`label_prefix`.
        """
        if type_mapper is None:
            tinyint = getattr(definition.source, "tinyint1_as_boolean", True)
            try:
                type_mapper = default_type_mapper(tinyint)
            except RuntimeError:
                type_mapper = None
        kwargs: dict[str, Any] = {
            "router": TableRouter.from_pipeline(definition),
            "type_mapper": type_mapper,
            "table_options": _rule_table_options(definition),
            "partition_keys": _rule_partition_keys(definition),
            "transformed": _rule_matches(definition),
        }
        kwargs.update(overrides)
        prefix = label_prefix(definition.sink.configured_label_prefix, definition.name, label_epoch)
        return cls.from_options(definition.sink, prefix, **kwargs)

    # -- routing and tables -----------------------------------------------------------------------

    def route(self, source: TableId) -> tuple[TableId, ...]:
        """The Doris table(s) of a source table."""
        return self.router.route(source)

    @property
    def type_mapper(self) -> TypeMapper:
        if self._type_mapper is None:
            self._type_mapper = default_type_mapper()
        return self._type_mapper

    @property
    def creator(self) -> TableCreator:
        return TableCreator(self.catalog, self.type_mapper, properties=self.table_properties, keyless=self.keyless)

    def keyless_mode(self, source: TableId) -> KeylessMode:
        """How ``source``'s table is created should it have no primary key (append with a transform)."""
        return KeylessMode.APPEND if self.transformed(source) else self.keyless

    def creator_for(self, source: TableId) -> TableCreator:
        """The creator for ``source``'s Doris table: sink properties, then its transform's table-options."""
        properties = {**self.table_properties, **self.table_options(source)}
        return TableCreator(self.catalog, self.type_mapper, properties=properties,
                            partition=lambda target: self.partition_spec(source, target),
                            keyless=self.keyless_mode(source), merged=_Lazy(lambda: self.merged(source)))

    def partition_spec(self, source: TableId, target: TableId) -> PartitionSpec | None:
        """How ``target`` (``source``'s Doris table) is partitioned at creation: the transform rule's
        ``partition-keys``, else the auto-partition properties (``cdc_core/doris/partitioning.py``)."""
        rule = self.partition_keys(source)
        if rule is not None:
            index, columns = rule
            return PartitionSpec(columns, partition_unit(self.auto_partition_properties, target),
                                 f"transform[{index}].partition-keys")
        return auto_partition_spec(self.auto_partition_properties, target)

    def create_table(self, schema: TableSchema, target: TableId | None = None, *,
                     absent: bool = False) -> DorisTable:
        """Create the Doris table for ``schema`` (or check the existing one) and remember its layout
        (``absent``: just seen missing, in a database that exists: ``doris_tables``)."""
        target = target or self.route(schema.table_id)[0]
        info = self.creator_for(schema.table_id).ensure_info(schema, target, absent=absent)
        table = DorisTable.from_info(info)
        with self._lock:
            self._tables[target] = table
            self._infos[target] = info
        return table

    def doris_tables(self, targets: Iterable[TableId]) -> DorisTables:
        """Which of ``targets`` Doris does not have, and the columns of those it has, asked in one
        statement per database (a database that does not exist is created here, once). A snapshot
        of a whole database prepares hundreds of tables; asking about each, and about its database,
        was two or three requests per table before its ``CREATE TABLE``. A database too large to
        list leaves its targets unknown (neither absent nor listed): they are asked table by table
        as before."""
        by_database: dict[str, list[TableId]] = {}
        for target in targets:
            by_database.setdefault(target.database, []).append(target)
        absent: set[TableId] = set()
        columns: dict[TableId, tuple[str, ...]] = {}
        for database, wanted in by_database.items():
            found = self.catalog.table_columns(database)
            if found is None:
                continue
            if not found and not self.catalog.database_exists(database):
                self.catalog.create_database(database)
            lowered = {n.lower(): c for n, c in found.items()}
            for target in wanted:
                if target.table.lower() in lowered:
                    columns[target] = lowered[target.table.lower()]
                else:
                    absent.add(target)
        return DorisTables(frozenset(absent), columns)

    def ensure_table(self, schema: TableSchema, target: TableId) -> None:
        """``target`` exists afterwards. A table this sink created or read is known to exist (its
        cached layout, which every change that drops or re-creates the table forgets); any other is
        asked of Doris once, and created (for ``schema``) when it is missing. A binlog batch touches
        every table written since the last one: asking Doris about each at every batch cost a
        request per table per batch."""
        with self._lock:
            if target in self._tables:
                return
        info = self.catalog.table_info(target.database, target.table)
        if info is None:
            self.create_table(schema, target)
            return
        with self._lock:
            self._tables.setdefault(target, DorisTable.from_info(info))
            self._infos.setdefault(target, info)

    def remember(self, target: TableId, table: DorisTable) -> None:
        """Take ``table`` as ``target``'s layout unless one is cached: the driver's, read or created
        just before a snapshot job (``WriterSpec.layouts``), saves each task's sink a schema read
        per table."""
        with self._lock:
            self._tables.setdefault(target, table)

    def forget(self, target: TableId) -> None:
        """Drop the cached layout of ``target`` (the table was dropped or re-created)."""
        with self._lock:
            self._tables.pop(target, None)
            self._infos.pop(target, None)

    def table_info(self, target: TableId) -> DorisTableInfo | None:
        """What Doris says of ``target`` (None: no such table): as this sink last created or read
        it, the same description its loads go by, else asked of Doris (``GET .../_schema``). A
        commit's report of the tables it wrote (``cdc_core/pipeline/targets.py``) needs every
        table's columns, which the run that created or checked them has just read: asking again
        cost a request per table of a database of small tables."""
        with self._lock:
            cached = self._infos.get(target)
        if cached is not None:
            return cached
        info = self.catalog.table_info(target.database, target.table)
        if info is not None:
            with self._lock:
                self._infos[target] = info
        return info

    def table(self, target: TableId, *, refresh: bool = False) -> DorisTable:
        """The layout of an existing Doris table (read once, then cached)."""
        with self._lock:
            cached = None if refresh else self._tables.get(target)
        if cached is not None:
            return cached
        info = self.catalog.table_info(target.database, target.table)
        if info is None:
            raise TableMismatchError(
                f"Doris table {target} does not exist; create it first (create_table) or check the routes"
            )
        table = DorisTable.from_info(info)
        with self._lock:
            self._tables[target] = table
            self._infos[target] = info
        return table

    # -- exactly-once loads -----------------------------------------------------------------------

    @property
    def load_format(self) -> str:
        """How typed (Arrow) rows travel: the pipeline's ``sink.properties.format``, else ``arrow``
        on Doris 2.1 or later and ``json`` before (asked of the FE once per process)."""
        return self.loader.default_format()

    @property
    def loads_arrow(self) -> bool:
        """Whether rows built as Arrow travel as Arrow (to a table whose columns all go as Arrow)."""
        return self.load_format == "arrow"

    def loads_arrow_into(self, target: TableId) -> bool:
        """Whether Arrow rows for ``target`` travel as Arrow: a caller that holds a schema (a binlog
        batch) then builds them so. Otherwise they would go as JSON lines, and dicts get there for
        less: a binlog batch's few rows per table cost more as Arrow kernels, a call per column, than
        as one ``json.dumps`` per row (a 300-table stream's batches)."""
        if not self.loads_arrow:
            return False
        return self.loader.explicit_format or arrow_ready(arrow_types(self.table(target).column_types))

    def label(self, target: TableId, batch_id: str) -> str:
        return make_label(self.label_prefix, target.database, target.table, batch_id)

    def load(self, target: TableId, batch_id: str, rows: Any, *, sequence: int | None = None,
             fmt: str | None = None, fresh: bool = False, source: TableId | None = None) -> Committable:
        """Precommit one batch of rows into ``target``; the label comes from ``batch_id``.

        ``rows``: dicts (``rows.event_row``/``snapshot_row`` add the delete sign and the
        sequence) or a pyarrow Table/RecordBatch(es). ``sequence`` fills the sequence column
        where a row has none (a snapshot chunk's high watermark ``.sequence``). ``fresh``: what an
        earlier attempt precommitted under the label is aborted, not reused (a snapshot chunk).
        ``source``: the source table of a fresh chunk's rows, for a merged keyless table's identity.
        """
        table = self.table(target)
        if table.row_identity:
            rows = _identified(rows, table, target, fresh, source)
        delete_sign = table.unique and self.enable_delete
        if not delete_sign:
            rows = _drop_deletes(rows, target, "has no primary key in Doris" if not table.unique
                                 else "is loaded with sink.enable-delete false")
        try:
            return self.loader.load(
                target.database, target.table, self.label(target, batch_id), rows,
                columns=table.columns, delete_sign=delete_sign,
                sequence=sequence if table.sequence_column else None, fmt=fmt, fresh=fresh,
                arrow_types=arrow_types(table.column_types),
            )
        except StreamLoadError as exc:
            text = f"{exc.message}\n{exc.error_log or ''}"
            if not oversize.is_too_long(text):
                raise
            info = self.catalog.table_info(target.database, target.table)
            keys = tuple(info.key_columns) if info is not None else ()
            message = oversize.explain(str(target), text, rows, keys)
            if message is None:
                raise
            raise StreamLoadError(f"{message}\n{exc}", message=exc.message, error_url=exc.error_url, error_log=exc.error_log,
                                  response=exc.response) from exc

    def load_buffers(self, batches: Mapping[TableId, Any], batch_id: str, *,
                     sequence: int | None = None) -> list[Committable]:
        """One load per Doris table for one batch (``TableBuffers.drain()``); all precommitted or none.

        Should one table's load fail, the ones already precommitted are aborted before the error
        propagates, so a failed batch leaves nothing behind (a retry would find them anyway).
        """
        done: list[Committable] = []
        try:
            for target, rows in batches.items():
                done.append(self.load(target, batch_id, rows, sequence=sequence))
        except BaseException:
            for c in done:
                try:
                    self.committer.abort(c)
                except Exception as exc:  # noqa: BLE001 - the load error is the one to report
                    log.warning("could not abort %s after a failed batch: %s", c.describe(), exc)
            raise
        return done

    def commit(self, committables: Iterable[Committable | Mapping[str, Any]]) -> None:
        """Commit every committable (idempotent: already committed is success)."""
        for c in committables:
            self.committer.commit(c if isinstance(c, Committable) else Committable.from_dict(c))

    def commit_surviving(self, committables: Iterable[Committable | Mapping[str, Any]], *,
                         streams: int = 1) -> list[Committable]:
        """Commit every committable Doris still holds and return those it lost (aborted on its own
        or forgotten): their rows must be loaded again. Every other one ends committed, so nothing
        is left precommitted behind a lost one.

        ``streams``: commits in flight at once (each is a round trip to the FE; the loads of one
        binlog batch are of distinct tables, so their order does not matter). With more than one,
        every commit is tried and the first other failure is raised once all have ended; what
        failed stays precommitted for the next run's ``resolve_pending``."""
        items = [c if isinstance(c, Committable) else Committable.from_dict(c) for c in committables]

        def one(committable: Committable) -> Committable | None:
            try:
                self.committer.commit(committable)
            except TransactionLostError as exc:
                log.warning("%s", exc)
                return committable
            return None

        if streams <= 1 or len(items) <= 1:
            return [c for c in map(one, items) if c is not None]
        with ThreadPoolExecutor(max_workers=min(streams, len(items)), thread_name_prefix="tidemark-commit") as pool:
            futures = [pool.submit(one, c) for c in items]
        lost: list[Committable] = []
        errors: list[BaseException] = []
        for future in futures:
            try:
                result = future.result()
            except Exception as exc:  # noqa: BLE001 - every commit is tried; the first failure is raised
                errors.append(exc)
                continue
            if result is not None:
                lost.append(result)
        if errors:
            raise errors[0]
        return lost

    def abort(self, committables: Iterable[Committable | Mapping[str, Any]]) -> None:
        """Abort every committable (idempotent: already aborted or unknown is success)."""
        for c in committables:
            self.committer.abort(c if isinstance(c, Committable) else Committable.from_dict(c))

    def recover(self, *, commit: Iterable[Committable] = (), abort: Iterable[Committable] = (),
                probe: Iterable[LabelRef | tuple[TableId, str]] = ()) -> RecoveryReport:
        """Finish a previous run: commit ``commit``, abort ``abort``, abort lingering ``probe`` labels.

        ``probe`` items are ``LabelRef``s or ``(target TableId, batch_id)`` pairs.
        """
        refs = [p if isinstance(p, LabelRef) else LabelRef(p[0].database, p[0].table, self.label(p[0], p[1]))
                for p in probe]
        recovery = TransactionRecovery(self.committer, self.loader)
        return recovery.recover(commit=[_as_committable(c) for c in commit],
                                abort=[_as_committable(c) for c in abort], probe=refs)

    # -- schema changes -----------------------------------------------------------------------------

    def apply_schema_change(self, event: SchemaChangeEvent, target: TableId | None = None, *,
                            merged: bool = False) -> AppliedChange:
        """Apply one DDL event to its Doris table (idempotent); the cached layout is refreshed."""
        target = target or self.route(event.table_id)[0]
        if not self.accepts(event):
            return AppliedChange("ignored", target, reason=f"{event.type_name} is excluded by the sink's "
                                                           "include/exclude.schema.changes")
        applier = DorisMetadataApplier(self.catalog, self.creator_for(event.table_id))
        result = applier.apply(event, target, merged=merged)
        self.forget(target)
        return result

    def recreate_table(self, schema: TableSchema, target: TableId) -> str:
        """Drop Doris table ``target`` and create it again from ``schema`` (its key and model with it):
        what ``tidemark resnapshot --table`` does at a change Doris cannot make in place, such as a new
        primary key. Idempotent: a crash between the two statements leaves no table, which the next
        call creates. The rows are the caller's to read again."""
        self.catalog.execute(target.database, f"DROP TABLE IF EXISTS {qualified(target.database, target.table)}")
        self.creator_for(schema.table_id).ensure(schema, target)
        self.forget(target)
        log.warning("re-created Doris table %s from the schema of %s (key: %s)", target, schema.table_id,
                    ", ".join(schema.primary_key) or "none")
        return f"DROP TABLE {target}; CREATE TABLE {target} keyed on ({', '.join(schema.primary_key) or 'none'})"

    def accepts(self, event: SchemaChangeEvent) -> bool:
        """Whether ``include.schema.changes`` / ``exclude.schema.changes`` let this change through.

        Flink CDC's matching: an item names a type (``add.column``) or a group of them (``add``,
        ``column`` — a leading or trailing part). Table creation is always applied.
        """
        kind = event.type_name
        if kind == "create.table":
            return True

        def hit(items: Sequence[str]) -> bool:
            return any(kind == i or kind.startswith(f"{i}.") or kind.endswith(f".{i}") for i in items)

        if self.include_schema_changes is not None and not hit(self.include_schema_changes):
            return False
        return not hit(self.exclude_schema_changes)

    def close(self) -> None:
        self.client.close()


class _Lazy:
    """A truth value computed when first asked (whether a target is merged costs a MySQL query)."""

    def __init__(self, compute: Callable[[], bool]):
        self._compute = compute
        self._value: bool | None = None

    def __bool__(self) -> bool:
        if self._value is None:
            self._value = bool(self._compute())
        return self._value


def _as_committable(c: Committable | Mapping[str, Any]) -> Committable:
    return c if isinstance(c, Committable) else Committable.from_dict(dict(c))


def _is_arrow(rows: Any) -> bool:
    import pyarrow as pa

    return isinstance(rows, pa.Table | pa.RecordBatch) or (
        isinstance(rows, Sequence) and bool(rows) and isinstance(rows[0], pa.RecordBatch))


def _identified(rows: Any, table: DorisTable, target: TableId, fresh: bool, source: TableId | None) -> Any:
    """Rows for a keyless table's exact form, with their identity: a binlog batch's carry it (the
    copies come from Doris, ``cdc_core/pipeline/keyless.py``); a snapshot chunk's (``fresh``: it
    holds every copy of its images) get it here."""
    import pyarrow as pa

    if fresh and table.identity_salted and source is None:
        raise ValueError(f"{target} merges several keyless source tables, whose rows' identity includes the source "
                         "table's name: a chunk's load must name its source table")
    salt = salt_of(source) if table.identity_salted else b""
    if _is_arrow(rows):
        arrow = rows if isinstance(rows, pa.Table) else (
            pa.Table.from_batches([rows]) if isinstance(rows, pa.RecordBatch) else pa.Table.from_batches(list(rows)))
        if ROW_HASH in arrow.column_names:
            return arrow
        if fresh:
            return with_identity(arrow, [c for c in table.visible_columns if c in arrow.column_names], salt)
    else:
        rows = list(rows)
        if all(ROW_HASH in r for r in rows):
            return rows
        if fresh:
            names = table.visible_columns
            arrow = with_identity(pa.Table.from_pylist([{n: r.get(n) for n in names} for r in rows]), names, salt)
            return [{**r, **i} for r, i in zip(rows, arrow.select(list(arrow.column_names[:2])).to_pylist(),
                                               strict=True)]
    raise ValueError(f"{target} is keyed by the row identity of its keyless source, and these rows carry none: only a "
                     "whole snapshot chunk can be given one here; binlog rows get theirs from "
                     "cdc_core/pipeline/keyless.py")


def _drop_deletes(rows: Any, target: TableId, why: str) -> Any:
    """Rows without their deletes: a table that cannot delete would insert them again."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if _is_arrow(rows):
        table = rows if isinstance(rows, pa.Table) else (
            pa.Table.from_batches([rows]) if isinstance(rows, pa.RecordBatch) else pa.Table.from_batches(list(rows)))
        if DELETE_SIGN not in table.column_names:
            return table
        keep = pc.invert(pc.fill_null(pc.equal(table.column(DELETE_SIGN).cast(pa.int8()), 1), False))
        kept = table.filter(keep)
        if kept.num_rows != table.num_rows:
            log.warning("%s %s: %d delete(s) not applied", target, why, table.num_rows - kept.num_rows)
        return kept
    if isinstance(rows, Sequence):
        kept = [r for r in rows if not _is_delete(r)]
        if len(kept) != len(rows):
            log.warning("%s %s: %d delete(s) not applied", target, why, len(rows) - len(kept))
        return kept
    return (r for r in rows if not _is_delete(r))


def _is_delete(row: Mapping[str, Any]) -> bool:
    sign = row.get(DELETE_SIGN)
    return sign is not None and str(sign) in ("1", "true", "True")


def _rule_partition_keys(definition: Any) -> Callable[[TableId], tuple[int, tuple[str, ...]] | None]:
    """The ``partition-keys`` of the first ``transform:`` rule matching a source table (and the rule's index)."""
    rules = [(i, TableSelector.parse(r.source_table), r.partition_columns())
             for i, r in enumerate(getattr(definition, "transforms", ()))]

    def keys(source: TableId) -> tuple[int, tuple[str, ...]] | None:
        for index, selector, columns in rules:
            if selector.matches(source.database, source.table):
                return (index, columns) if columns else None
        return None

    return keys


def _rule_matches(definition: Any) -> Callable[[TableId], bool]:
    """Whether a ``transform:`` rule matches a source table."""
    selectors = [TableSelector.parse(r.source_table) for r in getattr(definition, "transforms", ())]
    return lambda source: any(s.matches(source.database, source.table) for s in selectors)


def _rule_table_options(definition: Any) -> Callable[[TableId], Mapping[str, str]]:
    """The ``table-options`` of the first ``transform:`` rule matching a source table (Flink CDC's rule)."""
    rules = [(TableSelector.parse(r.source_table), r.table_properties()) for r in getattr(definition, "transforms", ())]

    def options(source: TableId) -> Mapping[str, str]:
        for selector, props in rules:
            if selector.matches(source.database, source.table):
                return props
        return {}

    return options
