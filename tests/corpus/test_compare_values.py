"""The outside comparison's canonical text: docs/configuration.md's type table, applied to MySQL's and Doris's values."""

from __future__ import annotations

import base64
from decimal import Decimal

from tests.corpus.compare import Column, expected, got


def _col(data_type: str, column_type: str | None = None, *, nullable: bool = True, charset: str | None = None):
    return Column("c", data_type, column_type or data_type, nullable, charset)


def test_zero_dates_become_null_or_the_epoch():
    assert expected(_col("date"), "0000-00-00") is None
    assert expected(_col("date", nullable=False), "2001-00-00") == "1970-01-01"
    assert expected(_col("datetime", "datetime(6)", nullable=False), "0000-00-00 00:00:00.000000") \
        == "1970-01-01 00:00:00"
    assert expected(_col("datetime", "datetime(3)"), "2001-02-03 04:05:06.500") == "2001-02-03 04:05:06.5"
    assert got(_col("datetime", "datetime(3)"), "2001-02-03 04:05:06.500") == "2001-02-03 04:05:06.5"


def test_binary_values_are_base64_and_text_is_mysqls_reading():
    assert expected(_col("varbinary"), b"\x00\xff") == base64.b64encode(b"\x00\xff").decode()
    assert expected(_col("blob"), b"") == ""
    assert expected(_col("varchar", charset="binary"), b"\x80") == "gA=="
    assert expected(_col("varchar", charset="koi8r"), "\u0436") == "\u0436"


def test_numbers_compare_by_value():
    assert expected(_col("decimal", "decimal(10,2)"), Decimal("1.50")) == got(_col("decimal"), "1.5")
    assert expected(_col("decimal"), Decimal("-0.00")) == got(_col("decimal"), 0) == "0"
    assert expected(_col("float"), 0.1) == got(_col("float"), 0.10000000149011612)
    assert expected(_col("double"), 1e300) == got(_col("double"), 1e300)
    assert expected(_col("tinyint", "tinyint(1)"), 5) == got(_col("tinyint", "tinyint(1)"), True) == "true"
    assert expected(_col("bit", "bit(1)"), "1") == got(_col("bit", "bit(1)"), True) == "true"
    assert expected(_col("bit", "bit(12)"), "4095") == got(_col("bit", "bit(12)"), 4095) == "4095"
    assert expected(_col("int", "int(10) unsigned"), 4294967295) == got(_col("int"), 4294967295)


def test_a_float_is_compared_by_its_stored_float32_not_mysqls_six_digit_display():
    """MySQL shows FLOAT 1.2345678 as '1.23457' (a display); it stores, and Doris holds, the float32 nearest 1.2345678."""
    col = _col("float")
    assert col.select_expr() == "CAST(`c` AS DOUBLE)"
    stored = 1.2345677614212036  # what CAST(f AS DOUBLE) reads
    assert expected(col, stored) == got(col, 1.2345678)  # Doris answers the shortest text of the float32
    assert expected(col, 1.23457) != got(col, 1.2345678)  # the display would differ from the stored value
