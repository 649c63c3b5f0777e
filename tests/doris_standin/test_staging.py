"""Staged loads are files: kept until the transaction that applies or aborts them has committed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from devstack.doris.catalog import Column, Table
from devstack.doris.merge import StagedKeys, merge_rows
from devstack.doris.storage import Storage, data_ref


def test_a_staged_file_outlives_a_rolled_back_drop_and_goes_with_a_committed_one(tmp_path) -> None:
    storage = Storage(tmp_path)
    try:
        storage.write_staging(7, pa.table({"id": [1, 2], "__ord": [0, 1]}))
        path = storage.staging_path(7)
        with pytest.raises(RuntimeError), storage.transaction() as cur:
            storage.drop_staging(cur, 7)
            raise RuntimeError("the publish failed after the drop")
        assert path.exists()  # the transaction holding the rows is unchanged, so are the rows
        with storage.transaction() as cur:
            with storage.staged_rows(cur, 7) as (view, columns):
                assert columns == ["id", "__ord"]
                assert cur.execute(f"SELECT sum(id) FROM {view}").fetchall() == [(3,)]
            storage.drop_staging(cur, 7)
            assert path.exists()  # not before the commit
        assert not path.exists()
        with storage.transaction() as cur, storage.staged_rows(cur, 7) as (_view, columns):
            assert columns == []  # nothing staged any more
    finally:
        storage.close()


def test_orphan_staged_files_are_removed(tmp_path) -> None:
    storage = Storage(tmp_path)
    try:
        for txn_id in (1, 2):
            storage.write_staging(txn_id, pa.table({"id": [txn_id]}))
        (storage.staging_dir / "3.tmp").write_bytes(b"cut short")
        storage.remove_orphan_staging({2})
        assert sorted(p.name for p in storage.staging_dir.iterdir()) == ["2.arrow"]
    finally:
        storage.close()


def _unique_table(storage: Storage) -> Table:
    table = Table("d", "t", "UNIQUE_KEYS", [Column("id", "BIGINT", is_key=True), Column("v", "VARCHAR(8)")], ["id"])
    with storage.transaction() as cur:
        storage.create_database(cur, "d")
        storage.create_table(cur, table)
    return table


def _staged(ids: list[int], values: list[str]) -> pa.Table:
    return pa.table({"__ord": list(range(len(ids))), "id": ids, "v": values,
                     "__sign": pa.array([0] * len(ids), pa.int8())})


def _committer(storage: Storage, table: Table):
    """``commit(txn_id, keys, values)``: stage a load of those rows into ``table`` and merge it, as
    its commit does; each key is one stored row after."""

    def commit(txn_id: int, keys: list[int], values: list[str]) -> None:
        storage.write_staging(txn_id, _staged(keys, values), table)
        with storage.transaction() as cur:
            assert storage.merge(cur, table, txn_id) == len(keys)

    return commit


def _stored(storage: Storage) -> list[tuple]:
    with storage.cursor() as cur:
        return cur.execute(f"SELECT id, v FROM {data_ref('d', 't')} ORDER BY id").fetchall()


def test_a_unique_loads_key_facts_are_computed_when_staged_and_used_by_its_merge(tmp_path) -> None:
    """The commit's checks on a load's own rows (key bounds, distinct keys) are computed at staging,
    outside the write lock, and kept in the staged file; the merge answers as when it computed them."""
    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)
        storage.write_staging(1, _staged([3, 1, 2], ["a", "b", "c"]), table)
        with storage.transaction() as cur, storage._staged(cur, 1) as (_view, _columns, facts):
            assert facts is not None and facts.matches(table)
            assert (facts.keys, facts.distinct, facts.rows) == (("id",), True, 3)
            assert facts.bounds == '"id" BETWEEN CAST(\'1\' AS BIGINT) AND CAST(\'3\' AS BIGINT)'
        storage.write_staging(2, _staged([2, 4, 4], ["x", "y", "z"]), table)  # keys repeat; one meets a stored row
        for txn_id, rows in ((1, 3), (2, 2)):
            with storage.transaction() as cur:
                assert storage.merge(cur, table, txn_id) == rows
        assert _stored(storage) == [(1, "b"), (2, "x"), (3, "a"), (4, "z")]
    finally:
        storage.close()


def test_key_facts_that_no_longer_match_the_table_are_computed_afresh(tmp_path) -> None:
    """Facts staged for other keys (or another key type) are not trusted: the merge asks the rows."""
    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)
        with storage.transaction() as cur:
            cur.execute(f"INSERT INTO {data_ref('d', 't')} VALUES (5, 'old', 0)")
        stale = StagedKeys(("other",), "BIGINT", '"id" BETWEEN 100 AND 200', True, 2)
        assert not stale.matches(table)
        assert not StagedKeys(("id",), "VARCHAR", "", True, 2).matches(table)
        with storage.transaction() as cur:
            cur.register("stg", _staged([5, 5], ["new", "newer"]))
            # trusted, these facts would append both rows beside the stored key 5
            merge_rows(cur, table, data_ref("d", "t"), "stg", {"id", "v", "__ord", "__sign"}, "__standin.w", stale)
            cur.unregister("stg")
        assert _stored(storage) == [(5, "newer")]
    finally:
        storage.close()


def test_a_file_staged_without_key_facts_still_merges(tmp_path) -> None:
    """Files staged by earlier stand-in versions (or with no table given) carry no facts."""
    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)
        storage.write_staging(1, _staged([1, 1], ["a", "b"]))
        with storage.transaction() as cur:
            with storage._staged(cur, 1) as (_view, _columns, facts):
                assert facts is None
            assert storage.merge(cur, table, 1) == 1
        assert _stored(storage) == [(1, "b")]
    finally:
        storage.close()


def test_a_load_with_a_null_key_has_no_bounds_and_replaces_the_stored_null(tmp_path) -> None:
    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)
        for txn_id, ids in ((1, [None, 1]), (2, [None, 2])):
            storage.write_staging(txn_id, _staged(ids, [f"n{txn_id}", f"v{txn_id}"]), table)
            with storage.transaction() as cur:
                with storage._staged(cur, txn_id) as (_view, _columns, facts):
                    assert facts is not None and (facts.bounds, facts.distinct, facts.rows) == ("", False, 2)
                storage.merge(cur, table, txn_id)
        assert _stored(storage) == [(1, "v1"), (2, "v2"), (None, "n2")]
    finally:
        storage.close()


def test_the_journal_is_replayed_once_and_a_folded_generation_is_never_read_again(tmp_path) -> None:
    """Transaction states recorded in the journal come back at start-up (a line an OS crash cut short
    is skipped); once folded into ``__standin.txns`` the old journal is gone and its records with it."""
    rec = {"txn_id": 1200, "db": "d", "label": "l", "tbl": "t", "status": "PREPARE", "reason": "", "two_pc": True,
           "prepare_ms": 1, "precommit_ms": None, "commit_ms": None, "finish_ms": None, "staged": False,
           "visible_at_ms": None}
    storage = Storage(tmp_path)
    with storage.locked():
        storage.journal(rec)
        storage.journal({**rec, "status": "PRECOMMITTED", "precommit_ms": 2})
    storage.close()
    with (tmp_path / "txns.0.journal").open("ab") as f:
        f.write(b'{"txn_id": 1201, "db": "d", "lab')  # cut short
    storage = Storage(tmp_path)
    try:
        assert [(r["txn_id"], r["status"]) for r in storage.journal_records()] == [(1200, "PREPARE"),
                                                                                  (1200, "PRECOMMITTED")]
        assert storage.next_txn_id() == 1201  # the journal's ids count
        with storage.locked():
            storage.fold_journal([{**rec, "status": "ABORTED", "finish_ms": 3}], [])
        assert not (tmp_path / "txns.0.journal").exists()
        assert (tmp_path / "txns.1.journal").read_bytes() == b""
    finally:
        storage.close()
    storage = Storage(tmp_path)
    try:
        assert storage.journal_records() == []
        assert [(r["txn_id"], r["status"]) for r in storage.load_txns()] == [(1200, "ABORTED")]
    finally:
        storage.close()


def test_a_loads_key_facts_by_arrow_kernels_are_the_ones_duckdb_gives() -> None:
    """``staged_keys_arrow`` (no DuckDB statement) answers as ``staged_keys`` for the key types it takes:
    bounds, distinctness and NULLs, text compared by its bytes."""
    import datetime
    import random

    import duckdb

    from devstack.doris.merge import staged_keys, staged_keys_arrow

    rnd = random.Random(30)
    texts = ["a", "b", "é", "Z", "zz", "", "a b", "\u00ff", "10", "9"]
    cases = [("BIGINT", pa.int64(), lambda: rnd.randint(-10**12, 10**12)),
             ("INT", pa.int32(), lambda: rnd.randint(-5, 5)),
             ("VARCHAR(32)", pa.utf8(), lambda: rnd.choice(texts) + str(rnd.randint(0, 2))),
             ("DATE", pa.date32(), lambda: datetime.date(2000, 1, 1) + datetime.timedelta(days=rnd.randint(0, 9)))]
    con = duckdb.connect()
    seen = {"bounds": 0, "distinct": 0, "repeated": 0}
    for dtype, arrow_type, value in cases:
        table = Table("d", "t", "UNIQUE_KEYS", [Column("k", dtype, is_key=True), Column("v", "INT")], ["k"])
        for _ in range(60):
            size = rnd.randint(1, 12)
            keys = [None if rnd.random() < 0.05 else value() for _ in range(size)]
            rows = pa.table({"k": pa.array(keys, arrow_type), "v": pa.array(range(size), pa.int32())})
            con.register("s", rows)
            by_duckdb = staged_keys(con, table, "s")
            con.unregister("s")
            by_arrow = staged_keys_arrow(table, rows)
            assert by_arrow == by_duckdb, (dtype, keys)
            seen["bounds"] += bool(by_arrow.bounds)
            seen["distinct"] += by_arrow.distinct
            seen["repeated"] += bool(by_arrow.bounds) and not by_arrow.distinct
    assert all(seen.values()), seen  # every kind of answer was compared


def test_a_composite_keys_facts_by_arrow_kernels_are_the_ones_duckdb_gives() -> None:
    """For a key of several columns ``staged_keys_arrow`` answers as ``staged_keys`` too: the first
    column's bounds, and distinctness over all of them, a NULL one group as in ``SELECT DISTINCT``."""
    import random

    import duckdb

    from devstack.doris.merge import staged_keys, staged_keys_arrow

    rnd = random.Random(31)
    table = Table("d", "t", "UNIQUE_KEYS", [Column("a", "INT", is_key=True), Column("b", "VARCHAR(16)", is_key=True),
                                            Column("v", "INT")], ["a", "b"])
    con = duckdb.connect()
    seen = {"bounds": 0, "no_bounds": 0, "distinct": 0, "repeated": 0}
    for _ in range(200):
        size = rnd.randint(1, 10)
        a = [None if rnd.random() < 0.05 else rnd.randint(-3, 3) for _ in range(size)]
        b = [None if rnd.random() < 0.1 else rnd.choice(["x", "y", "é", ""]) for _ in range(size)]
        rows = pa.table({"a": pa.array(a, pa.int32()), "b": pa.array(b, pa.utf8()), "v": pa.array(range(size), pa.int32())})
        con.register("s", rows)
        by_duckdb = staged_keys(con, table, "s")
        con.unregister("s")
        by_arrow = staged_keys_arrow(table, rows)
        assert by_arrow == by_duckdb, (a, b)
        seen["bounds" if by_arrow.bounds else "no_bounds"] += 1
        seen["distinct" if by_arrow.distinct else "repeated"] += 1
    assert all(seen.values()), seen


