"""Every ``CREATE TABLE`` Tidemark can generate runs on the stand-in, which is as strict as Doris on DDL.

The columns are MariaDB's own (``information_schema`` as discovery reads it) for every MySQL column
type, each placed as the key, as the first value column, as the first column of a table without a
primary key (alone and followed by others), and as the partition column of keyed and keyless
tables. A shape Tidemark refuses before creating anything (a primary key Doris cannot key on, a
partition column Doris refuses) must be exactly a shape the stand-in refuses too: what planning and
``validate --connect`` accept, Doris accepts.
"""

from __future__ import annotations

import itertools

import pytest

from cdc_core.doris.errors import QueryError
from cdc_core.doris.partitioning import PartitionError, PartitionSpec
from cdc_core.doris.row_identity import ROW_COPY, ROW_HASH
from cdc_core.doris.table_creation import KeylessMode, TableCreator, default_type_mapper
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.discovery import read_table_schema
from tests.sink.conftest import make_client

# Every column type MariaDB 10.11 has, in the spellings users write (zero-length strings included).
TYPES = [
    "tinyint", "tinyint unsigned", "tinyint(1)", "smallint", "smallint unsigned", "mediumint", "mediumint unsigned",
    "int", "int unsigned", "bigint", "bigint unsigned", "decimal(10,2)", "decimal(38,0)", "decimal(65,30)",
    "decimal(5,0) unsigned", "float", "float(7,3)", "double", "bit(1)", "bit(8)", "bit(64)", "year", "date",
    "datetime", "datetime(3)", "datetime(6)", "timestamp NULL", "timestamp(6) NULL", "time", "time(3)", "char(0)",
    "char(1)", "char(10)", "char(255)", "varchar(0)", "varchar(1)", "varchar(255)", "varchar(16383)",
    "varchar(30000) character set latin1", "varchar(100) character set latin1", "char(60) character set utf8mb3", "tinytext", "text",
    "mediumtext", "longtext", "binary(0)", "binary(16)", "varbinary(0)", "varbinary(255)", "tinyblob", "blob",
    "mediumblob", "longblob", "enum('a','b')", "set('x','y')", "json", "geometry", "point", "uuid", "inet4",
    "inet6",
]

_names = itertools.count()


