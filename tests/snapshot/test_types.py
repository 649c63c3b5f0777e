"""The type matrix: every MySQL type with its edge values → the expected Doris value, on both paths.

The snapshot path reads the table as Arrow (``SnapshotSplitReader.scan_batches``); the binlog
path decodes the INSERTs with the binlog engine's reader and converts with the same
``DorisValueConverter``. Both must equal the expected values written out here.
"""

from __future__ import annotations

import datetime as dt

import pytest

from cdc_core.model.schema import Column, TableId
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.binlog_values import RowImageConverter
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import DorisValueConverter, doris_type, to_doris_value
from tests.snapshot.conftest import reader, run, server_id_range

COLUMNS = """
 id INT PRIMARY KEY,
 ti TINYINT, tiu TINYINT UNSIGNED, t1 TINYINT(1), si SMALLINT, siu SMALLINT UNSIGNED,
 mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED, bi BIGINT, biu BIGINT UNSIGNED,
 d DECIMAL(10,2), d65 DECIMAL(65,30), du DECIMAL(5,0) UNSIGNED, f FLOAT, db DOUBLE,
 b1 BIT(1), b8 BIT(8), b64 BIT(64), y YEAR,
 dt DATE, dtm DATETIME, dtm3 DATETIME(3), dtm6 DATETIME(6),
 ts TIMESTAMP NULL, ts6 TIMESTAMP(6) NULL, tm TIME, tm3 TIME(3),
 c CHAR(5), vc VARCHAR(20), tx TEXT, lat VARCHAR(10) CHARACTER SET latin1, g VARCHAR(10) CHARACTER SET gbk,
 bn BINARY(4), vb VARBINARY(10), bl BLOB,
 e ENUM('a','b','c'), st SET('x','y','z'), j JSON, geo GEOMETRY, pt POINT,
 dz DATE NOT NULL DEFAULT '2000-01-01', sz SET('p','q') NOT NULL DEFAULT ''
"""

ROW_MAX = """(1, -128, 255, 1, -32768, 65535, -8388608, 16777215, -2147483648, 4294967295,
 -9223372036854775808, 18446744073709551615,
 -12345678.99, 12345678901234567890123456789012345.123456789012345678901234567890, 99999, 3.14, 2.718281828459045,
 b'1', b'10101010', b'1111111111111111111111111111111111111111111111111111111111111111', 2155,
 '9999-12-31', '9999-12-31 23:59:59', '2024-02-29 13:14:15.120', '1000-01-01 00:00:00.000001',
 '1970-01-01 00:00:01', '2038-01-19 03:14:07.999999', '-838:59:59', '838:59:58.999',
 'ab', 'héllo ✓ 😀', 'long text\nwith newline', 'café', '中文', x'0001', x'ff00', x'deadbeef',
 'c', 'x,z', '{"a": [1, 2.5, "x"], "b": null}', ST_GeomFromText('POLYGON((0 0,1 0,1 1,0 0))'),
 ST_GeomFromText('POINT(1.5 -2)'), '2024-01-02', 'q,p')"""

ROW_MIN = """(2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9223372036854775807, 0, 0.00, -0.000000000000000000000000000001, 0, -1.5e-38,
 -1.7976931348623157e308, b'0', b'00000000', b'0', 1901, '1000-01-01', '1000-01-01 00:00:00',
 '1999-12-31 23:59:59.999', '2000-01-01 00:00:00.000000', '2001-02-03 04:05:06', '2020-06-30 12:00:00.5',
 '00:00:00', '-00:00:01.500', '', '', '', '', '', '', '', '', 'a', '', '[]', NULL, NULL, '1970-01-01', '')"""

ROW_NULL = "(3" + ", NULL" * 41 + ", '2000-01-01', 'p')"

# Zero / partly-zero dates and YEAR 0000, stored with a permissive sql_mode.
ROW_ZERO = "(4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, " \
    "0, '0000-00-00', '0000-00-00 00:00:00', '2024-00-10 00:00:00.000', NULL, '0000-00-00 00:00:00', NULL, NULL, NULL, " \
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, '0000-00-00', '')"

NULLS = {k: None for k in ["ti", "tiu", "t1", "si", "siu", "mi", "miu", "i", "iu", "bi", "biu", "d", "d65", "du", "f", "db", "b1", "b8", "b64", "y", "dt", "dtm", "dtm3", "dtm6", "ts", "ts6", "tm", "tm3", "c", "vc", "tx", "lat", "g", "bn", "vb", "bl", "e", "st", "j", "geo", "pt"]}

