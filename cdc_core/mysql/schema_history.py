"""Schema history: every captured table's schema at every binlog offset.

:class:`SchemaHistory` records schemas in the pipeline's state store keyed by
``offset.sequence``, so any batch can be replayed with the schema valid at its offset and a
restart never asks the live server (whose schema may already be ahead of the stream). How an
event changes a schema is the model's (``cdc_core/model/schema_changes.py``).

A schema recorded at offset ``D`` (the end of the DDL event) is valid for every event with an
offset greater than ``D``; ``schema_at(o)`` returns the last schema recorded at or before ``o``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from cdc_core.model.events import SchemaChangeEvent
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.model.schema_changes import SchemaChangeError, apply_schema_change


class SchemaHistory:
    """Schemas by offset, persisted in the pipeline's :class:`~cdc_core.state.StateStore`."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def record(self, table_id: TableId, offset: BinlogOffset, schema: TableSchema | None, tx: Any = None) -> None:
        """Record ``schema`` (None = table dropped) as valid after ``offset``."""
        payload = None if schema is None else schema.to_dict()
        if tx is not None:
            tx.put_schema(str(table_id), offset.sequence, offset.to_dict(), payload)
            return
        with self.store.transaction() as own:
            own.put_schema(str(table_id), offset.sequence, offset.to_dict(), payload)

    def bootstrap(self, schemas: Iterable[TableSchema], offset: BinlogOffset, tx: Any = None) -> None:
        """Record the schemas discovered at ``offset`` (e.g. the stream's start) for tables not yet known."""
        def run(t: Any) -> None:
            for s in schemas:
                if t.schema_at(str(s.table_id), offset.sequence) is None:
                    t.put_schema(str(s.table_id), offset.sequence, offset.to_dict(), s.to_dict())

        if tx is not None:
            run(tx)
        else:
            with self.store.transaction() as own:
                run(own)

    def apply(self, events: Iterable[SchemaChangeEvent], tx: Any = None) -> dict[TableId, TableSchema | None]:
        """Apply schema-change events (each carrying its offset) and record the results.

        Several events at one offset (one ALTER with several clauses) are applied in order and
        the final schema recorded once at that offset. Returns the schemas touched.
        """
        events = list(events)
        if tx is None:
            with self.store.transaction() as own:
                return self.apply(events, own)
        touched: dict[TableId, TableSchema | None] = {}
        for e in events:
            if e.offset is None:
                raise SchemaChangeError(f"{e.type_name} on {e.table_id} has no binlog offset; cannot record it")
            current = touched[e.table_id] if e.table_id in touched else self._at(tx, e.table_id, e.offset)
            for table_id, schema in apply_schema_change(current, e).items():
                touched[table_id] = schema
                tx.put_schema(str(table_id), e.offset.sequence, e.offset.to_dict(),
                              None if schema is None else schema.to_dict())
        return touched

    @staticmethod
    def _at(tx: Any, table_id: TableId, offset: BinlogOffset) -> TableSchema | None:
        data = tx.schema_at(str(table_id), offset.sequence)
        return None if data is None else TableSchema.from_dict(data)

    def schema_at(self, table_id: TableId, offset: BinlogOffset) -> TableSchema | None:
        """The schema valid for events after ``offset`` (None if unknown or dropped)."""
        with self.store.transaction(readonly=True) as tx:
            return self._at(tx, table_id, offset)

    def schemas_at(self, offset: BinlogOffset) -> dict[TableId, TableSchema | None]:
        """``schema_at(t, offset)`` of every table the history knows, in one state-store read (a
        table recorded dropped maps to None; one never recorded by then is absent)."""
        with self.store.transaction(readonly=True) as tx:
            found = tx.schemas_at(offset.sequence)
        return {TableId.parse(t): None if data is None else TableSchema.from_dict(data) for t, data in found.items()}

    def lookup_at(self, offset: BinlogOffset, fallback: Callable[[TableId], TableSchema | None] | None = None,
                  *, keep: bool = False, known: Mapping[TableId, TableSchema | None] | None = None
                  ) -> Callable[[TableId], TableSchema | None]:
        """A ``schemas`` callable for :class:`BinlogSplitReader` reading from ``offset``.

        With ``keep``, a schema found in the history is kept for the callable's life: for a caller
        that records no schema while it holds the callable (a binlog batch: it stops before the
        first DDL), the schema valid after a fixed offset does not change, and one batch asks for
        each table several times (the filter, the reader, the loads), a state-store read each
        (issue 30: 900 reads, ~0.5 s of a 300-table batch). A miss is always asked again, as the
        fallback's answer (the live server) may change.

        ``known``: ``schemas_at(offset)``, read by the caller (the same holder that records
        nothing): a table it lacks is not asked of the store again, only of the fallback."""
        found_at: dict[TableId, TableSchema] = {}
        if known is not None:
            found_at.update({t: s for t, s in known.items() if s is not None})

        def lookup(table_id: TableId) -> TableSchema | None:
            found = found_at.get(table_id)
            if found is None and known is None:
                found = self.schema_at(table_id, offset)
                if found is not None and keep:
                    found_at[table_id] = found
            if found is None and fallback is not None:
                return fallback(table_id)
            return found

        return lookup

    def tables(self) -> list[TableId]:
        with self.store.transaction(readonly=True) as tx:
            return [TableId.parse(t) for t in tx.schema_tables()]


__all__ = ["SchemaHistory"]
