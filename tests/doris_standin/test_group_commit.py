"""2PC commits that wait for the write lock are applied together (``TxnManager.commit_2pc``): one
DuckDB transaction for the group, each commit checked as alone, and a group whose transaction fails
rolled back and applied one by one, so one failing commit never fails another."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from devstack.doris.catalog import Column, Table
from devstack.doris.storage import Storage, data_ref
from devstack.doris.transactions import Txn, TxnError, TxnManager


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[tuple[Storage, TxnManager, Table]]:
    storage = Storage(tmp_path)
    table = Table("d", "t", "UNIQUE_KEYS", [Column("id", "BIGINT", is_key=True), Column("v", "VARCHAR(8)")], ["id"])
    with storage.transaction() as cur:
        storage.create_database(cur, "d")
        storage.create_table(cur, table)
    try:
        yield storage, TxnManager(storage), table
    finally:
        storage.close()


def _precommitted(storage: Storage, mgr: TxnManager, table: Table, label: str, key: int) -> Txn:
    t = mgr.begin("d", label, "t", two_pc=True)
    storage.write_staging(t.txn_id, pa.table({"__ord": [0], "id": [key], "v": [label],
                                              "__sign": pa.array([0], pa.int8())}), table)
    mgr.precommit(t, staged=True)
    return t


def _commit_together(storage: Storage, mgr: TxnManager, txns: list[Txn]) -> dict[int, Txn | BaseException]:
    """Commit ``txns`` from one thread each while this thread holds the write lock, released once
    every commit is queued: the first thread to take the lock then finds them all waiting."""
    out: dict[int, Txn | BaseException] = {}

    def commit(t: Txn) -> None:
        try:
            out[t.txn_id] = mgr.commit_2pc("d", t.txn_id, None)
        except BaseException as exc:  # noqa: BLE001 - the test looks at each answer
            out[t.txn_id] = exc

    threads = [threading.Thread(target=commit, args=(t,)) for t in txns]
    with storage.lock:
        for thread in threads:
            thread.start()
        while len(mgr._commit_queue) < len(txns):  # each queues before it waits for the lock
            time.sleep(0.001)
    for thread in threads:
        thread.join()
    return out


def _stored(storage: Storage) -> list[tuple]:
    with storage.cursor() as cur:
        return cur.execute(f"SELECT id, v FROM {data_ref('d', 't')} ORDER BY id").fetchall()


def test_waiting_commits_share_one_transaction_and_a_refused_one_gets_its_own_error(standin) -> None:
    storage, mgr, table = standin
    txns = [_precommitted(storage, mgr, table, f"l{i}", i) for i in range(4)]
    mgr.abort_2pc("d", txns[2].txn_id, None)
    out = _commit_together(storage, mgr, txns)
    assert (mgr.group_commits, mgr.group_committed) == (1, 3)
    assert isinstance(out[txns[2].txn_id], TxnError)
    assert str(out[txns[2].txn_id]) == f"transaction [{txns[2].txn_id}] is already aborted. abort reason: User Abort"
    assert [out[t.txn_id].status for t in txns if t is not txns[2]] == ["VISIBLE"] * 3  # type: ignore[union-attr]
    assert _stored(storage) == [(0, "l0"), (1, "l1"), (3, "l3")]
    assert mgr.running_count("d") == 0
    assert not any(storage.staging_path(t.txn_id).exists() for t in txns)
    # recorded as any commit is, in DuckDB with the rows (the abort is a journal line)
    states = {r["txn_id"]: r["status"] for r in storage.load_txns()}
    assert [states.get(t.txn_id) for t in txns] == ["VISIBLE", "VISIBLE", None, "VISIBLE"]


def test_a_group_whose_transaction_fails_is_applied_one_by_one(standin, monkeypatch) -> None:
    storage, mgr, table = standin
    txns = [_precommitted(storage, mgr, table, f"f{i}", i) for i in range(3)]
    merge = Storage.merge

    def failing_merge(self: Storage, cur, t: Table, txn_id: int, rows=None) -> int:  # noqa: ANN001
        if txn_id == txns[1].txn_id:
            raise RuntimeError("the merge failed")
        return merge(self, cur, t, txn_id, rows)

    monkeypatch.setattr(Storage, "merge", failing_merge)
    out = _commit_together(storage, mgr, txns)
    assert mgr.group_commits == 0  # rolled back, then each alone
    assert isinstance(out[txns[1].txn_id], RuntimeError)
    assert out[txns[0].txn_id].status == out[txns[2].txn_id].status == "VISIBLE"  # type: ignore[union-attr]
    assert _stored(storage) == [(0, "f0"), (2, "f2")]
    # the failed one is as it was before the group: still PRECOMMITTED, its rows staged, committable
    assert mgr.lookup(txns[1].txn_id).status == "PRECOMMITTED"  # type: ignore[union-attr]
    assert mgr.running_count("d") == 1
    monkeypatch.setattr(Storage, "merge", merge)
    assert mgr.commit_2pc("d", txns[1].txn_id, None).status == "VISIBLE"
    assert _stored(storage) == [(0, "f0"), (1, "f1"), (2, "f2")]


def test_a_group_writes_its_commits_records_in_one_statement(standin, monkeypatch) -> None:
    """A group's VISIBLE records are inserted together (``Storage.save_txns``), not one statement
    each; a transaction whose row a journal fold already wrote is replaced, not duplicated."""
    storage, mgr, table = standin
    txns = [_precommitted(storage, mgr, table, f"l{i}", i) for i in range(2)]
    with storage.lock:
        mgr.fold_journal([])  # these two now have a __standin.txns row (PRECOMMITTED)
    txns += [_precommitted(storage, mgr, table, f"l{i}", i) for i in range(2, 4)]
    single: list[int] = []
    save_txn = storage.save_txn
    monkeypatch.setattr(storage, "save_txn", lambda cur, rec, new=False: (single.append(rec["txn_id"]),
                                                                         save_txn(cur, rec, new=new)))
    out = _commit_together(storage, mgr, txns)
    assert (mgr.group_commits, mgr.group_committed) == (1, 4)
    assert single == []
    assert [out[t.txn_id].status for t in txns] == ["VISIBLE"] * 4  # type: ignore[union-attr]
    rows = storage.load_txns()
    assert sorted((r["txn_id"], r["status"]) for r in rows) == [(t.txn_id, "VISIBLE") for t in txns]
    assert _stored(storage) == [(0, "l0"), (1, "l1"), (2, "l2"), (3, "l3")]


def test_a_load_begins_and_precommits_while_commits_hold_the_write_lock(standin) -> None:
    """A load's begin and precommit take the transaction manager's lock alone, as a Doris FE's
    transaction manager is apart from the BEs' writes: they go on while a group of commits (or of
    ``CREATE TABLE``s) holds the storage's write lock, which once cost a 300-table snapshot's loads
    ~1.2 s of waiting (docs/performance.md). An abort still waits for it."""
    storage, mgr, table = standin
    done: list[Txn] = []
    aborted: list[Txn] = []
    with storage.lock:  # a commit group merging rows
        loader = threading.Thread(target=lambda: done.append(_precommitted(storage, mgr, table, "beside", 1)))
        loader.start()
        loader.join(10)
        assert done and done[0].status == "PRECOMMITTED"  # did not wait for the write lock
        assert mgr.running_count("d") == 1
        aborter = threading.Thread(target=lambda: aborted.append(mgr.abort_2pc("d", done[0].txn_id, None)))
        aborter.start()
        time.sleep(0.2)
        assert not aborted and done[0].status == "PRECOMMITTED"  # an abort waits for the write lock
    aborter.join(10)
    assert aborted and aborted[0].status == "ABORTED"
    assert mgr.running_count("d") == 0
