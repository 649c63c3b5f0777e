"""Rows on their way into Doris: the two hidden control columns every row carries.

A row for Doris is a dict of column → value plus two control columns:

* ``__DORIS_DELETE_SIGN__`` — 0 keeps the row, 1 deletes its key (Unique tables; sent through
  the ``hidden_columns`` header and, in JSON, as the strings ``"0"``/``"1"``, exactly as
  flink-doris-connector does);
* ``__tidemark_seq`` — the source position of the change, the table's sequence column
  (``function_column.sequence_col``): a row with a lower value can never replace a higher one,
  so a late snapshot chunk or a replayed batch cannot bring back old data, and deletes obey it.

The bodies a stream load sends are built in :mod:`cdc_core.doris.payloads`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_core.model.events import DataChangeEvent, Op

DELETE_SIGN = "__DORIS_DELETE_SIGN__"
SEQUENCE_COLUMN = "__tidemark_seq"


def event_row(event: DataChangeEvent) -> dict[str, Any]:
    """The Doris row of a binlog change: after-image (before-image for deletes), sign, sequence."""
    row = dict(event.row)
    row[DELETE_SIGN] = "1" if event.op is Op.DELETE else "0"
    row[SEQUENCE_COLUMN] = event.offset.sequence
    return row


def snapshot_row(row: Mapping[str, Any], sequence: int) -> dict[str, Any]:
    """A snapshot row, stamped with its chunk's high watermark ``.sequence``."""
    out = dict(row)
    out[DELETE_SIGN] = "0"
    out[SEQUENCE_COLUMN] = sequence
    return out
