"""A value longer than its Doris column takes: which row, which column, which setting.

Doris filters a row whose string value is longer than its column holds — a ``VARCHAR(n)`` holds
``n`` bytes, a ``STRING`` at most the BE setting ``string_type_length_soft_limit_bytes`` (1 MB by
default) — and the load fails with ``too many filtered rows``; its error log says ``the length of
input is too long than schema ... schema length: N``. That names neither the table's key nor the
fix, so the sink finds the rows it sent whose values pass ``N`` bytes and says which they are
(``explain``). MySQL's ``max_allowed_packet`` is not the limit here: a LONGTEXT of several MB
reaches Tidemark whole, by the snapshot and by the binlog alike.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

TOO_LONG = "too long than schema"
STRING_LIMIT_SETTING = "string_type_length_soft_limit_bytes"
_SCHEMA_LENGTH = re.compile(r"schema length: (\d+)")
_COLUMN = re.compile(r"column_name(?:: |\[)([^;\]\s]+)")
MAX_NAMED = 5


def is_too_long(text: str) -> bool:
    return TOO_LONG in text


def _size(value: Any) -> int:
    if isinstance(value, str):
        return len(value.encode("utf-8"))
    if isinstance(value, bytes | bytearray):
        return len(value)
    return 0


def oversized(rows: Any, limit: int, column: str | None = None) -> list[tuple[dict[str, Any], str, int]]:
    """``(row, column, bytes)`` of each value longer than ``limit`` bytes (in ``column`` if given)."""
    found: list[tuple[dict[str, Any], str, int]] = []
    for row in _dict_rows(rows):
        for name, value in row.items():
            if column is not None and name.lower() != column.lower():
                continue
            size = _size(value)
            if size > limit:
                found.append((row, name, size))
    return found


def _dict_rows(rows: Any) -> list[dict[str, Any]]:
    if isinstance(rows, list | tuple) and (not rows or isinstance(rows[0], dict)):
        return list(rows)
    try:  # pyarrow Table / RecordBatch / a list of them
        import pyarrow as pa

        if isinstance(rows, pa.Table | pa.RecordBatch):
            return rows.to_pylist()
        out: list[dict[str, Any]] = []
        for part in rows:
            out += part.to_pylist()
        return out
    except Exception:  # noqa: BLE001 - rows we cannot look into: the explanation names no key
        return []


def explain(where: str, error_text: str, rows: Any, key_columns: Sequence[str]) -> str | None:
    """The message for a load Doris failed for too long a value, or None if that is not the cause."""
    if not is_too_long(error_text):
        return None
    m = _SCHEMA_LENGTH.search(error_text)
    if not m:
        return None
    limit = int(m.group(1))
    col = _COLUMN.search(error_text)
    hits = oversized(rows, limit, col.group(1) if col else None) or oversized(rows, limit)
    if hits:
        named = "; ".join(
            f"column {name} of the row with key ({', '.join(f'{k}={row.get(k)!r}' for k in key_columns) or 'no key'})"
            f" is {size:,} bytes" for row, name, size in hits[:MAX_NAMED])
        more = f" (and {len(hits) - MAX_NAMED} more)" if len(hits) > MAX_NAMED else ""
    else:
        named, more = "a value", ""
    return (f"Doris cannot hold a value loaded into {where}: {named}{more}, more than the {limit:,} bytes Doris takes "
            f"in that column. A Doris STRING column holds at most the BE setting {STRING_LIMIT_SETTING} (1 MB, "
            f"1048576 bytes, by default): raise it in every BE's be.conf (up to 2 GB) and restart the BEs; a "
            f"VARCHAR(n) column holds n bytes: widen it (ALTER TABLE ... MODIFY COLUMN). Then run again: nothing "
            f"of this load was kept, and the same rows are read again")
