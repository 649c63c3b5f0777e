"""Every integer type change MySQL makes, carried to Doris: a schema change Doris accepts, a change the
Doris column needs not (it already holds every value), or a stop naming the table, the column and the
way out. Run against the stand-in, whose type-change rules are Doris's."""

from __future__ import annotations

import itertools

import pytest

from cdc_core.doris.errors import SchemaChangeError
from cdc_core.doris.sink import DorisSink
from cdc_core.doris.table_creation import default_type_mapper
from cdc_core.doris.type_changes import holds
from cdc_core.model.events import AlterColumnTypeEvent, CreateTableEvent
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.types import doris_type
from tests.sink.conftest import make_client, select

INTEGERS = [f"{base}{sign}" for base in ("tinyint", "smallint", "mediumint", "int", "bigint")
            for sign in ("", " unsigned")]
LIMITS = {  # the largest and smallest value of each MySQL integer type
    "tinyint": (127, -128), "tinyint unsigned": (255, 0), "smallint": (32767, -32768),
    "smallint unsigned": (65535, 0), "mediumint": (8388607, -8388608), "mediumint unsigned": (16777215, 0),
    "int": (2147483647, -2147483648), "int unsigned": (4294967295, 0),
    "bigint": (9223372036854775807, -9223372036854775808), "bigint unsigned": (18446744073709551615, 0),
}
_n = itertools.count()


def _col(name: str, mysql: str, nullable: bool = True) -> Column:
    base = mysql.split()[0]
    return Column(name, mysql.replace(base, f"{base}(11)", 1), base, nullable)


@pytest.fixture
def typed_sink(doris):
    s = DorisSink(make_client(doris), "tm_types", type_mapper=default_type_mapper(),
                  table_properties={"replication_num": "1"})
    yield s
    s.close()


def test_the_mapping_makes_every_integer_widening_a_doris_widening():
    """Tidemark's Doris type for each MySQL integer type: a change MySQL makes to a type with more
    values is an integer widening Doris makes, or no change (the Doris column already holds them)."""
    for old, new in itertools.permutations(INTEGERS, 2):
        lo_old, hi_old = LIMITS[old][1], LIMITS[old][0]
        lo_new, hi_new = LIMITS[new][1], LIMITS[new][0]
        if lo_new <= lo_old and hi_old <= hi_new:  # a widening in MySQL
            a, b = doris_type(_col("c", old)), doris_type(_col("c", new))
            assert a == b or not holds(a, b) and holds(b, a), (old, new, a, b)
    assert doris_type(_col("c", "bigint unsigned")) == "LARGEINT"


@pytest.mark.parametrize("as_key", [False, True], ids=["value", "key"])
def test_every_integer_type_change_is_carried_or_already_held(typed_sink, doris_db, as_key):
    """All 90 ordered pairs of MySQL integer types, as a value column and as the key: Doris takes
    each change or already holds the new type's values, and the new type's extremes then load and
    read back exactly."""
    sink = typed_sink
    outcomes = {}
    for old, new in itertools.permutations(INTEGERS, 2):
        src = TableId(doris_db, f"w{next(_n)}")
        cols = (_col("c", old, nullable=not as_key), _col("id", "int", False)) if as_key else \
            (_col("id", "int", False), _col("c", old))
        schema = TableSchema(src, cols, primary_key=("c", "id") if as_key else ("id",))
        sink.apply_schema_change(CreateTableEvent(src, schema=schema))
        result = sink.apply_schema_change(AlterColumnTypeEvent(src, column_name="c",
                                                               column=_col("c", new, nullable=not as_key)))
        outcomes[(old, new)] = result.outcome
        current = sink.catalog.column_types(doris_db, src.table)["c"]
        assert holds(current, doris_type(_col("c", new))), (old, new, current)
        hi, lo = LIMITS[new]
        sink.commit([sink.load(src, "binlog-1-1", [{"id": 1, "c": hi}, {"id": 2, "c": lo}], sequence=5)])
        assert select(sink, src, "id, c") == [(1, hi), (2, lo)], (old, new, current)
        assert sink.catalog.table_info(doris_db, src.table).column("c").is_key is as_key
    assert set(outcomes.values()) == {"applied", "skipped"}
    assert outcomes[("int unsigned", "bigint unsigned")] == "applied"  # BIGINT -> LARGEINT
    assert outcomes[("bigint", "bigint unsigned")] == "applied"
    assert outcomes[("bigint unsigned", "int")] == "skipped"  # a MySQL narrowing: LARGEINT holds INT


def test_a_table_made_with_the_old_decimal_mapping_keeps_working(typed_sink, doris_db):
    """Tables created before BIGINT UNSIGNED became LARGEINT hold it as DECIMAL(20,0): loads go on,
    a change to BIGINT UNSIGNED or any narrower integer needs no Doris change."""
    sink = typed_sink
    src = TableId(doris_db, "legacy")
    sink.catalog.create_database(doris_db)
    sink.catalog.execute(doris_db, f"CREATE TABLE `{doris_db}`.legacy (id INT NOT NULL, c DECIMALV3(20,0) NULL, "
                                   "__tidemark_seq BIGINT NULL) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS AUTO "
                                   "PROPERTIES ('replication_num' = '1', 'function_column.sequence_col' = "
                                   "'__tidemark_seq')")
    for mysql in ("bigint unsigned", "int unsigned", "bigint", "tinyint"):
        result = sink.apply_schema_change(AlterColumnTypeEvent(src, column_name="c", column=_col("c", mysql)))
        assert result.outcome == "skipped" and "holds every value" in result.reason, (mysql, result)
    sink.commit([sink.load(src, "binlog-1-1", [{"id": 1, "c": 18446744073709551615}], sequence=3)])
    assert select(sink, src, "id, c") == [(1, 18446744073709551615)]


def test_a_change_doris_refuses_stops_with_the_table_column_and_way_out(typed_sink, doris_db):
    sink = typed_sink
    src = TableId(doris_db, "money")
    sink.apply_schema_change(CreateTableEvent(src, schema=TableSchema(
        src, (_col("id", "int", False), _col("amount", "int")), primary_key=("id",))))
    to_decimal = Column("amount", "decimal(12,2)", "decimal", numeric_precision=12, numeric_scale=2)
    with pytest.raises(SchemaChangeError) as info:
        sink.apply_schema_change(AlterColumnTypeEvent(src, column_name="amount", column=to_decimal))
    message = str(info.value)
    for part in (f"{doris_db}.money", "amount", "INT", "DECIMALV3(12,2)", "decimal(12,2)", "tidemark resnapshot", "transform:",
                 "Can not change"):
        assert part in message, (part, message)
