"""Which binlog changes the stream must emit once snapshot chunks exist (Flink's ``shouldEmit``).

The stream starts at the minimum high watermark (HW) of all finished chunks (see
:mod:`cdc_core.mysql.hybrid_assigner`). Between that start and a table's maximum HW, a change may
already be inside a chunk: the chunk's rows are the table as it was at the chunk's HW. So, as in
Flink CDC's ``BinlogSplitReader.shouldEmit``:

* a change of a table whose chunks all lie behind it (offset > the table's max HW) is emitted,
  and the table becomes "pure binlog" from then on;
* otherwise the chunk whose key range ``[start, end)`` holds the change's chunk key is found by
  binary search over the table's sorted chunks, and the change is emitted iff its offset is
  after that chunk's HW;
* an UPDATE that moves a row from one chunk to another is judged per image: the removal of the
  old key against the old key's chunk, the new image against the new key's chunk (it becomes a
  DELETE and/or an INSERT when only one side is due);
* tables without chunks: emitted when they are streamed without a snapshot (startup modes other
  than ``initial``, or ``scan.binlog.newly-added-table.enabled`` for tables created later); held
  back when ``scan.newly-added-table.enabled`` (they get a snapshot first, and their chunks join
  the filter with :meth:`BinlogEventFilter.add_chunks`); dropped otherwise.

Key order is MySQL's (``chunk_key_order``): character strings by the chunk-key column's
collation, so case- and accent-insensitive collations order exactly as the chunk query did.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from cdc_core.model.events import DataChangeEvent, Op, SchemaChangeEvent
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.chunk_key_order import ChunkKeyOrder
from cdc_core.mysql.collation import CollationWeigher
from cdc_core.mysql.finished_chunk import FinishedChunk

ChangeEvent = DataChangeEvent | SchemaChangeEvent


class _TableChunks:
    """One table's finished chunks, sorted by start key for binary search."""

    def __init__(self, chunks: list[FinishedChunk], order: ChunkKeyOrder):
        self.order = order
        self.key_column = order.column.name
        self.max_hw = max(c.high_watermark for c in chunks)
        for c in chunks:
            if c.start is not None and c.end is not None and order.bound_key(c.start[0]) > order.bound_key(c.end[0]):
                raise ChunkPlanError(
                    f"chunk {c.table_id}#{c.index} [{c.start[0]!r}, {c.end[0]!r}) ends before it starts in the order "
                    f"of {c.table_id}.{order.column.name}: the split plan is corrupt; plan the snapshot anew"
                )
        # an empty range (start == end in the collation, e.g. ['B', 'b') under a _ci collation) holds no key
        chunks = [c for c in chunks if c.start is None or c.end is None
                  or order.bound_key(c.start[0]) < order.bound_key(c.end[0])]
        chunks = sorted(chunks, key=lambda c: (c.start is not None, order.bound_key(c.start[0]) if c.start else 0))
        for before, after in zip(chunks, chunks[1:], strict=False):
            # Chunks may leave gaps (a filter can hold some of a table's chunks) but never overlap:
            # a key in two chunks would be judged against either high watermark, and rows would
            # come back or double.
            if before.end is None or order.bound_key(before.end[0]) > order.bound_key(after.start[0]):
                raise ChunkPlanError(
                    f"chunks {before.table_id}#{before.index} and #{after.index} overlap in the order of "
                    f"{before.table_id}.{order.column.name}: the split plan is corrupt; plan the snapshot anew"
                )
        self.chunks = chunks
        self.starts = [order.bound_key(c.start[0]) for c in chunks if c.start is not None]
        self.offset = 1 if chunks and chunks[0].start is None else 0

    def find(self, value: Any) -> FinishedChunk | None:
        """The chunk whose ``[start, end)`` holds the key (NULL keys belong to the first chunk)."""
        if not self.chunks:
            return None
        if value is None:
            return self.chunks[0] if self.offset else None
        k = self.order.event_key(value)
        i = bisect.bisect_right(self.starts, k) - 1 + self.offset
        if i < 0:
            return None
        chunk = self.chunks[i]
        if chunk.end is not None and not k < self.order.bound_key(chunk.end[0]):
            return None  # a gap in the chunk list: no chunk holds this key
        return chunk


