"""Doris column types: parsing, normalisation and their DuckDB / Arrow / catalog renderings.

Doris 2.x silently upgrades legacy types at CREATE time (``DECIMAL`` -> ``DECIMALV3``, ``DATE`` ->
``DATEV2``, ``DATETIME`` -> ``DATETIMEV2(0)``), so the stand-in stores the upgraded form and every
view of the catalog (``_schema``, ``SHOW FULL COLUMNS``, ``information_schema``) derives from it.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import pyarrow as pa

_ALIASES = {
    "INTEGER": "INT",
    "BOOL": "BOOLEAN",
    "DATE": "DATEV2",
    "DATETIME": "DATETIMEV2",
    "DECIMAL": "DECIMALV3",
    "TEXT": "STRING",
    "JSON": "JSONB",
    "REAL": "FLOAT",
}

INTEGER_TYPES = {"TINYINT", "SMALLINT", "INT", "BIGINT", "LARGEINT"}
STRING_TYPES = {"CHAR", "VARCHAR", "STRING"}
# BE config string_type_length_soft_limit_bytes (its default): the longest STRING value a load stores
STRING_LIMIT_BYTES = 1_048_576
SUPPORTED = INTEGER_TYPES | STRING_TYPES | {
    "BOOLEAN", "FLOAT", "DOUBLE", "DECIMALV3", "DATEV2", "DATETIMEV2", "JSONB",
}

_TYPE_RE = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


class TypeError_(ValueError):
    """A type string Doris would reject (or the stand-in cannot store)."""


@dataclass(frozen=True)
class DorisType:
    """A normalised Doris column type."""

    name: str
    length: int | None = None  # CHAR/VARCHAR byte length
    precision: int | None = None  # DECIMALV3 precision, DATETIMEV2 fractional digits
    scale: int | None = None  # DECIMALV3 scale

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def parse(text: str) -> DorisType:
        """Parse ``VARCHAR(10)``, ``DECIMALV3(10, 2)``, ``DATETIMEV2(3)``, ``INT(11)`` ... into a type.

        Cached by text (a type is immutable): ``Column.dtype`` parses its column's type at every
        access, some thirty times a load, a tenth of a small load's CPU."""
        m = _TYPE_RE.match(text)
        if not m:
            raise TypeError_(f"Unsupported data type: {text}")
        raw, a, b = m.group(1).upper(), m.group(2), m.group(3)
        name = _ALIASES.get(raw, raw)
        if name not in SUPPORTED:
            raise TypeError_(f"Unsupported data type: {text}")
        if name in ("CHAR", "VARCHAR"):
            default = 1 if name == "CHAR" else 65533
            length = int(a) if a else default
            limit = 255 if name == "CHAR" else 65533
            if length < 1 or length > limit:
                raise TypeError_(f"{name} size must be between 1 and {limit}: {length}")
            return DorisType(name, length=length)
        if name == "DECIMALV3":
            p = int(a) if a else 9
            s = int(b) if b else 0
            if not 1 <= p <= 38:
                raise TypeError_(f"Decimal precision must be between 1 and 38: {p}")
            if s > p:
                raise TypeError_(f"Scale of decimal must not be greater than precision: {s} > {p}")
            return DorisType(name, precision=p, scale=s)
        if name == "DATETIMEV2":
            p = int(a) if a else 0
            if not 0 <= p <= 6:
                raise TypeError_(f"Scale of Datetime/Time must between 0 and 6. Scale was set to: {p}")
            return DorisType(name, precision=p)
        return DorisType(name)  # INT(11) style display widths are ignored, as Doris does

    # ---- renderings -------------------------------------------------------------------------
    def sql(self) -> str:
        """Doris DDL spelling (what SHOW CREATE TABLE prints)."""
        if self.name in ("CHAR", "VARCHAR"):
            return f"{self.name.lower()}({self.length})"
        if self.name == "DECIMALV3":
            return f"decimal({self.precision},{self.scale})"
        if self.name == "DATETIMEV2":
            return f"datetime({self.precision})" if self.precision else "datetime"
        return {"DATEV2": "date", "STRING": "text", "JSONB": "json"}.get(self.name, self.name.lower())

    def primitive(self) -> str:
        """``PrimitiveType`` name as ``GET /api/{db}/{t}/_schema`` reports it."""
        if self.name == "DECIMALV3":
            p = self.precision or 9
            return "DECIMAL32" if p <= 9 else "DECIMAL64" if p <= 18 else "DECIMAL128"
        return self.name

    def data_type(self) -> str:
        """information_schema ``DATA_TYPE`` (lower case, no parameters)."""
        return {
            "DECIMALV3": "decimal", "DATEV2": "date", "DATETIMEV2": "datetime", "STRING": "text",
            "JSONB": "json",
        }.get(self.name, self.name.lower())

    def column_type(self) -> str:
        """information_schema ``COLUMN_TYPE`` / SHOW COLUMNS ``Type``."""
        return self.sql()

    def meta_name(self) -> str:
        """Type name in the query API ``meta`` list (the JDBC column type name)."""
        return {
            "DECIMALV3": "DECIMAL", "DATEV2": "DATE", "DATETIMEV2": "DATETIME", "STRING": "VARCHAR",
            "JSONB": "JSON",
        }.get(self.name, self.name)

    def duck(self) -> str:
        """DuckDB storage type (lossless for every supported Doris type)."""
        return {
            "BOOLEAN": "BOOLEAN", "TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INT": "INTEGER",
            "BIGINT": "BIGINT", "LARGEINT": "HUGEINT", "FLOAT": "REAL", "DOUBLE": "DOUBLE",
            "DATEV2": "DATE", "DATETIMEV2": "TIMESTAMP", "CHAR": "VARCHAR", "VARCHAR": "VARCHAR",
            "STRING": "VARCHAR", "JSONB": "VARCHAR",
        }.get(self.name) or f"DECIMAL({self.precision},{self.scale})"

    def arrow_hint(self) -> pa.DataType:
        """Arrow type used for the fast JSON parse (the spelling JSON writers usually use)."""
        if self.name in ("TINYINT", "SMALLINT", "INT", "BIGINT"):
            return pa.int64()
        if self.name in ("FLOAT", "DOUBLE"):
            return pa.float64()
        if self.name == "DECIMALV3":
            return pa.decimal128(self.precision or 9, self.scale or 0)
        if self.name == "BOOLEAN":
            return pa.bool_()
        return pa.utf8()

    def is_string(self) -> bool:
        return self.name in STRING_TYPES

    def char_max_length(self) -> int | None:
        if self.name in ("CHAR", "VARCHAR"):
            return self.length
        if self.name == "STRING":
            return 2147483643
        return None

    def convert_sql(self, expr: str, src: pa.DataType | None = None) -> str:
        """SQL turning a raw staged value into this type; NULL where Doris' conversion fails.

        ``src`` (the Arrow type of the source column, when known) lets already-typed input skip the
        string-oriented checks — the difference between Arrow/typed JSON and CSV speed.
        """
        if src is not None:
            if self.name in INTEGER_TYPES and pa.types.is_integer(src):
                return f"TRY_CAST({expr} AS {self.duck()})"
            if self.name == "DATETIMEV2" and pa.types.is_timestamp(src) and src.tz is None:
                digits = {"s": 0, "ms": 3, "us": 6, "ns": 9}[src.unit]
                if digits <= (self.precision or 0):
                    return f"CAST({expr} AS TIMESTAMP)"
            if self.name in ("VARCHAR", "CHAR", "STRING") and (pa.types.is_string(src) or pa.types.is_large_string(src)):
                return f"CAST({expr} AS VARCHAR)"
        if self.name == "DATETIMEV2":
            base = f"TRY_CAST({expr} AS TIMESTAMP)"
            p = self.precision or 0
            if p >= 6:
                return base
            unit = 10 ** (6 - p)
            return f"make_timestamp((epoch_us({base}) // {unit}) * {unit})"
        if self.name == "DATEV2":
            return f"TRY_CAST(TRY_CAST({expr} AS TIMESTAMP) AS DATE)"
        if self.name == "JSONB":
            v = f"TRY_CAST({expr} AS VARCHAR)"
            return f"CASE WHEN json_valid({v}) THEN {v} END"
        if self.name == "BOOLEAN":
            v = f"lower(trim(TRY_CAST({expr} AS VARCHAR)))"
            return (f"CASE WHEN {v} IN ('true','1') THEN TRUE WHEN {v} IN ('false','0') THEN FALSE "
                    f"ELSE TRY_CAST({expr} AS BOOLEAN) END")
        if self.name in INTEGER_TYPES:
            # Doris rejects fractional input for integers rather than truncating it.
            d = self.duck()
            return f"CASE WHEN TRY_CAST({expr} AS DOUBLE) = TRY_CAST({expr} AS {d}) OR TRY_CAST({expr} AS DOUBLE) IS NULL THEN TRY_CAST({expr} AS {d}) END"
        return f"TRY_CAST({expr} AS {self.duck()})"


def quote_ident(name: str) -> str:
    """DuckDB identifier quoting."""
    return '"' + name.replace('"', '""') + '"'


def quote_str(value: str) -> str:
    """SQL string literal."""
    return "'" + value.replace("'", "''") + "'"