def test_merge_arrow_stores_what_merge_rows_stores(tmp_path) -> None:
    """A commit's rows applied by ``merge_arrow`` (its guarded append, its DELETE and INSERT without a
    scratch table, its fall-back) end as ``merge_rows`` leaves them, and it answers the same count:
    random stored rows and loads, keys distinct or repeated, NULL keys, tombstones, sequence values
    higher and lower (and NULL), with and without a sequence column, one key column or two."""
    import random

    import duckdb

    from devstack.doris.merge import merge_arrow, staged_keys_arrow

    rnd = random.Random(32)
    shapes = []
    for seq in (False, True):
        for composite in (False, True):
            for nullable in (False, True):
                cols = [Column("a", "INT", nullable, True)] + ([Column("b", "VARCHAR(4)", nullable, True)] if composite
                                                                else []) + [Column("v", "INT")]
                props = {"function_column.sequence_type": "BIGINT"} if seq else {}
                shapes.append(Table("d", "t", "UNIQUE_KEYS", cols, [c.name for c in cols if c.is_key], properties=props))
    seen = {"append": 0, "overlap": 0, "repeated": 0}

    def key(nullable: bool) -> tuple:
        return (None if nullable and rnd.random() < 0.1 else rnd.randint(0, 6),
                None if nullable and rnd.random() < 0.1 else rnd.choice(["x", "y"]))

    def staged(shape: Table, n: int, offset: int) -> pa.Table:
        nullable = shape.columns[0].nullable
        keys = [key(nullable) for _ in range(n)]
        if rnd.random() < 0.3:  # a snapshot chunk or a stream's new keys: distinct, beyond the stored ones
            keys = [(offset + i, "x") for i in range(n)]
        out = {"__ord": pa.array(range(n), pa.int64()), "a": pa.array([k[0] for k in keys], pa.int32())}
        if len(shape.key_names) == 2:
            out["b"] = pa.array([k[1] for k in keys], pa.utf8())
        out["v"] = pa.array([rnd.randint(0, 99) for _ in range(n)], pa.int32())
        out["__sign"] = pa.array([int(rnd.random() < 0.2) for _ in range(n)], pa.int8())
        if shape.has_sequence:
            out["__seq"] = pa.array([None if rnd.random() < 0.1 else rnd.randint(0, 9) for _ in range(n)], pa.int64())
        return pa.table(out)

    cons = {way: duckdb.connect() for way in ("rows", "arrow")}
    for con in cons.values():
        con.execute("CREATE SCHEMA s; CREATE SCHEMA __standin")
    for trial in range(96):
        shape = shapes[trial % len(shapes)]
        results = []
        loads = [staged(shape, rnd.randint(1, 6), 100 + 10 * i) for i in range(4)]
        for way, con in cons.items():
            cols = [f"{c.name} {c.dtype.duck()}" for c in shape.columns] + ["__DORIS_DELETE_SIGN__ TINYINT DEFAULT 0"]
            if shape.has_sequence:
                cols.append("__DORIS_SEQUENCE_COL__ BIGINT")
            con.execute(f"CREATE OR REPLACE TABLE s.t ({', '.join(cols)})")
            counts = []
            for rows in loads:
                facts = staged_keys_arrow(shape, rows)
                if way == "rows":
                    con.register("stg", rows)
                    counts.append(merge_rows(con, shape, "s.t", "stg", set(rows.column_names), "__standin.w", facts))
                    con.unregister("stg")
                else:
                    counts.append(merge_arrow(con, shape, "s.t", rows, "__standin.w", facts))
                    if way == "arrow" and facts is not None:
                        seen["append" if facts.distinct and facts.bounds else "overlap" if facts.distinct
                             else "repeated"] += 1
            results.append((counts, sorted(con.execute("SELECT * FROM s.t").fetchall(), key=repr)))
        assert results[0] == results[1], (shape, loads)
    assert all(seen.values()), seen


