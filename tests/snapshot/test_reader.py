"""Chunk reads: watermarks, the race between a writer and the reader, backfill normalisation."""

from __future__ import annotations

import pyarrow as pa
import pytest

from cdc_core.model.events import DataChangeEvent, Op
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId
from cdc_core.mysql.backfill import KeyRange, apply_backfill
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.server_ids import acquire_server_id
from cdc_core.mysql.snapshot_reader import build_scan_query
from cdc_core.mysql.splits import SnapshotSplit
from tests.snapshot.conftest import gated_writer, reader, run

T = TableId("db", "t")


def _ev(op, before=None, after=None, pos=100):
    return DataChangeEvent(T, op, before, after, BinlogOffset("binlog.000001", pos))


def _int_range(start, end):
    split = SnapshotSplit(T, 0, None if start is None else (start,), None if end is None else (end,), ("id",))
    return KeyRange(split, Column("id", "int(11)", "int")).contains


# -- normalisation with constructed events ----------------------------------------------------------


def test_backfill_applies_inserts_updates_deletes_inside_the_range():
    table = pa.table({"id": [10, 11, 12, 13], "v": ["a", "b", "c", "d"]})
    events = [
        _ev(Op.INSERT, after={"id": 14, "v": "new"}),
        _ev(Op.INSERT, after={"id": 25, "v": "outside"}),  # not in [10, 20)
        _ev(Op.UPDATE, {"id": 11, "v": "b"}, {"id": 11, "v": "B"}),
        _ev(Op.DELETE, before={"id": 12, "v": "c"}),
        _ev(Op.UPDATE, {"id": 13, "v": "d"}, {"id": 30, "v": "d"}),  # key moves out of the chunk
        _ev(Op.UPDATE, {"id": 40, "v": "x"}, {"id": 15, "v": "x"}),  # key moves into the chunk
        _ev(Op.INSERT, after={"id": 16, "v": "gone"}),
        _ev(Op.DELETE, before={"id": 16, "v": "gone"}),
        _ev(Op.INSERT, after={"id": 10, "v": "replayed"}),  # already seen by the scan: upsert
    ]
    out, applied = apply_backfill(table, events, key_columns=("id",), chunk_key="id", in_range=_int_range(10, 20))
    assert applied == len(events)
    assert sorted(out.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 10, "v": "replayed"}, {"id": 11, "v": "B"}, {"id": 14, "v": "new"}, {"id": 15, "v": "x"}]


def test_backfill_without_primary_key_keeps_duplicate_rows():
    table = pa.table({"k": [1, 1, 2], "v": ["x", "x", "y"]})
    events = [
        _ev(Op.DELETE, before={"k": 1, "v": "x"}),  # one of the two identical rows
        _ev(Op.INSERT, after={"k": 2, "v": "y"}),  # a second identical row
        _ev(Op.UPDATE, {"k": 2, "v": "y"}, {"k": 3, "v": "z"}),
    ]
    out, _ = apply_backfill(table, events, key_columns=(), chunk_key="k", in_range=_int_range(None, None))
    assert sorted(map(tuple, (r.values() for r in out.to_pylist()))) == [(1, "x"), (2, "y"), (3, "z")]


def test_key_range_is_half_open_and_nulls_belong_to_the_first_chunk():
    contains = _int_range(10, 20)
    assert [contains(v) for v in (9, 10, 19, 20, None)] == [False, True, True, False, False]
    assert _int_range(None, 20)(None) is True
    assert _int_range(20, None)(10**30) is True


def test_scan_query_is_flinks_half_open_condition():
    from cdc_core.model.schema import TableSchema

    schema = TableSchema(T, (Column("id", "decimal(10,2)", "decimal", nullable=False, numeric_precision=10,
                                    numeric_scale=2),), ("id",))
    key = schema.columns[0]

    def q(start, end):
        return build_scan_query(schema, SnapshotSplit(T, 0, start, end, ("id",)), key)

    base = "SELECT `id` FROM `db`.`t`"  # DECIMAL(10,2) is read natively
    assert q(None, None) == base
    assert q(None, ("1.50",)) == base + " WHERE `id` <= 1.50 AND NOT (`id` = 1.50)"
    assert q(("1.50",), None) == base + " WHERE `id` >= 1.50"
    assert q(("1.50",), ("2.00",)) == base + " WHERE `id` >= 1.50 AND NOT (`id` = 2.00) AND `id` <= 2.00"


