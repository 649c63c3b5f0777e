"""A column's type text → MySQL's own ``COLUMN_TYPE``, ``DATA_TYPE`` and the numeric/char facts.

The schema history holds what ``information_schema.COLUMNS`` would report for the column, so a
column added by DDL looks exactly like one found by discovery: aliases resolved (``integer`` →
``int``, ``numeric`` → ``decimal``), default display widths filled in (``int`` → ``int(11)``),
``TEXT(n)`` sized, ENUM/SET lists normalised. New type spellings are added here.
"""

from __future__ import annotations

import re

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
    m = re.match(r"(?is)^\s*([a-z_][a-z0-9_]*(?:\s+(?:precision|varying|varchar|varbinary|char|character))?)"
                 r"\s*(\((?:[^()']|'(?:[^']|'')*')*\))?\s*(.*)$", text)
    if not m:
        raise DdlSyntaxError(f"cannot read column type {raw!r}")
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
        if name == "float" and len(nums) == 1:
            # FLOAT(p): a precision in bits, not a display width. MySQL stores FLOAT for p <= 24 and
            # DOUBLE for 25..53, and shows neither with a parameter.
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


def normalise_value_list(params: str) -> str:
    """``('a', 'b')`` → ``('a','b')``: the value list of an ENUM/SET as COLUMN_TYPE spells it."""
    values = re.findall(r"'((?:[^'\\]|''|\\.)*)'", params)
    return "(" + ",".join(f"'{v}'" for v in values) + ")"
