"""Hand out every captured table's chunks, one table at a time, lazily and resumably.

Flink's ``MySqlSnapshotSplitAssigner``: tables are split in discovery order, one at a time; a
table that splits evenly yields all its chunks at once, an uneven table one chunk per step, so
a huge table never blocks nor sits in memory before its first chunk can be read. After every
step :meth:`SnapshotSplitAssigner.state` is a JSON-able cursor (remaining tables + Flink's
``ChunkSplitterState``); persist it with the step's chunks in one state-store transaction
(:func:`assign_into_store` does that, for several steps that each finish a table at once) and a
restart resumes mid-table.

``scan.incremental.snapshot.unbounded-chunk-first.enabled``: Flink puts a table's ``[x, +∞)``
chunk at the head of the not-yet-assigned chunks. In a plan (all chunks produced before any is
read) that is: per table, the unbounded chunk first, then the others in index order; we assign
in that order. Chunk indexes (split ids) are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from cdc_core.instrumentation.faults import fault_point
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.chunk_splitter import UNLIMITED, Budget, ChunkSplitter, ChunkSplitterState, SplitOptions
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.state.keys import ASSIGNER_STATE
from cdc_core.state.records import ChunkRecord


@dataclass(frozen=True)
class AssignerState:
    """The assigner's cursor: tables not finished yet (first = being split) and the splitter."""

    remaining_tables: tuple[TableId, ...]
    splitter: ChunkSplitterState = field(default_factory=ChunkSplitterState)
    chunks_planned: int = 0  # chunks of the tables already finished (the partition budget's use)

    def to_dict(self) -> dict[str, Any]:
        return {"remaining_tables": [str(t) for t in self.remaining_tables], "splitter": self.splitter.to_dict(),
                "chunks_planned": self.chunks_planned}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AssignerState:
        return cls(tuple(TableId.parse(t) for t in data.get("remaining_tables", [])),
                   ChunkSplitterState.from_dict(data.get("splitter", {})), int(data.get("chunks_planned", 0)))

    @property
    def finished(self) -> bool:
        return not self.remaining_tables


class SnapshotSplitAssigner:
    """Produce the split plan step by step (see module doc)."""

    def __init__(self, conn: Any, tables: list[TableId], schemas: Callable[[TableId], TableSchema],
                 options: SplitOptions, *, unbounded_chunk_first: bool = False,
                 state: AssignerState | None = None):
        self._schemas = schemas
        self._unbounded_first = unbounded_chunk_first
        if state is None:
            state = AssignerState(tuple(tables))
        self._remaining = list(state.remaining_tables)
        self._splitter = ChunkSplitter(conn, options, state.splitter)
        self._options = options
        self._planned = state.chunks_planned
        # the estimated rows of every remaining table, kept as tables finish (linear in the tables)
        self._rows_left = sum(options.approximate_rows(t) or 0 for t in self._remaining)

    def state(self) -> AssignerState:
        return AssignerState(tuple(self._remaining), self._splitter.state(), self._planned)

    def _budget(self) -> Budget:
        """The partitions the table being split may use: the cap less the chunks of finished tables,
        less one for each later table (each has at least one chunk); and the rows estimated after it."""
        if not self._options.max_partitions:
            return UNLIMITED
        later = len(self._remaining) - 1
        rows_after = self._rows_left - (self._options.approximate_rows(self._remaining[0]) or 0)
        return Budget(max(1, self._options.max_partitions - self._planned - later), rows_after)

    @property
    def mid_table(self) -> bool:
        """Whether the last step left its table with chunks still to split."""
        return self._splitter.has_next_chunk()

    def next_batch(self) -> list[SnapshotSplit] | None:
        """The next step's chunks (one table's even chunks, or one uneven chunk); None when done."""
        if not self._remaining:
            return None
        table_id = self._remaining[0]
        self._splitter.budget = self._budget()
        splits = self._splitter.split_chunks(self._schemas(table_id))
        if not self._splitter.has_next_chunk():
            done = self._remaining.pop(0)
            self._rows_left -= self._options.approximate_rows(done) or 0
            self._planned += max(s.index for s in splits) + 1
        if self._unbounded_first:
            splits = [s for s in splits if s.end is None] + [s for s in splits if s.end is not None]
        return splits

    def __iter__(self) -> Iterator[SnapshotSplit]:
        while (batch := self.next_batch()) is not None:
            yield from batch

    def plan(self) -> list[SnapshotSplit]:
        """Every chunk of every remaining table, in assignment order (reads the whole plan)."""
        by_table: dict[TableId, list[SnapshotSplit]] = {}
        while (batch := self.next_batch()) is not None:
            for split in batch:
                by_table.setdefault(split.table_id, []).append(split)
        return [s for splits in by_table.values() for s in self._ordered(splits)]

    def _ordered(self, splits: list[SnapshotSplit]) -> list[SnapshotSplit]:
        if not self._unbounded_first:
            return splits
        return [s for s in splits if s.end is None] + [s for s in splits if s.end is not None]


STEPS_PER_TRANSACTION = 64
"""Steps that each finish a table (a small table's one chunk, a table's even chunks) recorded in
one state-store transaction: a transaction (and its commit) per step cost a database of 300 small
tables 300 commits and 300 rewrites of the cursor, which names every table not finished yet. A
step that leaves its table mid-split (an uneven table's chunk) is recorded at once, as before."""


def assign_into_store(assigner: SnapshotSplitAssigner, store: Any, *, max_steps: int | None = None) -> int:
    """Run the assigner into the state store: the steps' chunks and the cursor after the last of them
    in one transaction, so a restart resumes after the last step recorded and plans the others again.

    Steps are recorded together while each finishes its table, up to :data:`STEPS_PER_TRANSACTION`;
    one that leaves a table mid-split is recorded with those before it at once, so a huge table's
    split is resumable chunk by chunk. Returns how many chunks were added. ``max_steps`` bounds the
    work per call (None: all).
    """
    added = 0
    steps = 0
    pending: list[list[SnapshotSplit]] = []

    def record() -> None:
        with store.transaction() as tx:
            tx.add_chunks(
                ChunkRecord.planned(str(s.table_id), s.index, None if s.start is None else list(s.start),
                                    None if s.end is None else list(s.end))
                for batch in pending for s in batch
            )
            ASSIGNER_STATE.put(tx, assigner.state().to_dict())
        for batch in pending:  # each step is recorded now
            fault_point("plan.after_step", table=str(batch[-1].table_id), chunk=batch[-1].index)
        pending.clear()

    while max_steps is None or steps < max_steps:
        batch = assigner.next_batch()
        if batch is None:
            break
        pending.append(batch)
        added += len(batch)
        steps += 1
        if assigner.mid_table or len(pending) >= STEPS_PER_TRANSACTION:
            record()
    if pending:
        record()
    return added
