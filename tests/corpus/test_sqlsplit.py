"""The corpus's statement splitter: quotes, comments, delimiters and mysqltest lines, on bytes."""

from __future__ import annotations

from tests.corpus.sqlsplit import split_sql


def _sql(data: bytes, **kw) -> list[bytes]:
    return [s.sql for s in split_sql(data, **kw)]


def test_quotes_escapes_and_comments_do_not_end_a_statement():
    data = (b"-- a comment; not a statement\n# another;\nINSERT INTO t VALUES ('a;b', \"c\\\";d\", 'e''f;');\n"
            b"/* plain; comment */\nCREATE TABLE `x;y` (a INT /* inline; */);\n")
    assert _sql(data) == [b"INSERT INTO t VALUES ('a;b', \"c\\\";d\", 'e''f;')",
                          b"CREATE TABLE `x;y` (a INT /* inline; */)"]


def test_executable_comments_stay_in_the_statement():
    data = b"INSERT INTO a VALUES (1,/*!50705 0x00,*/'x');\n/*!40101 SET NAMES utf8 */;\n"
    assert _sql(data) == [b"INSERT INTO a VALUES (1,/*!50705 0x00,*/'x')", b"/*!40101 SET NAMES utf8 */"]


def test_the_mysql_clients_delimiter_command():
    data = (b"DELIMITER ;;\nCREATE TRIGGER t AFTER INSERT ON f FOR EACH ROW BEGIN\n  INSERT INTO g VALUES (1);\nEND;;\n"
            b"DELIMITER ;\nSELECT 1;\n")
    assert _sql(data) == [b"CREATE TRIGGER t AFTER INSERT ON f FOR EACH ROW BEGIN\n  INSERT INTO g VALUES (1);\nEND",
                          b"SELECT 1"]


def test_mysqltest_lines_and_delimiter_statements():
    data = (b"--error ER_PARSE_ERROR\ncreate table t1 (a int);\n--echo # a note; here\n"
            b"delimiter |;\ncreate table t2 (b int)|\ndelimiter ;|\n--delimiter //\ninsert into t2 values (1)//\n")
    assert _sql(data, mysqltest=True) == [b"create table t1 (a int)", b"create table t2 (b int)",
                                           b"insert into t2 values (1)"]


def test_bytes_of_any_charset_pass_unchanged():
    """The split sees ASCII only: a koi8r or EUC-KR literal (no 0x5C or quote bytes in its characters)
    reaches MariaDB as the file holds it, for its ``SET NAMES`` to read."""
    koi8r = "\u0436\u0438\u0437\u043d\u044c;".encode("koi8_r")
    euckr = "\ud55c\uad6d\uc5b4".encode("euc_kr")
    data = b"SET NAMES koi8r;\nINSERT INTO t VALUES ('" + koi8r + b"', '" + euckr + b"');\n"
    assert _sql(data) == [b"SET NAMES koi8r", b"INSERT INTO t VALUES ('" + koi8r + b"', '" + euckr + b"')"]
