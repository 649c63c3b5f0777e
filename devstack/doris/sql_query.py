"""Doris queries on DuckDB: a SELECT (or WITH) parsed by sqlglot's Doris dialect, its table references
resolved against the catalog (``information_schema`` redirected to the stand-in's own tables) and
re-emitted as DuckDB SQL.

sqlglot's parse and emit cost ~5 ms of CPU even for ``SELECT 1``, and pollers repeat the same
statements, so :func:`translate_query` keeps the last :data:`CACHE_SIZE` translations by their exact
text and current database; a hit still asks ``resolve`` about every table the statement names, in the
same order, so an unknown table fails as before and a changed answer translates afresh.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import sqlglot
from sqlglot import exp

from .sql_lexer import SqlError

INFO_SCHEMA = "information_schema"
INFO_SCHEMA_STORE = "__standin_is"
CACHE_SIZE = 256

# (text, current db) -> (DuckDB SQL, referenced tables, every resolve call in order with its answer)
_Entry = tuple[str, list[tuple[str, str]], list[tuple[tuple[str, str], tuple[str, str]]]]
_cache: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
_cache_lock = threading.Lock()


def translate_query(sql: str, current_db: str, resolve: Any) -> tuple[str, list[tuple[str, str]]]:
    """Translate a Doris SELECT to DuckDB SQL.

    ``resolve(db, table)`` returns the stored (db, table) pair or raises :class:`SqlError`; it is
    also how unknown tables get Doris' message. Returns the DuckDB SQL and the referenced tables.
    """
    key = (sql, current_db)
    with _cache_lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is not None:
        out, refs, calls = entry
        if all(resolve(*args) == answer for args, answer in calls):
            return out, list(refs)
    calls: list[tuple[tuple[str, str], tuple[str, str]]] = []

    def recorded(db: str, name: str) -> tuple[str, str]:
        answer = resolve(db, name)
        calls.append(((db, name), answer))
        return answer

    out, refs = _translate(sql, current_db, recorded)
    with _cache_lock:
        _cache[key] = (out, list(refs), calls)
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return out, refs


def _translate(sql: str, current_db: str, resolve: Any) -> tuple[str, list[tuple[str, str]]]:
    try:
        tree = sqlglot.parse_one(sql, read="doris")
    except sqlglot.errors.ParseError as e:
        raise SqlError(f"Syntax error: {str(e).splitlines()[0]}") from e
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    refs: list[tuple[str, str]] = []
    for t in list(tree.find_all(exp.Table)):
        name = t.name
        db = t.db or None
        if not name:
            continue
        if db is None and name.lower() in ctes:
            continue
        effective_db = db or current_db
        if effective_db and effective_db.lower() == INFO_SCHEMA:
            t.set("db", exp.to_identifier(INFO_SCHEMA_STORE, quoted=True))
            t.set("this", exp.to_identifier(name.upper(), quoted=True))
            t.set("catalog", None)
            continue
        if not effective_db:
            raise SqlError("No database selected")
        sdb, stbl = resolve(effective_db, name)
        refs.append((sdb, stbl))
        t.set("catalog", None)
        t.set("db", exp.to_identifier(sdb, quoted=True))
        t.set("this", exp.to_identifier(stbl, quoted=True))
    if isinstance(tree, exp.Select):
        # Doris names an unaliased expression column by its text, e.g. "count(*)".
        for i, e in enumerate(tree.expressions):
            if not isinstance(e, (exp.Column, exp.Alias, exp.Star)):
                tree.expressions[i] = exp.alias_(e, e.sql(dialect="doris", normalize_functions="lower"), quoted=True)
    out = tree.sql(dialect="duckdb")
    return out, refs
