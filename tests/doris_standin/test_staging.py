"""Staged loads are files: kept until the transaction that applies or aborts them has committed."""

from __future__ import annotations

import pyarrow as pa
import pytest

from devstack.doris.storage import Storage


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
