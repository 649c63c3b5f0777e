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
