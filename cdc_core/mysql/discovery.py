"""Which tables a pipeline captures, and what each looks like.

Tables are selected as Flink CDC selects them: every base table of the server whose
``database.table`` matches ``tables`` and not ``tables.exclude`` (Flink's regex syntax, see
``cdc_core.config.selectors``), in (database, table) order. A table's schema comes from
``information_schema``: columns with their MySQL types, the primary key, the comment. MariaDB
stores JSON as ``LONGTEXT`` with a ``json_valid`` check; such columns are reported as ``json``.

The chunk key is the first primary-key column, or the column named for the table in
``scan.incremental.snapshot.chunk.key-column`` (first matching entry wins, as in Flink's
``ChunkUtils.getChunkKeyColumn``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pymysql

from cdc_core.config.selectors import TablePattern, TableSelector, parse_chunk_key_columns
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.connection import quote_ident
from cdc_core.mysql.ddl.column_definitions import charset_of_collation

SYSTEM_DATABASES = frozenset({"information_schema", "mysql", "performance_schema", "sys"})
CHUNK_KEY_OPTION = "scan.incremental.snapshot.chunk.key-column"


class DiscoveryError(ValueError):
    """A captured table cannot be snapshotted as configured; the message says how to fix it."""


class TableNotFoundError(DiscoveryError):
    """The server has no such table (dropped or renamed since); a table the user may not read is not this."""


_ER_BAD_DB_ERROR = 1049
_ER_NO_SUCH_TABLE = 1146


def _server_tables(conn: Any) -> list[TableId]:
    """Every base table the user can see, outside the system databases."""
    with conn.cursor() as cur:
        cur.execute(
            "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_SCHEMA, TABLE_NAME"
        )
        rows = cur.fetchall()
    return [TableId(_text(db), _text(table)) for db, table in rows if _text(db).lower() not in SYSTEM_DATABASES]


def list_captured_tables(conn: Any, selector: TableSelector) -> list[TableId]:
    """Base tables matching the selector, sorted by database then table (code points)."""
    out = [t for t in _server_tables(conn) if selector.matches(t.database, t.table)]
    return sorted(out)  # code-point order, independent of information_schema's collation


@dataclass(frozen=True)
class UnmatchedPattern:
    """A ``tables`` pattern that matches no table on the server, and the server's tables whose
    names are close to it (a typo's likely meaning)."""

    pattern: str
    near: tuple[str, ...]

    def describe(self) -> str:
        meant = f"did you mean {' or '.join(self.near)}?" if self.near else "no table has a similar name"
        return f"'{self.pattern}' matches no table ({meant})"


class NoTableMatchedError(DiscoveryError):
    """No ``tables`` pattern matches a table on the server: the pipeline would capture nothing."""

    def __init__(self, unmatched: Sequence[UnmatchedPattern]):
        self.unmatched = tuple(unmatched)
        super().__init__("source.tables: " + "; ".join(u.describe() for u in self.unmatched)
                         + ": nothing to capture; fix source.tables in the pipeline file (a pattern is "
                         "'database.table', a regex for each part)")


def unmatched_patterns(conn: Any, selector: TableSelector) -> list[UnmatchedPattern]:
    """The ``tables`` patterns that match no table on the server now, each with near names.

    A pattern whose every table ``tables.exclude`` removes does match (the exclusion is deliberate).
    Near names are by ``difflib``, part by part: when the database part matches, the tables of those
    databases whose names are close to the table part (``shop.custmers``: ``shop.customers``); when it
    does not, the tables of the databases whose names are close to it that the table part matches or
    is close to (``shopx.orders``: ``shop.orders``)."""
    tables = _server_tables(conn)
    out = []
    for pattern in selector.include:
        if any(pattern.matches(t.database, t.table) for t in tables):
            continue
        out.append(UnmatchedPattern(pattern.text, tuple(str(t) for t in _near(pattern, tables))))
    return out


def _near(pattern: TablePattern, tables: list[TableId], n: int = 3, cutoff: float = 0.75) -> list[TableId]:
    def close(text: str, names: set[str]) -> set[str]:
        return set(difflib.get_close_matches(text, sorted(names), n=n, cutoff=cutoff))

    databases = {t.database for t in tables}
    matching = {d for d in databases if pattern.database.fullmatch(d)} or close(pattern.database.pattern, databases)
    candidates = [t for t in tables if t.database in matching]
    names = {t.table for t in candidates}
    wanted = {n for n in names if pattern.table.fullmatch(n)} | close(pattern.table.pattern, names)
    ranked = difflib.get_close_matches(pattern.table.pattern, sorted(wanted), n=max(1, len(wanted)), cutoff=0.0)
    return [t for name in ranked for t in candidates if t.table == name][:n]


def require_matching_tables(conn: Any, selector: TableSelector) -> list[UnmatchedPattern]:
    """:class:`NoTableMatchedError` when no pattern matches any table; else the patterns that match
    none (a warning: a table created later that matches is captured by the binlog as it appears)."""
    unmatched = unmatched_patterns(conn, selector)
    if len(unmatched) == len(selector.include):
        raise NoTableMatchedError(unmatched)
    if not list_captured_tables(conn, selector):
        raise DiscoveryError("source.tables.exclude: every table source.tables matches is excluded: nothing to "
                             "capture; fix source.tables or source.tables.exclude in the pipeline file")
    return unmatched


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _raise_missing(cur: Any, table_id: TableId) -> None:
    """Tell a table that is gone from one the user may not read: both hide it from information_schema.

    A dropped table's chunks are skipped (its DROP follows in the binlog), but a table the user lost
    SELECT on still has rows: skipping it would lose them. The server says which: reading it fails
    with ER_NO_SUCH_TABLE (1146) or ER_BAD_DB_ERROR (1049) when it is gone, with an access error
    (1142 / 1044) when it is not readable.
    """
    try:
        cur.execute(f"SELECT 1 FROM {quote_ident(table_id.database)}.{quote_ident(table_id.table)} LIMIT 0")
        cur.fetchall()
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args else None
        if code in (_ER_NO_SUCH_TABLE, _ER_BAD_DB_ERROR):
            raise TableNotFoundError(f"table {table_id} does not exist (dropped or renamed)") from exc
        raise DiscoveryError(f"the user cannot read table {table_id} ({exc.args[-1]}): grant SELECT on it, "
                             f"e.g. GRANT SELECT ON {quote_ident(table_id.database)}.* TO the pipeline's user") from exc
    raise DiscoveryError(f"table {table_id} can be read but information_schema shows none of its columns: "
                         "grant SELECT on it to the pipeline's user")


_COLUMNS_SQL = (
    "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, COLUMN_DEFAULT, "
    "COLUMN_COMMENT, CHARACTER_SET_NAME, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, "
    "DATETIME_PRECISION FROM information_schema.COLUMNS WHERE {where} "
    "ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION"
)
_KEYS_SQL = (
    "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS WHERE {where} "
    "AND INDEX_NAME = 'PRIMARY' ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX"
)
_TABLES_SQL = "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_COMMENT, TABLE_COLLATION FROM information_schema.TABLES WHERE {where}"
_CHECKS_SQL = ("SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
               "WHERE {where}")


def read_table_schema(conn: Any, table_id: TableId) -> TableSchema:
    """Columns, primary key, comment and default charset of one table, from ``information_schema``."""
    return _read_schemas(conn, [table_id], "TABLE_SCHEMA = %s AND TABLE_NAME = %s",
                         (table_id.database, table_id.table))[table_id]


_NAMED_TABLES = 1_000  # read_table_schemas names its tables in the query up to this many


def read_table_schemas(conn: Any, tables: list[TableId], *, skip_missing: bool = False) -> dict[TableId, TableSchema]:
    """:func:`read_table_schema` of many tables in four ``information_schema`` queries, whatever their
    number (one per table costs ~4 round trips each: seconds for hundreds of tables). A table
    ``information_schema`` does not show raises as in :func:`read_table_schema`, or with
    ``skip_missing`` is left out (its caller asks for it alone when it needs it)."""
    if not tables:
        return {}
    databases = sorted({t.database for t in tables})
    where = f"TABLE_SCHEMA IN ({', '.join(['%s'] * len(databases))})"
    args: tuple = tuple(databases)
    names = sorted({t.table for t in tables})
    if len(names) <= _NAMED_TABLES:
        # the tables named too: a share of a database's tables (a snapshot run's group of them) reads
        # only their columns, not the whole database's each time
        where += f" AND TABLE_NAME IN ({', '.join(['%s'] * len(names))})"
        args += tuple(names)
    return _read_schemas(conn, tables, where, args, skip_missing=skip_missing)


def _read_schemas(conn: Any, tables: list[TableId], where: str, args: tuple, *,
                  skip_missing: bool = False) -> dict[TableId, TableSchema]:
    wanted = set(tables)
    columns: dict[TableId, list[tuple]] = {}
    keys: dict[TableId, list[str]] = {}
    table_rows: dict[TableId, tuple] = {}
    with conn.cursor() as cur:
        cur.execute(_COLUMNS_SQL.format(where=where), args)
        for row in cur.fetchall():
            tid = TableId(_text(row[0]), _text(row[1]))
            if tid in wanted:
                columns.setdefault(tid, []).append(row[2:])
        cur.execute(_KEYS_SQL.format(where=where), args)
        for db, table, name in cur.fetchall():
            keys.setdefault(TableId(_text(db), _text(table)), []).append(_text(name))
        cur.execute(_TABLES_SQL.format(where=where), args)
        for db, table, comment, collation in cur.fetchall():
            table_rows[TableId(_text(db), _text(table))] = (comment, collation)
        json_columns = _mariadb_json_columns(cur, where.replace("TABLE_SCHEMA", "CONSTRAINT_SCHEMA", 1), args)
        if not skip_missing:
            for tid in tables:
                if tid not in columns:
                    _raise_missing(cur, tid)
    return {tid: _schema(tid, columns[tid], tuple(keys.get(tid, ())), table_rows.get(tid),
                         json_columns.get(tid, set())) for tid in tables if tid in columns}


def _schema(table_id: TableId, col_rows: list[tuple], primary_key: tuple[str, ...], table_row: tuple | None,
            json_columns: set[str]) -> TableSchema:
    comment = _text(table_row[0]) if table_row and table_row[0] else ""
    # the table's default charset, which string columns added later without one take
    table_charset = charset_of_collation(_text(table_row[1])) if table_row and table_row[1] else None
    columns = []
    for name, ctype, dtype, nullable, default, ccomment, charset, char_len, prec, scale, dtp in col_rows:
        name = _text(name)
        ctype, dtype = _text(ctype), _text(dtype).lower()
        if name in json_columns and dtype == "longtext":
            ctype, dtype = "json", "json"
        columns.append(
            Column(
                name=name, column_type=ctype, data_type=dtype, nullable=_text(nullable) == "YES",
                default=None if default is None else _text(default), comment=_text(ccomment or ""),
                charset=None if charset is None else _text(charset), char_length=_int(char_len),
                numeric_precision=_int(prec), numeric_scale=_int(scale), datetime_precision=_int(dtp),
            )
        )
    return TableSchema(table_id, tuple(columns), primary_key, comment, table_charset)


def _mariadb_json_columns(cur: Any, where: str, args: tuple) -> dict[TableId, set[str]]:
    try:
        cur.execute(_CHECKS_SQL.format(where=where), args)
    except Exception:  # noqa: BLE001 - MySQL < 8.0.16 has no CHECK_CONSTRAINTS; no MariaDB JSON there
        return {}
    out: dict[TableId, set[str]] = {}
    for db, table, clause in cur.fetchall():
        m = re.fullmatch(r"\s*json_valid\(`((?:[^`]|``)+)`\)\s*", _text(clause), re.IGNORECASE)
        if m:
            out.setdefault(TableId(_text(db), _text(table)), set()).add(m.group(1).replace("``", "`"))
    return out


def like_literal(name: str) -> str:
    """``name`` as a LIKE pattern that matches only itself (``_``, ``%`` and ``\\`` escaped)."""
    return name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def approximate_row_count(conn: Any, table_id: TableId) -> int:
    """``SHOW TABLE STATUS LIKE 't'``, column 5 (Rows), as Flink's ``queryApproximateRowCnt``.

    Unlike Flink, the name's LIKE wildcards are escaped and the row named exactly so is taken:
    Flink's unescaped ``a_b`` also matches ``aXb`` and takes whichever row comes first.
    """
    return table_status(conn, table_id)[0]


def table_status(conn: Any, table_id: TableId) -> tuple[int, int | None]:
    """The approximate row count and the average row length in bytes (None when the engine
    reports none) from ``SHOW TABLE STATUS``: what chunk sizing needs."""
    with conn.cursor() as cur:
        cur.execute(f"USE {quote_ident(table_id.database)}")
        cur.execute("SHOW TABLE STATUS LIKE %s", (like_literal(table_id.table),))
        found = [r for r in cur.fetchall() if r]
    rows = [r for r in found if _text(r[0]) == table_id.table] or [
        r for r in found if _text(r[0]).lower() == table_id.table.lower()]
    if not rows or len(rows[0]) < 5:
        raise DiscoveryError(f"SHOW TABLE STATUS returned nothing for {table_id}")
    avg = rows[0][5] if len(rows[0]) > 5 else None
    return int(rows[0][4] or 0), (int(avg) if avg else None)


def table_statuses(conn: Any, tables: list[TableId]) -> dict[TableId, tuple[int, int | None]]:
    """:func:`table_status` of many tables in one ``information_schema.TABLES`` query (``TABLE_ROWS``
    and ``AVG_ROW_LENGTH`` are the columns ``SHOW TABLE STATUS`` shows as Rows and Avg_row_length);
    a table the query does not show is asked with :func:`table_status`, which says why it is missing."""
    if not tables:
        return {}
    databases = sorted({t.database for t in tables})
    with conn.cursor() as cur:
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_ROWS, AVG_ROW_LENGTH FROM information_schema.TABLES "
                    f"WHERE TABLE_SCHEMA IN ({', '.join(['%s'] * len(databases))})", tuple(databases))
        found = {TableId(_text(db), _text(t)): (int(rows or 0), int(avg) if avg else None)
                 for db, t, rows, avg in cur.fetchall()}
    return {t: found[t] if t in found else table_status(conn, t) for t in tables}


def chunk_key_column(schema: TableSchema, chunk_key_columns: str | None) -> Column:
    """The column a table is split on (Flink's ``ChunkUtils.getChunkKeyColumn``)."""
    configured = None
    for pattern, column in parse_chunk_key_columns(chunk_key_columns or ""):
        if pattern.matches(schema.table_id.database, schema.table_id.table):
            configured = column
            break
    if not schema.primary_key and configured is None:
        raise DiscoveryError(
            f"Table '{schema.table_id}' has no primary key. To snapshot it, set '{CHUNK_KEY_OPTION}' for this "
            f"table in the source block, e.g. '{schema.table_id}:<column>' (an indexed, rarely updated column)."
        )
    if configured is not None:
        for column in schema.columns:
            if column.name == configured:
                return column
        raise DiscoveryError(
            f"Chunk key column '{configured}' ({CHUNK_KEY_OPTION}) doesn't exist in the columns "
            f"[{','.join(schema.column_names)}] of the table {schema.table_id}."
        )
    return schema.column(schema.primary_key[0])
