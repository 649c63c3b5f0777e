"""The charset decoders without a server: the values issue 26 met, the tables' shape, the refusals.

The whole of every table is checked against the live server in ``test_charsets.py``.
"""

from __future__ import annotations

import pytest

from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.types import DorisValueConverter
from cdc_core.mysql.types.charset_tables import CODEC, LENGTHS, SINGLE_BYTE
from cdc_core.mysql.types.charsets import UndecodableTextError, charset_problems, decode_text, decoder_for
from cdc_core.pipeline.planning import check_charsets


def _column(charset: str | None, name: str = "c") -> Column:
    return Column(name, "varchar(200)", "varchar", True, charset=charset, char_length=200)


def test_each_single_byte_table_has_a_character_for_every_byte():
    assert len(SINGLE_BYTE) == 25  # MariaDB 10.11: every charset of one byte but binary
    for name, table in SINGLE_BYTE.items():
        assert len(table) == 256, name
        assert table[:0x80].replace("?", "") == "".join(chr(b) for b in range(0x80) if b != 0x3F) \
            or name == "swe7", name  # ASCII as ASCII (swe7 puts Swedish letters at 0x5B-0x7E)


def test_the_values_the_issue_met_arrive_as_written():
    """macce 'ÖŐÔÓ' arrived as '����' by the binlog; MySQL's latin1 fills Windows-1252's holes."""
    assert decode_text(bytes([0x85, 0xCC, 0xEF, 0xEE]), _column("macce")) == "ÖŐÔÓ"
    assert decode_text(b"\x81\x8d\x8f\x90\x9d\x80", _column("latin1")) == "\x81\x8d\x8f\x90\x9d€"
    assert decode_text("Привет".encode("koi8_r"), _column("koi8r")) == "Привет"
    assert decode_text("Ґанок".encode("koi8_u"), _column("koi8u")) == "Ґанок"
    assert decode_text("日本".encode("utf-16-le"), _column("utf16le")) == "日本"
    assert decode_text(b"\xb2\xe2\xca\xd4", _column("gbk")) == "测试"
    assert decode_text(b"a\x8f\xa2\xb7b", _column("eucjpms")) == "a～b"  # IBM extension (no Python codec)
    assert decode_text(b"\xa1\x40", _column("gbk")) == "?"  # a user-defined code MariaDB reads as '?'


def test_python_codecs_of_the_same_name_are_not_used_where_they_differ():
    assert decoder_for("cp866")(b"\xfc") == "ⁿ"  # Python's cp866: '№'
    assert decoder_for("greek")(b"\xa1") == "ʽ"  # Python's iso8859-7: '‘'
    assert decoder_for("koi8u")(b"\x95") == "•"  # Python's koi8_u: '∙'


def test_the_converter_decodes_string_bytes_with_the_column_charset():
    converter = DorisValueConverter("UTC")
    assert converter(_column("macce"), bytes([0x85, 0xCC])) == "ÖŐ"


@pytest.mark.parametrize("charset, value", [
    ("gbk", b"\x81"),  # a lead byte without its second byte
    ("sjis", b"\x80"),  # no character starts with 0x80
    ("ujis", b"\x8f\xa1"),  # a three-byte sequence cut short
    ("utf8mb4", b"\xff"),
])
def test_bytes_that_are_no_text_of_the_charset_are_refused_not_replaced(charset, value):
    with pytest.raises(UndecodableTextError, match=f"no {charset} text.*not replaced") as raised:
        decode_text(value, _column(charset, "note"))
    assert "column 'note'" in str(raised.value)


def test_a_charset_without_a_table_is_refused_by_name_before_loading():
    schema = TableSchema(TableId("shop", "orders"), (
        Column("id", "int", "int", False), _column("gb18030", "name"), _column("utf8mb4", "ok")), ("id",))
    problems = charset_problems([schema])
    assert len(problems) == 1
    assert "shop.orders" in problems[0] and "'name'" in problems[0] and "'gb18030'" in problems[0]
    assert "utf8mb4" in problems[0] and "source.tables" in problems[0]  # the ways out
    with pytest.raises(UndecodableTextError, match="gb18030"):
        check_charsets([schema])
    with pytest.raises(UndecodableTextError, match="gb18030"):
        decoder_for("gb18030")
    check_charsets([TableSchema(schema.table_id, schema.columns[::2], ("id",))])  # the others pass


def test_every_multibyte_charset_has_its_lengths_and_a_python_codec():
    for name, codec in CODEC.items():
        assert len(LENGTHS[name]) == 256, name
        assert all(LENGTHS[name][b] == 1 for b in range(0x80)), name  # ASCII is one byte, as itself
        assert b"abc".decode(codec) == "abc"


def test_mysql_8_only_collations_and_charsets_are_utf8mb4_or_refused_by_name():
    """MariaDB 10.11 (the corpus's server) has no utf8mb4_0900_* collations and no gb18030, so the corpus
    cannot hold them: a MySQL 8 table in a 0900 collation is utf8mb4 by its DDL and by its binlog
    collation id (255 ..., decoded exactly), and a gb18030 one is refused by name (the test above)."""
    from cdc_core.mysql.ddl.column_definitions import charset_of_collation
    from cdc_core.mysql.table_map_binding import _binlog_charset

    for collation in ("utf8mb4_0900_ai_ci", "utf8mb4_0900_as_cs", "utf8mb4_0900_bin", "utf8mb4_ja_0900_as_cs"):
        assert charset_of_collation(collation) == "utf8mb4"
    for collation_id in (255, 278, 309):  # utf8mb4_0900_ai_ci, _as_cs, _bin as MySQL 8's binlog numbers them
        assert _binlog_charset(collation_id, "mysql") == "utf8mb4"
    assert _binlog_charset(248, "mysql") == "gb18030"  # then refused by name: not in supported_charsets
    assert decode_text("zażółć 😀".encode(), _column("utf8mb4", "c")) == "zażółć 😀"


def test_a_set_whose_members_differ_only_in_case_keeps_definition_order():
    """SET('a','A') (mysql-test's type_set, a case-insensitive collation): MySQL reads both members as
    'a,A'; the binlog hands Tidemark a Python set, which must not be ordered by the lower-cased name."""
    from cdc_core.mysql.binlog_values import _set
    from cdc_core.mysql.types import to_doris_value

    column = Column("s", "set('a','A')", "set", True, charset="latin1")
    for value in ({"A", "a"}, ["A", "a"], ("a", "A")):
        assert to_doris_value(column, value) == "a,A"
        assert _set(column)(value) == "a,A"
    assert to_doris_value(Column("s", "set('x','y','z')", "set", True), {"z", "x"}) == "x,z"
