"""``tidemark sql PIPELINE.yaml "SELECT …"`` as a user runs it, against the session's Doris stand-in:
a table of the answer, ``--json``, a cut result said so, and each error as one line with the CLI's
exit code (2: the statement or file is wrong; 1: Doris does not answer)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import requests

from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port

ROOT = Path(__file__).resolve().parents[2]
AUTH = ("root", "")


def _sql(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orchestration.cli", "sql", *args], cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)


def _query(fe: str, stmt: str, db: str = "information_schema") -> None:
    body = requests.post(f"http://{fe}/api/query/default_cluster/{db}", auth=AUTH, timeout=30,
                         json={"stmt": stmt}).json()
    assert body.get("code") == 0, body


def _pipeline(tmp_path: Path, fe: str) -> Path:
    return write_pipeline(tmp_path / "p.yaml", host="127.0.0.1", port=3306, fe=fe, tables="shop.\\.*",
                          name="sqlcli", state_dir=tmp_path / "state")


def test_sql_prints_the_answer_and_says_when_it_was_cut(doris_standin, tmp_path):
    db = f"sql_{uuid.uuid4().hex[:8]}"
    fe = doris_standin.fe_http
    _query(fe, f"CREATE DATABASE {db}")
    _query(fe, f"CREATE TABLE {db}.customers (id BIGINT, name VARCHAR(20)) UNIQUE KEY(id) "
               "DISTRIBUTED BY HASH(id) BUCKETS 1 PROPERTIES ('replication_num' = '1')", db)
    rows = "\n".join(json.dumps({"id": i, "name": f"c{i}"}) for i in range(1, 13))
    r = requests.put(f"http://{doris_standin.be_http}/api/{db}/customers/_stream_load", data=rows.encode(),
                     auth=AUTH, timeout=60, headers={"Expect": "100-continue", "format": "json",
                                                     "read_json_by_line": "true"})
    assert r.status_code == 200 and r.json()["Status"] == "Success", r.text
    path = _pipeline(tmp_path, fe)

    done = _sql(str(path), f"SELECT COUNT(*) AS n FROM {db}.customers")
    assert done.returncode == 0, done.stderr
    assert "n" in done.stdout and "12" in done.stdout and "1 row(s)" in done.stdout
    assert done.stderr == ""

    done = _sql(str(path), f"SELECT id, name FROM {db}.customers ORDER BY id", "--json", "--limit", "5")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["columns"] == ["id", "name"]
    assert [row[0] for row in answer["rows"]] == [1, 2, 3, 4, 5]
    assert answer["truncated"] is True
    assert "more than 5 rows; the first 5 are shown" in done.stderr

    done = _sql(str(path), f"SELECT id FROM {db}.customers ORDER BY id", "--json", "--limit", "12")
    assert json.loads(done.stdout)["truncated"] is False and done.stderr == ""

    # --db: unqualified names are in that database
    done = _sql(str(path), "SELECT name FROM customers WHERE id = 7", "--db", db, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["rows"] == [["c7"]]


def test_sql_errors_are_one_line_with_the_cli_exit_code(doris_standin, tmp_path):
    path = _pipeline(tmp_path, doris_standin.fe_http)
    done = _sql(str(path), "SELECT * FROM no_such_db.no_such_table")
    assert done.returncode == 2
    assert done.stderr.startswith("tidemark sql: Doris refused the statement")
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr

    done = _sql(str(path), "SELEC 1")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1

    down = _pipeline(tmp_path, f"127.0.0.1:{free_port()}")
    done = _sql(str(down), "SELECT 1")
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("tidemark sql: the Doris FE at 127.0.0.1:") and "does not answer" in last
    assert "Traceback" not in done.stderr

    done = _sql(str(tmp_path / "missing.yaml"), "SELECT 1")
    assert done.returncode == 2


def test_sql_leaves_out_a_keyless_tables_hidden_identity_unless_asked(doris_standin, tmp_path):
    from cdc_core.config import load_pipeline
    from cdc_core.doris.row_identity import ROW_COPY, ROW_HASH
    from cdc_core.doris.sink import DorisSink
    from cdc_core.model.schema import Column, TableId, TableSchema
    from orchestration.cli.sql import run_sql

    db = f"sql_{uuid.uuid4().hex[:8]}"
    definition = load_pipeline(_pipeline(tmp_path, doris_standin.fe_http))
    sink = DorisSink.from_pipeline(definition, label_epoch=None, table_properties={"replication_num": "1"})
    schema = TableSchema(TableId(db, "k"), (Column("f", "float", "float"), Column("n", "int(11)", "int")))
    sink.create_table(schema)
    sink.commit([sink.load(schema.table_id, "c0", [{"f": 1.5, "n": 1}, {"f": 1.5, "n": 1}], sequence=1, fresh=True)])
    sink.close()
    answer = run_sql(definition, f"SELECT * FROM {db}.k")
    assert ROW_HASH not in answer.columns and ROW_COPY not in answer.columns and len(answer.rows) == 2
    answer = run_sql(definition, f"SELECT n, {ROW_COPY} FROM {db}.k ORDER BY 2")
    assert answer.columns == ("n", ROW_COPY) and [tuple(r) for r in answer.rows] == [(1, 0), (1, 1)]
