"""DDL read as MySQL/MariaDB read it: one case per kind the parser used to get wrong.

Each case parses a statement against a prior schema and checks the schema that results (column
names and order, types, charsets, ENUM/SET members), as ``information_schema`` would show it.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from cdc_core.model.events import (
    AddColumnEvent,
    AlterColumnPositionEvent,
    AlterPrimaryKeyEvent,
    AlterTableCharsetEvent,
    CreateTableEvent,
    DropColumnEvent,
)
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.model.schema_changes import apply_schema_change
from cdc_core.mysql.ddl import DdlParseError, MySqlDdlParser
from cdc_core.mysql.types.kinds import members_of

T = TableId("db", "t")


def _parse(ddl: str, prior: TableSchema | None = None) -> tuple[list, TableSchema | None]:
    events = MySqlDdlParser().parse_captured(ddl, "db", lambda _t: True,
                                             lambda t: prior if prior is not None and t == prior.table_id else None)
    schema = prior
    for e in events:
        schema = apply_schema_change(schema, e)[e.table_id]  # strict: a misfit raises
    return events, schema


def _prior(*columns: Column) -> TableSchema:
    return TableSchema(T, (Column("id", "int(11)", "int", False), *columns), ("id",))


# -- FLOAT(p): a precision in bits -----------------------------------------------------------

@pytest.mark.parametrize(("declared", "column_type"), [
    ("FLOAT", "float"), ("FLOAT(10)", "float"), ("FLOAT(24)", "float"), ("FLOAT(25)", "double"),
    ("FLOAT(53)", "double"), ("FLOAT(7,3)", "float(7,3)"), ("DOUBLE", "double"), ("REAL", "double"),
])
def test_float_precision_picks_float_or_double(declared, column_type):
    _, schema = _parse(f"CREATE TABLE t (id INT PRIMARY KEY, f {declared})")
    f = schema.column("f")
    assert (f.column_type, f.data_type) == (column_type, column_type.split("(")[0])


def test_float_precision_past_53_is_refused():
    with pytest.raises(DdlParseError, match="53"):
        _parse("CREATE TABLE t (id INT PRIMARY KEY, f FLOAT(54))")


@pytest.mark.parametrize("ddl", ["ALTER TABLE t ADD g FLOAT(30)", "ALTER TABLE t MODIFY g FLOAT(40) NOT NULL"])
def test_float_precision_in_alter(ddl):
    prior = _prior(Column("g", "float", "float", True)) if "MODIFY" in ddl else _prior()
    _, schema = _parse(ddl, prior)
    assert schema.column("g").column_type == "double"


# -- ENUM / SET members: escapes and both quote styles ---------------------------------------

@pytest.mark.parametrize(("declared", "members"), [
    (r"ENUM('a\'','b','c')", ("a'", "b", "c")),
    (r"ENUM('station','a,b','c,\'b')", ("station", "a,b", "c,'b")),
    ("ENUM('it''s','x')", ("it's", "x")),
    ('ENUM("a", "b", "c")', ("a", "b", "c")),
    (r'ENUM("a\"",' + "'b','c')", ('a"', "b", "c")),
    (r"SET('x\\y','z ')", ("x\\y", "z")),  # a backslash kept; trailing spaces stripped, as MySQL does
])
def test_enum_and_set_members_are_decoded_as_mysql_decodes_them(declared, members):
    _, schema = _parse(f"CREATE TABLE t (id INT PRIMARY KEY, e {declared})")
    e = schema.column("e")
    assert members_of(e.column_type) == members
    assert e.data_type == declared.split("(")[0].lower()


def test_enum_column_type_is_written_as_information_schema_writes_it():
    _, schema = _parse(r"CREATE TABLE t (id INT PRIMARY KEY, e ENUM('it\'s', 'x\\y'))")
    assert schema.column("e").column_type == r"enum('it''s','x\\y')"


# -- character sets: table default, COLLATE, NATIONAL -----------------------------------------

@pytest.mark.parametrize(("options", "charset"), [
    ("DEFAULT CHARSET=latin1", "latin1"),
    ("ENGINE=InnoDB DEFAULT CHARACTER SET = latin1 COLLATE latin1_swedish_ci", "latin1"),
    ("CHARSET latin2", "latin2"),
    ("COLLATE latin1_german1_ci", "latin1"),
    ("DEFAULT CHARSET=utf8", "utf8mb3"),
    ("", None),
])
def test_table_default_charset_applies_to_string_columns(options, charset):
    _, schema = _parse("CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(45), body TEXT, "
                       f"own VARCHAR(5) CHARACTER SET utf8mb4, n INT) {options}")
    assert schema.column("name").charset == charset
    assert schema.column("body").charset == charset
    assert schema.column("own").charset == "utf8mb4"
    assert schema.column("n").charset is None


def test_column_collate_and_national_types_give_their_charset():
    _, schema = _parse("CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10) COLLATE latin1_bin, "
                       "b NCHAR(3), c NATIONAL VARCHAR(4), d VARCHAR(2) CHARACTER SET latin2 COLLATE latin2_bin) "
                       "DEFAULT CHARSET=utf8mb4")
    assert [schema.column(c).charset for c in "abcd"] == ["latin1", "utf8mb3", "utf8mb3", "latin2"]


# -- non-reserved keywords as column names -----------------------------------------------------

def test_period_is_a_column_name_in_create_add_and_drop():
    events, schema = _parse("CREATE TABLE t (id INT PRIMARY KEY, period INT, name VARCHAR(5))")
    assert [c.name for c in schema.columns] == ["id", "period", "name"]
    events, schema = _parse("ALTER TABLE t ADD period INT", _prior())
    assert isinstance(events[0], AddColumnEvent) and schema.has_column("period")
    events, schema = _parse("ALTER TABLE t DROP period", _prior(Column("period", "int(11)", "int", True)))
    assert isinstance(events[0], DropColumnEvent) and not schema.has_column("period")


def test_a_mariadb_period_definition_adds_no_column():
    events, schema = _parse("CREATE TABLE t (id INT PRIMARY KEY, s DATE, e DATE, PERIOD FOR p(s, e))")
    assert isinstance(events[0], CreateTableEvent)
    assert [c.name for c in schema.columns] == ["id", "s", "e"]


# -- partition maintenance lists and ORDER BY lists --------------------------------------------

@pytest.mark.parametrize("ddl", [
    "ALTER TABLE t ANALYZE PARTITION p0, p1",
    "ALTER TABLE t OPTIMIZE PARTITION p0, p1",
    "ALTER TABLE t CHECK PARTITION ALL",
    "ALTER TABLE t REORGANIZE PARTITION p0, p1 INTO (PARTITION p01 VALUES LESS THAN (100))",
    "ALTER TABLE t COALESCE PARTITION 2",
    "ALTER TABLE t ORDER BY a, b",
    "ALTER TABLE t ORDER BY a DESC, b ASC",
    "ALTER TABLE t ALGORITHM=INPLACE, REBUILD PARTITION p0, p1",
])
def test_partition_and_order_lists_change_no_column(ddl):
    prior = _prior(Column("a", "int(11)", "int", True), Column("b", "int(11)", "int", True))
    events, schema = _parse(ddl, prior)
    assert events == []
    assert schema == prior


def test_order_by_then_another_spec():
    events, schema = _parse("ALTER TABLE t ORDER BY a, ADD c INT", _prior(Column("a", "int(11)", "int", True)))
    assert [type(e) for e in events] == [AddColumnEvent]
    assert schema.has_column("c")


# -- renames in one ALTER name the columns as they were before it --------------------------------

AB = (Column("a", "int(11)", "int", True), Column("b", "varchar(5)", "varchar", True, None, "", "utf8mb4", 5))


@pytest.mark.parametrize(("ddl", "expected"), [
    ("ALTER TABLE t CHANGE a b INT, CHANGE b a VARCHAR(5)", [("b", "int(11)"), ("a", "varchar(5)")]),
    ("ALTER TABLE t RENAME COLUMN a TO b, RENAME COLUMN b TO a", [("b", "int(11)"), ("a", "varchar(5)")]),
    ("ALTER TABLE t CHANGE a b BIGINT, CHANGE b a VARCHAR(9)", [("b", "bigint(20)"), ("a", "varchar(9)")]),
    ("ALTER TABLE t CHANGE a c INT, CHANGE b a VARCHAR(5)", [("c", "int(11)"), ("a", "varchar(5)")]),
    ("ALTER TABLE t CHANGE a b INT, CHANGE b c VARCHAR(5)", [("b", "int(11)"), ("c", "varchar(5)")]),
    ("ALTER TABLE t RENAME COLUMN a TO x, MODIFY b VARCHAR(7)", [("x", "int(11)"), ("b", "varchar(7)")]),
])
def test_renames_resolve_against_the_table_before_the_statement(ddl, expected):
    events, schema = _parse(ddl, _prior(*AB))
    assert [(c.name, c.column_type) for c in schema.columns[1:]] == expected


def test_a_swap_reaches_doris_as_renames_through_a_temporary_name():
    events, _ = _parse("ALTER TABLE t CHANGE a b INT, CHANGE b a VARCHAR(5)", _prior(*AB))
    renames = [(e.old_name, e.new_name) for e in events]
    assert renames == [("a", "__tidemark_rename_1"), ("b", "a"), ("__tidemark_rename_1", "b")]


# -- column moves: the schema keeps MySQL's column order -----------------------------------------

ABC = (Column("a", "int(11)", "int", True), Column("b", "int(11)", "int", True), Column("c", "int(11)", "int", True))


def _names(schema: TableSchema) -> list[str]:
    return [c.name for c in schema.columns]


@pytest.mark.parametrize(("ddl", "order"), [
    ("ALTER TABLE t MODIFY c INT FIRST", ["c", "id", "a", "b"]),
    ("ALTER TABLE t MODIFY c INT AFTER id", ["id", "c", "a", "b"]),
    ("ALTER TABLE t MODIFY COLUMN a INT AFTER c", ["id", "b", "c", "a"]),
    ("ALTER TABLE t CHANGE a z TINYINT FIRST", ["z", "id", "b", "c"]),
    ("ALTER TABLE t ADD COLUMN d INT AFTER a", ["id", "a", "d", "b", "c"]),
    ("ALTER TABLE t ADD d INT FIRST", ["d", "id", "a", "b", "c"]),
    ("ALTER TABLE t MODIFY c INT AFTER b, ADD e INT AFTER a, ADD f INT FIRST", ["f", "id", "a", "e", "b", "c"]),
    ("ALTER TABLE t ADD COLUMN h INT AFTER b, MODIFY b INT FIRST", ["b", "id", "a", "h", "c"]),
    ("ALTER TABLE t CHANGE a b INT FIRST, CHANGE b a INT", ["b", "id", "a", "c"]),
])
def test_moves_keep_the_column_order_mysql_makes(ddl, order):
    _, schema = _parse(ddl, _prior(*ABC))
    assert _names(schema) == order


def test_a_move_alone_is_an_event_and_a_move_in_place_is_none():
    events, _ = _parse("ALTER TABLE t MODIFY c INT FIRST", _prior(*ABC))
    assert [(type(e), e.column_name, e.position) for e in events] == [(AlterColumnPositionEvent, "c", "FIRST")]
    events, schema = _parse("ALTER TABLE t MODIFY a INT AFTER id", _prior(*ABC))
    assert events == [] and _names(schema) == ["id", "a", "b", "c"]


def test_a_move_after_a_missing_column_is_refused():
    with pytest.raises(DdlParseError, match="nothere"):
        _parse("ALTER TABLE t MODIFY a INT AFTER nothere", _prior(*ABC))


# -- CONVERT TO CHARACTER SET and the table's default charset ------------------------------------

def _latin1(name: str, column_type: str, data_type: str, length: int | None) -> Column:
    return Column(name, column_type, data_type, True, None, "", "latin1", length)


LATIN1 = replace(_prior(_latin1("v", "varchar(10)", "varchar", 10), _latin1("tt", "tinytext", "tinytext", 255),
                        _latin1("tx", "text", "text", 65535), _latin1("mt", "mediumtext", "mediumtext", 16777215),
                        _latin1("e", "enum('x','y')", "enum", 1), Column("n", "int(11)", "int"),
                        Column("b", "varbinary(5)", "varbinary", True, None, "", None, 5)), charset="latin1")


def test_convert_to_utf8mb4_converts_every_character_column_and_widens_text():
    events, schema = _parse("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", LATIN1)
    got = {c.name: (c.column_type, c.charset, c.char_length) for c in schema.columns}
    assert got == {
        "id": ("int(11)", None, None), "v": ("varchar(10)", "utf8mb4", 10), "tt": ("text", "utf8mb4", 65535),
        "tx": ("mediumtext", "utf8mb4", 16777215), "mt": ("longtext", "utf8mb4", 4294967295),
        "e": ("enum('x','y')", "utf8mb4", 1), "n": ("int(11)", None, None), "b": ("varbinary(5)", None, 5)}
    assert schema.charset == "utf8mb4"
    assert isinstance(events[-1], AlterTableCharsetEvent)


def test_convert_back_to_latin1_never_narrows_text():
    _, schema = _parse("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4", LATIN1)
    _, schema = _parse("ALTER TABLE t CONVERT TO CHARACTER SET latin1", schema)
    assert [(c.column_type, c.charset) for c in schema.columns[2:5]] == [
        ("text", "latin1"), ("mediumtext", "latin1"), ("longtext", "latin1")]


def test_convert_to_binary_makes_binary_strings():
    _, schema = _parse("ALTER TABLE t CONVERT TO CHARSET binary", LATIN1)
    assert [(c.column_type, c.charset) for c in schema.columns[1:6]] == [
        ("varbinary(10)", None), ("tinyblob", None), ("blob", None), ("mediumblob", None), ("enum('x','y')", "binary")]


def test_convert_to_the_databases_default_is_refused_with_the_fix():
    with pytest.raises(DdlParseError, match=r"leave db.t out of the pipeline \(source tables.exclude: db.t\)") as info:
        _parse("ALTER TABLE t CONVERT TO CHARACTER SET DEFAULT, CHARACTER SET latin1", LATIN1)
    assert "db.CHARACTER" not in str(info.value)  # a clause after a comma is no table


@pytest.mark.parametrize("ddl", ["ALTER TABLE t CHARACTER SET utf8mb4", "ALTER TABLE t DEFAULT CHARSET=utf8mb4",
                                 "ALTER TABLE t ENGINE=InnoDB DEFAULT CHARACTER SET = utf8mb4 ROW_FORMAT=DYNAMIC",
                                 "ALTER TABLE t DEFAULT COLLATE utf8mb4_bin"])
def test_table_default_charset_changes_no_existing_column(ddl):
    events, schema = _parse(ddl, LATIN1)
    assert [type(e) for e in events] == [AlterTableCharsetEvent]
    assert schema.columns == LATIN1.columns and schema.charset == "utf8mb4"
    # a string column added or redefined later without its own charset takes the new default
    _, schema = _parse("ALTER TABLE t ADD s VARCHAR(3), MODIFY v VARCHAR(12), ADD o VARCHAR(2) CHARSET ascii", schema)
    assert [schema.column(c).charset for c in ("s", "v", "o", "tx")] == ["utf8mb4", "utf8mb4", "ascii", "latin1"]


# -- primary keys: the schemas built from the events keep them -----------------------------------

@pytest.mark.parametrize(("ddl", "key"), [
    ("ALTER TABLE t ADD PRIMARY KEY (a, b)", ("a", "b")),
    ("ALTER TABLE t DROP PRIMARY KEY", ()),
    ("ALTER TABLE t DROP PRIMARY KEY, ADD PRIMARY KEY (b, id)", ("b", "id")),
    ("ALTER TABLE t DROP INDEX `PRIMARY`, ADD CONSTRAINT pk PRIMARY KEY (c)", ("c",)),
    ("ALTER TABLE t DROP PRIMARY KEY, ADD d INT PRIMARY KEY", ("d",)),
    ("ALTER TABLE t DROP PRIMARY KEY, MODIFY a INT PRIMARY KEY", ("a",)),
    ("ALTER TABLE t DROP PRIMARY KEY, CHANGE b bb INT KEY FIRST", ("bb",)),
    ("ALTER TABLE t CHANGE id ident INT", ("ident",)),
])
def test_primary_key_changes_reach_the_schema(ddl, key):
    prior = replace(_prior(*ABC), primary_key=()) if "ADD PRIMARY KEY (a, b)" in ddl else _prior(*ABC)
    events, schema = _parse(ddl, prior)
    assert schema.primary_key == key
    assert all(not schema.column(k).nullable for k in key)
    assert sum(isinstance(e, AlterPrimaryKeyEvent) for e in events) == (0 if "CHANGE id" in ddl else 1)


# -- the oracle: the same statements run on the real MariaDB --------------------------------------

ORACLE = {
    "moves": (
        "CREATE TABLE t (a INT, b INT, c INT, d INT) DEFAULT CHARSET=utf8mb4",
        ["ALTER TABLE t MODIFY c INT FIRST",
         "ALTER TABLE t CHANGE a z TINYINT FIRST",
         "ALTER TABLE t MODIFY c INT AFTER d, ADD e INT AFTER b, ADD f INT FIRST",
         "ALTER TABLE t ADD COLUMN g INT, MODIFY f INT AFTER g",
         "ALTER TABLE t ADD COLUMN h INT AFTER g, MODIFY g INT FIRST",
         "ALTER TABLE t CHANGE c c2 INT, MODIFY d BIGINT AFTER c2",
         "ALTER TABLE t CHANGE b b2 INT FIRST, CHANGE e b INT AFTER d",
         "ALTER TABLE t MODIFY z TINYINT AFTER g, MODIFY h INT FIRST",
         "ALTER TABLE t MODIFY b INT AFTER d, MODIFY d BIGINT FIRST",
         "ALTER TABLE t MODIFY f INT FIRST, MODIFY g INT FIRST, ADD i INT FIRST",
         "ALTER TABLE t DROP COLUMN b2, MODIFY c2 INT AFTER h, ADD j INT AFTER c2"],
    ),
    "charsets": (
        "CREATE TABLE t (id INT PRIMARY KEY, a VARCHAR(10), tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, v VARCHAR(16000), "
        "c CHAR(5), e ENUM('x','y'), s SET('p','q'), j JSON, b VARBINARY(5), bl BLOB, n INT) DEFAULT CHARSET=latin1",
        ["ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4",
         "ALTER TABLE t CONVERT TO CHARACTER SET latin1 COLLATE latin1_bin",
         "ALTER TABLE t CHARACTER SET utf8mb4",
         "ALTER TABLE t ADD x VARCHAR(3), MODIFY a VARCHAR(12), ADD y TEXT CHARACTER SET ascii",
         "ALTER TABLE t ENGINE=InnoDB DEFAULT CHARSET=latin2 COMMENT 'x'",
         "ALTER TABLE t ADD z TINYTEXT",
         "ALTER TABLE t DEFAULT COLLATE utf8mb3_bin",
         "ALTER TABLE t CONVERT TO CHAR SET utf8",
         "ALTER TABLE t CONVERT TO CHARSET utf8mb4 COLLATE utf8mb4_bin",
         "ALTER TABLE t DROP COLUMN v, CONVERT TO CHARACTER SET binary",
         "ALTER TABLE t ADD k VARCHAR(4), ADD l TEXT, ADD m CHAR(2), ADD o ENUM('u')"],
    ),
    "keys": (
        "CREATE TABLE t (a INT, b INT, c VARCHAR(5), d INT) DEFAULT CHARSET=utf8mb4",
        ["ALTER TABLE t ADD PRIMARY KEY (b, d)",
         "ALTER TABLE t DROP PRIMARY KEY, ADD CONSTRAINT pk PRIMARY KEY (c)",
         "ALTER TABLE t DROP INDEX `PRIMARY`",
         "ALTER TABLE t MODIFY a INT PRIMARY KEY AFTER c",
         "ALTER TABLE t CHANGE a a2 BIGINT",
         "ALTER TABLE t DROP PRIMARY KEY, CHANGE b bb INT KEY FIRST",
         "ALTER TABLE t DROP CONSTRAINT `PRIMARY`",
         "ALTER TABLE t ADD e INT NOT NULL PRIMARY KEY FIRST",
         "ALTER TABLE t DROP COLUMN e",
         "ALTER TABLE t ADD PRIMARY KEY USING BTREE (d, bb)"],
    ),
}

ORACLE_FACTS = ("name", "column_type", "data_type", "nullable", "charset", "char_length")


def _oracle_view(schema: TableSchema) -> tuple:
    return ([tuple(getattr(c, f) for f in ORACLE_FACTS) for c in schema.columns], schema.primary_key, schema.charset)


@pytest.mark.parametrize("scenario", sorted(ORACLE))
def test_the_parsers_schema_is_what_mariadb_reports(scenario, root_conn, fresh_db):
    """Each statement runs on MariaDB and through the parser (from the parser's own CREATE, with
    the events applied strictly, as the schema history applies them); information_schema is the
    answer for column order, types, charsets, nullability, the primary key and the table charset."""
    from tests.binlog.conftest import read_schema

    create, alters = ORACLE[scenario]
    t = TableId(fresh_db, "t")
    parser = MySqlDdlParser()
    schema: TableSchema | None = None
    with root_conn.cursor() as cur:
        cur.execute(f"USE `{fresh_db}`")
        for ddl in [create, *alters]:
            cur.execute(ddl)
            events = parser.parse_captured(ddl, fresh_db, lambda _t: True, {t: schema}.get)
            for e in events:
                schema = apply_schema_change(schema, e)[t]
            assert _oracle_view(schema) == _oracle_view(read_schema(root_conn, t)), ddl
