"""A snapshot chunk's name outside the state store: ``db.table#00012``.

Dagster partitions, hook ledgers and reports name a chunk by this key; the store keys it by
(table, index). Zero-padding keeps the keys of one table in chunk order when sorted as text.
"""

from __future__ import annotations


def chunk_key(table_id: str, index: int) -> str:
    """A snapshot chunk's partition key: table and chunk index, e.g. ``shop.orders#00012``."""
    return f"{table_id}#{index:05d}"


def parse_chunk_key(key: str) -> tuple[str, int]:
    table_id, sep, index = key.rpartition("#")
    if not sep or not index.isdigit():
        raise ValueError(f"not a chunk key: {key!r} (expected 'db.table#00012')")
    return table_id, int(index)
