"""Wrong passwords and a Doris that is down, at ``tidemark run --once`` and ``tidemark validate --connect``:
the message names the side, the address, the user and the pipeline keys to fix, never the password;
the exit status is 1 and the pipeline's state is not written. A later run, once Doris is up, works."""

from __future__ import annotations

from pathlib import Path

import yaml

from devstack.procs import free_port
from orchestration.cli.tidemark import main

WRONG = "not-the-pw-4711"


def write(tmp_path: Path, mysql_server, db: str, *, fe: str, mysql_password: str | None = None,
          doris_password: str = "") -> Path:
    ep = mysql_server.endpoint
    state = tmp_path / "state"
    document = {
        "source": {"type": "mysql", "hostname": ep.host, "port": ep.port, "username": ep.user,
                   "password": ep.password if mysql_password is None else mysql_password, "tables": f"{db}.\\.*",
                   "server-id": "5600-5610", "server-time-zone": "UTC"},
        "sink": {"type": "doris", "fenodes": fe, "username": "root", "password": doris_password},
        "pipeline": {"name": f"conn_{db}", "parallelism": 1, "tidemark.state.dir": str(state)},
    }
    path = tmp_path / "conn.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def make_table(root_conn, db: str) -> None:
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v INT)")
        cur.execute(f"INSERT INTO `{db}`.t VALUES (1, 1), (2, 2)")


def test_a_wrong_mysql_password(mysql_server, root_conn, fresh_db, doris_standin, tmp_path, capsys, monkeypatch):
    make_table(root_conn, fresh_db)
    monkeypatch.setenv("TIDEMARK_DAGSTER_HOME", str(tmp_path / "dagster"))
    path = write(tmp_path, mysql_server, fresh_db, fe=doris_standin.fe_http, mysql_password=WRONG)
    ep = mysql_server.endpoint
    assert main(["run", str(path), "--once"]) == 1
    err = capsys.readouterr().err
    assert f"MySQL at {ep.host}:{ep.port} refused user '{ep.user}'" in err, err
    assert "check source.username and source.password in" in err and str(path) in err
    assert WRONG not in err
    assert not (tmp_path / "state").exists(), "nothing is written to the pipeline's state"
    assert main(["validate", "--connect", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: source ") and ep.user in err and "password" in err and WRONG not in err


def test_a_wrong_doris_password(mysql_server, root_conn, fresh_db, doris_standin, tmp_path, capsys, monkeypatch):
    make_table(root_conn, fresh_db)
    monkeypatch.setenv("TIDEMARK_DAGSTER_HOME", str(tmp_path / "dagster"))
    path = write(tmp_path, mysql_server, fresh_db, fe=doris_standin.fe_http, doris_password=WRONG)
    assert main(["run", str(path), "--once"]) == 1
    err = capsys.readouterr().err
    assert f"Doris (fenodes {doris_standin.fe_http}) refused user 'root'" in err, err
    assert "check sink.username and sink.password in" in err
    assert WRONG not in err
    assert not (tmp_path / "state").exists()
    assert main(["validate", "--connect", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: sink: Doris (fenodes {doris_standin.fe_http}) refused user 'root'" in err and WRONG not in err


def test_doris_down_at_start_then_up(mysql_server, root_conn, fresh_db, tmp_path, capsys, monkeypatch):
    from devstack.stack import DorisStandIn

    make_table(root_conn, fresh_db)
    monkeypatch.setenv("TIDEMARK_DAGSTER_HOME", str(tmp_path / "dagster"))
    fe_port = free_port()
    fe = f"127.0.0.1:{fe_port}"
    path = write(tmp_path, mysql_server, fresh_db, fe=fe)
    assert main(["run", str(path), "--once"]) == 1
    err = capsys.readouterr().err
    assert f"the Doris FE at {fe} does not answer: check sink.fenodes in {path}" in err, err
    assert "that the FE is up" in err
    assert not (tmp_path / "state").exists()
    assert main(["validate", "--connect", str(path)]) == 1
    assert f"{path}: sink: the Doris FE at {fe} does not answer" in capsys.readouterr().err

    standin = DorisStandIn(tmp_path / "doris", fe_port=fe_port, be_port=free_port())
    standin.start()
    try:
        assert main(["run", str(path), "--once"]) == 0, capsys.readouterr().err[-3000:]
        assert main(["verify", str(path)]) == 0
    finally:
        standin.stop()


def test_mysql_down_names_the_address_and_keys(tmp_path):
    """Nothing listens at the source's port: the check says so without a server of its own."""
    import pytest

    from cdc_core.config import parse_pipeline
    from cdc_core.pipeline.preflight import ConnectionCheckError, check_mysql

    port = free_port()
    definition = parse_pipeline(
        f"source: {{type: mysql, hostname: 127.0.0.1, port: {port}, username: cdc, password: {WRONG}, tables: a.b}}\n"
        "sink: {type: doris, fenodes: 127.0.0.1:1, username: root}\n", tmp_path / "down.yaml", env={})
    with pytest.raises(ConnectionCheckError) as caught:
        check_mysql(definition)
    assert caught.value.side == "mysql"
    text = str(caught.value)
    assert f"MySQL at 127.0.0.1:{port} does not answer" in text and "error 2003" in text
    assert f"check source.hostname and source.port in {tmp_path / 'down.yaml'}" in text and WRONG not in text
