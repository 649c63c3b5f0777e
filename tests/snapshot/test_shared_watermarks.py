"""Consecutive chunks of one reader share watermarks: chunk N's high is chunk N+1's low.

Against the real server: rows change between the chunks and inside them, and every chunk must still
be its key range exactly as the table was at the chunk's high watermark (each change once).
"""

from __future__ import annotations

import threading
import time

import pymysql
import pytest

from cdc_core.model.schema import TableId
from cdc_core.mysql import snapshot_reader
from cdc_core.mysql.binlog_status import CurrentOffsetReader, read_current_offset
from cdc_core.mysql.connection import connect
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.splits import SnapshotSplit
from tests.snapshot.conftest import gated_writer, reader, run

JOB = "job-1"  # the snapshot job every chunk here belongs to, unless a test says otherwise


def _rows(root_conn, db: str, table: str, lo: int, hi: int) -> list[tuple]:
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT id, v, n FROM `{db}`.`{table}` WHERE id >= %s AND id < %s ORDER BY id", (lo, hi))
        return [tuple(r) for r in cur.fetchall()]


def _got(result) -> list[tuple]:
    return sorted((r["id"], r["v"], r["n"]) for r in result.table.to_pylist())


def _tables(root_conn, db: str, *names: str, rows: int = 200, key: str = "PRIMARY KEY") -> None:
    for name in names:
        run(root_conn, f"CREATE TABLE `{db}`.`{name}` (id INT {key}, v VARCHAR(20), n INT)",
            f"INSERT INTO `{db}`.`{name}` SELECT seq, CONCAT('v', seq), seq FROM `{db}`.seq_0_to_{rows - 1}")


def test_two_tables_back_to_back_share_a_watermark_and_every_change_lands_once(root_conn, fresh_db, text_conn,
                                                                                settings):
    """Chunk B's low watermark is chunk A's high one. Changes to B between the two reads (before B's
    scan: seen by the scan and replayed), right before B's scan and after it (replayed only) all end
    in B exactly once, as the table is at B's high watermark."""
    _tables(root_conn, fresh_db, "a", "b")
    a = read_table_schema(text_conn, TableId(fresh_db, "a"))
    b = read_table_schema(text_conn, TableId(fresh_db, "b"))
    tb = f"`{fresh_db}`.b"

    def before_scan(split):
        if split.table_id == b.table_id:
            run(root_conn, f"UPDATE {tb} SET v = 'before-scan', n = n + 1 WHERE id IN (10, 11)",
                f"DELETE FROM {tb} WHERE id = 12", f"INSERT INTO {tb} VALUES (1001, 'new-before-scan', 1)")

    def after_scan(split):
        if split.table_id == b.table_id:
            run(root_conn, f"UPDATE {tb} SET v = 'after-scan', n = n + 1 WHERE id IN (11, 20)",
                f"DELETE FROM {tb} WHERE id = 21", f"INSERT INTO {tb} VALUES (12, 'back-after-scan', 12)",
                f"UPDATE {tb} SET id = 1002 WHERE id = 22")

    with reader(settings, pause_after_low_watermark=before_scan, pause_after_scan=after_scan) as r:
        first = r.read(SnapshotSplit(a.table_id, 0, None, None, ("id",)), a, job=JOB)
        run(root_conn, f"UPDATE {tb} SET v = 'between', n = -n WHERE id IN (1, 2, 3)",
            f"DELETE FROM {tb} WHERE id = 4", f"INSERT INTO {tb} VALUES (1000, 'new-between', 0)",
            f"UPDATE `{fresh_db}`.a SET v = 'a-after-its-chunk' WHERE id = 5")
        second = r.read(SnapshotSplit(b.table_id, 0, None, None, ("id",)), b, job=JOB)
    assert second.low_watermark == first.high_watermark  # shared: no query of its own
    assert second.high_watermark > second.low_watermark
    # the backfill replayed every change to b since a's high watermark: 3 statements between the reads
    # (5 row events), 3 right before the scan (4), 4 after it (5)
    assert second.backfill_events == 14
    assert second.scanned_rows == 200 - 1 + 1 - 1 + 1  # between and before the scan: seen by the scan
    assert _got(second) == _rows(root_conn, fresh_db, "b", 0, 10_000)  # nothing written after b's HW
    assert _got(first) == [(i, f"v{i}", i) for i in range(200)]  # a as it was at its own HW


def test_a_writer_throughout_chunks_of_two_tables_alternating(root_conn, fresh_db, text_conn, settings):
    """A writer changes both tables all the time; one reader reads their chunks alternately, each
    chunk's low watermark the previous chunk's high one: each chunk equals its range of the table
    at its high watermark (the writer is held from there until the range is compared)."""
    _tables(root_conn, fresh_db, "a", "b", rows=1000)
    schemas = [read_table_schema(text_conn, TableId(fresh_db, name)) for name in ("a", "b")]
    results = []
    with (gated_writer(root_conn, [f"`{fresh_db}`.a", f"`{fresh_db}`.b"]) as gate,
          reader(settings, pause_after_scan=lambda _s: gate.acquire()) as r):
        for index, lo in enumerate(range(0, 1000, 250)):
            for schema in schemas:
                result = r.read(SnapshotSplit(schema.table_id, index, (lo,), (lo + 250,), ("id",)), schema, job=JOB)
                try:
                    assert _got(result) == _rows(root_conn, fresh_db, schema.table_id.table, lo, lo + 250)
                finally:
                    gate.release()
                results.append(result)
    assert len(results) == 8
    assert all(b.low_watermark == a.high_watermark for a, b in zip(results, results[1:], strict=False))
    assert sum(r.backfill_events for r in results) > 0


