"""The hybrid property test's own model of chunk bounds must match the server's collation.

Its random string bounds were once sorted by code point: ['B', 'Z', 'm'] made the chunks [B, Z)
and [m, ∞) overlap under ``utf8mb4_general_ci`` (both hold 'Nn'), and seed 14 failed with a row
('Nn') that a later chunk had rightly dropped but the earlier chunk's copy kept. No splitter makes
such chunks; the test did. Here the test's ordering is checked against the server, and the chunk
scans themselves must hand every row to exactly one chunk.
"""

from __future__ import annotations

from cdc_core.model.schema import TableId
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from tests.binlog.test_hybrid_property import LETTERS, ServerCollation, _random_splits


def test_string_bounds_sorted_and_deduplicated_by_the_server(root_conn):
    order = ServerCollation(root_conn)
    # code-point order would be B, Z, e, m, é, É; the collation ignores case and accents
    assert order.sorted_unique(["m", "Z", "B", "é", "b", "É", "e", "z"]) == ["B", "é", "m", "Z"]
    assert order.sorted_unique([300, 7, 7, 42]) == [7, 42, 300]


def test_random_chunks_hand_every_row_to_exactly_one_chunk(mysql_server, root_conn, fresh_db):
    table = TableId(fresh_db, "s")
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.s (k varchar(8) COLLATE utf8mb4_general_ci PRIMARY KEY, v int)")
        keys = {}
        for a in LETTERS:
            for b in ["", *LETTERS]:
                keys.setdefault((a + b).casefold().replace("é", "e"), a + b)  # one spelling per key
        cur.executemany(f"INSERT IGNORE INTO `{fresh_db}`.s (k, v) VALUES (%s, 0)",
                        [(k,) for k in sorted(keys.values())])
        cur.execute(f"SELECT k FROM `{fresh_db}`.s")
        stored = {r[0] for r in cur.fetchall()}
    schema = read_table_schema(root_conn, table)
    ep = mysql_server.endpoint
    reader = SnapshotSplitReader(MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password),
                                 server_id_range=(32000, 32019))
    try:
        splits = _random_splits(table, ["B", "Z", "m", "é", "n", "É"], ServerCollation(root_conn))
        seen: list[str] = []
        for split in splits:
            seen += [row["k"] for row in reader.read(split, schema).table.to_pylist()]
    finally:
        reader.close()
    assert sorted(seen) == sorted(stored), "the chunks overlap or leave a gap"
