"""DDL spellings the corpus measurement (tests/tools/ddl_corpus.py) found read differently from
MariaDB, each checked against the real server: the statement runs on MariaDB, and the schema our
parser's events give must equal what ``information_schema`` reads back (columns in order, types,
nullability, charsets, primary key).
"""

from __future__ import annotations

import pytest

from cdc_core.model.schema import TableId, TableSchema
from cdc_core.model.schema_changes import apply_schema_change
from cdc_core.mysql.ddl import MySqlDdlParser
from cdc_core.mysql.discovery import read_table_schema
from tests.schema.helpers import sql


def _facts(schema: TableSchema, db_charset: str) -> tuple:
    return (tuple((c.name, c.column_type, c.data_type, c.nullable,
                   c.charset or (db_charset if c.char_length is not None and "blob" not in c.data_type
                                 and "binary" not in c.data_type else None))
                  for c in schema.columns), schema.primary_key)


def _carry(root_conn, db: str, *statements: str) -> tuple[tuple, tuple]:
    """Run ``statements`` on MariaDB and through the parser; (ours, MariaDB's) for table ``t``."""
    t = TableId(db, "t")
    parser = MySqlDdlParser()
    state: dict[TableId, TableSchema] = {}
    for statement in statements:
        sql(root_conn, f"USE `{db}`", statement)
        for event in parser.parse_captured(statement, db, lambda _t: True, state.get):
            for table, schema in apply_schema_change(state.get(event.table_id), event).items():  # strict
                state.pop(table, None)
                if schema is not None:
                    state[table] = schema
    ours = state.get(t)
    with root_conn.cursor() as cur:
        cur.execute("SELECT DEFAULT_CHARACTER_SET_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = %s",
                    (db,))
        db_charset = cur.fetchone()[0]
    assert ours is not None
    return _facts(ours, db_charset), _facts(read_table_schema(root_conn, t), db_charset)


@pytest.mark.parametrize("ddl", [
    "CREATE TABLE t (id INT ( 11 ) NOT NULL PRIMARY KEY, v VARCHAR ( 20 ), d DECIMAL ( 12 , 3 ))",
    "CREATE TABLE t (id INT PRIMARY KEY, f1 FLOAT(7.4), f2 FLOAT(30.2), d1 DECIMAL(19.5), d2 DECIMAL(0.3), "
    "d3 DECIMAL(0))",
])
def test_type_parameters_spaced_or_written_as_decimals(ddl, root_conn, fresh_db):
    """Spaces inside a type's parentheses, and a length written as a decimal literal (the server
    takes its integer part; a zero DECIMAL precision is the default 10)."""
    ours, mariadb = _carry(root_conn, fresh_db, ddl)
    assert ours == mariadb


def test_national_and_varying_character_types(root_conn, fresh_db):
    ours, mariadb = _carry(root_conn, fresh_db,
                           "CREATE TABLE t (id INT PRIMARY KEY, a NATIONAL CHARACTER(12), b NCHAR VARYING(5), "
                           "c NATIONAL CHAR VARYING(6), d CHAR VARYING(7), e NCHAR VARCHAR(8), "
                           "f NATIONAL CHARACTER VARYING(9), g CHARACTER VARYING(3), h CHAR CHARACTER SET latin1)")
    assert ours == mariadb
    assert [c[1] for c in ours[0]][1:4] == ["char(12)", "varchar(5)", "varchar(6)"]


def test_serial_default_value_makes_the_column_not_null(root_conn, fresh_db):
    ours, mariadb = _carry(root_conn, fresh_db, "CREATE TABLE t (id SMALLINT SERIAL DEFAULT VALUE, v INT, "
                                                "PRIMARY KEY (v))")
    assert ours == mariadb
    assert ours[0][0][3] is False  # id NOT NULL


@pytest.mark.parametrize("add", [
    "ADD (PRIMARY KEY pk_name (id), k INT NOT NULL, INDEX ik (k))",
    "ADD (CONSTRAINT c PRIMARY KEY (k, id), k INT NOT NULL)",
])
def test_a_primary_key_inside_a_parenthesised_add_list(add, root_conn, fresh_db):
    """``ALTER TABLE t ADD (col ..., PRIMARY KEY ...)``: the key is declared there too."""
    ours, mariadb = _carry(root_conn, fresh_db, "CREATE TABLE t (id BIGINT NOT NULL, v VARCHAR(4))",
                           f"ALTER TABLE t {add}")
    assert ours == mariadb
    assert ours[1] in (("id",), ("k", "id"))


