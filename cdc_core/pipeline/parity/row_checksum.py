"""Row checksums computed inside MySQL and inside Doris, so that verification reads no rows.

Both engines turn each row into one canonical text, hash it with ``CRC32`` (the same CRC-32 in
both: MySQL's returns INT UNSIGNED, Doris's a BIGINT, since Doris 2.1), and ``SUM`` the hashes over
a key range next to a ``COUNT(*)``. The sum is order-independent, so the two sides need not scan in
the same order; it is exact (MySQL sums unsigned integers as DECIMAL, Doris sums DECIMAL(38,0)).
This is the approach of data-diff: push the work into the databases and move two numbers per
segment, not its rows.

Why CRC32 and not MD5: the parity check runs after every snapshot run, over every row it loaded,
and MySQL's side is the dear one. On the bench table (5M rows, ``bench/snapshot_e2e.py``) MariaDB
took 7.4 s of one core with ``CONV(SUBSTRING(MD5(…), 1, 15), 16, 10)`` and 3.2 s with ``CRC32(…)``,
of which 2.9 s is building the text. A changed row still changes its range's sum unless its new
text has the same CRC-32 as the old (a chance of 2⁻³²), and the count catches every row added
or removed.

The canonical text of a row is ``<text>`` per NOT NULL column and per non-NULL value of a nullable
one, ``n`` for NULL, joined by ``|``; a nullable string's value is ``v<text>`` (a string could
be ``n``). ``<text>`` is what the snapshot path writes into Doris, produced on each side by an
expression of its own dialect:

================  ===========================================  ================================
kind              MySQL                                        Doris
================  ===========================================  ================================
integers, YEAR,   ``CAST(c AS CHAR)``                          ``CAST(c AS STRING)``
DECIMAL, UUID,
INET6, INET4
BOOL (TINYINT(1)) ``'1'`` when non-zero, else ``'0'``          ``CAST(CAST(c AS INT) AS STRING)``
strings, ENUM,    ``CONVERT(c USING utf8mb4)`` (the Doris      ``c`` (``RTRIM(c)`` for CHAR)
SET               copy is UTF-8 whatever the column charset);
                  ``c`` for a column already UTF-8 or ASCII
DATE              ``CAST(c AS CHAR)``, a zero date as the      ``DATE_FORMAT(c, '%Y-%m-%d')``
                  snapshot writes it (NULL or epoch)
DATETIME(fsp)     ``CAST(c AS CHAR)`` (fsp fractional          ``DATE_FORMAT(c, '… %s.%f')``
                  digits), zero dates as above                 cut to fsp fractional digits
================  ===========================================  ================================

Inside MySQL's row hash an integer or DECIMAL column is left bare: ``CONCAT_WS`` renders a number as
the text ``CAST(… AS CHAR)`` gives, and the cast alone cost ~6 % of MySQL's side on the bench table.

Columns of other kinds (FLOAT/DOUBLE, whose text differs between engines; TIMESTAMP, rendered in
the pipeline's time zone; TIME, BIT, binary, JSON, spatial) have no text both engines agree on:
``ChecksumPlan.by_rows`` lists them, and the caller compares those columns by reading rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.types import TypeKind, kind_of
from cdc_core.mysql.types.kinds import base_type, fsp_of
from cdc_core.mysql.types.values import zero_datetime_like

logger = logging.getLogger(__name__)

SEPARATOR = "|"
PAGE = 10_000  # the most rows Doris's query API returns per statement

_IN_DB = {TypeKind.BOOL, TypeKind.INT, TypeKind.UINT64, TypeKind.DECIMAL, TypeKind.YEAR, TypeKind.DATE,
          TypeKind.DATETIME, TypeKind.STRING, TypeKind.ENUM, TypeKind.SET, TypeKind.UUID, TypeKind.INET6,
          TypeKind.INET4}
_DATETIME_FORMAT = "%Y-%m-%d %H:%i:%s.%f"
# Column charsets whose bytes are UTF-8 as stored (MariaDB's ``utf8`` is ``utf8mb3``).
_UTF8_BYTES = frozenset({"utf8mb4", "utf8mb3", "utf8", "ascii"})
_DATE_FORMAT = "%Y-%m-%d"


def q(name: str) -> str:
    """A quoted identifier (both engines use backticks)."""
    return "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Segment:
    """Row count and checksum of one key range on one side."""

    count: int
    total: int

    @property
    def checksum(self) -> str:
        return f"{self.total:x}"


@dataclass(frozen=True)
class KeyRange:
    """``start <= key < end`` on one column; None is unbounded."""

    column: str
    start: Any = None
    end: Any = None


@dataclass(frozen=True)
class ChecksumPlan:
    """Which columns of a table are hashed inside the databases and which are compared by rows."""

    schema: TableSchema
    target: TableId
    in_db: tuple[Column, ...]
    by_rows: tuple[Column, ...]
    tinyint1_as_boolean: bool

    @classmethod
    def of(cls, schema: TableSchema, target: TableId, *, tinyint1_as_boolean: bool) -> ChecksumPlan:
        in_db, by_rows = [], []
        for column in schema.columns:
            kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
            (in_db if kind in _IN_DB else by_rows).append(column)
        return cls(schema, target, tuple(in_db), tuple(by_rows), tinyint1_as_boolean)

    def kind(self, column: Column) -> str:
        return kind_of(column, tinyint1_as_boolean=self.tinyint1_as_boolean)

    # -- MySQL ------------------------------------------------------------------------------

    def mysql_text(self, column: Column) -> str:
        c, kind = q(column.name), self.kind(column)
        if kind == TypeKind.BOOL:
            return f"CASE WHEN {c} IS NULL THEN NULL WHEN {c} <> 0 THEN '1' ELSE '0' END"
        if kind in (TypeKind.STRING, TypeKind.ENUM, TypeKind.SET):
            # A UTF-8 (or ASCII) column's bytes are already the Doris copy's: CONVERT would only cost.
            return c if (column.charset or "").lower() in _UTF8_BYTES else f"CONVERT({c} USING utf8mb4)"
        if kind in (TypeKind.DATE, TypeKind.DATETIME):
            zero_text = zero_datetime_like(column, kind, fsp_of(column))  # what the snapshot writes
            zero = "NULL" if zero_text is None else f"'{zero_text}'"
            # A zero date, or one with a zero part (``< '0001-01-01'``: year 0); else MySQL's own text
            # of the value, the column's fractional digits included. On the bench table a comparison
            # cost MariaDB less than YEAR(), and CAST less than DATE_FORMAT.
            return (f"CASE WHEN {c} IS NULL THEN NULL WHEN {c} < '0001-01-01' OR MONTH({c}) = 0 OR DAYOFMONTH({c}) = 0 "
                    f"THEN {zero} ELSE CAST({c} AS CHAR) END")
        if kind == TypeKind.YEAR and column.column_type.lower().startswith("year(2)"):
            return f"CAST(YEAR({c}) AS CHAR)"  # the year, as Doris holds it (YEAR(2) reads as two digits)
        return f"CAST({c} AS CHAR)"

    def mysql_row_hash(self) -> str:
        return _row_hash([(self._mysql_hashed_text(c), c.nullable, self.is_text(c)) for c in self.in_db], "{}")

    def _mysql_hashed_text(self, column: Column) -> str:
        # A bare number (see the module's docstring); the key columns ``mysql_row_hashes`` selects keep
        # ``mysql_text``, cast and all.
        if self.kind(column) in (TypeKind.INT, TypeKind.UINT64, TypeKind.DECIMAL):
            return q(column.name)
        return self.mysql_text(column)

    def mysql_where(self, key_range: KeyRange | None, literal: Any) -> str:
        return where_clause(key_range, literal)

    # -- Doris ------------------------------------------------------------------------------

    def doris_text(self, column: Column) -> str:
        c, kind = q(column.name), self.kind(column)
        if kind == TypeKind.BOOL:
            return f"CAST(CAST({c} AS INT) AS STRING)"
        if kind in (TypeKind.STRING, TypeKind.ENUM, TypeKind.SET):
            return f"RTRIM({c})" if base_type(column) == "char" else c
        if kind == TypeKind.DATE:
            return f"DATE_FORMAT({c}, '{_DATE_FORMAT}')"
        if kind == TypeKind.DATETIME:
            fsp = fsp_of(column)
            if not fsp:
                return f"DATE_FORMAT({c}, '{_DATETIME_FORMAT[:-3]}')"
            # %f is always six digits; MySQL's text of a DATETIME(fsp) has fsp of them
            return f"SUBSTRING(DATE_FORMAT({c}, '{_DATETIME_FORMAT}'), 1, {20 + fsp})"
        return f"CAST({c} AS STRING)"

    def doris_row_hash(self) -> str:
        return _row_hash([(self.doris_text(c), c.nullable, self.is_text(c)) for c in self.in_db],
                         "CAST({} AS DECIMAL(38, 0))")

    def is_text(self, column: Column) -> bool:
        """Whether a value's text could be any string (``'n'`` included)."""
        return self.kind(column) in (TypeKind.STRING, TypeKind.ENUM, TypeKind.SET)