# -- against the server ------------------------------------------------------------------------------


def _table_range(root_conn, db, table, lo, hi):
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT id, v, n FROM `{db}`.`{table}` WHERE id >= %s AND id < %s ORDER BY id", (lo, hi))
        return [{"id": r[0], "v": r[1], "n": r[2]} for r in cur.fetchall()]


@pytest.mark.parametrize("when", ["after_low_watermark", "after_scan"])
def test_race_writer_inside_the_window_chunk_equals_table_at_high_watermark(root_conn, fresh_db, text_conn,
                                                                              settings, when):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
        f"INSERT INTO `{fresh_db}`.t SELECT seq, CONCAT('v', seq), seq FROM `{fresh_db}`.seq_0_to_199")
    schema = read_table_schema(text_conn, TableId(fresh_db, "t"))
    split = SnapshotSplit(schema.table_id, 1, (50,), (100,), ("id",))
    t = f"`{fresh_db}`.t"
    writes = [
        f"INSERT INTO {t} VALUES (1000, 'outside', 0)",
        f"UPDATE {t} SET v = 'updated', n = n + 1000 WHERE id IN (50, 77, 99)",
        f"DELETE FROM {t} WHERE id IN (51, 78)",
        f"UPDATE {t} SET id = 500 WHERE id = 52",  # leaves the chunk
        f"UPDATE {t} SET id = 53000 WHERE id = 53",
        f"UPDATE {t} SET id = 51, v = 'moved-in' WHERE id = 160",  # enters the chunk
        f"UPDATE {t} SET v = 'neighbour' WHERE id IN (49, 100)",  # the neighbouring chunks' edges
        "BEGIN",
        f"UPDATE {t} SET n = -1 WHERE id BETWEEN 60 AND 69",
        f"DELETE FROM {t} WHERE id = 61",
        f"INSERT INTO {t} VALUES (61, 're-inserted', 61)",
        "COMMIT",
    ]
    calls = []

    def writer(s):
        calls.append(s.split_id)
        run(root_conn, *writes)

    hooks = {"pause_after_low_watermark": writer} if when == "after_low_watermark" else {"pause_after_scan": writer}
    with reader(settings, **hooks) as r:
        result = r.read(split, schema)
    assert calls == [split.split_id]
    assert result.high_watermark > result.low_watermark
    assert result.backfill_events > 0
    got = sorted(result.table.to_pylist(), key=lambda row: row["id"])
    assert got == _table_range(root_conn, fresh_db, "t", 50, 100)  # no writes after HW: table now = table at HW
    if when == "after_scan":
        assert result.scanned_rows == 50  # the scan saw none of the writes; the backfill did it all


def test_concurrent_writer_thread_chunks_plus_binlog_reproduce_the_table(root_conn, fresh_db, text_conn, settings):
    """A writer runs throughout; each chunk must equal the table at its own HW for its range.

    Checked by reading the chunk and, with the writer paused right at HW, the range itself.
    """
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
        f"INSERT INTO `{fresh_db}`.t SELECT seq, 'v', seq FROM `{fresh_db}`.seq_0_to_999")
    schema = read_table_schema(text_conn, TableId(fresh_db, "t"))
    holding = []
    with gated_writer(root_conn, [f"`{fresh_db}`.t"]) as gate:

        def hold_before_hw(_s):
            gate.acquire()  # writer blocked from here: the table stays as at HW until we compare
            holding.append(True)

        with reader(settings, pause_after_scan=hold_before_hw) as r:
            for index, lo in enumerate(range(0, 1000, 250)):
                split = SnapshotSplit(schema.table_id, index, (lo,), (lo + 250,), ("id",))
                result = r.read(split, schema)
                try:
                    got = sorted(result.table.to_pylist(), key=lambda row: row["id"])
                    assert got == _table_range(root_conn, fresh_db, "t", lo, lo + 250)
                finally:
                    gate.release()
    assert len(holding) == 4


