"""How a Doris table Tidemark creates is partitioned: a transform rule's ``partition-keys``, or the
sink's ``table.create.auto-partition.properties.*`` (Flink CDC's Doris sink options).

Doris partitions at creation only, so this decides the ``PARTITION BY`` clause of ``CREATE TABLE``
(``cdc_core/doris/table_creation.py``); a table that exists is used as it is.

* ``partition-keys: c`` of the first transform rule matching the source table (Flink CDC's rule
  order): a DATE/DATETIME column gives ``AUTO PARTITION BY RANGE (date_trunc(`c`, 'unit')) ()``,
  with the unit of the auto-partition properties for the table (``<db>.<table>.partition-unit``,
  else ``default-partition-unit``, else ``day``); any other column, or several, give
  ``AUTO PARTITION BY LIST (`c`, ...) ()``. Either way Doris creates each partition when a load
  first brings a row for it.
* else the auto-partition properties, exactly as Flink CDC's Doris sink reads them
  (``DorisSchemaUtils.getPartitionInfo``): a table (after routing) matched by ``include`` (default
  all) and not by ``exclude`` is partitioned by ``<db>.<table>.partition-key`` (else
  ``default-partition-key``) with its unit, when the table has that column and it is a DATE or
  DATETIME; otherwise the table is not partitioned (a default key that a table lacks is not an
  error, as in Flink CDC).

Doris partitions a merge-on-write unique-key table by key columns only, refuses FLOAT/DOUBLE and
STRING partition columns, LIST-partitions only by integer, BOOLEAN, DATE/DATETIME, CHAR and
VARCHAR columns, and refuses NULL-able columns for AUTO RANGE: such a choice is refused here,
before any table is created, naming the option and the fix.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from cdc_core.config.selectors import TableSelector
from cdc_core.model.schema import TableId, TableSchema

log = logging.getLogger(__name__)

AUTO_PARTITION_PREFIX = "table.create.auto-partition.properties."
DATE_TRUNC_UNITS = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
DEFAULT_UNIT = "day"
# The column types Doris LIST-partitions by (Doris's "Data Partitioning" page)
LIST_PARTITION_TYPES = ("BOOLEAN", "TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT", "DATE", "DATEV2", "DATETIME",
                        "DATETIMEV2", "CHAR", "VARCHAR")


class PartitionError(ValueError):
    """A partitioning Doris would refuse; the message names the option and the fix."""


@dataclass(frozen=True)
class PartitionSpec:
    """The columns a Doris table is partitioned by, the date_trunc unit, and where they came from."""

    columns: tuple[str, ...]
    unit: str
    origin: str  # the option that asked for it, for messages
    dates_only: bool = False  # auto-partition properties: only a DATE/DATETIME column partitions


def auto_partition_spec(properties: Mapping[str, str], target: TableId) -> PartitionSpec | None:
    """The auto-partition properties' choice for ``target`` (None: not partitioned by them)."""
    if not properties:
        return None
    exclude, include = properties.get("exclude", "").strip(), properties.get("include", "").strip()
    if exclude and TableSelector.parse(exclude).matches(target.database, target.table):
        return None
    if include and not TableSelector.parse(include).matches(target.database, target.table):
        return None
    key = properties.get(f"{target}.partition-key", "").strip() or properties.get("default-partition-key", "").strip()
    unit = properties.get(f"{target}.partition-unit", "").strip() or properties.get("default-partition-unit", "")
    if not key or not unit.strip():
        return None
    return PartitionSpec((key,), unit.strip().lower(), AUTO_PARTITION_PREFIX + "*", dates_only=True)


def partition_unit(properties: Mapping[str, str], target: TableId) -> str:
    """The date_trunc unit for ``target``: its own, the default, or ``day``."""
    unit = properties.get(f"{target}.partition-unit", "").strip() or properties.get("default-partition-unit", "")
    return unit.strip().lower() or DEFAULT_UNIT


def partition_clause(spec: PartitionSpec, schema: TableSchema, target: TableId, keys: tuple[str, ...],
                     doris_types: Mapping[str, str]) -> str:
    """``AUTO PARTITION BY ...`` for ``target`` (empty: not partitioned), or :class:`PartitionError`.

    ``keys`` are the Doris unique key (empty: a duplicate-key table, whose value columns are NULL-able);
    ``doris_types`` the Doris type of each column by name.
    """
    columns = []
    for name in spec.columns:
        if not schema.has_column(name):
            if spec.dates_only:
                log.info("%s: %s has no column %r, so it is not partitioned (as Flink CDC)", spec.origin, target, name)
                return ""
            raise PartitionError(f"{spec.origin} names column {name!r}, which {schema.table_id} does not have (its "
                                 f"columns: {', '.join(schema.column_names)}); name one of them")
        columns.append(schema.column(name).name)
    types = {c: doris_types[c].split("(", 1)[0].upper() for c in columns}
    dated = len(columns) == 1 and types[columns[0]] in ("DATE", "DATEV2", "DATETIME", "DATETIMEV2")
    if spec.dates_only and not dated:
        log.info("%s: %s.%s is %s, not DATE or DATETIME, so the table is not partitioned (as Flink CDC)",
                 spec.origin, target, columns[0], types[columns[0]])
        return ""
    key_set = {k.lower() for k in keys}
    for c in columns:
        if keys and c.lower() not in key_set:
            raise PartitionError(
                f"{spec.origin}: Doris partitions the unique-key table {target} by key columns only, and {c!r} is "
                f"not in its key ({', '.join(keys)}); partition by a key column, or add {c!r} to the key (the "
                "transform rule's primary-keys)")
        if types[c] in ("FLOAT", "DOUBLE", "STRING"):
            raise PartitionError(f"{spec.origin}: Doris cannot partition {target} by {c!r}, a {types[c]} column; "
                                 "choose a DATE/DATETIME, integer, BOOLEAN, CHAR or VARCHAR column")
    quoted = ", ".join(f"`{c}`" for c in columns)
    if not dated:
        for c in columns:
            if types[c] not in LIST_PARTITION_TYPES:
                raise PartitionError(f"{spec.origin}: Doris cannot LIST-partition {target} by {c!r}, a {types[c]} "
                                     "column; choose a DATE/DATETIME, integer, BOOLEAN, CHAR or VARCHAR column")
        return f"AUTO PARTITION BY LIST ({quoted}) ()"
    if spec.unit not in DATE_TRUNC_UNITS:
        raise PartitionError(f"{spec.origin}: partition unit {spec.unit!r} for {target} is not one of "
                             f"{', '.join(DATE_TRUNC_UNITS)}")
    if not keys:
        raise PartitionError(
            f"{spec.origin}: Doris's AUTO RANGE partition needs a NOT NULL column, and {target} has no primary key "
            f"(its columns are NULL-able in Doris); give the table a key (the transform rule's primary-keys) or "
            "partition it otherwise")
    return f"AUTO PARTITION BY RANGE (date_trunc({quoted}, '{spec.unit}')) ()"
