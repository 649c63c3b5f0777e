"""``tidemark verify --repair`` under a running stream (issue 28).

Rows are changed with ``sql_log_bin = 0`` (updated, deleted, inserted: no binlog event reaches
the stream). The repair re-reads them and loads them with its low watermark's sequence. While
its loads are precommitted and not yet committed (a fault point holds it there), a writer
changes some of the same keys through the binlog and the stream applies them: the repair's
commit must not revert them. The command exits 0 and Doris equals MySQL, compared from outside.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pymysql

from cdc_core.config import load_pipeline
from cdc_core.pipeline.service import PipelineService
from cdc_core.state.keys import REPAIR_LOADS
from devstack.pipeline_file import write_pipeline
from orchestration.cli import tidemark as cli
from tests.schema.helpers import assert_rows_match, catch_up, doris_rows, mysql_rows, sql

ROOT = Path(__file__).resolve().parents[2]


def _stream_while_repairing(path: Path, db: str, writer_conn, done: threading.Event, errors: list) -> None:
    """Once the repair has recorded its loads (its low watermark is taken), change some of the
    drifted keys through the binlog and apply them with the stream, before the repair commits."""
    service = PipelineService(load_pipeline(path))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with service.store.transaction(readonly=True) as tx:
                if REPAIR_LOADS.key(f"{db}.t").get(tx) is not None:
                    break
            time.sleep(0.05)
        else:
            raise AssertionError("the repair never recorded its loads")
        sql(writer_conn, f"UPDATE `{db}`.t SET v = 777, note = 'binlog after the drift' WHERE id BETWEEN 30 AND 34",
            f"INSERT INTO `{db}`.t VALUES (25, 888, 'binlog re-insert of a drift-deleted key')",
            f"UPDATE `{db}`.t SET v = v + 1 WHERE id BETWEEN 200 AND 260")
        assert catch_up(service) is None
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)
    finally:
        service.close()
        done.set()


def test_repair_of_rows_changed_without_binlog_under_a_running_stream(mysql_server, root_conn, fresh_db,
                                                                      doris_standin, tmp_path, monkeypatch):
    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL, note VARCHAR(60))",
        f"CREATE TABLE `{db}`.u (k VARCHAR(20) NOT NULL, n INT NOT NULL, w INT, PRIMARY KEY (k, n))")
    with root_conn.cursor() as cur:
        cur.executemany(f"INSERT INTO `{db}`.t VALUES (%s, %s, %s)", [(i, i, f"row {i}") for i in range(1, 401)])
        cur.executemany(f"INSERT INTO `{db}`.u VALUES (%s, %s, %s)",
                        [(f"key{i % 7}", i, i) for i in range(1, 101)])
    path = tmp_path / "repair.yaml"
    write_pipeline(path, host="127.0.0.1", port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                   tables=f"{db}.\\.*", name=f"repair_{db}", state_dir=tmp_path / "state", server_id="5720-5729",
                   source={"scan.incremental.snapshot.chunk.size": 100})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    env.pop("TIDEMARK_FAULTS", None)
    run = [sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"]
    first = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]

    # drift: no binlog event for any of these
    sql(root_conn, "SET SESSION sql_log_bin = 0",
        f"UPDATE `{db}`.t SET v = -1, note = 'drift' WHERE id BETWEEN 10 AND 19",
        f"UPDATE `{db}`.t SET v = -2 WHERE id BETWEEN 30 AND 34",
        f"DELETE FROM `{db}`.t WHERE id BETWEEN 20 AND 29",
        f"INSERT INTO `{db}`.t VALUES (1000, 1000, 'drift insert'), (1001, 1001, NULL)",
        f"UPDATE `{db}`.u SET w = NULL WHERE n < 10",
        f"DELETE FROM `{db}`.u WHERE k = 'key3'",
        f"INSERT INTO `{db}`.u VALUES ('new', 1, 1)",
        "SET SESSION sql_log_bin = 1")
    # and ordinary binlog changes the stream has not applied yet
    sql(root_conn, f"UPDATE `{db}`.t SET note = 'plain binlog' WHERE id BETWEEN 300 AND 310")
    assert cli.main(["verify", str(path)]) == 1

    writer = pymysql.connect(unix_socket=mysql_server.endpoint.root_socket, user="root",
                                           autocommit=True, charset="utf8mb4")
    done, errors = threading.Event(), []
    thread = threading.Thread(target=_stream_while_repairing, args=(path, db, writer, done, errors), daemon=True)
    thread.start()
    # hold the repair of t at its fault point (loads precommitted and recorded, not committed) until
    # the writer's changes are applied by the stream
    from cdc_core.pipeline.parity import repair as repair_module

    real_fault_point = repair_module.fault_point

    def hold(name: str, **context: str) -> None:
        if context.get("table") == f"{db}.t":
            assert done.wait(120), "the stream did not apply the writer's changes"
        real_fault_point(name, **context)

    monkeypatch.setattr(repair_module, "fault_point", hold)
    try:
        assert cli.main(["verify", str(path), "--repair"]) == 0
    finally:
        thread.join(120)
        writer.close()
    assert not errors, errors
    assert done.is_set()

    # the binlog's newer values survived the repair's commit
    rows = {int(r[0]): (str(r[1]), r[2]) for r in doris_rows(doris_standin, db, "t", ["id", "v", "note"])}
    assert all(rows[i] == ("777", "binlog after the drift") for i in range(30, 35)), [rows[i] for i in range(30, 35)]
    assert rows[25] == ("888", "binlog re-insert of a drift-deleted key")
    assert 20 not in rows and 1000 in rows and rows[10] == ("-1", "drift")

    after = subprocess.run(run, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert after.returncode == 0, after.stderr[-3000:]
    assert cli.main(["verify", str(path)]) == 0
    assert_rows_match(doris_standin, root_conn, db, "t")
    # u's key is (k, n): both sides sorted whole (ORDER BY 1 leaves n's order to each engine)
    _, mine = mysql_rows(root_conn, db, "u")
    theirs = doris_rows(doris_standin, db, "u", ["k", "n", "w"])
    assert sorted(tuple(None if v is None else str(v) for v in r) for r in theirs) == \
        sorted(tuple(None if v is None else str(v) for v in r) for r in mine)


def test_the_repair_and_resnapshot_jobs_from_the_ui(mysql_server, root_conn, fresh_db, doris_standin, tmp_path):
    """The Dagster jobs the UI offers (the table_parity check's failure names the repair job) do what
    the commands do: rows changed without binlog mended, rows deleted without binlog gone from Doris."""
    from dagster import DagsterInstance

    from orchestration.definitions import build_definitions
    from orchestration.defs.heal_jobs import repair_job_name, resnapshot_job_name
    from orchestration.defs.pipelines import load_handles

    db = fresh_db
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT NOT NULL PRIMARY KEY, v INT NOT NULL)",
        f"INSERT INTO `{db}`.t SELECT seq, seq FROM `{db}`.seq_1_to_300")
    path = tmp_path / "jobs.yaml"
    write_pipeline(path, host="127.0.0.1", port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                   tables=f"{db}.t", name=f"jobs_{db}", state_dir=tmp_path / "state", server_id="5730-5739",
                   source={"scan.incremental.snapshot.chunk.size": 100})
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(tmp_path / "dagster")}
    env.pop("TIDEMARK_FAULTS", None)
    first = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(path), "--once"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr[-3000:]
    (handle,) = load_handles([path])
    defs = build_definitions([handle])

    def config(op: str) -> dict:
        return {"ops": {op: {"config": {"tables": [f"{db}.t"]}}}}

    sql(root_conn, "SET SESSION sql_log_bin = 0", f"UPDATE `{db}`.t SET v = -v WHERE id < 20",
        f"DELETE FROM `{db}`.t WHERE id BETWEEN 50 AND 59", "SET SESSION sql_log_bin = 1")
    # a repair killed between its precommit and its commit: the next one aborts what it left, and mends
    crash = {**env, "TIDEMARK_FAULTS": json.dumps({"repair.after_loads": {"action": "kill"}})}
    killed = subprocess.run([sys.executable, "-m", "orchestration.cli", "verify", str(path), "--repair"], cwd=ROOT,
                            env=crash, capture_output=True, text=True, timeout=600)
    assert killed.returncode == -9, killed.stderr[-3000:]
    with DagsterInstance.ephemeral() as instance:
        repaired = defs.resolve_job_def(repair_job_name(handle)).execute_in_process(
            instance=instance, run_config=config("repair"))
        assert repaired.success
        assert_rows_match(doris_standin, root_conn, db, "t")

        sql(root_conn, "SET SESSION sql_log_bin = 0", f"DELETE FROM `{db}`.t WHERE id > 250",
            f"UPDATE `{db}`.t SET v = 0 WHERE id = 100", "SET SESSION sql_log_bin = 1")
        again = defs.resolve_job_def(resnapshot_job_name(handle)).execute_in_process(
            instance=instance, run_config=config("resnapshot"))
        assert again.success
        [output] = [e for e in again.all_events if e.event_type_value == "STEP_OUTPUT"]
        assert output.event_specific_data.metadata["deleted"].value == {f"{db}.t": 50}
    assert cli.main(["verify", str(path)]) == 0
    assert_rows_match(doris_standin, root_conn, db, "t")
