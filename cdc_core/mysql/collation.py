"""Sort keys of strings under a MySQL collation, asked of the server (``WEIGHT_STRING``).

Case- and accent-insensitive collations (``utf8mb4_general_ci``...) order strings in ways no
Python comparison reproduces; the server's weight strings order them exactly as the chunk query
did. PAD SPACE collations ignore trailing spaces, so those are stripped before weighing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from cdc_core.model.schema import TableId


def _pad_space(collation: str | None) -> bool:
    """PAD SPACE (trailing spaces ignored) unless a NO PAD or a MySQL 8 ``_0900_`` collation."""
    c = (collation or "").lower()
    return "nopad" not in c and "_0900_" not in c and not c.endswith("_0900_bin")


class CollationWeigher:
    """Sort keys of strings under a collation, from the server's ``WEIGHT_STRING`` (cached)."""

    def __init__(self, connect: Callable[[], Any]):
        self._connect = connect
        self._conn: Any = None
        self._cache: dict[tuple[str, str, str], bytes] = {}
        self._collations: dict[tuple[TableId, str], tuple[str, str | None]] = {}

    def _cursor(self) -> Any:
        if self._conn is None:
            self._conn = self._connect()
        return self._conn.cursor()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def collation(self, table_id: TableId, column: str) -> tuple[str, str | None]:
        key = (table_id, column.lower())
        if key not in self._collations:
            with self._cursor() as cur:
                cur.execute(
                    "SELECT CHARACTER_SET_NAME, COLLATION_NAME FROM information_schema.COLUMNS "
                    "WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s AND COLUMN_NAME=%s",
                    (table_id.database, table_id.table, column),
                )
                row = cur.fetchone()
            if row:
                values = list(row.values()) if isinstance(row, dict) else list(row)
                self._collations[key] = (values[0] or "utf8mb4", values[1])
            else:
                self._collations[key] = ("utf8mb4", None)
        return self._collations[key]

    def prefetch(self, charset: str, collation: str | None, values: Iterable[str]) -> None:
        coll = collation or ""
        todo = sorted({v for v in values if (charset, coll, v) not in self._cache})
        clause = f" COLLATE {collation}" if collation else ""
        for i in range(0, len(todo), 500):
            part = todo[i:i + 500]
            args = [v.rstrip(" ") if _pad_space(collation) else v for v in part]
            sql = "SELECT " + ", ".join(f"WEIGHT_STRING(CONVERT(%s USING {charset}){clause})" for _ in part)
            with self._cursor() as cur:
                cur.execute(sql, args)
                row = cur.fetchone()
            values_out = list(row.values()) if isinstance(row, dict) else list(row)
            for v, w in zip(part, values_out, strict=True):
                self._cache[(charset, coll, v)] = bytes(w or b"")

    def weight(self, charset: str, collation: str | None, value: str) -> bytes:
        key = (charset, collation or "", value)
        if key not in self._cache:
            self.prefetch(charset, collation, [value])
        return self._cache[key]