def _row_hash(texts: list[tuple[str, bool, bool]], cast: str) -> str:
    # NULL is 'n'. A nullable string's value is prefixed ('v…') so that no value reads 'n'; other
    # kinds' texts (numbers, dates, '0'/'1') never do, and a NOT NULL column's needs nothing (each
    # function less is a few percent of MySQL's side on a narrow table).
    parts = ", ".join((f"COALESCE(CONCAT('v', {t}), 'n')" if text else f"COALESCE({t}, 'n')") if nullable else t
                      for t, nullable, text in texts) or "'-'"
    # Doris's SUM of a BIGINT is a BIGINT (it would overflow past ~2 billion rows): its side sums DECIMAL(38, 0).
    return cast.format(f"CRC32(CONCAT_WS('{SEPARATOR}', {parts}))")


def where_clause(key_range: KeyRange | None, literal: Any) -> str:
    if key_range is None:
        return ""
    bounds = []
    if key_range.start is not None:
        bounds.append(f"{q(key_range.column)} >= {literal(key_range.start)}")
    if key_range.end is not None:
        bounds.append(f"{q(key_range.column)} < {literal(key_range.end)}")
    return f" WHERE {' AND '.join(bounds)}" if bounds else ""


def doris_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int | float | Decimal):
        return str(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def mysql_segment(conn: Any, plan: ChecksumPlan, key_range: KeyRange | None) -> Segment:
    """COUNT and checksum of the range, computed by MySQL."""
    table = f"{q(plan.schema.table_id.database)}.{q(plan.schema.table_id.table)}"
    sql = (f"SELECT COUNT(*), COALESCE(SUM({plan.mysql_row_hash()}), 0) FROM {table}"
           f"{plan.mysql_where(key_range, conn.escape)}")
    with conn.cursor() as cur:
        cur.execute(sql)
        count, total = cur.fetchone()
    return Segment(int(count), int(total))


def doris_segment(catalog: Any, plan: ChecksumPlan, key_range: KeyRange | None) -> Segment:
    """COUNT and checksum of the range, computed by Doris."""
    sql = (f"SELECT COUNT(*), COALESCE(SUM({plan.doris_row_hash()}), 0) FROM {q(plan.target.table)}"
           f"{where_clause(key_range, doris_literal)}")
    count, total = catalog.execute(plan.target.database, sql, limit=1).rows[0]
    return Segment(int(count), int(total or 0))


def mysql_row_hashes(conn: Any, plan: ChecksumPlan, key_range: KeyRange | None) -> dict[tuple, list[int]]:
    """Each row's key (the primary key, else every in-database column) and its hash, from MySQL."""
    key = _row_key(plan)
    table = f"{q(plan.schema.table_id.database)}.{q(plan.schema.table_id.table)}"
    sql = (f"SELECT {', '.join(plan.mysql_text(c) for c in key)}, {plan.mysql_row_hash()} FROM {table}"
           f"{plan.mysql_where(key_range, conn.escape)}")
    out: dict[tuple, list[int]] = {}
    with conn.cursor() as cur:
        cur.execute(sql)
        for row in cur.fetchall():
            out.setdefault(tuple(row[:-1]), []).append(int(row[-1]))
    return out


def doris_row_hashes(catalog: Any, plan: ChecksumPlan, key_range: KeyRange | None,
                     keys: list[tuple] | None = None) -> dict[tuple, list[int]]:
    """The same from Doris: the rows of the range page by page, or the rows of ``keys``."""
    key = _row_key(plan)
    select = f"SELECT {', '.join(plan.doris_text(c) for c in key)}, {plan.doris_row_hash()} FROM {q(plan.target.table)}"
    out: dict[tuple, list[int]] = {}

    def add(rows: list[list[Any]]) -> None:
        for row in rows:
            out.setdefault(tuple(None if v is None else str(v) for v in row[:-1]), []).append(int(row[-1]))

    if keys is not None:
        for i in range(0, len(keys), 500):
            part = keys[i: i + 500]
            match = " OR ".join(
                "(" + " AND ".join(f"{plan.doris_text(c)} = {doris_literal(v)}" if v is not None
                                   else f"{q(c.name)} IS NULL" for c, v in zip(key, k, strict=True)) + ")"
                for k in part)
            add(catalog.execute(plan.target.database, f"{select} WHERE {match}", limit=PAGE).rows)
        return out
    order = ", ".join(q(c.name) for c in key)
    where = where_clause(key_range, doris_literal)
    offset = 0
    while True:
        rows = catalog.execute(plan.target.database, f"{select}{where} ORDER BY {order} LIMIT {PAGE} OFFSET {offset}",
                               limit=PAGE).rows
        add(rows)
        if len(rows) < PAGE:
            return out
        offset += PAGE


def _row_key(plan: ChecksumPlan) -> tuple[Column, ...]:
    names = [n.lower() for n in plan.schema.primary_key]
    key = tuple(c for c in plan.in_db if c.name.lower() in names)
    return key if key and len(key) == len(names) else plan.in_db


def differing_keys(mine: dict[tuple, list[int]], theirs: dict[tuple, list[int]]) -> list[tuple]:
    """Keys whose rows differ: missing on one side, or with other hashes."""
    return sorted((k for k in mine.keys() | theirs.keys() if sorted(mine.get(k, [])) != sorted(theirs.get(k, []))),
                  key=lambda k: tuple("" if v is None else str(v) for v in k))


def _bucket(ranges: list[KeyRange], literal: Any) -> tuple[str, str]:
    """``CASE`` giving each row the index of the range holding it (NULL: none), and a WHERE that
    bounds the scan by the lowest start and highest end (the key's index does the rest)."""
    arms = []
    for i, r in enumerate(ranges):
        bounds = []
        if r.start is not None:
            bounds.append(f"{q(r.column)} >= {literal(r.start)}")
        if r.end is not None:
            bounds.append(f"{q(r.column)} < {literal(r.end)}")
        arms.append(f"WHEN {' AND '.join(bounds) or 'TRUE'} THEN {i}")
    starts = [r.start for r in ranges]
    ends = [r.end for r in ranges]
    outer = KeyRange(ranges[0].column, None if None in starts else min(starts), None if None in ends else max(ends))
    return f"CASE {' '.join(arms)} END", where_clause(outer, literal)


def mysql_segments(conn: Any, plan: ChecksumPlan, ranges: list[KeyRange]) -> list[Segment]:
    """COUNT and checksum of each range (numeric or temporal keys), one statement per range.

    One statement for all ranges (``CASE`` per row, ``GROUP BY`` it) made MariaDB evaluate the
    CASE's arms for every row and group through a temporary table: 5.7 s for 38 ranges of 5M
    rows, against 3.2 s for 38 range scans of the primary key (``bench/snapshot_e2e.py``'s table)."""
    return [mysql_segment(conn, plan, r) for r in ranges]


def doris_segments(catalog: Any, plan: ChecksumPlan, ranges: list[KeyRange]) -> list[Segment]:
    """The same computed by Doris, in one statement."""
    if not ranges:
        return []
    case, where = _bucket(ranges, doris_literal)
    rows = catalog.execute(plan.target.database, f"SELECT {case}, COUNT(*), COALESCE(SUM({plan.doris_row_hash()}), 0) "
                           f"FROM {q(plan.target.table)}{where} GROUP BY {case}", limit=PAGE).rows
    found = {int(b): Segment(int(n), int(t or 0)) for b, n, t in rows if b is not None}
    return [found.get(i, Segment(0, 0)) for i in range(len(ranges))]


# -- text keys: ranges by the bytes of the key's UTF-8 text ------------------------------------------
#
# A character key's chunks are ranges in MySQL's collation ('a' = 'A' = 'a ' under utf8mb4_general_ci,
# 'é' between 'e' and 'f'), while Doris compares the UTF-8 bytes of the text it holds. The same bounds
# would select different rows on the two sides. Here both sides put each row into a segment by the
# bytes of the key's text — MySQL by ``CAST(<the text Doris holds> AS BINARY)`` (no collation, no
# PAD SPACE), Doris by its own byte order — so a segment holds the same rows on both sides, and its
# count and checksum are computed in the database as for any other key. The bounds are the chunks'
# bounds sorted by their bytes; a row's segment is found by a binary search written as nested CASEs
# (log₂ of the bounds comparisons a row), one statement per side for a whole table.


def key_bytes_order(value: Any) -> bytes:
    """A bound's place in Doris's order: the UTF-8 bytes of its text."""
    return str(value).encode("utf-8")


def _bytes_search(expr: str, bounds: list[Any], first: int, literal: Any) -> str:
    """SQL giving ``first`` + the number of ``bounds`` (sorted) that are <= ``expr``."""
    if not bounds:
        return str(first)
    mid = len(bounds) // 2
    return (f"CASE WHEN {expr} < {literal(bounds[mid])} THEN {_bytes_search(expr, bounds[:mid], first, literal)} "
            f"ELSE {_bytes_search(expr, bounds[mid + 1:], first + mid + 1, literal)} END")


def _mysql_bytes_literal(value: Any) -> str:
    return f"X'{key_bytes_order(value).hex()}'"


def _segments_of(rows: list[Any], count: int) -> list[Segment]:
    found = {int(b): Segment(int(n), int(t or 0)) for b, n, t in rows if b is not None}
    return [found.get(i, Segment(0, 0)) for i in range(count)]


def mysql_segments_by_bytes(conn: Any, plan: ChecksumPlan, column: Column, bounds: list[Any],
                            within: KeyRange | None = None) -> list[Segment]:
    """COUNT and checksum of the ``len(bounds) + 1`` segments the bounds (sorted by
    :func:`key_bytes_order`) cut the key's byte order into, computed by MySQL in one statement;
    ``within``: of the rows in that range of MySQL's own order only (a part of the table, whose
    segments add up with the other parts' to the table's: counts and sums)."""
    key = f"CAST({plan.mysql_text(column)} AS BINARY)"
    bucket = f"CASE WHEN {q(column.name)} IS NULL THEN NULL ELSE {_bytes_search(key, bounds, 0, _mysql_bytes_literal)} END"
    table = f"{q(plan.schema.table_id.database)}.{q(plan.schema.table_id.table)}"
    with conn.cursor() as cur:
        cur.execute(f"SELECT {bucket} AS b, COUNT(*), COALESCE(SUM({plan.mysql_row_hash()}), 0) FROM {table}"
                    f"{plan.mysql_where(within, conn.escape)} GROUP BY b")
        return _segments_of(list(cur.fetchall()), len(bounds) + 1)


def doris_segments_by_bytes(catalog: Any, plan: ChecksumPlan, column: Column, bounds: list[Any]) -> list[Segment]:
    """The same segments computed by Doris (whose strings compare by their bytes)."""
    key = q(column.name)
    bucket = f"CASE WHEN {key} IS NULL THEN NULL ELSE {_bytes_search(key, bounds, 0, doris_literal)} END"
    rows = catalog.execute(plan.target.database, f"SELECT {bucket}, COUNT(*), COALESCE(SUM({plan.doris_row_hash()}), 0) "
                           f"FROM {q(plan.target.table)} GROUP BY {bucket}", limit=PAGE).rows
    return _segments_of(rows, len(bounds) + 1)
