"""Every chunk-splitting rule of Flink CDC's MySqlChunkSplitter, on real tables.

Expected plans are derived by hand from the splitter's rules as its Java source states them,
not from our implementation. Tables are small and ANALYZEd so the approximate row count from
SHOW TABLE STATUS equals the real count, which each test checks first.
"""

from __future__ import annotations

import json
import random

import pytest

from cdc_core.model.schema import TableId
from cdc_core.mysql.chunk_splitter import (
    BatchedKeyQueries,
    ChunkSplitter,
    ChunkSplitterState,
    MySqlKeyQueries,
    SplitOptions,
    distribution_factor,
    dynamic_chunk_size,
)
from cdc_core.mysql.discovery import DiscoveryError, approximate_row_count, read_table_schema
from cdc_core.mysql.snapshot_assigner import AssignerState, SnapshotSplitAssigner
from tests.snapshot.conftest import analyze, bounds, plan, reader, run


def _rows(text_conn, db, table):
    count = approximate_row_count(text_conn, TableId(db, table))
    with text_conn.cursor() as cur:
        cur.execute(f"SELECT COUNT(*) FROM `{db}`.`{table}`")
        assert count == cur.fetchone()[0], "statistics must be exact for a deterministic plan"
    return count


def test_dense_int_even_chunks_match_flink_doc_example(root_conn, fresh_db, text_conn):
    # Flink doc: id 0..100, chunk size 25 → (-∞,25),[25,50),[50,75),[75,100),[100,+∞)
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v VARCHAR(10))",
        f"INSERT INTO `{fresh_db}`.t SELECT seq, 'x' FROM `{fresh_db}`.seq_0_to_100")
    analyze(root_conn, fresh_db, "t")
    assert _rows(text_conn, fresh_db, "t") == 101
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25)) == [
        (None, 25), (25, 50), (50, 75), (75, 100), (100, None)]


def test_dynamic_chunk_size_scales_with_distribution_factor(root_conn, fresh_db, text_conn):
    # ids 0,3,...,297 (100 rows): factor = 298/100 = 2.98, dynamic = int(2.98*25) = 74
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id BIGINT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t SELECT seq * 3 FROM `{fresh_db}`.seq_0_to_99")
    analyze(root_conn, fresh_db, "t")
    assert _rows(text_conn, fresh_db, "t") == 100
    assert distribution_factor(0, 297, 100) == 2.98
    assert dynamic_chunk_size(2.98, 25, 0.05, 1000.0) == 74
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25)) == [
        (None, 74), (74, 148), (148, 222), (222, 296), (296, None)]


def test_factor_rounds_up_to_four_decimals():
    # (10 - 0 + 1) / 3 = 3.6666… → 3.6667 (ROUND_CEILING, 4 digits); rows 0 → +inf (Double.MAX_VALUE)
    assert distribution_factor(0, 10, 3) == 3.6667
    assert distribution_factor("1.50", "2.50", 4) == 0.5
    assert distribution_factor(0, 10, 0) == float("inf")
    assert dynamic_chunk_size(0.04, 100, 0.05, 1000.0) is None
    assert dynamic_chunk_size(1000.0001, 100, 0.05, 1000.0) is None
    assert dynamic_chunk_size(0.05, 10, 0.05, 1000.0) == 1  # max(int(0.5), 1)


def test_sparse_int_above_upper_bound_splits_unevenly_by_queries(root_conn, fresh_db, text_conn):
    # ids 0, 5000, ..., 495000: factor = 495001/100 = 4950.01 > 1000 → "max of the next 25 keys"
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t SELECT seq * 5000 FROM `{fresh_db}`.seq_0_to_99")
    analyze(root_conn, fresh_db, "t")
    assert _rows(text_conn, fresh_db, "t") == 100
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25)) == [
        (None, 120000), (120000, 240000), (240000, 360000), (360000, 480000), (480000, None)]
    # A higher upper bound makes the same table even: dynamic = int(4950.01 * 25) = 123750, and an
    # end equal to MAX (495000) still closes a bounded chunk (Flink: while end <= max)
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25, distribution_factor_upper=5000.0)) == [
        (None, 123750), (123750, 247500), (247500, 371250), (371250, 495000), (495000, None)]