def _write_between(root_conn, db: str) -> None:
    run(root_conn, f"UPDATE `{db}`.b SET v = 'between' WHERE id = 1")


@pytest.mark.parametrize("how", ["failed read", "forgotten", "reconnected", "too old", "keyless", "backfill skip",
                                 "another job", "no job"])
def test_when_a_chunk_takes_a_fresh_low_watermark(root_conn, fresh_db, text_conn, settings, monkeypatch, how):
    """The previous chunk's high watermark is not carried after a failed read, a failed load
    (``forget_watermark``), a new control connection, once it is too old, into a keyless table,
    with ``backfill.skip``, into another job's chunk or one read without a job: the low watermark
    is the server's position after the write between."""
    _tables(root_conn, fresh_db, "a")
    _tables(root_conn, fresh_db, "b", key="" if how == "keyless" else "PRIMARY KEY")
    a = read_table_schema(text_conn, TableId(fresh_db, "a"))
    b = read_table_schema(text_conn, TableId(fresh_db, "b"))
    fail = []

    def after_scan(_split):
        if fail:
            fail.pop()
            raise RuntimeError("failed between the scan and the high watermark")

    options = {"backfill_skip": True} if how == "backfill skip" else {}
    if how == "keyless":
        options["chunk_key_column"] = f"{fresh_db}.b:id"
    with reader(settings, pause_after_scan=after_scan, **options) as r:
        first = r.read(SnapshotSplit(a.table_id, 0, None, None, ("id",)), a, job=JOB)
        if how == "failed read":
            fail.append(True)
            with pytest.raises(RuntimeError, match="failed between"):
                r.read(SnapshotSplit(a.table_id, 0, None, None, ("id",)), a, job=JOB)
        elif how == "forgotten":
            r.forget_watermark()
        elif how == "reconnected":
            r.close()
        elif how == "too old":
            monkeypatch.setattr(snapshot_reader, "WATERMARK_REUSE_S", 0.0)
        _write_between(root_conn, fresh_db)
        job = {"another job": "another", "no job": None}.get(how, JOB)
        second = r.read(SnapshotSplit(b.table_id, 0, None, None, ("id",)), b, job=job)
    assert second.low_watermark > first.high_watermark
    assert second.backfill_events == 0  # the change between is before the fresh low watermark: the scan's
    assert sorted(r["v"] for r in second.table.to_pylist() if r["id"] == 1) == ["between"]
    assert second.rows == 200


def test_a_job_of_another_epoch_aligns_the_carried_watermark(root_conn, fresh_db, text_conn, settings):
    """The carried watermark is the server's, aligned to the epoch of the job reading the next chunk."""
    _tables(root_conn, fresh_db, "a", "b")
    a = read_table_schema(text_conn, TableId(fresh_db, "a"))
    b = read_table_schema(text_conn, TableId(fresh_db, "b"))
    with reader(settings) as r:
        first = r.read(SnapshotSplit(a.table_id, 0, None, None, ("id",)), a, job=JOB)
        r.epoch_reference = first.high_watermark.on_server("another-server", 2)  # a failover before this job
        second = r.read(SnapshotSplit(b.table_id, 0, None, None, ("id",)), b, job=JOB)
    assert (first.high_watermark.epoch, second.low_watermark.epoch, second.high_watermark.epoch) == (0, 3, 3)
    assert (second.low_watermark.file, second.low_watermark.position) == (first.high_watermark.file,
                                                                          first.high_watermark.position)


def test_a_watermark_in_one_round_trip_is_the_three_statements_result(root_conn, fresh_db, settings):
    """``CurrentOffsetReader`` sends MariaDB's three statements as one query: the offset is the
    one :func:`read_current_offset` reads, and under a writer its GTID position is exactly the
    one of its file and position (``BINLOG_GTID_POS``), never a later one."""
    run(root_conn, f"CREATE TABLE `{fresh_db}`.w (id INT PRIMARY KEY AUTO_INCREMENT, v INT)")
    conn = connect(settings, text_values=True, multi_statements=True)
    offsets = CurrentOffsetReader()
    try:
        with conn.cursor() as cur:
            learned, batched, plain = offsets.read(cur), offsets.read(cur), read_current_offset(cur)
            assert learned == batched == plain
            assert (learned.gtid_set, learned.server) == (plain.gtid_set, plain.server)
            writer_conn = pymysql.connect(unix_socket=root_conn.unix_socket, user="root", autocommit=True)
            stop = threading.Event()

            def write():
                with writer_conn.cursor() as w:
                    while not stop.is_set():
                        w.execute(f"INSERT INTO `{fresh_db}`.w (v) VALUES (1)")

            thread = threading.Thread(target=write, daemon=True)
            thread.start()
            seen = []
            try:
                # at least 50 reads, and on until the writer has moved the binlog (a fast machine
                # reads 50 times before its first INSERT commits), within 30 s
                deadline = time.monotonic() + 30
                while len(seen) < 50 or (len({o.position for o in seen}) < 3 and time.monotonic() < deadline):
                    seen.append(offsets.read(cur))
            finally:
                stop.set()
                thread.join(10)
                writer_conn.close()
            for offset in seen:
                cur.execute("SELECT BINLOG_GTID_POS(%s, %s)", (offset.file, offset.position))
                assert offset.gtid_set == cur.fetchone()[0]
            assert len({o.position for o in seen}) > 1  # the writer moved the binlog meanwhile
    finally:
        conn.close()
