"""Rows read from a real binlog written with ``binlog_row_metadata=MINIMAL`` (no column names).

The tests switch the session's MariaDB to MINIMAL and back (``minimal`` fixture): the setting is
global-only, tests of one session run one at a time, and every reader here reads its own
``fresh_db`` tables, so no other test sees a TableMap without names. A private server would
cost a server start per test for no more isolation.
"""

from __future__ import annotations

from typing import Any

import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.row_event import TableMapEvent

from cdc_core.model.events import DataChangeEvent
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.ddl import DdlParseError
from cdc_core.mysql.table_map_binding import SchemaHistoryMismatchError
from cdc_core.mysql.types import DorisValueConverter
from tests.binlog.conftest import current_offset, next_server_id, read_schema

COLUMNS = ("id BIGINT UNSIGNED PRIMARY KEY, small TINYINT UNSIGNED, big BIGINT UNSIGNED, `period` INT, "
           "name VARCHAR(20), note TEXT, u8 VARCHAR(10) CHARACTER SET utf8mb4, "
           "e ENUM('a','c,\\'d','\u00e9t\u00e9'), s SET('x','y''z','w'), f FLOAT(30), f4 FLOAT, "
           "d DECIMAL(12,3), b VARBINARY(8), j JSON, t TIME(2), dt DATETIME(3), bit5 BIT(5), "
           "m MEDIUMINT, sm SMALLINT UNSIGNED, flag TINYINT(1), y YEAR, dd DATE, ts TIMESTAMP(6) NULL, "
           "ch CHAR(3), bin BINARY(4), bl BLOB, mt MEDIUMTEXT CHARACTER SET utf8mb4, du DECIMAL(5,2) UNSIGNED, "
           "dbl DOUBLE, g POINT, uid UUID, ip6 INET6, ip4 INET4")
VALUES = ("(%s, 250, 18446744073709551610, 7, 'caf\u00e9 \u00fcber', 'na\u00efve text', '\U0001f600 ok', "
          "'c,''d', 'y''z,w', 1.25e300, 1.1, -12.345, x'00ff10', '{\"k\": [1, \"\u00e9\"]}', '-01:02:03.45', "
          "'2026-11-23 10:11:12.345', b'10101', -8000000, 65000, 1, 2026, '2026-02-28', "
          "'2026-11-23 01:02:03.456789', 'àb', x'0102', x'00ff', '日本🚀', 999.99, "
          "-2.5e-300, ST_GeomFromText('POINT(1 2)'), '123e4567-e89b-12d3-a456-426614174000', '2001:db8::1', "
          "'10.0.0.1')")


def _exec(conn: Any, *sql: str) -> None:
    with conn.cursor() as cur:
        for s in sql:
            cur.execute(s)


