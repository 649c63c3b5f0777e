"""The start-up check against the real server: each setting and grant, broken then restored."""

from __future__ import annotations

import pytest

from cdc_core.model.schema import TableId
from cdc_core.mysql.connection import MySqlConnectionSettings, connect
from cdc_core.mysql.server_check import ColumnNames, ServerCheckError, check_server
from tests.snapshot.conftest import run


def test_a_correctly_configured_server_passes(settings, fresh_db):
    conn = connect(settings)
    try:
        info = check_server(conn, [TableId(fresh_db, "t")])
    finally:
        conn.close()
    assert info.variables["binlog_format"] == "ROW"
    assert {"REPLICATION SLAVE", "SELECT"} <= info.privileges


@pytest.mark.parametrize(
    ("variable", "bad", "good"),
    [("binlog_format", "STATEMENT", "ROW"), ("binlog_format", "MIXED", "ROW"),
     ("binlog_row_image", "MINIMAL", "FULL"), ("binlog_row_image", "NOBLOB", "FULL")],
)
def test_each_binlog_setting_is_named_with_its_fix(root_conn, settings, variable, bad, good):
    run(root_conn, f"SET GLOBAL {variable} = '{bad}'")
    try:
        conn = connect(settings)
        try:
            with pytest.raises(ServerCheckError) as err:
                check_server(conn)
        finally:
            conn.close()
    finally:
        run(root_conn, f"SET GLOBAL {variable} = '{good}'")
    message = str(err.value)
    assert f"{variable} is {bad}" in message
    assert f"SET GLOBAL {variable} = '{good}'" in message
    assert len(err.value.problems) == 1


@pytest.mark.parametrize("metadata", ["MINIMAL", "NO_LOG"])
def test_minimal_row_metadata_is_accepted_and_reported_as_schema_history_mode(root_conn, settings, metadata):
    run(root_conn, f"SET GLOBAL binlog_row_metadata = '{metadata}'")
    try:
        conn = connect(settings)
        try:
            info = check_server(conn)
        finally:
            conn.close()
    finally:
        run(root_conn, "SET GLOBAL binlog_row_metadata = 'FULL'")
    assert info.column_names == ColumnNames.SCHEMA_HISTORY
    assert info.row_metadata_mode.startswith(f"binlog_row_metadata={metadata}: column names, order, types and "
                                             "charsets from the schema history")


def test_full_row_metadata_reports_names_from_the_binlog(settings):
    conn = connect(settings)
    try:
        info = check_server(conn)
    finally:
        conn.close()
    assert info.column_names == ColumnNames.BINLOG
    assert info.row_metadata_mode == "binlog_row_metadata=FULL: column names from the binlog"


def test_user_without_replication_grants(root_conn, mysql_server, fresh_db):
    run(root_conn,
        "CREATE USER IF NOT EXISTS 'weak'@'%' IDENTIFIED BY 'weak-pass'",
        f"GRANT SELECT ON `{fresh_db}`.* TO 'weak'@'%'")
    try:
        ep = mysql_server.endpoint
        conn = connect(MySqlConnectionSettings(ep.host, ep.port, "weak", "weak-pass"))
        try:
            with pytest.raises(ServerCheckError) as err:
                check_server(conn, [TableId(fresh_db, "t")], user="'weak'")
        finally:
            conn.close()
    finally:
        run(root_conn, "DROP USER 'weak'@'%'")
    message = str(err.value)
    assert "REPLICATION SLAVE" in message
    assert "BINLOG MONITOR" in message  # MariaDB's name for REPLICATION CLIENT
    assert "lacks SELECT" not in message  # SELECT on the captured database is enough
    assert "weak-pass" not in message


def test_user_without_select_on_captured_tables(root_conn, mysql_server, fresh_db):
    run(root_conn,
        "CREATE USER IF NOT EXISTS 'nosel'@'%' IDENTIFIED BY 'pw'",
        "GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'nosel'@'%'",
        f"CREATE TABLE `{fresh_db}`.granted (id INT PRIMARY KEY)",
        f"GRANT SELECT ON `{fresh_db}`.granted TO 'nosel'@'%'")
    try:
        ep = mysql_server.endpoint
        conn = connect(MySqlConnectionSettings(ep.host, ep.port, "nosel", "pw"))
        try:
            check_server(conn, [TableId(fresh_db, "granted")])  # table-level SELECT suffices
            with pytest.raises(ServerCheckError, match=rf"lacks SELECT on {fresh_db}\.other"):
                check_server(conn, [TableId(fresh_db, "granted"), TableId(fresh_db, "other")])
        finally:
            conn.close()
    finally:
        run(root_conn, "DROP USER 'nosel'@'%'")


def test_wrong_password_is_a_clear_error_without_the_password(mysql_server):
    ep = mysql_server.endpoint
    with pytest.raises(ConnectionError) as err:
        connect(MySqlConnectionSettings(ep.host, ep.port, "cdc", "not-the-password"))
    assert "cdc@" in str(err.value) and "not-the-password" not in str(err.value)


