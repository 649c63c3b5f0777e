"""``tidemark status``: the formatter (no server), Dagster's last failed run of a pipeline, and the
command against the session's MariaDB and the Doris stand-in, mid-snapshot and mid-stream."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import dagster as dg
import pymysql
import pytest
from rich.console import Console

from cdc_core.config import load_pipeline
from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.binlog_distance import bytes_between
from cdc_core.pipeline.service import PipelineService
from cdc_core.pipeline.status import (
    PendingTransaction,
    Phase,
    PipelineStatus,
    StreamPosition,
    TableProgress,
)
from devstack.pipeline_file import write_pipeline
from jobs.spark_executor import SparkExecutor
from orchestration.cli.instance import prepare_home
from orchestration.cli.status import FailedRun, StatusReport, instance_exists, last_failed_run, status_table
from orchestration.cli.tidemark import main
from orchestration.defs.pipelines import PipelineHandle

# The keys this module's pipelines share: 50-row chunks, their own server ids.
KEYS = dict(server_id="5530-5536", source={"scan.incremental.snapshot.chunk.size": 50})



def _status(**changes) -> PipelineStatus:
    values = dict(
        pipeline="shop", phase=Phase.SNAPSHOT, plan_complete=True, snapshot_done=False,
        tables=(TableProgress("shop.orders", 4, 2, 1, 0, 1), TableProgress("shop.items", 2, 2, 0, 0, 0)),
        stream=StreamPosition("initial", None, {"file": "binlog.000002", "position": 900}, False, None, None,
                              "the snapshot is not finished"),
        pending_transactions=(PendingTransaction("shop.orders#00002", "tidemark_shop_ab12_x", 41, "shop", "orders"),),
        binlog_paused=None, pending_ddl=None, schema_registry="IDLE", schema_change_error=None,
        doris_fe="127.0.0.1:8030",
    )
    values.update(changes)
    return PipelineStatus(**values)


def _render(report: StatusReport) -> str:
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(status_table(report))
    return out.getvalue()


def test_the_formatter_shows_progress_lag_pauses_and_the_last_error():
    report = StatusReport("/p/shop.yaml", _status(), "/s/dagster", True,
                          FailedRun("0123456789abcdef", "shop_binlog_job", "2026-01-01T00:00:00+00:00",
                                    "binlog_stream: RuntimeError: Doris refused [the load]"))
    text = _render(report)
    assert "4/6 committed (1 prepared, 1 pending)" in text  # all tables
    assert "shop.orders" in text and "2/4 committed (1 prepared, 1 pending)" in text
    assert "2/2 committed" in text
    assert "binlog.000002:900" in text and "the snapshot is not finished" in text
    assert "1: tidemark_shop_ab12_x (shop.orders#00002)" in text
    assert "shop_binlog_job 01234567" in text
    assert "Doris refused [the load]" in text  # brackets in a message are text, not markup
    assert re.search(r"running\W+nothing", text)  # no lease held
    busy = _render(StatusReport("/p/shop.yaml", _status(running={
        "stream": "Dagster run 0a1b2c3d (shop_binlog_job) on host-b (pid 77), since 5 s, heartbeat 1 s ago"}),
        "/s/dagster", True, None))
    assert "stream: Dagster run 0a1b2c3d (shop_binlog_job) on host-b (pid 77), since 5 s, heartbeat 1 s ago" in busy

    streaming = _status(
        phase=Phase.STREAMING, snapshot_done=True,
        stream=StreamPosition("initial", {"file": "binlog.000002", "position": 400},
                              {"file": "binlog.000002", "position": 900}, True, 500, 12.5),
        binlog_paused={"reason": "schema change", "status": "APPLYING"},
        pending_ddl={"type": "AddColumnEvent", "table_id": "shop.orders",
                     "offset": {"file": "binlog.000002", "position": 700}},
        schema_registry="APPLYING", schema_change_error="Doris refused ALTER")
    text = _render(StatusReport("/p/shop.yaml", streaming, "/s/dagster", False, None))
    assert "500 bytes, 12.5 s" in text
    assert "yes: schema change (APPLYING)" in text
    assert "AddColumnEvent on shop.orders at binlog.000002:700" in text
    assert "Doris refused ALTER" in text
    assert "no Dagster instance at /s/dagster" in text


def test_the_json_has_its_documented_fields():
    report = StatusReport("/p/shop.yaml", _status(), "/s/dagster", True, None,
                          dagster_instance_used="Dagster instance: /s/dagster (from DAGSTER_HOME; …)")
    doc = json.loads(json.dumps(report.to_dict()))
    assert set(doc) == {"file", "pipeline", "phase", "snapshot", "binlog", "pending_transactions", "paused",
                        "doris_fe", "unreachable", "running", "last_error"}
    assert doc["snapshot"]["chunks"] == {"chunks": 6, "committed": 4, "prepared": 1, "running": 0, "pending": 1}
    assert doc["snapshot"]["tables"][0] == {"table": "shop.orders", "chunks": 4, "committed": 2, "prepared": 1,
                                            "running": 0, "pending": 1}
    assert set(doc["binlog"]) == {"startup_mode", "committed_offset", "server_offset", "behind", "bytes_behind",
                                  "seconds_behind", "seconds_behind_unknown", "last_batch"}
    assert doc["pending_transactions"] == [{"owner": "shop.orders#00002", "label": "tidemark_shop_ab12_x",
                                            "txn_id": 41, "database": "shop", "table": "orders"}]
    assert doc["paused"] == {"binlog": None, "pending_ddl": None, "schema_registry": "IDLE",
                             "schema_change_error": None}
    assert doc["last_error"] == {"dagster_home": "/s/dagster", "dagster_instance": True, "dagster_run": None,
                                 "schema_change": None,
                                 "dagster_instance_used": "Dagster instance: /s/dagster (from DAGSTER_HOME; …)"}


def test_bytes_between_counts_across_rotations_and_refuses_a_purged_file():
    logs = [("binlog.000003", 1000), ("binlog.000004", 500), ("binlog.000005", 300)]
    assert bytes_between(logs, BinlogOffset("binlog.000003", 900), BinlogOffset("binlog.000005", 200)) == \
        100 + 500 + 200
    assert bytes_between([], BinlogOffset("binlog.000005", 100), BinlogOffset("binlog.000005", 250)) == 150
    assert bytes_between(logs, BinlogOffset("binlog.000005", 250), BinlogOffset("binlog.000005", 250)) == 0
    assert bytes_between(logs, BinlogOffset("binlog.000001", 4), BinlogOffset("binlog.000005", 200)) is None


def test_the_last_failed_run_of_the_pipeline_and_its_cause(tmp_path):
    """A failed run of this pipeline's job is found with its step's exception; another
    pipeline's failure and a successful run are not it; without an instance nothing is created."""
    handle = PipelineHandle.load(_offline_pipeline(tmp_path, "shop"))
    home = tmp_path / "dagster"
    assert last_failed_run(handle, home) is None and not home.exists()

    @dg.op
    def binlog_stream():
        raise RuntimeError("the committed offset is [ahead]")

    @dg.op
    def fine():
        return 1

    prepare_home(home)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        dg.GraphDefinition("g", node_defs=[binlog_stream]).to_job(name="shop_binlog_job").execute_in_process(
            instance=instance, raise_on_error=False)
        dg.GraphDefinition("o", node_defs=[binlog_stream]).to_job(name="other_binlog_job").execute_in_process(
            instance=instance, raise_on_error=False)
        dg.GraphDefinition("f", node_defs=[fine]).to_job(name="shop_snapshot_job").execute_in_process(
            instance=instance)
    assert instance_exists(home)
    failed = last_failed_run(handle, home)
    assert failed is not None and failed.job == "shop_binlog_job"
    assert failed.message.startswith("binlog_stream: RuntimeError: the committed offset is [ahead]")
    assert failed.ended_at is not None


