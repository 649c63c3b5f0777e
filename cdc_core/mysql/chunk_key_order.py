"""MySQL's order of a chunk-key column, as a Python sort key.

Numbers and temporal values compare as values; binary strings byte-wise; MariaDB's UUID / INET6 /
INET4 by the bytes the server compares (``fixed_binary.sort_key``); ENUM by member index and SET
by bitmask (as ``SnapshotSplitReader``'s backfill compares them); character strings by
the column's collation (:class:`~cdc_core.mysql.collation.CollationWeigher`). Bounds come from
the splitter, event values are the converted (Doris) values; both map to the same sort key.
"""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from cdc_core.model.schema import Column, TableId
from cdc_core.mysql.collation import CollationWeigher
from cdc_core.mysql.types import TypeKind, kind_of, parse_tz
from cdc_core.mysql.types.fixed_binary import sort_key
from cdc_core.mysql.types.kinds import FIXED_BINARY_KINDS, members_of

_TIME = re.compile(r"^(-)?(\d+):(\d{2}):(\d{2})(?:\.(\d+))?$")


class ChunkKeyOrder:
    """Maps a chunk-key value (a bound, or an event's converted value) to a sort key."""

    def __init__(self, table_id: TableId, column: Column, *, tz: str | dt.tzinfo | None = "UTC",
                 tinyint1_as_boolean: bool = True, weigher: CollationWeigher | None = None):
        self.table_id = table_id
        self.column = column
        self.kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
        self.tz = parse_tz(tz)
        self.weigher = weigher
        self.is_text = self.kind in (TypeKind.STRING, TypeKind.JSON)
        self._members = [m.lower() for m in members_of(column.column_type)] if self.kind in (
            TypeKind.ENUM, TypeKind.SET) else []
        self._charset: str | None = None
        self._collation: str | None = None

    def _coll(self) -> tuple[str, str | None]:
        if self._charset is None:
            if self.weigher is not None:
                self._charset, self._collation = self.weigher.collation(self.table_id, self.column.name)
            else:
                self._charset, self._collation = (self.column.charset or "utf8mb4"), None
        return self._charset, self._collation

    def prefetch(self, values: Iterable[Any]) -> None:
        if self.is_text and self.weigher is not None:
            charset, collation = self._coll()
            self.weigher.prefetch(charset, collation, [str(v) for v in values if v is not None])

    def _text_key(self, value: str) -> Any:
        charset, collation = self._coll()
        if self.weigher is not None:
            return self.weigher.weight(charset, collation, value)
        # no server at hand: MySQL's default collations are case-insensitive and PAD SPACE
        return value.rstrip(" ").casefold().encode("utf-8")

    def bound_key(self, value: Any) -> Any:
        if value is None:
            return None
        if self.kind == TypeKind.BINARY:
            return bytes.fromhex(str(value))
        if self.kind == TypeKind.TIMESTAMP:
            return self._datetime(str(value), utc=True)
        return self._common(value)

    def event_key(self, value: Any) -> Any:
        if value is None:
            return None
        if self.kind == TypeKind.BINARY:
            return base64.b64decode(value) if isinstance(value, str) else bytes(value)
        if self.kind == TypeKind.TIMESTAMP:
            return self._datetime(str(value), utc=False)
        return self._common(value)

    def _common(self, value: Any) -> Any:
        kind = self.kind
        if kind in (TypeKind.INT, TypeKind.UINT64, TypeKind.YEAR, TypeKind.BOOL, TypeKind.BIT):
            if isinstance(value, bytes):
                return int.from_bytes(value, "big")
            return int(value)
        if kind in (TypeKind.DECIMAL, TypeKind.FLOAT, TypeKind.DOUBLE):
            try:
                return Decimal(str(value))
            except InvalidOperation:
                return Decimal(0)
        if kind in (TypeKind.DATE, TypeKind.DATETIME):
            return self._datetime(str(value), utc=True)
        if kind == TypeKind.ENUM:  # MySQL orders ENUM by member index ('' = 0), not by text
            text = str(value).lower()
            return self._members.index(text) + 1 if text in self._members else 0
        if kind == TypeKind.SET:  # ... and SET by its bitmask
            parts = [p for p in str(value).lower().split(",") if p]
            return sum(1 << self._members.index(p) for p in parts if p in self._members)
        if kind in FIXED_BINARY_KINDS:  # UUID / INET6 / INET4: MariaDB's order of the bytes, not of the text
            return sort_key(str(kind), str(value))
        if kind == TypeKind.TIME:
            m = _TIME.match(str(value))
            if not m:
                return str(value)
            sign = -1 if m.group(1) else 1
            frac = int((m.group(5) or "0").ljust(6, "0")[:6])
            return sign * (((int(m.group(2)) * 60 + int(m.group(3))) * 60 + int(m.group(4))) * 1_000_000 + frac)
        return self._text_key(str(value))

    def _datetime(self, text: str, *, utc: bool) -> Any:
        try:
            parsed = dt.datetime.fromisoformat(text.replace(" ", "T")) if "-" in text else None
        except ValueError:
            parsed = None
        if parsed is None:
            return dt.datetime.min  # zero dates sort first, as MySQL sorts them
        if parsed.tzinfo is not None:
            parsed = parsed.astimezone(dt.UTC).replace(tzinfo=None)
        elif not utc and self.kind == TypeKind.TIMESTAMP:
            parsed = parsed.replace(tzinfo=self.tz).astimezone(dt.UTC).replace(tzinfo=None)
        return parsed
