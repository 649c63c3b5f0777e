"""The Doris sink: exactly-once stream loads (two-phase commit), tables and schema changes over HTTP.

Public entry point: :class:`~cdc_core.doris.sink.DorisSink` (see its module docstring for the
calling sequence). Value types: :class:`Committable` (a precommitted load, JSON-able),
:class:`DorisTable` (a table's load layout), :class:`RecoveryReport`, :class:`AppliedChange`.
Row helpers: :func:`event_row` (binlog), :func:`snapshot_row` / ``sequence=`` (snapshot chunks).
"""

from cdc_core.doris.batching import TableBuffers
from cdc_core.doris.client import DorisHttpClient, Timeouts
from cdc_core.doris.committable import Committable
from cdc_core.doris.errors import (
    DorisAuthError,
    DorisConnectionError,
    DorisError,
    SchemaChangeError,
    StreamLoadError,
    TableMismatchError,
    TransactionAbortedError,
    TransactionCommittedError,
    TransactionError,
)
from cdc_core.doris.labels import binlog_batch_id, chunk_batch_id, make_label
from cdc_core.doris.metadata_applier import AppliedChange
from cdc_core.doris.routing import TableRouter
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN, event_row, snapshot_row
from cdc_core.doris.sink import DorisSink
from cdc_core.doris.table_creation import DorisTable
from cdc_core.doris.transaction_recovery import LabelRef, RecoveryReport

__all__ = [
    "DELETE_SIGN",
    "SEQUENCE_COLUMN",
    "AppliedChange",
    "Committable",
    "DorisAuthError",
    "DorisConnectionError",
    "DorisError",
    "DorisHttpClient",
    "DorisSink",
    "DorisTable",
    "LabelRef",
    "RecoveryReport",
    "SchemaChangeError",
    "StreamLoadError",
    "TableBuffers",
    "TableMismatchError",
    "TableRouter",
    "Timeouts",
    "TransactionAbortedError",
    "TransactionCommittedError",
    "TransactionError",
    "binlog_batch_id",
    "chunk_batch_id",
    "event_row",
    "make_label",
    "snapshot_row",
]
