"""``CREATE [OR REPLACE] TABLE``: a column list, ``LIKE other``, or a shadow table of a migration."""

from __future__ import annotations

from dataclasses import replace

from cdc_core.model.events import CreateTableEvent, DropTableEvent, SchemaChangeEvent
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.ddl.column_definitions import (
    charset_name,
    charset_of_collation,
    is_period_definition,
    with_literal_members,
)
from cdc_core.mysql.ddl.column_types import STRING_TYPES
from cdc_core.mysql.ddl.errors import DdlSyntaxError
from cdc_core.mysql.ddl.statement import Statement

# Words that start a key or constraint item: all reserved, so a bare one is never a column name.
_KEY_ITEMS = ("CONSTRAINT", "PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK")


def parse_create(stmt: Statement) -> list[SchemaChangeEvent]:
    cur = stmt.cur
    cur.expect_word("CREATE")
    or_replace = cur.accept_seq("OR", "REPLACE")
    temporary = cur.accept("TEMPORARY")
    if not cur.is_word("TABLE"):
        return []  # database, index, view, routine, user...: no table columns change
    cur.next()
    if_not_exists = cur.accept_seq("IF", "NOT", "EXISTS")
    t = stmt.table()
    if temporary:
        return []
    existing = stmt.schema(t)
    if if_not_exists and existing is not None:
        return []
    if cur.accept("LIKE") or (cur.is_punct("(") and cur.is_word("LIKE", k=1)):
        schema = _like(stmt, t)
        if schema is None:
            return []
    else:
        schema = _body(stmt, t)
    events: list[SchemaChangeEvent] = []
    if or_replace and existing is not None:
        stmt.emit(events, DropTableEvent(t))
    stmt.emit(events, CreateTableEvent(t, schema=schema))
    return stmt.route_shadow(events)


def _like(stmt: Statement, t: TableId) -> TableSchema | None:
    """``LIKE source`` or ``(LIKE source)``: the source's schema under the new name."""
    cur = stmt.cur
    paren = cur.accept_punct("(")
    if paren:
        cur.expect_word("LIKE")
    source = stmt.table()
    if paren:
        cur.expect_punct(")")
    src = stmt.schema(source)
    if src is None:
        if stmt.is_relevant(t):
            raise DdlSyntaxError(f"CREATE TABLE {t} LIKE {source}: the schema of {source} is unknown")
        return None
    return replace(src, table_id=t)


def _body(stmt: Statement, t: TableId) -> TableSchema:
    """``(column and key definitions) [table options] [AS SELECT ...]``."""
    cur = stmt.cur
    if not cur.accept_punct("("):
        if cur.is_word("SELECT", "AS", "IGNORE", "REPLACE"):
            raise DdlSyntaxError("CREATE TABLE ... SELECT without column definitions")
        raise DdlSyntaxError(f"expected '(' after CREATE TABLE {t}, found {cur.found()}")
    columns: list[Column] = []
    literal: dict[str, tuple[str, tuple[str | bytes, ...]]] = {}
    pk: list[str] = []
    while True:
        if is_period_definition(cur):  # MariaDB's PERIOD FOR name (start, end): no column
            cur.skip_to_item_end()
        elif cur.is_word(*_KEY_ITEMS):
            if cur.accept("CONSTRAINT") and not cur.is_word("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                cur.ident()
            if cur.accept("PRIMARY"):
                cur.expect_word("KEY")
                pk = stmt.key_columns()
            else:
                cur.skip_to_item_end()
        else:
            col = stmt.columns().parse()
            columns.append(col.column)
            if col.literal_members is not None:
                literal[col.column.name] = col.literal_members
            if col.primary_key:
                pk = [col.column.name]
        if cur.accept_punct(","):
            continue
        cur.expect_punct(")")
        break
    comment, default_charset = _table_options(stmt)
    pk_set = {p.lower() for p in pk}
    columns = [replace(c, nullable=False) if c.name.lower() in pk_set else c for c in columns]
    if default_charset is not None:
        # A string column without its own CHARACTER SET (or COLLATE) takes the table's default.
        columns = [replace(c, charset=default_charset) if c.data_type in STRING_TYPES and c.charset is None
                   and c.data_type != "json" else c for c in columns]
    for i, c in enumerate(columns):
        if c.name in literal:
            if c.charset is None and stmt.is_relevant(t):
                raise DdlSyntaxError(
                    f"column {c.name!r} of {t} is an ENUM/SET whose members are hex or bit literals, read in "
                    "the database's default character set, which the statement does not name, and Tidemark "
                    f"does not guess it. The way out: leave {t} out of the pipeline (source tables.exclude: "
                    f"{t}) and run again")
            columns[i] = with_literal_members(c, *literal[c.name], stmt.mariadb)  # (unknown: as it is)
    return TableSchema(t, tuple(columns), tuple(pk), comment, default_charset)


def _table_options(stmt: Statement) -> tuple[str, str | None]:
    """Reads the table options after the column list: the table COMMENT ('' without one) and the
    default character set (``[DEFAULT] CHARSET|CHARACTER SET [=] x``, or the charset of
    ``[DEFAULT] COLLATE [=] y`` when no charset is given); skips the rest."""
    cur = stmt.cur
    comment = ""
    charset: str | None = None
    collation_charset: str | None = None
    while not cur.at_end():
        if cur.accept("COMMENT"):
            cur.accept_punct("=")
            tok = cur.next()
            comment = tok.text
        elif cur.accept("CHARSET") or cur.accept_seq("CHARACTER", "SET"):
            cur.accept_punct("=")
            charset = charset_name(cur.ident())
        elif cur.accept("COLLATE"):
            cur.accept_punct("=")
            collation_charset = charset_of_collation(cur.ident())
        elif cur.is_punct("("):
            cur.skip_balanced()
        elif cur.is_word("WITH") and cur.is_word("SYSTEM", k=1):
            raise DdlSyntaxError("WITH SYSTEM VERSIONING adds hidden row_start/row_end columns; system-versioned "
                                 "tables are not supported")
        elif cur.is_word("AS", "SELECT", "IGNORE", "REPLACE") and not cur.is_punct("=", k=1):
            break  # CREATE TABLE ... SELECT: ROW binlog logs explicit columns; the rows follow
        else:
            cur.next()
    return comment, None if charset == "default" else (charset or collation_charset)
