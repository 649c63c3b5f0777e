"""A chunk's binlog backfill: which changed keys fall in the chunk, and replaying the changes.

Between a chunk's low and high watermark the table may change; the snapshot reader reads those
changes from the binlog and replays the ones whose chunk key is in the chunk's range onto the
scanned rows (Flink CDC's ``RecordUtils.upsertBinlog`` normalisation), so the chunk ends exactly
as the table was at the high watermark.
"""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

import pyarrow as pa

from cdc_core.model.events import DataChangeEvent, Op
from cdc_core.model.schema import Column
from cdc_core.mysql.splits import KeyValue, SnapshotSplit, key_param
from cdc_core.mysql.types import TypeKind, kind_of, parse_tz
from cdc_core.mysql.types.fixed_binary import sort_key
from cdc_core.mysql.types.kinds import FIXED_BINARY_KINDS, members_of
from cdc_core.mysql.types.time_zones import is_utc


class KeyRange:
    """Is a converted chunk-key value inside ``[start, end)``? Compared as MySQL compares it.

    Numbers, dates, binary keys and MariaDB's UUID / INET6 / INET4 compare exactly in Python; text
    keys (and TIME) are compared by the server with the column's own collation, all of a
    backfill's keys in one query.
    """

    def __init__(self, split: SnapshotSplit, key: Column, *, conn: Any = None, collation: str | None = None,
                 tz: str | dt.tzinfo | None = "UTC", tinyint1_as_boolean: bool = True):
        self.split = split
        self.key = key
        self.kind = kind_of(key, tinyint1_as_boolean=tinyint1_as_boolean)
        self._conn = conn
        self._collation = collation
        self._tz = parse_tz(tz)
        self._server_side = self.kind in (TypeKind.STRING, TypeKind.TIME, TypeKind.JSON, TypeKind.GEOMETRY)
        self._cache: dict[Any, bool] = {}

    def _comparable(self, value: Any) -> Any:
        kind = self.kind
        if kind in (TypeKind.INT, TypeKind.UINT64, TypeKind.YEAR):
            return int(value)
        if kind == TypeKind.BOOL:
            return int(value)
        if kind == TypeKind.DECIMAL:
            return Decimal(str(value))
        if kind in (TypeKind.FLOAT, TypeKind.DOUBLE):
            return float(value)
        if kind == TypeKind.ENUM:  # MySQL orders ENUM by member index ('' = 0), not by text
            members = [m.lower() for m in members_of(self.key.column_type)]
            text = str(value).lower()
            return members.index(text) + 1 if text in members else 0
        if kind == TypeKind.SET:  # … and SET by its bitmask
            members = [m.lower() for m in members_of(self.key.column_type)]
            parts = [p for p in str(value).lower().split(",") if p]
            return sum(1 << members.index(p) for p in parts if p in members)
        if kind == TypeKind.BINARY:
            return value
        if kind in FIXED_BINARY_KINDS:  # UUID / INET6 / INET4: MariaDB's order of the bytes, not of the text
            return sort_key(str(kind), str(value))
        if kind == TypeKind.TIMESTAMP and isinstance(value, str):
            return value
        return value

    def _converted_key(self, value: Any) -> Any:
        """A converted (Doris) key value → the form the bounds use."""
        if self.kind == TypeKind.BINARY:
            return base64.b64decode(value)
        if self.kind == TypeKind.TIMESTAMP and value is not None:
            tz = self._tz
            if not is_utc(tz):
                local = dt.datetime.fromisoformat(value).replace(tzinfo=tz)
                utc = local.astimezone(dt.UTC).replace(tzinfo=None)
                fsp = len(value.split(".")[1]) if "." in value else 0
                text = utc.strftime("%Y-%m-%d %H:%M:%S")
                return text + ("." + f"{utc.microsecond:06d}"[:fsp] if fsp else "")
        return value

    def _bound(self, value: KeyValue) -> Any:
        if self.kind == TypeKind.BINARY:
            return bytes.fromhex(str(value))
        return self._comparable(value)

    def prefetch(self, values: Iterable[Any]) -> None:
        """Decide many text keys in one server round trip (no-op for keys compared locally)."""
        if not self._server_side or self._conn is None:
            return
        todo = [v for v in {v for v in values if v is not None} if v not in self._cache]
        for i in range(0, len(todo), 500):
            part = todo[i : i + 500]
            exprs, params = [], []
            for v in part:
                expr, p = self._server_predicate()
                exprs.append(f"({expr})")
                params.extend(p(v))
            with self._conn.cursor() as cur:
                cur.execute("SELECT " + ", ".join(exprs), params)
                row = cur.fetchone()
            for v, answer in zip(part, row, strict=True):
                self._cache[v] = bool(int(answer))

    def _server_predicate(self) -> tuple[str, Callable[[Any], list[Any]]]:
        if self.kind == TypeKind.TIME:
            def lit() -> str:
                return "CAST(%s AS TIME)"
        else:
            charset = (self.key.charset or "utf8mb4")
            coll = f" COLLATE {self._collation}" if self._collation else ""

            def lit() -> str:
                return f"CONVERT(%s USING {charset}){coll}"
        parts, order = [], []
        if self.split.start is not None:
            parts.append(f"{lit()} >= {lit()}")
            order.append(("v", self.split.start[0]))
        if self.split.end is not None:
            parts.append(f"{lit()} < {lit()}")
            order.append(("v", self.split.end[0]))
        expr = " AND ".join(parts) or "1"

        def params(v: Any) -> list[Any]:
            out: list[Any] = []
            for _, bound in order:
                out.extend([v, key_param(self.key, bound)])
            return out

        return expr, params

    def contains(self, value: Any) -> bool:
        if value is None:
            return self.split.start is None  # NULL keys live in the first chunk
        if self.split.start is None and self.split.end is None:
            return True
        if self._server_side and self._conn is not None:
            if value not in self._cache:
                self.prefetch([value])
            return self._cache[value]
        v = self._comparable(self._converted_key(value))
        if self.split.start is not None and v < self._bound(self.split.start[0]):
            return False
        return not (self.split.end is not None and not v < self._bound(self.split.end[0]))


