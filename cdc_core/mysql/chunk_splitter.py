"""Split a table into chunks exactly as Flink CDC's ``MySqlChunkSplitter`` does.

``analyzeTable``: MIN/MAX of the chunk key and the approximate row count
(``SHOW TABLE STATUS``). Then:

* MIN or MAX is NULL (empty table), or MIN = MAX → one chunk ``[null, null)``.
* **Evenly sized chunks** when the chunk key maps to Flink's INT, BIGINT or DECIMAL (INT,
  MEDIUMINT, YEAR, INT UNSIGNED, BIGINT, BIGINT UNSIGNED, DECIMAL(p ≤ 38)) and the distribution
  factor ``(MAX − MIN + 1) / rows`` (4 decimals, rounded up; rows = 0 → +∞) lies within
  ``[lower, upper]``: ``dynamic = max(int(factor × chunk_size), 1)``; if rows ≤ chunk_size one
  chunk, else ``[null, min+d), [min+d, min+2d) … [k, null)`` computed without queries; an
  addition that overflows the key's Java type (Integer for INT/MEDIUMINT, Long for INT UNSIGNED/
  BIGINT) ends the list as Flink's ``ArithmeticException`` does.
* **Unevenly sized chunks** otherwise, one query per chunk and lazily:
  ``SELECT MAX(k) FROM (SELECT k FROM t WHERE k >= prev ORDER BY k LIMIT chunk_size) T``; when
  the result equals ``prev`` (more than chunk_size rows share one key) the next key
  ``SELECT MIN(k) FROM t WHERE k > prev`` is taken; a result ≥ MAX ends the table with
  ``[prev, null)``. Flink sleeps 100 ms every 10 chunks to spare the server during a long run of
  such queries; so do we, but only within such a run on one table (after its 10th, 20th … chunk:
  ``split_pause_s``, ``tidemark.snapshot.split-pause-ms``), never before a table's first chunk,
  where Flink's pause cost 100 ms per text- or composite-keyed table and spared the server nothing.

Where Flink compares key values in Java (``Objects.equals``, ``ObjectUtils.compare``) we let
the server compare them, in the same query, with the column's own collation. For
case-sensitive data the plan is identical; for a case-insensitive collation ('abc' = 'ABC')
Flink's Java comparison can emit empty chunks or loop, ours cannot.

The splitter is resumable: :class:`ChunkSplitterState` (table, next chunk start, next chunk id;
Flink's ``ChunkSplitterState``, plus the rows its chunks hold so far and the chunk size in use) is
JSON-able and restores a half-split table.

**The partition cap holds whatever the estimate says** (``SplitOptions.max_partitions``; Tidemark's
own, Flink has no cap). An uneven table's chunk count is its *real* row count over the chunk size,
and ``SHOW TABLE STATUS``'s Rows can be off by 10x on InnoDB (or 0 for a table whose statistics
were never computed). So the size of each uneven chunk is chosen from what the splitter has seen:
the rows still to split are taken to be at least the estimate's remainder and at least as many as
already split (a table past its estimate is assumed to be twice what it has shown so far), and the
chunk is sized so that those rows take at most half of the partitions left (:func:`adaptive_chunk_rows`).
The rows covered then double before the partitions left halve, so the count converges below the
cap for any real row count; and when only the partitions the later tables need are left, the
table's last chunk is unbounded (``[x, +∞)``): the cap is a hard bound. An even split's count comes
from the estimate (fewer, larger chunks when it is low), capped the same way.

The MySQL queries go through :class:`KeyQueries` (:class:`MySqlKeyQueries` on a pymysql
connection): the seam a unit test drives with a model of a key distribution far larger than any
test table (``tests/snapshot/test_split_budget.py``).
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.chunk_sizing import FLINK_DEFAULT_ROWS
from cdc_core.mysql.connection import quote_ident, quote_table
from cdc_core.mysql.discovery import approximate_row_count, chunk_key_column
from cdc_core.mysql.splits import ChunkRange, KeyValue, SnapshotSplit, bound_value, key_param
from cdc_core.mysql.types import TypeKind, kind_of

log = logging.getLogger(__name__)

START_BOUND = "START"
END_BOUND = "END"
_JAVA_INT_MAX = 2**31 - 1
_JAVA_LONG_MAX = 2**63 - 1


@dataclass(frozen=True)
class SplitOptions:
    """The options that shape a plan (names as in ``MySqlSourceOptions``)."""

    chunk_size: int = FLINK_DEFAULT_ROWS
    distribution_factor_upper: float = 1000.0
    distribution_factor_lower: float = 0.05
    chunk_key_column: str | None = None
    tinyint1_as_boolean: bool = True
    # The courtesy pause every 10 uneven chunks of one table (Flink's ``maySleep``: 100 ms).
    split_pause_s: float = 0.1
    # Per-table chunk sizes fixed by the plan (``cdc_core/mysql/chunk_sizing.py``), by "db.table";
    # a table not listed takes ``chunk_size``.
    table_chunk_sizes: tuple[tuple[str, int], ...] = ()
    # Approximate row counts fixed by the plan's first round (``SHOW TABLE STATUS``'s Rows, read for
    # all tables at once), by "db.table"; a table not listed is asked when it is split.
    table_rows: tuple[tuple[str, int], ...] = ()
    # The most chunks the whole plan may have (``tidemark.snapshot.max-partitions`` less a reserve;
    # 0: no cap): see the module doc.
    max_partitions: int = 0

    @classmethod
    def from_source(cls, source: Any) -> SplitOptions:
        return cls(
            chunk_size=source.chunk_size or FLINK_DEFAULT_ROWS,
            distribution_factor_upper=source.distribution_factor_upper,
            distribution_factor_lower=source.distribution_factor_lower,
            chunk_key_column=source.chunk_key_column,
            tinyint1_as_boolean=source.tinyint1_as_boolean,
        )

    @functools.cached_property
    def _chunk_sizes(self) -> dict[str, int]:
        # built once per options object: a plan of n tables asks n times (or n² times, the budget)
        return dict(self.table_chunk_sizes)

    @functools.cached_property
    def _row_estimates(self) -> dict[str, int]:
        return dict(self.table_rows)

    def rows_per_chunk(self, table_id: TableId) -> int:
        """The chunk size of this table: the plan's for it, else ``chunk_size``."""
        return self._chunk_sizes.get(str(table_id), self.chunk_size)

    def approximate_rows(self, table_id: TableId) -> int | None:
        """The plan's row estimate of this table, None when it has none (a dictionary built once:
        rebuilding it at each call made planning 300 tables cost 0.7 s of CPU)."""
        return self._row_estimates.get(str(table_id))


