"""The state store: atomic updates, durable across reopen, versioned schema."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from cdc_core.state import BatchRecord, BatchStatus, ChunkRecord, ChunkStatus, StateStore
from cdc_core.state.store import SCHEMA_VERSION, meta_table


def test_updates_in_one_transaction_commit_together_or_not_at_all(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        tx.add_chunks([ChunkRecord.planned("shop.t", i, None if i == 0 else [i * 10], [(i + 1) * 10])
                       for i in range(3)])
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.update_chunk("shop.t", 0, status=ChunkStatus.PREPARED, transactions=[{"txn_id": 7}])
        tx.put("binlog", "committed_offset", {"file": "binlog.000001", "position": 99})
        raise RuntimeError("crash between the two halves")
    with store.transaction(readonly=True) as tx:
        assert [c.status for c in tx.chunks()] == [ChunkStatus.PENDING] * 3
        assert tx.get("binlog", "committed_offset") is None


def test_state_survives_reopen(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        tx.add_chunks([ChunkRecord.planned("shop.t", 0)])
        tx.update_chunk("shop.t", 0, status=ChunkStatus.COMMITTED,
                        high_watermark={"file": "binlog.000002", "position": 4})
        tx.put_batch(BatchRecord("b1", {"file": "binlog.000001", "position": 4},
                                 {"file": "binlog.000002", "position": 9}, BatchStatus.PREPARED,
                                 [{"label": "x", "txn_id": 3}]))
        tx.put_schema("shop.t", 10, {"file": "binlog.000001", "position": 10}, {"v": 1})
        tx.put_schema("shop.t", 20, {"file": "binlog.000001", "position": 20}, {"v": 2})
    store.close()
    again = StateStore.open(tmp_path)
    with again.transaction(readonly=True) as tx:
        chunk = tx.chunks("shop.t")[0]
        assert chunk.status is ChunkStatus.COMMITTED and chunk.high_watermark["position"] == 4
        assert tx.batches(BatchStatus.PREPARED)[0].transactions == [{"label": "x", "txn_id": 3}]
        assert tx.batch("b1").status is BatchStatus.PREPARED and tx.batch("nope") is None
        assert tx.schema_at("shop.t", 15) == {"v": 1}
        assert tx.schema_at("shop.t", 20) == {"v": 2}
        assert tx.schema_at("shop.t", 5) is None
    assert again.schema_version == SCHEMA_VERSION


def test_unknown_chunk_update_is_an_error(tmp_path):
    store = StateStore.open(tmp_path)
    with pytest.raises(KeyError, match="no chunk shop.t#4"), store.transaction() as tx:
        tx.update_chunk("shop.t", 4, status=ChunkStatus.PREPARED)


def test_many_chunk_updates_write_what_one_by_one_would(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        tx.add_chunks([ChunkRecord.planned("shop.t", i) for i in range(4)])
        tx.update_chunks([
            ("shop.t", 0, {"status": ChunkStatus.PREPARED, "rows": 5, "transactions": [{"txn_id": 1}]}),
            ("shop.t", 1, {"status": ChunkStatus.PREPARED, "rows": 6, "transactions": [{"txn_id": 2}]}),
            ("shop.t", 2, {"status": ChunkStatus.PENDING, "generation": 3, "transactions": None}),
        ])
    with store.transaction(readonly=True) as tx:
        chunks = {c.chunk_index: c for c in tx.chunks()}
    assert [(chunks[i].status, chunks[i].rows, chunks[i].transactions) for i in (0, 1)] == [
        (ChunkStatus.PREPARED, 5, [{"txn_id": 1}]), (ChunkStatus.PREPARED, 6, [{"txn_id": 2}])]
    assert (chunks[2].status, chunks[2].generation, chunks[3].status) == (ChunkStatus.PENDING, 3, ChunkStatus.PENDING)
    with pytest.raises(KeyError, match="shop.t#9"), store.transaction() as tx:  # nothing of it written
        tx.update_chunks([("shop.t", i, {"status": ChunkStatus.COMMITTED}) for i in (0, 9, 1)])
    with store.transaction(readonly=True) as tx:
        assert [c.status for c in tx.chunks()][:2] == [ChunkStatus.PREPARED] * 2


def _two_tables_one_dropped(tx) -> None:
    """shop.t at 10 and 20; shop.gone at 5, dropped at 7."""
    tx.put_schema("shop.t", 10, {"file": "binlog.000001", "position": 10}, {"v": 1})
    tx.put_schema("shop.t", 20, {"file": "binlog.000001", "position": 20}, {"v": 2})
    tx.put_schema("shop.gone", 5, {"file": "binlog.000001", "position": 5}, {"v": 3})
    tx.put_schema("shop.gone", 7, {"file": "binlog.000001", "position": 7}, None)  # dropped


def test_latest_schemas_are_what_schema_at_the_end_reads(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        _two_tables_one_dropped(tx)
    with store.transaction(readonly=True) as tx:
        assert tx.latest_schemas() == {t: tx.schema_at(t, 2**63 - 1) for t in tx.schema_tables()} == {
            "shop.t": {"v": 2}, "shop.gone": None}


def test_schemas_at_are_what_schema_at_reads_table_by_table(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        _two_tables_one_dropped(tx)
        tx.put_schema("shop.late", 30, {"file": "binlog.000001", "position": 30}, {"v": 4})
    with store.transaction(readonly=True) as tx:
        for at in (4, 5, 6, 7, 15, 20, 25, 30):
            expected = {t: tx.schema_at(t, at) for t in tx.schema_tables()
                        if any(seq <= at for seq in {"shop.t": (10, 20), "shop.gone": (5, 7), "shop.late": (30,)}[t])}
            assert tx.schemas_at(at) == expected
        assert tx.schemas_at(15) == {"shop.t": {"v": 1}, "shop.gone": None}


def test_put_schemas_records_what_put_schema_records_one_by_one(tmp_path):
    # many tables at once, one of them recorded before at the same sequence (replaced, as put_schema does)
    entries = [(f"shop.t{n}", 10, {"file": "binlog.000001", "position": 10}, {"v": n}) for n in range(5)]
    one, many = StateStore.open(tmp_path / "one"), StateStore.open(tmp_path / "many")
    for store in (one, many):
        with store.transaction() as tx:
            tx.put_schema("shop.t0", 10, {"file": "binlog.000001", "position": 10}, {"v": "old"})
            tx.put_schema("shop.t0", 5, {"file": "binlog.000001", "position": 5}, {"v": "earlier"})
    with one.transaction() as tx:
        for entry in entries:
            tx.put_schema(*entry)
    with many.transaction() as tx:
        tx.put_schemas(iter(entries))
        tx.put_schemas([])
    for store in (one, many):
        with store.transaction(readonly=True) as tx:
            assert tx.latest_schemas() == {f"shop.t{n}": {"v": n} for n in range(5)}
            assert tx.schema_at("shop.t0", 7) == {"v": "earlier"}
            assert tx.schemas_at(10) == {f"shop.t{n}": {"v": n} for n in range(5)}


def test_a_store_from_a_newer_release_is_refused(tmp_path):
    store = StateStore.open(tmp_path)
    with store.engine.begin() as conn:
        conn.execute(meta_table.update().values(value=str(SCHEMA_VERSION + 1)))
    store.close()
    with pytest.raises(RuntimeError, match="newer Tidemark"):
        StateStore.open(tmp_path)


def test_sqlalchemy_url(tmp_path):
    store = StateStore.open(url=f"sqlite:///{tmp_path / 'shared.db'}")
    store.put("flags", "paused", True)
    assert store.get("flags", "paused") is True
    with store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(meta_table)).scalar_one() == 1


def test_a_state_file_written_with_plain_string_statuses_still_opens(tmp_path):
    """Statuses are stored as the strings they always were; older files read as typed records."""
    from cdc_core.state.store import batches_table, chunks_table

    store = StateStore.open(tmp_path)
    with store.engine.begin() as conn:
        conn.execute(chunks_table.insert().values(table_id="shop.t", chunk_index=0, start="null", end="null",
                                                  status="COMMITTED", generation=2,
                                                  high_watermark='{"file":"binlog.000001","position":4}'))
        conn.execute(batches_table.insert().values(batch_id="b0", start_offset="{}", end_offset="{}",
                                                   status="ABORTED", transactions="null", detail="null"))
    store.close()
    again = StateStore.open(tmp_path)
    with again.transaction(readonly=True) as tx:
        chunk = tx.chunks(status=ChunkStatus.COMMITTED)[0]
        assert chunk == ChunkRecord("shop.t", 0, None, None, ChunkStatus.COMMITTED, 2, None,
                                    {"file": "binlog.000001", "position": 4})
        assert tx.batches()[0].status is BatchStatus.ABORTED
    with again.engine.connect() as conn:
        assert conn.execute(sa.select(chunks_table.c.status)).scalar_one() == "COMMITTED"


def test_many_keys_read_and_deleted_at_once_are_what_one_by_one_would(tmp_path, monkeypatch):
    from cdc_core.state import store as store_module
    from cdc_core.state.keys import PARITY_MYSQL_SIDE

    monkeypatch.setattr(store_module, "IN_LIST", 3)  # several statements for the seven keys
    store = StateStore.open(tmp_path)
    names = [f"db.t{n}#00000" for n in range(7)]
    with store.transaction() as tx:
        for n, name in enumerate(names):
            if n != 4:
                PARITY_MYSQL_SIDE.key(name).put(tx, {"n": n})
        tx.put("other", names[4], {"n": "not this namespace"})
    with store.transaction(readonly=True) as tx:
        one_by_one = {name: PARITY_MYSQL_SIDE.key(name).get(tx) for name in names}
        many = PARITY_MYSQL_SIDE.get_many(tx, [*names, "db.none#00000"])
    assert many == {name: value for name, value in one_by_one.items() if value is not None}
    assert names[4] not in many and len(many) == 6
    with store.transaction() as tx:
        PARITY_MYSQL_SIDE.delete_many(tx, names[:5])
    with store.transaction(readonly=True) as tx:
        assert sorted(PARITY_MYSQL_SIDE.get_many(tx, names)) == names[5:]
        assert tx.get("other", names[4]) == {"n": "not this namespace"}
    store.close()


def _put_many_as_one_by_one(store: StateStore) -> None:
    """``put_many`` leaves what ``put`` of each key in turn leaves: new keys inserted, known ones
    replaced, a key given twice its last value, another namespace untouched."""
    from cdc_core.state.keys import LEASES

    with store.transaction() as tx:
        tx.put("lease", "known", {"v": "old"})
        tx.put("other", "a", {"v": "not this namespace"})
    items = [("a", {"v": 1}), ("known", {"v": "new", "list": [1, "x,]"]}), ("b", None), ("a", {"v": 2})]
    with store.transaction() as tx:
        LEASES.put_many(tx, items)
        LEASES.put_many(tx, [])  # nothing to write
        LEASES.put_many(tx, [("single", 7)])
    with store.transaction(readonly=True) as tx:
        assert dict(LEASES.items(tx)) == {"a": {"v": 2}, "b": None, "known": {"v": "new", "list": [1, "x,]"]},
                                          "single": 7}
        assert tx.get("other", "a") == {"v": "not this namespace"}


def test_many_keys_put_at_once_are_what_one_by_one_would(tmp_path):
    store = StateStore.open(tmp_path)
    try:
        _put_many_as_one_by_one(store)
    finally:
        store.close()


def test_many_keys_put_at_once_on_postgresql(postgres_db):
    store = StateStore.open(url=postgres_db)
    try:
        _put_many_as_one_by_one(store)
    finally:
        store.close()


def test_many_keys_put_at_once_on_mysql(mysql_server, fresh_db):
    store = StateStore.open(url=f"mysql://root@localhost/{fresh_db}?unix_socket={mysql_server.endpoint.root_socket}")
    try:
        _put_many_as_one_by_one(store)
    finally:
        store.close()


def test_chunks_read_back_every_json_field_as_written(tmp_path):
    """``chunks()`` decodes all rows' JSON fields in one go: each field reads back as written, nulls
    and texts with JSON's own punctuation included, in key order."""
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        tx.add_chunks([ChunkRecord.planned("shop.b", 1, start=["x,]\"", 5], end=None),
                       ChunkRecord.planned("shop.a", 0, start=None, end=[{"k": "é"}])])
        tx.update_chunk("shop.b", 1, status=ChunkStatus.PREPARED, low_watermark={"file": "binlog.000001", "position": 4},
                        high_watermark=None, transactions=[{"txn_id": 1, "label": "l,[1]"}], detail={"s": 1.5}, rows=3)
    with store.transaction(readonly=True) as tx:
        a, b = tx.chunks()
        assert tx.chunks(table_id="shop.none") == []
    assert (a.table_id, a.start, a.end, a.transactions, a.detail) == ("shop.a", None, [{"k": "é"}], None, None)
    assert (b.start, b.end, b.low_watermark, b.high_watermark, b.transactions, b.detail, b.rows, b.status) == (
        ["x,]\"", 5], None, {"file": "binlog.000001", "position": 4}, None, [{"txn_id": 1, "label": "l,[1]"}],
        {"s": 1.5}, 3, ChunkStatus.PREPARED)
    store.close()


