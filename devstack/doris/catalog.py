"""Catalog objects: databases, tables and columns as Doris sees them.

The catalog is the single source of truth for every metadata answer (``_schema``, ``SHOW``,
``information_schema``); DuckDB only stores rows. Definitions are persisted as JSON next to the
data (see :mod:`devstack.doris.storage`) so DDL and data change in one DuckDB transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from .types import DorisType

DELETE_SIGN = "__DORIS_DELETE_SIGN__"
SEQUENCE_COL = "__DORIS_SEQUENCE_COL__"
VERSION_COL = "__DORIS_VERSION_COL__"
HIDDEN_COLUMNS = (DELETE_SIGN, SEQUENCE_COL, VERSION_COL)

KEYS_TYPES = {"UNIQUE": "UNIQUE_KEYS", "DUPLICATE": "DUP_KEYS", "AGGREGATE": "AGG_KEYS"}


@dataclass
class Column:
    """One visible column."""

    name: str
    type: str  # normalised Doris type text, e.g. "VARCHAR(30)"
    nullable: bool = True
    is_key: bool = False
    default: str | None = None  # literal text as written (unquoted), or None
    comment: str = ""
    uid: int = 0

    @property
    def dtype(self) -> DorisType:
        return DorisType.parse(self.type)


@dataclass
class Table:
    """One OLAP table."""

    db: str
    name: str
    keys_type: str  # UNIQUE_KEYS | DUP_KEYS
    columns: list[Column]
    key_names: list[str]
    distribution: list[str] = field(default_factory=list)
    buckets: str = "AUTO"
    random_distribution: bool = False  # DISTRIBUTED BY RANDOM (DUPLICATE tables only)
    properties: dict[str, str] = field(default_factory=dict)
    comment: str = ""
    # the partition clause as created (devstack/doris/sql.py:_partition_clause); {} unpartitioned
    partition: dict[str, Any] = field(default_factory=dict)
    schema_version: int = 0
    next_uid: int = 0
    table_id: int = 0

    # ---- derived -----------------------------------------------------------------------------
    @property
    def is_unique(self) -> bool:
        return self.keys_type == "UNIQUE_KEYS"

    @property
    def sequence_col(self) -> str | None:
        """Visible column mapped to the sequence column (``function_column.sequence_col``)."""
        return self.properties.get("function_column.sequence_col")

    @property
    def sequence_type(self) -> str | None:
        """Type of the hidden sequence column, if the table has one."""
        if not self.is_unique:
            return None
        if self.sequence_col:
            col = self.column(self.sequence_col)
            return col.type if col else None
        return self.properties.get("function_column.sequence_type")

    @property
    def has_sequence(self) -> bool:
        return self.sequence_type is not None

    def column(self, name: str) -> Column | None:
        """Case-insensitive column lookup (Doris column names are case-insensitive)."""
        low = name.lower()
        for c in self.columns:
            if c.name.lower() == low:
                return c
        return None

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    def light_schema_change(self) -> bool:
        return self.properties.get("light_schema_change", "true").lower() != "false"

    # ---- persistence ------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The fields as ``dataclasses.asdict`` gives them, for ``json.dumps``: the columns as dicts, the
        other values not copied (asdict deep-copies every one, a third of a CREATE TABLE's Python)."""
        d = {name: getattr(self, name) for name in _TABLE_FIELDS}
        d["columns"] = [{name: getattr(c, name) for name in _COLUMN_FIELDS} for c in self.columns]
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Table:
        cols = [Column(**c) for c in d.pop("columns")]
        return Table(columns=cols, **d)


_TABLE_FIELDS = tuple(f.name for f in fields(Table))
_COLUMN_FIELDS = tuple(f.name for f in fields(Column))
