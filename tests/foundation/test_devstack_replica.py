"""The devstack's MariaDB replica: GTID replication with log_slave_updates, binlog files named and
numbered unlike the primary's, catch-up, promotion; `tidemark devstack up --replica` and `status`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from devstack.mysql import MariaDBServer
from devstack.mysql_replica import MariaDBReplica, ReplicationError
from devstack.procs import free_port

pytestmark = pytest.mark.integration  # starts MariaDB servers


def tidemark(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "orchestration.cli", *args], capture_output=True, text=True)
    if check and result.returncode != 0:
        raise AssertionError(f"tidemark {' '.join(args)} failed: {result.stderr}")
    return result


def test_replica_with_lower_numbered_files_replicates_and_is_promoted(tmp_path, mariadb_servers) -> None:
    primary = mariadb_servers(MariaDBServer, tmp_path / "p", port=free_port())
    primary.start()
    primary.root_sql("CREATE DATABASE app; CREATE TABLE app.t (id INT PRIMARY KEY, v VARCHAR(10)); "
                     "INSERT INTO app.t VALUES (1, 'a'), (2, 'b');")
    assert primary.flush_binary_logs(4) == "binlog.000005"  # the primary has rotated a few times
    replica = mariadb_servers(MariaDBReplica, tmp_path / "r", primary, port=free_port())
    replica.start()
    primary.root_sql("UPDATE app.t SET v = 'b2' WHERE id = 2; INSERT INTO app.t VALUES (3, 'c');")
    pos = replica.wait_caught_up(60)
    assert replica.replicating()
    assert replica.root_sql("SELECT id, v FROM app.t ORDER BY id") == "1\ta\n2\tb2\n3\tc\n"

    p, r = primary.identity(), replica.identity()
    assert (p.server_id, r.server_id) == (1, 2)
    assert p.server_uuid is None and r.server_uuid is None  # MariaDB 10.11 has no @@server_uuid
    assert p.gtid_binlog_pos == pos == r.gtid_slave_pos == r.gtid_current_pos
    # log_slave_updates: the replica binlogs what it applies, under the primary's GTIDs ...
    assert r.log_slave_updates and r.read_only and r.gtid_binlog_pos == pos
    assert pos.startswith("0-1-")
    # ... in files of its own name, numbered lower than the primary's
    assert r.binlog_file == "replica-bin.000001" and p.binlog_file == "binlog.000005"
    assert replica.root_sql("SELECT @@binlog_format").strip() == "ROW"
    # nothing of the replica's own: its CDC user was created outside its binlog
    assert "0-2-" not in r.gtid_binlog_pos
    assert "REPLICATION SLAVE" in replica.root_sql("SHOW GRANTS FOR 'cdc'@'%'")

    primary.stop()
    replica.promote()
    replica.root_sql("INSERT INTO app.t VALUES (4, 'after');")
    after = replica.identity()
    assert not after.read_only and replica.slave_status() == {}
    assert after.gtid_binlog_pos.startswith("0-2-")  # writes on the promoted server carry its server id
    seq = int(pos.rsplit("-", 1)[1])
    assert after.gtid_binlog_pos == f"0-2-{seq + 1}"  # the sequence goes on after the primary's last
    assert replica.root_sql("SELECT count(*) FROM app.t").strip() == "4"

    # a promoted server restarted (the soak's MariaDB restart after its failover) stays the primary it
    # became: writable, not pointed back at the old primary (SHOW SLAVE STATUS is empty either way)
    replica.stop()
    replica.start()
    assert replica.promoted() and replica.slave_status() == {} and not replica.identity().read_only
    replica.root_sql("INSERT INTO app.t VALUES (5, 'restarted');")
    assert replica.root_sql("SELECT count(*) FROM app.t").strip() == "5"


def test_replica_with_higher_numbered_files_and_a_purged_primary_is_refused(tmp_path, mariadb_servers) -> None:
    primary = mariadb_servers(MariaDBServer, tmp_path / "p", port=free_port())
    primary.start()
    primary.root_sql("CREATE DATABASE app; CREATE TABLE app.t (id INT PRIMARY KEY);")
    replica = mariadb_servers(MariaDBReplica, tmp_path / "r", primary, port=free_port(), binlog_basename="mariadb-bin",
                      min_binlog_index=7)
    replica.start()
    primary.root_sql("INSERT INTO app.t VALUES (1);")
    replica.wait_caught_up(60)
    assert replica.identity().binlog_file == "mariadb-bin.000007"
    assert primary.identity().binlog_file == "binlog.000001"
    replica.stop()
    replica.start()  # a restart keeps replicating from where it was (its gtid_slave_pos)
    primary.root_sql("INSERT INTO app.t VALUES (2);")
    replica.wait_caught_up(60)
    assert replica.root_sql("SELECT count(*) FROM app.t").strip() == "2"

    # a replica of a primary whose oldest binlog was purged would miss rows: refused, clearly
    current = primary.flush_binary_logs(1)
    assert primary.purge_binary_logs_to(current)[0] == current  # once the replica's dump thread lets go
    late = mariadb_servers(MariaDBReplica, tmp_path / "late", primary, port=free_port(), server_id=3)
    with pytest.raises(ReplicationError, match="were purged"):
        late.start()
    with pytest.raises(ValueError, match="server id of its own"):
        MariaDBReplica(tmp_path / "same", primary, port=free_port(), server_id=1)


def test_devstack_up_replica_status_and_fail_over(tmp_path) -> None:
    from devstack.stack import DevStack

    stack_dir = tmp_path / "stack"
    ports = ["--mysql-port", str(free_port()), "--replica-port", str(free_port()),
             "--doris-port", str(free_port()), "--doris-be-port", str(free_port())]
    try:
        up = json.loads(tidemark("devstack", "up", "--replica", "--dir", str(stack_dir), "--json",
                                 "--doris-max-running-txn-num-per-db", "7", *ports).stdout)
        assert up["mysql_replica"]["port"] != up["mysql"]["port"]
        status = json.loads(tidemark("devstack", "status", "--dir", str(stack_dir), "--json").stdout)
        replica = status["mysql_replica"]
        assert replica["running"] and replica["replicating"] and replica["server_id"] == 2
        assert replica["primary"] == f"127.0.0.1:{up['mysql']['port']}"
        assert status["mysql"]["server_id"] == 1 and status["mysql"]["binlog_file"].startswith("binlog.")
        assert replica["binlog_file"].startswith("replica-bin.")
        text = tidemark("devstack", "status", "--dir", str(stack_dir)).stdout
        assert "Replica" in text and "replicating from" in text and "server_id 2" in text

        stack = DevStack(stack_dir)  # the ports and the replica come from stack.json
        assert stack.with_replica and stack.doris.txn_stats()["max_running_txn_num_per_db"] == 7
        stack.mysql.root_sql("CREATE DATABASE app; CREATE TABLE app.t (id INT PRIMARY KEY); "
                             "INSERT INTO app.t VALUES (1);")
        endpoint = stack.fail_over(60)
        assert endpoint["port"] == up["mysql_replica"]["port"]
        assert stack.replica.root_sql("SELECT count(*) FROM app.t").strip() == "1"
        after = json.loads(tidemark("devstack", "status", "--dir", str(stack_dir), "--json").stdout)
        assert not after["mysql"]["running"] and after["mysql_replica"]["running"]
        assert after["mysql_replica"]["primary"] is None and after["mysql_replica"]["read_only"] is False
    finally:
        down = tidemark("devstack", "down", "--dir", str(stack_dir), check=False)
    assert "mysql-replica" in down.stdout