def test_string_key_backfill_uses_the_column_collation(root_conn, fresh_db, text_conn, settings):
    run(root_conn,
        f"CREATE TABLE `{fresh_db}`.s (k VARCHAR(10) COLLATE utf8mb4_general_ci PRIMARY KEY, v INT)",
        f"INSERT INTO `{fresh_db}`.s VALUES ('apple', 1), ('Banana', 2), ('cherry', 3), ('Date', 4)")
    schema = read_table_schema(text_conn, TableId(fresh_db, "s"))
    split = SnapshotSplit(schema.table_id, 1, ("b",), ("d",), ("k",))  # ['b', 'd') case-insensitively

    def writer(_s):
        run(root_conn, f"INSERT INTO `{fresh_db}`.s VALUES ('BLUEBERRY', 5), ('coconut', 6), ('dAMSON', 7)",
            f"UPDATE `{fresh_db}`.s SET v = 20 WHERE k = 'banana'")

    with reader(settings, pause_after_scan=writer) as r:
        result = r.read(split, schema)
    assert sorted((row["k"], row["v"]) for row in result.table.to_pylist()) == [
        ("BLUEBERRY", 5), ("Banana", 20), ("cherry", 3), ("coconut", 6)]


def test_backfill_skip_uses_low_watermark_as_high(root_conn, fresh_db, text_conn, settings):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v VARCHAR(20), n INT)",
        f"INSERT INTO `{fresh_db}`.t VALUES (1, 'a', 1)")
    schema = read_table_schema(text_conn, TableId(fresh_db, "t"))
    with reader(settings, backfill_skip=True,
                pause_after_scan=lambda _s: run(root_conn, f"INSERT INTO `{fresh_db}`.t VALUES (2, 'b', 2)")) as r:
        result = r.read(SnapshotSplit(schema.table_id, 0, None, None, ("id",)), schema)
    assert result.high_watermark == result.low_watermark
    assert result.rows == 1  # at-least-once: the insert is the binlog stream's to deliver


def test_parallel_readers_take_distinct_server_ids(settings):
    from cdc_core.mysql.connection import connect

    conns = [connect(settings) for _ in range(3)]
    try:
        ids = [acquire_server_id(c, (9100, 9103)) for c in conns]
        assert sorted(ids) == [9101, 9102, 9103]  # 9100 is the binlog stream's
        extra = connect(settings)
        with pytest.raises(RuntimeError, match="server-id"):
            acquire_server_id(extra, (9100, 9103))
        conns[0].close()  # its id is free again once its connection is gone
        assert acquire_server_id(extra, (9100, 9103), wait_s=10) == ids[0]
        extra.close()
    finally:
        for c in conns[1:]:
            c.close()


def test_chunk_record_without_key_columns_uses_the_configured_chunk_key(root_conn, fresh_db, text_conn, settings):
    """A split rebuilt from a state-store record carries no key columns; the reader resolves the chunk key."""
    run(root_conn, f"CREATE TABLE `{fresh_db}`.nopk (k INT, v VARCHAR(10))",
        f"INSERT INTO `{fresh_db}`.nopk SELECT seq, 'x' FROM `{fresh_db}`.seq_1_to_30",
        f"INSERT INTO `{fresh_db}`.nopk VALUES (NULL, 'null-key')")
    schema = read_table_schema(text_conn, TableId(fresh_db, "nopk"))
    split = SnapshotSplit(TableId(fresh_db, "nopk"), 0, None, (10,))  # as a chunk record has it: no key columns

    def writer(_s):
        run(root_conn, f"INSERT INTO `{fresh_db}`.nopk VALUES (5, 'added'), (50, 'elsewhere')",
            f"UPDATE `{fresh_db}`.nopk SET v = 'changed' WHERE k = 3")

    with reader(settings, chunk_key_column=f"{fresh_db}.nopk:k", pause_after_scan=writer) as r:
        result = r.read(split, schema)
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT k, v FROM `{fresh_db}`.nopk WHERE k < 10 OR k IS NULL")
        expected = sorted(cur.fetchall(), key=str)
    assert sorted(((row["k"], row["v"]) for row in result.table.to_pylist()), key=str) == expected


