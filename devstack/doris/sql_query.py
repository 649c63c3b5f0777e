"""Doris queries on DuckDB: a SELECT (or WITH) parsed by sqlglot's Doris dialect, its table references
resolved against the catalog (``information_schema`` redirected to the stand-in's own tables) and
re-emitted as DuckDB SQL.

sqlglot's parse and emit cost ~5 ms of CPU even for ``SELECT 1``, and pollers repeat the same
statements, so :func:`translate_query` keeps the last :data:`CACHE_SIZE` translations by their exact
text and current database; a hit still asks ``resolve`` about every table the statement names, in the
same order, so an unknown table fails as before and a changed answer translates afresh.

Statements that differ only in the names they quote repeat too — a parity check's ``SELECT n AS n,
COUNT(*) ..., SUM(CRC32(...)) FROM `t` UNION ALL ...`` of 50 tables (~85 ms of sqlglot) names other
tables and columns of the same shape — so a statement is also translated by *shape*
(:func:`_by_shape`): each simple backquoted name replaced by a placeholder, a top-level ``UNION ALL``
split into its SELECTs, each SELECT's shape translated once and its translation kept, with the names
put back and its tables asked of ``resolve`` (branch by branch, left to right). A shape's first
translation is checked against the plain translation of the text it came from, and kept only if
they agree; a statement this cannot take (a CTE, ``information_schema``, a set operation other than
``UNION ALL``, ``ORDER BY``/``LIMIT`` after one) is translated whole.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any

import sqlglot
from sqlglot import exp

from .sql_lexer import SqlError
from .types import quote_ident

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

    shaped = _by_shape(sql, current_db, recorded)
    if shaped is None:
        calls.clear()  # (a shape given up after some of its tables were asked)
        shaped = _translate(sql, current_db, recorded)
    out, refs = shaped
    with _cache_lock:
        _cache[key] = (out, list(refs), calls)
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return out, refs


def _translate(sql: str, current_db: str, resolve: Any, alias: bool = True) -> tuple[str, list[tuple[str, str]]]:
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
    if alias and isinstance(tree, exp.Select):
        # Doris names an unaliased expression column by its text, e.g. "count(*)".
        for i, e in enumerate(tree.expressions):
            if not isinstance(e, (exp.Column, exp.Alias, exp.Star)):
                tree.expressions[i] = exp.alias_(e, e.sql(dialect="doris", normalize_functions="lower"), quoted=True)
    out = tree.sql(dialect="duckdb")
    return out, refs


# What a query the stand-in has not seen costs sqlglot the first time in a process beyond its
# translation (~30 ms of CPU: its Doris and DuckDB dialects' parser and generator set up on first
# use), paid at start-up by warm_up rather than by the first query of a run.
_WARM_UP = ("SELECT `n`, COUNT(*) AS c, COALESCE(SUM(CAST(CRC32(CONCAT_WS('|', CAST(`id` AS STRING), "
            "COALESCE(CONCAT('v', `v`), 'n'), DATE_FORMAT(`ts`, '%Y-%m-%d'))) AS DECIMAL(38, 0))), 0) FROM `d`.`t` "
            "WHERE `id` >= 1 AND `k` IS NULL GROUP BY `n` ORDER BY `n` LIMIT 10 OFFSET 0")


def warm_up() -> threading.Thread:
    """Translate a statement on a thread of its own (nothing is cached: see :data:`_WARM_UP`)."""
    def translate() -> None:
        _translate(_WARM_UP, "d", lambda db, name: (db, name))

    thread = threading.Thread(target=translate, name="sqlglot-warm-up", daemon=True)
    thread.start()
    return thread


# ---- translation by shape ----------------------------------------------------------------------
SHAPE_CACHE_SIZE = 512
_MARK = "__standin_"  # a statement holding this text (or _NUMBER) is never translated by shape
_NUMBER = "8080808"  # a number's placeholder: this and four digits
# What the shape split reads of a statement: strings (skipped whole), comments, backquoted names
# (group 1: the name), integers (group 3), parentheses, and the words that decide whether it can be split.
_LEX = re.compile(r"""'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*"|`((?:[^`]|``)*)`|(--|#|/\*)"""
                  r"""|(?<![\w.])([0-9]{1,18})(?![\w.])"""
                  r"""|\(|\)|\bUNION\s+ALL\b|\b(?:UNION|INTERSECT|EXCEPT|MINUS|ORDER|LIMIT|INTO|WITH|FOR)\b""",
                  re.I)
_SIMPLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLACEHOLDER = re.compile(r'"__standin_r(\d+)_(db|t)__"|__standin_m(\d+)__|8080808(\d{4})')
_PLACEHOLDER_TEXT = re.compile(r"`__standin_m(\d+)__`|8080808(\d{4})")
# (SELECT shape, current db, aliased) -> (its translation, its resolve calls with placeholders)
_shapes: OrderedDict[tuple[str, str, bool], tuple[str, list[tuple[str, str]]]] = OrderedDict()


