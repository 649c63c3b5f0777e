"""BinlogSplitReader against the real MariaDB fixture: ranges, batches, rotations, GTIDs."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

from cdc_core.model.events import DataChangeEvent, Op
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_reader import BinlogReadError, BinlogSplitReader
from tests.binlog.conftest import current_offset, next_server_id, read_schema


def _exec(conn, *sql):
    with conn.cursor() as cur:
        for s in sql:
            cur.execute(s)


def test_read_range_inserts_updates_deletes(settings, schema_lookup, root_conn, fresh_db):
    t = TableId(fresh_db, "orders")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.orders (id bigint primary key, name varchar(64), "
                     "amount decimal(10,2), ts datetime(3))")
    start = current_offset(root_conn)
    _exec(
        root_conn,
        f"INSERT INTO `{fresh_db}`.orders VALUES (1,'a',1.50,'2026-01-01 10:00:00.123'),(2,NULL,NULL,NULL)",
        f"UPDATE `{fresh_db}`.orders SET name='b' WHERE id=1",
        f"DELETE FROM `{fresh_db}`.orders WHERE id=2",
    )
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    events = list(reader.read_range(start, stop, {t}))
    assert [e.op for e in events] == [Op.INSERT, Op.INSERT, Op.UPDATE, Op.DELETE]
    ins = events[0]
    assert ins.after == {"id": 1, "name": "a", "amount": Decimal("1.50"),
                         "ts": dt.datetime(2026, 1, 1, 10, 0, 0, 123000)}
    assert events[1].after == {"id": 2, "name": None, "amount": None, "ts": None}
    assert (events[0].row_index, events[1].row_index) == (0, 1)
    assert events[0].offset == events[1].offset
    assert events[2].before["name"] == "a" and events[2].after["name"] == "b"
    assert events[3].before["id"] == 2 and events[3].after is None
    assert all(start < e.offset <= stop for e in events)
    assert events[0].gtid and events[0].commit_time_ms
    assert all(e.table_id == t for e in events)


def test_read_range_is_half_open_and_filters_tables(settings, schema_lookup, root_conn, fresh_db):
    a, b = TableId(fresh_db, "a"), TableId(fresh_db, "b")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.a (id int primary key)",
          f"CREATE TABLE `{fresh_db}`.b (id int primary key)")
    o0 = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.a VALUES (1)")
    o1 = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.b VALUES (1)", f"INSERT INTO `{fresh_db}`.a VALUES (2)")
    o2 = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    assert [e.after["id"] for e in reader.read_range(o0, o1, {a})] == [1]
    assert [e.after["id"] for e in reader.read_range(o1, o2, {a})] == [2]
    assert [(e.table_id.table, e.after["id"]) for e in reader.read_range(o0, o2, {a, b})] == [
        ("a", 1), ("b", 1), ("a", 2)]
    assert list(reader.read_range(o2, o2, {a})) == []
    with pytest.raises(BinlogReadError):
        list(reader.read_range(o2, o1, {a}))


def test_converter_is_applied(settings, schema_lookup, root_conn, fresh_db):
    t = TableId(fresh_db, "c")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.c (id int primary key, s set('x','y','z'), b bit(10), "
                     "f float, e enum('p','q'))")
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.c VALUES (1, 'z,x', b'1000000001', 1.1, 'q'), (2, '', 0, NULL, NULL)")
    stop = current_offset(root_conn)
    seen = []

    def conv(column, value):
        seen.append(column.name)
        return ("conv", value)

    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, conv)
    events: list[DataChangeEvent] = list(reader.read_range(start, stop, {t}))
    assert events[0].after == {"id": ("conv", 1), "s": ("conv", "x,z"), "b": ("conv", b"\x02\x01"),
                               "f": ("conv", 1.1), "e": ("conv", "q")}
    assert events[1].after["s"] == ("conv", "") and events[1].after["f"] == ("conv", None)  # NULLs reach it too
    assert set(seen) == {"id", "s", "b", "f", "e"}


def test_range_across_rotation(settings, schema_lookup, root_conn, fresh_db):
    t = TableId(fresh_db, "r")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.r (id int primary key)")
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.r VALUES (1)", "FLUSH BINARY LOGS",
          f"INSERT INTO `{fresh_db}`.r VALUES (2)")
    stop = current_offset(root_conn)
    assert stop.file_index == start.file_index + 1
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    events = list(reader.read_range(start, stop, {t}))
    assert [e.after["id"] for e in events] == [1, 2]
    assert events[0].offset.file == start.file and events[1].offset.file == stop.file


def test_batch_ends_on_transaction_boundary_and_resumes(settings, schema_lookup, root_conn, fresh_db):
    t = TableId(fresh_db, "tx")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.tx (id int primary key, v int)")
    start = current_offset(root_conn)
    for i in range(5):
        _exec(root_conn, "BEGIN", f"INSERT INTO `{fresh_db}`.tx VALUES ({i*10}, 0)",
              f"INSERT INTO `{fresh_db}`.tx VALUES ({i*10+1}, 0)", "COMMIT")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    seen = []
    pos = start
    batches = 0
    while pos < stop:
        batch = reader.read_batch(pos, stop, max_events=2, tables={t})
        assert batch.end > pos
        # every batch holds whole transactions: pairs of rows
        assert len(batch.events) % 2 == 0
        assert batch.end.gtid_set
        seen += [e.after["id"] for e in batch.events]
        pos = batch.end
        batches += 1
    assert batches >= 3
    assert seen == [0, 1, 10, 11, 20, 21, 30, 31, 40, 41]
    assert pos == stop
    # the GTID carried at the end equals the server's
    assert pos.gtid_set == stop.gtid_set


def test_batch_advances_when_only_other_tables_change(settings, schema_lookup, root_conn, fresh_db):
    mine, other = TableId(fresh_db, "mine"), TableId(fresh_db, "other")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.mine (id int primary key)",
          f"CREATE TABLE `{fresh_db}`.other (id int primary key)")
    start = current_offset(root_conn)
    _exec(root_conn, *[f"INSERT INTO `{fresh_db}`.other VALUES ({i})" for i in range(3)])
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    batch = reader.read_batch(start, stop, tables={mine})
    assert batch.events == [] and batch.end == stop
    assert other not in {e.table_id for e in batch.events}


def test_batch_to_end_of_log_without_stop(settings, schema_lookup, root_conn, fresh_db):
    t = TableId(fresh_db, "e")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.e (id int primary key)")
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.e VALUES (1)")
    end = current_offset(root_conn)
    batch = BinlogSplitReader(settings, next_server_id(), schema_lookup, None).read_batch(start, tables={t})
    assert [e.after["id"] for e in batch.events] == [1]
    assert batch.end == end


def test_resume_offset_gtid_matches_server(settings, schema_lookup, root_conn, fresh_db):
    start = current_offset(root_conn)
    assert start.gtid_set
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    stripped = BinlogOffset(start.file, start.position)
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.g (id int primary key)", f"INSERT INTO `{fresh_db}`.g VALUES (1)")
    stop = current_offset(root_conn)
    batch = reader.read_batch(stripped, stop)
    assert batch.end == stop and batch.end.gtid_set == stop.gtid_set


def test_from_source_options(mysql_server, root_conn, fresh_db):
    from cdc_core.config.source_options import MySqlSourceOptions
    from cdc_core.mysql.server_ids import stream_server_id

    ep = mysql_server.endpoint
    base = next_server_id() + 500
    source = MySqlSourceOptions.model_validate({
        "type": "mysql", "hostname": ep.host, "port": ep.port, "username": ep.user, "password": ep.password,
        "tables": f"{fresh_db}.orders", "server-id": f"{base}-{base + 4}", "server-time-zone": "Asia/Tokyo",
        "heartbeat.interval": "5s"})
    t = TableId(fresh_db, "orders")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.orders (id int primary key, amount decimal(6,2), "
                     "at timestamp(3) NULL, ok tinyint(1))",
          f"CREATE TABLE `{fresh_db}`.other (id int primary key)")
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.orders VALUES (1, 2.5, '2026-01-01 00:00:00.250', 1)",
          f"INSERT INTO `{fresh_db}`.other VALUES (1)")
    stop = current_offset(root_conn)
    with BinlogSplitReader.from_source(source, lambda x: read_schema(root_conn, x)) as reader:
        assert reader.server_id == stream_server_id(source) == base and reader.heartbeat_interval == 5.0
        batch = reader.read_batch(start, stop)
    assert [(e.table_id, e.after) for e in batch.events] == [
        (t, {"id": 1, "amount": "2.50", "at": "2026-01-01 09:00:00.250", "ok": True})]
    assert "cdc" not in repr(reader.settings).replace("user='cdc'", "")  # no password in repr


def test_statement_dml_of_other_tables_does_not_cut_a_transaction(settings, schema_lookup, root_conn, fresh_db):
    mine = TableId(fresh_db, "mine")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.mine (id int primary key)",
          f"CREATE TABLE `{fresh_db}`.audit (id int primary key)")
    start = current_offset(root_conn)
    _exec(root_conn, "SET SESSION binlog_format = 'STATEMENT'", "BEGIN",
          f"INSERT INTO `{fresh_db}`.audit VALUES (1)", f"INSERT INTO `{fresh_db}`.audit VALUES (2)", "COMMIT",
          "SET SESSION binlog_format = 'ROW'", f"INSERT INTO `{fresh_db}`.mine VALUES (1)")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None, is_captured=lambda t: t == mine)
    ends = []
    pos = start
    while pos < stop:
        batch = reader.read_batch(pos, stop, max_events=1)
        ends.append(batch.end)
        pos = batch.end
    with root_conn.cursor() as cur:
        cur.execute(f"SHOW BINLOG EVENTS IN '{start.file}' FROM {start.position}")
        events = cur.fetchall()
    # every batch ends on a transaction end (Xid / COMMIT), never right after one of the statements
    query_ends = {e[4] for e in events if e[2] == "Query" and "INSERT INTO" in e[5]}
    assert not query_ends & {e.position for e in ends}
    assert pos == stop


def test_resume_from_a_gtid(settings, schema_lookup, root_conn, fresh_db):
    t = TableId(fresh_db, "g2")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.g2 (id int primary key)", f"INSERT INTO `{fresh_db}`.g2 VALUES (1)")
    mark = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.g2 VALUES (2)", f"INSERT INTO `{fresh_db}`.g2 VALUES (3)")
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    start = reader.offset_for_gtid(mark.gtid_set)
    assert start.file == mark.file and start.position >= mark.position
    assert [e.after["id"] for e in reader.read_batch(start, tables={t}).events] == [2, 3]


def test_repeated_table_maps_are_parsed_once(settings, schema_lookup, root_conn, fresh_db, monkeypatch):
    """Single-row statements write a TableMap before every row; each distinct one is parsed by
    mysql-replication once (``cdc_core/mysql/table_map_cache.py``), and every row still decodes
    against its own table."""
    from cdc_core.mysql import table_map_cache

    a, b = TableId(fresh_db, "a"), TableId(fresh_db, "b")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.a (id int primary key, name varchar(16))",
          f"CREATE TABLE `{fresh_db}`.b (id int primary key, amount decimal(6,2), at datetime)")
    start = current_offset(root_conn)
    root_conn.begin()
    for i in range(1, 31):
        _exec(root_conn, f"INSERT INTO `{fresh_db}`.a VALUES ({i}, 'n{i}')",
              f"INSERT INTO `{fresh_db}`.b VALUES ({i}, {i}.25, '2026-01-0{1 + i % 9} 10:00:00')")
        if i % 10 == 0:
            root_conn.commit()
            root_conn.begin()
    root_conn.commit()
    stop = current_offset(root_conn)
    parsed: list[tuple[str, str]] = []
    library_init = table_map_cache._library_init

    def counting_init(self, *args, **kwargs):
        library_init(self, *args, **kwargs)
        parsed.append((self.schema, self.table))

    table_map_cache.clear()
    monkeypatch.setattr(table_map_cache, "_library_init", counting_init)
    reader = BinlogSplitReader(settings, next_server_id(), schema_lookup, None)
    events = list(reader.read_range(start, stop, {a, b}))
    assert [(e.table_id, e.after["id"]) for e in events] == [(t, i) for i in range(1, 31) for t in (a, b)]
    assert all(e.after == {"id": e.after["id"], "name": f"n{e.after['id']}"} for e in events if e.table_id == a)
    assert all(e.after["amount"] == Decimal(f"{e.after['id']}.25") for e in events if e.table_id == b)
    assert sorted(p for p in parsed if p[0] == fresh_db) == [(fresh_db, "a"), (fresh_db, "b")]
