"""Helpers for the snapshot-engine tests: the CDC user's settings, plans, chunk reads."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest

from cdc_core.model.schema import TableId
from cdc_core.mysql.chunk_splitter import SplitOptions
from cdc_core.mysql.connection import MySqlConnectionSettings, connect
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.snapshot_assigner import SnapshotSplitAssigner
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader

_server_id_ranges = itertools.count(0)


@pytest.fixture
def settings(mysql_server) -> MySqlConnectionSettings:
    ep = mysql_server.endpoint
    return MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password)


@pytest.fixture
def text_conn(settings):
    conn = connect(settings, text_values=True)
    yield conn
    conn.close()


def server_id_range() -> tuple[int, int]:
    """A private server-id range per reader so tests never share replica ids."""
    base = 8000 + 20 * next(_server_id_ranges)
    return (base, base + 19)


def run(root_conn, *statements: str) -> None:
    with root_conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def analyze(root_conn, db: str, *tables: str) -> None:
    """Refresh InnoDB statistics so SHOW TABLE STATUS rows is exact for these small tables."""
    with root_conn.cursor() as cur:
        for t in tables:
            cur.execute(f"ANALYZE TABLE `{db}`.`{t}`")
            cur.fetchall()


def plan(conn, db: str, table: str, **options) -> list[dict]:
    unbounded_first = options.pop("unbounded_chunk_first", False)
    opts = SplitOptions(split_pause_s=0, **options)
    tid = TableId(db, table)
    assigner = SnapshotSplitAssigner(conn, [tid], lambda t: read_table_schema(conn, t), opts,
                                     unbounded_chunk_first=unbounded_first)
    return [s.to_plan_dict() for s in assigner.plan()]


def bounds(plan_dicts: list[dict]) -> list[tuple]:
    """[(start, end)] with unwrapped single values, for readable assertions."""
    return [(None if p["start"] is None else p["start"][0], None if p["end"] is None else p["end"][0])
            for p in plan_dicts]


def reader(settings, **kwargs) -> SnapshotSplitReader:
    return SnapshotSplitReader(settings, server_id_range=server_id_range(), **kwargs)


@contextmanager
def gated_writer(root_conn, tables: Sequence[str]) -> Iterator[threading.Lock]:
    """A thread that changes ``tables`` (qualified, quoted names) in turn all the time, ids below
    1,000: an UPDATE, a DELETE and an INSERT IGNORE each round, the round under the lock it yields
    (a reader that holds it keeps the tables as they are, e.g. from a chunk's high watermark until
    its range is compared). Stopped on exit."""
    import pymysql

    writer_conn = pymysql.connect(unix_socket=root_conn.unix_socket, user="root", autocommit=True)
    stop = threading.Event()
    gate = threading.Lock()

    def write() -> None:
        i = 0
        while not stop.is_set():
            with gate, writer_conn.cursor() as cur:
                i += 1
                table = tables[i % len(tables)]
                cur.execute(f"UPDATE {table} SET n = n + 1, v = %s WHERE id = %s", (f"w{i}", (i * 37) % 1000))
                cur.execute(f"DELETE FROM {table} WHERE id = %s", ((i * 53) % 1000,))
                cur.execute(f"INSERT IGNORE INTO {table} VALUES (%s, 'ins', %s)", ((i * 53) % 1000, i))

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    try:
        yield gate
    finally:
        stop.set()
        thread.join(10)
        writer_conn.close()
