"""MySQL/MariaDB DDL from the binlog → Flink-style schema-change events: the entry point.

The grammar is our own small recursive-descent parser over sqlglot's *tokens*, because sqlglot's
MySQL *parser* falls back to an opaque ``Command`` for several forms the binlog carries (``ALTER
TABLE t ADD (a int, b int)``, ``ALTER ONLINE TABLE``, ``RENAME TABLE a TO b, c TO d``), normalises
types lossily (``long`` becomes ``BIGINT``, ``timestamp`` a TZ type) and rejects MariaDB types
(``inet6``, ``point``, ``national varchar``). Keeping the source text of each column type lets the
schema history hold MySQL's own ``COLUMN_TYPE``.

What the parser promises:

* a DDL on a captured table is either turned into events or raises :class:`DdlParseError`
  quoting the statement — it is never skipped silently;
* statements that cannot change a captured table's columns (indexes, engine options, partitions,
  other databases' objects, users, views, routines...) give no events, except partition
  maintenance that removes or replaces rows without row events (``TRUNCATE``/``DROP``/``EXCHANGE
  PARTITION``...), which gives a ``partition.rows`` event so that the table is reloaded;
* statement-based DML on a captured table (its rows are not in a ROW binlog) is an error;
* online schema change tools are recognised (``online_schema_change``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from sqlglot.errors import TokenError

from cdc_core.model.events import RenameTableEvent, SchemaChangeEvent
from cdc_core.model.schema import TableId
from cdc_core.mysql.ddl.alter import parse_alter
from cdc_core.mysql.ddl.create import parse_create
from cdc_core.mysql.ddl.errors import DdlParseError, DdlSyntaxError
from cdc_core.mysql.ddl.online_schema_change import ShadowTables, is_shadow_table
from cdc_core.mysql.ddl.statement import IsCaptured, SchemaOf, Statement
from cdc_core.mysql.ddl.table_statements import parse_drop, parse_rename, parse_truncate
from cdc_core.mysql.ddl.tokens import Cursor, Tok, strip_executable_comments, tokenize

# Any other statement (DML, SET, GRANT, views, routines, ...) changes no table columns: no events.
_STATEMENTS: dict[str, Callable[[Statement], list[SchemaChangeEvent]]] = {
    "CREATE": parse_create,
    "ALTER": parse_alter,
    "DROP": parse_drop,
    "RENAME": parse_rename,
    "TRUNCATE": parse_truncate,
}


class MySqlDdlParser:
    """Parses one DDL at a time; stateful only for online schema changes in progress."""

    def __init__(self, *, parse_online_schema_changes: bool = False, mariadb: bool = True) -> None:
        self.mariadb = mariadb
        self._shadows = ShadowTables(enabled=parse_online_schema_changes)

    def parse_captured(
        self, ddl: str, default_db: str, is_captured: IsCaptured, schema_of: SchemaOf
    ) -> list[SchemaChangeEvent]:
        """Events for captured tables only. Raises :class:`DdlParseError` if the DDL touches a
        captured table and cannot be parsed; DDL on other tables gives ``[]``."""

        def captured(t: TableId) -> bool:
            return not is_shadow_table(t.table) and is_captured(t)

        statement_dml = _statement_dml_tables(ddl, default_db or None)
        touched_dml = [t for t in statement_dml if captured(t)]
        if touched_dml:
            raise DdlParseError(
                f"statement-based DML on captured table(s) {', '.join(map(str, touched_dml))}: its rows are not in "
                "the binlog, so the change would be lost. Set binlog_format=ROW (and binlog_row_image=FULL) on "
                "the server, for every session that writes to captured tables", ddl)
        try:
            events = self._parse(ddl, default_db or None, captured, schema_of)
        except DdlSyntaxError as exc:
            touched = _tables_mentioned(ddl, default_db or None)
            if any(captured(t) for t in touched):
                raise DdlParseError(f"cannot parse DDL on captured table(s) "
                                    f"{', '.join(str(t) for t in touched if captured(t))}: {exc}", ddl) from None
            return []
        return [replace(e, ddl=ddl) for e in events if captured(e.table_id)
                or (isinstance(e, RenameTableEvent) and e.new_table_id and captured(e.new_table_id))]

    def parse(self, ddl: str, default_db: str | None = None, schema_of: SchemaOf | None = None
              ) -> list[SchemaChangeEvent]:
        """All schema-change events of one statement, for any table (raises on syntax errors)."""
        try:
            return [replace(e, ddl=ddl) for e in
                    self._parse(ddl, default_db or None, lambda t: not is_shadow_table(t.table),
                                schema_of or (lambda t: None))]
        except DdlSyntaxError as exc:
            raise DdlParseError(f"cannot parse DDL: {exc}", ddl) from None

    def _parse(self, ddl: str, default_db: str | None, captured: IsCaptured, schema_of: SchemaOf
               ) -> list[SchemaChangeEvent]:
        try:
            toks = tokenize(strip_executable_comments(ddl))
        except TokenError as exc:
            raise DdlSyntaxError(f"cannot tokenize: {exc}") from None
        cur = Cursor(ddl, toks)
        if cur.at_end():
            return []
        head = cur.peek()
        if head.kind == "word" and head.up == "SET" and cur.is_word("STATEMENT", k=1):
            head = _after_set_statement(cur)
            if head is None:
                return []
        if head.kind != "word" or head.up not in _STATEMENTS:
            return []
        stmt = Statement(cur, default_db, captured, schema_of, self._shadows, mariadb=self.mariadb)
        return _STATEMENTS[head.up](stmt)


def _after_set_statement(cur: Cursor) -> Tok | None:
    """MariaDB's ``SET STATEMENT var = value [, ...] FOR statement``: the binlog carries the whole
    text, and the statement after ``FOR`` is what changes tables. Moves the cursor onto it."""
    cur.next()
    cur.next()
    while not cur.at_end():
        if cur.is_punct("("):
            cur.skip_balanced()
        elif cur.accept("FOR"):
            return cur.peek()
        else:
            cur.next()
    return None


def _statement_dml_tables(ddl: str, default_db: str | None) -> list[TableId]:
    """Tables written by a DML statement logged as text (binlog_format STATEMENT/MIXED)."""
    head = ddl.lstrip().split(None, 1)[0].upper() if ddl.strip() else ""
    if head.startswith("/*"):
        try:
            toks = tokenize(strip_executable_comments(ddl))
        except TokenError:
            return []
        head = toks[0].up if toks else ""
    if head not in ("INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD"):
        return []
    try:
        toks = tokenize(strip_executable_comments(ddl))
    except TokenError:
        return []
    out: list[TableId] = []
    for i, t in enumerate(toks[:-1]):
        if t.up in ("INTO", "UPDATE", "FROM", "JOIN", "TABLE") or (i == 0 and t.up in ("UPDATE",)):
            nxt = i + 1
            while nxt < len(toks) and toks[nxt].up in ("LOW_PRIORITY", "IGNORE", "QUICK", "DELAYED",
                                                       "HIGH_PRIORITY"):
                nxt += 1
            if nxt >= len(toks) or toks[nxt].kind not in ("ident", "word"):
                continue
            if nxt + 2 < len(toks) and toks[nxt + 1].kind == "punct" and toks[nxt + 1].text == ".":
                out.append(TableId(toks[nxt].text, toks[nxt + 2].text))
            elif default_db:
                out.append(TableId(default_db, toks[nxt].text))
    return out


def _tables_mentioned(ddl: str, default_db: str | None) -> list[TableId]:
    """Best-effort names after TABLE/TO/LIKE/',' for deciding whether an unparseable DDL matters."""
    try:
        toks = tokenize(strip_executable_comments(ddl))
    except TokenError:
        return []
    out: list[TableId] = []
    # a list of tables follows a comma only in RENAME / DROP TABLE (in an ALTER, ", CHARACTER SET x" is a clause)
    listing = bool(toks) and toks[0].up in ("RENAME", "DROP")
    for i, t in enumerate(toks):
        if i >= 2 and toks[i - 1].up == "TO" and toks[i - 2].up == "CONVERT":
            continue  # CONVERT TO CHARACTER SET: no table
        if t.kind in ("ident", "word") and i > 0 and (
            toks[i - 1].up in ("TABLE", "TO", "LIKE", "EXISTS", "AS", "TRUNCATE")
            or (listing and toks[i - 1].kind == "punct" and toks[i - 1].text == ",")
        ):
            if i + 2 < len(toks) and toks[i + 1].kind == "punct" and toks[i + 1].text == ".":
                out.append(TableId(t.text, toks[i + 2].text))
            elif default_db:
                out.append(TableId(default_db, t.text))
    return out
