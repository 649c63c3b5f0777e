"""Extract from a ``mysql-test`` ``.test`` file the statements MariaDB 10.11 runs, as a corpus file.

Run by whoever refreshes the corpus (not by the tests): every candidate statement of the test is run,
in order, against a scratch MariaDB, and only those that succeed are written out, so the file
replays without an error. What is kept: ``CREATE TABLE``, ``ALTER TABLE``, ``RENAME TABLE``, the
row statements (``INSERT``, ``REPLACE``, ``UPDATE``, ``DELETE``, ``TRUNCATE``) and the ``SET``s
that change how later statements are read (``SET NAMES``, character sets, ``sql_mode``, time zone,
user variables). A ``DROP TABLE`` would leave nothing to capture, so each one becomes a ``RENAME
TABLE t TO t__N`` (a test's next ``CREATE TABLE t`` then makes a new table): every table a test
ever fills is kept, and the replay exercises renames too. The test language's own commands
(``let``, ``eval``, ``--error``...), temporary tables and statements with ``$`` variables are
dropped. The counts of what was kept and dropped go into the file's header.

    python -m tests.corpus.extract --socket S --source "MariaDB/server@<commit>" \
        --license GPL-2.0 --out tests/corpus/mysql_test/type_enum.sql type_enum.test
"""

from __future__ import annotations

import argparse
import collections
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from tests.corpus.sqlsplit import split_sql

log = logging.getLogger(__name__)

# The session a mysql-test file expects: mysql-test-run's latin1 client and a non-strict sql_mode
# (the tests this corpus takes from were written for MariaDB 10.1, whose default that was).
PREAMBLE = (b"SET NAMES latin1", b"SET SESSION sql_mode = ''")

_MYSQLTEST_COMMANDS = frozenset(
    ["let", "eval", "echo", "source", "connect", "connection", "disconnect", "if", "while", "end", "error", "exit", "die", "skip", "sleep", "real_sleep", "send", "reap", "query_vertical", "query_horizontal", "replace_result", "replace_column", "replace_regex", "sorted_result", "vertical_results", "horizontal_results", "inc", "dec", "copy_file", "remove_file", "remove_files_wildcard", "write_file", "append_file", "cat_file", "diff_files", "file_exists", "list_files", "list_files_write_file", "mkdir", "rmdir", "exec", "perl", "system", "chmod", "move_file", "lowercase_result", "result_format", "character_set", "send_eval", "query_get_value", "change_user", "ping", "send_quit", "shutdown_server", "wait_for_slave_to_stop", "start_timer", "end_timer", "save_master_pos", "sync_with_master", "sync_slave_with_master"])
_KEEP = re.compile(rb"^\s*(create\s+(or\s+replace\s+)?table|alter\s+(online\s+|ignore\s+)*table|rename\s+table|"
                   rb"insert|replace|update|delete|truncate|drop\s+table|set\s)", re.IGNORECASE)
_SET_SKIPPED = re.compile(rb"^\s*set\s+(global|password|role|default\s+role|transaction|@@global|"
                          rb"debug|session\s+debug|statement)", re.IGNORECASE)
_DROP = re.compile(rb"^\s*drop\s+table\s+(if\s+exists\s+)?(.*?)(\s+(cascade|restrict))?\s*$",
                   re.IGNORECASE | re.DOTALL)
_CREATE_OR_REPLACE = re.compile(rb"^\s*create\s+or\s+replace\s+table\s+(if\s+not\s+exists\s+)?(`[^`]+`|\w+)",
                                re.IGNORECASE)


@dataclass
class Extraction:
    """What one test gave: the statements kept (in order) and the count of each kind dropped."""

    kept: list[bytes] = field(default_factory=list)
    dropped: collections.Counter = field(default_factory=collections.Counter)
    tables_renamed: int = 0


def _names(listing: bytes) -> list[str]:
    out = []
    for raw in listing.split(b","):
        name = raw.strip().decode("utf-8", "strict")
        if name.startswith("`") and name.endswith("`"):
            name = name[1:-1].replace("``", "`")
        out.append(name)
    return out


def _quote(name: str) -> bytes:
    return ("`" + name.replace("`", "``") + "`").encode("utf-8")


def _existing(cur, db: str) -> set[str]:
    cur.execute("SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_type = 'BASE TABLE'",
                (db,))
    return {r[0] for r in cur.fetchall()}


