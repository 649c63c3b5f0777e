"""The state store: atomic updates, durable across reopen, versioned schema."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from cdc_core.state import StateStore
from cdc_core.state.store import SCHEMA_VERSION, meta_table


def test_updates_in_one_transaction_commit_together_or_not_at_all(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        tx.add_chunks([{"table_id": "shop.t", "chunk_index": i, "start": None if i == 0 else [i * 10],
                        "end": [(i + 1) * 10]} for i in range(3)])
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.update_chunk("shop.t", 0, status="PREPARED", transactions=[{"txn_id": 7}])
        tx.put("binlog", "committed_offset", {"file": "binlog.000001", "position": 99})
        raise RuntimeError("crash between the two halves")
    with store.transaction(readonly=True) as tx:
        assert [c["status"] for c in tx.chunks()] == ["PENDING"] * 3
        assert tx.get("binlog", "committed_offset") is None


def test_state_survives_reopen(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        tx.add_chunks([{"table_id": "shop.t", "chunk_index": 0, "start": None, "end": None}])
        tx.update_chunk("shop.t", 0, status="COMMITTED", high_watermark={"file": "binlog.000002", "position": 4})
        tx.put_batch("b1", {"file": "binlog.000001", "position": 4}, {"file": "binlog.000002", "position": 9},
                     "PREPARED", [{"label": "x", "txn_id": 3}])
        tx.put_schema("shop.t", 10, {"file": "binlog.000001", "position": 10}, {"v": 1})
        tx.put_schema("shop.t", 20, {"file": "binlog.000001", "position": 20}, {"v": 2})
    store.close()
    again = StateStore.open(tmp_path)
    with again.transaction(readonly=True) as tx:
        chunk = tx.chunks("shop.t")[0]
        assert chunk["status"] == "COMMITTED" and chunk["high_watermark"]["position"] == 4
        assert tx.batches("PREPARED")[0]["transactions"] == [{"label": "x", "txn_id": 3}]
        assert tx.schema_at("shop.t", 15) == {"v": 1}
        assert tx.schema_at("shop.t", 20) == {"v": 2}
        assert tx.schema_at("shop.t", 5) is None
    assert again.schema_version == SCHEMA_VERSION


def test_unknown_chunk_update_is_an_error(tmp_path):
    store = StateStore.open(tmp_path)
    with pytest.raises(KeyError, match="no chunk shop.t#4"), store.transaction() as tx:
        tx.update_chunk("shop.t", 4, status="PREPARED")


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