def test_a_begin_is_written_at_once_and_synced_before_any_reply_that_tells_of_it(tmp_path) -> None:
    """A begin's PREPARE record is in the journal file when ``begin`` returns (a ``kill -9`` keeps it)
    but costs no ``fdatasync`` of its own; the precommit's sync covers it, and a reply naming the
    PREPARE transaction — its label's state, a Label Already Exists — syncs it first."""
    import json

    from devstack.doris.load_request import LoadContext
    from devstack.doris.stream_load_execution import StreamLoader
    from devstack.doris.transactions import TxnManager

    storage = Storage(tmp_path / "data")
    try:
        _unique_table(storage)
        txns = TxnManager(storage)

        def on_file() -> list[tuple[int, str]]:
            lines = storage._journal_path(storage._journal_gen).read_bytes().splitlines()
            return [(json.loads(line)["txn_id"], json.loads(line)["status"]) for line in lines]

        def unsynced() -> int:
            return storage._journal_written - storage._journal_synced

        first = txns.begin("d", "l1", "t", True)
        assert on_file()[-1] == (first.txn_id, "PREPARE") and unsynced() == 1
        assert txns.label_state("d", "l1") == "PREPARE" and unsynced() == 0

        second = txns.begin("d", "l2", "t", True)
        assert unsynced() == 1
        loader = StreamLoader(storage, txns, tmp_path / "errors")
        res = loader.run(LoadContext("d", "t", {"label": "l2", "format": "json", "read_json_by_line": "true"},
                                     b'{"id": 1, "v": "x"}\n', "127.0.0.1", 8040))
        assert res.status == "Label Already Exists" and f"txn [{second.txn_id}]" in res.message
        assert unsynced() == 0

        third = txns.begin("d", "l3", "t", True)
        txns.precommit(third, False)
        assert unsynced() == 0  # one sync for the begin and the precommit
        assert on_file()[-2:] == [(third.txn_id, "PREPARE"), (third.txn_id, "PRECOMMITTED")]
    finally:
        storage.close()


