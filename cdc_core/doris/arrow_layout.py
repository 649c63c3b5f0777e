"""The Arrow types a Doris table's stream load must carry, column by column, for ``format: arrow``.

Doris reads an Arrow load with each column's own reader (its ``DataTypeSerDe::read_column_from_arrow``)
and converts nothing: an INT column's Arrow buffer is read as 32-bit integers whatever its Arrow
type says, a DECIMALV3's as decimal128 values at the column's scale, a DATEV2's as date32 days, a
DATETIMEV2 takes only an Arrow timestamp. So before a load goes as Arrow its columns are cast to
exactly these types (``cdc_core/doris/payloads.py``), from the types the snapshot and the binlog
path produce (``cdc_core/mysql/types/doris_mapping.py:doris_arrow_type``: int64, float64, bool,
text).

A table with a column outside this table goes as JSON lines instead (:func:`arrow_types` is None):

* DATETIMEV2: Doris turns an Arrow timestamp into a DATETIME in the BE's own time zone
  (``from_unixtime(epoch, ctz)``, ``ctz`` being the BE's default zone in 2.1, and the timestamp's
  zone in later releases), so the same value would land as another wall-clock time depending on
  the release and the BE's setting; JSON carries the wall-clock text, which every release stores as
  it is.
* JSONB: its Arrow reader is not one Tidemark has seen documented; the text goes as JSON.
* anything else Doris may report (VARIANT, ARRAY, ...): Tidemark never creates them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pyarrow as pa

_INTS = {"TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64()}
_PLAIN = {"BOOLEAN": pa.bool_(), "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "DATEV2": pa.date32(),
          "DATE": pa.date32(), "LARGEINT": pa.string(), "CHAR": pa.string(), "VARCHAR": pa.string(),
          "STRING": pa.string(), "TEXT": pa.string()}
_TYPE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


def arrow_type(doris_type: str) -> pa.DataType | None:
    """The Arrow type Doris reads a column of ``doris_type`` from (``DECIMALV3(10,2)``, ``INT``...);
    None: the column's loads go as JSON (module docstring). LARGEINT takes text (Doris parses it)."""
    match = _TYPE.match(doris_type or "")
    if match is None:
        return None
    name = match.group(1).upper()
    if name in _INTS:
        return _INTS[name]
    if name in _PLAIN:
        return _PLAIN[name]
    if name in ("DECIMALV3", "DECIMAL", "DECIMAL32", "DECIMAL64", "DECIMAL128") and match.group(2):
        precision, scale = int(match.group(2)), int(match.group(3) or 0)
        return pa.decimal128(precision, scale) if precision <= 38 else None
    return None


def arrow_types(column_types: Sequence[str]) -> tuple[pa.DataType | None, ...] | None:
    """Each column's Arrow type, in order (None for a column that has none); None when the types
    are not known. A table loads as Arrow by default only when every column has one
    (:func:`arrow_ready`); with ``sink.properties.format: arrow`` the columns that have one are
    cast and the others sent as they are (Doris then says which it cannot read)."""
    if not column_types:
        return None
    return tuple(arrow_type(t) for t in column_types)


def arrow_ready(types: Sequence[pa.DataType | None] | None) -> bool:
    """Whether every column has its Arrow type (:func:`arrow_types`)."""
    return types is not None and all(t is not None for t in types)

