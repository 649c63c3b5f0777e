"""What every step of the pipeline service shares: the definition, the state store, the MySQL
settings, the Doris sink and the label epoch.

The sink is created on first use (a service that only answers a sensor's question needs no
Doris connection). MySQL connections are short: ``connection()`` opens one for a step and hands
the same one to nested helpers, so a step that looks up several schemas opens one connection,
and no connection outlives the step (a server-side timeout cannot break a long-lived one).
The sharing is per thread: a snapshot prepares several tables on threads at once, and a pymysql
connection is not safe to share between threads (nor to close under another thread's step).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.doris.sink import DorisSink
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.connection import MySqlConnectionSettings, connect
from cdc_core.mysql.discovery import list_captured_tables, read_table_schema, read_table_schemas
from cdc_core.mysql.failover import align
from cdc_core.pipeline.snapshot_estimate import transform_rule_index
from cdc_core.state import StateStore
from cdc_core.state.keys import COMMITTED_OFFSET, EPOCH_REFERENCE, LABEL_EPOCH

logger = logging.getLogger(__name__)

__all__ = ["PipelineContext", "transform_rule_index"]


class PipelineContext:
    """One pipeline's definition, state and connections, shared by the service's steps."""

    def __init__(self, definition: PipelineDefinition, store: StateStore | None = None):
        self.definition = definition
        self.store = store or StateStore.for_pipeline(definition)
        self.settings = MySqlConnectionSettings.from_options(definition.source)
        self._sink: DorisSink | None = None
        self._local = threading.local()  # .conn: this thread's step connection, if one is open

    @property
    def label_epoch(self) -> str:
        """This state store's label epoch, drawn on first use and kept (:data:`LABEL_EPOCH`).

        Labels are deterministic so that a retry or a recovery finds its own earlier load; the
        epoch keeps a fresh state — a deleted state directory, a second copy of the pipeline —
        from meeting the labels an old one committed. The sink puts it into its label prefix
        (``cdc_core/doris/labels.py:label_prefix``).
        """
        epoch = LABEL_EPOCH.get(self.store)
        if epoch is None:
            with self.store.transaction() as tx:  # the write lock only the first time, rechecked under it
                epoch = LABEL_EPOCH.get(tx)
                if epoch is None:
                    epoch = secrets.token_hex(3)
                    LABEL_EPOCH.put(tx, epoch)
                    logger.debug("label epoch %s drawn for %s", epoch, self.definition.name)
        return epoch

    @property
    def sink(self) -> DorisSink:
        """The pipeline's sink; its ``label_prefix`` is the one every load of this state uses."""
        if self._sink is None:
            self._sink = DorisSink.from_pipeline(self.definition, label_epoch=self.label_epoch,
                                                 merged=self._merged)
        return self._sink

    @contextmanager
    def connection(self) -> Iterator[Any]:
        """A MySQL connection for one step; nested uses on the same thread share it, the outermost
        closes it."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            yield conn
            return
        conn = self._local.conn = connect(self.settings, text_values=True)
        try:
            yield conn
        finally:
            self._local.conn = None
            conn.close()

    def server_offset(self) -> BinlogOffset:
        """The server's current binlog position."""
        with self.connection() as conn, conn.cursor() as cur:
            return read_current_offset(cur)

    def epoch_reference(self) -> BinlogOffset | None:
        """The offset that decides which epoch the server's offsets take in this pipeline
        (``cdc_core/mysql/failover.py``, ``align``): the committed offset, else the one a resnapshot
        after a purge dropped (:data:`EPOCH_REFERENCE`); None before the first batch (epoch 0: a
        failover during the first snapshot is refused, ``failover.check_one_snapshot_server``)."""
        with self.store.transaction(readonly=True) as tx:
            return COMMITTED_OFFSET.get(tx) or EPOCH_REFERENCE.get(tx)

    def aligned_offset(self) -> BinlogOffset:
        """The server's current binlog position in the pipeline's epoch there: what a watermark, a
        repair's sequence or a sweep's token is stamped with, so that it outranks what the stream
        wrote on that server after a failover (:meth:`epoch_reference`)."""
        return align(self.server_offset(), self.epoch_reference())

    def live_schema(self, table_id: TableId) -> TableSchema:
        """The table's schema as the server has it now."""
        with self.connection() as conn:
            return read_table_schema(conn, table_id)

    def live_schemas(self, table_ids: list[TableId]) -> dict[TableId, TableSchema]:
        """:meth:`live_schema` of many tables in four ``information_schema`` queries over their
        databases, whatever their number (four per table cost a run of 300 small tables ~1,200 round
        trips). A table left out is for the caller to ask :meth:`live_schema` about: one the server
        does not show (gone, or not readable: that call says which), or every table when there is
        only one (its own queries then read no other table's columns)."""
        if len(table_ids) < 2:
            return {}
        with self.connection() as conn:
            return read_table_schemas(conn, table_ids, skip_missing=True)

    def _merged(self, source: TableId) -> bool:
        """Whether a Doris table of ``source`` also receives other captured tables (routes)."""
        router = self.sink.router
        if not router.routes:
            return False
        captured = set(self.captured_tables()) | {source}
        return any(router.is_merged(target, captured) for target in router.route(source))

    def captured_tables(self) -> list[TableId]:
        """The tables on the server that the pipeline's ``tables`` selector captures now."""
        with self.connection() as conn:
            return list_captured_tables(conn, self.definition.source.selector)

    def targets(self, table_id: str | TableId) -> tuple[TableId, ...]:
        return self.sink.route(TableId.parse(str(table_id)))

    def has_transform(self, table_id: TableId) -> bool:
        return transform_rule_index(self.definition, table_id) is not None

    def close(self) -> None:
        if self._sink is not None:
            self._sink.close()
            self._sink = None
        self.store.close()