EXPECTED = {
    1: {
        "id": 1, "ti": -128, "tiu": 255, "t1": True, "si": -32768, "siu": 65535, "mi": -8388608, "miu": 16777215,
        "i": -2147483648, "iu": 4294967295, "bi": -9223372036854775808, "biu": 18446744073709551615,
        "d": "-12345678.99", "d65": "12345678901234567890123456789012345.123456789012345678901234567890",
        "du": "99999", "f": 3.14, "db": 2.718281828459045, "b1": True, "b8": 170, "b64": 18446744073709551615,
        "y": 2155, "dt": "9999-12-31", "dtm": "9999-12-31 23:59:59", "dtm3": "2024-02-29 13:14:15.120",
        "dtm6": "1000-01-01 00:00:00.000001", "ts": "1970-01-01 00:00:01", "ts6": "2038-01-19 03:14:07.999999",
        "tm": "-838:59:59", "tm3": "838:59:58.999", "c": "ab", "vc": "héllo ✓ 😀", "tx": "long text\nwith newline",
        "lat": "café", "g": "中文", "bn": "AAEAAA==", "vb": "/wA=", "bl": "3q2+7w==", "e": "c", "st": "x,z",
        "j": '{"a": [1, 2.5, "x"], "b": null}', "geo": "POLYGON((0 0,1 0,1 1,0 0))", "pt": "POINT(1.5 -2)",
        "dz": "2024-01-02", "sz": "p,q",
    },
    2: {
        "id": 2, "ti": 0, "tiu": 0, "t1": False, "si": 0, "siu": 0, "mi": 0, "miu": 0, "i": 0, "iu": 0,
        "bi": 9223372036854775807, "biu": 0, "d": "0.00", "d65": "-0.000000000000000000000000000001", "du": "0",
        "f": -1.5e-38, "db": -1.7976931348623157e308, "b1": False, "b8": 0, "b64": 0, "y": 1901,
        "dt": "1000-01-01", "dtm": "1000-01-01 00:00:00", "dtm3": "1999-12-31 23:59:59.999",
        "dtm6": "2000-01-01 00:00:00.000000", "ts": "2001-02-03 04:05:06", "ts6": "2020-06-30 12:00:00.500000",
        "tm": "00:00:00", "tm3": "-00:00:01.500", "c": "", "vc": "", "tx": "", "lat": "", "g": "",
        "bn": "AAAAAA==", "vb": "", "bl": "", "e": "a", "st": "", "j": "[]", "geo": None, "pt": None,
        "dz": "1970-01-01", "sz": "",
    },
    3: {"id": 3, **NULLS, "dz": "2000-01-01", "sz": "p"},
    4: {"id": 4, **NULLS, "y": 0, "dt": None, "dtm": None, "dtm3": None, "ts": None, "dz": "1970-01-01", "sz": ""},
}