def test_a_small_loads_staged_rows_are_kept_in_memory_until_its_file_goes(tmp_path) -> None:
    """A commit reads a small load's rows from memory (its file is still written and fsynced first);
    they go with the file, at the commit that applies them or at the abort, and a restart reads the file."""
    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)
        storage.write_staging(1, _staged([1, 2], ["a", "b"]), table)
        storage.write_staging(2, _staged([3], ["c"]), table)
        assert storage.staging_path(1).exists() and storage.staging_path(2).exists()
        kept = storage.read_staged(1)
        assert kept is storage._staged_rows[1] and kept.column("v").to_pylist() == ["a", "b"]
        with storage.transaction() as cur:
            storage.merge(cur, table, 1, kept)
            storage.drop_staging(cur, 1)
        storage.discard_staging(2)
        assert storage._staged_rows == {} and storage._staged_rows_bytes == 0
        assert not storage.staging_path(1).exists() and not storage.staging_path(2).exists()
        assert _stored(storage) == [(1, "a"), (2, "b")]
        storage.write_staging(3, _staged([4], ["d"]), table)
    finally:
        storage.close()
    again = Storage(tmp_path)
    try:
        assert again._staged_rows == {}
        assert again.read_staged(3).column("v").to_pylist() == ["d"]  # from its file
    finally:
        again.close()


