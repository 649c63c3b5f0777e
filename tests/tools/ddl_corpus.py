"""Measure the DDL parser against a public DDL corpus, judged by a real MariaDB.

The corpus is Debezium's MySQL/MariaDB DDL parser tests, read from a local clone of its public
repository (nothing of it is copied into this repository): the string literals of the parser test
classes (one session per ``@Test`` method), the ``.ddl`` files they read, and the DDL example files of
its MySQL/MariaDB grammar (one session per file).

Each session runs its statements in order, twice: through our parser (``MySqlDdlParser.parse_captured``
against our own schema state, every table captured, events applied with the schema history's
``apply_schema_change``, exactly as the binlog reader does), and on a scratch MariaDB (a private
server started by devstack's launcher). After every statement MariaDB accepts, every table's
columns (name, order, ``COLUMN_TYPE``, ``DATA_TYPE``, nullability, charset), primary key and the
set of tables are read back from ``information_schema`` and compared with our state. Each
statement is then:

* ``parsed``   — events, and our state equals MariaDB's;
* ``no-op``    — no events, and our state equals MariaDB's (GRANT, CREATE USER, indexes, routines...);
* ``rejected`` — a :class:`DdlParseError` (the clear refusal: the stream would stop, naming the DDL);
* ``crash``    — any other exception out of the parser;
* ``wrong``    — our state differs from MariaDB's after it.

After a rejection, crash or wrong result, our state is reset from MariaDB so that one miss is
counted once. Statements MariaDB refuses are not judged (they never reach a binlog), nor are
statements a ROW binlog never carries as a query (DML, SET, SELECT, SHOW...); both are counted
apart. Default values and comments that differ are listed separately (``--show defaults``).

    .venv/bin/python tests/tools/ddl_corpus.py /work/.mirror/debezium+debezium/repo [--show wrong,crash]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
import tempfile
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import pymysql  # noqa: E402

from cdc_core.model.schema import Column, TableId, TableSchema  # noqa: E402
from cdc_core.model.schema_changes import apply_schema_change  # noqa: E402
from cdc_core.mysql.ddl import DdlParseError, MySqlDdlParser  # noqa: E402
from cdc_core.mysql.discovery import SYSTEM_DATABASES  # noqa: E402
from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.procs import free_port  # noqa: E402

JAVA_SOURCES = (
    "debezium-connector-binlog/src/test/java/io/debezium/connector/binlog/BinlogAntlrDdlParserTest.java",
    "debezium-connector-mysql/src/test/java/io/debezium/connector/mysql/MySqlAntlrDdlParserTest.java",
    "debezium-connector-mariadb/src/test/java/io/debezium/connector/mariadb/MariaDbAntlrDdlParserTest.java",
    "debezium-connector-mariadb/src/test/java/io/debezium/connector/mariadb/MariaDbOnlyAntlrDdlParserTest.java",
)
DDL_DIR = "debezium-connector-binlog/src/test/resources/ddl/"
# The grammar's own example files (one session each); bitrix_queries_cut.sql is a real application's schema.
GRAMMAR_EXAMPLES = tuple(f"debezium-ddl-parser/src/test/resources/{path}.sql" for path in (
    "mariadb/examples/fast/ddl_alter", "mariadb/examples/fast/ddl_create", "mariadb/examples/fast/ddl_drop",
    "mariadb/examples/fast/grant", "mariadb/examples/fast/ext_tests", "mariadb/examples/fast/smoke_tests",
    "mariadb/examples/fast/mysql_spec_comment", "mariadb/examples/function_call_default_without_parentheses",
    "mysql/examples/ddl_alter", "mysql/examples/ddl_create", "mysql/examples/ddl_drop", "mysql/examples/grant",
    "mysql/examples/bitrix_queries_cut",
))
DEFAULT_DB = "corpus_default"

# The first words of a SQL statement (to tell a SQL literal from any other Java string).
SQL_HEADS = frozenset("""\
ALTER CREATE DROP RENAME TRUNCATE GRANT REVOKE USE SET INSERT UPDATE DELETE REPLACE SELECT SHOW
ANALYZE OPTIMIZE REPAIR CHECK FLUSH LOCK UNLOCK START COMMIT ROLLBACK BEGIN CALL DO DECLARE PREPARE
EXECUTE DEALLOCATE XA SAVEPOINT RELEASE LOAD HANDLER INSTALL UNINSTALL KILL RESET PURGE CHANGE STOP
CACHE DESCRIBE DESC EXPLAIN HELP WITH BACKUP RESTORE OPTIMIZE""".split())  # noqa: SIM905 - a word list
# Statements a ROW binlog never carries as a query event, or that would disturb the scratch server.
NOT_BINLOG_DDL = frozenset("""\
USE SET INSERT UPDATE DELETE REPLACE SELECT SHOW FLUSH LOCK UNLOCK START COMMIT ROLLBACK BEGIN CALL
DO DECLARE PREPARE EXECUTE DEALLOCATE XA SAVEPOINT RELEASE LOAD HANDLER KILL RESET PURGE CHANGE STOP
CACHE DESCRIBE DESC EXPLAIN HELP WITH BACKUP RESTORE CHECK""".split())  # noqa: SIM905 - a word list
# Words that start a statement where one literal ends and the next begins without a separator.
_STATEMENT_STARTS = frozenset({"CREATE", "ALTER", "DROP", "RENAME", "TRUNCATE", "GRANT", "INSERT", "USE"})
# The kinds of statement the parser once got wrong, found by their text, for a per-kind breakdown.
KINDS = {
    "column move (FIRST/AFTER)": r"^\s*ALTER\b.*\b(FIRST|AFTER)\b",
    "RENAME/CHANGE/MODIFY column": r"^\s*ALTER\b.*\b(RENAME\s+COLUMN|CHANGE|MODIFY)\b",
    "CONVERT TO CHARACTER SET": r"\bCONVERT\s+TO\s+(CHARACTER\s+SET|CHARSET)\b",
    "table charset": r"^\s*(ALTER|CREATE)\s+TABLE\b.*\)?\s*(DEFAULT\s+)?(CHARSET|CHARACTER\s+SET|COLLATE)\s*=?\s*\w+\s*$",
    "ENUM/SET": r"\b(ENUM|SET)\s*\(",
    "FLOAT(p)": r"\bFLOAT\s*\(",
    "primary key": r"\bPRIMARY\s+KEY\b",
    "partition": r"\bPARTITION\b",
    "CREATE TABLE ... LIKE": r"^\s*CREATE\s+(TEMPORARY\s+)?TABLE\b[^(]*\bLIKE\b",
    "RENAME TABLE": r"^\s*RENAME\s+TABLES?\b",
}
JUDGED = ("parsed", "no-op", "rejected", "crash", "wrong")


# -- extraction ----------------------------------------------------------------------------------

_JAVA_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|System\.lineSeparator\(\)|\+|//[^\n]*|/\*.*?\*/|\s+|.',
                         re.DOTALL)


def _java_unescape(lit: str) -> str:
    body = lit[1:-1]
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", lambda m: (
        chr(int(m.group(1)[1:], 16)) if m.group(1).startswith("u") else
        {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "0": "\0"}.get(m.group(1), m.group(1))), body)


def java_chains(source: str) -> list[str]:
    """Concatenations of string literals (``"a" + System.lineSeparator() + "b"``) with no other terms."""
    toks = [t for t in _JAVA_TOKEN.findall(source) if not t.isspace() and not t.startswith(("//", "/*"))]
    chains: list[str] = []
    i = 0
    while i < len(toks):
        if not toks[i].startswith('"'):
            i += 1
            continue
        parts, clean = [], i == 0 or toks[i - 1] != "+"
        j = i
        while True:
            tok = toks[j]
            piece = "\n" if tok.startswith("System.") else _java_unescape(tok)
            if parts and parts[-1] and parts[-1][-1] not in " \t\r\n,(" and _head(piece) in _STATEMENT_STARTS:
                parts.append(";")  # "CREATE TABLE a (...)" + "CREATE TABLE b (...)": two statements
            parts.append(piece)
            if j + 2 < len(toks) + 1 and j + 1 < len(toks) and toks[j + 1] == "+":
                if j + 2 < len(toks) and (toks[j + 2].startswith('"') or toks[j + 2].startswith("System.")):
                    j += 2
                    continue
                clean = False
            break
        if clean:
            chains.append("".join(parts))
        i = j + 1
    return chains


def split_statements(text: str) -> list[str]:
    """``;``-separated statements (quotes, comments and ``DELIMITER`` lines respected)."""
    out: list[str] = []
    delim = ";"
    buf: list[str] = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        if at_line_start:
            m = re.match(r"[ \t]*DELIMITER[ \t]+(\S+)[ \t]*(\n|$)", text[i:], re.IGNORECASE)
            if m:
                _flush(buf, out)
                delim = m.group(1)
                i += m.end()
                continue
        c = text[i]
        at_line_start = c == "\n"
        if c in "'\"`":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" and c != "`" else 1
            buf.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("--", i) and (i + 2 >= n or text[i + 2] in " \t\n") or c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i) and not text.startswith("/*!", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            buf.append(" ")
        elif text.startswith(delim, i) and _block_depth("".join(buf)) <= 0:
            _flush(buf, out)
            i += len(delim)
        else:
            buf.append(c)
            i += 1
    _flush(buf, out)
    return out


_ROUTINE = re.compile(r"\s*CREATE\b[^(;]*?\b(PROCEDURE|FUNCTION|TRIGGER|EVENT)\b", re.IGNORECASE | re.DOTALL)


def _block_depth(statement: str) -> int:
    """Open ``BEGIN``/``CASE`` blocks of a routine's body (its ``;`` do not end the statement)."""
    if not _ROUTINE.match(statement):
        return 0
    words = re.findall(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`[^`]*`|\w+", statement)
    depth = 0
    for k, w in enumerate(words):
        up = w.upper()
        if up in ("BEGIN", "CASE") and not (k > 0 and words[k - 1].upper() == "END"):
            depth += 1
        elif up == "END" and not (k + 1 < len(words) and words[k + 1].upper() in ("IF", "LOOP", "WHILE", "REPEAT")):
            depth -= 1
    return depth


def _flush(buf: list[str], out: list[str]) -> None:
    s = "".join(buf).strip()
    buf.clear()
    if s:
        out.append(s)


def _head(statement: str) -> str:
    m = re.match(r"\s*(?:/\*!\d*\s*)?([A-Za-z_]+)", statement)
    return m.group(1).upper() if m else ""


@dataclass
class Session:
    """Statements that build on each other (one test method, one file)."""

    origin: str
    statements: list[str] = field(default_factory=list)


def extract(mirror: Path) -> list[Session]:
    def show(path: str) -> str:
        return subprocess.run(["git", "--git-dir", str(mirror), "show", f"HEAD:{path}"], check=True,
                              capture_output=True).stdout.decode("utf-8", "replace")

    sessions: list[Session] = []
    for path in JAVA_SOURCES:
        source = show(path)
        for k, method in enumerate(re.split(r"@Test\b", source)[1:], 1):
            name = re.search(r"void\s+(\w+)\s*\(", method)
            session = Session(f"{Path(path).name}#{name.group(1) if name else k}")
            for chain in java_chains(method):
                if _head(chain) in SQL_HEADS and re.search(r"\s", chain.strip()):
                    session.statements.extend(split_statements(chain))
            if session.statements:
                sessions.append(session)
    listing = subprocess.run(["git", "--git-dir", str(mirror), "ls-tree", "--name-only", "HEAD", DDL_DIR],
                             check=True, capture_output=True, text=True).stdout.split()
    for path in sorted(p for p in listing if p.endswith(".ddl")):
        sessions.append(Session(Path(path).name, split_statements(show(path))))
    for path in GRAMMAR_EXAMPLES:
        sessions.append(Session(path.split("resources/")[1], split_statements(show(path))))
    return sessions


# -- MariaDB's view --------------------------------------------------------------------------------

def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def mariadb_schemas(conn: Any) -> dict[TableId, TableSchema]:
    """Every base table outside the system databases, read in bulk as discovery reads one table."""
    system = tuple(SYSTEM_DATABASES)
    marks = ", ".join(["%s"] * len(system))
    with conn.cursor() as cur:
        cur.execute(f"SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE TABLE_TYPE = 'BASE TABLE' "
                    f"AND TABLE_SCHEMA NOT IN ({marks})", system)
        tables = [TableId(_text(d), _text(t)) for d, t in cur.fetchall()]
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, COLUMN_DEFAULT, "
                    "COLUMN_COMMENT, CHARACTER_SET_NAME, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, "
                    f"DATETIME_PRECISION FROM information_schema.COLUMNS WHERE TABLE_SCHEMA NOT IN ({marks}) "
                    "ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION", system)
        cols: dict[TableId, list[Column]] = collections.defaultdict(list)
        for d, t, name, ctype, dtype, nullable, default, comment, cs, clen, prec, scale, dtp in cur.fetchall():
            cols[TableId(_text(d), _text(t))].append(Column(
                _text(name), _text(ctype), _text(dtype).lower(), _text(nullable) == "YES",
                None if default is None else _text(default), _text(comment or ""),
                None if cs is None else _text(cs), None if clen is None else int(clen),
                None if prec is None else int(prec), None if scale is None else int(scale),
                None if dtp is None else int(dtp)))
        cur.execute("SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME FROM information_schema.STATISTICS "
                    f"WHERE INDEX_NAME = 'PRIMARY' AND TABLE_SCHEMA NOT IN ({marks}) "
                    "ORDER BY TABLE_SCHEMA, TABLE_NAME, SEQ_IN_INDEX", system)
        keys: dict[TableId, list[str]] = collections.defaultdict(list)
        for d, t, c in cur.fetchall():
            keys[TableId(_text(d), _text(t))].append(_text(c))
        cur.execute("SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS "
                    f"WHERE CONSTRAINT_SCHEMA NOT IN ({marks})", system)
        json_cols: set[tuple[TableId, str]] = set()
        for d, t, clause in cur.fetchall():
            m = re.fullmatch(r"\s*json_valid\(`((?:[^`]|``)+)`\)\s*", _text(clause), re.IGNORECASE)
            if m:
                json_cols.add((TableId(_text(d), _text(t)), m.group(1).replace("``", "`")))
    out = {}
    for t in tables:
        columns = tuple(replace(c, column_type="json", data_type="json")
                        if (t, c.name) in json_cols and c.data_type == "longtext" else c for c in cols[t])
        out[t] = TableSchema(t, columns, tuple(keys[t]))
    return out


def db_charsets(conn: Any) -> dict[str, str]:
    with conn.cursor() as cur:
        cur.execute("SELECT SCHEMA_NAME, DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA")
        return {_text(d).lower(): _text(c) for d, c in cur.fetchall()}


# -- comparison -------------------------------------------------------------------------------------

def differences(ours: dict[TableId, TableSchema], theirs: dict[TableId, TableSchema], charsets: dict[str, str]
                ) -> tuple[list[str], list[str]]:
    """(schema differences, default/comment differences) between our state and MariaDB's."""
    ours_ci = {(t.database.lower(), t.table.lower()): s for t, s in ours.items()}
    theirs_ci = {(t.database.lower(), t.table.lower()): s for t, s in theirs.items()}
    diffs: list[str] = []
    minor: list[str] = []
    for key in sorted(set(ours_ci) | set(theirs_ci)):
        a, b = ours_ci.get(key), theirs_ci.get(key)
        name = ".".join(key)
        if a is None or b is None:
            diffs.append(f"{name}: {'missing in ours' if a is None else 'absent in MariaDB'}")
            continue
        if [c.name.lower() for c in a.columns] != [c.name.lower() for c in b.columns]:
            diffs.append(f"{name}: columns {[c.name for c in a.columns]} != MariaDB {[c.name for c in b.columns]}")
            continue
        if [c.lower() for c in a.primary_key] != [c.lower() for c in b.primary_key]:
            diffs.append(f"{name}: primary key {list(a.primary_key)} != MariaDB {list(b.primary_key)}")
        for ca, cb in zip(a.columns, b.columns, strict=True):
            for attr in ("column_type", "data_type", "nullable", "charset"):
                va, vb = getattr(ca, attr), getattr(cb, attr)
                if attr == "column_type":
                    va, vb = va.lower(), vb.lower()
                if attr == "charset" and va is None and vb is not None:
                    va = charsets.get(key[0]) if cb.data_type in _STRING_TYPES else None
                if va != vb:
                    diffs.append(f"{name}.{ca.name}: {attr} {va!r} != MariaDB {vb!r}")
            for attr in ("default", "comment"):
                va, vb = getattr(ca, attr), getattr(cb, attr)
                if attr == "default" and vb == "NULL":
                    vb = None  # MariaDB's COLUMN_DEFAULT for "no default" on a nullable column
                if va != vb:
                    minor.append(f"{name}.{ca.name}: {attr} {va!r} != MariaDB {vb!r}")
    return diffs, minor


_STRING_TYPES = frozenset({"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"})


# -- the run -------------------------------------------------------------------------------------------

@dataclass
class Outcome:
    origin: str
    statement: str
    verdict: str
    detail: str = ""


def run(sessions: list[Session], conn: Any) -> tuple[list[Outcome], list[str]]:
    outcomes: list[Outcome] = []
    minor_all: list[str] = []
    for session in sessions:
        _reset_server(conn)
        parser = MySqlDdlParser(mariadb=True)
        default_db = DEFAULT_DB
        ours: dict[TableId, TableSchema] = {}
        for statement in session.statements:
            head = _head(statement)
            try:
                with conn.cursor() as cur:
                    if head not in ("KILL", "SHUTDOWN"):
                        cur.execute(statement)
                    accepted, error = True, ""
                    if head == "USE":
                        cur.execute("SELECT DATABASE()")
                        default_db = _text(cur.fetchone()[0] or default_db)
            except pymysql.MySQLError as exc:
                accepted, error = False, str(exc.args[-1])[:120]
            set_statement = re.match(r"\s*SET\s+STATEMENT\b", statement, re.IGNORECASE)  # SET STATEMENT .. FOR ddl
            if (head in NOT_BINLOG_DDL and not set_statement) or head in ("KILL", "SHUTDOWN"):
                outcomes.append(Outcome(session.origin, statement, "skipped: not a binlog DDL"))
                continue
            try:
                events = parser.parse_captured(statement, default_db, _captured, lambda t, ours=ours: _lookup(ours, t))
                verdict, detail = ("parsed" if events else "no-op"), ""
            except DdlParseError as exc:
                events, verdict, detail = [], "rejected", str(exc).splitlines()[0][:200]
            except Exception as exc:  # noqa: BLE001 - a crash is what we measure
                events, verdict, detail = [], "crash", f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
                detail += " @ " + traceback.extract_tb(exc.__traceback__)[-1].name
            if not accepted:
                outcomes.append(Outcome(session.origin, statement,
                                        "crash" if verdict == "crash" else "skipped: MariaDB refuses it",
                                        detail or error))
                continue
            if verdict in ("parsed", "no-op"):
                try:
                    for e in events:
                        current = _lookup(ours, e.table_id)
                        for t, s in apply_schema_change(current, e, strict=True).items():
                            _store(ours, t, s)
                except Exception as exc:  # noqa: BLE001 - events that do not fit our own state
                    verdict, detail = "wrong", f"events do not apply: {type(exc).__name__}: {exc}"[:200]
            theirs = mariadb_schemas(conn)
            if verdict in ("parsed", "no-op"):
                diffs, minor = differences(ours, theirs, db_charsets(conn))
                minor_all.extend(f"{session.origin}: {m}" for m in minor
                                 if f"{session.origin}: {m}" not in minor_all)
                if diffs:
                    verdict, detail = "wrong", "; ".join(diffs)[:400]
            outcomes.append(Outcome(session.origin, statement, verdict, detail))
            if verdict not in ("parsed", "no-op"):
                ours = dict(theirs)  # count one miss once: go on from MariaDB's truth
    return outcomes, minor_all


def _captured(t: TableId) -> bool:
    return t.database.lower() not in SYSTEM_DATABASES


def _lookup(ours: dict[TableId, TableSchema], t: TableId) -> TableSchema | None:
    if t in ours:
        return ours[t]
    for k, v in ours.items():
        if k.database.lower() == t.database.lower() and k.table.lower() == t.table.lower():
            return v
    return None


def _store(ours: dict[TableId, TableSchema], t: TableId, s: TableSchema | None) -> None:
    for k in [k for k in ours if k.database.lower() == t.database.lower() and k.table.lower() == t.table.lower()]:
        del ours[k]
    if s is not None:
        ours[t] = s


def _reset_server(conn: Any) -> None:
    with conn.cursor() as cur:
        cur.execute("SELECT SCHEMA_NAME FROM information_schema.SCHEMATA")
        for (db,) in cur.fetchall():
            if _text(db).lower() not in SYSTEM_DATABASES:
                cur.execute(f"DROP DATABASE `{_text(db)}`")
        cur.execute(f"CREATE DATABASE {DEFAULT_DB}")
        cur.execute(f"USE {DEFAULT_DB}")
        cur.execute("SET SESSION sql_mode = DEFAULT, foreign_key_checks = 0")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mirror", type=Path, help="a clone (bare or not) of github.com/debezium/debezium")
    ap.add_argument("--show", default="", help="comma-separated verdicts to list (wrong,crash,rejected,defaults,...)")
    ap.add_argument("--json", type=Path, help="write every outcome here")
    args = ap.parse_args()
    mirror = args.mirror / ".git" if (args.mirror / ".git").exists() else args.mirror
    sessions = extract(mirror)
    base = Path(tempfile.mkdtemp(prefix="ddl-corpus-"))
    server = MariaDBServer(base / "mariadb", port=free_port())
    server.start()
    try:
        conn = pymysql.connect(unix_socket=server.endpoint.root_socket, user="root", autocommit=True,
                               charset="utf8mb4")
        outcomes, minor = run(sessions, conn)
        conn.close()
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)
    counts = collections.Counter(o.verdict for o in outcomes)
    show = set(filter(None, args.show.split(",")))
    for o in outcomes:
        if o.verdict in show:
            print(f"[{o.verdict}] {o.origin}: {' '.join(o.statement.split())[:300]}\n    {o.detail}")
    if "defaults" in show:
        for m in minor:
            print(f"[default/comment] {m}")
    print(f"sessions: {len(sessions)}, statements: {len(outcomes)}")
    print("judged: " + " / ".join(f"{v} {counts.get(v, 0)}" for v in JUDGED))
    print("not judged: " + " / ".join(f"{v} {c}" for v, c in sorted(counts.items()) if v.startswith("skipped")))
    print("by kind (judged statements whose text matches):")
    for kind, pattern in KINDS.items():
        hits = collections.Counter(o.verdict for o in outcomes if o.verdict in JUDGED
                                   and re.search(pattern, o.statement, re.IGNORECASE | re.DOTALL))
        print(f"  {kind}: {sum(hits.values())} (" + " / ".join(f"{v} {hits.get(v, 0)}" for v in JUDGED) + ")")
    print(f"distinct default/comment differences (not counted as wrong): {len(minor)}")
    if args.json:
        args.json.write_text(json.dumps([o.__dict__ for o in outcomes], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
