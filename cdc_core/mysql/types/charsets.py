"""MySQL character sets → Python codecs, for string values that arrive as bytes.

MySQL's ``latin1`` is Windows-1252, not ISO-8859-1; ``utf8``/``utf8mb3`` are plain UTF-8 to a
decoder; ``ucs2``/``utf16``/``utf32`` are big-endian.
"""

from __future__ import annotations

from cdc_core.model.schema import Column

_PYTHON_CODEC = {
    "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "latin1": "cp1252", "binary": "latin-1",
    "ascii": "ascii", "ucs2": "utf-16-be", "utf16": "utf-16-be", "utf32": "utf-32-be",
}


def decode_text(value: bytes, column: Column) -> str:
    """Bytes of a string column in its charset → str; undecodable bytes never fail a read."""
    charset = (column.charset or "utf8mb4").lower()
    encoding = _PYTHON_CODEC.get(charset, charset)
    try:
        return value.decode(encoding)
    except (LookupError, UnicodeDecodeError):
        return value.decode("utf-8", errors="replace")
