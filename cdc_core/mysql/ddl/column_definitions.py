"""A column definition (``name type [attributes] [FIRST | AFTER col]``) → :class:`Column`.

Used by CREATE TABLE and by ALTER's ADD / MODIFY / CHANGE; the type text itself is read by
``column_types``. A new column attribute is one more branch in :meth:`ColumnParser.parse`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from cdc_core.model.schema import Column
from cdc_core.mysql.ddl.column_types import STRING_TYPES, canonical_type, converted_column
from cdc_core.mysql.ddl.errors import DdlSyntaxError
from cdc_core.mysql.ddl.tokens import Cursor, Tok
from cdc_core.mysql.types.charsets import decoder_for


@dataclass(frozen=True)
class ColumnDef:
    """A parsed column definition: the column, whether it declares the primary key, and where it goes."""

    column: Column
    primary_key: bool = False
    position: str = "LAST"  # LAST | FIRST | AFTER
    after: str | None = None
    # An ENUM/SET whose members are written as hex or bit literals and whose charset is the table's
    # (not named in the column): its type text and members, decoded by the caller once that is known.
    literal_members: tuple[str, tuple[str | bytes, ...]] | None = None


_HEX = re.compile(r"(?i)^(?:0x([0-9a-f]*)|x'([0-9a-f]*)')$")
_BITS = re.compile(r"(?i)^(?:0b([01]*)|b'([01]*)')$")


def _members(toks: list[Tok]) -> list[str | bytes]:
    """An ENUM/SET's members: a string's text, or the bytes of a hex (``0x9353``, ``X'9353'``) or bit
    (``b'0110'``) literal, which MySQL reads in the column's charset (a charset introducer before
    either changes nothing the column keeps)."""
    out: list[str | bytes] = []
    for t in toks:
        if t.kind == "string":
            out.append(t.text)
        elif t.kind == "other" and (m := _HEX.match(t.text)):
            digits = m.group(1) if m.group(1) is not None else m.group(2)
            out.append(bytes.fromhex(digits.rjust(len(digits) + len(digits) % 2, "0")))
        elif t.kind == "other" and (m := _BITS.match(t.text)):
            bits = m.group(1) if m.group(1) is not None else m.group(2)
            out.append(int(bits or "0", 2).to_bytes((len(bits) + 7) // 8, "big") if bits else b"")
    return out


def with_literal_members(column: Column, raw_type: str, members: tuple[str | bytes, ...], mariadb: bool) -> Column:
    """``column`` with its hex/bit-literal members decoded in its charset, as MySQL stores them (the
    schema history would otherwise lose them: ``enum()``, and no row could be bound). Left as it is
    while the charset is unknown (the caller decodes with the table's default)."""
    if column.charset is None:
        return column
    decode = decoder_for(column.charset)
    text = [m if isinstance(m, str) else decode(m) for m in members]
    column_type, _, facts = canonical_type(raw_type, mariadb=mariadb, members=text)
    return replace(column, column_type=column_type, **facts)


class ColumnParser:
    """Parses ``name type [attributes]`` at the cursor."""

    def __init__(self, cur: Cursor, mariadb: bool = True):
        self.cur = cur
        self.mariadb = mariadb

    def parse(self, name: str | None = None) -> ColumnDef:
        cur = self.cur
        if name is None:
            name = cur.ident()
        start_tok = cur.peek()
        if start_tok is None:
            raise DdlSyntaxError(f"column {name!r} has no type")
        # the type: one or two words, an optional parenthesised list, then type modifiers
        cur.next()
        # two- and three-word types: DOUBLE PRECISION, CHAR VARYING, NCHAR VARCHAR, NATIONAL CHARACTER
        # VARYING, LONG VARBINARY... (but ``CHAR CHARACTER SET x`` is a CHAR with a charset)
        if start_tok.kind == "word" and start_tok.up in ("DOUBLE", "CHARACTER", "NATIONAL", "LONG", "CHAR", "NCHAR"):
            for _ in range(2):
                if cur.is_word("PRECISION", "VARYING", "VARCHAR", "VARBINARY", "CHAR", "CHARACTER") \
                        and not cur.is_word("SET", k=1):
                    cur.next()
        members: list[str | bytes] | None = None
        if cur.is_punct("("):
            open_at = cur.i
            cur.skip_balanced()
            if start_tok.kind == "word" and start_tok.up in ("ENUM", "SET"):
                members = _members(cur.toks[open_at:cur.i])
        while cur.is_word("UNSIGNED", "SIGNED", "ZEROFILL"):
            cur.next()
        type_end = self.cur.toks[cur.i - 1].end
        raw_type = cur.sql[start_tok.start:type_end + 1]
        written = [m for m in members or () if isinstance(m, str)] if members is not None else None
        column_type, data_type, facts = canonical_type(raw_type, mariadb=self.mariadb, members=written)
        nullable = not raw_type.strip().lower().startswith("serial")
        default: str | None = None
        comment = ""
        charset: str | None = None
        collation_charset: str | None = None
        # NCHAR, NVARCHAR and NATIONAL CHAR/VARCHAR are the server's national charset, utf8mb3.
        national = "utf8mb3" if start_tok.kind == "word" and start_tok.up in ("NCHAR", "NVARCHAR", "NATIONAL") \
            else None
        primary = False
        json_check = False  # MariaDB's JSON as SHOW CREATE TABLE spells it: LONGTEXT ... CHECK (json_valid(c))
        position, after = "LAST", None
        while not cur.at_end() and not cur.is_punct(",") and not cur.is_punct(")"):
            if cur.accept("NOT"):
                cur.expect_word("NULL")
                nullable = False
            elif cur.accept("NULL"):
                nullable = True
            elif cur.accept("DEFAULT"):
                default = self.default()
            elif cur.accept("COMMENT"):
                comment = self.string()
            elif cur.is_word("ASCII", "UNICODE", "BYTE"):
                # CHAR(n) ASCII / UNICODE / BYTE: shorthands for CHARACTER SET latin1 / ucs2 / binary
                charset = {"ASCII": "latin1", "UNICODE": "ucs2", "BYTE": "binary"}[cur.next().up]
            elif cur.accept("AUTO_INCREMENT", "VISIBLE", "INVISIBLE", "VIRTUAL", "STORED", "PERSISTENT",
                            "COMPRESSED", "BINARY"):
                pass
            elif cur.accept("SERIAL"):  # SERIAL DEFAULT VALUE: NOT NULL AUTO_INCREMENT UNIQUE
                cur.expect_word("DEFAULT")
                cur.expect_word("VALUE")
                nullable = False
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
                charset = charset_name(cur.ident())
            elif cur.accept("CHARSET"):
                charset = charset_name(cur.ident())
            elif cur.accept("COLLATE"):
                collation_charset = charset_of_collation(cur.ident())
            elif cur.accept("COLUMN_FORMAT", "STORAGE", "SRID"):
                cur.next()
            elif cur.accept("ENGINE_ATTRIBUTE", "SECONDARY_ENGINE_ATTRIBUTE"):
                cur.accept_punct("=")
                cur.next()
            elif cur.accept("ON"):
                cur.expect_word("UPDATE")
                self.default()
            elif cur.accept("GENERATED"):
                cur.expect_word("ALWAYS")
            elif cur.accept("CHECK"):
                open_at = cur.i
                cur.skip_balanced()
                check = [t.text.lower() for t in cur.toks[open_at:cur.i]]
                json_check = json_check or check == ["(", "json_valid", "(", name.lower(), ")", ")"]
            elif cur.accept("AS"):
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
                raise DdlSyntaxError("system-versioned columns add hidden row_start/row_end columns; not supported")
            elif cur.accept("FIRST"):
                position = "FIRST"
            elif cur.accept("AFTER"):
                position, after = "AFTER", cur.ident()
            else:
                raise DdlSyntaxError(f"unexpected {cur.found()} in the definition of column {name!r}")
        default = numeric_default(default, data_type, column_type, facts.get("numeric_scale"))
        if data_type == "json" and self.mariadb:
            charset = "utf8mb4"  # MariaDB's JSON is LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin
        if json_check and data_type == "longtext" and self.mariadb:
            column_type = data_type = "json"  # as discovery reads it (cdc_core/mysql/discovery.py)
        column = Column(
            name=name, column_type=column_type, data_type=data_type, nullable=nullable, default=default,
            comment=comment, charset=(charset or collation_charset or national) if data_type in STRING_TYPES else None,
            **facts,
        )
        if charset == "binary" and data_type in STRING_TYPES:  # CHAR BYTE is BINARY, as the server makes it
            column = converted_column(column, "binary", mariadb=self.mariadb)
        literal = None
        if members is not None and any(isinstance(m, bytes) for m in members):
            column = with_literal_members(column, raw_type, tuple(members), self.mariadb)
            literal = None if column.charset else (raw_type, tuple(members))
        return ColumnDef(column, primary, position, after, literal)

    def string(self) -> str:
        t = self.cur.next()
        if t.kind != "string":
            raise DdlSyntaxError(f"expected a string, found {self.cur.sql[t.start:t.end + 1]!r}")
        return t.text

    def default(self) -> str | None:
        """A default value as information_schema shows it: strings quoted, NULL → None."""
        cur = self.cur
        t = cur.peek()
        if t is None:
            raise DdlSyntaxError("DEFAULT without a value")
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
                if word in _NOW_WORDS:
                    word = "current_timestamp"  # NOW(6) is shown as current_timestamp(6)
                return word + cur.sql[start:cur.toks[cur.i - 1].end + 1].replace(" ", "").lower()
            if word in _NOW_WORDS:
                return "current_timestamp()"
            return word
        raise DdlSyntaxError(f"cannot read default value {cur.found()}")


_NOW_WORDS = ("current_timestamp", "now", "localtime", "localtimestamp")
_INTEGER_TYPES = ("tinyint", "smallint", "mediumint", "int", "bigint")


def numeric_default(default: str | None, data_type: str, column_type: str, scale: int | None) -> str | None:
    """An integer or DECIMAL column's default as the server stores it: ``DEFAULT ' 7 '``, ``'1E1'``,
    ``TRUE`` are numbers (``7``, ``10``, ``1``), rounded half away from zero to the column's scale.
    Anything else (ZEROFILL, an expression, a non-number) is left as written."""
    if default is None or "zerofill" in column_type or data_type not in (*_INTEGER_TYPES, "decimal"):
        return default
    text = default[1:-1].replace("''", "'") if len(default) >= 2 and default[0] == default[-1] == "'" else default
    text = {"true": "1", "false": "0"}.get(text.strip().lower(), text.strip())
    try:
        value = Decimal(text)
    except InvalidOperation:
        return default
    if not value.is_finite():
        return default
    digits = 0 if data_type in _INTEGER_TYPES else (scale or 0)
    return f"{value.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP):f}"


def charset_of_collation(collation: str) -> str:
    """The character set a collation belongs to: its name up to the first ``_`` (``latin1_bin`` →
    ``latin1``, ``utf8mb4_0900_ai_ci`` → ``utf8mb4``); ``binary`` is its own."""
    return charset_name(collation.lower().split("_", 1)[0])


def charset_name(name: str) -> str:
    """A character set's name as the server reports it: ``utf8`` is ``utf8mb3``."""
    name = name.lower()
    return "utf8mb3" if name == "utf8" else name


def is_period_definition(cur: Cursor) -> bool:
    """``PERIOD FOR name (start, end)`` (MariaDB's application-time period) at the cursor; ``period``
    alone is an ordinary column name (MySQL does not reserve it)."""
    return cur.is_word("PERIOD") and cur.is_word("FOR", k=1)