def test_a_failure_a_later_run_of_the_same_job_made_good_is_not_the_last_error(tmp_path):
    """Issue 29, item 3: the binlog job failed while Doris was down, then ran fine once it was back:
    status no longer shows the old ConnectionError as the pipeline's last failure. A failure of
    another job stays (the snapshot job's success does not make a binlog failure good)."""
    handle = PipelineHandle.load(_offline_pipeline(tmp_path, "shop"))
    home = tmp_path / "dagster"
    outage = {"down": True}

    @dg.op(name="binlog_stream")
    def binlog_stream():
        if outage["down"]:
            raise ConnectionError("the Doris FE at 127.0.0.1:8030 does not answer")

    @dg.op(name="snapshot_splits")
    def snapshot_splits():
        raise RuntimeError("the splits failed")

    prepare_home(home)
    binlog_job = dg.GraphDefinition("b", node_defs=[binlog_stream]).to_job(name="shop_binlog_job")
    splits_job = dg.GraphDefinition("s", node_defs=[snapshot_splits]).to_job(name="shop_splits_job")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        binlog_job.execute_in_process(instance=instance, raise_on_error=False)
    failed = last_failed_run(handle, home)
    assert failed is not None and failed.job == "shop_binlog_job" and "does not answer" in failed.message

    outage["down"] = False
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert binlog_job.execute_in_process(instance=instance).success
    assert last_failed_run(handle, home) is None

    with dg.DagsterInstance.from_config(str(home)) as instance:
        splits_job.execute_in_process(instance=instance, raise_on_error=False)
        assert binlog_job.execute_in_process(instance=instance).success
    failed = last_failed_run(handle, home)
    assert failed is not None and failed.job == "shop_splits_job", failed


