"""Pure parts of the sink: labels, routing, batching, payload encoding, pipeline wiring."""

from __future__ import annotations

import gzip
import json

import pyarrow as pa
import pytest

from cdc_core.config.pipeline import parse_pipeline
from cdc_core.doris.batching import TableBuffers
from cdc_core.doris.committable import Committable
from cdc_core.doris.labels import LABEL_RE, binlog_batch_id, chunk_batch_id, make_label
from cdc_core.doris.payloads import PayloadBuilder
from cdc_core.doris.routing import TableRouter
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import TableId


def test_labels_are_deterministic_valid_and_bounded():
    a = make_label("tm_orders", "shop", "orders", chunk_batch_id(3, 1))
    assert a == "tm_orders__shop__orders__chunk-3-g1" == make_label("tm_orders", "shop", "orders", "chunk-3-g1")
    long = make_label("p" * 60, "d" * 64, "t" * 64, binlog_batch_id(2**40, 2**41))
    assert len(long) <= 128 and LABEL_RE.match(long)
    assert long != make_label("p" * 60, "d" * 64, "t" * 64, binlog_batch_id(2**40, 2**41 + 1))
    odd = make_label("tm", "my-db", "tä.ble", "chunk-0-g0")
    assert LABEL_RE.match(odd) and odd != make_label("tm", "my-db", "t__ble", "chunk-0-g0")
    with pytest.raises(ValueError):
        make_label("tm", "d", "t", "")


def test_committable_round_trips_as_json():
    c = Committable("d", "t", "l", 42, 7)
    assert Committable.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    assert Committable.from_dict({"database": "d", "table": "t", "label": "l", "txn_id": -1}).txn_id is None


def _pipeline(routes: str = "", mode: str = "ALL_MATCH"):
    text = f"""
source: {{type: mysql, hostname: h, username: u, password: p, tables: "app.\\\\.*"}}
sink:
  type: doris
  fenodes: "127.0.0.1:8030"
  username: root
  password: hunter2
  sink.label-prefix: tm_app
  sink.properties.format: csv
  table.create.properties.replication_num: "1"
{routes}
pipeline: {{name: app, route-mode: {mode}}}
"""
    return parse_pipeline(text, "app.yaml", env={})


ROUTES = """
route:
  - source-table: "app.order_[0-9]+"
    sink-table: "ods.orders"
  - source-table: "app.\\\\.*"
    sink-table: "ods.ods_<>"
    replace-symbol: "<>"
"""


def test_routes_all_match_first_match_and_identity():
    router = TableRouter.from_pipeline(_pipeline(ROUTES))
    assert router.route(TableId("app", "order_1")) == (TableId("ods", "orders"), TableId("ods", "ods_order_1"))
    assert router.route(TableId("app", "users")) == (TableId("ods", "ods_users"),)
    assert router.route(TableId("other", "x")) == (TableId("other", "x"),)
    first = TableRouter.from_pipeline(_pipeline(ROUTES, "FIRST_MATCH"))
    assert first.route(TableId("app", "order_1")) == (TableId("ods", "orders"),)
    shards = [TableId("app", f"order_{i}") for i in range(3)] + [TableId("app", "users")]
    assert first.sources_of(TableId("ods", "orders"), shards) == tuple(shards[:3])
    assert first.is_merged(TableId("ods", "orders"), shards) and not first.is_merged(TableId("ods", "ods_users"), shards)


def test_sink_from_pipeline_takes_options_and_hides_the_password():
    sink = DorisSink.from_pipeline(_pipeline(ROUTES, "FIRST_MATCH"), label_epoch=None, type_mapper=str)
    assert sink.label_prefix == "tm_app" and sink.loader.format == "csv"
    assert sink.table_properties == {"replication_num": "1"}
    assert sink.route(TableId("app", "order_9")) == (TableId("ods", "orders"),)
    assert sink.client.redact("x hunter2 y") == "x *** y"
    assert sink.label(TableId("ods", "orders"), "chunk-1-g0") == "tm_app__ods__orders__chunk-1-g0"


