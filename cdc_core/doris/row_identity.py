"""The hidden identity of a keyless table's rows in Doris: (hash of the row image, copy ordinal).

A MySQL table without a primary key is a multiset of row images: two rows with the same values
are two rows, and an UPDATE or DELETE names its row only by its image. Doris's UNIQUE model needs
a key, so each Doris row of such a table gets one in two hidden leading key columns:

* ``__tidemark_row_hash`` — 128 bits of BLAKE2b over the image's canonical bytes, as 32 hex digits
  (:func:`row_hashes`); 128 bits so that two different images of one table never share a hash in
  practice (64 bits would collide with a few percent chance in a billion-row table);
* ``__tidemark_row_copy`` — which copy of that image the row is: ``0 .. n-1`` for ``n`` identical
  rows, kept contiguous (an insert adds copy ``n``, a delete removes copy ``n-1``).

The canonical bytes are computed from the Doris-converted values (``cdc_core/mysql/types``), which
both paths produce alike: the snapshot's Arrow columns and the binlog's images (put through the
same Arrow types, :func:`image_hashes`). A NULL value contributes nothing, each other value its
lower-cased column name and its text, so adding a nullable column without a default keeps every
hash; any other column change alters the images and so the hashes (the schema change reloads such
a table: ``cdc_core/pipeline/schema_change.py``).

A Doris table that several keyless source tables are routed into (a merge) salts each hash with
the source table's name, or two sources' identical rows would share an identity and overwrite
each other; the hash column's comment says so (:data:`SALTED_COMMENT`), and both paths read it
from Doris, so they always agree.

Why a hash and not the row itself as the key: Doris cannot key on FLOAT, DOUBLE, STRING, JSON or
spatial columns, keys are limited in width, and a key of every column would refuse the keyless
tables a real estate holds; a hash of fixed width takes any shape.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa

ROW_HASH = "__tidemark_row_hash"
ROW_COPY = "__tidemark_row_copy"
IDENTITY_COLUMNS = (ROW_HASH, ROW_COPY)
HASH_DORIS_TYPE = "VARCHAR(32)"
COPY_DORIS_TYPE = "BIGINT"


def is_identity_column(name: str) -> bool:
    return name.lower() in (ROW_HASH, ROW_COPY)


def _text(value: Any) -> bytes:  # noqa: PLR0911 - one branch per Python type a converted value has
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, bool):
        return b"1" if value else b"0"
    if isinstance(value, int):
        return str(value).encode()
    if isinstance(value, float):
        return repr(value).encode()
    if isinstance(value, Decimal):
        return str(value).encode()
    if isinstance(value, dt.date | dt.time | dt.datetime):
        return value.isoformat().encode()
    if isinstance(value, dt.timedelta):
        return str(value).encode()
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return str(value).encode("utf-8", "surrogatepass")


SALTED_COMMENT = "Tidemark: hash of the source table's name and the row's values"
PLAIN_COMMENT = "Tidemark: hash of the row's values (the source table has no primary key)"


def salt_of(source: object | None) -> bytes:
    """A merged table's salt: the source table's name (``db.table``), so identical rows of two
    source tables routed into one Doris table get two identities; b"" for a table of one source."""
    return b"" if source is None else str(source).lower().encode("utf-8") + b"\x00"


def row_hashes(table: pa.Table, columns: Sequence[str], salt: bytes = b"") -> list[str]:
    """The hash of each row of ``table`` over ``columns`` (its visible columns), in row order. The
    columns are taken by name, in the order of their lower-cased names: the Doris table's column
    order and the source's may differ (a column added ``AFTER``), the hash must not."""
    values = [(name.lower().encode("utf-8") + b"\x00", table.column(name).to_pylist())
              for name in sorted(columns, key=str.lower)]
    out = []
    for i in range(table.num_rows):
        h = hashlib.blake2b(digest_size=16)
        if salt:
            h.update(salt)
        for prefix, column in values:
            v = column[i]
            if v is None:
                continue
            data = _text(v)
            h.update(prefix)
            h.update(len(data).to_bytes(8, "little"))
            h.update(data)
        out.append(h.hexdigest())
    return out


def image_hashes(images: Sequence[Mapping[str, Any] | None], arrow_schema: pa.Schema,
                 salt: bytes = b"") -> list[str | None]:
    """The hash of each binlog image (None for None), its values put through the Arrow types the
    snapshot path gives the columns (``arrow_schema``), so both paths hash the same bytes."""
    present = [i for i, image in enumerate(images) if image is not None]
    data = {f.name: pa.array([images[i].get(f.name) for i in present], type=f.type)  # type: ignore[union-attr]
            for f in arrow_schema}
    hashes = row_hashes(pa.table(data, schema=arrow_schema), arrow_schema.names, salt)
    out: list[str | None] = [None] * len(images)
    for i, h in zip(present, hashes, strict=True):
        out[i] = h
    return out


def copy_ordinals(hashes: Iterable[str]) -> list[int]:
    """0, 1, 2 … per hash in order of appearance: the copies of each image in one snapshot chunk
    (identical rows share the chunk key, so a chunk holds every copy of its images)."""
    seen: dict[str, int] = {}
    out = []
    for h in hashes:
        n = seen.get(h, 0)
        out.append(n)
        seen[h] = n + 1
    return out


def with_identity(table: pa.Table, columns: Sequence[str], salt: bytes = b"") -> pa.Table:
    """``table`` with the two identity columns first (a snapshot chunk, or any load holding every
    copy of the images it has)."""
    hashes = row_hashes(table, columns, salt)
    copies = copy_ordinals(hashes)
    table = table.drop_columns([c for c in IDENTITY_COLUMNS if c in table.column_names])
    table = table.add_column(0, pa.field(ROW_COPY, pa.int64()), pa.array(copies, pa.int64()))
    return table.add_column(0, pa.field(ROW_HASH, pa.string()), pa.array(hashes, pa.string()))