def test_a_load_whose_keys_lie_outside_every_stored_key_is_appended_without_asking_duckdb(tmp_path) -> None:
    """An integer-keyed table's envelope of stored keys (``Storage._envelopes``) lets a load of new
    keys (a stream's inserts) be appended without the ``NOT EXISTS`` over its bounds; a load
    within the envelope, even between stored keys, and any load after a DDL still asks."""
    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)

        commit = _committer(storage, table)
        commit(1, [1, 2, 3], ["a", "b", "c"])  # a new table: its envelope known empty, not asked
        commit(2, [20, 21], ["d", "e"])
        assert storage.unguarded_appends == 2
        commit(3, [2, 3], ["x", "y"])  # meets stored keys: merged
        commit(4, [10, 11], ["f", "g"])  # none stored, but within the envelope: asked
        assert storage.unguarded_appends == 2
        commit(5, [30], ["h"])
        assert storage.unguarded_appends == 3
        with storage.transaction() as cur:
            storage.after_ddl(cur)  # forgotten: asked of DuckDB again
        commit(6, [3], ["z"])
        commit(7, [40], ["i"])
        assert storage.unguarded_appends == 4
        assert _stored(storage) == [(1, "a"), (2, "x"), (3, "z"), (10, "f"), (11, "g"), (20, "d"), (21, "e"),
                                    (30, "h"), (40, "i")]
    finally:
        storage.close()