def apply_backfill(table: pa.Table, events: Iterable[DataChangeEvent], *, key_columns: tuple[str, ...],
                   chunk_key: str, in_range: Callable[[Any], bool]) -> tuple[pa.Table, int]:
    """Apply binlog changes to a chunk's rows (Flink's ``upsertBinlog`` normalisation).

    ``table`` holds converted rows; events carry converted images. Rows are identified by
    ``key_columns`` (the primary key; for a table without one, the whole row, as a multiset).
    A change whose image's chunk key is in range puts that image in the chunk; a change whose
    before image was in range takes it out. Returns the corrected table and the number of
    events applied.
    """
    events = list(events)
    if not events:
        return table, 0
    names = table.column_names
    whole_row = not key_columns
    cols = names if whole_row else list(key_columns)

    def key_of(row: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(row.get(c) for c in cols)

    # Final state per affected key: list of rows (a list to keep duplicates of key-less tables).
    touched: dict[tuple[Any, ...], list[dict[str, Any]] | None] = {}
    current = {c: table.column(c).to_pylist() for c in cols}
    existing: dict[tuple[Any, ...], int] = {}
    for i in range(table.num_rows):
        k = tuple(current[c][i] for c in cols)
        existing[k] = existing.get(k, 0) + 1

    def rows_for(k: tuple[Any, ...]) -> list[dict[str, Any]]:
        if k not in touched:
            if existing.get(k):
                mask_rows = _rows_with_key(table, cols, k)
                touched[k] = mask_rows
            else:
                touched[k] = []
        return touched[k]  # type: ignore[return-value]

    applied = 0
    for ev in events:
        if not isinstance(ev, DataChangeEvent):
            continue
        applied += 1
        if ev.before is not None and ev.op in (Op.UPDATE, Op.DELETE):
            bk = key_of(ev.before)
            rows = rows_for(bk)
            if whole_row:
                if rows:
                    rows.pop(0)
            else:
                rows.clear()
        if ev.after is not None and ev.op in (Op.INSERT, Op.UPDATE) and in_range(ev.after.get(chunk_key)):
            ak = key_of(ev.after)
            rows = rows_for(ak)
            image = {n: ev.after.get(n) for n in names}
            if whole_row:
                rows.append(image)
            else:
                rows[:] = [image]
    if not touched:
        return table, applied
    keep = _mask_without_keys(table, cols, set(touched))
    kept = table.filter(keep)
    replacement = [r for rows in touched.values() if rows for r in rows]
    if not replacement:
        return kept, applied
    extra = pa.Table.from_pylist(replacement, schema=table.schema)
    return pa.concat_tables([kept, extra]), applied


def _rows_with_key(table: pa.Table, cols: list[str], key: tuple[Any, ...]) -> list[dict[str, Any]]:
    mask = _mask_with_keys(table, cols, {key})
    return table.filter(mask).to_pylist()


def _mask_with_keys(table: pa.Table, cols: list[str], keys: set[tuple[Any, ...]]) -> pa.Array:
    values = [table.column(c).to_pylist() for c in cols]
    return pa.array([tuple(v[i] for v in values) in keys for i in range(table.num_rows)], pa.bool_())


def _mask_without_keys(table: pa.Table, cols: list[str], keys: set[tuple[Any, ...]]) -> pa.Array:
    values = [table.column(c).to_pylist() for c in cols]
    return pa.array([tuple(v[i] for v in values) not in keys for i in range(table.num_rows)], pa.bool_())
