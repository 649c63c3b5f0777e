"""Edge values the type matrix does not hold, exact by snapshot and by binlog.

Each value here once changed on one of the two paths: an empty SET (read as NULL), negative
TIMEs with a fraction (mysql-replication decodes the seconds and the fraction of a negative
TIME2 separately), and BIT(64)'s largest value.
"""

from __future__ import annotations

from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.discovery import read_table_schema
from tests.snapshot.conftest import run
from tests.snapshot.test_types import _binlog_reader_rows, _snapshot_rows

COLUMNS = """id INT PRIMARY KEY, st SET('x','y') NULL, stn SET('x','y') NOT NULL,
 tm1 TIME(1), tm3 TIME(3), tm4 TIME(4), tm6 TIME(6), b64 BIT(64)"""

ROWS = {
    1: ("'', '', '-00:00:00.1', '-00:00:00.001', '-12:34:56.7891', '-12:34:56.789012', "
        "b'1111111111111111111111111111111111111111111111111111111111111111'"),
    2: ("NULL, 'y,x', '-838:59:58.9', '-838:59:58.999', '-838:59:58.9999', '-00:00:00.000001', "
        "b'1000000000000000000000000000000000000000000000000000000000000000'"),
    3: "'x', 'x', '838:59:58.9', '-00:00:01.500', '-00:00:00.0001', '-838:59:58.999999', b'1'",
    4: "'x,y', '', '-00:00:01.0', '00:00:00.001', '00:00:00.0000', '12:34:56.789012', b'0'",
}

EXPECTED = {
    1: {"id": 1, "st": "", "stn": "", "tm1": "-00:00:00.1", "tm3": "-00:00:00.001", "tm4": "-12:34:56.7891",
        "tm6": "-12:34:56.789012", "b64": 18446744073709551615},
    2: {"id": 2, "st": None, "stn": "x,y", "tm1": "-838:59:58.9", "tm3": "-838:59:58.999",
        "tm4": "-838:59:58.9999", "tm6": "-00:00:00.000001", "b64": 9223372036854775808},
    3: {"id": 3, "st": "x", "stn": "x", "tm1": "838:59:58.9", "tm3": "-00:00:01.500", "tm4": "-00:00:00.0001",
        "tm6": "-838:59:58.999999", "b64": 1},
    4: {"id": 4, "st": "x,y", "stn": "", "tm1": "-00:00:01.0", "tm3": "00:00:00.001", "tm4": "00:00:00.0000",
        "tm6": "12:34:56.789012", "b64": 0},
}


def test_edge_values_are_exact_by_snapshot_and_by_binlog(root_conn, fresh_db, text_conn, settings):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.edge ({COLUMNS})")
    with root_conn.cursor() as cur:
        low = read_current_offset(cur)
    run(root_conn, *(f"INSERT INTO `{fresh_db}`.edge VALUES ({i}, {v})" for i, v in ROWS.items()))
    with root_conn.cursor() as cur:
        high = read_current_offset(cur)
    schema = read_table_schema(text_conn, TableId(fresh_db, "edge"))
    snapshot = _snapshot_rows(settings, schema, expect_text_fallback=False)
    engine = _binlog_reader_rows(settings, schema, low, high)
    for row_id, expected in EXPECTED.items():
        for name, value in expected.items():
            assert snapshot[row_id][name] == value, f"snapshot row {row_id} column {name}"
            assert engine[row_id][name] == value, f"binlog row {row_id} column {name}"
