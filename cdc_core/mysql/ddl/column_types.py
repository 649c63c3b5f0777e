"""A column's type text → MySQL's own ``COLUMN_TYPE``, ``DATA_TYPE`` and the numeric/char facts.

The schema history holds what ``information_schema.COLUMNS`` would report for the column, so a
column added by DDL looks exactly like one found by discovery: aliases resolved (``integer`` →
``int``, ``numeric`` → ``decimal``), default display widths filled in (``int`` → ``int(11)``),
``TEXT(n)`` sized, ENUM/SET lists normalised. New type spellings are added here.
"""

from __future__ import annotations

import re
from dataclasses import replace

from cdc_core.model.schema import Column
from cdc_core.mysql.ddl.errors import DdlSyntaxError

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
STRING_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set", "json"}
_TIME_TYPES = {"datetime", "timestamp", "time"}

_INT_PRECISION = {"tinyint": 3, "smallint": 5, "mediumint": 7, "int": 10, "bigint": 19}
_LOB_LENGTH = {"tiny": 255, "": 65535, "medium": 16777215, "long": 4294967295}


def canonical_type(raw: str, *, mariadb: bool = True, members: list[str] | None = None) -> tuple[str, str, dict]:
    """MySQL type text → (COLUMN_TYPE, DATA_TYPE, numeric/char facts) as information_schema reports them.

    Checked against MariaDB 10.11 discovery (``cdc_core.mysql.discovery``) for every type in
    ``tests/binlog/test_ddl_stream.py``; ``mariadb`` is reserved for spellings where servers differ.
    ``members`` are an ENUM/SET's members as the tokenizer decoded them (escapes and either quote
    style resolved); the type text alone cannot be read back reliably for them.
    """
    text = " ".join(raw.split())
    m = re.match(r"(?is)^\s*([a-z_][a-z0-9_]*(?:\s+(?:precision|varying|varchar|varbinary|character|char)\b){0,2})"
                 r"\s*(\((?:[^()']|'(?:[^']|'')*')*\))?\s*(.*)$", text)
    if not m:
        raise DdlSyntaxError(f"cannot read column type {raw!r}")
    name = m.group(1).lower()
    params = m.group(2) or ""
    rest = (m.group(3) or "").lower().split()
    words = name.split()
    if words[0] in ("national", "nchar", "char", "character") and len(words) > 1:
        # NATIONAL CHAR[ACTER] [VARYING], NATIONAL VARCHAR, NCHAR VARCHAR|VARYING, CHAR[ACTER] VARYING
        name = "varchar" if {"varying", "varchar"} & set(words[1:]) else "char"
    elif words[0] == "national":
        name = "char"
    elif words[0] == "long" and len(words) > 1:
        name = "mediumblob" if words[1] == "varbinary" else "mediumtext"
    else:
        name = words[0]
    if name not in ("enum", "set"):
        params = re.sub(r"\s+", "", params)  # INT ( 11 ) is int(11)
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
        nums = _lengths(params)
        p = nums[0] if nums and nums[0] else 10  # DECIMAL(0) and DECIMAL(0.5) are DECIMAL(10,0)
        s = nums[1] if len(nums) > 1 else 0
        params = f"({p},{s})"
        facts.update(numeric_precision=p, numeric_scale=s)
    elif name in ("char", "binary", "bit") and not params:
        params = "(1)"
    elif name == "year":
        params = "(4)"
    elif name in ("float", "double"):
        nums = [str(n) for n in _lengths(params)]
        if name == "float" and len(nums) == 1:
            # FLOAT(p): a precision in bits, not a display width. MySQL stores FLOAT for p <= 24 and
            # DOUBLE for 25..53, and shows neither with a parameter (FLOAT(7.4) is FLOAT(7)).
            p = int(nums[0])
            if p > 53:
                raise DdlSyntaxError(f"FLOAT({p}): the precision must be at most 53")
            name, params, nums = ("float" if p <= 24 else "double"), "", []
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
        if members is not None:
            # MySQL strips trailing spaces from members; COLUMN_TYPE doubles quotes and backslashes.
            values = [m.rstrip(" ") for m in members]
            params = "(" + ",".join("'" + v.replace("\\", "\\\\").replace("'", "''") + "'" for v in values) + ")"
        else:
            params = normalise_value_list(params)
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


def _lengths(params: str) -> list[int]:
    """``(19)``, ``(10,2)``, ``(19.5)`` → the numbers as the server reads them: a decimal literal
    stands for its integer part (MariaDB stores ``DECIMAL(19.5)`` as ``decimal(19,0)``)."""
    return [int(part.split(".")[0] or 0) for part in params.strip("()").split(",") if part.strip()]