@pytest.fixture(scope="module")
def columns(mysql_server) -> list[Column]:
    """The MariaDB columns of every type, as discovery reads them."""
    import pymysql

    db = f"ddl_types_{next(_names)}"
    conn = pymysql.connect(unix_socket=mysql_server.endpoint.root_socket, user="root", autocommit=True,
                           charset="utf8mb4")
    try:
        with conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{db}`")
            for i, t in enumerate(TYPES):  # one table each: MySQL's row size limit
                cur.execute(f"CREATE TABLE `{db}`.t{i} (c{i} {t})")
        found = [read_table_schema(conn, TableId(db, f"t{i}")).columns[0] for i in range(len(TYPES))]
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE `{db}`")
    finally:
        conn.close()
    return found


def _int(name: str) -> Column:
    return Column(name, "int(11)", "int", False)


def _datetime(name: str) -> Column:
    return Column(name, "datetime", "datetime", False, datetime_precision=0)


def _shapes(column: Column, db: str) -> list[tuple[str, TableSchema, PartitionSpec | None]]:
    """The table shapes one column can take in a CREATE TABLE Tidemark generates."""
    tag = column.column_type.split("(")[0].replace(" ", "_")
    n = next(_names)
    nullable = Column(**{**column.__dict__, "nullable": True})
    key = Column(**{**column.__dict__, "nullable": False})

    def table(kind: str) -> TableId:
        return TableId(db, f"t{n}_{kind}_{tag}")

    return [
        ("key", TableSchema(table("key"), (key, _int("v")), primary_key=(key.name,)), None),
        ("key_second", TableSchema(table("key2"), (_int("id"), key), primary_key=("id", key.name)), None),
        ("first_value", TableSchema(table("value"), (nullable, _int("id")), primary_key=("id",)), None),
        ("keyless_first", TableSchema(table("nokey"), (nullable, _int("n"))), None),
        ("keyless_alone", TableSchema(table("alone"), (nullable,)), None),
        ("keyed_partitioned_by_it", TableSchema(table("pkey"), (key, _datetime("at"), _int("v")),
                                                primary_key=(key.name, "at")),
         PartitionSpec((key.name,), "day", "transform[0].partition-keys")),
        ("keyed_partitioned_by_date", TableSchema(table("pdate"), (_datetime("at"), nullable),
                                                  primary_key=("at",)),
         PartitionSpec(("at",), "month", "transform[0].partition-keys")),
        ("keyless_partitioned_by_it", TableSchema(table("plist"), (nullable, _int("n"))),
         PartitionSpec((nullable.name,), "day", "transform[0].partition-keys")),
        ("append_first", TableSchema(table("anokey"), (nullable, _int("n"))), None),
        ("append_alone", TableSchema(table("aalone"), (nullable,)), None),
    ]


@pytest.mark.parametrize("tinyint1_as_boolean", [True, False])
def test_every_generated_create_table_runs_on_the_stand_in(doris, columns, tinyint1_as_boolean):
    client = make_client(doris)
    db = f"gen_ddl_{next(_names)}"
    from cdc_core.doris.catalog import DorisCatalog

    catalog = DorisCatalog(client)
    catalog.create_database(db)
    created, refused_early = [], []
    failures = []
    for column in columns:
        for shape, schema, spec in _shapes(column, db):
            creator = TableCreator(catalog, default_type_mapper(tinyint1_as_boolean),
                                   properties={"replication_num": "1"}, partition=lambda _t, spec=spec: spec,
                                   keyless=KeylessMode.APPEND if shape.startswith("append") else KeylessMode.EXACT)
            what = f"{shape} {column.column_type}"
            problems = creator.key_problems(schema, schema.table_id)
            try:
                ddl = creator.create_table_ddl(schema, schema.table_id)
            except PartitionError as exc:
                refused_early.append((what, str(exc)))
                continue
            try:
                catalog.execute(db, ddl)
            except QueryError as exc:
                if problems:  # refused by name before creation, and Doris refuses it too
                    refused_early.append((what, problems[0]))
                    continue
                failures.append(f"{what}: {exc.reason}\n    {ddl}")
                continue
            if problems:
                failures.append(f"{what}: Tidemark refuses it ({problems[0]}) but Doris accepts\n    {ddl}")
                continue
            info = catalog.table_info(db, schema.table_id.table)
            assert info is not None, what
            created.append(what)
    assert not failures, "\n".join(failures)
    # every table without a primary key was created, whatever its first column, in either form
    assert all(f"{form}_{k} {c.column_type}" in created for c in columns for k in ("first", "alone")
               for form in ("keyless", "append"))
    # what is refused early: float/double/json keys (by name), and partition columns Doris refuses
    early = {w.split(" ", 1)[1] for w, _ in refused_early if w.startswith("key ")}
    assert early == {"float", "float(7,3)", "double", "json"}, early
    assert all("primary-key column" in why or "transform[0].partition-keys" in why for _, why in refused_early)
    assert len(created) + len(refused_early) == len(columns) * 10


def test_keyless_tables_are_unique_on_the_hidden_row_identity(doris, columns):
    """A table without a primary key, whatever its first column, is a UNIQUE table keyed by the two
    hidden identity columns, leading, distributed by the hash, with the sequence column."""
    from cdc_core.doris.catalog import DorisCatalog

    catalog = DorisCatalog(make_client(doris))
    db = f"gen_exact_{next(_names)}"
    catalog.create_database(db)
    creator = TableCreator(catalog, default_type_mapper(), properties={"replication_num": "1"})
    by_type = {c.column_type: c for c in columns}
    for mysql_type in ("float", "double", "time", "enum('a','b')", "text", "longtext", "blob", "geometry", "json"):
        first = Column(**{**by_type[mysql_type].__dict__, "nullable": True})
        schema = TableSchema(TableId(db, f"ex{next(_names)}"), (first, _int("n")))
        table = creator.ensure(schema)
        info = catalog.table_info(db, schema.table_id.table)
        assert info.keys_type == "UNIQUE_KEYS" and info.key_columns == (ROW_HASH, ROW_COPY), (mysql_type, info)
        assert table.row_identity and table.visible_columns == (first.name, "n") and table.sequence_column
        created = catalog.execute(db, f"SHOW CREATE TABLE `{db}`.`{schema.table_id.table}`").rows[0][1]
        assert f"DISTRIBUTED BY HASH(`{ROW_HASH}`)" in created and "function_column.sequence_col" in created


def test_keyless_tables_are_duplicate_without_keys_distributed_at_random(doris, columns):
    """With ``table.create.keyless: append``, a table without a primary key whose first column Doris
    cannot key on is a DUPLICATE table with no key columns at all; the stand-in stores it so and
    reports no key."""
    client = make_client(doris)
    from cdc_core.doris.catalog import DorisCatalog

    catalog = DorisCatalog(client)
    db = f"gen_nokey_{next(_names)}"
    catalog.create_database(db)
    creator = TableCreator(catalog, default_type_mapper(), properties={"replication_num": "1"},
                           keyless=KeylessMode.APPEND)
    by_type = {c.column_type: c for c in columns}
    for mysql_type in ("float", "double", "time", "enum('a','b')", "text", "longtext", "blob", "geometry"):
        first = Column(**{**by_type[mysql_type].__dict__, "nullable": True})
        schema = TableSchema(TableId(db, f"nk{next(_names)}"), (first, _int("n")))
        creator.ensure(schema)
        info = catalog.table_info(db, schema.table_id.table)
        assert info.keys_type == "DUP_KEYS" and info.key_columns == (), (mysql_type, info)
        created = catalog.execute(db, f"SHOW CREATE TABLE `{db}`.`{schema.table_id.table}`").rows[0][1]
        assert "DISTRIBUTED BY RANDOM" in created and "DUPLICATE KEY" not in created


@pytest.mark.parametrize(("ddl", "error"), [
    # without the property Doris picks the keys itself and refuses a FLOAT first column
    ("CREATE TABLE t (f FLOAT, n INT) DISTRIBUTED BY RANDOM PROPERTIES ('replication_num' = '1')",
     "first column could not be float"),
    ("CREATE TABLE t (f FLOAT, n INT) DUPLICATE KEY(f) DISTRIBUTED BY HASH(n) PROPERTIES ('replication_num' = '1')",
     "Float or double can not used as a key"),
    ("CREATE TABLE t (s STRING, n INT) DUPLICATE KEY(s) DISTRIBUTED BY HASH(n) PROPERTIES ('replication_num' = '1')",
     "String Type should not be used in key column[s]"),
    ("CREATE TABLE t (j JSON, n INT) DUPLICATE KEY(j) DISTRIBUTED BY HASH(n) PROPERTIES ('replication_num' = '1')",
     "JSONB type should not be used in key column[j]"),
    ("CREATE TABLE t (n INT, m INT) DUPLICATE KEY(m) DISTRIBUTED BY HASH(n) PROPERTIES ('replication_num' = '1')",
     "Key columns should be a ordered prefix of the schema"),
    ("CREATE TABLE t (n INT, m INT) UNIQUE KEY(n) DISTRIBUTED BY RANDOM PROPERTIES ('replication_num' = '1')",
     "should not contain random distribution"),
    ("CREATE TABLE t (f FLOAT, n INT) PROPERTIES ('replication_num' = '1', 'enable_duplicate_without_keys_by_default'"
     " = 'true') DISTRIBUTED BY HASH(f)", "Floating point type column can not be distribution column"),
    ("CREATE TABLE t (s STRING, n INT) DISTRIBUTED BY HASH(s) PROPERTIES ('replication_num' = '1', "
     "'enable_duplicate_without_keys_by_default' = 'true')", "String Type should not be used in distribution"),
    ("CREATE TABLE t (n INT) DISTRIBUTED BY RANDOM PROPERTIES ('replication_num' = '1', "
     "'enable_duplicate_without_keys_by_default' = 'yes')", "Invalid enable_duplicate_without_keys_by_default"),
    ("CREATE TABLE t (n INT) DISTRIBUTED BY RANDOM PROPERTIES ('replication_num' = '1', "
     "'light_schema_change' = '1')", "Invalid light_schema_change value"),
    ("CREATE TABLE t (v VARCHAR(0)) DISTRIBUTED BY RANDOM PROPERTIES ('replication_num' = '1')",
     "VARCHAR size must be between 1 and 65533: 0"),
])
def test_the_stand_in_refuses_what_doris_refuses(doris, ddl, error):
    from cdc_core.doris.catalog import DorisCatalog

    catalog = DorisCatalog(make_client(doris))
    db = f"strict_{next(_names)}"
    catalog.create_database(db)
    with pytest.raises(QueryError) as info:
        catalog.execute(db, ddl)
    assert error in info.value.reason


def test_the_stand_in_picks_doris_s_default_duplicate_keys(doris):
    """Without a KEY clause nor the property, Doris keys a DUPLICATE table on its leading columns
    (at most 3, within 36 bytes, up to and including the first VARCHAR, before a FLOAT/STRING)."""
    from cdc_core.doris.catalog import DorisCatalog

    catalog = DorisCatalog(make_client(doris))
    db = f"dupkeys_{next(_names)}"
    catalog.create_database(db)
    cases = {
        "a INT, b BIGINT, c DATE, d INT": ("a", "b", "c"),
        "a INT, b VARCHAR(10), c INT": ("a", "b"),
        "a INT, f DOUBLE, c INT": ("a",),
        "a LARGEINT, b LARGEINT, c LARGEINT": ("a", "b"),
        "s VARCHAR(40), n INT": ("s",),
    }
    for i, (cols, keys) in enumerate(cases.items()):
        catalog.execute(db, f"CREATE TABLE d{i} ({cols}) DISTRIBUTED BY RANDOM PROPERTIES ('replication_num' = '1')")
        assert catalog.table_info(db, f"d{i}").key_columns == keys, cols