def test_status_of_an_invalid_pipeline_file_names_the_file_and_the_key(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: {type: mysql}\nsink: {type: doris}\n")
    assert main(["status", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "missing required option" in err


def _offline_pipeline(tmp_path: Path, name: str, port: int = 1, fe: str = "127.0.0.1:1") -> Path:
    path = tmp_path / f"{name}.yaml"
    write_pipeline(path, host="127.0.0.1", port=port, fe=fe, tables="shop.\\.*", name=name,
                   state_dir=tmp_path / "state" / name, **KEYS)
    return path


def test_status_says_which_server_cannot_be_reached(mysql_server, doris_standin, tmp_path, capsys):
    """Issue 29, item 3: MySQL on a port where nothing listens: the status is shown all the same
    (what the state store knows; the server's fields null), one line names the MySQL source and its
    block; MySQL up and Doris on such a port: the same for the Doris sink. Exit status 1 either way,
    no password, no library log line, no traceback."""
    from devstack.procs import free_port

    path = _offline_pipeline(tmp_path, "nomysql", port=free_port(), fe=doris_standin.fe_http)
    assert main(["status", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["phase"] == "not_started" and doc["snapshot"]["chunks"]["chunks"] == 0
    assert doc["binlog"]["server_offset"] is None and doc["binlog"]["behind"] is None
    assert doc["binlog"]["seconds_behind_unknown"] == "the MySQL source does not answer"
    assert doc["doris_fe"] == doris_standin.fe_http and list(doc["unreachable"]) == ["mysql"]
    assert captured.err.splitlines() == [f"tidemark status: {path}: {doc['unreachable']['mysql']}"], captured.err
    assert doc["unreachable"]["mysql"].startswith("the MySQL source 127.0.0.1:")
    assert "does not answer (connection refused): check hostname, port" in doc["unreachable"]["mysql"]
    assert "source block" in doc["unreachable"]["mysql"]

    path = _offline_pipeline(tmp_path, "nodoris", port=mysql_server.endpoint.port, fe=f"127.0.0.1:{free_port()}")
    assert main(["status", str(path)]) == 1
    captured = capsys.readouterr()
    assert "tidemark status nodoris" in captured.out and "no chunks planned" in captured.out
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tidemark status: {path}: the Doris sink (fenodes 127.0.0.1:")
    assert "does not answer (connection refused): check fenodes" in lines[0] and "sink block" in lines[0]
    for text in ("password: cdc", "Max retries", "NewConnectionError", "urllib3", "Traceback"):
        assert text not in captured.err + captured.out, text


def _status_json(path: Path, capsys) -> dict:
    assert main(["status", str(path), "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)


def _server_offset(root_conn) -> dict:
    with root_conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
    return {"file": row["File"], "position": int(row["Position"])}


def test_status_mid_snapshot_then_mid_stream(mysql_server, root_conn, fresh_db, doris_standin, spark_session,
                                             tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("TIDEMARK_DAGSTER_HOME", raising=False)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # the home under the state directory
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.items (id INT PRIMARY KEY, qty INT NOT NULL)")
        cur.executemany(f"INSERT INTO `{fresh_db}`.items VALUES (%s, %s)", [(i, i) for i in range(1, 201)])
        cur.execute(f"CREATE TABLE `{fresh_db}`.notes (id INT PRIMARY KEY, body VARCHAR(20))")
        cur.executemany(f"INSERT INTO `{fresh_db}`.notes VALUES (%s, %s)", [(i, "n") for i in range(1, 31)])
        # Exact statistics: the splitter scales chunks by the approximate row count.
        cur.execute(f"ANALYZE TABLE `{fresh_db}`.items, `{fresh_db}`.notes")
        cur.fetchall()
    path = tmp_path / "status.yaml"
    write_pipeline(path, host=mysql_server.endpoint.host, port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                   tables=f"{fresh_db}.\\.*", name=f"status_{fresh_db}", state_dir=tmp_path / "state", **KEYS)
    definition = load_pipeline(path)

    # Nothing run yet: not started, and asking changes nothing (no startup mode fixed).
    doc = _status_json(path, capsys)
    assert doc["phase"] == "not_started" and doc["snapshot"]["chunks"]["chunks"] == 0
    assert doc["binlog"]["committed_offset"] is None and doc["binlog"]["bytes_behind"] is None

    service = PipelineService(definition, executor=SparkExecutor(lambda: spark_session))
    try:
        keys = list(service.plan_splits().chunk_keys)
        items = [k for k in keys if k.startswith(f"{fresh_db}.items#")]
        assert len(items) == 4 and len(keys) == 5, keys
        service.run_chunks(items[:3])
        service.commit_chunks(items[:2])  # items#0, #1 committed, #2 prepared, #3 and notes#0 pending
        prepared = service.pending_transactions()
    finally:
        service.close()

    doc = _status_json(path, capsys)
    assert doc["phase"] == "snapshot" and doc["file"] == str(path.resolve())
    assert doc["snapshot"]["plan_complete"] is True and doc["snapshot"]["done"] is False
    assert doc["snapshot"]["chunks"] == {"chunks": 5, "committed": 2, "prepared": 1, "running": 0, "pending": 2}
    by_table = {t["table"]: t for t in doc["snapshot"]["tables"]}
    assert by_table[f"{fresh_db}.items"] == {"table": f"{fresh_db}.items", "chunks": 4, "committed": 2,
                                             "prepared": 1, "running": 0, "pending": 1}
    assert by_table[f"{fresh_db}.notes"]["pending"] == 1
    assert {(t["owner"], t["label"]) for t in doc["pending_transactions"]} == \
        {(t["owner"], t["label"]) for t in prepared} and {t["owner"] for t in prepared} == {items[2]}
    assert doc["binlog"]["committed_offset"] is None
    assert doc["binlog"]["seconds_behind_unknown"] == "the snapshot is not finished"
    assert doc["paused"] == {"binlog": None, "pending_ddl": None, "schema_registry": "IDLE",
                             "schema_change_error": None}
    assert doc["last_error"]["dagster_instance"] is False and doc["last_error"]["dagster_run"] is None
    assert main(["status", str(path)]) == 0
    human = capsys.readouterr().out
    assert "2/5 committed (1 prepared, 2 pending)" in human and "2/4 committed (1 prepared, 1 pending)" in human

    service = PipelineService(definition, executor=SparkExecutor(lambda: spark_session))
    try:
        service.commit_chunks([items[2]])
        rest = [k for k in keys if k not in items[:3]]
        service.run_chunks(rest)
        service.commit_chunks(rest)
        assert service.snapshot_done()
        with service.store.transaction(readonly=True) as tx:
            high_watermarks = [c.high_watermark for c in tx.chunks()]
    finally:
        service.close()
    stream_start = min(BinlogOffset.from_dict(h) for h in high_watermarks)

    # Rows written after the snapshot, stamped 100 s in the past: the binlog keeps the
    # statement's time in its events' headers, so the stream is that far behind.
    with root_conn.cursor() as cur:
        cur.execute("SET TIMESTAMP = UNIX_TIMESTAMP() - 100")
        cur.executemany(f"INSERT INTO `{fresh_db}`.items VALUES (%s, %s)", [(i, i) for i in range(201, 221)])
        cur.execute("SET TIMESTAMP = DEFAULT")
    server = _server_offset(root_conn)
    doc = _status_json(path, capsys)
    assert doc["phase"] == "streaming" and doc["snapshot"]["done"] is True
    assert doc["snapshot"]["chunks"]["committed"] == 5 and doc["pending_transactions"] == []
    binlog = doc["binlog"]
    assert binlog["committed_offset"]["file"] == stream_start.file
    assert binlog["committed_offset"]["position"] == stream_start.position
    assert {k: binlog["server_offset"][k] for k in ("file", "position")} == server
    assert binlog["behind"] is True
    assert binlog["bytes_behind"] > 0
    if server["file"] == stream_start.file:
        assert binlog["bytes_behind"] == server["position"] - stream_start.position
    assert binlog["seconds_behind"] >= 100 and binlog["seconds_behind_unknown"] is None

    # One binlog batch applies it: no lag left.
    service = PipelineService(definition)
    try:
        batch = service.run_binlog_batch()
        assert service.commit_batch(batch.batch_id)
    finally:
        service.close()
    doc = _status_json(path, capsys)
    assert doc["binlog"]["behind"] is False and doc["binlog"]["bytes_behind"] == 0
    assert doc["binlog"]["seconds_behind"] == 0.0
    assert doc["binlog"]["last_batch"]["batch_id"] == batch.batch_id
    assert doc["binlog"]["last_batch"]["status"] == "COMMITTED"


@pytest.mark.parametrize("argv", [["status", "p.yaml"], ["status", "p.yaml", "--json"]])
def test_status_is_a_cli_subcommand(argv):
    from orchestration.cli.tidemark import build_parser

    args = build_parser().parse_args(argv)
    assert args.pipeline == "p.yaml" and args.json == ("--json" in argv)