def test_a_new_tables_first_load_is_appended_whatever_its_key_type(tmp_path) -> None:
    """A table just created holds no row (``Storage.create_table`` records its envelope empty), so
    its first load of distinct keys is appended as it is, a text key too; the next load, whose keys
    meet the stored ones, is merged (a text key's envelope is not kept), and so is a load after the
    table was dropped and created again holding rows of its first life no more."""
    storage = Storage(tmp_path)
    try:
        table = Table("d", "s", "UNIQUE_KEYS", [Column("k", "VARCHAR(8)", is_key=True), Column("v", "VARCHAR(8)")],
                      ["k"])
        with storage.transaction() as cur:
            storage.create_database(cur, "d")
            storage.create_table(cur, table)

        def commit(txn_id: int, keys: list[str], values: list[str]) -> None:
            rows = pa.table({"__ord": list(range(len(keys))), "k": keys, "v": values,
                             "__sign": pa.array([0] * len(keys), pa.int8())})
            storage.write_staging(txn_id, rows, table)
            with storage.transaction() as cur:
                assert storage.merge(cur, table, txn_id) == len(keys)

        def stored() -> list[tuple]:
            with storage.cursor() as cur:
                return cur.execute(f"SELECT k, v FROM {data_ref('d', 's')} ORDER BY k").fetchall()

        commit(1, ["m", "c", "x"], ["a", "b", "c"])
        assert storage.unguarded_appends == 1
        commit(2, ["c", "d"], ["y", "z"])  # meets a stored key: merged, one row per key
        assert storage.unguarded_appends == 1
        assert stored() == [("c", "y"), ("d", "z"), ("m", "a"), ("x", "c")]
        with storage.transaction() as cur:
            storage.drop_table(cur, "d", "s")
            storage.create_table(cur, table)
        commit(3, ["c"], ["w"])
        assert storage.unguarded_appends == 2
        assert stored() == [("c", "w")]
    finally:
        storage.close()


def test_a_rolled_back_load_leaves_the_envelope_covering_its_keys(tmp_path) -> None:
    """The envelope only widens: a load rolled back with its transaction still counts, so it is a
    superset of the stored keys whatever committed."""
    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)
        storage.write_staging(1, _staged([5, 6], ["a", "b"]), table)
        with pytest.raises(RuntimeError), storage.transaction() as cur:
            storage.merge(cur, table, 1)
            raise RuntimeError("rolled back")
        assert _stored(storage) == []
        storage.write_staging(2, _staged([6], ["c"]), table)
        with storage.transaction() as cur:
            storage.merge(cur, table, 2)
        assert storage.unguarded_appends == 1  # the first only; the second asked
        assert _stored(storage) == [(6, "c")]
    finally:
        storage.close()


