"""GTID state carried on offsets (MariaDB domain-server-seq and MySQL uuid:intervals)."""

from __future__ import annotations

import pytest

from cdc_core.mysql.gtid import GtidState, is_mariadb_gtid


def test_mariadb_positions_per_domain():
    state = GtidState.parse("0-1-5,1-2-9")
    state.add_mariadb(0, 1, 6)
    state.add_mariadb(2, 3, 1)
    assert state.text() == "0-1-6,1-2-9,2-3-1"
    assert is_mariadb_gtid("0-1-5, 1-2-9") and not is_mariadb_gtid("3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5")


def test_mysql_sets_merge_intervals():
    uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    state = GtidState.parse(f"{uuid}:1-5")
    state.add_mysql(f"{uuid}:6")
    assert state.text() == f"{uuid}:1-6"
    assert GtidState().text() is None


def test_bad_gtid_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot parse GTID set"):
        GtidState.parse("not-a-gtid")