def test_enum_key_backfill_orders_by_member_index(root_conn, fresh_db, text_conn, settings):
    # ENUM('z','a','m') sorts z < a < m (definition order), not alphabetically
    run(root_conn, f"CREATE TABLE `{fresh_db}`.e (k ENUM('z','a','m') PRIMARY KEY, v INT)",
        f"INSERT INTO `{fresh_db}`.e VALUES ('z', 1)")
    schema = read_table_schema(text_conn, TableId(fresh_db, "e"))
    split = SnapshotSplit(schema.table_id, 1, ("a",), ("m",), ("k",))  # just 'a'

    def writer(_s):
        run(root_conn, f"INSERT INTO `{fresh_db}`.e VALUES ('a', 2), ('m', 3)")

    with reader(settings, pause_after_scan=writer) as r:
        result = r.read(split, schema)
    assert result.table.to_pylist() == [{"k": "a", "v": 2}]


def test_a_native_read_loads_the_same_arrow_and_is_text_again_for_a_backfill(root_conn, fresh_db, text_conn,
                                                                               settings):
    """``native``: decimals, dates and datetimes stay as read (no text to be parsed back by an Arrow
    load): the load's Arrow is the same as from the text; a chunk with a backfill is all text again,
    as the binlog's images are, and equals the table at its high watermark."""
    from cdc_core.doris.arrow_layout import arrow_types
    from cdc_core.doris.payloads import conform

    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, d DECIMAL(10,2), w DECIMAL(30,4), "
                   "day DATE, at DATETIME(3), at0 DATETIME, ts TIMESTAMP(6) NULL, v VARCHAR(10))",
        f"INSERT INTO `{fresh_db}`.t SELECT seq, IF(seq % 5 = 0, NULL, seq / 7), seq * 1000.5, "
        f"'2020-02-28' + INTERVAL seq DAY, '2026-01-01 00:00:00.123' + INTERVAL seq SECOND, "
        f"IF(seq % 3 = 0, NULL, '1999-12-31 23:59:59' + INTERVAL seq HOUR), "
        f"'2021-03-14 09:30:00.5' + INTERVAL seq MINUTE, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_300")
    schema = read_table_schema(text_conn, TableId(fresh_db, "t"))
    split = SnapshotSplit(schema.table_id, 0, None, None, ("id",))
    with reader(settings, server_time_zone="Asia/Shanghai") as r:
        text = r.read(split, schema).table
        native = r.read(split, schema, native=True).table
        assert [native.schema.field(n).type for n in ("d", "day", "at", "at0")] == [
            pa.decimal128(38, 2), pa.date32(), pa.timestamp("us"), pa.timestamp("us")]
        assert native.schema.field("w").type == pa.string()  # read as text (wider than 28 digits)
        assert native.schema.field("ts").type == pa.string()  # a TIMESTAMP is shifted to the zone: text
        assert r.as_text(native, schema).equals(text)
        fields = [c.name for c in schema.columns]
        types = arrow_types(["INT", "DECIMALV3(10,2)", "DECIMALV3(30,4)", "DATEV2", "DATETIMEV2",
                             "DATETIMEV2", "DATETIMEV2", "VARCHAR"])
        assert conform(native, fields, 9, types).equals(conform(text, fields, 9, types))

    def writer(_split):
        run(root_conn, f"UPDATE `{fresh_db}`.t SET d = 1.5, at = '2030-01-01 00:00:00.001' WHERE id = 7",
            f"DELETE FROM `{fresh_db}`.t WHERE id = 8")

    with reader(settings, server_time_zone="Asia/Shanghai", pause_after_scan=writer) as r:
        result = r.read(split, schema, native=True)
    assert result.backfill_events == 2
    assert all(f.type == pa.string() for f in result.table.schema if f.name != "id")
    got = {row["id"]: row for row in result.table.to_pylist()}
    assert 8 not in got and got[7]["d"] == "1.50" and got[7]["at"] == "2030-01-01 00:00:00.001"