def test_random_bigint_uneven_ends_every_chunk_size_keys(root_conn, fresh_db, text_conn):
    rng = random.Random(4)
    keys = sorted({rng.randrange(-(2**63), 2**63) for _ in range(200)})
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id BIGINT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t VALUES " + ",".join(f"({k})" for k in keys))
    analyze(root_conn, fresh_db, "t")
    assert _rows(text_conn, fresh_db, "t") == 200
    # Each query takes the next 30 keys from (and including) the previous end: ends at k[29], k[58], …
    ends = [keys[i] for i in range(29, len(keys), 29) if keys[i] < keys[-1]]
    expected = list(zip([None, *ends], [*ends, None], strict=True))
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=30)) == expected


def test_bigint_unsigned_at_max_is_even(root_conn, fresh_db, text_conn):
    top = 2**64 - 1
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id BIGINT UNSIGNED PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t SELECT {top} - seq FROM `{fresh_db}`.seq_0_to_59")
    analyze(root_conn, fresh_db, "t")
    assert _rows(text_conn, fresh_db, "t") == 60
    lo = top - 59
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25)) == [
        (None, lo + 25), (lo + 25, lo + 50), (lo + 50, None)]


def test_decimal_key_even_keeps_scale_in_json(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id DECIMAL(10,4) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t SELECT 123456.1230 + seq FROM `{fresh_db}`.seq_0_to_99")
    analyze(root_conn, fresh_db, "t")
    assert _rows(text_conn, fresh_db, "t") == 100
    result = plan(text_conn, fresh_db, "t", chunk_size=25)
    assert bounds(result) == [
        (None, "123481.1230"), ("123481.1230", "123506.1230"), ("123506.1230", "123531.1230"),
        ("123531.1230", None)]
    assert json.dumps(result[1]["start"]) == '["123481.1230"]'


def test_wide_decimal_key_is_not_even(root_conn, fresh_db, text_conn):
    # DECIMAL(40,2) is Flink STRING, so uneven even though it is dense
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id DECIMAL(40,2) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t SELECT seq FROM `{fresh_db}`.seq_0_to_99")
    analyze(root_conn, fresh_db, "t")
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=40)) == [
        (None, "39.00"), ("39.00", "78.00"), ("78.00", None)]


def test_smallint_key_is_never_even(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id SMALLINT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t SELECT seq FROM `{fresh_db}`.seq_0_to_99")
    analyze(root_conn, fresh_db, "t")
    # uneven: end = max of 25 keys from the previous end (inclusive): 24, 48, 72, 96
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25)) == [
        (None, 24), (24, 48), (48, 72), (72, 96), (96, None)]


def test_string_key_case_insensitive_collation(root_conn, fresh_db, text_conn, settings):
    # 'a000','A001','a002',… sort case-insensitively by number in utf8mb4_general_ci
    run(root_conn,
        f"CREATE TABLE `{fresh_db}`.t (k VARCHAR(20) COLLATE utf8mb4_general_ci PRIMARY KEY, n INT)",
        f"INSERT INTO `{fresh_db}`.t SELECT CONCAT(IF(seq % 2, 'A', 'a'), LPAD(seq, 3, '0')), seq FROM `{fresh_db}`.seq_0_to_99")
    analyze(root_conn, fresh_db, "t")
    result = plan(text_conn, fresh_db, "t", chunk_size=25)
    assert bounds(result) == [(None, "a024"), ("a024", "a048"), ("a048", "a072"), ("a072", "a096"), ("a096", None)]
    _assert_chunks_partition_table(root_conn, fresh_db, "t", text_conn, settings, result, "n")


