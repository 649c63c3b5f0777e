"""Whether a Doris column must change type when its MySQL column does, and what to say when Doris cannot.

MySQL changes a column's type freely (``MODIFY COLUMN``); Doris follows only some changes
(``ALTER TABLE ... MODIFY COLUMN``): integers widen along TINYINT → SMALLINT → INT → BIGINT →
LARGEINT, a CHAR/VARCHAR grows, CHAR becomes VARCHAR, a DECIMALV3 gains integer digits, a
DATETIMEV2 gains fractional digits. Doris never narrows a column, never turns an integer into a
DECIMALV3, never turns a VARCHAR into a CHAR.

So before asking Doris, the metadata applier asks :func:`holds`: when the Doris column already
holds every value the changed MySQL column can hold, exactly as Tidemark sends it (a MySQL
narrowing such as ``BIGINT UNSIGNED`` → ``INT``, a ``VARCHAR`` → ``CHAR`` of no more bytes, or
a table created with Flink CDC's old ``DECIMALV3(20,0)`` for ``BIGINT UNSIGNED``), nothing needs
to change and the change is skipped. A change Doris still refuses stops the stream with
:func:`refused_message`: the table, the column, both types, and the ways out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cdc_core.model.schema import Column, TableId

_INTEGERS = ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT")
# Decimal digits of the widest value each Doris integer type carries from MySQL: Tidemark maps only
# 64-bit unsigned values (BIGINT UNSIGNED, BIT(64)) to LARGEINT, so 20 digits, not LARGEINT's 39.
_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19, "LARGEINT": 20}
_ALIASES = {"INTEGER": "INT", "DECIMALV3": "DECIMAL", "TEXT": "STRING", "DATETIMEV2": "DATETIME",
            "DATEV2": "DATE", "JSONB": "JSON"}
_TYPE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?")
_UNBOUNDED = 2_147_483_643  # STRING's byte limit as Doris reports it


@dataclass(frozen=True)
class DorisColumnType:
    """A Doris column type read from its text: base name and its one or two numbers."""

    base: str
    first: int | None = None
    second: int | None = None

    @classmethod
    def parse(cls, text: str) -> DorisColumnType:
        m = _TYPE.match(text)
        if not m:
            return cls(text.strip().upper())
        base = m.group(1).upper()
        return cls(_ALIASES.get(base, base), int(m.group(2)) if m.group(2) else None,
                   int(m.group(3)) if m.group(3) else None)

    @property
    def string_bytes(self) -> int | None:
        if self.base == "STRING":
            return _UNBOUNDED
        if self.base in ("CHAR", "VARCHAR"):
            return self.first or (1 if self.base == "CHAR" else 65533)
        return None


def holds(current: str, new: str) -> bool:
    """Whether a Doris column of type ``current`` already holds every value a column Tidemark would
    create as ``new`` receives, each exactly as sent (so the column needs no change)."""
    cur, nxt = DorisColumnType.parse(current), DorisColumnType.parse(new)
    if cur.base in _INTEGERS and nxt.base in _INTEGERS:
        return _INTEGERS.index(cur.base) >= _INTEGERS.index(nxt.base)
    if cur.base == "DECIMAL" and nxt.base in _INTEGERS:
        precision, scale = cur.first or 9, cur.second or 0
        return scale == 0 and precision >= _INTEGER_DIGITS[nxt.base]
    if cur.base == "DECIMAL" and nxt.base == "DECIMAL":
        # the same scale: every value prints with the same decimals; enough integer digits
        return (cur.second or 0) == (nxt.second or 0) and (cur.first or 9) >= (nxt.first or 9)
    if cur.base in ("VARCHAR", "STRING") and nxt.base in ("CHAR", "VARCHAR", "STRING"):
        return (cur.string_bytes or 0) >= (nxt.string_bytes or 0)
    if cur.base == "CHAR" and nxt.base == "CHAR":
        return (cur.first or 1) >= (nxt.first or 1)
    return False


def refused_message(source: TableId, target: TableId, column: Column, current: str, new: str, reason: str) -> str:
    """Why the stream stops at a type change Doris refuses, and the ways out."""
    return (
        f"Doris cannot change column {column.name} of {target} from {current} to {new} (the type of "
        f"{source}.{column.name} is now {column.column_type}): Doris says {reason!r}. The way out: "
        f"`tidemark resnapshot PIPELINE.yaml --table {source}` (it re-creates Doris table {target} with the "
        f"column as {new}, reads {source} again and goes on past this DDL), or give {source} a "
        f"transform: rule whose projection casts {column.name} to a type Doris's {current} holds, or add "
        "alter.column.type to the sink's exclude.schema.changes to keep the column as it is (Doris then refuses "
        "the rows whose values it cannot hold)"
    )