def _branches(sql: str) -> list[tuple[str, list[str], list[str]]] | None:
    """The SELECTs of a top-level UNION ALL chain (one: no UNION), each as its shape — every simple
    backquoted name replaced by ``__standin_m<k>__``, k counting that SELECT's distinct names, and
    every integer outside parentheses (not a type's length or precision) by ``8080808<k>`` — with its
    names and integers; None when the statement is not one this splits."""
    if _MARK in sql or _NUMBER in sql or INFO_SCHEMA in sql.lower():
        return None
    depth = 0
    tail = False  # ORDER BY, LIMIT, INTO or FOR at the top level (of a whole UNION, if there is one)
    out: list[tuple[str, list[str], list[str]]] = []
    shape: list[str] = []
    names: list[str] = []
    numbers: list[str] = []
    at = 0
    for m in _LEX.finditer(sql):
        text = m.group(0)
        if m.group(2) is not None or text.upper() == "WITH":
            return None  # a comment (the split would not see through it); a CTE
        if text == "(":
            depth += 1
        elif text == ")":
            depth -= 1
        elif m.group(1) is not None:
            if _SIMPLE_NAME.match(m.group(1)):
                if m.group(1) not in names:
                    names.append(m.group(1))
                shape.append(sql[at:m.start()] + f"`{_MARK}m{names.index(m.group(1))}__`")
                at = m.end()
        elif m.group(3) is not None:
            if depth == 0 and len(numbers) < 10_000:
                shape.append(sql[at:m.start()] + f"{_NUMBER}{len(numbers):04d}")
                numbers.append(text)
                at = m.end()
        elif text[0] in "'\"":
            continue
        elif depth == 0 and text[:5].upper() == "UNION" and text[5:].strip().upper() == "ALL":
            shape.append(sql[at:m.start()])
            out.append(("".join(shape).strip(), names, numbers))
            shape, names, numbers, at = [], [], [], m.end()
        elif depth == 0:
            if text.upper() in ("ORDER", "LIMIT", "INTO", "FOR"):
                tail = True
            else:
                return None  # UNION (DISTINCT), INTERSECT, EXCEPT, MINUS
    shape.append(sql[at:])
    out.append(("".join(shape).strip(), names, numbers))
    if depth or (len(out) > 1 and (tail or any(not b.upper().startswith("SELECT") for b, _, _ in out))):
        return None
    return out


def _by_shape(sql: str, current_db: str, resolve: Any) -> tuple[str, list[tuple[str, str]]] | None:
    """``sql`` translated SELECT by SELECT from the translations of their shapes (see the module doc);
    None when it cannot be."""
    if current_db.lower() == INFO_SCHEMA:
        return None  # its tables' names are changed (upper-cased), not asked
    branches = _branches(sql)
    if branches is None or (len(branches) == 1 and not branches[0][1] and not branches[0][2]):
        return None
    alias = len(branches) == 1  # a UNION's SELECTs are not aliased (_translate: only a SELECT is)
    outs: list[str] = []
    refs: list[tuple[str, str]] = []
    for shape, names, numbers in branches:
        done = _branch(shape, names, numbers, current_db, resolve, alias)
        if done is None:
            return None
        outs.append(done[0])
        refs += done[1]
    return " UNION ALL ".join(outs), refs


def _branch(shape: str, names: list[str], numbers: list[str], current_db: str, resolve: Any,
            alias: bool) -> tuple[str, list[tuple[str, str]]] | None:
    """One SELECT of :func:`_by_shape` from its shape's translation (made and checked if new)."""
    key = (shape, current_db, alias)
    with _cache_lock:
        entry = _shapes.get(key)
        if entry is not None:
            _shapes.move_to_end(key)
    first = entry is None
    if entry is None:
        calls: list[tuple[str, str]] = []

        def placeholder(db: str, name: str) -> tuple[str, str]:
            calls.append((db, name))
            return f"{_MARK}r{len(calls) - 1}_db__", f"{_MARK}r{len(calls) - 1}_t__"

        try:
            entry = (_translate(shape, current_db, placeholder, alias)[0], calls)
        except Exception:  # noqa: BLE001 - the whole statement's translation says what is wrong
            return None
    template, calls = entry

    def real(text: str) -> str:
        m = _PLACEHOLDER_TEXT.fullmatch(f"`{text}`")
        return names[int(m.group(1))] if m and m.group(1) else text

    asked = [(real(db), real(name)) for db, name in calls]
    if any(db.lower() == INFO_SCHEMA or _MARK in db + name for db, name in asked):
        return None
    answers = [resolve(db, name) for db, name in asked]

    def put_back(m: re.Match[str]) -> str:
        if m.group(3) is not None:
            return names[int(m.group(3))]
        if m.group(4) is not None:
            return numbers[int(m.group(4))]
        sdb, stbl = answers[int(m.group(1))]
        return quote_ident(sdb if m.group(2) == "db" else stbl)

    out = _PLACEHOLDER.sub(put_back, template)
    if first:  # kept only if it is what the SELECT's own text translates to, asking the same
        seen: list[tuple[str, str]] = []

        def again(db: str, name: str) -> tuple[str, str]:
            seen.append((db, name))
            return answers[len(seen) - 1] if len(seen) <= len(answers) else (db, name)

        text = _PLACEHOLDER_TEXT.sub(lambda m: f"`{names[int(m.group(1))]}`" if m.group(1) else numbers[int(m.group(2))],
                                     shape)
        if _translate(text, current_db, again, alias)[0] != out or seen != asked:
            return None
        with _cache_lock:
            _shapes[key] = entry
            while len(_shapes) > SHAPE_CACHE_SIZE:
                _shapes.popitem(last=False)
    return out, answers
