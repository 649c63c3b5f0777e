"""Exactly-once under failure: lost answers, crashes after prepare, leftover labels, recovery."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from cdc_core.doris.committable import Committable
from cdc_core.doris.errors import TransactionAbortedError, TransactionCommittedError
from cdc_core.doris.rows import snapshot_row
from cdc_core.doris.sink import DorisSink
from cdc_core.doris.transaction_recovery import LabelRef
from cdc_core.state import StateStore
from tests.sink.conftest import ROOT, make_client, select, test_type_mapper


def _rows(ids, tag="v"):
    return [snapshot_row({"id": i, "name": f"{tag}{i}"}, 7) for i in ids]


def test_commit_retried_after_its_response_was_lost(doris, sink, users):
    c = sink.load(users, "chunk-0-g0", _rows([1, 2]))
    # the commit is applied, then the reply is lost: first a dropped connection, then a failure reply
    doris.faults({"target": "commit", "mode": "drop_connection", "when": "after", "db": users.database})
    sink.commit([c])
    assert doris.active_faults() == []  # the fault was hit
    assert len(select(sink, users)) == 2
    doris.faults({"target": "commit", "mode": "fail", "when": "after", "db": users.database})
    sink.commit([c])  # "already visible" on the retry counts as success
    assert doris.active_faults() == []
    assert select(sink, users, "id, name") == [(1, "v1"), (2, "v2")]


def test_commit_and_load_survive_http_500(doris, sink, users):
    doris.faults({"target": "load", "mode": "http_500", "db": users.database, "count": 2})
    c = sink.load(users, "chunk-0-g0", _rows([1]))
    doris.faults({"target": "commit", "mode": "http_500", "db": users.database})
    sink.commit([c])
    assert doris.active_faults() == []
    assert select(sink, users, "id") == [(1,)]


def test_load_whose_answer_was_lost_is_found_again_by_its_label(doris, sink, users):
    # the BE precommits, then the connection drops: the retry meets "Label Already Exists / PRECOMMITTED"
    doris.faults({"target": "load", "mode": "drop_connection", "when": "after", "db": users.database})
    c = sink.load(users, "chunk-0-g0", _rows([1, 2, 3]))
    assert doris.active_faults() == []
    assert c.txn_id is not None
    assert select(sink, users) == []
    sink.commit([c])
    assert len(select(sink, users)) == 3


def test_label_left_over_from_an_earlier_run(doris, sink, users):
    # run 1 precommitted and died before recording anything
    earlier = sink.load(users, "chunk-5-g0", _rows([1, 2]))
    # run 2 loads the same batch: it gets run 1's transaction back, not a second copy
    again = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper)
    c = again.load(users, "chunk-5-g0", _rows([1, 2]))
    assert c.txn_id == earlier.txn_id and c.label == earlier.label
    again.commit([c])
    # a third attempt after the commit: FINISHED → the same committable; commit is a no-op
    c3 = again.load(users, "chunk-5-g0", _rows([1, 2]))
    assert c3.txn_id == earlier.txn_id
    again.commit([c3])
    assert select(sink, users, "id, name") == [(1, "v1"), (2, "v2")]
    again.close()


def test_a_fresh_load_replaces_what_an_earlier_attempt_precommitted(doris, sink, users):
    # a snapshot chunk read again (another high watermark) must not get the earlier rows back
    earlier = sink.load(users, "chunk-6-g0", _rows([1, 2], "old"))
    c = sink.load(users, "chunk-6-g0", _rows([1, 2, 3], "new"), fresh=True)
    assert c.label == earlier.label and c.txn_id != earlier.txn_id and c.rows == 3
    with pytest.raises(TransactionAbortedError):
        sink.commit([earlier])
    sink.commit([c])
    assert select(sink, users, "id, name") == [(1, "new1"), (2, "new2"), (3, "new3")]
    # once committed, the label cannot take other rows: the chunk needs its next generation's label
    with pytest.raises(TransactionCommittedError, match="already committed"):
        sink.load(users, "chunk-6-g0", _rows([4], "late"), fresh=True)
    assert select(sink, users, "id, name") == [(1, "new1"), (2, "new2"), (3, "new3")]


def test_recovery_aborts_lingering_labels_no_record_names(doris, sink, users):
    lingering = sink.load(users, "chunk-7-g0", _rows([7]))
    committed = sink.load(users, "chunk-8-g0", _rows([8]))
    sink.commit([committed])
    fresh = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper)
    report = fresh.recover(probe=[(users, "chunk-7-g0"), (users, "chunk-8-g0"), (users, "chunk-9-g0")])
    assert [r.label for r in report.lingering_aborted] == [lingering.label]
    assert [r.label for r in report.unrecorded_commits] == [committed.label]
    assert fresh.committer.states.state(users.database, lingering.label) == "ABORTED"
    # the same via the connector's empty-body probe (no get_load_state)
    lingering2 = sink.load(users, "chunk-10-g0", _rows([10]))
    from cdc_core.doris.transaction_recovery import TransactionRecovery

    rec = TransactionRecovery(fresh.committer, fresh.loader, use_load_state=False)
    ref = LabelRef(users.database, users.table, lingering2.label)
    free = LabelRef(users.database, users.table, fresh.label(users, "chunk-11-g0"))
    report2 = rec.recover(probe=[ref, free])
    assert report2.lingering_aborted == [ref]
    assert fresh.committer.states.state(users.database, lingering2.label) == "ABORTED"
    assert fresh.committer.states.state(users.database, free.label) in ("UNKNOWN", "ABORTED")
    assert select(sink, users, "id") == [(8,)]
    fresh.close()


CRASH_AFTER_PREPARE = textwrap.dedent("""
    import json, os, sys
    from cdc_core.doris.client import DorisHttpClient
    from cdc_core.doris.rows import snapshot_row
    from cdc_core.doris.sink import DorisSink
    from cdc_core.model.schema import TableId
    from cdc_core.state import StateStore
    fe, password, db, state_dir = sys.argv[1:5]
    sink = DorisSink(DorisHttpClient(fe, "root", password), "tm_test")
    target = TableId(db, "users")
    committables = [sink.load(target, "chunk-0-g0", [snapshot_row({"id": i, "name": "c"}, 9) for i in range(5)]),
                    sink.load(target, "chunk-1-g0", [snapshot_row({"id": i, "name": "c"}, 9) for i in range(5, 8)])]
    store = StateStore.open(state_dir)
    with store.transaction() as tx:
        tx.put("prepared", "batch-1", {"complete": True, "txns": [c.to_dict() for c in committables]})
    os._exit(0)  # crash: no commit, no cleanup
