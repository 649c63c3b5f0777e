"""Flink CDC's table selector syntax: ``db.table`` regexes, where ``.`` splits database from table.

In Flink CDC's ``tables`` option an unescaped ``.`` separates the database pattern from the table
pattern and ``\\.`` stands for "any character" inside either of them (``db0.\\.*`` is every table
of ``db0``). Entries are separated by commas; a comma inside ``{}``, ``[]`` or ``()`` belongs to
the regex (``t_[0-9]{1,3}``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class SelectorError(ValueError):
    """A table pattern that cannot be used; the message says which and why."""


def split_top_level(text: str, sep: str) -> list[str]:
    """Split on ``sep`` except inside brackets or after a backslash."""
    parts, depth, current, escaped = [], 0, [], False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
            continue
        if ch == "\\":
            current.append(ch)
            escaped = True
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        if ch == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _split_db_table(pattern: str) -> tuple[str, str]:
    """Split at the first unescaped, top-level dot."""
    depth, escaped = 0, False
    for i, ch in enumerate(pattern):
        if escaped:
            escaped = False
            continue
        if ch == "\\":
            escaped = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(0, depth - 1)
        elif ch == "." and depth == 0:
            return pattern[:i], pattern[i + 1 :]
    raise SelectorError(f"table pattern '{pattern}' must be 'database.table' (escape '\\.' for any character)")


def _compile(part: str, whole: str) -> re.Pattern[str]:
    regex = part.replace("\\.", ".")
    try:
        return re.compile(regex)
    except re.error as exc:
        raise SelectorError(f"bad regex in table pattern '{whole}': {exc}") from None


@dataclass(frozen=True)
class TablePattern:
    """One ``db.table`` pattern, matched in full against both names."""

    text: str
    database: re.Pattern[str]
    table: re.Pattern[str]

    @classmethod
    def parse(cls, text: str) -> TablePattern:
        db_part, table_part = _split_db_table(text.strip())
        if not db_part or not table_part:
            raise SelectorError(f"table pattern '{text}' must be 'database.table'")
        return cls(text.strip(), _compile(db_part, text), _compile(table_part, text))

    def matches(self, database: str, table: str) -> bool:
        return bool(self.database.fullmatch(database) and self.table.fullmatch(table))


@dataclass(frozen=True)
class TableSelector:
    """``tables`` minus ``tables.exclude``."""

    include: tuple[TablePattern, ...]
    exclude: tuple[TablePattern, ...] = ()

    @classmethod
    def parse(cls, tables: str, exclude: str | None = None) -> TableSelector:
        include = tuple(TablePattern.parse(p) for p in split_top_level(tables, ","))
        if not include:
            raise SelectorError("'tables' selects no table pattern")
        excluded = tuple(TablePattern.parse(p) for p in split_top_level(exclude or "", ","))
        return cls(include, excluded)

    def matches(self, database: str, table: str) -> bool:
        if any(p.matches(database, table) for p in self.exclude):
            return False
        return any(p.matches(database, table) for p in self.include)


def parse_chunk_key_columns(text: str) -> list[tuple[TablePattern, str]]:
    """``db.tbl_[0-9]+:col1;db2.x_\\.*:col2;`` → ordered (pattern, column) pairs."""
    pairs = []
    for entry in split_top_level(text, ";"):
        pattern, sep, column = entry.rpartition(":")
        if not sep or not pattern.strip() or not column.strip():
            raise SelectorError(f"chunk key entry '{entry}' must be 'database.table:column'")
        pairs.append((TablePattern.parse(pattern), column.strip()))
    return pairs