def test_check_source_server_from_a_pipeline_file(mysql_server, fresh_db, root_conn, tmp_path):
    from cdc_core.config import load_pipeline
    from cdc_core.mysql.server_check import check_source_server

    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
    ep = mysql_server.endpoint
    path = tmp_path / "p.yaml"
    path.write_text(
        "source:\n  type: mysql\n"
        f"  hostname: {ep.host}\n  port: {ep.port}\n  username: {ep.user}\n  password: {ep.password}\n"
        f"  tables: {fresh_db}.\\.*\n"
        "sink:\n  type: doris\n  fenodes: 127.0.0.1:8030\n  username: root\n"
    )
    info = check_source_server(load_pipeline(path).source)
    assert info.is_mariadb and info.variables["binlog_row_metadata"] == "FULL"


def test_the_first_planning_round_checks_the_server(mysql_server, fresh_db, root_conn, tmp_path):
    """A pipeline whose user cannot read the binlog fails its first step with the grant that fixes
    it, before anything is planned."""
    from cdc_core.config import load_pipeline
    from cdc_core.pipeline.service import PipelineService
    from cdc_core.state.keys import ASSIGNER_STATE

    run(root_conn,
        "CREATE USER IF NOT EXISTS 'planner'@'%' IDENTIFIED BY 'planner-pass'",
        f"GRANT SELECT ON `{fresh_db}`.* TO 'planner'@'%'",
        f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
    ep = mysql_server.endpoint
    path = tmp_path / "p.yaml"
    path.write_text(
        "source:\n  type: mysql\n"
        f"  hostname: {ep.host}\n  port: {ep.port}\n  username: planner\n  password: planner-pass\n"
        f"  tables: {fresh_db}.\\.*\n"
        "sink:\n  type: doris\n  fenodes: 127.0.0.1:8030\n  username: root\n"
        f"pipeline:\n  tidemark.state.dir: {tmp_path / 'state'}\n"
    )
    service = PipelineService(load_pipeline(path))
    try:
        with pytest.raises(ServerCheckError) as err:
            service.plan_splits()
        assert ASSIGNER_STATE.get(service.store) is None  # nothing planned
    finally:
        service.close()
        run(root_conn, "DROP USER 'planner'@'%'")
    message = str(err.value)
    assert "REPLICATION SLAVE" in message and "GRANT REPLICATION SLAVE ON *.* TO" in message
    assert "planner-pass" not in message


def test_a_pipeline_that_heals_a_purge_unattended_needs_reload(root_conn, mysql_server, fresh_db, doris_standin,
                                                               tmp_path):
    """``tidemark.binlog.on-purged: resnapshot`` heals alone, rotating the binlog (FLUSH BINARY LOGS):
    a user without RELOAD is refused by ``validate --connect`` (and by the first planning round)
    with the grant to give; the same user is fine for a pipeline left at ``fail``."""
    import subprocess
    import sys

    from devstack.pipeline_file import write_pipeline

    run(root_conn,
        "CREATE USER IF NOT EXISTS 'noreload'@'%' IDENTIFIED BY 'noreload-pass'",
        "GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT ON *.* TO 'noreload'@'%'",
        f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
    try:
        ep = mysql_server.endpoint
        conn = connect(MySqlConnectionSettings(ep.host, ep.port, "noreload", "noreload-pass"))
        try:
            check_server(conn, [TableId(fresh_db, "t")], user="'noreload'")  # on-purged: fail needs no RELOAD
            with pytest.raises(ServerCheckError) as err:
                check_server(conn, [TableId(fresh_db, "t")], user="'noreload'", needs_reload=True)
        finally:
            conn.close()
        [problem] = err.value.problems
        assert problem.startswith("'noreload' lacks the RELOAD privilege, which tidemark.binlog.on-purged: resnapshot")
        assert "GRANT RELOAD ON *.* TO '<user>'@'<host>';" in problem

        def validate(on_purged: str) -> subprocess.CompletedProcess:
            path = write_pipeline(tmp_path / f"{on_purged}.yaml", host=ep.host, port=ep.port, fe=doris_standin.fe_http,
                                  tables=f"{fresh_db}.t", name=f"reload_{on_purged}", state_dir=tmp_path / "state",
                                  source={"username": "noreload", "password": "noreload-pass"},
                                  pipeline={"tidemark.binlog.on-purged": on_purged})
            return subprocess.run([sys.executable, "-m", "orchestration.cli", "validate", str(path), "--connect"],
                                  capture_output=True, text=True, timeout=120)

        refused = validate("resnapshot")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert "lacks the RELOAD privilege" in refused.stderr and "GRANT RELOAD ON *.*" in refused.stderr
        assert "noreload-pass" not in refused.stdout + refused.stderr
        fine = validate("fail")
        assert fine.returncode == 0, fine.stdout + fine.stderr
    finally:
        run(root_conn, "DROP USER 'noreload'@'%'")
