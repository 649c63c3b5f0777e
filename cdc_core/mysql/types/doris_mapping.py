"""A MySQL column → its Doris column type, and the Arrow type of its converted values.

Flink CDC's MySQL → Doris mapping (``DorisTypeMapper``), with the choices listed in the table of
``cdc_core.mysql.types`` where Flink is silent or lossy.
"""

from __future__ import annotations

import pyarrow as pa

from cdc_core.model.schema import Column
from cdc_core.mysql.types.fixed_binary import TEXT_WIDTH
from cdc_core.mysql.types.kinds import (
    FIXED_BINARY_KINDS,
    TypeKind,
    base_type,
    bit_width,
    char_length,
    fsp_of,
    kind_of,
    precision_scale,
)


def doris_type(column: Column, *, tinyint1_as_boolean: bool = True) -> str:
    """The Doris column type for a MySQL column (used by the sink's CREATE TABLE / ALTER)."""
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    base = base_type(column)
    if kind == TypeKind.BOOL:
        return "BOOLEAN"
    if kind == TypeKind.INT:
        unsigned = column.unsigned
        return {
            ("tinyint", False): "TINYINT",
            ("tinyint", True): "SMALLINT",
            ("smallint", False): "SMALLINT",
            ("smallint", True): "INT",
            ("mediumint", False): "INT",
            ("mediumint", True): "INT",
            ("int", False): "INT",
            ("int", True): "BIGINT",
            ("integer", False): "INT",
            ("integer", True): "BIGINT",
            ("bigint", False): "BIGINT",
        }[(base, unsigned)]
    if kind == TypeKind.UINT64:
        # LARGEINT, not Flink's DECIMALV3(20,0): Doris widens BIGINT (INT UNSIGNED, BIGINT) to LARGEINT
        # but refuses any integer to DECIMALV3, so INT/BIGINT → BIGINT UNSIGNED stays a schema change
        # Doris makes (cdc_core/doris/type_changes.py).
        return "LARGEINT"
    if kind == TypeKind.FLOAT:
        return "FLOAT"
    if kind == TypeKind.DOUBLE:
        return "DOUBLE"
    if kind == TypeKind.DECIMAL:
        p, s = precision_scale(column)
        return f"DECIMALV3({p},{s})" if p <= 38 else "STRING"
    if kind == TypeKind.BIT:
        n = bit_width(column)
        return "BOOLEAN" if n == 1 else ("BIGINT" if n <= 63 else "LARGEINT")
    if kind == TypeKind.YEAR:
        return "INT"
    if kind == TypeKind.DATE:
        return "DATEV2"
    if kind in (TypeKind.DATETIME, TypeKind.TIMESTAMP):
        return f"DATETIMEV2({min(max(fsp_of(column), 0), 6)})"
    if kind == TypeKind.STRING and base in ("char", "varchar"):
        per_char = 4 if (column.charset or "utf8mb4").lower().startswith("utf8mb4") else 3
        # CHAR(0) / VARCHAR(0) hold only '' or NULL; Doris sizes start at 1.
        n = max(char_length(column) * per_char, 1)
        if base == "char" and n <= 255:
            return f"CHAR({n})"
        return f"VARCHAR({n})" if n < 65533 else "STRING"
    if kind == TypeKind.JSON:
        return "JSONB"
    if kind in FIXED_BINARY_KINDS:
        # The text's longest form (ASCII, so characters = bytes): exact, and usable as a key.
        return f"VARCHAR({TEXT_WIDTH[str(kind)]})"
    return "STRING"


def doris_arrow_type(column: Column, *, tinyint1_as_boolean: bool = True) -> pa.DataType:
    """The Arrow type of a converted column (what :func:`arrow_to_doris` produces)."""
    kind = kind_of(column, tinyint1_as_boolean=tinyint1_as_boolean)
    if kind == TypeKind.BOOL:
        return pa.bool_()
    if kind in (TypeKind.INT, TypeKind.YEAR):
        return pa.int64()
    if kind == TypeKind.UINT64:
        return pa.uint64()
    if kind in (TypeKind.FLOAT, TypeKind.DOUBLE):
        return pa.float64()
    if kind == TypeKind.BIT:
        n = bit_width(column)
        return pa.bool_() if n == 1 else (pa.int64() if n <= 63 else pa.uint64())
    return pa.string()
