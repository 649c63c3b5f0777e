"""MySQL/MariaDB character sets → text, exactly as the server itself reads the bytes.

The snapshot reads text through a utf8mb4 session, so the server converts every value to UTF-8
itself. The binlog carries the column's raw bytes; this module decodes them to the same text the
server would give (``CONVERT(col USING utf8mb4)``), charset by charset:

* the UTF charsets (utf8mb3, utf8mb4, ucs2, utf16, utf16le, utf32) with Python's codecs
  (``ucs2``/``utf16``/``utf32`` are big-endian);
* every single-byte charset (latin1 — MySQL's is Windows-1252 with its five holes filled —,
  macce, koi8r, armscii8, geostd8, keybcs2, dec8, hp8, swe7, ...) with its own 256-entry table
  of what MariaDB converts each byte to (``charset_tables``, generated from the server by
  ``tools/charset_tables.py``). Python's same-named codecs differ from MySQL's on several
  (greek, hebrew, cp866, cp1256, koi8u, tis620, ...), so none is used;
* the CJK charsets (big5, gbk, gb2312, euckr, sjis, cp932, ujis, eucjpms) character by character:
  the Python codec closest to MariaDB's table, corrected by the table's differences (sequences
  MariaDB reads as ``'?'``, its user-defined areas, eucjpms's IBM extensions).

A byte MySQL's own table leaves undefined is read as MariaDB reads it (``'?'``, or U+FFFD for
tis620): the same text the snapshot path gets from the server. Nothing is ever replaced
silently: bytes that are no character of the charset, a lone UTF-16 surrogate (which MariaDB
stores in ucs2/utf32/utf8 columns but no UTF-8 text can carry) and a charset outside the tables
raise :class:`UndecodableTextError`; :func:`charset_problems` refuses such a charset by name
before anything is loaded (``tidemark validate --connect`` and planning).
"""

from __future__ import annotations

import bisect
import codecs
import re
from collections.abc import Callable, Iterable

from cdc_core.model.schema import Column, TableSchema
from cdc_core.mysql.types.charset_tables import CODEC, LENGTHS, OTHER, QUESTION, SINGLE_BYTE

# MySQL's charset names for the UTF encodings → Python's codecs (these agree on every value)
_UNICODE = {
    "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "ucs2": "utf-16-be", "utf16": "utf-16-be",
    "utf16le": "utf-16-le", "utf32": "utf-32-be",
}
# binary strings have no characters; a byte is read as the code point of the same value (lossless)
_BINARY = "binary"


class UndecodableTextError(ValueError):
    """Bytes of a text column that are no text of its charset (or a charset Tidemark cannot read)."""


def supported_charsets() -> frozenset[str]:
    """Every charset Tidemark decodes exactly (MariaDB 10.11's ``SHOW CHARACTER SET``)."""
    return frozenset({*_UNICODE, *SINGLE_BYTE, *CODEC, _BINARY})


def _charset_name(charset: str | None) -> str:
    name = (charset or "utf8mb4").lower()
    return "utf8mb3" if name == "utf8" else name


def _unicode_decoder(name: str, codec: str) -> Callable[[bytes], str]:
    def decode(value: bytes) -> str:
        try:
            return bytes(value).decode(codec)
        except UnicodeDecodeError as exc:
            raise _undecodable(name, bytes(value), exc, _lone_surrogate(bytes(value), codec)) from exc
    return decode


def _lone_surrogate(value: bytes, codec: str) -> str | None:
    """The first lone surrogate in ``value`` (which MariaDB stores in ucs2/utf32/utf8 columns), if any."""
    try:
        text = value.decode(codec, "surrogatepass")  # only to name the code point in the error
    except UnicodeDecodeError:
        return None
    return next((f"U+{ord(c):04X}" for c in text if 0xD800 <= ord(c) < 0xE000), None)


def _single_byte_decoder(name: str) -> Callable[[bytes], str]:
    table = SINGLE_BYTE[name]
    charmap_decode = codecs.charmap_decode

    def decode(value: bytes) -> str:
        return charmap_decode(value, "strict", table)[0]  # every byte is in the table
    return decode