def extract(data: bytes, conn, db: str, *, max_tables: int = 60) -> Extraction:
    """Run ``data``'s candidate statements in ``db`` (created empty) and keep those that succeed."""
    out = Extraction()
    generations: collections.Counter = collections.Counter()
    with conn.cursor() as cur:
        cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
        cur.execute(f"CREATE DATABASE `{db}` CHARACTER SET latin1 COLLATE latin1_swedish_ci")
        cur.execute(f"USE `{db}`")
        for s in PREAMBLE:
            cur.execute(s)
            out.kept.append(s)

        def retire(name: str) -> bool:
            """RENAME ``name`` to its next free ``name__N``; False if it does not exist."""
            if name not in _existing(cur, db):
                return False
            while True:
                generations[name] += 1
                new = f"{name}__{generations[name]}"
                if new not in _existing(cur, db) and len(new.encode()) <= 64:
                    break
            stmt = b"RENAME TABLE " + _quote(name) + b" TO " + _quote(new)
            cur.execute(stmt)
            out.kept.append(stmt)
            out.tables_renamed += 1
            return True

        for st in split_sql(data, mysqltest=True):
            sql = st.sql
            word = sql.split(None, 1)[0].lower().rstrip(b"(").decode("latin1")
            if word in _MYSQLTEST_COMMANDS or word.startswith(("disable_", "enable_")) or sql.startswith(b"}"):
                out.dropped["mysqltest command"] += 1
                continue
            if not _KEEP.match(sql) or _SET_SKIPPED.match(sql) or re.match(rb"^\s*create\s+temporary", sql, re.I):
                out.dropped["not kept (kind)"] += 1
                continue
            if b"$" in sql:
                out.dropped["mysqltest variable"] += 1
                continue
            if len(_existing(cur, db)) >= max_tables and re.match(rb"^\s*create", sql, re.I):
                out.dropped["over the table cap"] += 1
                break
            drop = _DROP.match(sql)
            try:
                if drop:
                    if not any([retire(n) for n in _names(drop.group(2))]):
                        out.dropped["drop of no table"] += 1
                    continue
                replace = _CREATE_OR_REPLACE.match(sql)
                if replace:
                    retire(_names(replace.group(2))[0])
                cur.execute(sql)
                while cur.nextset():
                    pass
                out.kept.append(sql)
            except (pymysql.err.MySQLError, UnicodeDecodeError) as exc:
                code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else type(exc).__name__
                out.dropped[f"failed on MariaDB 10.11 ({code})"] += 1
                with conn.cursor() as reset:  # a failed statement can leave an open transaction
                    reset.execute("ROLLBACK")
    return out


def render(ex: Extraction, *, test_path: str, source: str, license_: str) -> bytes:
    """The corpus file: a header naming the origin and the counts, then one statement a line-group."""
    dropped = ", ".join(f"{k}: {v}" for k, v in sorted(ex.dropped.items())) or "none"
    head = [
        f"-- Extracted from {test_path} ({source}); licence {license_}.",
        "-- Statements MariaDB 10.11 ran without an error, in the test's order, by tests/corpus/extract.py;",
        "-- each DROP TABLE became a RENAME TABLE to t__N (every table the test fills is kept).",
        f"-- kept: {len(ex.kept)} statements; tables renamed: {ex.tables_renamed}; dropped: {dropped}.",
        "-- The first two statements (SET NAMES latin1, sql_mode '') are mysql-test-run's session.",
        "DELIMITER ;;;;",
    ]
    return "\n".join(head).encode() + b"\n" + b"".join(s + b";;;;\n" for s in ex.kept)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", required=True)
    ap.add_argument("--source", required=True, help="repository@commit the test came from")
    ap.add_argument("--license", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--name", help="the test's path in its repository (for the header)")
    ap.add_argument("--max-tables", type=int, default=60)
    ap.add_argument("test", type=Path)
    args = ap.parse_args()
    conn = pymysql.connect(unix_socket=args.socket, user="root", autocommit=True, charset="latin1")
    db = "x_" + re.sub(r"\W", "_", args.out.stem)
    try:
        ex = extract(args.test.read_bytes(), conn, db, max_tables=args.max_tables)
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE `{db}`")
    finally:
        conn.close()
    args.out.write_bytes(render(ex, test_path=args.name or args.test.name, source=args.source,
                                license_=args.license))
    print(f"{args.out}: kept {len(ex.kept)}, renamed {ex.tables_renamed}, dropped {dict(ex.dropped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
