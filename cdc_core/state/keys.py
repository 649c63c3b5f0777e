"""Every key of the state store's ``kv`` records, named once, with the type of its value.

The ``kv`` records are small JSON documents by (namespace, key) (``cdc_core/state/store.py``).
Which namespaces and keys exist, and what their values are, is decided here and nowhere else:
a caller reads ``COMMITTED_OFFSET.get(tx)`` and gets a :class:`BinlogOffset` (or None), it never
spells ``"binlog"`` or ``"committed_offset"``. Two kinds of names:

* :class:`StateKey` — one fixed key (the committed offset, the split plan's cursor, a flag);
* :class:`StateMap` — a namespace whose keys are chosen at run time (a reload request per table,
  a Spark job's results per token); ``MAP.key(name)`` is then a :class:`StateKey`.

Invariant: the namespace and key strings and the JSON each ``encode`` writes are the on-disk
layout of every state store written so far. They never change here without a migration
(``MIGRATIONS`` in the store): a store written by an earlier Tidemark must read the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from cdc_core.model.offsets import BinlogOffset

T = TypeVar("T")

JsonDict = dict[str, Any]


class KvReader(Protocol):
    """A store or an open transaction: both read a key."""

    def get(self, namespace: str, key: str, default: Any = None) -> Any: ...


class KvWriter(Protocol):
    """A store or an open transaction: both write a key."""

    def put(self, namespace: str, key: str, value: Any) -> None: ...


class KvTransaction(KvReader, KvWriter, Protocol):
    """An open transaction: it also deletes and lists (``StateTransaction``)."""

    def delete(self, namespace: str, key: str) -> None: ...

    def items(self, namespace: str) -> list[tuple[str, Any]]: ...

    def get_many(self, namespace: str, keys: Sequence[str]) -> dict[str, Any]: ...

    def delete_many(self, namespace: str, keys: Sequence[str]) -> None: ...
    def put_many(self, namespace: str, items: Iterable[tuple[str, Any]]) -> None: ...


def _same(value: Any) -> Any:
    return value


def _offset(data: Any) -> BinlogOffset:
    return BinlogOffset.from_dict(data)


def _offset_dict(offset: BinlogOffset) -> JsonDict:
    return offset.to_dict()


@dataclass(frozen=True)
class StateKey(Generic[T]):
    """One (namespace, key) of the store and how its value is written (``encode``) and read (``decode``)."""

    namespace: str
    name: str
    decode: Callable[[Any], T] = _same
    encode: Callable[[T], Any] = _same

    def get(self, reader: KvReader) -> T | None:
        """The value, or None when the key was never written (or was deleted)."""
        data = reader.get(self.namespace, self.name)
        return None if data is None else self.decode(data)

    def get_or(self, reader: KvReader, default: T) -> T:
        """The value, or ``default`` when there is none."""
        value = self.get(reader)
        return default if value is None else value

    def put(self, writer: KvWriter, value: T) -> None:
        writer.put(self.namespace, self.name, self.encode(value))

    def delete(self, tx: KvTransaction) -> None:
        tx.delete(self.namespace, self.name)


@dataclass(frozen=True)
class StateMap(Generic[T]):
    """A namespace (or the keys under ``prefix`` in one) whose keys are chosen at run time."""

    namespace: str
    prefix: str = ""
    decode: Callable[[Any], T] = _same
    encode: Callable[[T], Any] = _same

    def key(self, name: str) -> StateKey[T]:
        return StateKey(self.namespace, f"{self.prefix}{name}", self.decode, self.encode)

    def get_many(self, tx: KvTransaction, names: Sequence[str]) -> dict[str, T]:
        """The values of those of ``names`` that are written, by name: a few statements for hundreds."""
        found = tx.get_many(self.namespace, [f"{self.prefix}{n}" for n in names])
        return {key[len(self.prefix):]: self.decode(value) for key, value in found.items()}

    def delete_many(self, tx: KvTransaction, names: Sequence[str]) -> None:
        tx.delete_many(self.namespace, [f"{self.prefix}{n}" for n in names])

    def put_many(self, tx: KvTransaction, items: Iterable[tuple[str, T]]) -> None:
        """``key(name).put(tx, value)`` of each ``(name, value)`` in order, in one statement."""
        tx.put_many(self.namespace, [(f"{self.prefix}{n}", self.encode(v)) for n, v in items])

    def items(self, tx: KvTransaction) -> list[tuple[str, T]]:
        """Every (name without the prefix, value) of the map, by key."""
        return [(key[len(self.prefix):], self.decode(value)) for key, value in tx.items(self.namespace)
                if key.startswith(self.prefix)]


# -- meta: the store's identity -----------------------------------------------------------------

LABEL_EPOCH: StateKey[str] = StateKey("meta", "label_epoch")
"""Drawn once per state store; part of every stream-load label (``cdc_core/doris/labels.py``)."""

# -- snapshot: the split plan -------------------------------------------------------------------

ASSIGNER_STATE: StateKey[JsonDict] = StateKey("snapshot", "assigner")
"""The splitter's cursor (``AssignerState.to_dict()``): the tables left to split, the last chunk's end
in the table being split, its next chunk id, the rows split and the chunk size in use, and the chunks
of the finished tables (the partition budget's use). Written with each split step's chunks in one
transaction: a crash resumes the split where it stopped (``cdc_core/mysql/snapshot_assigner.py``)."""
PLANNED_TABLES: StateKey[list[str]] = StateKey("snapshot", "tables")
"""The tables of the split plan, in plan order."""
CHUNK_SIZE: StateKey[int] = StateKey("snapshot", "chunk_size")
"""The pipeline's chunk size as planned (grown under the partition cap)."""
CHUNK_SIZES: StateKey[dict[str, int]] = StateKey("snapshot", "chunk_sizes")
"""Rows per chunk, per table id, as planned."""
TABLE_ROWS: StateKey[dict[str, int]] = StateKey("snapshot", "table_rows")
"""The approximate rows of each planned table when it was planned."""
PLAN_NOTES: StateKey[list[str]] = StateKey("snapshot", "plan_notes")
"""Why the plan differs from the options (chunk sizes grown)."""

# -- binlog: the stream -------------------------------------------------------------------------

COMMITTED_OFFSET: StateKey[BinlogOffset] = StateKey("binlog", "committed_offset", _offset, _offset_dict)
"""Where the stream goes on from: the end of the last committed batch."""
EPOCH_REFERENCE: StateKey[BinlogOffset] = StateKey("binlog", "epoch_reference", _offset, _offset_dict)
"""The committed offset a resnapshot after a purge dropped: while no batch is committed again, the
server and epoch it carries decide the epoch of the new chunks' watermarks
(``PipelineContext.epoch_reference``)."""
PLAN_OFFSET: StateKey[BinlogOffset] = StateKey("binlog", "plan_offset", _offset, _offset_dict)
"""The server's offset when the split plan was made."""
STARTUP: StateKey[JsonDict] = StateKey("binlog", "startup")
"""The resolved startup mode (``StartupPlan.to_dict()``), fixed at first use."""
STARTUP_SCHEMAS: StateKey[bool] = StateKey("binlog", "startup_schemas")
"""True when the captured tables' schemas were recorded at the startup offset."""
PENDING_DDL: StateKey[JsonDict] = StateKey("binlog", "pending_ddl")
"""The DDL the last prepared batch stopped before."""
LAST_BATCH_READ: StateKey[float] = StateKey("binlog", "last_batch_read")
"""When (epoch seconds) the last batch with changes to load began its loads: the next such batch waits
``tidemark.binlog.batch-interval-s`` from then, in any process (at most one load per table and interval).
The key's name is older: it held when the batch began reading, until a batch with nothing to load
stopped waiting (``binlog_batch._pace``)."""

# -- flags ----------------------------------------------------------------------------------------

BINLOG_PAUSED: StateKey[Any] = StateKey("flags", "binlog_paused")
"""Set (truthy: a reason, a dict) while the stream must not read on (a schema change)."""

# -- schema_registry: the schema-change coordinator ---------------------------------------------

SCHEMA_CHANGE_REQUEST: StateKey[JsonDict] = StateKey("schema_registry", "current")
"""The schema change under way, with its status."""
SCHEMA_CHANGE_SCAN: StateKey[JsonDict] = StateKey("schema_registry", "scan")
"""The DDL scan's memo: how far the binlog was scanned for schema changes."""
SCHEMA_CHANGES_DONE: StateMap[JsonDict] = StateMap("schema_registry", prefix="done:")
"""Finished schema changes by their DDL offset (:func:`done_name`)."""
EVOLVED_SCHEMAS: StateMap[JsonDict] = StateMap("schema_registry.evolved")
"""A Doris table's schema as the schema changes evolved it, by target table id."""

# -- other namespaces ----------------------------------------------------------------------------

RELOAD_REQUESTS: StateMap[JsonDict] = StateMap("reload")
"""Tables to read again after a schema change, by table id (``cdc_core/pipeline/reload.py``)."""
STALE_IDENTITIES: StateMap[JsonDict] = StateMap("stale_identities")
"""Keyless tables whose rows' identities a column change made stale, whose reload waits for the
server to have them as they were (``cdc_core/pipeline/schema_change.py``), by table id."""
SPARK_RESULTS: StateMap[list[JsonDict]] = StateMap("spark_results")
"""A Spark write's task messages, by the job's token, until the driver takes them."""
STEP_LEDGER: StateMap[JsonDict] = StateMap("orchestration.steps")
"""What a Dagster step prepared, by ``<run id>/<step key>``."""
PARITY_MYSQL_SIDE: StateMap[JsonDict] = StateMap("parity_mysql_side")
"""MySQL's side of a chunk's parity check, computed during its commit, by chunk key."""
PARITY_DORIS_SIDE: StateMap[JsonDict] = StateMap("parity_doris_side")
"""Doris's side of a whole-table chunk's parity check, computed after its group's commit, by chunk key
(``cdc_core/pipeline/parity/doris_ahead.py``)."""
REPAIR_LOADS: StateMap[JsonDict] = StateMap("repair")
"""A repair's loads, by table id, recorded before they are precommitted and removed once committed: what a
killed repair left precommitted is aborted by the next (``cdc_core/pipeline/parity/repair.py``)."""
LEASES: StateMap[JsonDict] = StateMap("lease")
"""Who runs what of the pipeline now, by scope (``pipeline``, ``stream``, ``plan``, ``snapshot:<table>``): owner,
heartbeat and expiry on the database's clock (``cdc_core/state/leases.py``)."""


def done_name(offset: BinlogOffset) -> str:
    """The name of a finished schema change in :data:`SCHEMA_CHANGES_DONE`: sortable by offset."""
    return f"{offset.sequence:020d}"


NAMESPACES: tuple[str, ...] = ("meta", "snapshot", "binlog", "flags", "schema_registry", "schema_registry.evolved",
                               "reload", "stale_identities", "spark_results", "orchestration.steps",
                               "parity_mysql_side", "parity_doris_side", "repair", "lease")
"""Every namespace of the ``kv`` records."""
