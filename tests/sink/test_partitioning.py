"""Doris tables created partitioned: a transform's ``partition-keys`` and the sink's
``table.create.auto-partition.properties.*`` (cdc_core/doris/partitioning.py), through the stand-in,
which checks the clause as Doris does."""

from __future__ import annotations

import pytest

from cdc_core.doris.partitioning import PartitionError
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import Column, TableId, TableSchema
from tests.sink.conftest import make_client, select


def _sink(doris, *, keys=None, auto=None) -> DorisSink:
    return DorisSink(make_client(doris), "tm_part", table_properties={"replication_num": "1"},
                     partition_keys=(lambda _source: (0, keys)) if keys else None, auto_partition_properties=auto)


def _orders(db: str, table: str = "orders", key: tuple[str, ...] = ("id", "created")) -> TableSchema:
    return TableSchema(TableId(db, table), (
        Column("id", "int(11)", "int", False, numeric_precision=10, numeric_scale=0),
        Column("created", "datetime(3)", "datetime", False, datetime_precision=3),
        Column("region", "varchar(8)", "varchar", False, charset="utf8mb4", char_length=8),
        Column("amount", "double", "double", True),
    ), key)


def _show_create(sink: DorisSink, t: TableId) -> str:
    return sink.catalog.execute(t.database, f"SHOW CREATE TABLE `{t.table}`").rows[0][1]


def test_a_date_partition_key_is_an_auto_range_by_date_trunc(doris, doris_db):
    sink = _sink(doris, keys=("created",), auto={"default-partition-unit": "month"})
    schema = _orders(doris_db)
    table = sink.create_table(schema)
    assert "AUTO PARTITION BY RANGE (date_trunc(`created`, 'month'))" in _show_create(sink, schema.table_id)
    c = sink.load(table.table_id, "b1", [{"id": 1, "created": "2026-01-05 10:00:00.123", "region": "eu", "amount": 1.5},
                                         {"id": 2, "created": "2026-03-01 00:00:00", "region": "us", "amount": 2}])
    sink.commit([c])
    assert select(sink, table.table_id, "id, region", "id") == [(1, "eu"), (2, "us")]
    sink.close()


def test_other_partition_keys_are_an_auto_list(doris, doris_db):
    sink = _sink(doris, keys=("region", "id"))
    schema = _orders(doris_db, key=("id", "region"))
    sink.create_table(schema)
    assert "AUTO PARTITION BY LIST (`region`, `id`)" in _show_create(sink, schema.table_id)
    sink.close()


@pytest.mark.parametrize(("keys", "key", "message"), [
    (("amount",), ("id", "created"), "not in its key (id, created)"),
    (("missing",), ("id", "created"), "names column 'missing', which"),
    (("created",), (), "AUTO RANGE partition needs a NOT NULL column"),
    (("created",), ("id",), "not in its key (id)"),
])
def test_a_partitioning_doris_refuses_is_refused_by_name(keys, key, message, doris, doris_db):
    sink = _sink(doris, keys=keys)
    with pytest.raises(PartitionError, match="transform\\[0\\].partition-keys") as info:
        sink.create_table(_orders(doris_db, key=key))
    assert message in str(info.value)
    assert sink.catalog.table_info(doris_db, "orders") is None  # nothing created
    sink.close()


def test_auto_partition_properties_as_flink_cdc_reads_them(doris, doris_db):
    auto = {"include": doris_db + ".\\.*", "exclude": f"{doris_db}.skipped", "default-partition-key": "created",
            "default-partition-unit": "day", f"{doris_db}.weekly.partition-unit": "week",
            f"{doris_db}.by_region.partition-key": "region"}
    sink = _sink(doris, auto=auto)
    clauses = {}
    for name in ("orders", "weekly", "skipped", "by_region"):
        schema = _orders(doris_db, name)
        sink.create_table(schema)
        text = _show_create(sink, schema.table_id)
        lines = text.split("\n")
        after_comment = lines[next(i for i, line in enumerate(lines) if line.startswith("COMMENT ")) + 1]
        clauses[name] = "" if after_comment.startswith("DISTRIBUTED") else after_comment
    assert clauses == {
        "orders": "AUTO PARTITION BY RANGE (date_trunc(`created`, 'day'))",
        "weekly": "AUTO PARTITION BY RANGE (date_trunc(`created`, 'week'))",
        "skipped": "",  # excluded
        "by_region": "",  # a VARCHAR key: Flink CDC partitions by DATE/DATETIME only
    }
    sink.close()
