"""Startup modes resolved against the real server, and the purged-binlog stop."""

from __future__ import annotations

import time
from pathlib import Path

import pymysql
import pytest

from cdc_core.config.source_options import MySqlSourceOptions
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_reader import BinlogSplitReader, Heartbeat
from cdc_core.mysql.purge import BinlogPurgedError
from cdc_core.mysql.startup import StartupError, resolve_startup
from devstack.mysql import MariaDBServer
from devstack.procs import free_port
from tests.binlog.conftest import current_offset, next_server_id, read_schema


def _exec(conn, *sql):
    with conn.cursor() as cur:
        for s in sql:
            cur.execute(s)


def _source(mysql_server, db: str, **options) -> MySqlSourceOptions:
    ep = mysql_server.endpoint
    data = {"type": "mysql", "hostname": ep.host, "port": ep.port, "username": ep.user, "password": ep.password,
            "tables": f"{db}.\\.*", "server-id": f"{next_server_id()}-{next_server_id()}"}
    data.update(options)
    return MySqlSourceOptions.model_validate(data)


def _ids(settings, root_conn, t, start, stop=None):
    reader = BinlogSplitReader(settings, next_server_id(), lambda x: read_schema(root_conn, x), None)
    batch = reader.read_batch(start, stop, tables={t})
    return [e.after["id"] for e in batch.events if e.after]


def test_initial_and_snapshot_need_a_snapshot(mysql_server, fresh_db):
    plan = resolve_startup(_source(mysql_server, fresh_db))
    assert plan.snapshot and plan.start is None and not plan.stop_at_max_high_watermark
    plan = resolve_startup(_source(mysql_server, fresh_db, **{"scan.startup.mode": "snapshot"}))
    assert plan.snapshot and plan.stop_at_max_high_watermark


def test_latest_and_earliest_offset(mysql_server, settings, root_conn, fresh_db):
    t = TableId(fresh_db, "l")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.l (id int primary key)", f"INSERT INTO `{fresh_db}`.l VALUES (1)")
    latest = resolve_startup(_source(mysql_server, fresh_db, **{"scan.startup.mode": "latest-offset"}))
    assert not latest.snapshot and latest.start == current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.l VALUES (2)")
    assert _ids(settings, root_conn, t, latest.start) == [2]
    earliest = resolve_startup(_source(mysql_server, fresh_db, **{"scan.startup.mode": "earliest-offset"}))
    with root_conn.cursor() as cur:
        cur.execute("SHOW BINARY LOGS")
        first = cur.fetchone()[0]
    assert earliest.start == BinlogOffset(first, 4)
    reader = BinlogSplitReader(settings, next_server_id(), lambda x: None, None, is_captured=lambda x: False)
    assert reader.read_batch(earliest.start, max_events=5).end > earliest.start


def test_specific_offset_file_pos_skip_and_gtid(mysql_server, settings, root_conn, fresh_db):
    t = TableId(fresh_db, "s")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.s (id int primary key)")
    mark = current_offset(root_conn)
    _exec(root_conn, *[f"INSERT INTO `{fresh_db}`.s VALUES ({i})" for i in range(1, 4)])
    by_pos = resolve_startup(_source(mysql_server, fresh_db, **{
        "scan.startup.mode": "specific-offset", "scan.startup.specific-offset.file": mark.file,
        "scan.startup.specific-offset.pos": mark.position}))
    assert by_pos.start == mark and not by_pos.snapshot
    assert _ids(settings, root_conn, t, by_pos.start) == [1, 2, 3]
    # one transaction is GTID, TableMap, Write, Xid: skipping 4 events skips the first insert
    skipped = resolve_startup(_source(mysql_server, fresh_db, **{
        "scan.startup.mode": "specific-offset", "scan.startup.specific-offset.file": mark.file,
        "scan.startup.specific-offset.pos": mark.position, "scan.startup.specific-offset.skip-events": 4,
        "scan.startup.specific-offset.skip-rows": 1}))
    assert skipped.skip_rows == 1
    assert _ids(settings, root_conn, t, skipped.start) == [2, 3]
    by_gtid = resolve_startup(_source(mysql_server, fresh_db, **{
        "scan.startup.mode": "specific-offset", "scan.startup.specific-offset.gtid-set": mark.gtid_set}))
    assert _ids(settings, root_conn, t, by_gtid.start) == [1, 2, 3]
    assert by_gtid.start.file == mark.file and by_gtid.start.position >= mark.position
    with pytest.raises(StartupError):
        resolve_startup(_source(mysql_server, fresh_db, **{
            "scan.startup.mode": "specific-offset", "scan.startup.specific-offset.gtid-set": "0-1-999999999"}))


