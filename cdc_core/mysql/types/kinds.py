"""Reading a MySQL column type: its conversion family and the parameters in its COLUMN_TYPE.

Every other module of ``cdc_core.mysql.types`` starts from :func:`kind_of`; the helpers below
read the numbers (precision, scale, fractional seconds, BIT width, length, ENUM/SET members)
from ``information_schema`` facts when discovery has them and from COLUMN_TYPE otherwise.
"""

from __future__ import annotations

import re
from enum import StrEnum
from functools import lru_cache

from cdc_core.model.schema import Column


class TypeKind(StrEnum):
    """The conversion families (strings, so they print well in errors)."""

    BOOL = "bool"
    INT = "int"
    UINT64 = "uint64"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"
    BIT = "bit"
    YEAR = "year"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    STRING = "string"
    ENUM = "enum"
    SET = "set"
    BINARY = "binary"
    JSON = "json"
    GEOMETRY = "geometry"
    UUID = "uuid"  # MariaDB 10.7+
    INET6 = "inet6"  # MariaDB 10.5+
    INET4 = "inet4"  # MariaDB 10.10+


_INT_TYPES = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
_STRING_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}
_BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_SPATIAL_TYPES = {
    "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
    "geometrycollection", "geomcollection",
}

# MariaDB's fixed-binary types: stored as bytes, read as their text (``fixed_binary``).
_FIXED_BINARY_TYPES = {"uuid", "inet6", "inet4"}
FIXED_BINARY_KINDS = frozenset({TypeKind.UUID, TypeKind.INET6, TypeKind.INET4})


def base_type(column: Column) -> str:
    """DATA_TYPE, lower case (``varchar``), from the column type when discovery gave none."""
    return (column.data_type or column.column_type.split("(")[0].split()[0]).lower()


def is_tinyint1(column: Column) -> bool:
    """Signed TINYINT(1), MySQL's spelling of a boolean."""
    ct = column.column_type.lower().replace(" ", "")
    return ct.startswith("tinyint(1)") and "unsigned" not in ct


def kind_of(column: Column, *, tinyint1_as_boolean: bool = True) -> TypeKind:
    """Which conversion family a column belongs to (see the table in ``cdc_core.mysql.types``)."""
    base = base_type(column)
    if base in _INT_TYPES:
        if base == "tinyint" and tinyint1_as_boolean and is_tinyint1(column):
            return TypeKind.BOOL
        if base == "bigint" and column.unsigned:
            return TypeKind.UINT64
        return TypeKind.INT
    if base in ("bool", "boolean"):
        return TypeKind.BOOL
    if base == "float":
        return TypeKind.FLOAT
    if base in ("double", "real", "double precision"):
        return TypeKind.DOUBLE
    if base in ("decimal", "numeric", "fixed"):
        return TypeKind.DECIMAL
    if base == "bit":
        return TypeKind.BIT
    if base == "year":
        return TypeKind.YEAR
    if base == "date":
        return TypeKind.DATE
    if base == "datetime":
        return TypeKind.DATETIME
    if base == "timestamp":
        return TypeKind.TIMESTAMP
    if base == "time":
        return TypeKind.TIME
    if base in _STRING_TYPES:
        return TypeKind.STRING
    if base == "enum":
        return TypeKind.ENUM
    if base == "set":
        return TypeKind.SET
    if base in _BINARY_TYPES:
        return TypeKind.BINARY
    if base == "json":
        return TypeKind.JSON
    if base in _SPATIAL_TYPES:
        return TypeKind.GEOMETRY
    if base in _FIXED_BINARY_TYPES:
        return TypeKind(base)
    raise ValueError(f"column {column.name!r} has a MySQL type Tidemark cannot convert: {column.column_type!r}")


def paren_numbers(column: Column) -> list[int]:
    """The numbers in the parentheses of COLUMN_TYPE: ``decimal(10,2)`` → [10, 2]."""
    m = re.search(r"\(([\d,\s]+)\)", column.column_type)
    return [int(x) for x in m.group(1).split(",")] if m else []


def precision_scale(column: Column) -> tuple[int, int]:
    """DECIMAL (p, s): information_schema's facts first, then COLUMN_TYPE, then MySQL's (10, 0)."""
    nums = paren_numbers(column)
    p = column.numeric_precision if column.numeric_precision is not None else (nums[0] if nums else 10)
    s = column.numeric_scale if column.numeric_scale is not None else (nums[1] if len(nums) > 1 else 0)
    return int(p), int(s)


def fsp_of(column: Column) -> int:
    """Fractional-second digits of a DATETIME / TIMESTAMP / TIME column (0-6)."""
    if column.datetime_precision is not None:
        return int(column.datetime_precision)
    nums = paren_numbers(column)
    return nums[0] if nums else 0


def bit_width(column: Column) -> int:
    """n of BIT(n)."""
    nums = paren_numbers(column)
    if nums:
        return nums[0]
    return int(column.numeric_precision or 1)


def char_length(column: Column) -> int:
    """Characters of CHAR/VARCHAR (bytes of BINARY/VARBINARY)."""
    if column.char_length is not None:
        return int(column.char_length)
    nums = paren_numbers(column)
    return nums[0] if nums else 1


@lru_cache(maxsize=4096)
def members_of(column_type: str) -> tuple[str, ...]:
    """ENUM / SET members in definition order, from ``set('a','b''c')``."""
    inner = column_type[column_type.index("(") + 1 : column_type.rindex(")")]
    return tuple(m.replace("''", "'").replace("\\\\", "\\") for m in re.findall(r"'((?:[^']|'')*)'", inner))