def test_keys_in_order_are_known_distinct_without_a_distinct_count(monkeypatch) -> None:
    """A load whose keys rise strictly (a snapshot chunk) is distinct by one comparison of each row
    with the next, no distinct count; sorted loads with and without a repeated key (one key column
    or two) still answer as DuckDB does."""
    import random

    import duckdb
    import pyarrow.compute as pc

    from devstack.doris.merge import staged_keys, staged_keys_arrow

    rnd = random.Random(9)
    one = Table("d", "t", "UNIQUE_KEYS", [Column("k", "BIGINT", is_key=True), Column("v", "INT")], ["k"])
    two = Table("d", "t", "UNIQUE_KEYS", [Column("a", "INT", is_key=True), Column("b", "VARCHAR(8)", is_key=True),
                                          Column("v", "INT")], ["a", "b"])
    con = duckdb.connect()
    seen = {"distinct": 0, "repeated": 0}
    for _ in range(40):
        size = rnd.randint(2, 12)
        pairs = sorted((rnd.randint(0, 6), rnd.choice("xyz")) for _ in range(size))
        cases = [(one, pa.table({"k": pa.array(sorted(a * 3 + "xyz".index(b) for a, b in pairs), pa.int64()),
                                 "v": pa.array(range(size), pa.int32())})),
                 (two, pa.table({"a": pa.array([a for a, _ in pairs], pa.int32()), "b": [b for _, b in pairs],
                                 "v": pa.array(range(size), pa.int32())}))]
        for table, rows in cases:
            con.register("s", rows)
            by_duckdb = staged_keys(con, table, "s")
            con.unregister("s")
            assert staged_keys_arrow(table, rows) == by_duckdb, rows.to_pylist()
            seen["distinct" if by_duckdb.distinct else "repeated"] += 1
    assert all(seen.values()), seen

    def no_count(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - stands in for pc.count_distinct
        raise AssertionError("a distinct count for keys in order")

    monkeypatch.setattr(pc, "count_distinct", no_count)
    facts = staged_keys_arrow(one, pa.table({"k": pa.array(range(100_000), pa.int64()),
                                             "v": pa.array([0] * 100_000, pa.int32())}))
    assert facts is not None and facts.distinct and facts.rows == 100_000


def test_a_small_two_phase_loads_rows_ride_in_its_precommitted_line_until_a_fold_writes_them_out(tmp_path) -> None:
    """Rows staged inline (``write_staging(inline=True)``) are in no file: the PRECOMMITTED record holds
    them, so a restart without a clean shutdown finds them; a journal fold first writes the rows of
    loads still waiting to staged files, as its commit deletes the journal that held them."""
    from devstack.doris.transactions import TxnManager

    def abandon(storage: Storage) -> None:  # as ``kill -9`` leaves it: no checkpoint, no fold
        storage._builders.shutdown(wait=True)
        storage.con.close()
        assert storage._journal_fd is not None
        import os
        os.close(storage._journal_fd)

    storage = Storage(tmp_path)
    table = _unique_table(storage)
    mgr = TxnManager(storage)
    waiting = mgr.begin("d", "waiting", "t", two_pc=True)
    storage.write_staging(waiting.txn_id, _staged([1, 2], ["a", "b"]), table, ahead=True, inline=True)
    mgr.precommit(waiting, staged=True)
    applied = mgr.begin("d", "applied", "t", two_pc=True)
    storage.write_staging(applied.txn_id, _staged([3], ["c"]), table, ahead=True, inline=True)
    mgr.precommit(applied, staged=True)
    mgr.commit_2pc("d", applied.txn_id, None)
    assert list(storage.staging_dir.iterdir()) == []
    abandon(storage)

    storage = Storage(tmp_path)  # the journal replayed: the waiting load's rows come back from its line
    mgr = TxnManager(storage)  # ... and its start-up fold wrote them to a staged file
    assert sorted(p.name for p in storage.staging_dir.iterdir()) == [f"{waiting.txn_id}.arrow"]
    assert mgr.lookup(waiting.txn_id).status == "PRECOMMITTED"  # type: ignore[union-attr]
    late = mgr.begin("d", "late", "t", two_pc=True)
    storage.write_staging(late.txn_id, _staged([2], ["z"]), table, ahead=True, inline=True)
    mgr.precommit(late, staged=True)
    with storage.locked():
        mgr.fold_journal([])  # the late load's line goes with this journal: its rows go to a file first
    assert sorted(p.name for p in storage.staging_dir.iterdir()) == sorted(f"{t.txn_id}.arrow" for t in (waiting, late))
    abandon(storage)

    storage = Storage(tmp_path)
    mgr = TxnManager(storage)
    try:
        for t in (waiting, late):
            mgr.commit_2pc("d", t.txn_id, None)
        assert _stored(storage) == [(1, "a"), (2, "z"), (3, "c")]  # each applied once, in commit order
        assert list(storage.staging_dir.iterdir()) == []
    finally:
        storage.close()


def test_a_table_whose_loads_met_stored_keys_skips_the_guarded_append_a_while_and_stores_the_same_rows(tmp_path) -> None:
    """Once a load's guarded ``INSERT`` found stored rows within its bounds (a stream's updates), the
    table's next merges go straight to the ``DELETE`` and ``INSERT``: the same rows stored, new keys
    and replaced ones alike; after ``_GUARD_BACKOFF`` of them the guard is tried again."""
    from devstack.doris.storage import _GUARD_BACKOFF

    storage = Storage(tmp_path)
    try:
        table = _unique_table(storage)

        commit = _committer(storage, table)
        commit(1, [1, 100], ["a", "h"])
        commit(2, [1, 2], ["x", "b"])  # meets key 1: the guard appended nothing
        assert storage.guards_skipped == 0
        commit(3, [3, 4], ["c", "d"])  # new keys within the envelope: merged without the guard
        commit(4, [2, 100], ["y", "z"])
        assert storage.guards_skipped == 2
        assert _stored(storage) == [(1, "x"), (2, "y"), (3, "c"), (4, "d"), (100, "z")]
        for txn_id in range(5, 5 + _GUARD_BACKOFF):
            commit(txn_id, [txn_id + 10], [f"v{txn_id}"])
        assert storage.guards_skipped == _GUARD_BACKOFF  # then tried again (and appended)
        assert len(_stored(storage)) == 5 + _GUARD_BACKOFF
    finally:
        storage.close()
