"""Which names Doris can take: tables, databases and columns (Doris's ``FeNameFormat`` rules).

Doris is stricter than MySQL. With ``enable_unicode_name_support`` on (needed for any non-ASCII
name), a database or table name is a letter (any script) followed by letters, digits, ``-`` and
``_`` — a table name at most ``table_name_length_limit`` (default 64) characters, a database name
at most 64; a column name is 1-256 characters of letters, digits, whitespace and
``. _ + - / ? @ # $ % ^ & * " , :``. So a quote or a backtick in a table name, or a single quote
or a backtick in a column name, cannot reach Doris under any setting; a table named ``_x`` or
``2024_orders`` cannot either. Reserved words are fine: every statement Tidemark sends quotes its
identifiers.

Tidemark checks the names of every Doris table it will create before anything is loaded (the
first planning round, ``tidemark validate --connect``, and each table or column a schema change
brings), and refuses a name Doris would refuse, naming the table or column and the way out: a
``route:`` rule that gives the table another Doris name, or a ``transform:`` projection that
renames the column (docs/doris.md, "Names").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from cdc_core.model.schema import TableId

MAX_TABLE_NAME = 64  # FE config table_name_length_limit's default
MAX_DATABASE_NAME = 64
MAX_COLUMN_NAME = 256

# Unicode mode: \p{L} is "a letter in any script"; Python's \w minus digits and '_' is close, so
# spell it out: a character that is alphabetic (str.isalpha) counts as a letter.
_TABLE_CHARS = re.compile(r"[A-Za-z0-9\-_]")
_COLUMN_CHARS = re.compile(r"[.A-Za-z0-9_+\-/?@#$%^&*\"\s,:]")


class DorisNameError(ValueError):
    """A table or column name Doris would refuse; the message names it and the fix."""


def _letter(ch: str) -> bool:
    return ch.isalpha()


def table_name_problem(name: str, *, limit: int = MAX_TABLE_NAME, what: str = "table") -> str | None:
    """Why Doris would refuse ``name`` as a table (or database) name, or None."""
    if not name:
        return f"a {what} name cannot be empty"
    if len(name) > limit:
        return f"{what} name {name!r} is {len(name)} characters; Doris takes at most {limit}"
    if not _letter(name[0]):
        return f"{what} name {name!r} must start with a letter in Doris (it starts with {name[0]!r})"
    bad = sorted({ch for ch in name if not (_TABLE_CHARS.fullmatch(ch) or _letter(ch))})
    if bad:
        return (f"{what} name {name!r} has character(s) {' '.join(repr(c) for c in bad)} Doris does not allow "
                f"(letters, digits, '-' and '_' only)")
    return None


def column_name_problem(name: str) -> str | None:
    """Why Doris would refuse ``name`` as a column name, or None."""
    if not name or len(name) > MAX_COLUMN_NAME:
        return f"column name {name!r} must have 1 to {MAX_COLUMN_NAME} characters in Doris"
    bad = sorted({ch for ch in name if not (_COLUMN_CHARS.fullmatch(ch) or _letter(ch))})
    if bad:
        return (f"column name {name!r} has character(s) {' '.join(repr(c) for c in bad)} Doris does not allow "
                "in a column name")
    return None


def name_problems(source: TableId, target: TableId, columns: Iterable[str] = ()) -> list[str]:
    """Each name of ``source``'s Doris table ``target`` Doris would refuse, with the fix."""
    problems = []
    db = table_name_problem(target.database, limit=MAX_DATABASE_NAME, what="database")
    if db:
        problems.append(f"{source} -> Doris {target}: {db}; route the table to another database with a route: "
                        f"rule (sink-table: <database>.{target.table})")
    table = table_name_problem(target.table)
    if table:
        problems.append(f"{source} -> Doris {target}: {table}; give it a Doris name with a route: rule "
                        f"(source-table: {source}, sink-table: {target.database}.<new_name>)")
    for column in columns:
        problem = column_name_problem(column)
        if problem:
            quoted = "`" + column.replace("`", "``") + "`"
            problems.append(f"{source} -> Doris {target}: {problem}; rename the column in MySQL, or name the "
                            f"table's columns with a transform: rule whose projection renames it "
                            f"(projection: <the other columns>, {quoted} AS <new_name>)")
    return problems


def check_names(source: TableId, target: TableId, columns: Iterable[str] = ()) -> None:
    """Raise :class:`DorisNameError` naming every name of ``target`` Doris would refuse."""
    problems = name_problems(source, target, columns)
    if problems:
        raise DorisNameError("Doris cannot take these names: " + " | ".join(problems)
                             + f" (or leave {source} out of the pipeline: source tables.exclude)")