def test_timestamp(mysql_server, settings, root_conn, fresh_db):
    t = TableId(fresh_db, "ts")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.ts (id int primary key)", f"INSERT INTO `{fresh_db}`.ts VALUES (1)")
    time.sleep(1.1)
    at = int(time.time() * 1000)
    time.sleep(1.0 - (at % 1000) / 1000 + 0.05)  # binlog times are whole seconds: move to the next second
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.ts VALUES (2)", f"INSERT INTO `{fresh_db}`.ts VALUES (3)")
    plan = resolve_startup(_source(mysql_server, fresh_db, **{
        "scan.startup.mode": "timestamp", "scan.startup.timestamp-millis": at}))
    assert not plan.snapshot
    assert _ids(settings, root_conn, t, plan.start) == [2, 3]


def test_stream_blocks_and_heartbeats(settings, root_conn, fresh_db):
    t = TableId(fresh_db, "hb")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.hb (id int primary key)")
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.hb VALUES (1)")
    end = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), lambda x: read_schema(root_conn, x), None,
                               heartbeat_interval=0.5, is_captured=lambda x: x == t)
    seen, beats = [], []
    for item in reader.stream(start):
        if isinstance(item, Heartbeat):
            beats.append(item.offset)
            if item.offset >= end and len(beats) >= 3:
                break
        else:
            seen.append(item.after["id"])
    assert seen == [1]
    assert beats[-1] == end  # idle: heartbeats keep reporting the resume point


@pytest.mark.integration  # starts its own server
def test_purged_binlog_stops_with_recovery_advice(tmp_path: Path):
    server = MariaDBServer(tmp_path / "purge", port=free_port(), server_id=2)
    server.start()
    try:
        conn = pymysql.connect(unix_socket=server.endpoint.root_socket, user="root", autocommit=True)
        _exec(conn, "CREATE DATABASE p", "CREATE TABLE p.t (id int primary key)", "INSERT INTO p.t VALUES (1)")
        committed = current_offset(conn)
        _exec(conn, "FLUSH BINARY LOGS", "INSERT INTO p.t VALUES (2)", "FLUSH BINARY LOGS")
        newest = current_offset(conn)
        remaining = server.purge_binary_logs_to(newest.file)
        assert committed.file not in remaining
        ep = server.endpoint
        settings = {"host": ep.host, "port": ep.port, "user": ep.user, "password": ep.password}
        reader = BinlogSplitReader(settings, 77, lambda x: read_schema(conn, x), None)
        with pytest.raises(BinlogPurgedError) as info:
            reader.read_batch(committed)
        message = str(info.value)
        assert committed.file in message and remaining[0] in message and "new snapshot" in message
        assert ep.password not in message.replace("cdc_", "")
        with pytest.raises(BinlogPurgedError):
            list(reader.read_range(committed, newest))
        source = MySqlSourceOptions.model_validate({
            "type": "mysql", "hostname": ep.host, "port": ep.port, "username": ep.user, "password": ep.password,
            "tables": "p.t", "scan.startup.mode": "specific-offset",
            "scan.startup.specific-offset.file": committed.file, "scan.startup.specific-offset.pos": committed.position})
        with pytest.raises(BinlogPurgedError):
            resolve_startup(source)
        conn.close()
    finally:
        server.stop()