def test_case_insensitive_duplicates_never_loop_or_leave_gaps(root_conn, fresh_db, text_conn, settings):
    # A non-unique chunk key whose values differ only in case: 'abc'/'ABC' are one value to MySQL.
    run(root_conn,
        f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, k VARCHAR(10) COLLATE utf8mb4_general_ci, KEY(k))",
        f"INSERT INTO `{fresh_db}`.t SELECT seq, ELT(1 + seq % 4, 'abc', 'ABC', 'Abc', 'b') FROM `{fresh_db}`.seq_0_to_59")
    analyze(root_conn, fresh_db, "t")
    result = plan(text_conn, fresh_db, "t", chunk_size=10, chunk_key_column=f"{fresh_db}.t:k")
    # 45 rows of 'abc' (any case) then 15 of 'b': the first end equals the start → MIN(k) > 'abc' = 'b' = MAX
    assert bounds(result) == [(None, None)]
    _assert_chunks_partition_table(root_conn, fresh_db, "t", text_conn, settings, result, "id")


def test_lower_bound_and_end_equal_to_previous_end(root_conn, fresh_db, text_conn, settings):
    # Chunk key k in {0,1,2,3}, 25 rows each: factor 4/100 = 0.04 < 0.05 → uneven.
    # From 0 the 25 next keys are all 0 = previous end → next key MIN(k) > 0 = 1, etc.
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, k INT, KEY(k))",
        f"INSERT INTO `{fresh_db}`.t SELECT seq, seq DIV 25 FROM `{fresh_db}`.seq_0_to_99")
    analyze(root_conn, fresh_db, "t")
    result = plan(text_conn, fresh_db, "t", chunk_size=25, chunk_key_column=f"{fresh_db}.t:k")
    assert bounds(result) == [(None, 1), (1, 2), (2, None)]
    _assert_chunks_partition_table(root_conn, fresh_db, "t", text_conn, settings, result, "id")


def test_composite_key_splits_on_first_column_at_lower_bound(root_conn, fresh_db, text_conn, settings):
    # PK (a, b), a in 0..9 × b in 0..19: factor = 10/200 = 0.05 = lower bound → even, dynamic 1
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (a INT, b INT, v INT, PRIMARY KEY (a, b))",
        f"INSERT INTO `{fresh_db}`.t SELECT seq DIV 20, seq % 20, seq FROM `{fresh_db}`.seq_0_to_199")
    analyze(root_conn, fresh_db, "t")
    assert _rows(text_conn, fresh_db, "t") == 200
    result = plan(text_conn, fresh_db, "t", chunk_size=25)
    assert bounds(result) == [(None, 1)] + [(i, i + 1) for i in range(1, 9)] + [(9, None)]
    _assert_chunks_partition_table(root_conn, fresh_db, "t", text_conn, settings, result, "v")


def test_no_primary_key_with_chunk_key_column(root_conn, fresh_db, text_conn, settings):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.nopk (k INT, v VARCHAR(10))",
        f"INSERT INTO `{fresh_db}`.nopk SELECT seq, 'x' FROM `{fresh_db}`.seq_1_to_100",
        f"INSERT INTO `{fresh_db}`.nopk VALUES (NULL, 'null-key'), (50, 'dup')")
    analyze(root_conn, fresh_db, "nopk")
    option = f"other.x:zz;{fresh_db}.no\\.k:k"
    result = plan(text_conn, fresh_db, "nopk", chunk_size=25, chunk_key_column=option)
    # factor = 100/102 = 0.9804 → dynamic int(0.9804*25) = 24
    assert bounds(result) == [(None, 25), (25, 49), (49, 73), (73, 97), (97, None)]
    _assert_chunks_partition_table(root_conn, fresh_db, "nopk", text_conn, settings, result, "v", key="k")


