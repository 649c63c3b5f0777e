"""The Arrow types a Doris table's stream load must carry, column by column, for ``format: arrow``.

Doris reads an Arrow load with each column's own reader (its ``DataTypeSerDe::read_column_from_arrow``)
and converts nothing: an INT column's Arrow buffer is read as 32-bit integers whatever its Arrow
type says, a DECIMALV3's as decimal128 values at the column's scale, a DATEV2's as date32 days, a
DATETIMEV2 takes only an Arrow timestamp. So before a load goes as Arrow its columns are cast to
exactly these types (``cdc_core/doris/payloads.py``), from the types the snapshot and the binlog
path produce (``cdc_core/mysql/types/doris_mapping.py:doris_arrow_type``: int64, float64, bool,
text).

DATETIMEV2 (MySQL DATETIME and TIMESTAMP, whose values Tidemark holds as wall-clock text, a
TIMESTAMP's already in the pipeline's zone) goes as ``timestamp("us", tz="+08:00")`` whose value is
the instant at which a clock in +08:00 shows the wall-clock value, and every Arrow load carries the
header ``timezone: +08:00`` (:data:`ARROW_TIME_ZONE`). Why, from Doris's source files (not in this
repository): the stream-load Arrow reader (``arrow_stream_reader.cpp`` under ``be/src/vec/exec/format/
arrow``) hands every column's reader the zone ``TimezoneUtils::default_time_zone``, which
``timezone_utils.cpp`` defines as the constant ``"+08:00"`` (not the BE's setting, not the load's
header), in the 2.1, 3.x and current trees alike; the DATETIMEV2 reader (``DataTypeDateTimeV2SerDe::
read_column_from_arrow``) does ``from_unixtime(epoch, that zone)`` and ignores the Arrow type's own
zone, and a change in Doris's newest tree reads "no zone: UTC, else the session's zone" (the +08:00
constant, or the load's ``timezone`` header). Under each reading a +08:00 timestamp with a +08:00
header comes back as the wall clock sent, and +08:00 has no DST, so every value is exact (a DST
gap's wall-clock time such as 2021-03-14 02:30:00 included). The unit is microseconds whatever the
column's scale (Doris's ``_schema`` answer does not give a DATETIMEV2's scale): the values carry the
digits of their MySQL column's fractional precision, which is the Doris column's scale.

That reader casts the epoch to an unsigned integer: a value before 1970-01-01 08:00:00 (a negative
epoch once shifted) would load as another time, and a zero date is no time at all. Such a value does
not fit, and that one load goes as JSON (``payloads.ArrowConformError``), whose text every release
stores as it is.

A table with a column outside this table goes as JSON lines instead (:func:`arrow_types` is None):

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
# The zone Doris's stream-load Arrow reader reads a DATETIMEV2 in (module docstring): a DATETIME's
# Arrow timestamp is built in it, and every Arrow load names it in its ``timezone`` header.
ARROW_TIME_ZONE = "+08:00"
_TYPE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


def arrow_type(doris_type: str) -> pa.DataType | None:
    """The Arrow type Doris reads a column of ``doris_type`` from (``DECIMALV3(10,2)``, ``INT``...);
    None: the column's loads go as JSON (module docstring). LARGEINT takes text (Doris parses it);
    a DATETIMEV2 a timestamp in :data:`ARROW_TIME_ZONE` (module docstring)."""
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
    if name == "DATETIMEV2":  # not a DATETIME (V1): Tidemark never creates one, its reader unseen
        return pa.timestamp("us", tz=ARROW_TIME_ZONE)
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