def normalise_value_list(params: str) -> str:
    """``('a', 'b')`` → ``('a','b')``: the value list of an ENUM/SET as COLUMN_TYPE spells it."""
    values = re.findall(r"'((?:[^'\\]|''|\\.)*)'", params)
    return "(" + ",".join(f"'{v}'" for v in values) + ")"


# The most bytes one character takes in each character set (``SHOW CHARACTER SET``'s Maxlen).
MAX_BYTES_PER_CHAR = {
    "armscii8": 1, "ascii": 1, "big5": 2, "binary": 1, "cp1250": 1, "cp1251": 1, "cp1256": 1, "cp1257": 1,
    "cp850": 1, "cp852": 1, "cp866": 1, "cp932": 2, "dec8": 1, "eucjpms": 3, "euckr": 2, "gb18030": 4,
    "gb2312": 2, "gbk": 2, "geostd8": 1, "greek": 1, "hebrew": 1, "hp8": 1, "keybcs2": 1, "koi8r": 1,
    "koi8u": 1, "latin1": 1, "latin2": 1, "latin5": 1, "latin7": 1, "macce": 1, "macroman": 1, "sjis": 2,
    "swe7": 1, "tis620": 1, "ucs2": 2, "ujis": 3, "utf16": 4, "utf16le": 4, "utf32": 4, "utf8mb3": 3,
    "utf8mb4": 4,
}
_LOB_SIZES = tuple(_LOB_LENGTH.items())  # ("tiny", 255), ("", 65535), ("medium", ...), ("long", ...)
_TEXTS = {f"{size}text": size for size, _ in _LOB_SIZES}
_MAX_VARCHAR_BYTES = 65535


def _lob_size_for(nbytes: int) -> tuple[str, int]:
    """The smallest TEXT/BLOB size whose length bytes can record ``nbytes``."""
    for size, length in _LOB_SIZES:
        if nbytes <= length:
            return size, length
    return _LOB_SIZES[-1]


def converted_column(column: Column, charset: str, *, mariadb: bool = True) -> Column:
    """``column`` after ``ALTER TABLE ... CONVERT TO CHARACTER SET charset``, as the server makes it.

    Every character column (CHAR, VARCHAR, the TEXT types, ENUM, SET; JSON too on MariaDB, where it
    is a LONGTEXT) takes ``charset``. A TEXT column keeps as many characters as it held: its byte
    length divided by the old charset's bytes per character, times the new one's, picks the smallest
    TEXT type that holds it (latin1 TEXT → utf8mb4 MEDIUMTEXT; never smaller). A VARCHAR whose
    characters no longer fit 65,535 bytes becomes the TEXT type that holds them (MySQL's documented
    behaviour; strict-mode MariaDB refuses the statement instead, so it never reaches the binlog).
    ``binary`` turns CHAR, VARCHAR and TEXT into BINARY, VARBINARY and BLOB. An unknown old charset
    is taken to have as many bytes per character as the new one (no widening).
    """
    dt = column.data_type
    if dt not in STRING_TYPES or (dt == "json" and not mariadb):
        return column
    new_max = MAX_BYTES_PER_CHAR.get(charset)
    if new_max is None:
        raise DdlSyntaxError(f"CONVERT TO CHARACTER SET {charset}: unknown character set")
    old_max = MAX_BYTES_PER_CHAR.get((column.charset or "").lower(), new_max)
    if dt in _TEXTS or dt == "json":
        size, length = _lob_size_for((_LOB_LENGTH[_TEXTS.get(dt, "long")] // old_max) * new_max)
        if charset == "binary":
            return replace(column, column_type=f"{size}blob", data_type=f"{size}blob", charset=None,
                           char_length=length)
        if dt == "json":
            return replace(column, charset=charset)
        return replace(column, column_type=f"{size}text", data_type=f"{size}text", charset=charset,
                       char_length=length)
    if dt == "varchar" and column.char_length is not None and column.char_length * new_max > _MAX_VARCHAR_BYTES:
        size, length = _lob_size_for(column.char_length * new_max)
        if charset == "binary":
            return replace(column, column_type=f"{size}blob", data_type=f"{size}blob", charset=None,
                           char_length=length)
        return replace(column, column_type=f"{size}text", data_type=f"{size}text", charset=charset,
                       char_length=length)
    if charset == "binary" and dt in ("char", "varchar"):
        binary = "binary" if dt == "char" else "varbinary"
        return replace(column, column_type=binary + column.column_type[len(dt):], data_type=binary, charset=None)
    return replace(column, charset=charset)
