"""A large load's rows are appended to its table at load time and made visible by its commit.

``Storage._prebuild`` moves the stand-in's heavy write from the commit (under the write lock) to the
load, as a BE writes segments before the publish. These tests lower the size threshold so that small
loads take that path, and check that it changes nothing a client can see: invisible until the commit,
gone with an abort, the general merge whenever the appended rows are no longer what the commit would
store, and the staged file (not the open DuckDB transaction) what survives a ``kill -9``.
"""

from __future__ import annotations

import signal

import pyarrow as pa
import pytest

from devstack.doris import storage as storage_module
from devstack.doris.catalog import Column, Table
from devstack.doris.storage import Storage, data_ref
from devstack.doris.transactions import Txn, TxnManager, _CommitRequest

from .conftest import StandInProcess
from .helpers import JSONL, jsonl


@pytest.fixture(autouse=True)
def _every_load_appended_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage_module, "PREBUILD_MIN_ROWS", 1)
    monkeypatch.setenv("DORIS_STANDIN_PREBUILD_MIN_ROWS", "1")  # for the stand-in processes


def _setup(tmp_path, keys_type: str = "UNIQUE_KEYS") -> tuple[Storage, TxnManager, Table]:
    storage = Storage(tmp_path)
    table = Table("d", "t", keys_type, [Column("id", "BIGINT", is_key=True), Column("v", "VARCHAR(8)")], ["id"])
    with storage.transaction() as cur:
        storage.create_database(cur, "d")
        storage.create_table(cur, table)
    return storage, TxnManager(storage), table


def _load(storage: Storage, txns: TxnManager, table: Table, label: str, ids: list[int], value: str) -> Txn:
    """A 2PC load as the stream-load path runs it: begin, stage, precommit."""
    txn = txns.begin("d", label, "t", True)
    rows = pa.table({"__ord": list(range(len(ids))), "id": ids, "v": [value] * len(ids)})
    if table.is_unique:
        rows = rows.append_column("__sign", pa.array([0] * len(ids), pa.int8()))
    storage.write_staging(txn.txn_id, rows, table, ahead=True)
    txns.precommit(txn, True)
    return txn


def _stored(storage: Storage) -> list[tuple]:
    with storage.cursor() as cur:
        return cur.execute(f"SELECT id, v FROM {data_ref('d', 't')} ORDER BY id, v").fetchall()


def _status(storage: Storage, txn_id: int) -> list[tuple]:
    with storage.cursor() as cur:
        return cur.execute("SELECT status, staged FROM __standin.txns WHERE txn_id = ?", [txn_id]).fetchall()


def _no_merge(monkeypatch: pytest.MonkeyPatch, storage: Storage) -> None:
    def merge(*_args: object, **_kwargs: object) -> int:
        raise AssertionError("the commit merged the staged file")
    monkeypatch.setattr(storage, "merge", merge)


@pytest.mark.parametrize("keys_type", ["UNIQUE_KEYS", "DUP_KEYS"])
def test_appended_rows_are_invisible_until_the_commit_which_records_them_with_the_rows(
        tmp_path, monkeypatch: pytest.MonkeyPatch, keys_type: str) -> None:
    storage, txns, table = _setup(tmp_path, keys_type)
    try:
        txn = _load(storage, txns, table, "a", [1, 2, 3], "a")
        storage.wait_prebuilt(txn.txn_id)
        assert txn.txn_id in storage._prebuilt
        assert _stored(storage) == []  # written, not committed
        _no_merge(monkeypatch, storage)
        txns.commit_2pc("d", txn.txn_id, None)
        assert _stored(storage) == [(1, "a"), (2, "a"), (3, "a")]
        assert _status(storage, txn.txn_id) == [("VISIBLE", False)]
        assert not storage.staging_path(txn.txn_id).exists() and not storage._prebuilt
    finally:
        storage.close()
    again = Storage(tmp_path)
    try:
        assert _stored(again) == [(1, "a"), (2, "a"), (3, "a")]
        assert TxnManager(again).lookup(txn.txn_id).status == "VISIBLE"  # type: ignore[union-attr]
    finally:
        again.close()


def test_an_abort_rolls_the_appended_rows_back(tmp_path) -> None:
    storage, txns, table = _setup(tmp_path)
    try:
        gone = _load(storage, txns, table, "gone", [1, 2], "x")
        kept = _load(storage, txns, table, "kept", [3], "y")
        txns.abort_2pc("d", gone.txn_id, None)
        assert gone.txn_id not in storage._prebuilt and not storage.staging_path(gone.txn_id).exists()
        txns.commit_2pc("d", kept.txn_id, None)
        assert _stored(storage) == [(3, "y")]
    finally:
        storage.close()


def test_keys_that_meet_rows_committed_since_the_load_take_the_general_merge(tmp_path) -> None:
    """Both loads appended their rows while the table was empty; the one committed second meets the
    first's keys, so its appended rows are dropped and its staged file merged: it wins, as before."""
    storage, txns, table = _setup(tmp_path)
    try:
        first = _load(storage, txns, table, "first", [1, 2, 3], "first")
        second = _load(storage, txns, table, "second", [2, 3, 4], "second")
        txns.commit_2pc("d", second.txn_id, None)
        txns.commit_2pc("d", first.txn_id, None)
        assert _stored(storage) == [(1, "first"), (2, "first"), (3, "first"), (4, "second")]
        assert _status(storage, first.txn_id) == [("VISIBLE", False)]
        assert not storage._prebuilt
    finally:
        storage.close()


