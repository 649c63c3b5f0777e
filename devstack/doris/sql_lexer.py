"""Doris SQL tokens and the cursor the hand-written DDL/SHOW parser (:mod:`devstack.doris.sql`) walks.

Backquoted identifiers, single- and double-quoted strings with backslash and doubled-quote escapes,
numbers, words and operators; comments and whitespace are dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


class SqlError(Exception):
    """An error Doris would report as ``errCode = 2, detailMessage = ...``."""


_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+|--[^\n]*|\#[^\n]*|/\*.*?\*/)
  | (?P<bq>`(?:[^`]|``)*`)
  | (?P<str>'(?:[^'\\]|\\.|'')*'|"(?:[^"\\]|\\.|"")*")
  | (?P<num>-?\d+(?:\.\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
  | (?P<op><=|>=|!=|<>|[(),.;=<>*+\-/])
    """,
    re.VERBOSE | re.DOTALL,
)


@dataclass
class Tok:
    kind: str  # ident | str | num | word | op
    text: str  # unquoted value
    raw: str


def _unescape(body: str, quote: str) -> str:
    out, i = [], 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(nxt, nxt))
            i += 2
            continue
        if ch == quote and i + 1 < len(body) and body[i + 1] == quote:
            out.append(quote)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def tokenize(sql: str) -> list[Tok]:
    toks: list[Tok] = []
    pos = 0
    while pos < len(sql):
        m = _TOKEN_RE.match(sql, pos)
        if not m:
            raise SqlError(f"Syntax error near '{sql[pos:pos + 20]}'")
        pos = m.end()
        kind = m.lastgroup
        raw = m.group()
        if kind == "ws":
            continue
        if kind == "bq":
            toks.append(Tok("ident", raw[1:-1].replace("``", "`"), raw))
        elif kind == "str":
            toks.append(Tok("str", _unescape(raw[1:-1], raw[0]), raw))
        elif kind == "word":
            toks.append(Tok("word", raw, raw))
        else:
            toks.append(Tok(kind or "op", raw, raw))
    return toks


class TokenCursor:
    """Cursor over tokens with the few helpers a recursive-descent DDL parser needs."""

    def __init__(self, sql: str) -> None:
        self.toks = tokenize(sql)
        while self.toks and self.toks[-1].text == ";":
            self.toks.pop()
        self.i = 0
        self.null_spec = False
        self.comment_spec = False

    def peek(self, k: int = 0) -> Tok | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def at(self, *words: str) -> bool:
        for k, w in enumerate(words):
            t = self.peek(k)
            if t is None or t.kind not in ("word", "op") or t.text.upper() != w:
                return False
        return True

    def accept(self, *words: str) -> bool:
        if self.at(*words):
            self.i += len(words)
            return True
        return False

    def expect(self, *words: str) -> None:
        if not self.accept(*words):
            t = self.peek()
            near = t.raw if t else "end of statement"
            raise SqlError(f"Syntax error: expected {' '.join(words)} near '{near}'")

    def next(self) -> Tok:
        t = self.peek()
        if t is None:
            raise SqlError("Syntax error: unexpected end of statement")
        self.i += 1
        return t

    def ident(self) -> str:
        t = self.next()
        if t.kind not in ("ident", "word"):
            raise SqlError(f"Syntax error: expected identifier near '{t.raw}'")
        return t.text

    def string(self) -> str:
        t = self.next()
        if t.kind != "str":
            raise SqlError(f"Syntax error: expected string near '{t.raw}'")
        return t.text

    def name_list(self) -> list[str]:
        self.expect("(")
        out = [self.ident()]
        while self.accept(","):
            out.append(self.ident())
        self.expect(")")
        return out

    def qualified(self) -> tuple[str | None, str]:
        a = self.ident()
        if self.accept("."):
            return a, self.ident()
        return None, a

    def skip_balanced(self) -> None:
        """Skip one parenthesised group (PARTITION definitions and the like)."""
        self.expect("(")
        depth = 1
        while depth:
            t = self.next()
            if t.text == "(" and t.kind == "op":
                depth += 1
            elif t.text == ")" and t.kind == "op":
                depth -= 1

    def done(self) -> bool:
        return self.i >= len(self.toks)

    def properties(self) -> dict[str, str]:
        self.expect("(")
        props: dict[str, str] = {}
        if self.accept(")"):
            return props
        while True:
            k = self.next().text
            self.expect("=")
            v = self.next().text
            props[k] = v
            if self.accept(")"):
                return props
            self.expect(",")
