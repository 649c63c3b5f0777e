"""``binlog_row_metadata=MINIMAL`` end to end: ``tidemark run --once`` as a user runs it, the
session's MariaDB switched to MINIMAL (no column names in the binlog), a private Doris stand-in,
then ``tidemark verify --json`` and a column-by-column look at a few rows.

The session's server is switched with ``SET GLOBAL`` and restored after: the setting is
global-only, the session's tests run one at a time, and this test's pipeline captures its own
``fresh_db`` only, so no other test reads a binlog written under MINIMAL. A private MariaDB would
add a server start (and its own Doris wiring) for no more isolation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devstack.pipeline_file import write_pipeline
from orchestration.cli.tidemark import main
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401
from tests.schema.helpers import doris_columns, doris_rows, mysql_rows

ROOT = Path(__file__).resolve().parents[2]



def _sql(conn: Any, *statements: str) -> None:
    with conn.cursor() as cur:
        for s in statements:
            cur.execute(s)


def _run_once(path: Path, env: dict[str, str]) -> str:
    done = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stderr


@pytest.mark.slow
def test_minimal_row_metadata_follows_moves_swaps_charsets_and_new_types(mysql_server, root_conn, fresh_db,
                                                                         doris_standin, tmp_path, capsys):  # noqa: F811
    db = fresh_db
    _sql(root_conn, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        _sql(root_conn,
             f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a INT, b INT, c VARCHAR(20), x INT, txt TEXT) "
             "DEFAULT CHARSET=latin1",
             f"INSERT INTO `{db}`.t VALUES (1, 10, 20, 'caf\u00e9', 30, 'na\u00efve'), (2, 11, 21, 'b', 31, NULL)")
        path = tmp_path / "minimal.yaml"
        write_pipeline(path, host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                       tables=f"{db}.\\.*", name=f"minimal_{db}", state_dir=tmp_path / "state", server_id="5530-5534",
                       pipeline={"schema.change.behavior": "evolve"})
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
        assert main(["validate", "--connect", str(path)]) == 0
        assert "binlog_row_metadata=MINIMAL: column names, order, types and charsets from the schema history" \
            in capsys.readouterr().out
        assert "chunks loaded" in _run_once(path, env)

        t = f"`{db}`.t"
        _sql(root_conn,
             f"ALTER TABLE {t} MODIFY c VARCHAR(20) FIRST",
             f"INSERT INTO {t} (id, a, b, c, x, txt) VALUES (3, 12, 22, 'd\u00e9j\u00e0', 32, '\u00e0 la')",
             f"ALTER TABLE {t} CHANGE a a2 INT AFTER x",
             f"UPDATE {t} SET a2 = a2 + 100 WHERE id <= 2",
             f"ALTER TABLE {t} CHANGE a2 b INT, CHANGE b a2 INT",
             f"INSERT INTO {t} (id, a2, b, c, x) VALUES (4, 24, 14, 'sw\u00e4p', 34)",
             f"ALTER TABLE {t} CONVERT TO CHARACTER SET utf8mb4",
             f"INSERT INTO {t} (id, a2, b, c, x, txt) VALUES (5, 25, 15, '\U0001f600 smile', 35, '\u00fc\U0001f680')",
             f"ALTER TABLE {t} ADD COLUMN e ENUM('a','c,\\'d') AFTER id, ADD COLUMN s SET('x','y''z')",
             f"INSERT INTO {t} (id, e, s, c) VALUES (6, 'c,''d', 'x,y''z', '\u00e9n\u00fcm')",
             f"ALTER TABLE {t} ADD COLUMN f FLOAT(30), ADD COLUMN `period` INT FIRST",
             f"INSERT INTO {t} (id, f, `period`, c, txt) VALUES (7, 1.25e300, 202611, '\u65e5\u672c', "
             "'\u0436\u0438\u0437\u043d\u044c')",
             f"UPDATE {t} SET txt = CONCAT(COALESCE(txt, ''), ' \u2713'), `period` = 1 WHERE id IN (1, 3, 5)",
             f"DELETE FROM {t} WHERE id = 2")
        second = _run_once(path, env)
        assert "schema change" in second

        assert main(["verify", str(path), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["equal"] is True, report
        (table,) = report["tables"]
        assert table["table"] == f"{db}.t"

        names, rows = mysql_rows(root_conn, db, "t")
        assert names == ["period", "c", "id", "e", "a2", "x", "b", "txt", "s", "f"]
        assert set(doris_columns(doris_standin, db, "t")) == set(names)
        by_id = ["id", *(n for n in names if n != "id")]
        doris = {r[0]: dict(zip(by_id, r, strict=True)) for r in doris_rows(doris_standin, db, "t", by_id)}
        mysql = {r[names.index("id")]: dict(zip(names, r, strict=True)) for r in rows}
        assert sorted(doris) == sorted(mysql) == [1, 3, 4, 5, 6, 7]
        for key in (1, 4, 5, 6, 7):
            for name in names:
                want, got = mysql[key][name], doris[key][name]
                if name == "f" and want is not None:
                    assert float(got) == want
                else:
                    assert (None if got is None else str(got)) == (None if want is None else str(want)), (key, name)
        # the swap: row 1's a (10, then 110 as a2) is b now, its old b (20) is a2
        assert (doris[1]["a2"], doris[1]["b"]) == (20, 110) and (doris[4]["a2"], doris[4]["b"]) == (24, 14)
        assert doris[5]["c"] == "\U0001f600 smile" and doris[6]["e"] == "c,'d" and doris[6]["s"] == "x,y'z"
        assert doris[7]["txt"] == "\u0436\u0438\u0437\u043d\u044c" and doris[1]["txt"] == "na\u00efve \u2713"
    finally:
        _sql(root_conn, "SET GLOBAL binlog_row_metadata = 'FULL'")


@pytest.mark.slow
def test_a_rejected_ddl_under_minimal_stops_the_run_before_mapping_a_row(mysql_server, root_conn, fresh_db,
                                                                         doris_standin, tmp_path):  # noqa: F811
    db = fresh_db
    _sql(root_conn, "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        _sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(10)) DEFAULT CHARSET=latin1",
             f"INSERT INTO `{db}`.t VALUES (1, 'caf\u00e9')")
        path = tmp_path / "rejected.yaml"
        write_pipeline(path, host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                       tables=f"{db}.\\.*", name=f"rejected_{db}", state_dir=tmp_path / "state", server_id="5530-5534",
                       pipeline={"schema.change.behavior": "evolve"})
        env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
        _run_once(path, env)
        _sql(root_conn, f"ALTER TABLE `{db}`.t ADD SYSTEM VERSIONING",
             f"INSERT INTO `{db}`.t VALUES (2, 'after')")
        done = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode != 0
        assert f"{db}.t" in done.stderr and "ADD SYSTEM VERSIONING" in done.stderr
        assert "binlog_row_metadata=MINIMAL" in done.stderr and "re-snapshot" in done.stderr
        assert [r[0] for r in doris_rows(doris_standin, db, "t", ["id"])] == [1]
    finally:
        _sql(root_conn, "SET GLOBAL binlog_row_metadata = 'FULL'")