def _chunks_of_as_the_whole_plan(store: StateStore, monkeypatch) -> None:
    """``chunks_of`` gives, for the keys asked, the records ``chunks()`` has for them, and nothing
    else: keys split over several statements (``IN_LIST`` 3 here), a table of more chunks than one
    statement asks for, a table and an index each asked for but not together, keys not planned."""
    from cdc_core.state import store as store_module

    monkeypatch.setattr(store_module, "IN_LIST", 3)
    planned = [ChunkRecord.planned(f"db.t{t}", 0, start=None, end=None) for t in range(7)]
    planned += [ChunkRecord.planned("db.big", i, start=[i * 10], end=[i * 10 + 10]) for i in range(8)]
    planned += [ChunkRecord.planned("db.two", i, start=[i], end=[i + 1]) for i in range(3)]
    with store.transaction() as tx:
        tx.add_chunks(planned)
        tx.update_chunk("db.big", 5, status=ChunkStatus.PREPARED, transactions=[{"txn_id": 9, "label": "x"}])
    wanted = [("db.t1", 0), ("db.t4", 0), ("db.t6", 0), ("db.t2", 0), *(("db.big", i) for i in (0, 2, 3, 5, 6, 7)),
              ("db.two", 2), ("db.t3", 2), ("db.gone", 0)]
    with store.transaction(readonly=True) as tx:
        whole = {c.key: c for c in tx.chunks()}
        found = tx.chunks_of(wanted)
        assert tx.chunks_of([]) == {}
    assert found == {k: whole[k] for k in wanted if k in whole}
    assert ("db.t3", 2) not in found and ("db.two", 0) not in found  # a table and an index asked apart
    assert found[("db.big", 5)].status is ChunkStatus.PREPARED and len(found) == 11


def test_chunks_read_by_their_keys_are_those_of_the_whole_plan(tmp_path, monkeypatch):
    store = StateStore.open(tmp_path)
    try:
        _chunks_of_as_the_whole_plan(store, monkeypatch)
    finally:
        store.close()


def test_chunks_read_by_their_keys_on_postgresql(postgres_db, monkeypatch):
    store = StateStore.open(url=postgres_db)
    try:
        _chunks_of_as_the_whole_plan(store, monkeypatch)
    finally:
        store.close()


def test_chunks_read_by_their_keys_on_mysql(mysql_server, fresh_db, monkeypatch):
    store = StateStore.open(url=f"mysql://root@localhost/{fresh_db}?unix_socket={mysql_server.endpoint.root_socket}")
    try:
        _chunks_of_as_the_whole_plan(store, monkeypatch)
    finally:
        store.close()
