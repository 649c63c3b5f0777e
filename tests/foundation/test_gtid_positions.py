"""GTID positions: comparing a committed position with a server's (MariaDB and MySQL forms), offsets
across a failover (epoch order and sequence values), and the checks before a batch resumes on
another server. No server needed."""

from __future__ import annotations

import pytest

from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.failover import (
    GtidFailoverError,
    align,
    behind_by_gtid,
    check_one_snapshot_server,
    check_successor,
    failed_over,
    same_server,
)
from cdc_core.mysql.gtid import compare_positions

UUID_A = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
UUID_B = "8a94f357-aab4-11df-86ab-c80aa9429562"


# -- MariaDB positions -----------------------------------------------------------------------------


def test_mariadb_server_at_or_past_every_committed_domain_holds_it():
    assert compare_positions("0-1-42", "0-1-42").ok
    assert compare_positions("0-1-42", "0-2-50").ok, "later transactions of another server follow in the domain"
    assert compare_positions("0-1-42,1-5-7", "0-1-42,1-5-9,2-3-1").ok, "extra domains on the server are new history"


def test_mariadb_server_behind_in_a_domain_lacks_committed_transactions():
    verdict = compare_positions("0-1-42,1-5-7", "0-1-40,1-5-7")
    assert verdict.missing == ("0-1-42",) and not verdict.diverged and not verdict.ok


def test_mariadb_server_without_a_committed_domain_lacks_it():
    verdict = compare_positions("0-1-42,1-5-7", "0-1-42")
    assert verdict.missing == ("1-5-7",)
    assert compare_positions("0-1-42", "").missing == ("0-1-42",)
    assert compare_positions("0-1-42", None).missing == ("0-1-42",)


def test_mariadb_same_sequence_from_another_server_is_a_fork():
    verdict = compare_positions("0-1-42", "0-2-42")
    assert verdict.diverged and not verdict.missing
    assert "0-1-42" in verdict.diverged[0] and "0-2-42" in verdict.diverged[0]


def test_positions_of_two_kinds_diverge():
    assert compare_positions("0-1-42", f"{UUID_A}:1-5").diverged
    assert compare_positions(f"{UUID_A}:1-5", "0-1-42").diverged


# -- MySQL sets -----------------------------------------------------------------------------------


def test_mysql_set_contained_in_the_servers():
    assert compare_positions(f"{UUID_A}:1-10", f"{UUID_A}:1-20").ok
    assert compare_positions(f"{UUID_A}:1-10,{UUID_B}:1-3", f"{UUID_B}:1-5,\n{UUID_A}:1-10:11-12").ok
    assert compare_positions(f"{UUID_A}:1-5:7-9", f"{UUID_A}:1-9").ok
    assert compare_positions(f"{UUID_A.upper()}:1-3", f"{UUID_A}:1-3").ok, "server uuids compare without case"


def test_mysql_set_with_holes_names_what_is_missing():
    verdict = compare_positions(f"{UUID_A}:1-10,{UUID_B}:1-3", f"{UUID_A}:1-8:10")
    assert verdict.missing == (f"{UUID_A}:9", f"{UUID_B}:1-3")
    assert compare_positions(f"{UUID_A}:1-10", f"{UUID_A}:3-20").missing == (f"{UUID_A}:1-2",)


# -- offsets across a failover --------------------------------------------------------------------


def test_a_later_epoch_orders_after_every_offset_of_the_one_before():
    old = BinlogOffset("binlog.000009", 900_000, "0-1-42", server="server_id=1")
    new = BinlogOffset("replica-bin.000002", 400, "0-1-42", epoch=1, server="server_id=2")
    assert new > old and new.sequence > old.sequence
    assert BinlogOffset("binlog.000009", 900_000).sequence == (9 << 32) + 900_000, "epoch 0: the sequence as before"
    assert new.sequence < (1 << 63), "a Doris BIGINT"
    back = BinlogOffset.from_dict(new.to_dict())
    assert back == new and back.server == "server_id=2" and back.epoch == 1 and back.gtid_set == "0-1-42"
    assert "epoch" not in old.to_dict() and old.to_dict()["server"] == "server_id=1"


def test_an_epoch_needs_file_numbers_it_can_order():
    with pytest.raises(ValueError, match="numbered beyond"):
        BinlogOffset("binlog.1048576", 4, epoch=1)
    with pytest.raises(ValueError, match="epoch"):
        BinlogOffset("binlog.000001", 4, epoch=-1)


def test_align_gives_the_server_the_epoch_it_has_for_the_pipeline():
    committed = BinlogOffset("binlog.000009", 900, "0-1-42", epoch=2, server="server_id=1")
    same = BinlogOffset("binlog.000009", 1000, "0-1-43", server="server_id=1")
    other = BinlogOffset("replica-bin.000002", 400, "0-2-50", server="server_id=2")
    assert align(same, committed).epoch == 2 and not failed_over(committed, same)
    assert align(other, committed).epoch == 3 and failed_over(committed, other)
    assert align(other, committed) > committed, "a server not yet followed is ahead of the committed offset"
    assert same_server(BinlogOffset("binlog.000001", 4), "server_id=9"), "an offset without identity: as before"


def test_caught_up_across_servers_is_decided_by_gtid():
    committed = BinlogOffset("binlog.000009", 900, "0-1-42", server="server_id=1")
    assert not behind_by_gtid(committed, BinlogOffset("replica-bin.000001", 300, "0-1-42", server="server_id=2"))
    assert behind_by_gtid(committed, BinlogOffset("replica-bin.000001", 900, "0-2-43", server="server_id=2"))


def test_refusals_name_both_positions_and_what_to_do():
    committed = BinlogOffset("binlog.000009", 900, "0-1-42", server="server_id=1")
    lacking = BinlogOffset("replica-bin.000001", 300, "0-1-40", server="server_id=2")
    with pytest.raises(GtidFailoverError) as err:
        check_successor(committed, lacking)
    text = str(err.value)
    assert "0-1-42" in text and "0-1-40" in text and "tidemark resnapshot" in text and "nothing was read" in text
    forked = BinlogOffset("replica-bin.000001", 300, "0-2-42", server="server_id=2")
    with pytest.raises(GtidFailoverError, match="diverged") as err:
        check_successor(committed, forked)
    assert "0-1-42" in str(err.value) and "0-2-42" in str(err.value)
    with pytest.raises(GtidFailoverError, match="no GTID position"):
        check_successor(BinlogOffset("binlog.000009", 900, server="server_id=1"), lacking)
    check_successor(committed, BinlogOffset("replica-bin.000001", 300, "0-2-45", server="server_id=2"))


def test_a_snapshot_read_on_two_servers_is_refused_before_the_first_batch():
    one = [BinlogOffset("binlog.000003", 900, "0-1-9", server="server_id=1"),
           BinlogOffset("binlog.000004", 120, "0-1-12", server="server_id=1"), BinlogOffset("binlog.000001", 4)]
    check_one_snapshot_server(one)
    with pytest.raises(GtidFailoverError, match="tidemark resnapshot") as err:
        check_one_snapshot_server([*one, BinlogOffset("replica-bin.000001", 300, "0-1-12", server="server_id=2")])
    assert "server_id=1" in str(err.value) and "server_id=2" in str(err.value)
