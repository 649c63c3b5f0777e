"""How a load's rows apply to a table, as Doris' data models do.

Duplicate-key tables append. Unique-key tables (merge-on-write) keep one row per key: within a load
the last row of a key wins (or the highest sequence value, when the table has a sequence column);
against the stored rows a load's row replaces the stored one, unless the stored row's sequence value
is higher. A row whose delete sign is set removes its key; with a sequence column its tombstone is
kept, so that a later load with a lower sequence value stays deleted (as Doris does until compaction).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from .catalog import DELETE_SIGN, SEQUENCE_COL, Column, Table
from .types import quote_ident, quote_str

_ORDERED_TYPES = ("TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT", "DECIMALV3", "DATEV2", "DATETIMEV2",
                  "CHAR", "VARCHAR", "STRING")


@dataclass(frozen=True)
class StagedKeys:
    """What a merge asks of a load's own staged rows, computed once when the load stages them.

    These depend on the staged rows alone, so :meth:`Storage.write_staging` computes them outside
    the write lock (kept in the staged file's schema metadata) and a commit, which runs under the
    lock, only asks what depends on the stored rows. ``keys`` and ``key_type`` are the table's key
    columns and first key's DuckDB type when computed: a commit whose table no longer matches them
    computes the facts afresh (:meth:`matches`).
    """

    keys: tuple[str, ...]
    key_type: str
    bounds: str  # ``key BETWEEN lo AND hi`` for the first key column, or "" (see _key_bounds)
    distinct: bool  # no two staged rows share a key
    rows: int

    def to_json(self) -> str:
        return json.dumps({"keys": list(self.keys), "key_type": self.key_type, "bounds": self.bounds,
                           "distinct": self.distinct, "rows": self.rows})

    @staticmethod
    def from_json(text: str | bytes) -> StagedKeys:
        d = json.loads(text)
        return StagedKeys(tuple(d["keys"]), d["key_type"], d["bounds"], bool(d["distinct"]), int(d["rows"]))

    def matches(self, t: Table) -> bool:
        return self.keys == tuple(t.key_names) and self.key_type == _key_type(t)


def _key_type(t: Table) -> str:
    column = t.column(t.key_names[0]) if t.key_names else None
    return column.dtype.duck() if column is not None else ""


def staged_keys(cur: duckdb.DuckDBPyConnection, t: Table, stg: str) -> StagedKeys | None:
    """The facts of :class:`StagedKeys` for the staged rows ``stg`` of a unique table (None for others)."""
    if not t.is_unique or not t.key_names:
        return None
    keys = list(t.key_names)
    if len(keys) == 1:
        # one scan: the distinct count (which skips NULLs) is asked only when the key holds none,
        # and a key with a NULL has no bounds, so no merge asks whether its keys are distinct
        q = quote_ident(keys[0])
        lo, hi, nulls, distinct, total = cur.execute(  # type: ignore[misc]
            f"SELECT min({q}), max({q}), count(*) FILTER (WHERE {q} IS NULL), count(DISTINCT {q}), count(*) "
            f"FROM {stg}").fetchall()[0]
        bounds = _bounds_sql(t, keys[0], lo, hi, nulls)
        return StagedKeys(tuple(keys), _key_type(t), bounds, bool(bounds) and distinct == total, total)
    part = ", ".join(quote_ident(k) for k in keys)
    bounds = _key_bounds(cur, t, stg, keys[0])
    distinct, total = cur.execute(  # type: ignore[misc]
        f"SELECT (SELECT count(*) FROM (SELECT DISTINCT {part} FROM {stg})), (SELECT count(*) FROM {stg})").fetchall()[0]
    return StagedKeys(tuple(keys), _key_type(t), bounds, distinct == total, total)


def _arrow_ordered(kind: pa.DataType) -> bool:
    """Arrow types whose order and equality are DuckDB's for the column types they hold: integers and
    dates by value, text by its bytes."""
    return (pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_date32(kind))


def staged_keys_arrow(t: Table, rows: pa.Table) -> StagedKeys | None:
    """:func:`staged_keys` computed by Arrow's kernels on the staged rows themselves, for a unique
    table whose key columns are all of an integer, text or date type (None otherwise: ask DuckDB).

    Same answers (Arrow and DuckDB both order and compare text by its bytes, integers and dates by
    value, skip NULLs in min, max and a one-column distinct count, and group NULLs together in a
    several-column ``DISTINCT``), without a DuckDB statement: its parse, bind and plan cost a
    2,000-row load ~4 ms, ten times the kernels' work."""
    keys = list(t.key_names)
    if not t.is_unique or not keys or any(k not in rows.column_names for k in keys):
        return None
    if not all(_arrow_ordered(rows.column(k).type) for k in keys):
        return None
    key = keys[0]
    column = rows.column(key)
    bounds = pc.min_max(column)
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    nulls = column.null_count
    total = rows.num_rows
    sql = _bounds_sql(t, key, lo, hi, nulls)
    if _strictly_increasing(rows, keys):  # a snapshot chunk: keys in order, so distinct
        distinct = bool(sql) or len(keys) > 1
    elif len(keys) == 1:
        distinct = bool(sql) and pc.count_distinct(column, mode="only_valid").as_py() == total
    else:  # SELECT DISTINCT k1, k2, ...: NULLs are one group, as in Arrow's group_by
        distinct = rows.select(keys).group_by(keys).aggregate([]).num_rows == total
    return StagedKeys(tuple(keys), _key_type(t), sql, distinct, total)


def _strictly_increasing(rows: pa.Table, keys: list[str]) -> bool:
    """Whether the rows' keys (no NULL among them) rise strictly from row to row, compared
    lexicographically over ``keys``: then no two are equal. One vectorised comparison of each row with
    the next, ~0.1 ms per 100,000 integer keys where a distinct count (a hash of every key) costs
    ~10 ms: a snapshot sends its chunks in key order, so their loads take this way."""
    n = rows.num_rows
    cols = [rows.column(k) for k in keys]
    if n < 2 or any(c.null_count for c in cols):
        return n < 2 and not any(c.null_count for c in cols)
    prev = [c.slice(0, n - 1) for c in cols]
    succ = [c.slice(1) for c in cols]
    rising = pc.less(prev[-1], succ[-1])
    for p, q in zip(reversed(prev[:-1]), reversed(succ[:-1]), strict=True):
        rising = pc.or_(pc.less(p, q), pc.and_(pc.equal(p, q), rising))
    return bool(pc.all(rising).as_py())


def merge_rows(cur: duckdb.DuckDBPyConnection, t: Table, target: str, stg: str, staged: set[str], work: str,
               facts: StagedKeys | None = None) -> int:
    """Apply the staged rows ``stg`` (columns ``staged``, plus ``__ord``, ``__sign``, maybe ``__seq``) to
    ``target`` inside the caller's transaction, through the scratch table ``work``; returns rows applied.
    ``facts``: the staged rows' keys as computed when they were staged (used when they still match ``t``)."""
    if not t.is_unique:
        cur.execute(append_sql(t, target, stg, staged))
        return cur.execute(f"SELECT count(*) FROM {stg}").fetchall()[0][0]
    if facts is None or not facts.matches(t):
        facts = staged_keys(cur, t, stg)
        assert facts is not None  # a unique table has keys
    keys = [k for k in t.key_names]
    nullable_key = any((t.column(k) or Column(k, "INT")).nullable for k in keys)
    eq = " IS NOT DISTINCT FROM " if nullable_key else " = "
    part = ", ".join(quote_ident(k) for k in keys)
    has_seq = t.has_sequence and "__seq" in staged
    order = "__seq DESC NULLS LAST, __ord DESC" if has_seq else "__ord DESC"
    if appends_only(cur, target, facts):
        # A load whose keys are distinct and meet no stored row (a snapshot chunk, new keys): the
        # general merge below would keep every row as it is, so the rows are appended directly.
        cur.execute(append_sql(t, target, stg, staged))
        return facts.rows
    cur.execute(f"DROP TABLE IF EXISTS {work}")
    cur.execute(
        f"CREATE TABLE {work} AS SELECT * EXCLUDE (__rn) FROM (SELECT *, row_number() OVER "
        f"(PARTITION BY {part} ORDER BY {order}) AS __rn FROM {stg}) WHERE __rn = 1"
    )
    # Aliases no Doris table name can clash with (a table called "w" or "d" made the names ambiguous).
    join = " AND ".join(f"__old.{quote_ident(k)}{eq}__new.{quote_ident(k)}" for k in keys)
    seqc = quote_ident(SEQUENCE_COL)
    bounds = facts.bounds  # keeping one row per key keeps the first key's min, max and NULLs

    def within(alias: str) -> str:
        return f" AND {alias}.{bounds}" if bounds else ""

    if has_seq:
        # A stored row with a higher sequence value wins (ties go to the newer load).
        cur.execute(
            f"DELETE FROM {work} AS __new WHERE EXISTS (SELECT 1 FROM {target} AS __old WHERE {join} AND "
            f"(__old.{seqc} > __new.__seq OR (__new.__seq IS NULL AND __old.{seqc} IS NOT NULL)){within('__old')})"
        )
    cur.execute(f"DELETE FROM {target} AS __old USING {work} AS __new WHERE {join}{within('__old')}")
    cur.execute(f"{_unique_insert(t, target, staged)}{work}{_keep(t)}")
    n = cur.execute(f"SELECT count(*) FROM {work}").fetchall()[0][0]
    cur.execute(f"DROP TABLE {work}")
    return n

# The name under which :func:`merge_arrow`'s statements read a load's rows: DuckDB's replacement scan
# finds the Arrow table as a local variable of that name in the frame that runs the statement. A
# registered view costs two catalog changes a load (``register``, ``unregister``: ~2 ms, as much as
# the INSERT); no Doris table or database name can start with ``_``, so no catalog entry shadows it.
_ROWS = "__standin_rows"


def merge_arrow(cur: duckdb.DuckDBPyConnection, t: Table, target: str, rows: pa.Table, work: str,
                facts: StagedKeys | None = None, view: str = "stg", *, new_keys: bool = False,
                guard: bool = True, guarded: list[bool] | None = None) -> int:
    """:func:`merge_rows` for staged rows held as an Arrow table (a staged file's, read whole), in
    fewer DuckDB statements: same rows stored, same count returned.

    * a duplicate table's rows: one ``INSERT``;
    * a unique table's load whose keys are distinct and meet no stored row: one ``INSERT`` whose
      ``NOT EXISTS`` over the load's key bounds is :func:`appends_only`'s question (a snapshot chunk,
      a stream's new keys): it appends every kept row or, when a stored row lies within the bounds,
      none (the subquery reads the table as the statement began, before any row it appends);
    * distinct keys that meet stored rows (a stream's updates): a ``DELETE`` of the stored rows the
      load replaces and an ``INSERT`` of the load's rows that won, with no scratch table — with a
      sequence column a stored row of a higher sequence value wins and stays, as in :func:`merge_rows`;
    * keys that repeat within the load: :func:`merge_rows` on the rows registered as ``view``.

    ``new_keys``: the caller knows that no stored row lies within the load's key bounds (and its
    keys are distinct: ``facts.distinct``): the ``INSERT`` goes without its ``NOT EXISTS``, whose
    join costs as much DuckDB CPU as the insert itself.

    ``guard`` False: go straight to the ``DELETE`` and ``INSERT`` (same rows stored), without first
    trying the guarded ``INSERT`` — for a table whose loads' keys have lately met stored rows (a
    stream's updates, random keys), where that statement appends nothing and costs a statement.
    ``guarded``: told whether the guarded ``INSERT`` ran and appended (True) or found stored rows (False)."""
    staged = set(rows.column_names)
    __standin_rows = rows  # noqa: F841 - read by DuckDB's replacement scan (_ROWS)
    if not t.is_unique:
        cur.execute(append_sql(t, target, _ROWS, staged)).fetchall()
        return rows.num_rows
    if facts is None or not facts.matches(t):
        facts = staged_keys_arrow(t, rows)
    if facts is not None and facts.distinct:
        keep = _keep(t)
        if new_keys and facts.bounds:
            cur.execute(f"{_unique_insert(t, target, staged)}{_ROWS}{keep}").fetchall()
            return facts.rows
        if facts.bounds and guard:
            none_stored = f"NOT EXISTS (SELECT 1 FROM {target} WHERE {facts.bounds})"
            appended = cur.execute(f"{_unique_insert(t, target, staged)}{_ROWS}{keep}{' AND ' if keep else ' WHERE '}"
                                   f"{none_stored}").fetchall()[0][0]
            kept = rows.num_rows if not keep else pc.sum(pc.equal(rows.column("__sign"), 0)).as_py() or 0
            if guarded is not None and kept:
                guarded.append(bool(appended))
            # every kept row appended (none met a stored row), or none to keep and no stored row to
            # delete (a tombstone of a stored key is merged below)
            if appended or (not kept and not cur.execute(
                    f"SELECT EXISTS (SELECT 1 FROM {target} WHERE {facts.bounds})").fetchall()[0][0]):
                return facts.rows
        keys = list(t.key_names)
        nullable_key = any((t.column(k) or Column(k, "INT")).nullable for k in keys)
        eq = " IS NOT DISTINCT FROM " if nullable_key else " = "
        join = " AND ".join(f"__old.{quote_ident(k)}{eq}__new.{quote_ident(k)}" for k in keys)
        within = f" AND __old.{facts.bounds}" if facts.bounds else ""
        has_seq = t.has_sequence and "__seq" in staged
        seqc = quote_ident(SEQUENCE_COL)
        # merge_rows's rule: the stored row wins when its sequence value is higher (or the load's is NULL)
        stored_wins = f"(__old.{seqc} > __new.__seq OR (__new.__seq IS NULL AND __old.{seqc} IS NOT NULL))"
        cur.execute(f"DELETE FROM {target} AS __old USING {_ROWS} AS __new WHERE {join}{within}"
                    + (f" AND {stored_wins} IS NOT TRUE" if has_seq else ""))
        if not has_seq:
            cur.execute(f"{_unique_insert(t, target, staged)}{_ROWS}{keep}").fetchall()
            return facts.rows
        # the stored rows of the load's keys still there won: the load's rows of those keys lost
        won = f"NOT EXISTS (SELECT 1 FROM {target} AS __old WHERE {join}{within})"
        inserted = cur.execute(f"{_unique_insert(t, target, staged)}{_ROWS} AS __new WHERE {won}").fetchall()[0][0]
        return inserted
    cur.register(view, rows)
    try:
        return merge_rows(cur, t, target, view, staged, work, facts)
    finally:
        cur.unregister(view)


def _unique_insert(t: Table, target: str, staged: set[str]) -> str:
    """``INSERT INTO target (columns, hidden columns) SELECT ... FROM `` for a unique table's rows."""
    col_sql = ", ".join(quote_ident(c.name) for c in t.columns if c.name in staged)
    hidden = [quote_ident(DELETE_SIGN)]
    hidden_src = ["__sign"]
    if t.has_sequence:
        hidden.append(quote_ident(SEQUENCE_COL))
        hidden_src.append("__seq" if "__seq" in staged else "NULL")
    return f"INSERT INTO {target} ({col_sql}, {', '.join(hidden)}) SELECT {col_sql}, {', '.join(hidden_src)} FROM "


def _keep(t: Table) -> str:
    """The rows a unique table stores of a load: tombstones only matter with a sequence column."""
    return "" if t.has_sequence else " WHERE __sign = 0"


def append_sql(t: Table, target: str, stg: str, staged: set[str]) -> str:
    """The statement that appends the staged rows ``stg`` (columns ``staged``) to ``target`` as they
    are: every load of a duplicate table, and a unique table's load when :func:`appends_only`.
    One text for :func:`merge_rows` and for a load appended ahead of its commit
    (``Storage.write_staging``), so both store the same rows."""
    if not t.is_unique:
        col_sql = ", ".join(quote_ident(c.name) for c in t.columns if c.name in staged)
        return f"INSERT INTO {target} ({col_sql}) SELECT {col_sql} FROM {stg} ORDER BY __ord"
    return f"{_unique_insert(t, target, staged)}{stg}{_keep(t)}"


def appends_only(cur: duckdb.DuckDBPyConnection, target: str, facts: StagedKeys) -> bool:
    """The load's keys are distinct and no stored row (tombstones included) lies within their bounds."""
    if not facts.bounds or not facts.distinct:
        return False
    # fetchall: a half-read result would refuse the cursor's next statement (or a registration)
    return not cur.execute(f"SELECT EXISTS (SELECT 1 FROM {target} WHERE {facts.bounds})").fetchall()[0][0]


def _key_bounds(cur: duckdb.DuckDBPyConnection, t: Table, work: str, key: str) -> str:
    """``key BETWEEN lo AND hi`` for the batch's first key column, with constant bounds.

    Constants let DuckDB skip the stored row groups whose min/max lie outside the batch's
    keys, so a commit reads the rows it may replace rather than the whole table (a snapshot
    arrives in key order, so its row groups barely overlap). Empty when the batch holds a
    NULL key (BETWEEN would miss the stored NULL it replaces) or the type has no order.
    """
    column = t.column(key)
    if column is None or column.dtype.name not in _ORDERED_TYPES:
        return ""
    q = quote_ident(key)
    lo, hi, nulls = cur.execute(  # type: ignore[misc]
        f"SELECT min({q}), max({q}), count(*) FILTER (WHERE {q} IS NULL) FROM {work}").fetchall()[0]
    return _bounds_sql(t, key, lo, hi, nulls)


def _bounds_sql(t: Table, key: str, lo: object, hi: object, nulls: int) -> str:
    """``_key_bounds``'s answer from the key's min, max and NULL count."""
    column = t.column(key)
    if column is None or column.dtype.name not in _ORDERED_TYPES or lo is None or nulls:
        return ""
    q = quote_ident(key)
    duck = column.dtype.duck()
    lo_sql = f"CAST({quote_str(str(lo))} AS {duck})"
    hi_sql = f"CAST({quote_str(str(hi))} AS {duck})"
    return f"{q} BETWEEN {lo_sql} AND {hi_sql}"