def test_buffers_flush_by_rows_bytes_and_time_and_compact_by_key():
    now = [0.0]
    buf = TableBuffers(max_rows=3, max_bytes=10_000, interval_s=5, clock=lambda: now[0])
    t1, t2 = TableId("d", "a"), TableId("d", "b")
    buf.add(t1, {"id": 1, "v": "x"}, key=(1,))
    buf.add(t1, {"id": 1, "v": "y"}, key=(1,))  # replaces the first
    buf.add(t2, {"id": 9}, key=(9,))
    assert buf.rows(t1) == 1 and not buf.should_flush()
    now[0] = 5.0
    assert buf.should_flush()  # interval
    drained = buf.drain()
    assert drained == {t1: [{"id": 1, "v": "y"}], t2: [{"id": 9}]} and len(buf) == 0 and not buf.should_flush()
    for i in range(3):
        buf.add(t1, {"id": i})
    assert buf.full()
    small = TableBuffers(max_rows=100, max_bytes=50)
    small.add(t1, {"text": "z" * 60})
    assert small.full()


def test_payloads_json_csv_arrow_and_gzip():
    rows = [{"id": 1, "name": "a", DELETE_SIGN: 0}, {"id": 2, "name": None, DELETE_SIGN: "1"}]
    p = PayloadBuilder("json").build(rows, sequence=5)
    lines = b"".join(p.chunks()).decode().splitlines()
    assert [json.loads(x) for x in lines] == [
        {"id": 1, "name": "a", DELETE_SIGN: "0", SEQUENCE_COLUMN: 5},
        {"id": 2, "name": None, DELETE_SIGN: "1", SEQUENCE_COLUMN: 5},
    ]
    assert p.rows == 2 and p.headers["hidden_columns"] == DELETE_SIGN and p.headers["read_json_by_line"] == "true"
    csv = PayloadBuilder("csv").build(iter(rows), columns=["id", "name", SEQUENCE_COLUMN], sequence=5)
    body = b"".join(csv.chunks())
    assert body == b"1\x01a\x015\x010\x022\x01\\N\x015\x011\x02" == b"".join(csv.chunks())  # replayable
    assert csv.rows == 2
    csv.close()
    table = pa.table({"id": [1, 2], "name": ["a", "b"]})
    arrow = PayloadBuilder("arrow", gzip=True).build(table, columns=["id", "name", SEQUENCE_COLUMN], sequence=9)
    data = gzip.decompress(b"".join(arrow.chunks()))
    back = pa.ipc.open_stream(data).read_all()
    assert back.column_names == ["id", "name", SEQUENCE_COLUMN, DELETE_SIGN]
    assert back.column(SEQUENCE_COLUMN).to_pylist() == [9, 9] and arrow.headers["compress_type"] == "gz"


def test_json_payload_datetimes_before_year_1000_keep_four_digit_years():
    import datetime as dt

    rows = [{"id": 1, "at": dt.datetime(16, 7, 14, 17, 17, 17), "d": dt.date(5, 1, 2)}]
    lines = b"".join(PayloadBuilder("json").build(rows).chunks()).decode().splitlines()
    assert json.loads(lines[0])["at"] == "0016-07-14 17:17:17.000000" and json.loads(lines[0])["d"] == "0005-01-02"


def test_schema_change_filters_follow_include_and_exclude():
    from cdc_core.model.events import AddColumnEvent, DropColumnEvent, DropTableEvent, TruncateTableEvent

    t = TableId("d", "t")
    sink = DorisSink.from_pipeline(_pipeline(), label_epoch=None, type_mapper=str, exclude_schema_changes=["drop"])
    assert sink.accepts(AddColumnEvent(t)) and not sink.accepts(DropColumnEvent(t))
    assert not sink.accepts(DropTableEvent(t)) and sink.accepts(TruncateTableEvent(t))
    only = DorisSink.from_pipeline(_pipeline(), label_epoch=None, type_mapper=str, include_schema_changes=["column"])
    assert only.accepts(AddColumnEvent(t)) and only.accepts(DropColumnEvent(t)) and not only.accepts(DropTableEvent(t))
    assert only.apply_schema_change(DropTableEvent(t)).outcome == "ignored"  # no request is sent