@pytest.fixture
def minimal(root_conn):
    _exec(root_conn, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        yield
    finally:
        _exec(root_conn, "SET GLOBAL binlog_row_metadata = 'FULL'")


def _table_map_names(settings, start, stop) -> list[list[str | None]]:
    """The column names each TableMap in ``[start, stop)`` carries, read with mysql-replication alone."""
    stream = BinLogStreamReader(connection_settings=settings, server_id=next_server_id(), resume_stream=True,
                                blocking=False, log_file=start.file, log_pos=start.position,
                                only_events=[TableMapEvent])
    try:
        out = []
        for ev in stream:
            if (stream.log_file, stream.log_pos) > (stop.file, stop.position):
                break
            out.append([c.name for c in ev.columns])
        return out
    finally:
        stream.close()


def _rows(settings, schemas, start, stop, *, fast: bool) -> list[dict]:
    reader = BinlogSplitReader(settings, next_server_id(), schemas.get, DorisValueConverter("UTC", False),
                               fast_decoder=fast)
    return [e.after for e in reader.read_range(start, stop) if isinstance(e, DataChangeEvent)]


@pytest.mark.parametrize("fast", [True, False])
def test_minimal_rows_decode_exactly_as_full_rows(settings, root_conn, fresh_db, fast):
    """Every column type of a latin1 table, written once with FULL and once with MINIMAL: the same
    values, keyed by the same names (text in latin1 and utf8mb4, ENUM/SET with quotes, unsigned
    integers, FLOAT(30) as DOUBLE, a keyword-named column)."""
    t = TableId(fresh_db, "all_types")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.all_types ({COLUMNS}) DEFAULT CHARSET=latin1")
    schemas = {t: read_schema(root_conn, t)}
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.all_types VALUES " + VALUES % 1)
    middle = current_offset(root_conn)
    _exec(root_conn, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        _exec(root_conn, f"INSERT INTO `{fresh_db}`.all_types VALUES " + VALUES % 2,
              f"UPDATE `{fresh_db}`.all_types SET `period` = `period` + 1 WHERE id = 2")
        stop = current_offset(root_conn)
    finally:
        _exec(root_conn, "SET GLOBAL binlog_row_metadata = 'FULL'")
    assert _table_map_names(settings, start, middle) == [[c.name for c in schemas[t].columns]]
    assert _table_map_names(settings, middle, stop) == [[None] * len(schemas[t].columns)] * 2  # no names
    (full,) = _rows(settings, schemas, start, middle, fast=fast)
    minimal_insert, minimal_update = _rows(settings, schemas, middle, stop, fast=fast)
    assert list(minimal_insert) == list(full) == [c.name for c in schemas[t].columns]
    assert {**minimal_insert, "id": 1} == full
    assert full["name"] == "caf\u00e9 \u00fcber" and full["u8"] == "\U0001f600 ok"
    assert full["e"] == "c,'d" and full["s"] == "y'z,w" and full["big"] == 18446744073709551610
    assert minimal_update == {**minimal_insert, "period": 8}


def test_moves_and_a_swap_under_minimal_map_by_the_history(settings, root_conn, fresh_db, minimal):
    """After MODIFY … FIRST, CHANGE … AFTER and a name swap, rows carry no names: the history the
    reader evolves through the DDL names them, as MySQL reads them back."""
    t = TableId(fresh_db, "moves")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.moves (id INT PRIMARY KEY, a INT, b INT, c VARCHAR(5), x INT) "
                     "DEFAULT CHARSET=latin1")
    schemas = {t: read_schema(root_conn, t)}
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.moves VALUES (1, 10, 20, '\u00e91', 30)",
          f"ALTER TABLE `{fresh_db}`.moves MODIFY c VARCHAR(5) FIRST",
          f"ALTER TABLE `{fresh_db}`.moves CHANGE a a2 INT AFTER x",
          f"ALTER TABLE `{fresh_db}`.moves CHANGE a2 b INT, CHANGE b a2 INT",
          f"INSERT INTO `{fresh_db}`.moves (id, a2, b, c, x) VALUES (2, 21, 11, '\u00e92', 31)",
          f"UPDATE `{fresh_db}`.moves SET x = x + 1")
    stop = current_offset(root_conn)
    rows = _rows(settings, schemas, start, stop, fast=True)
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{fresh_db}`.moves ORDER BY id")
        names = [d[0] for d in cur.description]
        mysql = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    assert names == ["c", "id", "a2", "x", "b"]
    assert rows[-2:] == mysql
    assert rows[0] == {"id": 1, "a": 10, "b": 20, "c": "\u00e91", "x": 30}


def test_a_history_out_of_step_stops_before_any_row_is_mapped(settings, root_conn, fresh_db, minimal):
    """The TableMap's types disagree with the history (here: a history read before a change the
    reader never saw): the read stops naming the table and the fix, with no row mapped."""
    t = TableId(fresh_db, "drift")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.drift (id INT PRIMARY KEY, a INT, s VARCHAR(10)) DEFAULT CHARSET=latin1")
    stale = read_schema(root_conn, t)
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.drift MODIFY a VARCHAR(4) AFTER s")  # before the read starts
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.drift VALUES (1, 'x', 'y')")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {t: stale}.get, None)
    with pytest.raises(SchemaHistoryMismatchError) as info:
        reader.read_batch(start, stop)
    message = str(info.value)
    assert f"{fresh_db}.drift" in message and "No row was mapped" in message
    assert "column 2 (a): the binlog has a VARCHAR column where the history has 'int(11)'" in message
    assert "binlog_row_metadata=FULL" in message and "re-snapshot" in message

    # a charset the history does not know: CONVERT TO the reader did not see
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.drift CONVERT TO CHARACTER SET utf8mb4")
    stale = read_schema(root_conn, t)
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.drift MODIFY s VARCHAR(10) CHARACTER SET latin1")
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.drift VALUES (2, 'x', 'y')")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {t: stale}.get, None)
    with pytest.raises(SchemaHistoryMismatchError, match=r"column 2 \(s\)"):
        reader.read_batch(start, stop)


def test_a_rejected_ddl_on_a_captured_table_stops_under_minimal(settings, root_conn, fresh_db, minimal):
    t = TableId(fresh_db, "cap")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.cap (id INT PRIMARY KEY, v INT)")
    schemas = {t: read_schema(root_conn, t)}
    start = current_offset(root_conn)
    _exec(root_conn, f"INSERT INTO `{fresh_db}`.cap VALUES (1, 1)")
    before_ddl = current_offset(root_conn)
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.cap ADD SYSTEM VERSIONING", f"INSERT INTO `{fresh_db}`.cap VALUES (2, 2)")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), schemas.get, None, is_captured=lambda x: x == t)
    batch = reader.read_batch(start, before_ddl)
    assert [e.after for e in batch.events if isinstance(e, DataChangeEvent)] == [{"id": 1, "v": 1}]
    seen: list[Any] = []
    with pytest.raises(DdlParseError) as info:
        for event in reader.read_range(batch.end, stop):
            seen.append(event)
    assert seen == []
    message = str(info.value)
    assert f"{fresh_db}.cap" in message and "binlog_row_metadata=MINIMAL" in message and "re-snapshot" in message


def test_a_ddl_that_does_not_fit_the_history_stops_rows_without_names(settings, root_conn, fresh_db, minimal):
    """The history lacks a column the binlog's DDL drops (it was read before the column was added):
    afterwards the column counts and types agree again, but the history cannot be trusted, so rows
    without names stop naming the DDL; nothing is mapped."""
    t = TableId(fresh_db, "misfit")
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.misfit (id INT PRIMARY KEY, a INT, b INT)")
    stale = read_schema(root_conn, t)
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.misfit ADD COLUMN q INT FIRST")
    start = current_offset(root_conn)
    _exec(root_conn, f"ALTER TABLE `{fresh_db}`.misfit DROP COLUMN q, DROP COLUMN a, ADD COLUMN z INT FIRST",
          f"INSERT INTO `{fresh_db}`.misfit VALUES (9, 1, 2)")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {t: stale}.get, None)
    seen: list[Any] = []
    with pytest.raises(SchemaHistoryMismatchError) as info:
        for event in reader.read_range(start, stop):
            seen.append(event)
    assert not any(isinstance(e, DataChangeEvent) for e in seen)
    message = str(info.value)
    assert f"{fresh_db}.misfit" in message and "DROP COLUMN q" in message and "No row was mapped" in message


def test_a_table_created_in_the_stream_without_a_charset_decodes_by_the_binlogs_charset(settings, root_conn,
                                                                                         fresh_db, minimal):
    """``CREATE TABLE`` without a charset takes the database's default, which the statement does not
    name: the history has no charset, and the TableMap's charset ids (logged with MINIMAL) decide."""
    t = TableId(fresh_db, "born")
    _exec(root_conn, f"ALTER DATABASE `{fresh_db}` CHARACTER SET latin1")
    start = current_offset(root_conn)
    _exec(root_conn, f"CREATE TABLE `{fresh_db}`.born (id INT PRIMARY KEY, s VARCHAR(10), txt TEXT)",
          f"INSERT INTO `{fresh_db}`.born VALUES (1, 'caf\u00e9', '\u00fcber')")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {}.get, DorisValueConverter("UTC", False))
    rows = [e.after for e in reader.read_range(start, stop) if isinstance(e, DataChangeEvent)]
    assert reader.schema(t).column("s").charset is None  # the history does not know it
    assert rows == [{"id": 1, "s": "caf\u00e9", "txt": "\u00fcber"}]
