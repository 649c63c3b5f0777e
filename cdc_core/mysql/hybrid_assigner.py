"""From finished snapshot chunks to the one binlog split (Flink's ``MySqlHybridSplitAssigner``).

The binlog split starts at the **minimum high watermark** of all finished chunks and carries
every chunk's ``(table, index, start, end, HW)``, which the stream's
:class:`~cdc_core.mysql.binlog_filter.BinlogEventFilter` uses to drop changes a chunk already
holds. In ``snapshot`` startup mode the split also stops, at the **maximum** HW, so that the
pipeline ends with a consistent view of the tables as of the last chunk's high watermark (as
Flink CDC's hybrid assigner does).

Tidemark runs the stream as micro-batches: :meth:`HybridSplitAssigner.next_split` gives each
batch its split — from the committed offset (before the first batch: the startup plan's offset,
or the minimum HW) to the server's position or the snapshot's maximum HW. The pipeline service
calls it for every batch, and ``tests/binlog/test_hybrid_property.py`` checks it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.binlog_filter import BinlogEventFilter
from cdc_core.mysql.collation import CollationWeigher
from cdc_core.mysql.finished_chunk import FinishedChunk
from cdc_core.mysql.startup import StartupPlan
from cdc_core.state.records import ChunkRecord


@dataclass(frozen=True)
class BinlogSplit:
    """The stream's work: from ``start`` (to ``stop`` if bounded), with the chunks it must respect."""

    start: BinlogOffset
    stop: BinlogOffset | None = None
    finished_chunks: tuple[FinishedChunk, ...] = ()
    stream_tables: tuple[TableId, ...] = field(default=())  # captured without a snapshot

    def to_dict(self) -> dict[str, Any]:
        return {
            "start": self.start.to_dict(), "stop": None if self.stop is None else self.stop.to_dict(),
            "finished_chunks": [c.to_dict() for c in self.finished_chunks],
            "stream_tables": [str(t) for t in self.stream_tables],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BinlogSplit:
        return cls(
            BinlogOffset.from_dict(data["start"]),
            None if data.get("stop") is None else BinlogOffset.from_dict(data["stop"]),
            tuple(FinishedChunk.from_dict(c) for c in data.get("finished_chunks", ())),
            tuple(TableId.parse(t) for t in data.get("stream_tables", ())),
        )

    def event_filter(self, schemas: Callable[[TableId], TableSchema | None], *,
                     captured: Callable[[TableId], bool] = lambda _t: True, source: Any = None,
                     weigher: CollationWeigher | None = None) -> BinlogEventFilter:
        """The filter for this split; ``source`` (``MySqlSourceOptions``) supplies the newly-added-table,
        backfill, time-zone and tinyint options."""
        opts: dict[str, Any] = {}
        if source is not None:
            opts = dict(
                newly_added_table_enabled=source.newly_added_table_enabled,
                binlog_newly_added_table_enabled=source.binlog_newly_added_table_enabled,
                backfill_skipped=source.backfill_skip,
                tz=source.server_time_zone or "UTC",
                tinyint1_as_boolean=source.tinyint1_as_boolean,
            )
        return BinlogEventFilter(list(self.finished_chunks), schemas, captured, set(self.stream_tables),
                                 weigher=weigher, **opts)


class HybridSplitAssigner:
    """Computes the binlog split once all chunks are finished."""

    @staticmethod
    def stream_start(chunks: Iterable[FinishedChunk]) -> BinlogOffset:
        chunks = list(chunks)
        if not chunks:
            raise ValueError("no finished snapshot chunks: the stream start is the minimum high watermark of "
                             "finished chunks, so the snapshot must finish first")
        return min(c.high_watermark for c in chunks)

    @classmethod
    def create_binlog_split(cls, chunks: Iterable[FinishedChunk], *, startup_mode: str = "initial",
                            stream_tables: Iterable[TableId] = ()) -> BinlogSplit:
        chunks = list(chunks)
        start = cls.stream_start(chunks)
        stop = max(c.high_watermark for c in chunks) if startup_mode == "snapshot" else None
        return BinlogSplit(start, stop, tuple(chunks), tuple(stream_tables))

    @classmethod
    def resume_offset(cls, plan: StartupPlan, chunks: Iterable[FinishedChunk], *,
                      committed: BinlogOffset | None = None, plan_offset: BinlogOffset | None = None,
                      ) -> BinlogOffset | None:
        """Where the stream goes on: the committed offset; before the first batch, the startup
        plan's offset (no snapshot), the minimum HW of the finished chunks, or, for a snapshot of
        no tables, the offset the plan was made at (None: not known yet)."""
        if committed is not None:
            return committed
        if not plan.snapshot:
            return plan.start
        chunks = list(chunks)
        if chunks:
            return cls.stream_start(chunks)
        return plan_offset

    @staticmethod
    def stop_offset(plan: StartupPlan, chunks: Iterable[FinishedChunk],
                    server_offset: Callable[[], BinlogOffset]) -> BinlogOffset:
        """Where a batch stops: the maximum HW in ``snapshot`` mode, else the server's position now."""
        chunks = list(chunks)
        if plan.stop_at_max_high_watermark and chunks:
            return max(c.high_watermark for c in chunks)
        return server_offset()

    @classmethod
    def next_split(cls, plan: StartupPlan, chunks: Iterable[FinishedChunk], *, committed: BinlogOffset | None,
                   plan_offset: BinlogOffset | None, server_offset: Callable[[], BinlogOffset],
                   stop: BinlogOffset | None = None, stream_tables: Iterable[TableId] = ()) -> BinlogSplit | None:
        """The split of the next micro-batch, or None when there is nothing to read (no start
        known yet, or the stop is not past the start). ``stop`` overrides the computed stop."""
        chunks = list(chunks)
        start = cls.resume_offset(plan, chunks, committed=committed, plan_offset=plan_offset)
        if start is None:
            return None
        stop = stop or cls.stop_offset(plan, chunks, server_offset)
        if stop <= start:
            return None
        return BinlogSplit(start, stop, tuple(chunks), tuple(stream_tables))

    @classmethod
    def from_state(cls, chunk_records: Iterable[ChunkRecord], *, startup_mode: str = "initial") -> BinlogSplit:
        """From the state store's chunk records (all must be finished, i.e. have a high watermark)."""
        records = list(chunk_records)
        missing = [f"{r.table_id}#{r.chunk_index}" for r in records if not r.high_watermark]
        if missing:
            raise ValueError(f"{len(missing)} chunk(s) are not finished yet (e.g. {', '.join(missing[:5])}); the "
                             "binlog split is created only after every chunk has a high watermark")
        return cls.create_binlog_split([FinishedChunk.from_state(r) for r in records], startup_mode=startup_mode)