def test_partitioning_from_partition_keys_and_auto_partition_properties():
    """The sink's choice per (source, target): a transform's partition-keys first, then the
    auto-partition properties as Flink CDC reads them; the clause the table creator writes."""
    from cdc_core.doris.partitioning import PartitionError, auto_partition_spec, partition_clause
    from cdc_core.model.schema import Column, TableSchema

    text = """
source: {type: mysql, hostname: h, port: 3306, username: u, password: p, tables: db.\\\\.*}
sink:
  type: doris
  fenodes: 127.0.0.1:8030
  username: root
  table.create.auto-partition.properties.default-partition-key: created
  table.create.auto-partition.properties.default-partition-unit: month
  table.create.auto-partition.properties.db.daily.partition-unit: day
  table.create.auto-partition.properties.exclude: db.raw
transform:
  - source-table: db.orders
    partition-keys: region, id
pipeline: {name: p}
"""
    sink = DorisSink.from_pipeline(parse_pipeline(text, "p.yaml", env={}), label_epoch=None)
    orders, daily, raw = TableId("db", "orders"), TableId("db", "daily"), TableId("db", "raw")
    spec = sink.partition_spec(orders, orders)
    assert (spec.columns, spec.origin) == (("region", "id"), "transform[0].partition-keys")
    assert (sink.partition_spec(daily, daily).columns, sink.partition_spec(daily, daily).unit) == (("created",), "day")
    assert sink.partition_spec(raw, raw) is None
    assert auto_partition_spec({"default-partition-key": "created"}, daily) is None  # no unit: none (Flink)

    schema = TableSchema(daily, (Column("id", "int(11)", "int", False), Column("created", "date", "date", False),
                                 Column("note", "text", "text")), ("id", "created"))
    types = {"id": "INT", "created": "DATEV2", "note": "STRING"}
    assert partition_clause(sink.partition_spec(daily, daily), schema, daily, ("id", "created"), types) == \
        "AUTO PARTITION BY RANGE (date_trunc(`created`, 'day')) ()"
    by_note = sink.partition_spec(orders, orders).__class__(("note",), "day", "transform[0].partition-keys")
    with pytest.raises(PartitionError, match="not in its key"):
        partition_clause(by_note, schema, daily, ("id", "created"), types)
    with pytest.raises(PartitionError, match="STRING column"):
        partition_clause(by_note, schema, daily, (), types)


def test_arrow_rows_as_json_lines_by_kernels_say_what_the_row_path_says():
    """Arrow rows sent as JSON (a table that does not load as Arrow: cdc_core/doris/arrow_layout.py)
    are written by Arrow kernels; each line must be the JSON the row-by-row path writes."""
    import datetime as dt
    import decimal

    texts = ['plain', 'quote " and \\ back', 'tab\there\nnewline \x01 ctl', 'ünïcødé 日本', '', None, '"', '\\']
    n = len(texts)
    table = pa.table({
        "id": pa.array(range(-3, n - 3), pa.int64()),
        "text": pa.array(texts, pa.string()),
        "flag": pa.array([True, False, None] + [True] * (n - 3)),
        "ratio": pa.array([1e300, 0.1, -0.5, None, 3.0, 1e-300, 123456789.125, -0.0]),
        "amount": pa.array([decimal.Decimal("12.50"), None] + [decimal.Decimal("-0.05")] * (n - 2), pa.decimal128(10, 2)),
        "day": pa.array([dt.date(999, 1, 2), None] + [dt.date(2024, 2, 29)] * (n - 2), pa.date32()),
        "at": pa.array([dt.datetime(2024, 1, 2, 3, 4, 5, 678000)] * n, pa.timestamp("us")),
        "nothing": pa.nulls(n),
        "big": pa.array([2**63 - 1] * n, pa.int64()),
    })
    clean = table.drop_columns(["text"]).append_column(
        "text", pa.array([t for t in texts if t is None or not any(ord(c) < 32 for c in t)] * 2, pa.string())[:n])
    for data in (table, clean):  # with control characters (their column by json's own escapes) and without
        for delete_sign, sequence in ((True, 7), (False, None)):
            signed = data.append_column(DELETE_SIGN, pa.array([1, 0] * (n // 2), pa.int32()))
            for rows in (data, signed):
                fast = PayloadBuilder("json").build(rows, delete_sign=delete_sign, sequence=sequence)
                slow = PayloadBuilder("json").build(rows.to_pylist(), delete_sign=delete_sign, sequence=sequence)
                fast_lines = b"".join(fast.chunks()).decode().splitlines()
                slow_lines = [json.loads(x) for x in b"".join(slow.chunks()).decode().splitlines()]
                assert fast.rows == n and len(fast_lines) == n
                for line, expected in zip(fast_lines, slow_lines, strict=True):
                    got = json.loads(line)
                    # the row path gets Python values (dates, decimals) the kernels get as text
                    expected = {k: (str(v) if isinstance(v, dt.date | decimal.Decimal) else v)
                                for k, v in expected.items()}
                    if "at" in expected and expected["at"] is not None:
                        assert got["at"] == "2024-01-02 03:04:05.678000"
                        expected["at"] = got["at"]
                    assert got == expected