def test_set_statement_for_carries_the_ddl_after_for(root_conn, fresh_db):
    """MariaDB's ``SET STATEMENT var = value FOR statement``: the binlog carries the whole text."""
    ours, mariadb = _carry(root_conn, fresh_db,
                           "SET STATEMENT max_statement_time = 60, sql_mode = 'STRICT_ALL_TABLES' FOR "
                           "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(3))",
                           "SET STATEMENT lock_wait_timeout = 5 FOR ALTER TABLE t ADD w INT FIRST")
    assert ours == mariadb
    assert [c[0] for c in ours[0]] == ["w", "id", "v"]


def test_mariadb_json_spelled_as_longtext_with_a_json_valid_check(root_conn, fresh_db):
    """``SHOW CREATE TABLE`` on MariaDB spells JSON as LONGTEXT + CHECK (json_valid(col)); a table
    created from that text is read as JSON, as discovery reads it."""
    ours, mariadb = _carry(root_conn, fresh_db,
                           "CREATE TABLE t (id INT PRIMARY KEY, `j` longtext CHARACTER SET utf8mb4 COLLATE "
                           "utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)), k LONGTEXT CHECK (length(k) > 1))")
    assert ours == mariadb
    assert [c[2] for c in ours[0]] == ["int", "json", "longtext"]


def test_if_exists_on_a_table_that_does_not_exist_changes_nothing(root_conn, fresh_db):
    """``ALTER TABLE IF EXISTS`` and ``RENAME TABLE IF EXISTS`` on a missing table: the server does
    nothing (a warning), so neither do we; the existing table of the same statement is renamed."""
    ours, mariadb = _carry(root_conn, fresh_db,
                           "CREATE TABLE t0 (id INT PRIMARY KEY, v INT)",
                           "ALTER TABLE IF EXISTS missing ADD z INT, MODIFY COLUMN IF EXISTS v TEXT",
                           "RENAME TABLE IF EXISTS missing TO elsewhere, t0 TO t")
    assert ours == mariadb
    assert [c[0] for c in ours[0]] == ["id", "v"]


def test_integer_and_decimal_defaults_are_stored_as_numbers(root_conn, fresh_db):
    """A quoted, spaced, exponent or TRUE/FALSE default of an integer or DECIMAL column is the
    number MariaDB stores (the value an added column's existing rows take in Doris too)."""
    sql(root_conn, f"USE `{fresh_db}`")
    ddl = ("CREATE TABLE t (id INT PRIMARY KEY, a INT DEFAULT ' 7 ', b BIGINT DEFAULT 1E10, c TINYINT DEFAULT TRUE, "
           "d SMALLINT DEFAULT '-2.5', e DECIMAL(8,2) DEFAULT ' 3.145', f DECIMAL(5,0) DEFAULT '0', "
           "g DATETIME(6) DEFAULT NOW(6), h INT UNSIGNED DEFAULT FALSE)")
    sql(root_conn, ddl)
    events = MySqlDdlParser().parse_captured(ddl, fresh_db, lambda _t: True, lambda _t: None)
    ours = {c.name: c.default for c in events[0].schema.columns}
    mariadb = {c.name: c.default for c in read_table_schema(root_conn, TableId(fresh_db, "t")).columns}
    mariadb["id"] = None if mariadb["id"] in (None, "NULL") else mariadb["id"]
    assert ours == mariadb
    assert ours["a"] == "7" and ours["d"] == "-3" and ours["e"] == "3.15" and ours["g"] == "current_timestamp(6)"


def test_the_ascii_unicode_and_byte_column_attributes(root_conn, fresh_db):
    """``CHAR(n) BYTE`` is ``BINARY(n)``, ``UNICODE`` is ucs2, ``ASCII`` latin1 (corpus ``mt_ctype_many``:
    the history read them as the table's charset, so the table never matched the server's again and its
    keyless reload at a RENAME never came)."""
    ours, mariadb = _carry(root_conn, fresh_db,
                           "CREATE TABLE t (id INT PRIMARY KEY, b CHAR(1) BYTE NOT NULL DEFAULT '', "
                           "u CHAR(32) UNICODE, a VARCHAR(3) ASCII, c CHAR(2) BINARY) CHARSET latin2",
                           "ALTER TABLE t ADD u2 CHAR(4) CHARACTER SET ucs2",
                           "ALTER TABLE t CHANGE u2 u2 CHAR(32) UNICODE NOT NULL, ADD b2 VARCHAR(5) BYTE")
    assert ours == mariadb