@pytest.fixture
def matrix(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.ty ({COLUMNS})")
    with root_conn.cursor() as cur:
        low = read_current_offset(cur)
    run(root_conn, "SET SESSION sql_mode = ''",
        f"INSERT INTO `{fresh_db}`.ty VALUES {ROW_MAX}, {ROW_MIN}, {ROW_NULL}",
        f"INSERT INTO `{fresh_db}`.ty VALUES {ROW_ZERO}",
        "SET SESSION sql_mode = DEFAULT")
    with root_conn.cursor() as cur:
        high = read_current_offset(cur)
    schema = read_table_schema(text_conn, TableId(fresh_db, "ty"))
    return schema, low, high


def _snapshot_rows(settings, schema, tz="UTC", end=None, expect_text_fallback=True):
    """Rows through the chunk reader's Arrow path. The full table holds zero dates (row 4), which
    the native reader rejects, so the reader must fall back to server-rendered text; rows 1-3
    alone (``end=(4,)``) are read natively."""
    split = SnapshotSplit(schema.table_id, 0, None, end, ("id",))
    with reader(settings, server_time_zone=tz) as r:
        rows = {row["id"]: row for batch in r.scan_batches(schema, split) for row in batch.to_pylist()}
        assert (schema.table_id in r._safe_tables) is expect_text_fallback
    return rows


def _binlog_rows(settings, schema, low, high, tz="UTC"):
    """The INSERTs as pymysqlreplication decodes them, through the slow ``RowImageConverter`` path."""
    from pymysqlreplication import BinLogStreamReader
    from pymysqlreplication.row_event import WriteRowsEvent

    stream = BinLogStreamReader(
        connection_settings=settings.as_replication_dict(), server_id=server_id_range()[0], blocking=False,
        resume_stream=True, log_file=low.file, log_pos=low.position, is_mariadb=False,
        only_events=[WriteRowsEvent], only_schemas=[schema.table_id.database], only_tables=[schema.table_id.table],
    )
    # Tidemark's slow path: the library's values, normalised (an empty SET told from NULL by the
    # row's none_sources, negative fractional TIMEs repaired), then the shared converter
    images = RowImageConverter(DorisValueConverter(tz), fast=False)
    rows = {}
    try:
        for ev in stream:
            if ev.packet.log_pos > high.position:
                break
            for _before, converted in images.images(ev, schema):
                rows[converted["id"]] = converted
    finally:
        stream.close()
    return rows


def _binlog_reader_rows(settings, schema, low, high, tz="UTC"):
    """The same INSERTs through the binlog engine's ``BinlogSplitReader`` with our converter."""
    binlog = BinlogSplitReader(settings, server_id_range()[0], lambda _t: schema, DorisValueConverter(tz))
    events = list(binlog.read_range(low, high, {schema.table_id}))
    return {e.after["id"]: e.after for e in events}


def test_type_matrix_both_paths_give_the_expected_values(matrix, settings):
    schema, low, high = matrix
    snapshot = _snapshot_rows(settings, schema)
    binlog = _binlog_rows(settings, schema, low, high)
    for row_id, expected in EXPECTED.items():
        for name, value in expected.items():
            assert snapshot[row_id][name] == value, f"snapshot row {row_id} column {name}"
            assert binlog[row_id][name] == value, f"binlog row {row_id} column {name}"
        assert snapshot[row_id] == binlog[row_id]


@pytest.mark.parametrize("tz", ["UTC", "+08:00", "America/New_York"])
def test_native_and_text_snapshot_reads_agree(matrix, settings, tz):
    schema, _, _ = matrix
    native = _snapshot_rows(settings, schema, tz, end=(4,), expect_text_fallback=False)
    text = _snapshot_rows(settings, schema, tz)
    assert native == {k: v for k, v in text.items() if k < 4}
    if tz == "UTC":
        assert native == {k: EXPECTED[k] for k in (1, 2, 3)}


def test_binlog_split_reader_gives_the_same_rows(matrix, settings):
    schema, low, high = matrix
    snapshot = _snapshot_rows(settings, schema)
    engine = _binlog_reader_rows(settings, schema, low, high)
    for row_id in (1, 2, 3, 4):
        assert engine[row_id] == snapshot[row_id] == EXPECTED[row_id]


def test_binlog_split_reader_applies_the_zero_date_rule_to_not_null_columns(matrix, settings):
    schema, low, high = matrix
    assert _binlog_reader_rows(settings, schema, low, high)[4]["dz"] == "1970-01-01"


@pytest.mark.parametrize("tz", ["+08:00", "Asia/Shanghai", "America/New_York"])
def test_timestamps_render_in_server_time_zone_on_both_paths(matrix, settings, tz):
    schema, low, high = matrix
    snapshot = _snapshot_rows(settings, schema, tz)
    binlog = _binlog_rows(settings, schema, low, high, tz)
    zone = dt.timezone(dt.timedelta(hours=8)) if tz == "+08:00" else __import__("zoneinfo").ZoneInfo(tz)
    utc = dt.datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=dt.UTC)
    expected = utc.astimezone(zone).strftime("%Y-%m-%d %H:%M:%S.%f")
    assert snapshot[1]["ts6"] == binlog[1]["ts6"] == expected
    assert snapshot[1]["dtm"] == binlog[1]["dtm"] == "9999-12-31 23:59:59"  # DATETIME has no zone
    assert snapshot[4]["ts"] == binlog[4]["ts"] is None  # zero TIMESTAMP, nullable
    assert snapshot == binlog