@dataclass(frozen=True)
class ChunkSplitterState:
    """Where uneven splitting of a table stands: Flink's ``ChunkSplitterState``.

    ``next_chunk_start`` is ``"START"``, ``"END"`` or a bound (list of key values).
    """

    table_id: TableId | None = None
    next_chunk_start: str | tuple[KeyValue, ...] = START_BOUND
    next_chunk_id: int = 0
    rows_split: int = 0  # rows in the table's chunks so far (each uneven chunk: its LIMIT)
    chunk_rows: int = 0  # the size of the last chunk (0: none yet); the next is never smaller

    def to_dict(self) -> dict[str, Any]:
        start = self.next_chunk_start
        return {
            "table_id": None if self.table_id is None else str(self.table_id),
            "next_chunk_start": start if isinstance(start, str) else {"value": list(start)},
            "next_chunk_id": self.next_chunk_id,
            "rows_split": self.rows_split,
            "chunk_rows": self.chunk_rows,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ChunkSplitterState:
        start = data.get("next_chunk_start", START_BOUND)
        return cls(
            None if data.get("table_id") is None else TableId.parse(data["table_id"]),
            start if isinstance(start, str) else tuple(start["value"]),
            int(data.get("next_chunk_id", 0)),
            int(data.get("rows_split", 0)),
            int(data.get("chunk_rows", 0)),
        )


@dataclass(frozen=True)
class Budget:
    """What the rest of the plan leaves a table: ``chunks`` it may use (the cap less the chunks
    planned before it less one per later table) and the estimated ``rows_after`` it (later tables)."""

    chunks: int
    rows_after: int = 0


UNLIMITED = Budget(chunks=2**62)


def adaptive_chunk_rows(base: int, estimate: int, rows_split: int, chunks_left: int, rows_after: int,
                        previous: int = 0) -> int:
    """The size of a table's next uneven chunk (module doc): ``base`` unless the rows still to split —
    at least ``estimate - rows_split`` and at least ``rows_split``, plus ``rows_after`` for later
    tables — would take more than half of the ``chunks_left`` at that size. Never smaller than
    ``previous``: sizes only grow as the real row count appears."""
    remaining = max(estimate - rows_split, rows_split, 1) + max(rows_after, 0)
    half = max(chunks_left / 2, 1.0)
    return max(base, previous, math.ceil(remaining / half))


class KeyQueries(Protocol):
    """The splitter's questions to the server about a table's chunk key."""

    def bounds(self, table_id: TableId, column: Column) -> tuple[Any, Any]:
        """``MIN`` and ``MAX`` of the key, as the server returns them (None, None: empty)."""

    def approximate_rows(self, table_id: TableId) -> int:
        """The server's row estimate (``SHOW TABLE STATUS``)."""

    def next_chunk_end(self, table_id: TableId, column: Column, previous: Any, top: Any,
                       limit: int) -> tuple[Any, bool] | None:
        """Flink's ``nextChunkEnd`` as the server computes it: the key ``limit`` rows on from
        ``previous`` (the next distinct key when they all equal it) and whether it is at or after
        ``top``; None when no row is left."""


class MySqlKeyQueries:
    """:class:`KeyQueries` on a pymysql connection opened with ``text_values=True``."""

    def __init__(self, conn: Any):
        self.conn = conn

    def bounds(self, table_id: TableId, column: Column) -> tuple[Any, Any]:
        col = quote_ident(column.name)
        with self.conn.cursor() as cur:
            cur.execute(f"SELECT MIN({col}), MAX({col}) FROM {quote_table(table_id.database, table_id.table)}")
            lo, hi = cur.fetchone()
        return lo, hi

    def approximate_rows(self, table_id: TableId) -> int:
        return approximate_row_count(self.conn, table_id)

    def next_chunk_end(self, table_id: TableId, column: Column, previous: Any, top: Any,
                       limit: int) -> tuple[Any, bool] | None:
        col = quote_ident(column.name)
        table = quote_table(table_id.database, table_id.table)
        prev = key_param(column, previous)
        top_param = key_param(column, top)
        with self.conn.cursor() as cur:
            cur.execute(
                f"SELECT MAX(T.{col}), MAX(T.{col}) = %s, MAX(T.{col}) >= %s FROM "
                f"(SELECT {col} FROM {table} WHERE {col} >= %s ORDER BY {col} ASC LIMIT {int(limit)}) AS T",
                (prev, top_param, prev),
            )
            end, equal, at_or_after_max = cur.fetchone()
            if end is None:
                return None
            if int(equal):
                cur.execute(f"SELECT MIN({col}), MIN({col}) >= %s FROM {table} WHERE {col} > %s", (top_param, prev))
                end, at_or_after_max = cur.fetchone()
                if end is None:
                    return None
        return end, bool(int(at_or_after_max))


# Integer keys, batched only with keys of the same type and sign: the UNION's column then has the type
# of each table's own MIN/MAX, and its values come back as they would alone (a UNION of mixed types is
# widened: BIGINT with BIGINT UNSIGNED is a DECIMAL, a DECIMAL's scale, a string's collation).
_BATCHED_BOUND_TYPES = frozenset({"tinyint", "smallint", "mediumint", "int", "integer", "bigint"})


def _bound_type(column: Column) -> tuple[str, bool]:
    base = column.data_type.lower()
    return ("int" if base == "integer" else base), column.unsigned


BOUNDS_PER_STATEMENT = 100  # tables whose key bounds one UNION ALL statement reads


class BatchedKeyQueries(MySqlKeyQueries):
    """:class:`MySqlKeyQueries` that reads the key bounds of many tables in one statement: asked for a
    table's bounds, it reads them for it and for the tables after it in ``upcoming`` (up to
    ``BOUNDS_PER_STATEMENT``) whose chunk key is an integer column of the same type and sign, one
    ``UNION ALL`` of per-table ``MIN``/``MAX`` (a database of 300 small tables was 300 round trips of planning). A table's bounds
    are handed out once, to its own split; asked again (a resumed split), they are read again.

    ``upcoming``: the tables the plan splits next, in order, each with its chunk key column (None: not an
    integer key, or not known: read alone). The bounds of a table are read a little earlier than its
    split: as before, rows may change between the bounds and the reads, which is why a table's first
    and last chunks are open-ended."""

    def __init__(self, conn: Any, upcoming: Sequence[tuple[TableId, Column | None]]):
        super().__init__(conn)
        self._upcoming = [(t, c) for t, c in upcoming if c is not None and c.data_type.lower() in _BATCHED_BOUND_TYPES]
        self._position = {t: n for n, (t, _) in enumerate(self._upcoming)}
        self._read: dict[TableId, tuple[Column, tuple[Any, Any]]] = {}

    def bounds(self, table_id: TableId, column: Column) -> tuple[Any, Any]:
        found = self._read.pop(table_id, None)
        if found is not None and found[0] == column:
            return found[1]
        start = self._position.get(table_id)
        if start is None or self._upcoming[start][1] != column:
            return super().bounds(table_id, column)
        kind = _bound_type(column)
        part = [(t, c) for t, c in self._upcoming[start:] if t == table_id or (
            t not in self._read and _bound_type(c) == kind)][:BOUNDS_PER_STATEMENT]
        statement = " UNION ALL ".join(
            f"SELECT {n}, MIN({quote_ident(c.name)}), MAX({quote_ident(c.name)}) FROM {quote_table(t.database, t.table)}"
            for n, (t, c) in enumerate(part))
        with self.conn.cursor() as cur:
            cur.execute(statement)
            rows = cur.fetchall()
        for n, lo, hi in rows:
            t, c = part[int(n)]
            self._read[t] = (c, (lo, hi))
        return self._read.pop(table_id)[1]


def _even_limit(column: Column) -> int | None:
    """The Java type's maximum for ``ObjectUtils.plus`` overflow (None: BigInteger/BigDecimal)."""
    base = column.data_type.lower()
    if base in ("int", "integer", "mediumint") and not column.unsigned:
        return _JAVA_INT_MAX
    if base == "mediumint":
        return _JAVA_INT_MAX
    if base in ("int", "integer", "bigint") and not (base == "bigint" and column.unsigned):
        return _JAVA_LONG_MAX
    if base == "year":
        return _JAVA_INT_MAX
    return None


def is_evenly_split_column(column: Column, tinyint1_as_boolean: bool = True) -> bool:
    """Flink's ``isEvenlySplitColumn``: the key's Flink type is BIGINT, INTEGER or DECIMAL."""
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    base = column.data_type.lower()
    if kind == TypeKind.INT:
        return base in ("mediumint", "int", "integer", "bigint")
    if kind in (TypeKind.UINT64, TypeKind.YEAR):
        return True
    if kind == TypeKind.DECIMAL:
        precision = column.numeric_precision if column.numeric_precision is not None else 10
        return precision <= 38
    return False


def distribution_factor(min_value: Any, max_value: Any, approximate_rows: int) -> float:
    """``(max − min + 1) / rows`` to 4 decimals rounded up (Flink's ``calculateDistributionFactor``)."""
    if approximate_rows == 0:
        return float("inf")  # Java: Double.MAX_VALUE, above any upper bound
    difference = Fraction(Decimal(str(max_value))) - Fraction(Decimal(str(min_value))) + 1
    scaled = math.ceil(difference * 10000 / approximate_rows)
    return float(Fraction(scaled, 10000))


def dynamic_chunk_size(factor: float, chunk_size: int, lower: float, upper: float) -> int | None:
    """``max((int)(factor × chunk_size), 1)`` when ``lower ≤ factor ≤ upper``, else None."""
    if not (lower <= factor <= upper):
        return None
    return max(min(int(factor * chunk_size), _JAVA_INT_MAX), 1)


def _plus(value: Any, step: int, column: Column) -> Any:
    if isinstance(value, Decimal):
        return value + step
    result = value + step
    limit = _even_limit(column)
    if limit is not None and result > limit:
        raise OverflowError
    return result


def split_evenly_sized_chunks(column: Column, min_value: KeyValue, max_value: KeyValue,
                              approximate_rows: int, chunk_size: int, dynamic: int) -> list[ChunkRange]:
    """Flink's ``splitEvenlySizedChunks``: arithmetic ranges, no queries."""
    if approximate_rows <= chunk_size:
        return [ChunkRange.all()]
    numeric = isinstance(min_value, str)
    lo = Decimal(min_value) if numeric else min_value
    hi = Decimal(max_value) if numeric else max_value

    def out(v: Any) -> KeyValue:
        return format(v, "f") if isinstance(v, Decimal) else v

    ranges: list[ChunkRange] = []
    start: Any = None
    end = _plus(lo, dynamic, column)
    while end <= hi:
        ranges.append(ChunkRange(None if start is None else (out(start),), (out(end),)))
        start = end
        try:
            end = _plus(end, dynamic, column)
        except OverflowError:
            break
    ranges.append(ChunkRange(None if start is None else (out(start),), None))
    return ranges


class ChunkSplitter:
    """Flink's ``MySqlChunkSplitter``: one table at a time, resumable mid-table.

    ``conn`` is a pymysql connection opened with ``text_values=True``
    (``cdc_core.mysql.connection.connect``), or any :class:`KeyQueries`.
    """

    def __init__(self, conn: Any, options: SplitOptions, state: ChunkSplitterState | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self._queries: KeyQueries = conn if hasattr(conn, "next_chunk_end") else MySqlKeyQueries(conn)
        self.budget = UNLIMITED  # set by the assigner before each step (snapshot_assigner.py)
        self._options = options
        self._sleep = sleep
        state = state or ChunkSplitterState()
        self._table_id = state.table_id
        self._next_start: str | tuple[KeyValue, ...] = state.next_chunk_start
        self._next_id = state.next_chunk_id
        self._rows_split = state.rows_split
        self._chunk_rows = state.chunk_rows
        self._analyzed_for: TableId | None = None
        self._column: Column | None = None
        self._min: KeyValue | None = None
        self._max: KeyValue | None = None
        self._rows = 0

    # -- Flink's ChunkSplitter interface ---------------------------------------------------------

    def has_next_chunk(self) -> bool:
        return self._table_id is not None

    def state(self) -> ChunkSplitterState:
        return ChunkSplitterState(self._table_id, self._next_start, self._next_id, self._rows_split, self._chunk_rows)

    def split_chunks(self, schema: TableSchema) -> list[SnapshotSplit]:
        """All even chunks of a table, or its next uneven chunk (call until ``has_next_chunk`` is False)."""
        table_id = schema.table_id
        if not self.has_next_chunk():
            self._analyze(schema)
            even = self._try_split_all_evenly_sized_chunks(table_id)
            if even is not None:
                return even
            self._table_id = table_id
            self._next_start = START_BOUND
            self._next_id = 0
            self._rows_split = 0
            self._chunk_rows = 0
            return [self._split_one_unevenly_sized_chunk(table_id)]
        if self._table_id != table_id:
            raise RuntimeError(
                f"Can not split table {table_id} before the splitting of {self._table_id} finishes."
            )
        if self._analyzed_for != table_id:
            self._analyze(schema)
        return [self._split_one_unevenly_sized_chunk(table_id)]

    # -- internals -------------------------------------------------------------------------------

    @property
    def key_column(self) -> Column:
        assert self._column is not None
        return self._column

    def _analyze(self, schema: TableSchema) -> None:
        self._column = chunk_key_column(schema, self._options.chunk_key_column)
        lo, hi = self._queries.bounds(schema.table_id, self._column)
        self._min = None if lo is None else bound_value(self._column, lo)
        self._max = None if hi is None else bound_value(self._column, hi)
        planned = self._options.approximate_rows(schema.table_id)
        self._rows = self._queries.approximate_rows(schema.table_id) if planned is None else planned
        self._analyzed_for = schema.table_id

    def _split(self, table_id: TableId, index: int, rng: ChunkRange) -> SnapshotSplit:
        return SnapshotSplit(table_id, index, rng.start, rng.end, (self.key_column.name,))

    def _try_split_all_evenly_sized_chunks(self, table_id: TableId) -> list[SnapshotSplit] | None:
        if self._min is None or self._max is None or self._min == self._max:
            return [self._split(table_id, 0, ChunkRange.all())]
        if not is_evenly_split_column(self.key_column, self._options.tinyint1_as_boolean):
            return None
        factor = distribution_factor(self._min, self._max, self._rows)
        chunk_size = self._options.rows_per_chunk(table_id)
        dynamic = dynamic_chunk_size(factor, chunk_size, self._options.distribution_factor_lower,
                                     self._options.distribution_factor_upper)
        log.info("table %s: distribution factor %s (bounds %s..%s), %d approximate rows", table_id, factor,
                 self._options.distribution_factor_lower, self._options.distribution_factor_upper, self._rows)
        if dynamic is None:
            return None
        ranges = split_evenly_sized_chunks(self.key_column, self._min, self._max, self._rows,
                                           chunk_size, dynamic)
        allowed = max(1, self.budget.chunks)
        if len(ranges) > allowed:  # more than the partitions left (an earlier table used more than planned)
            grown = math.ceil(dynamic * len(ranges) / allowed)
            log.info("table %s: %d even chunks exceed the %d partitions it may use; chunk span %d -> %d", table_id,
                     len(ranges), allowed, dynamic, grown)
            ranges = split_evenly_sized_chunks(self.key_column, self._min, self._max, self._rows, 0, grown)
        return [self._split(table_id, i, r) for i, r in enumerate(ranges)]

    def _split_one_unevenly_sized_chunk(self, table_id: TableId) -> SnapshotSplit:
        start = None if self._next_start == START_BOUND else tuple(self._next_start)
        previous = self._min if start is None else start[0]
        index = self._next_id
        # the partitions this table may still use; at one left its last chunk is unbounded
        chunks_left = self.budget.chunks - index
        size = adaptive_chunk_rows(self._options.rows_per_chunk(table_id), self._rows, self._rows_split, chunks_left,
                                   self.budget.rows_after, self._chunk_rows)
        end = None if chunks_left <= 1 else self._next_chunk_end(table_id, previous, size)
        if size != self._chunk_rows and self._chunk_rows:
            log.info("table %s: chunk %d: %d rows split of ~%d estimated, %d partitions left: chunks of %d rows",
                     table_id, index, self._rows_split, self._rows, chunks_left, size)
        self._chunk_rows = size
        self._rows_split += size
        self._may_sleep(index)
        self._next_id += 1
        if end is not None:
            self._next_start = (end,)
            return self._split(table_id, index, ChunkRange(start, (end,)))
        self._table_id = None
        self._next_start = END_BOUND
        return self._split(table_id, index, ChunkRange(start, None))

    def _next_chunk_end(self, table_id: TableId, previous: KeyValue | None, size: int) -> KeyValue | None:
        """Flink's ``nextChunkEnd``, with the comparisons done by the server (see module doc)."""
        if previous is None or self._max is None:
            return None
        found = self._queries.next_chunk_end(table_id, self.key_column, previous, self._max, size)
        if found is None or found[1]:
            return None
        return bound_value(self.key_column, found[0])

    def _may_sleep(self, count: int) -> None:
        """Pause after every 10 uneven chunks of one table (``count`` is the chunk's index in its table):
        a long run of split queries yields to the server; a table of fewer chunks never waits."""
        if count > 0 and count % 10 == 0 and self._options.split_pause_s > 0:
            self._sleep(self._options.split_pause_s)
            log.info("ChunkSplitter has split %d chunks", count)
