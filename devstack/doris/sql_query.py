"""Doris queries on DuckDB: a SELECT (or WITH) parsed by sqlglot's Doris dialect, its table references
resolved against the catalog (``information_schema`` redirected to the stand-in's own tables) and
re-emitted as DuckDB SQL.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from .sql_lexer import SqlError

INFO_SCHEMA = "information_schema"
INFO_SCHEMA_STORE = "__standin_is"


def translate_query(sql: str, current_db: str, resolve: Any) -> tuple[str, list[tuple[str, str]]]:
    """Translate a Doris SELECT to DuckDB SQL.

    ``resolve(db, table)`` returns the stored (db, table) pair or raises :class:`SqlError`; it is
    also how unknown tables get Doris' message. Returns the DuckDB SQL and the referenced tables.
    """
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
