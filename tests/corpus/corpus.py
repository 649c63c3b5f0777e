"""The corpus's groups (which files make which database) and loading them into MariaDB.

A group is one MySQL database: a public sample database (its own files create and fill it) or one
``mysql-test`` extraction (tests/corpus/extract.py), which the loader replays into a database of
the group's name, made with mysql-test-run's latin1 default. Files are bytes: see
tests/corpus/sqlsplit.py for why they are never decoded.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from tests.corpus.sqlsplit import split_sql

log = logging.getLogger(__name__)

CORPUS_DIR = Path(__file__).resolve().parent
_CLIENT_COMMAND = re.compile(rb"^(source|\\\.)\s", re.IGNORECASE)


class GroupKind(StrEnum):
    SAMPLE = "sample"  # a sample database whose files create and use their own database
    MYSQL_TEST = "mysql-test"  # an extracted test, replayed into a database named for the group


@dataclass(frozen=True)
class Group:
    """One corpus database: ``files`` (relative to tests/corpus) loaded in order into ``db``."""

    db: str
    kind: GroupKind
    files: tuple[str, ...]


def _sample(db: str, *files: str) -> Group:
    return Group(db, GroupKind.SAMPLE, tuple(f"samples/{db}/{f}" for f in files))


SAMPLES = (
    _sample("sakila", "sakila-mv-schema.sql", "sakila-mv-data.sql"),
    _sample("world", "world.sql"),
    _sample("employees", "employees.sql", "load_departments.dump", "load_employees.dump", "load_dept_emp.dump",
            "load_dept_manager.dump", "load_titles.dump", "load_salaries.dump"),
)


def mysql_test_groups() -> tuple[Group, ...]:
    """One group per extracted test file (tests/corpus/mysql_test/NAME.sql → database ``mt_NAME``)."""
    return tuple(Group(f"mt_{p.stem}", GroupKind.MYSQL_TEST, (f"mysql_test/{p.name}",))
                 for p in sorted((CORPUS_DIR / "mysql_test").glob("*.sql")))


def all_groups() -> tuple[Group, ...]:
    return SAMPLES + mysql_test_groups()


def group(db: str) -> Group:
    """The group whose database is ``db``."""
    for g in all_groups():
        if g.db == db:
            return g
    raise KeyError(db)


def run_file(conn, path: Path) -> int:
    """Run every statement of ``path`` on ``conn`` (as the ``mysql`` client would); the count run."""
    count = 0
    with conn.cursor() as cur:
        for st in split_sql(path.read_bytes()):
            if _CLIENT_COMMAND.match(st.sql):  # the mysql client's own commands (employees.sql sources its dumps)
                continue
            try:
                cur.execute(st.sql)
                while cur.nextset():
                    pass
            except Exception as exc:
                raise RuntimeError(f"{path.name}:{st.line}: {exc}") from exc
            count += 1
        cur.execute("COMMIT")
        cur.execute("SET autocommit = 1")
    return count


def load_group(conn, g: Group, *, db: str | None = None, root: Path = CORPUS_DIR) -> None:
    """Load ``g`` into MariaDB; a mysql-test group into ``db`` (default: its own) from scratch.

    A sample group always goes to the database its files name (they ``CREATE`` and ``USE`` it).
    """
    with conn.cursor() as cur:  # the samples load children before parents (employees' dept_manager)
        cur.execute("SET SESSION foreign_key_checks = 0")
    if g.kind is GroupKind.MYSQL_TEST:
        target = db or g.db
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{target}`")
            cur.execute(f"CREATE DATABASE `{target}` CHARACTER SET latin1 COLLATE latin1_swedish_ci")
            cur.execute(f"USE `{target}`")
    for f in g.files:
        n = run_file(conn, root / f)
        log.info("loaded %s: %d statements", f, n)
    with conn.cursor() as cur:  # the next group starts from the server's defaults
        cur.execute("SET NAMES utf8mb4")
        cur.execute("SET SESSION sql_mode = DEFAULT")
        cur.execute("SET SESSION foreign_key_checks = 1")