class _MultiByte:
    """A CJK charset: sequences cut by their lead byte, each read through a memo of MariaDB's table."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.codec = CODEC[name]
        lengths = LENGTHS[name]
        self.question = QUESTION[name]
        self.question_starts = [lo for lo, _ in self.question]
        self.other = OTHER[name]
        two = bytes(b for b in range(0x80, 0x100) if lengths[b] == 2)
        three = bytes(b for b in range(0x80, 0x100) if lengths[b] == 3)
        one = bytes(b for b in range(0x80, 0x100) if lengths[b] == 1)
        parts = [rb"[\x00-\x7f]+"]
        if two:
            parts.append(b"[" + re.escape(two) + rb"][\x00-\xff]")
        if three:
            parts.append(b"[" + re.escape(three) + rb"][\x00-\xff]{2}")
        if one:
            parts.append(b"[" + re.escape(one) + b"]")
        parts.append(rb"[\x00-\xff]")  # anything else: no character starts with it (refused below)
        self.tokens = re.compile(b"|".join(parts), re.DOTALL)
        self.memo: dict[bytes, str] = {}

    def _character(self, seq: bytes) -> str:
        key = int.from_bytes(seq, "big")
        text = self.other.get(key)
        if text is None:
            i = bisect.bisect_right(self.question_starts, key) - 1
            if i >= 0 and key <= self.question[i][1]:
                text = "?"
            else:
                try:
                    text = seq.decode(self.codec)
                except UnicodeDecodeError as exc:
                    raise _undecodable(self.name, seq, exc) from exc
                if len(text) != 1:
                    raise _undecodable(self.name, seq, None)
        self.memo[seq] = text
        return text

    def __call__(self, value: bytes) -> str:
        value = bytes(value)
        if value.isascii():
            return value.decode("ascii")
        memo = self.memo
        out = []
        for token in self.tokens.findall(value):
            if token[0] < 0x80:
                out.append(token.decode("ascii"))
            else:
                out.append(memo.get(token) or self._character(token))
        return "".join(out)


def _undecodable(charset: str, value: bytes, exc: UnicodeDecodeError | None,
                 surrogate_at: str | None = None) -> UndecodableTextError:
    shown = value[:32].hex(" ") + (" ..." if len(value) > 32 else "")
    detail = f" ({exc.reason} at byte {exc.start})" if exc is not None else ""
    surrogate = f" — it holds {surrogate_at}, a lone UTF-16 surrogate, which no UTF-8 text (and so no " \
        "Doris value) can carry" if surrogate_at else ""
    return UndecodableTextError(
        f"bytes {shown} are no {charset} text{detail}{surrogate}; the value is not replaced. Fix: correct "
        "the stored value at the source")


def utf8_refusal(exc: UnicodeDecodeError, where: str = "") -> UndecodableTextError:
    """The refusal for a UTF-8 value a decoder inlined as ``bytes.decode()`` (``row_decoder``) cannot read."""
    piece = exc.object[exc.start:exc.start + 3]
    error = _undecodable("utf8mb4", bytes(piece), exc, _lone_surrogate(bytes(piece), "utf-8"))
    return UndecodableTextError(where + str(error))


_DECODERS: dict[str, Callable[[bytes], str]] = {}


def is_utf8(charset: str | None) -> bool:
    """Whether ``charset`` (None: utf8mb4) is read as plain UTF-8 (utf8mb3 / utf8mb4)."""
    return _UNICODE.get(_charset_name(charset)) == "utf-8"


def decoder_for(charset: str | None) -> Callable[[bytes], str]:
    """The exact decoder of ``charset`` (None: utf8mb4); raises :class:`UndecodableTextError`
    for a charset Tidemark has no table for."""
    name = _charset_name(charset)
    decoder = _DECODERS.get(name)
    if decoder is not None:
        return decoder
    if name in _UNICODE:
        decoder = _unicode_decoder(name, _UNICODE[name])
    elif name in SINGLE_BYTE:
        decoder = _single_byte_decoder(name)
    elif name in CODEC:
        decoder = _MultiByte(name)
    elif name == _BINARY:
        decoder = _unicode_decoder(name, "latin-1")
    else:
        raise UndecodableTextError(f"character set {name!r} is not one Tidemark can decode exactly "
                                   f"(it decodes: {', '.join(sorted(supported_charsets()))})")
    _DECODERS[name] = decoder
    return decoder


def decode_text(value: bytes, column: Column) -> str:
    """Bytes of a string column in its charset → the text MySQL reads them as (never replaced)."""
    try:
        return decoder_for(column.charset)(value)
    except UndecodableTextError as exc:
        raise UndecodableTextError(f"column {column.name!r}: {exc}") from exc


def charset_problems(schemas: Iterable[TableSchema]) -> list[str]:
    """One line per text column whose charset Tidemark cannot decode exactly: refused before
    anything is loaded, never read with a guess."""
    supported = supported_charsets()
    problems = []
    for schema in schemas:
        for column in schema.columns:
            if column.charset is not None and _charset_name(column.charset) not in supported:
                problems.append(
                    f"{schema.table_id}: column {column.name!r} is in character set {column.charset!r}, "
                    "which Tidemark cannot decode exactly from the binlog (nothing was loaded). Fix: convert "
                    f"the column to utf8mb4 (ALTER TABLE ... MODIFY {column.name} ... CHARACTER SET utf8mb4), "
                    "or leave the table out of source.tables")
    return problems
