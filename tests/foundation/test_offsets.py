"""Binlog offsets: total order across rotations, sequence values, reading the server's position."""

from __future__ import annotations

import pymysql
import pytest

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.binlog_status import read_current_offset


def test_order_follows_file_index_then_position():
    a = BinlogOffset("binlog.000001", 900)
    b = BinlogOffset("binlog.000002", 4)
    c = BinlogOffset("binlog.000002", 120, gtid_set="0-1-9")
    assert a < b < c and sorted([c, a, b]) == [a, b, c]
    assert a.sequence < b.sequence < c.sequence
    assert BinlogOffset("binlog.000002", 120) == c, "the GTID set rides along; it does not order"
    assert BinlogOffset.from_dict(c.to_dict()) == c and BinlogOffset.from_dict(c.to_dict()).gtid_set == "0-1-9"


def test_bad_offsets_are_refused():
    with pytest.raises(ValueError, match="numeric suffix"):
        BinlogOffset("binlog", 4)
    with pytest.raises(ValueError, match="≥ 0"):
        BinlogOffset("binlog.000001", -1)


def test_read_current_offset_moves_with_writes(mysql_server, fresh_db, root_conn):
    conn = pymysql.connect(host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, user="cdc",
                           password="cdc")
    with conn.cursor() as cur:
        before = read_current_offset(cur)
        with root_conn.cursor() as w:
            w.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
            w.execute(f"INSERT INTO `{fresh_db}`.t VALUES (1)")
        after = read_current_offset(cur)
    conn.close()
    assert after > before
    assert after.gtid_set and after.gtid_set.startswith("0-1-")