def test_no_primary_key_without_chunk_key_fails_naming_the_option(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.nopk (k INT, v INT)")
    with pytest.raises(DiscoveryError, match="scan.incremental.snapshot.chunk.key-column"):
        plan(text_conn, fresh_db, "nopk", chunk_size=25)


def test_missing_chunk_key_column_lists_the_columns(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, name VARCHAR(5), price INT)")
    with pytest.raises(DiscoveryError, match=r"'nope'.*\[id,name,price\]"):
        plan(text_conn, fresh_db, "t", chunk_size=25, chunk_key_column=f"{fresh_db}.t:nope")


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ("", [(None, None)]),  # empty: MIN/MAX NULL
        ("(7)", [(None, None)]),  # single row: MIN = MAX
        ("(1),(2),(3),(5),(8)", [(None, None)]),  # even but rows ≤ chunk size
    ],
)
def test_empty_single_row_and_small_tables_are_one_chunk(root_conn, fresh_db, text_conn, rows, expected):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
    if rows:
        run(root_conn, f"INSERT INTO `{fresh_db}`.t VALUES {rows}")
    analyze(root_conn, fresh_db, "t")
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25)) == expected


def test_small_string_table_is_one_chunk(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (k CHAR(3) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t VALUES ('x'), ('y'), ('z')")
    analyze(root_conn, fresh_db, "t")
    assert bounds(plan(text_conn, fresh_db, "t", chunk_size=25)) == [(None, None)]


def test_unbounded_chunk_first(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.t SELECT seq FROM `{fresh_db}`.seq_0_to_100",
        f"CREATE TABLE `{fresh_db}`.s (k VARCHAR(8) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.s SELECT LPAD(seq, 3, '0') FROM `{fresh_db}`.seq_0_to_59")
    analyze(root_conn, fresh_db, "t", "s")
    even = plan(text_conn, fresh_db, "t", chunk_size=25, unbounded_chunk_first=True)
    assert [p["index"] for p in even] == [4, 0, 1, 2, 3]
    assert even[0]["start"] == [100] and even[0]["end"] is None
    uneven = plan(text_conn, fresh_db, "s", chunk_size=25, unbounded_chunk_first=True)
    assert [(p["index"], p["start"], p["end"]) for p in uneven] == [
        (2, ["048"], None), (0, None, ["024"]), (1, ["024"], ["048"])]


def test_uneven_splitting_is_lazy_and_resumes_from_its_cursor(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.a (k VARCHAR(8) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.a SELECT LPAD(seq, 4, '0') FROM `{fresh_db}`.seq_0_to_199",
        f"CREATE TABLE `{fresh_db}`.b (id INT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.b SELECT seq FROM `{fresh_db}`.seq_0_to_100")
    analyze(root_conn, fresh_db, "a", "b")
    tables = [TableId(fresh_db, "a"), TableId(fresh_db, "b")]
    options = SplitOptions(chunk_size=20, split_pause_s=0)

    def schemas(t):
        return read_table_schema(text_conn, t)

    full = [s.to_plan_dict() for s in SnapshotSplitAssigner(text_conn, tables, schemas, options).plan()]
    first = SnapshotSplitAssigner(text_conn, tables, schemas, options)
    got = []
    for _ in range(3):  # three uneven chunks of table a, one query each
        batch = first.next_batch()
        assert len(batch) == 1
        got.extend(s.to_plan_dict() for s in batch)
    cursor = json.loads(json.dumps(first.state().to_dict()))  # through JSON, as the state store keeps it
    assert cursor["splitter"]["next_chunk_id"] == 3
    resumed = SnapshotSplitAssigner(text_conn, [], schemas, options, state=AssignerState.from_dict(cursor))
    got.extend(s.to_plan_dict() for s in resumed.plan())
    assert got == full
    assert resumed.state().finished
    assert ChunkSplitterState.from_dict(resumed.state().splitter.to_dict()).table_id is None


def test_splits_command_json(root_conn, fresh_db, mysql_server, tmp_path, capsys):
    from orchestration.cli.tidemark import main

    run(root_conn, f"CREATE TABLE `{fresh_db}`.orders (id DECIMAL(10,4) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.orders SELECT 123456.1230 + seq FROM `{fresh_db}`.seq_0_to_99",
        f"CREATE TABLE `{fresh_db}`.other (id INT PRIMARY KEY)")
    analyze(root_conn, fresh_db, "orders", "other")
    ep = mysql_server.endpoint
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        "source:\n  type: mysql\n"
        f"  hostname: {ep.host}\n  port: {ep.port}\n  username: {ep.user}\n  password: {ep.password}\n"
        f"  tables: {fresh_db}.\\.*\n  scan.incremental.snapshot.chunk.size: 50\n"
        "sink:\n  type: doris\n  fenodes: 127.0.0.1:8030\n  username: root\n"
    )
    assert main(["splits", str(pipeline), "--table", f"{fresh_db}.orders", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == [
        {"table": f"{fresh_db}.orders", "index": 0, "start": None, "end": ["123506.1230"]},
        {"table": f"{fresh_db}.orders", "index": 1, "start": ["123506.1230"], "end": None},
    ]
    assert main(["splits", str(pipeline), "--table", f"{fresh_db}.missing"]) == 1
    assert "not captured" in capsys.readouterr().err


def _assert_chunks_partition_table(root_conn, db, table, text_conn, settings, plan_dicts, value_col, key=None):
    """Reading every chunk gives every row exactly once (no gap, no overlap)."""
    from cdc_core.mysql.splits import SnapshotSplit

    schema = read_table_schema(text_conn, TableId(db, table))
    key_col = key or (schema.primary_key[0] if schema.primary_key else None)
    seen = []
    with reader(settings) as r:
        for p in plan_dicts:
            split = SnapshotSplit(TableId(db, table), p["index"], None if p["start"] is None else tuple(p["start"]),
                                  None if p["end"] is None else tuple(p["end"]), (key_col,))
            seen.extend(row[value_col] for row in r.read(split, schema).table.to_pylist())
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT `{value_col}` FROM `{db}`.`{table}`")
        everything = [row[0] for row in cur.fetchall()]
    assert sorted(seen, key=str) == sorted(everything, key=str)


@pytest.mark.parametrize("key_type", ["UUID", "INET6"])
def test_uuid_and_inet6_keys_split_by_queries_in_mariadb_order(root_conn, fresh_db, text_conn, settings, key_type):
    """A UUID / INET6 key is not Flink-even, so the splitter asks the server for each chunk's end;
    the ends must be consecutive in MariaDB's order (not the text's), the chunks must read every row
    exactly once, and the backfill must place a change in the chunk the scan would have."""
    from cdc_core.mysql.backfill import KeyRange
    from cdc_core.mysql.chunk_key_order import ChunkKeyOrder
    from cdc_core.mysql.splits import SnapshotSplit
    from cdc_core.mysql.types.fixed_binary import sort_key

    rng = random.Random(9)
    type_name = key_type.lower()
    raws = set()
    while len(raws) < 500:
        raw = bytearray(rng.randrange(256) for _ in range(16))
        if type_name == "uuid":  # versions 1-5 variant 1 (stored swapped) mixed with the others
            raw[6] = rng.choice([0x10, 0x40, 0x60, 0x70, 0x00]) | (raw[6] & 0x0F)
            raw[8] = rng.choice([0x80, 0xA0, 0x10]) | (raw[8] & 0x0F)
        elif rng.random() < 0.3:
            raw[:12] = bytes(10) + b"\xff\xff"  # IPv4-mapped
        raws.add(bytes(raw))
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (k {key_type} PRIMARY KEY, v INT)")
    with root_conn.cursor() as cur:
        cast = "CAST(%s AS UUID)" if type_name == "uuid" else "CAST(CAST(%s AS BINARY(16)) AS INET6)"
        cur.executemany(f"INSERT INTO `{fresh_db}`.t VALUES ({cast}, %s)",
                        [(r.hex() if type_name == "uuid" else r, i) for i, r in enumerate(sorted(raws))])
    analyze(root_conn, fresh_db, "t")
    with text_conn.cursor() as cur:
        cur.execute(f"SELECT CAST(k AS CHAR) FROM `{fresh_db}`.t ORDER BY k")
        keys = [r[0] for r in cur.fetchall()]
    assert keys != sorted(keys)  # MariaDB's order is not the text's, so a text comparison would fail here
    result = plan(text_conn, fresh_db, "t", chunk_size=60)
    assert bounds(result) == list(zip([None, *keys[59:-1:59]], [*keys[59:-1:59], None], strict=True))
    assert len(result) > 2
    schema = read_table_schema(text_conn, TableId(fresh_db, "t"))
    key = schema.column("k")
    order = ChunkKeyOrder(schema.table_id, key)
    seen: list[str] = []
    with reader(settings) as r:
        for p in result:
            split = SnapshotSplit.from_dict({**p, "key_columns": ["k"]})
            rows = [row["k"] for row in r.scan(schema, split).to_pylist()]
            seen += rows
            in_range = KeyRange(split, key)
            assert all(in_range.contains(k) for k in rows)
            lo = None if split.start is None else order.bound_key(split.start[0])
            hi = None if split.end is None else order.bound_key(split.end[0])
            assert all((lo is None or lo <= order.event_key(k)) and (hi is None or order.event_key(k) < hi)
                       for k in rows)
            assert not any(in_range.contains(k) for k in keys if k not in rows)
    assert sorted(seen, key=lambda k: sort_key(type_name, k)) == keys and len(seen) == len(set(seen))

    # a change inside the window of the second chunk is backfilled into it, one outside is not
    second = SnapshotSplit.from_dict({**result[1], "key_columns": ["k"]})
    inside, outside = keys[70], keys[10]

    def writer(_s):
        run(root_conn, f"UPDATE `{fresh_db}`.t SET v = -1 WHERE k IN ('{inside}', '{outside}')")

    with reader(settings, pause_after_scan=writer) as r:
        chunk = r.read(second, schema)
    rows = {row["k"]: row["v"] for row in chunk.table.to_pylist()}
    assert chunk.backfill_events == 2 and rows[inside] == -1 and outside not in rows
    assert sorted(rows, key=lambda k: sort_key(type_name, k)) == keys[59:118]


def test_the_courtesy_pause_falls_within_a_long_run_of_split_queries_on_one_table_not_per_table(
        root_conn, fresh_db, text_conn):
    """Flink pauses every 10 uneven chunks, the first included: 100 ms per text-keyed table of one
    chunk. The pause now comes after a table's 10th, 20th ... chunk only."""
    run(root_conn, *[f"CREATE TABLE `{fresh_db}`.s{i} (k VARCHAR(8) PRIMARY KEY)" for i in range(3)],
        *[f"INSERT INTO `{fresh_db}`.s{i} SELECT LPAD(seq, 4, '0') FROM `{fresh_db}`.seq_0_to_{n}"
          for i, n in enumerate((5, 5, 249))])
    analyze(root_conn, fresh_db, "s0", "s1", "s2")
    tables = [TableId(fresh_db, f"s{i}") for i in range(3)]
    pauses: list[float] = []
    splitter = ChunkSplitter(text_conn, SplitOptions(chunk_size=10, split_pause_s=0.25), sleep=pauses.append)
    counts = []
    for table in tables:
        schema = read_table_schema(text_conn, table)
        chunks = splitter.split_chunks(schema)
        while splitter.has_next_chunk():
            chunks += splitter.split_chunks(schema)
        counts.append(len(chunks))
    assert counts[:2] == [1, 1] and 20 < counts[2] < 30
    assert pauses == [0.25, 0.25]  # table s2's chunks 10 and 20; none for s0, s1 or any table's first chunk


def test_schemas_and_row_estimates_of_many_tables_are_read_at_once_and_equal_the_per_table_reads(
        root_conn, fresh_db, text_conn):
    from cdc_core.mysql.discovery import DiscoveryError, read_table_schemas, table_status, table_statuses

    run(root_conn, f"CREATE TABLE `{fresh_db}`.a (id BIGINT PRIMARY KEY, j JSON, c VARCHAR(4) COMMENT 'x') "
                   "COMMENT 'table a' DEFAULT CHARSET latin1",
        f"CREATE TABLE `{fresh_db}`.b (x INT, y VARCHAR(16), PRIMARY KEY (y, x))",
        f"CREATE TABLE `{fresh_db}`.c_d (k VARCHAR(32) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.b SELECT seq, seq FROM `{fresh_db}`.seq_1_to_30")
    analyze(root_conn, fresh_db, "a", "b", "c_d")
    tables = [TableId(fresh_db, t) for t in ("a", "b", "c_d")]
    batched = read_table_schemas(text_conn, tables)
    assert batched == {t: read_table_schema(text_conn, t) for t in tables}
    assert batched[tables[0]].column("j").data_type == "json" and batched[tables[1]].primary_key == ("y", "x")
    assert table_statuses(text_conn, tables) == {t: table_status(text_conn, t) for t in tables}
    gone = TableId(fresh_db, "gone")
    assert read_table_schemas(text_conn, [*tables, gone], skip_missing=True).keys() == set(tables)
    with pytest.raises(DiscoveryError, match="does not exist"):
        read_table_schemas(text_conn, [*tables, gone])


class _CountingConn:
    """The text connection, counting the statements sent through its cursors."""

    def __init__(self, conn):
        self.conn, self.statements = conn, []

    def cursor(self):
        outer = self

        class Cursor:
            def __init__(self):
                self.cur = outer.conn.cursor()

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                self.cur.close()

            def execute(self, statement, args=None):
                outer.statements.append(statement)
                return self.cur.execute(statement, args)

            def fetchone(self):
                return self.cur.fetchone()

            def fetchall(self):
                return self.cur.fetchall()

        return Cursor()


def test_batched_bounds_read_integer_keys_of_many_tables_in_one_statement(root_conn, fresh_db, text_conn):
    # integer keys of several widths and signs, an empty table, a string key (read alone): the bounds
    # are the ones each table's own MIN/MAX returns, and the plans those of the one-table splitter
    run(root_conn,
        f"CREATE TABLE `{fresh_db}`.a (id BIGINT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.a SELECT seq FROM `{fresh_db}`.seq_0_to_100",
        f"CREATE TABLE `{fresh_db}`.b (id BIGINT UNSIGNED PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.b VALUES (18446744073709551615), (18446744073709551000)",
        f"CREATE TABLE `{fresh_db}`.c (id SMALLINT PRIMARY KEY)",
        f"CREATE TABLE `{fresh_db}`.d (k VARCHAR(8) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.d VALUES ('b'), ('a')",
        f"CREATE TABLE `{fresh_db}`.e (id BIGINT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.e VALUES (-5), (7)")
    analyze(root_conn, fresh_db, "a", "b", "c", "d", "e")
    schemas = {t: read_table_schema(text_conn, TableId(fresh_db, t)) for t in "abcde"}
    keyed = [(s.table_id, s.column(s.primary_key[0])) for s in schemas.values()]
    one = MySqlKeyQueries(text_conn)
    counting = _CountingConn(text_conn)
    batched = BatchedKeyQueries(counting, keyed)
    alone = [one.bounds(t, c) for t, c in keyed]
    assert [batched.bounds(t, c) for t, c in keyed] == alone
    assert [tuple(map(str, b)) for b in alone] == [
        ("0", "100"), ("18446744073709551000", "18446744073709551615"), ("None", "None"), ("a", "b"), ("-5", "7")]
    # a, e (signed BIGINT) at the first ask; b (unsigned), c (SMALLINT), d (string): one each
    assert len(counting.statements) == 4
    assert "UNION ALL" in counting.statements[0] and "UNION ALL" not in "".join(counting.statements[1:])
    # handed out once: asked again (a resumed split), a table's bounds are read again
    assert batched.bounds(*keyed[0]) == alone[0] and len(counting.statements) == 5

    def planned(queries):
        assigner = SnapshotSplitAssigner(queries, [t for t, _ in keyed], lambda t: schemas[t.table],
                                         SplitOptions(chunk_size=25))
        return [(str(s.table_id), s.start, s.end) for s in assigner.plan()]

    assert planned(BatchedKeyQueries(text_conn, keyed)) == planned(text_conn)
