"""Durable pipeline state: split plan, chunk and batch records, offsets, schema history."""

from cdc_core.state.records import BatchRecord, BatchStatus, ChunkRecord, ChunkStatus
from cdc_core.state.store import StateStore, StateTransaction

__all__ = ["BatchRecord", "BatchStatus", "ChunkRecord", "ChunkStatus", "StateStore", "StateTransaction"]
