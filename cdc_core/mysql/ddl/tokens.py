"""Tokens of one statement and the cursor the grammar walks them with.

Tokens come from sqlglot's MySQL tokenizer (quoting, escapes, comments, backquoted names with
doubled backquotes); only sqlglot's *tokenizer* is used, not its parser (see ``parser.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot.dialects.mysql import MySQL
from sqlglot.tokens import TokenType

from cdc_core.mysql.ddl.errors import DdlSyntaxError


@dataclass(frozen=True)
class Tok:
    """One token: its kind, its unquoted text and where it stands in the statement."""

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


def strip_executable_comments(sql: str) -> str:
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
    """Tokens of ``sql``; raises sqlglot's ``TokenError`` on an unterminated quote or comment."""
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


class Cursor:
    """A position in the token list with the look-ahead and accept/expect helpers of the grammar."""

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
            raise DdlSyntaxError("unexpected end of statement")
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
            raise DdlSyntaxError(f"expected {' or '.join(words)}, found {self.found()}")
        return self.next().up

    def expect_punct(self, p: str) -> None:
        if not self.accept_punct(p):
            raise DdlSyntaxError(f"expected {p!r}, found {self.found()}")

    def found(self) -> str:
        t = self.peek()
        return "end of statement" if t is None else repr(self.sql[t.start:t.end + 1])

    def ident(self) -> str:
        t = self.peek()
        if t is None or t.kind not in ("ident", "word", "string"):
            raise DdlSyntaxError(f"expected a name, found {self.found()}")
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
