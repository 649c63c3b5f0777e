"""Split SQL text into statements the way the ``mysql`` client and ``mysqltest`` do, on bytes.

The corpus files are bytes in many charsets (a ``ctype_sjis`` test holds Shift-JIS literals after a
``SET NAMES sjis``): decoding them in Python first would pick one charset for the whole file and
change the bytes MariaDB receives. So the split works on bytes and only looks at ASCII: quotes
(``'`` ``"`` and backquote, with backslash escapes and doubled quotes), comments, and the
delimiter, which ``DELIMITER x`` (and ``--delimiter x`` in mysqltest) changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_QUOTES = frozenset(b"'\"`")
_DELIMITER_COMMAND = re.compile(rb"^\s*delimiter\s+(\S+)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    """One statement's bytes (without its delimiter) and the line it starts on (1-based)."""

    sql: bytes
    line: int


def _scan_to_delimiter(data: bytes, pos: int, delimiter: bytes) -> int:
    """The index of the delimiter ending the statement that starts at ``pos`` (or ``len(data)``)."""
    n = len(data)
    quote = 0
    i = pos
    while i < n:
        c = data[i]
        if quote:
            if c == 0x5C and quote != 0x60 and i + 1 < n:  # backslash escapes in ' and "
                i += 2
                continue
            if c == quote:
                if i + 1 < n and data[i + 1] == quote:  # a doubled quote stays inside
                    i += 2
                    continue
                quote = 0
            i += 1
            continue
        if c in _QUOTES:
            quote = c
        elif c == 0x2F and data.startswith(b"/*", i) and not data.startswith(b"/*!", i) \
                and not data.startswith(b"/*M!", i):
            end = data.find(b"*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        elif data.startswith(delimiter, i):
            return i
        i += 1
    return n


def split_sql(data: bytes, *, mysqltest: bool = False) -> Iterator[Statement]:
    """The statements of ``data``; with ``mysqltest``, lines that start with ``--`` are one-line
    test commands and are skipped (``--delimiter`` changes the delimiter), and statements include
    the test language's own commands (``let``, ``eval``, ``echo``...) for the caller to drop."""
    delimiter = b";"
    pos = 0
    n = len(data)
    while pos < n:
        # leading blanks and comment lines before a statement
        while pos < n and data[pos] in b" \t\r\n":
            pos += 1
        if pos >= n:
            break
        eol = data.find(b"\n", pos)
        eol = n if eol < 0 else eol
        line = data[pos:eol]
        if line.startswith(b"#") or (line.startswith(b"--") and (mysqltest or line[2:3] in (b"", b" ", b"\t", b"\r"))):
            if mysqltest and line.startswith(b"--"):
                m = _DELIMITER_COMMAND.match(line[2:])
                if m:
                    delimiter = m.group(1)
            pos = eol + 1
            continue
        m = _DELIMITER_COMMAND.match(line)
        if m and not mysqltest:  # the mysql client's DELIMITER line
            delimiter = m.group(1)
            pos = eol + 1
            continue
        if line.startswith(b"/*") and not line.startswith((b"/*!", b"/*M!")):  # a comment on its own
            end = data.find(b"*/", pos + 2)
            pos = n if end < 0 else end + 2
            continue
        end = _scan_to_delimiter(data, pos, delimiter)
        sql = data[pos:end].strip()
        start_line = data.count(b"\n", 0, pos) + 1
        pos = end + len(delimiter)
        if mysqltest:
            m = re.match(rb"^delimiter\s+(\S+)$", sql, re.IGNORECASE)
            if m:
                delimiter = m.group(1)
                continue
        if sql:
            yield Statement(sql, start_line)