def test_doris_types(matrix):
    schema, _, _ = matrix
    got = {c.name: doris_type(c) for c in schema.columns}
    assert got == {
        "id": "INT", "ti": "TINYINT", "tiu": "SMALLINT", "t1": "BOOLEAN", "si": "SMALLINT", "siu": "INT",
        "mi": "INT", "miu": "INT", "i": "INT", "iu": "BIGINT", "bi": "BIGINT", "biu": "LARGEINT",
        "d": "DECIMALV3(10,2)", "d65": "STRING", "du": "DECIMALV3(5,0)", "f": "FLOAT", "db": "DOUBLE",
        "b1": "BOOLEAN", "b8": "BIGINT", "b64": "LARGEINT", "y": "INT", "dt": "DATEV2", "dtm": "DATETIMEV2(0)",
        "dtm3": "DATETIMEV2(3)", "dtm6": "DATETIMEV2(6)", "ts": "DATETIMEV2(0)", "ts6": "DATETIMEV2(6)",
        "tm": "STRING", "tm3": "STRING", "c": "CHAR(20)", "vc": "VARCHAR(80)", "tx": "STRING", "lat": "VARCHAR(30)",
        "g": "VARCHAR(30)", "bn": "STRING", "vb": "STRING", "bl": "STRING", "e": "STRING", "st": "STRING",
        "j": "JSONB", "geo": "STRING", "pt": "STRING", "dz": "DATEV2", "sz": "STRING",
    }
    t1 = schema.column("t1")
    assert doris_type(t1, tinyint1_as_boolean=False) == "TINYINT"
    assert to_doris_value(t1, 1, tinyint1_as_boolean=False) == 1


def test_python_values_in_the_shapes_pymysql_delivers():
    """pymysql's own types (the binlog helper may normalise to them) convert like the binlog's."""
    dec = Column("d", "decimal(10,4)", "decimal", numeric_precision=10, numeric_scale=4)
    from decimal import Decimal

    assert to_doris_value(dec, Decimal("1.5")) == "1.5000"
    assert to_doris_value(dec, Decimal("-0.0000")) == "0.0000"
    bit = Column("b", "bit(12)", "bit", numeric_precision=12)
    assert to_doris_value(bit, b"\x0f\xff") == 4095 == to_doris_value(bit, "111111111111")
    st = Column("s", "set('a','b','c')", "set")
    assert to_doris_value(st, {"c", "a"}) == "a,c" == to_doris_value(st, "a,c")
    tm = Column("t", "time(6)", "time", datetime_precision=6)
    assert to_doris_value(tm, dt.timedelta(days=-1, seconds=86399, microseconds=1)) == "-00:00:00.999999"
    js = Column("j", "json", "json")
    assert to_doris_value(js, {"k": [1, None]}) == '{"k": [1, null]}'
    bn = Column("b", "binary(3)", "binary", char_length=3)
    assert to_doris_value(bn, b"a") == "YQAA"  # right-padded with 0x00 like the server's BINARY


def test_uuid_and_inet_values_in_the_shapes_both_paths_deliver():
    """The snapshot's text passes through; the binlog's bytes (trailing zero bytes cut off, or
    mysql-replication's '' for none left) are padded and rendered; anything else is refused."""
    uu, i6, i4 = (Column(t, t, t) for t in ("uuid", "inet6", "inet4"))
    assert to_doris_value(uu, "6ccd780c-baba-1026-9564-5b8c656024db") == "6ccd780c-baba-1026-9564-5b8c656024db"
    assert to_doris_value(uu, bytes.fromhex("6ccd780cbaba102695645b8c656024db")) == \
        "6ccd780c-baba-1026-9564-5b8c656024db"
    assert to_doris_value(uu, b"\x10") == "10000000-0000-0000-0000-000000000000"
    assert to_doris_value(uu, "") == to_doris_value(uu, b"") == "00000000-0000-0000-0000-000000000000"
    assert to_doris_value(i6, b" \x01\r\xb8") == "2001:db8::"
    assert to_doris_value(i6, bytes(10) + b"\xff\xff\x01\x02\x03\x04") == "::ffff:1.2.3.4"
    assert to_doris_value(i6, bytes(12) + b"\x01\x02\x03\x04") == "::1.2.3.4"  # IPv4-compatible
    assert to_doris_value(i6, bytes(15) + b"\x01") == "::1"  # the zero run is longer than 96 bits
    assert to_doris_value(i6, bytes.fromhex("00010000000100010001000100010001")) == "1::1:1:1:1:1:1"
    assert to_doris_value(i6, bytes.fromhex("fe800000000000000001000000000000")) == "fe80::1:0:0:0"
    assert to_doris_value(i6, b"") == "::" and to_doris_value(i6, None) is None
    assert to_doris_value(i4, b"\x0a") == "10.0.0.0" and to_doris_value(i4, b"") == "0.0.0.0"
    with pytest.raises(ValueError, match="INET6 value has 17 bytes"):
        to_doris_value(i6, bytes(17))
    assert [doris_type(c) for c in (uu, i6, i4)] == ["VARCHAR(36)", "VARCHAR(39)", "VARCHAR(15)"]
