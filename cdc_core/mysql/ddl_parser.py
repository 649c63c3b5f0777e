"""MySQL/MariaDB DDL from the binlog → Flink-style schema-change events.

Tokens come from sqlglot's MySQL tokenizer (quoting, escapes, comments, backquoted names with
doubled backquotes). The grammar is our own small recursive-descent parser over those tokens,
because sqlglot's MySQL *parser* falls back to an opaque ``Command`` for several forms the binlog
carries (``ALTER TABLE t ADD (a int, b int)``, ``ALTER ONLINE TABLE``, ``RENAME TABLE a TO b, c TO
d``), normalises types lossily (``long`` becomes ``BIGINT``, ``timestamp`` a TZ type) and rejects
MariaDB types (``inet6``, ``point``, ``national varchar``). Keeping the source text of each column
type lets the schema history hold MySQL's own ``COLUMN_TYPE``.

What the parser promises:

* a DDL on a captured table is either turned into events or raises :class:`DdlParseError`
  quoting the statement — it is never skipped silently;
* statements that cannot change a captured table's columns (indexes, engine options, partitions,
  other databases' objects, users, views, routines...) give no events;
* online schema change tools are recognised: gh-ost (``_t_gho``, ``_t_ghc``, ``_t_del``) and
  pt-osc (``_t_new``, ``_t_old``) shadow tables are never treated as captured tables; with
  ``parse_online_schema_changes`` the ALTERs on the shadow table are replayed onto the original
  table at the cut-over ``RENAME``; without it the cut-over of a captured table is an error that
  says which option to turn on.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from cdc_core.events import (
    AddColumnEvent,
    AlterColumnCommentEvent,
    AlterColumnTypeEvent,
    AlterTableCommentEvent,
    CreateTableEvent,
    DropColumnEvent,
    DropTableEvent,
    RenameColumnEvent,
    RenameTableEvent,
    SchemaChangeEvent,
    TruncateTableEvent,
)
from cdc_core.schema import Column, TableId, TableSchema

SchemaOf = Callable[[TableId], TableSchema | None]
IsCaptured = Callable[[TableId], bool]


class DdlParseError(ValueError):
    """A DDL on a captured table could not be understood; the stream must stop here."""

    def __init__(self, message: str, ddl: str):
        self.ddl = ddl
        super().__init__(f"{message}\n  DDL: {ddl.strip()}")


# -- tokens -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tok:
    kind: str  # "ident" (backquoted), "word", "string", "number", "punct", "other"
    text: str  # unquoted text
    start: int
    end: int  # inclusive

    @property
    def up(self) -> str:
        return self.text.upper() if self.kind == "word" else ""


_PUNCT = {
    TokenType.L_PAREN: "(", TokenType.R_PAREN: ")", TokenType.COMMA: ",", TokenType.DOT: ".",
    TokenType.SEMICOLON: ";", TokenType.EQ: "=",
}
_STRINGS = {TokenType.STRING, TokenType.NATIONAL_STRING}
_LITERALS = {TokenType.BIT_STRING, TokenType.HEX_STRING, TokenType.BYTE_STRING}
_EXEC_COMMENT = re.compile(r"/\*M?!\d*")


def _strip_executable_comments(sql: str) -> str:
    """``/*!50100 PARTITION BY ... */`` is executed by MySQL: keep its body, drop the markers."""
    out: list[str] = []
    i, n = 0, len(sql)
    open_exec = 0
    quote: str | None = None
    while i < n:
        ch = sql[i]
        if quote:
            out.append(ch)
            if ch == "\\" and quote != "`" and i + 1 < n:
                out.append(sql[i + 1])
                i += 2
                continue
            if ch == quote:
                quote = None
            i += 1
            continue
        if ch in "'\"`":
            quote = ch
            out.append(ch)
            i += 1
            continue
        m = _EXEC_COMMENT.match(sql, i)
        if m:
            open_exec += 1
            out.append(" " * (m.end() - i))
            i = m.end()
            continue
        if open_exec and sql.startswith("*/", i):
            open_exec -= 1
            out.append("  ")
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


class _Tokenizer(MySQL.Tokenizer):
    # sqlglot swallows everything after "command" keywords (RENAME, ...) into one string token
    COMMANDS: set = set()


def tokenize(sql: str) -> list[Tok]:
    toks = []
    for t in _Tokenizer().tokenize(sql):
        tt = t.token_type
        if tt in _PUNCT:
            toks.append(Tok("punct", _PUNCT[tt], t.start, t.end))
        elif tt == TokenType.IDENTIFIER:
            toks.append(Tok("ident", t.text, t.start, t.end))
        elif tt in _STRINGS:
            toks.append(Tok("string", t.text, t.start, t.end))
        elif tt == TokenType.NUMBER:
            toks.append(Tok("number", t.text, t.start, t.end))
        elif tt in _LITERALS:
            toks.append(Tok("other", sql[t.start:t.end + 1], t.start, t.end))
        elif t.text and (t.text[0].isalpha() or t.text[0] in "_$@") and " " not in t.text:
            toks.append(Tok("word", t.text, t.start, t.end))
        elif " " in t.text and all(p.isalpha() for p in t.text.split()):
            # multi-word keywords (e.g. "CHARACTER SET", "DOUBLE PRECISION") → separate words
            pos = t.start
            for part in t.text.split():
                at = sql.upper().find(part.upper(), pos)
                toks.append(Tok("word", part, at, at + len(part) - 1))
                pos = at + len(part)
        else:
            toks.append(Tok("other", t.text, t.start, t.end))
    return toks


class _Cursor:
    def __init__(self, sql: str, toks: list[Tok]):
        self.sql = sql
        self.toks = toks
        self.i = 0

    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at_end(self) -> bool:
        t = self.peek()
        return t is None or (t.kind == "punct" and t.text == ";")

    def next(self) -> Tok:
        t = self.peek()
        if t is None:
            raise _Syntax("unexpected end of statement")
        self.i += 1
        return t

    def is_word(self, *words: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "word" and t.up in words

    def is_punct(self, p: str, k: int = 0) -> bool:
        t = self.peek(k)
        return t is not None and t.kind == "punct" and t.text == p

    def accept(self, *words: str) -> bool:
        if self.is_word(*words):
            self.i += 1
            return True
        return False

    def accept_seq(self, *words: str) -> bool:
        if all(self.is_word(w, k=k) for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def accept_punct(self, p: str) -> bool:
        if self.is_punct(p):
            self.i += 1
            return True
        return False

    def expect_word(self, *words: str) -> str:
        if not self.is_word(*words):
            raise _Syntax(f"expected {' or '.join(words)}, found {self._found()}")
        return self.next().up

    def expect_punct(self, p: str) -> None:
        if not self.accept_punct(p):
            raise _Syntax(f"expected {p!r}, found {self._found()}")

    def _found(self) -> str:
        t = self.peek()
        return "end of statement" if t is None else repr(self.sql[t.start:t.end + 1])

    def ident(self) -> str:
        t = self.peek()
        if t is None or t.kind not in ("ident", "word", "string"):
            raise _Syntax(f"expected a name, found {self._found()}")
        self.i += 1
        return t.text

    def qualified(self) -> tuple[str | None, str]:
        first = self.ident()
        if self.accept_punct("."):
            return first, self.ident()
        return None, first

    def skip_balanced(self) -> None:
        """Skip one parenthesised group starting at '('."""
        self.expect_punct("(")
        depth = 1
        while depth:
            t = self.next()
            if t.kind == "punct" and t.text == "(":
                depth += 1
            elif t.kind == "punct" and t.text == ")":
                depth -= 1

    def skip_to_item_end(self) -> None:
        """Skip to the next top-level ',' or ')' or the end (not consuming it)."""
        while not self.at_end():
            if self.is_punct(",") or self.is_punct(")"):
                return
            if self.is_punct("("):
                self.skip_balanced()
            else:
                self.i += 1


class _Syntax(Exception):
    pass


# -- column definitions -------------------------------------------------------------------------

_TYPE_ALIASES = {
    "integer": "int", "int4": "int", "int8": "bigint", "int1": "tinyint", "int2": "smallint",
    "int3": "mediumint", "middleint": "mediumint", "numeric": "decimal", "dec": "decimal", "fixed": "decimal",
    "real": "double", "float8": "double", "float4": "float", "bool": "tinyint", "boolean": "tinyint",
    "character": "char", "nchar": "char", "nvarchar": "varchar", "varchar2": "varchar", "raw": "varbinary",
    "long": "mediumtext", "number": "decimal", "clob": "longtext",
}
_INT_WIDTH = {  # MariaDB's display width defaults, as information_schema.COLUMN_TYPE shows them
    "tinyint": (4, 3), "smallint": (6, 5), "mediumint": (9, 8), "int": (11, 10), "bigint": (20, 20),
}
_STRING_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json"}
_TIME_TYPES = {"datetime", "timestamp", "time"}
_COLUMN_ATTR_END = {
    "NOT", "NULL", "DEFAULT", "AUTO_INCREMENT", "UNIQUE", "PRIMARY", "KEY", "COMMENT", "COLLATE",
    "COLUMN_FORMAT", "STORAGE", "ON", "GENERATED", "AS", "VIRTUAL", "STORED", "PERSISTENT", "INVISIBLE",
    "VISIBLE", "CHECK", "REFERENCES", "FIRST", "AFTER", "CONSTRAINT", "COMPRESSED", "WITH", "WITHOUT",
    "SRID", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE", "CHARACTER", "CHARSET", "ASCII", "UNICODE",
    "BYTE",
}


@dataclass
class _ColumnDef:
    column: Column
    primary_key: bool = False
    position: str = "LAST"
    after: str | None = None
    if_not_exists: bool = False


_INT_PRECISION = {"tinyint": 3, "smallint": 5, "mediumint": 7, "int": 10, "bigint": 19}
_LOB_LENGTH = {"tiny": 255, "": 65535, "medium": 16777215, "long": 4294967295}


def _canonical_type(raw: str, *, mariadb: bool = True) -> tuple[str, str, dict]:
    """MySQL type text → (COLUMN_TYPE, DATA_TYPE, numeric/char facts) as information_schema reports them.

    Checked against MariaDB 10.11 discovery (``cdc_core.mysql.discovery``) for every type in
    ``tests/binlog/test_ddl_stream.py``; ``mariadb`` is reserved for spellings where servers differ.
    """
    text = " ".join(raw.split())
    m = re.match(r"(?is)^\s*([a-z_][a-z0-9_]*(?:\s+(?:precision|varying|varchar|varbinary|char|character))?)"
                 r"\s*(\((?:[^()']|'(?:[^']|'')*')*\))?\s*(.*)$", text)
    if not m:
        raise _Syntax(f"cannot read column type {raw!r}")
    name = m.group(1).lower()
    params = m.group(2) or ""
    rest = (m.group(3) or "").lower().split()
    words = name.split()
    if words[0] == "national":
        name = words[1] if len(words) > 1 else "char"
    elif words[0] == "long" and len(words) > 1:
        name = "mediumblob" if words[1] == "varbinary" else "mediumtext"
    elif words[0] == "double" or words[0] == "character":
        name = {"double": "double", "character": "varchar" if "varying" in words else "char"}[words[0]]
    else:
        name = words[0]
    is_bool = name in ("bool", "boolean")
    name = _TYPE_ALIASES.get(name, name)
    unsigned = "unsigned" in rest
    zerofill = "zerofill" in rest
    if name == "serial":
        name, params, unsigned = "bigint", "", True
    # JSON stays "json" on MariaDB too (where the server stores LONGTEXT + a JSON_VALID check), as
    # discovery reports it: the value conversion depends on it.
    if zerofill:
        unsigned = True
    facts: dict = {}
    if is_bool:
        params = "(1)"
    if name in _INT_WIDTH:
        if not params:
            signed_w, unsigned_w = _INT_WIDTH[name]
            params = f"({unsigned_w if unsigned else signed_w})"
        precision = _INT_PRECISION[name] + (1 if name == "bigint" and unsigned else 0)
        facts.update(numeric_precision=precision, numeric_scale=0)
    if name == "decimal":
        nums = re.findall(r"\d+", params)
        p = int(nums[0]) if nums else 10
        s = int(nums[1]) if len(nums) > 1 else 0
        params = f"({p},{s})"
        facts.update(numeric_precision=p, numeric_scale=s)
    elif name in ("char", "binary", "bit") and not params:
        params = "(1)"
    elif name == "year":
        params = "(4)"
    elif name in ("float", "double"):
        params = params.replace(" ", "")
        nums = re.findall(r"\d+", params)
        if len(nums) == 2:
            facts.update(numeric_precision=int(nums[0]), numeric_scale=int(nums[1]))
        else:
            facts["numeric_precision"] = 12 if name == "float" else 22
    elif name in _TIME_TYPES:
        nums = re.findall(r"\d+", params)
        fsp = int(nums[0]) if nums else 0
        params = f"({fsp})" if fsp else ""
        facts["datetime_precision"] = fsp
    elif name in ("enum", "set"):
        params = _normalise_value_list(params)
        values = [v.replace("''", "'") for v in re.findall(r"'((?:[^']|'')*)'", params)]
        if values:
            facts["char_length"] = (max(len(v) for v in values) if name == "enum"
                                    else sum(len(v) for v in values) + len(values) - 1)
    elif name in ("varchar", "varbinary", "char", "binary"):
        params = params.replace(" ", "")
    elif name in ("text", "blob") and params:
        # TEXT(n)/BLOB(n) pick the smallest type holding n characters (bytes; utf8mb4 = 4 per char)
        n = int(re.findall(r"\d+", params)[0]) * (4 if name == "text" else 1)
        size = "tiny" if n < 256 else "" if n < 65536 else "medium" if n < 16777216 else "long"
        name = size + name
        params = ""
    if name == "bit":
        facts["numeric_precision"] = int(re.findall(r"\d+", params)[0])
    if name in ("char", "varchar", "binary", "varbinary"):
        nums = re.findall(r"\d+", params)
        if nums:
            facts["char_length"] = int(nums[0])
    for size, length in _LOB_LENGTH.items():
        if name in (f"{size}text", f"{size}blob"):
            facts["char_length"] = length
    if name == "json" and mariadb:
        facts["char_length"] = _LOB_LENGTH["long"]  # MariaDB stores JSON as LONGTEXT
    column_type = name + params
    if unsigned and (name in _INT_WIDTH or name in ("decimal", "float", "double")):
        column_type += " unsigned"
    if zerofill:
        column_type += " zerofill"
    return column_type, name, facts


def _normalise_value_list(params: str) -> str:
    values = re.findall(r"'((?:[^'\\]|''|\\.)*)'", params)
    return "(" + ",".join(f"'{v}'" for v in values) + ")"


class _ColumnParser:
    """Parses ``name type [attributes]`` at the cursor."""

    def __init__(self, cur: _Cursor, mariadb: bool = True):
        self.cur = cur
        self.mariadb = mariadb

    def parse(self, name: str | None = None) -> _ColumnDef:
        cur = self.cur
        if name is None:
            name = cur.ident()
        start_tok = cur.peek()
        if start_tok is None:
            raise _Syntax(f"column {name!r} has no type")
        # the type: one or two words, an optional parenthesised list, then type modifiers
        cur.next()
        if cur.is_word("PRECISION", "VARYING", "VARCHAR", "VARBINARY", "CHAR", "CHARACTER") and \
                start_tok.kind == "word" and start_tok.up in ("DOUBLE", "CHARACTER", "NATIONAL", "LONG", "CHAR"):
            cur.next()
            if cur.is_word("VARYING"):
                cur.next()
        if cur.is_punct("("):
            cur.skip_balanced()
        while cur.is_word("UNSIGNED", "SIGNED", "ZEROFILL"):
            cur.next()
        type_end = self.cur.toks[cur.i - 1].end
        raw_type = cur.sql[start_tok.start:type_end + 1]
        column_type, data_type, facts = _canonical_type(raw_type, mariadb=self.mariadb)
        nullable = not raw_type.strip().lower().startswith("serial")
        default: str | None = None
        comment = ""
        charset: str | None = None
        primary = False
        position, after = "LAST", None
        while not cur.at_end() and not cur.is_punct(",") and not cur.is_punct(")"):
            if cur.accept("NOT"):
                cur.expect_word("NULL")
                nullable = False
            elif cur.accept("NULL"):
                nullable = True
            elif cur.accept("DEFAULT"):
                default = self._default()
            elif cur.accept("COMMENT"):
                comment = self._string()
            elif cur.accept("AUTO_INCREMENT", "VISIBLE", "INVISIBLE", "VIRTUAL", "STORED", "PERSISTENT",
                            "COMPRESSED", "ASCII", "UNICODE", "BYTE", "BINARY"):
                pass
            elif cur.accept("PRIMARY"):
                cur.accept("KEY")
                primary = True
                nullable = False
            elif cur.accept("KEY"):
                primary = True
                nullable = False
            elif cur.accept("UNIQUE"):
                cur.accept("KEY")
            elif cur.accept("CHARACTER"):
                cur.expect_word("SET")
                charset = cur.ident().lower()
            elif cur.accept("CHARSET"):
                charset = cur.ident().lower()
            elif cur.accept("COLLATE"):
                cur.ident()
            elif cur.accept("COLUMN_FORMAT", "STORAGE", "SRID"):
                cur.next()
            elif cur.accept("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
                cur.accept_punct("=")
                cur.next()
            elif cur.accept("ON"):
                cur.expect_word("UPDATE")
                self._default()
            elif cur.accept("GENERATED"):
                cur.expect_word("ALWAYS")
            elif cur.accept("AS", "CHECK"):
                cur.skip_balanced()
            elif cur.accept("CONSTRAINT"):
                if not cur.is_word("CHECK"):
                    cur.ident()
            elif cur.accept("REFERENCES"):
                cur.qualified()
                if cur.is_punct("("):
                    cur.skip_balanced()
                while cur.is_word("MATCH", "ON") and not cur.is_word("FIRST", "AFTER"):
                    cur.next()
                    while cur.is_word("FULL", "PARTIAL", "SIMPLE", "DELETE", "UPDATE", "RESTRICT", "CASCADE",
                                      "SET", "NULL", "NO", "ACTION", "DEFAULT"):
                        cur.next()
            elif cur.accept("WITHOUT"):
                cur.expect_word("SYSTEM")
                cur.expect_word("VERSIONING")
            elif cur.is_word("WITH") and cur.is_word("SYSTEM", k=1):
                raise _Syntax("system-versioned columns add hidden row_start/row_end columns; not supported")
            elif cur.accept("FIRST"):
                position = "FIRST"
            elif cur.accept("AFTER"):
                position, after = "AFTER", cur.ident()
            else:
                raise _Syntax(f"unexpected {cur._found()} in the definition of column {name!r}")
        if data_type in _STRING_TYPES and charset is None and "binary" in raw_type.lower().split():
            charset = None
        column = Column(
            name=name, column_type=column_type, data_type=data_type, nullable=nullable, default=default,
            comment=comment, charset=charset if data_type in _STRING_TYPES else None, **facts,
        )
        return _ColumnDef(column, primary, position, after)

    def _string(self) -> str:
        t = self.cur.next()
        if t.kind != "string":
            raise _Syntax(f"expected a string, found {self.cur.sql[t.start:t.end + 1]!r}")
        return t.text

    def _default(self) -> str | None:
        """A default value as information_schema shows it: strings quoted, NULL → None."""
        cur = self.cur
        t = cur.peek()
        if t is None:
            raise _Syntax("DEFAULT without a value")
        if t.kind == "punct" and t.text == "(":
            start = t.start
            cur.skip_balanced()
            return cur.sql[start + 1:cur.toks[cur.i - 1].end].strip()
        if t.kind == "word" and t.text.startswith("_") and cur.peek(1) and cur.peek(1).kind == "string":
            cur.next()  # charset introducer
            t = cur.peek()
        if t.kind == "string":
            cur.next()
            return "'" + t.text.replace("'", "''") + "'"
        if t.kind == "number":
            cur.next()
            return t.text
        if t.kind == "other" and t.text in ("-", "+"):
            cur.next()
            n = cur.next()
            return ("-" if t.text == "-" else "") + n.text
        if t.kind == "other":
            cur.next()
            return t.text
        if t.kind == "word" and t.up == "NULL":
            cur.next()
            return None
        if t.kind == "word":
            cur.next()
            word = t.text.lower()
            if cur.is_punct("("):
                start = cur.peek().start
                cur.skip_balanced()
                return word + cur.sql[start:cur.toks[cur.i - 1].end + 1].replace(" ", "").lower()
            if word in ("current_timestamp", "now", "localtime", "localtimestamp"):
                return "current_timestamp()"
            return word
        raise _Syntax(f"cannot read default value {cur._found()}")


# -- statements ---------------------------------------------------------------------------------

_SHADOW = re.compile(r"^_(?P<orig>.+)_(?P<kind>gho|ghc|del|new|old)$")


def shadow_table_of(table: str) -> tuple[str, str] | None:
    """``_orders_gho`` → (``orders``, ``gho``): an online-schema-change helper table, or None."""
    m = _SHADOW.match(table)
    return (m.group("orig"), m.group("kind")) if m else None


def is_shadow_table(table: str) -> bool:
    return shadow_table_of(table) is not None


_IGNORED_STATEMENTS = {
    "INSERT", "UPDATE", "DELETE", "REPLACE", "SELECT", "SET", "GRANT", "REVOKE", "FLUSH", "ANALYZE", "OPTIMIZE",
    "REPAIR", "CHECK", "CHECKSUM", "SAVEPOINT", "RELEASE", "LOCK", "UNLOCK", "XA", "DO", "CALL", "USE",
    "INSTALL", "UNINSTALL", "LOAD", "HANDLER", "PURGE", "RESET", "KILL", "SHOW", "BEGIN", "COMMIT", "ROLLBACK",
}
_NON_TABLE_OBJECTS = {
    "DATABASE", "SCHEMA", "VIEW", "USER", "ROLE", "INDEX", "UNIQUE", "FULLTEXT", "SPATIAL", "PROCEDURE",
    "FUNCTION", "TRIGGER", "EVENT", "SERVER", "TABLESPACE", "LOGFILE", "SEQUENCE", "DEFINER", "ALGORITHM",
    "SQL", "AGGREGATE", "PACKAGE", "RESOURCE", "SPATIAL_REFERENCE_SYSTEM",
}


@dataclass
class _Pending:
    """ALTERs seen on an online-schema-change shadow table, to replay at the cut-over."""

    original: TableId
    schema: TableSchema | None
    events: list[SchemaChangeEvent] = field(default_factory=list)


class MySqlDdlParser:
    """Parses one DDL at a time; stateful only for online schema changes in progress."""

    def __init__(self, *, parse_online_schema_changes: bool = False, mariadb: bool = True) -> None:
        self.parse_online_schema_changes = parse_online_schema_changes
        self.mariadb = mariadb
        self._pending: dict[TableId, _Pending] = {}

    # public ---------------------------------------------------------------------------------

    def parse_captured(
        self, ddl: str, default_db: str, is_captured: IsCaptured, schema_of: SchemaOf
    ) -> list[SchemaChangeEvent]:
        """Events for captured tables only. Raises :class:`DdlParseError` if the DDL touches a
        captured table and cannot be parsed; DDL on other tables gives ``[]``."""

        def captured(t: TableId) -> bool:
            return not is_shadow_table(t.table) and is_captured(t)

        statement_dml = self._statement_dml_tables(ddl, default_db or None)
        touched_dml = [t for t in statement_dml if captured(t)]
        if touched_dml:
            raise DdlParseError(
                f"statement-based DML on captured table(s) {', '.join(map(str, touched_dml))}: its rows are not in "
                "the binlog, so the change would be lost. Set binlog_format=ROW (and binlog_row_image=FULL) on "
                "the server, for every session that writes to captured tables", ddl)
        try:
            events = self._parse(ddl, default_db or None, captured, schema_of)
        except _Syntax as exc:
            touched = self._tables_mentioned(ddl, default_db or None)
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
        except _Syntax as exc:
            raise DdlParseError(f"cannot parse DDL: {exc}", ddl) from None

    # internals ------------------------------------------------------------------------------

    def _statement_dml_tables(self, ddl: str, default_db: str | None) -> list[TableId]:
        """Tables written by a DML statement logged as text (binlog_format STATEMENT/MIXED)."""
        head = ddl.lstrip().split(None, 1)[0].upper() if ddl.strip() else ""
        if head.startswith("/*"):
            try:
                toks = tokenize(_strip_executable_comments(ddl))
            except TokenError:
                return []
            head = toks[0].up if toks else ""
        if head not in ("INSERT", "UPDATE", "DELETE", "REPLACE", "LOAD"):
            return []
        try:
            toks = tokenize(_strip_executable_comments(ddl))
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

    def _tables_mentioned(self, ddl: str, default_db: str | None) -> list[TableId]:
        """Best-effort names after TABLE/TO/LIKE/',' for deciding whether an unparseable DDL matters."""
        try:
            toks = tokenize(_strip_executable_comments(ddl))
        except TokenError:
            return []
        out: list[TableId] = []
        for i, t in enumerate(toks):
            if t.kind in ("ident", "word") and i > 0 and (
                toks[i - 1].up in ("TABLE", "TO", "LIKE", "EXISTS", "AS", "TRUNCATE")
                or (toks[i - 1].kind == "punct" and toks[i - 1].text == ",")
            ):
                if i + 2 < len(toks) and toks[i + 1].kind == "punct" and toks[i + 1].text == ".":
                    out.append(TableId(t.text, toks[i + 2].text))
                elif default_db:
                    out.append(TableId(default_db, t.text))
        return out

    def _parse(self, ddl: str, default_db: str | None, captured: IsCaptured, schema_of: SchemaOf
               ) -> list[SchemaChangeEvent]:
        try:
            toks = tokenize(_strip_executable_comments(ddl))
        except TokenError as exc:
            raise _Syntax(f"cannot tokenize: {exc}") from None
        cur = _Cursor(ddl, toks)
        if cur.at_end():
            return []
        head = cur.peek()
        if head.kind != "word":
            return []
        verb = head.up
        if verb in _IGNORED_STATEMENTS:
            return []
        ctx = _Statement(self, cur, default_db, captured, schema_of)
        if verb == "CREATE":
            return ctx.create()
        if verb == "ALTER":
            return ctx.alter()
        if verb == "DROP":
            return ctx.drop()
        if verb == "RENAME":
            return ctx.rename()
        if verb == "TRUNCATE":
            return ctx.truncate()
        return []


class _Statement:
    def __init__(self, parser: MySqlDdlParser, cur: _Cursor, default_db: str | None, captured: IsCaptured,
                 schema_of: SchemaOf):
        self.parser = parser
        self.cur = cur
        self.default_db = default_db
        self.captured = captured
        self.schema_of = schema_of
        self.working: dict[TableId, TableSchema | None] = {}

    # helpers
    def _wait_clause(self) -> None:
        """MariaDB's ``WAIT n`` / ``NOWAIT`` lock-timeout clause."""
        if self.cur.accept("WAIT"):
            self.cur.next()
        else:
            self.cur.accept("NOWAIT")

    def table(self) -> TableId:
        db, name = self.cur.qualified()
        db = db or self.default_db
        if not db:
            raise _Syntax(f"table {name!r} is not qualified and the statement has no default database")
        return TableId(db, name)

    def schema(self, t: TableId) -> TableSchema | None:
        if t in self.working:
            return self.working[t]
        pending = self.parser._pending.get(t)
        if pending is not None:
            return pending.schema
        return self.schema_of(t)

    def _apply(self, event: SchemaChangeEvent) -> None:
        from cdc_core.mysql.schema_history import apply_schema_change

        current = self.schema(event.table_id)
        for t, s in apply_schema_change(current, event, strict=False).items():
            self.working[t] = s

    def _emit(self, events: list[SchemaChangeEvent], event: SchemaChangeEvent) -> None:
        self._apply(event)
        events.append(event)

    # CREATE ---------------------------------------------------------------------------------
    def create(self) -> list[SchemaChangeEvent]:
        cur = self.cur
        cur.expect_word("CREATE")
        or_replace = cur.accept_seq("OR", "REPLACE")
        temporary = cur.accept("TEMPORARY")
        if not cur.is_word("TABLE"):
            return []  # database, index, view, routine, user...: no table columns change
        cur.next()
        if_not_exists = cur.accept_seq("IF", "NOT", "EXISTS")
        t = self.table()
        if temporary:
            return []
        existing = self.schema(t)
        if if_not_exists and existing is not None:
            return []
        if cur.accept("LIKE") or (cur.is_punct("(") and cur.is_word("LIKE", k=1)):
            paren = cur.accept_punct("(")
            if paren:
                cur.expect_word("LIKE")
            source = self.table()
            if paren:
                cur.expect_punct(")")
            src = self.schema(source)
            if src is None:
                if self.captured(t) or self._shadow_tracked(t):
                    raise _Syntax(f"CREATE TABLE {t} LIKE {source}: the schema of {source} is unknown")
                return []
            schema = replace(src, table_id=t)
        else:
            schema = self._create_body(t)
        events: list[SchemaChangeEvent] = []
        if or_replace and existing is not None:
            self._emit(events, DropTableEvent(t))
        self._emit(events, CreateTableEvent(t, schema=schema))
        return self._route_shadow(events)

    def _create_body(self, t: TableId) -> TableSchema:
        cur = self.cur
        if not cur.accept_punct("("):
            if cur.is_word("SELECT", "AS", "IGNORE", "REPLACE"):
                raise _Syntax("CREATE TABLE ... SELECT without column definitions")
            raise _Syntax(f"expected '(' after CREATE TABLE {t}, found {cur._found()}")
        columns: list[Column] = []
        pk: list[str] = []
        while True:
            if cur.is_word("CONSTRAINT", "PRIMARY", "UNIQUE", "KEY", "INDEX", "FULLTEXT", "SPATIAL", "FOREIGN",
                           "CHECK", "PERIOD"):
                if cur.accept("CONSTRAINT") and not cur.is_word("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                    cur.ident()
                if cur.accept("PRIMARY"):
                    cur.expect_word("KEY")
                    pk = self._key_columns()
                else:
                    cur.skip_to_item_end()
            else:
                col = _ColumnParser(cur, self.parser.mariadb).parse()
                columns.append(col.column)
                if col.primary_key:
                    pk = [col.column.name]
            if cur.accept_punct(","):
                continue
            cur.expect_punct(")")
            break
        comment = ""
        while not cur.at_end():
            if cur.accept("COMMENT"):
                cur.accept_punct("=")
                tok = cur.next()
                comment = tok.text
            elif cur.is_punct("("):
                cur.skip_balanced()
            elif cur.is_word("WITH") and cur.is_word("SYSTEM", k=1):
                raise _Syntax("WITH SYSTEM VERSIONING adds hidden row_start/row_end columns; system-versioned "
                              "tables are not supported")
            elif cur.is_word("AS", "SELECT", "IGNORE", "REPLACE") and not cur.is_punct("=", k=1):
                break  # CREATE TABLE ... SELECT: ROW binlog logs explicit columns; the rows follow
            else:
                cur.next()
        pk_set = {p.lower() for p in pk}
        columns = [replace(c, nullable=False) if c.name.lower() in pk_set else c for c in columns]
        return TableSchema(t, tuple(columns), tuple(pk), comment)

    def _key_columns(self) -> list[str]:
        cur = self.cur
        while cur.is_word("USING", "BTREE", "HASH"):
            cur.next()
        if not cur.is_punct("("):
            cur.ident()  # index name
        cur.expect_punct("(")
        names = []
        while True:
            names.append(cur.ident())
            cur.skip_to_item_end()
            if cur.accept_punct(","):
                continue
            cur.expect_punct(")")
            break
        cur.skip_to_item_end()
        return names

    # ALTER ----------------------------------------------------------------------------------
    def alter(self) -> list[SchemaChangeEvent]:
        cur = self.cur
        cur.expect_word("ALTER")
        cur.accept("ONLINE")
        cur.accept("IGNORE")
        if not cur.is_word("TABLE"):
            return []
        cur.next()
        cur.accept_seq("IF", "EXISTS")
        t = self.table()
        self._wait_clause()
        relevant = self.captured(t) or self._shadow_tracked(t)
        events: list[SchemaChangeEvent] = []
        while not cur.at_end():
            self._alter_spec(t, events, relevant)
            if not cur.accept_punct(","):
                break
        if not cur.at_end():
            # partition clauses and the like follow without a comma
            if cur.is_word("PARTITION", "REMOVE", "ADD", "DROP", "COALESCE", "REORGANIZE", "EXCHANGE",
                           "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD", "REPAIR", "TRUNCATE", "DISCARD",
                           "IMPORT"):
                pass
            else:
                raise _Syntax(f"unexpected {cur._found()} in ALTER TABLE")
        return self._route_shadow(events)

    def _alter_spec(self, t: TableId, events: list[SchemaChangeEvent], relevant: bool) -> None:
        cur = self.cur
        cp = _ColumnParser(cur, self.parser.mariadb)
        if cur.accept("ADD"):
            if cur.is_word("SYSTEM"):
                raise _Syntax("ADD SYSTEM VERSIONING adds hidden row_start/row_end columns; system-versioned "
                              "tables are not supported")
            if cur.is_word("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CONSTRAINT", "CHECK",
                           "PERIOD"):
                cur.skip_to_item_end()
                return
            if cur.accept("PRIMARY"):
                cur.expect_word("KEY")
                self._set_primary_key(t, self._key_columns())
                return
            if cur.is_word("PARTITION"):
                cur.next()
                cur.skip_to_item_end()
                return
            cur.accept("COLUMN")
            if_not_exists = cur.accept_seq("IF", "NOT", "EXISTS")
            if cur.accept_punct("("):
                defs = []
                while True:
                    if cur.is_word("INDEX", "KEY", "UNIQUE", "PRIMARY", "CONSTRAINT", "FOREIGN", "CHECK"):
                        cur.skip_to_item_end()
                    else:
                        defs.append(cp.parse())
                    if cur.accept_punct(","):
                        continue
                    cur.expect_punct(")")
                    break
            else:
                defs = [cp.parse()]
            for d in defs:
                schema = self.schema(t)
                if if_not_exists and schema is not None and schema.has_column(d.column.name):
                    continue
                self._emit(events, AddColumnEvent(t, column=d.column, position=d.position, after=d.after))
                if d.primary_key:
                    self._set_primary_key(t, [d.column.name])
            return
        if cur.accept("DROP"):
            if cur.is_word("SYSTEM"):
                raise _Syntax("DROP SYSTEM VERSIONING removes hidden row_start/row_end columns; system-versioned "
                              "tables are not supported")
            if cur.is_word("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK", "PARTITION", "PERIOD"):
                cur.skip_to_item_end()
                return
            if cur.accept("PRIMARY"):
                cur.expect_word("KEY")
                self._set_primary_key(t, [])
                return
            cur.accept("COLUMN")
            if_exists = cur.accept_seq("IF", "EXISTS")
            name = cur.ident()
            cur.accept("RESTRICT", "CASCADE")
            schema = self.schema(t)
            if if_exists and schema is not None and not schema.has_column(name):
                return
            self._emit(events, DropColumnEvent(t, column_name=name))
            return
        if cur.accept("MODIFY"):
            cur.accept("COLUMN")
            if_exists = cur.accept_seq("IF", "EXISTS")
            d = cp.parse()
            self._changed(t, d.column.name, d, events, if_exists)
            return
        if cur.accept("CHANGE"):
            cur.accept("COLUMN")
            if_exists = cur.accept_seq("IF", "EXISTS")
            old = cur.ident()
            d = cp.parse()
            self._changed(t, old, d, events, if_exists)
            return
        if cur.accept("RENAME"):
            if cur.accept("COLUMN"):
                cur.accept_seq("IF", "EXISTS")
                old = cur.ident()
                cur.expect_word("TO")
                new = cur.ident()
                if old != new:
                    self._emit(events, RenameColumnEvent(t, old_name=old, new_name=new))
                return
            if cur.accept("INDEX", "KEY"):
                cur.skip_to_item_end()
                return
            cur.accept("TO", "AS")
            new_t = self.table()
            if new_t != t:
                self._emit(events, RenameTableEvent(t, new_table_id=new_t))
            return
        if cur.accept("ALTER"):
            if cur.is_word("INDEX", "KEY", "CONSTRAINT", "CHECK"):
                cur.skip_to_item_end()
                return
            cur.accept("COLUMN")
            cur.accept_seq("IF", "EXISTS")
            name = cur.ident()
            schema = self.schema(t)
            current = schema.column(name) if schema is not None and schema.has_column(name) else None
            if cur.accept_seq("SET", "DEFAULT"):
                if cur.is_punct("("):
                    start = cur.peek().start
                    cur.skip_balanced()
                    default = cur.sql[start + 1:cur.toks[cur.i - 1].end].strip()
                else:
                    default = cp._default()
                if current is not None:
                    self._emit(events, AlterColumnTypeEvent(t, column_name=current.name,
                                                            column=replace(current, default=default)))
                elif relevant:
                    raise _Syntax(f"ALTER COLUMN {name} SET DEFAULT on an unknown column")
            elif cur.accept_seq("DROP", "DEFAULT"):
                if current is not None:
                    self._emit(events, AlterColumnTypeEvent(t, column_name=current.name,
                                                            column=replace(current, default=None)))
                elif relevant:
                    raise _Syntax(f"ALTER COLUMN {name} DROP DEFAULT on an unknown column")
            elif cur.accept("SET"):
                cur.expect_word("VISIBLE", "INVISIBLE")
            else:
                raise _Syntax(f"unexpected {cur._found()} after ALTER COLUMN {name}")
            return
        if cur.accept("COMMENT"):
            cur.accept_punct("=")
            tok = cur.next()
            if tok.kind != "string":
                raise _Syntax("table COMMENT without a string")
            self._emit(events, AlterTableCommentEvent(t, comment=tok.text))
            return
        if cur.accept("CONVERT"):
            cur.expect_word("TO")
            cur.skip_to_item_end()
            return
        if cur.accept("DEFAULT"):
            cur.skip_to_item_end()
            return
        if cur.is_word(*_TABLE_OPTIONS):
            cur.next()
            cur.skip_to_item_end()
            return
        if cur.is_word("PARTITION", "REMOVE", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK",
                       "OPTIMIZE", "REBUILD", "REPAIR", "TRUNCATE", "DISCARD", "IMPORT", "FORCE", "ORDER",
                       "ENABLE", "DISABLE", "UPGRADE", "WITH", "WITHOUT", "LOCK", "ALGORITHM", "SECONDARY_LOAD",
                       "SECONDARY_UNLOAD", "PARTITION"):
            cur.next()
            cur.skip_to_item_end()
            return
        raise _Syntax(f"unsupported ALTER TABLE clause starting at {cur._found()}")

    def _changed(self, t: TableId, old: str, d: _ColumnDef, events: list[SchemaChangeEvent],
                 if_exists: bool) -> None:
        schema = self.schema(t)
        current = schema.column(old) if schema is not None and schema.has_column(old) else None
        if if_exists and schema is not None and current is None:
            return
        new = d.column
        if current is not None and new.charset is None and current.data_type == new.data_type:
            new = replace(new, charset=current.charset)
        if current is not None and current.name != new.name or current is None and old != new.name:
            self._emit(events, RenameColumnEvent(t, old_name=current.name if current else old, new_name=new.name))
        if current is None:
            self._emit(events, AlterColumnTypeEvent(t, column_name=new.name, column=new))
            return
        type_changed = (current.column_type.lower(), current.nullable, current.default) != (
            new.column_type.lower(), new.nullable, new.default)
        if type_changed:
            self._emit(events, AlterColumnTypeEvent(t, column_name=new.name, column=new))
        elif (current.comment or "") != (new.comment or ""):
            self._emit(events, AlterColumnCommentEvent(t, column_name=new.name, comment=new.comment))

    def _set_primary_key(self, t: TableId, columns: list[str]) -> None:
        # No Flink event exists for a key change; the schema history still tracks it.
        schema = self.schema(t)
        if schema is not None:
            self.working[t] = replace(schema, primary_key=tuple(columns))

    # DROP / TRUNCATE / RENAME --------------------------------------------------------------
    def drop(self) -> list[SchemaChangeEvent]:
        cur = self.cur
        cur.expect_word("DROP")
        temporary = cur.accept("TEMPORARY")
        if not cur.accept("TABLE", "TABLES"):
            return []
        cur.accept_seq("IF", "EXISTS")
        events: list[SchemaChangeEvent] = []
        while True:
            t = self.table()
            if not temporary:
                self.parser._pending.pop(t, None)
                self._emit(events, DropTableEvent(t))
            if not cur.accept_punct(","):
                break
        cur.accept("RESTRICT", "CASCADE")
        return [e for e in events if not is_shadow_table(e.table_id.table)]

    def truncate(self) -> list[SchemaChangeEvent]:
        cur = self.cur
        cur.expect_word("TRUNCATE")
        cur.accept("TABLE")
        t = self.table()
        return [TruncateTableEvent(t)]

    def rename(self) -> list[SchemaChangeEvent]:
        cur = self.cur
        cur.expect_word("RENAME")
        if not cur.accept("TABLE", "TABLES"):
            return []
        cur.accept_seq("IF", "EXISTS")
        pairs = []
        while True:
            old = self.table()
            self._wait_clause()
            cur.expect_word("TO")
            new = self.table()
            pairs.append((old, new))
            if not cur.accept_punct(","):
                break
        events: list[SchemaChangeEvent] = []
        for old, new in pairs:
            events.extend(self._rename_one(old, new))
        return events

    def _rename_one(self, old: TableId, new: TableId) -> list[SchemaChangeEvent]:
        old_shadow = shadow_table_of(old.table)
        new_shadow = shadow_table_of(new.table)
        if new_shadow and new_shadow[1] in ("del", "old") and new_shadow[0] == old.table:
            # the original table moves aside for the cut-over; its successor arrives in the same RENAME
            self.working[old] = None
            return []
        if old_shadow and old_shadow[1] in ("gho", "new") and old_shadow[0] == new.table:
            pending = self.parser._pending.pop(old, None)
            if not self.captured(new):
                return []
            if not self.parser.parse_online_schema_changes:
                raise _Syntax(
                    f"online schema change cut-over replaces captured table {new} with {old.table}; enable "
                    "scan.parse.online.schema.changes.enabled so its ALTERs are applied to the table"
                )
            if pending is None:
                raise _Syntax(f"online schema change cut-over for {new}, but the shadow table {old} was not "
                              "seen being created (the stream started in the middle of the migration)")
            out: list[SchemaChangeEvent] = []
            for e in pending.events:
                moved = replace(e, table_id=new)
                out.append(moved)
            self.working[new] = replace(pending.schema, table_id=new) if pending.schema else None
            return out
        if is_shadow_table(old.table) or is_shadow_table(new.table):
            return []
        event = RenameTableEvent(old, new_table_id=new)
        events: list[SchemaChangeEvent] = []
        if self.captured(old):
            self._emit(events, event)
        elif self.captured(new):
            schema = self.schema(old)
            if schema is None:
                raise _Syntax(f"table {old} is renamed into the captured name {new}, but its schema is unknown")
            self._emit(events, CreateTableEvent(new, schema=replace(schema, table_id=new)))
        return events

    # online schema change -------------------------------------------------------------------
    def _shadow_tracked(self, t: TableId) -> bool:
        shadow = shadow_table_of(t.table)
        if not shadow or shadow[1] not in ("gho", "new") or not self.parser.parse_online_schema_changes:
            return False
        return self.captured(TableId(t.database, shadow[0]))

    def _route_shadow(self, events: list[SchemaChangeEvent]) -> list[SchemaChangeEvent]:
        """Hold back events on gh-ost/pt-osc shadow tables until the cut-over."""
        out = []
        for e in events:
            shadow = shadow_table_of(e.table_id.table)
            if shadow is None:
                out.append(e)
                continue
            if not self._shadow_tracked(e.table_id):
                continue
            t = e.table_id
            if isinstance(e, CreateTableEvent):
                self.parser._pending[t] = _Pending(TableId(t.database, shadow[0]), e.schema)
            else:
                pending = self.parser._pending.get(t)
                if pending is None:
                    continue
                pending.events.append(e)
                pending.schema = self.working.get(t, pending.schema)
        return out


_TABLE_OPTIONS = (
    "ENGINE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "CHARACTER", "CHARSET", "CHECKSUM", "COLLATE", "COMPRESSION",
    "CONNECTION", "DATA", "INDEX", "DELAY_KEY_WRITE", "ENCRYPTION", "ENCRYPTED", "ENCRYPTION_KEY_ID",
    "INSERT_METHOD", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PASSWORD", "ROW_FORMAT",
    "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "TABLESPACE", "UNION", "PAGE_CHECKSUM",
    "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "TRANSACTIONAL", "IETF_QUOTES", "SEQUENCE", "ALGORITHM", "LOCK",
    "STORAGE", "AUTOEXTEND_SIZE", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE", "SECONDARY_ENGINE_ATTRIBUTE",
)
