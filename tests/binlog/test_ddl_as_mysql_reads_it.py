"""DDL read as MySQL/MariaDB read it: one case per kind the parser used to get wrong.

Each case parses a statement against a prior schema and checks the schema that results (column
names and order, types, charsets, ENUM/SET members), as ``information_schema`` would show it.
"""

from __future__ import annotations

import pytest

from cdc_core.events import AddColumnEvent, CreateTableEvent, DropColumnEvent
from cdc_core.mysql.ddl import DdlParseError, MySqlDdlParser
from cdc_core.mysql.schema_history import apply_schema_change
from cdc_core.mysql.types.kinds import members_of
from cdc_core.schema import Column, TableId, TableSchema

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
