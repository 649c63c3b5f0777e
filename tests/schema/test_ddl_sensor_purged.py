"""The DDL sensor when the binlog the stream would resume from was purged (found by the soak,
tests/soak/): the scan between the committed offset and the server's position cannot start, and the
sensor used to fail its tick with a RuntimeError (an error and a traceback on `tidemark dev`'s
terminal at every tick while the binlog run healed or failed). It is the binlog stream's to heal
(``tidemark.binlog.on-purged``) or to report; the sensor now skips and says why.

A private MariaDB: purging the session server's binlog would pull it from under other tests.
"""

from __future__ import annotations

import dagster as dg
import pymysql
import pytest

from devstack.mysql import MariaDBServer
from devstack.procs import free_port
from orchestration.defs.schema_change_job import decide_schema_change_run
from tests.schema.helpers import sql
from tests.schema.test_dagster_schema_change import Pipeline


@pytest.fixture(scope="module")
def private_mysql(tmp_path_factory):
    server = MariaDBServer(tmp_path_factory.mktemp("mariadb-purge"), port=free_port(), server_id=9)
    server.start()
    yield server
    server.stop()


def test_ddl_sensor_skips_a_purged_resume_point(tmp_path, private_mysql, doris_standin):
    conn = pymysql.connect(unix_socket=private_mysql.endpoint.root_socket, user="root", autocommit=True)
    with dg.instance_for_test() as instance:
        try:
            sql(conn, "CREATE DATABASE purged_ddl")
            p = Pipeline(tmp_path, private_mysql, doris_standin, conn, "purged_ddl", instance)
            committed = p.runner.binlog_lag().committed_offset
            sql(conn, "INSERT INTO purged_ddl.t VALUES (9, 9, 'z')", "ALTER TABLE purged_ddl.t ADD COLUMN c INT")
            # the binlog run's reader has just closed: its dump thread may hold the file a moment
            left = private_mysql.purge_binary_logs_to(private_mysql.flush_binary_logs())
            assert committed["file"] not in left

            decision = decide_schema_change_run(p.handle, p.runner, instance)
            assert isinstance(decision, dg.SkipReason)
            assert f"({committed['file']}) was purged" in decision.skip_message
            assert "tidemark.binlog.on-purged" in decision.skip_message
        finally:
            sql(conn, "DROP DATABASE IF EXISTS purged_ddl")
            conn.close()