""")


def test_crash_after_prepare_is_committed_exactly_once_by_recovery(doris, sink, users, tmp_path):
    state_dir = tmp_path / "state"
    proc = subprocess.run([sys.executable, "-c", CRASH_AFTER_PREPARE, doris.fe, doris.password, users.database,
                           str(state_dir)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert select(sink, users) == []
    record = StateStore.open(state_dir).get("prepared", "batch-1")
    txns = [Committable.from_dict(c) for c in json.loads(json.dumps(record["txns"]))]
    for _run in range(2):  # recovery itself may crash and run again
        fresh = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper)
        report = fresh.recover(commit=txns)
        assert report.committed == txns and not report.lost
        fresh.close()
    rows = select(sink, users, "id")
    assert rows == [(i,) for i in range(8)]


def test_abort_of_a_committed_transaction_names_it(sink, users):
    c = sink.load(users, "chunk-0-g0", _rows([1]))
    sink.commit([c])
    with pytest.raises(TransactionCommittedError, match=rf"txn {c.txn_id}"):
        sink.abort([c])
    by_label = Committable(c.database, c.table, c.label, None, 1)
    with pytest.raises(TransactionCommittedError, match=c.label):
        sink.abort([by_label])


def test_commit_of_an_aborted_transaction_is_reported_as_lost(sink, users):
    c = sink.load(users, "chunk-0-g0", _rows([1]))
    sink.abort([c])
    with pytest.raises(TransactionAbortedError, match=rf"txn {c.txn_id}.*loaded again"):
        sink.commit([c])
    report = sink.recover(commit=[c])
    assert report.lost == [c]


def test_commit_by_label_when_the_txn_id_is_unknown(sink, users):
    c = sink.load(users, "chunk-0-g0", _rows([1, 2]))
    sink.commit([Committable(c.database, c.table, c.label, None, c.rows)])
    assert len(select(sink, users)) == 2


def test_load_waits_out_a_backend_that_is_down(doris, sink, users):
    doris.faults({"target": "load", "mode": "be_down", "count": 2, "db": users.database})
    c = sink.load(users, "chunk-0-g0", _rows([1]))
    assert doris.active_faults() == []
    sink.commit([c])
    assert select(sink, users, "id") == [(1,)]