def test_a_load_of_keys_the_table_holds_is_not_appended_ahead(tmp_path) -> None:
    """A binlog batch's updates would be merged by the commit anyway: no work is spent ahead on them."""
    storage, txns, table = _setup(tmp_path)
    try:
        txns.commit_2pc("d", _load(storage, txns, table, "base", [1, 2, 3], "old").txn_id, None)
        update = _load(storage, txns, table, "update", [2, 3], "new")
        storage.wait_prebuilt(update.txn_id)
        assert not storage._prebuilt and not storage._building
        txns.commit_2pc("d", update.txn_id, None)
        assert _stored(storage) == [(1, "old"), (2, "new"), (3, "new")]
    finally:
        storage.close()


def test_queued_commits_apply_appended_loads_alone_and_the_others_together_in_arrival_order(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A group commit's members share one DuckDB transaction: a load appended ahead commits its own
    transaction, so it is applied alone, between the groups, keeping the order of arrival."""
    monkeypatch.setattr(storage_module, "PREBUILD_MIN_ROWS", 2)  # the one-row loads are merged
    storage, txns, table = _setup(tmp_path)
    try:
        first = _load(storage, txns, table, "first", [1, 2, 3], "a")
        small = [_load(storage, txns, table, f"small{k}", [k], "c") for k in (5, 6)]
        last = _load(storage, txns, table, "last", [2, 3, 4], "b")
        requests = []
        for txn in (first, *small, last):
            storage.wait_prebuilt(txn.txn_id)
            requests.append(_CommitRequest("d", txn.txn_id, None, txn, None))
        assert [storage.has_prebuilt(t.txn_id) for t in (first, *small, last)] == [True, False, False, True]
        with storage.lock:
            txns._commit_queue = requests
            txns._commit_queued()
        assert all(r.error is None and r.result is not None for r in requests)
        assert txns.group_commits == 1 and txns.group_committed == 2  # the two small ones together
        # the last one met the first one's keys: merged from its staged file, it wins them
        assert _stored(storage) == [(1, "a"), (2, "b"), (3, "b"), (4, "b"), (5, "c"), (6, "c")]
        assert not storage._prebuilt
    finally:
        storage.close()


def test_a_journal_fold_or_a_table_change_since_the_load_takes_the_staged_file(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage, txns, table = _setup(tmp_path)
    merged: list[int] = []
    merge = storage.merge

    def counted(cur, t, txn_id, rows=None):  # type: ignore[no-untyped-def]
        merged.append(txn_id)
        return merge(cur, t, txn_id, rows)

    monkeypatch.setattr(storage, "merge", counted)
    try:
        folded = _load(storage, txns, table, "folded", [1], "a")
        with storage.lock:
            txns.fold_journal([])  # rewrites the transaction rows this load's snapshot predates
        txns.commit_2pc("d", folded.txn_id, None)
        altered = _load(storage, txns, table, "altered", [2], "b")
        with storage.transaction() as cur:  # a column added after the load (a light schema change)
            cur.execute(f"ALTER TABLE {data_ref('d', 't')} ADD COLUMN w INT")
            table.columns.append(Column("w", "INT"))
            storage.save_table(cur, table)
        txns.commit_2pc("d", altered.txn_id, None)
        assert merged == [folded.txn_id, altered.txn_id]
        assert _stored(storage) == [(1, "a"), (2, "b")]
        assert [s[0] for s in _status(storage, altered.txn_id)] == ["VISIBLE"]
    finally:
        storage.close()


@pytest.mark.integration  # it starts (and kills) its own stand-in
def test_kill_9_between_load_and_commit_then_commit_after_restart(tmp_path) -> None:
    """The open DuckDB transaction dies with the process; the staged file carries the load."""
    data = tmp_path / "data"
    srv = StandInProcess(data).start()
    srv.ok("CREATE DATABASE d")
    srv.ok("CREATE TABLE d.t (id BIGINT NOT NULL, v VARCHAR(20)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1")
    rows = jsonl(*({"id": i, "v": f"v{i}"} for i in range(100)))
    done = srv.load("d", "t", rows, label="done", two_phase_commit="true", **JSONL)
    pending = srv.load("d", "t", jsonl(*({"id": i, "v": "p"} for i in range(100, 150))), label="pending",
                       two_phase_commit="true", **JSONL)
    assert done["Status"] == pending["Status"] == "Success"
    assert srv.txn("d", "commit", txn_id=done["TxnId"])["status"] == "Success"
    assert srv.stop(signal.SIGKILL) == -signal.SIGKILL
    again = StandInProcess(data)
    again.fe_port, again.be_port = srv.fe_port, srv.be_port
    again.start()
    try:
        assert again.rows("SELECT count(*), sum(id) FROM t", "d") == [[100, 4950]]
        assert again.txn("d", "commit", txn_id=pending["TxnId"])["status"] == "Success"
        assert again.rows("SELECT count(*), sum(id) FROM t", "d") == [[150, sum(range(150))]]
        assert again.txn("d", "commit", txn_id=done["TxnId"])["msg"].endswith("is already visible, not pre-committed.")
    finally:
        again.stop()