class ChunkPlanError(ValueError):
    """A table's finished chunks cannot be a split plan (a range ends before it starts, or two overlap)."""


@dataclass
class FilterStats:
    emitted: int = 0
    dropped_by_chunk: int = 0
    dropped_uncaptured: int = 0
    held_for_snapshot: int = 0


@dataclass
class BinlogEventFilter:
    """Decides, per change, whether the stream emits it. Call it on an event: a list comes back
    (empty = drop; two events when a key-moving UPDATE is split)."""

    chunks: list[FinishedChunk]
    schemas: Callable[[TableId], TableSchema | None]
    captured: Callable[[TableId], bool] = lambda _t: True
    stream_tables: set[TableId] = field(default_factory=set)
    newly_added_table_enabled: bool = False
    binlog_newly_added_table_enabled: bool = False
    backfill_skipped: bool = False
    tz: str | dt.tzinfo | None = "UTC"
    tinyint1_as_boolean: bool = True
    weigher: CollationWeigher | None = None
    stats: FilterStats = field(default_factory=FilterStats)
    awaiting_snapshot: set[TableId] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._tables: dict[TableId, _TableChunks] = {}
        self._pure: set[TableId] = set(self.stream_tables)
        self._build(self.chunks)

    def _build(self, chunks: list[FinishedChunk]) -> None:
        by_table: dict[TableId, list[FinishedChunk]] = {}
        for c in chunks:
            by_table.setdefault(c.table_id, []).append(c)
        for table_id, table_chunks in by_table.items():
            if table_id in self._tables:
                table_chunks = self._tables[table_id].chunks + table_chunks
            schema = self.schemas(table_id)
            if schema is None:
                raise ValueError(f"no schema for {table_id}, which has snapshot chunks")
            key_name = next((c.key_columns[0] for c in table_chunks if c.key_columns), None) or (
                schema.primary_key[0] if schema.primary_key else None)
            if key_name is None:
                raise ValueError(f"{table_id} has chunks but no chunk key column and no primary key")
            order = ChunkKeyOrder(table_id, schema.column(key_name), tz=self.tz,
                                  tinyint1_as_boolean=self.tinyint1_as_boolean, weigher=self.weigher)
            self._tables[table_id] = _TableChunks(table_chunks, order)
            self._pure.discard(table_id)
            self.awaiting_snapshot.discard(table_id)

    def add_chunks(self, chunks: Iterable[FinishedChunk]) -> None:
        """Chunks of a newly added table finished: its changes after them are now due."""
        chunks = list(chunks)
        self.chunks = self.chunks + chunks
        self._build(chunks)

    @property
    def start_offset(self) -> BinlogOffset | None:
        """Minimum HW over all chunks: where the stream must start (None without chunks)."""
        return min((c.high_watermark for c in self.chunks), default=None)

    # -- deciding ----------------------------------------------------------------------------

    def apply(self, events: Iterable[ChangeEvent]) -> list[ChangeEvent]:
        """Filter many events (string keys are weighed by the server in one round trip)."""
        events = list(events)
        # the common case, a transaction of tables already past their chunks: no per-event work
        # (TableId hashing is what costs; rows of one rows event share one TableId object)
        last: TableId | None = None
        for e in events:
            if e.table_id is last:
                continue
            last = e.table_id
            if not isinstance(e, DataChangeEvent) or last not in self._pure:
                break
        else:
            self.stats.emitted += len(events)
            return events
        pending: dict[TableId, list[Any]] = {}
        if any(tc.order.is_text for tc in self._tables.values()):
            last, chunked = None, None
            for e in events:
                if e.table_id is not last:
                    last = e.table_id
                    chunked = self._tables.get(last) if last not in self._pure else None
                    if chunked is not None and not chunked.order.is_text:
                        chunked = None
                if chunked is not None and isinstance(e, DataChangeEvent):
                    for image in (e.before, e.after):
                        if image is not None:
                            pending.setdefault(last, []).append(image.get(chunked.key_column))
        for table_id, values in pending.items():
            self._tables[table_id].order.prefetch(values)
        out: list[ChangeEvent] = []
        last = None
        last_pure = False
        for e in events:
            if e.table_id is not last:
                last = e.table_id
                last_pure = last in self._pure
            if last_pure and e.__class__ is DataChangeEvent:
                self.stats.emitted += 1
                out.append(e)
                continue
            out.extend(self(e))
            last = None  # the table may have just become pure binlog
        return out

    def __call__(self, event: ChangeEvent) -> list[ChangeEvent]:
        t = event.table_id
        if isinstance(event, SchemaChangeEvent):
            keep = self._table_wanted(t) or (t in self._tables)
            return [event] if keep else []
        if t in self._pure:
            self.stats.emitted += 1
            return [event]
        tc = self._tables.get(t)
        if tc is None:
            if self._table_wanted(t):
                self.stats.emitted += 1
                return [event]
            return []
        if event.offset > tc.max_hw:
            self._pure.add(t)
            self.stats.emitted += 1
            return [event]
        if self.backfill_skipped:
            self.stats.emitted += 1
            return [event]
        return self._by_chunk(tc, event)

    def _table_wanted(self, t: TableId) -> bool:
        if t in self._pure:
            return True
        if not self.captured(t):
            self.stats.dropped_uncaptured += 1
            return False
        if self.newly_added_table_enabled:
            self.awaiting_snapshot.add(t)
            self.stats.held_for_snapshot += 1
            return False
        if self.binlog_newly_added_table_enabled:
            self._pure.add(t)
            return True
        self.stats.dropped_uncaptured += 1
        return False

    def _due(self, tc: _TableChunks, image: dict[str, Any] | None, offset: BinlogOffset) -> bool:
        if image is None:
            return False
        if tc.key_column not in image:
            # The chunk key was renamed or dropped: no chunk can be told. Emit — a change a chunk
            # already holds is harmless (its sequence value is below the chunk's rows'), a dropped
            # one would be lost.
            return True
        chunk = tc.find(image.get(tc.key_column))
        if chunk is None:
            return True  # no chunk covers the key: nothing snapshotted it, the binlog must carry it
        return offset > chunk.high_watermark

    def _by_chunk(self, tc: _TableChunks, event: DataChangeEvent) -> list[ChangeEvent]:
        if event.op == Op.INSERT:
            keep = self._due(tc, event.after, event.offset)
            return self._count([event] if keep else [])
        if event.op == Op.DELETE:
            keep = self._due(tc, event.before, event.offset)
            return self._count([event] if keep else [])
        before_key = event.before.get(tc.key_column) if event.before else None
        after_key = event.after.get(tc.key_column) if event.after else None
        old_due = self._due(tc, event.before, event.offset)
        new_due = self._due(tc, event.after, event.offset)
        same_chunk = tc.find(before_key) is tc.find(after_key)
        if same_chunk or (old_due and new_due):
            return self._count([event] if new_due else [])
        out: list[ChangeEvent] = []
        if old_due:
            out.append(replace(event, op=Op.DELETE, after=None))
        if new_due:
            out.append(replace(event, op=Op.INSERT, before=None))
        return self._count(out)

    def _count(self, out: list[ChangeEvent]) -> list[ChangeEvent]:
        if out:
            self.stats.emitted += 1
        else:
            self.stats.dropped_by_chunk += 1
        return out
