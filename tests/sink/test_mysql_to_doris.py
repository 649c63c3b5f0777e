"""A real MariaDB table into the Doris stand-in: discovered schema, Flink CDC type mapping, both row paths."""

from __future__ import annotations

import pyarrow as pa

from cdc_core.doris.rows import snapshot_row
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import TableId
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.types import doris_arrow_type, rows_to_doris
from tests.sink.conftest import make_client, select

DDL = """
CREATE TABLE `{db}`.`orders` (
  `note` VARCHAR(20) COMMENT 'free text',
  `id` BIGINT UNSIGNED NOT NULL,
  `region` CHAR(2) NOT NULL,
  `flag` TINYINT(1),
  `amount` DECIMAL(10,2),
  `created` DATETIME(3),
  `day` DATE,
  `body` TEXT,
  `doc` JSON,
  PRIMARY KEY (`region`, `id`)
) COMMENT 'orders table'
"""


def test_mysql_table_created_and_loaded_through_both_row_paths(doris, doris_db, root_conn, fresh_db):
    with root_conn.cursor() as cur:
        cur.execute(DDL.format(db=fresh_db))
        cur.execute(f"INSERT INTO `{fresh_db}`.orders VALUES "
                    "('hi', 18446744073709551615, 'eu', 1, 12.50, '2024-05-06 07:08:09.123', '2024-05-06', 'long', '{\"a\": 1}'),"
                    "(NULL, 2, 'us', 0, NULL, NULL, NULL, NULL, NULL)")
        cur.execute(f"SELECT * FROM `{fresh_db}`.orders ORDER BY id")
        names = [d[0] for d in cur.description]
        raw = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    schema = read_table_schema(root_conn, TableId(fresh_db, "orders"))
    sink = DorisSink(make_client(doris), "tm_e2e", table_properties={"replication_num": "1"})  # real doris_type
    target = TableId(doris_db, "orders")
    table = sink.create_table(schema, target)
    assert table.columns[:2] == ("region", "id") and table.unique  # keys first, in key order
    info = sink.catalog.table_info(doris_db, "orders")
    assert info.column("note").comment == "free text"
    rows = [snapshot_row(r, 77) for r in rows_to_doris(raw, schema)]
    sink.commit([sink.load(target, "chunk-0-g0", rows)])
    expected = select(sink, target, "id, region, flag, amount, created, day, body, note", "id")
    assert expected[0][:4] == (2, "us", False, None)
    assert expected[1][:3] == (18446744073709551615, "eu", True) and float(expected[1][3]) == 12.5
    assert str(expected[1][4]).startswith("2024-05-06 07:08:09.123") and str(expected[1][5]) == "2024-05-06"
    # the Arrow path (Spark) gives the same table: as JSON lines, since a JSON column does not go
    # as Arrow (cdc_core/doris/arrow_layout.py) ...
    arrow_schema = pa.schema([(c.name, doris_arrow_type(c)) for c in schema.columns])
    arrow = pa.Table.from_pylist(rows_to_doris(raw, schema), schema=arrow_schema)
    target2 = TableId(doris_db, "orders_arrow")
    sink.create_table(schema, target2)
    sink.commit([sink.load(target2, "chunk-0-g0", arrow, sequence=77)])
    assert select(sink, target2, "id, region, flag, amount, created, day, body, note", "id") == expected
    # ... and as Arrow without it, each column cast to the type Doris reads it as (the DATETIME as a
    # +08:00 timestamp)
    without = schema.with_columns(tuple(c for c in schema.columns if c.name != "doc"))
    target3 = TableId(doris_db, "orders_arrow_only")
    sink.create_table(without, target3)
    assert sink.loads_arrow_into(target3)
    sink.commit([sink.load(target3, "chunk-0-g0", arrow.drop_columns(["doc"]), sequence=77)])
    assert select(sink, target3, "id, region, flag, amount, created, day, body, note", "id") == expected
    sink.close()
