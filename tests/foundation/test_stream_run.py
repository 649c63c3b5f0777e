"""How long one binlog run keeps streaming (``cdc_core/pipeline/stream_run.py``)."""

from __future__ import annotations

import pytest

from cdc_core.pipeline.results import BatchResult
from cdc_core.pipeline.stream_run import StreamRunEnd, StreamRunPolicy

AT = {"file": "binlog.000001", "position": 400}
SERVER = {"file": "binlog.000001", "position": 900}


def batch(batch_id: str = "b1", ddl: dict | None = None) -> BatchResult:
    return BatchResult(batch_id, {"file": "binlog.000001", "position": 100}, AT, {"db.t": 3}, (), ddl)


def test_no_budget_means_one_batch_per_run():
    assert StreamRunPolicy(0.0).before_commit(batch(), run_started=0.0, now=0.1) is StreamRunEnd.ONE_BATCH


@pytest.mark.parametrize(("result", "now", "end"), [
    (batch(""), 1.0, StreamRunEnd.NOTHING_READ),
    (batch(ddl={"table_id": "db.t"}), 1.0, StreamRunEnd.DDL),
    (batch(), 60.0, StreamRunEnd.BUDGET),
    (batch(), 1.0, None),
])
def test_before_commit(result, now, end):
    assert StreamRunPolicy(60.0).before_commit(result, run_started=0.0, now=now) is end


def test_next_batch_while_the_server_has_moved_on():
    policy = StreamRunPolicy(60.0, batch_interval_s=1.0)
    assert policy.next_batch(False, False, batch_started=5.0, run_started=0.0, now=5.2) is StreamRunEnd.CAUGHT_UP
    assert policy.next_batch(True, True, batch_started=5.0, run_started=0.0, now=5.2) is StreamRunEnd.PAUSED
    # a quick batch waits out the interval; a slow one is followed at once
    assert policy.next_batch(True, False, batch_started=5.0, run_started=0.0, now=5.25) == pytest.approx(0.75)
    assert policy.next_batch(True, False, batch_started=5.0, run_started=0.0, now=8.0) == 0.0
    # no next batch once the wait would reach the end of the budget
    assert policy.next_batch(True, False, batch_started=59.5, run_started=0.0, now=59.6) is StreamRunEnd.BUDGET


def test_a_caught_up_run_waits_for_more_within_its_budget():
    assert StreamRunPolicy(60.0).idle_deadline(run_started=0.0, now=5.0) is None  # no idle wait: ends at once
    policy = StreamRunPolicy(60.0, idle_wait_s=10.0)
    assert policy.idle_deadline(run_started=0.0, now=5.0) == 15.0
    assert policy.idle_deadline(run_started=0.0, now=55.0) == 60.0  # never past the budget
    assert policy.idle_deadline(run_started=0.0, now=60.0) is None
    assert StreamRunPolicy(0.0, idle_wait_s=10.0).idle_deadline(run_started=0.0, now=0.1) is None  # one batch a run


def test_negative_settings_are_refused_naming_the_options():
    with pytest.raises(ValueError, match="tidemark.binlog.run-seconds"):
        StreamRunPolicy(-1.0)
    with pytest.raises(ValueError, match="tidemark.binlog.idle-wait-s"):
        StreamRunPolicy(60.0, idle_wait_s=-1.0)
