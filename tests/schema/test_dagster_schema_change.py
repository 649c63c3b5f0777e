"""The ``schema_change`` op job and the ``ddl_sensor`` decision, in process (execute_in_process),
with the real runner, MariaDB and the Doris stand-in: a run carries a DDL over; a run killed after
each op in turn (or inside apply, after Doris ran the DDL) is re-run and ends with the right schema,
the right data and the DDL applied once; several DDLs in a row go in binlog order."""

from __future__ import annotations

import warnings
from pathlib import Path

import dagster as dg
import pytest
import yaml

from cdc_core.doris.catalog import DorisCatalog
from cdc_core.pipeline.schema_change import SchemaChangeSteps
from cdc_core.schema_evolution.registry import RequestStatus, SchemaRegistry
from jobs.spark_executor import spark_service
from orchestration.definitions import build_definitions
from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.schema_change_job import (
    decide_schema_change_run,
    run_config_for,
    schema_change_job_name,
)
from tests.schema.helpers import assert_rows_match, catch_up, doris_columns, sql

warnings.filterwarnings("ignore", category=dg.BetaWarning)
warnings.filterwarnings("ignore", category=dg.PreviewWarning)


@pytest.fixture(scope="module")
def instance():
    with dg.instance_for_test() as inst:
        yield inst


def write_pipeline(tmp_path: Path, mysql_server, standin, db: str, behavior: str = "evolve") -> Path:
    doc = {
        "source": {"type": "mysql", "hostname": "127.0.0.1", "port": mysql_server.endpoint.port, "username": "cdc",
                   "password": "cdc", "tables": f"{db}.\\.*", "server-id": "5600-5610", "server-time-zone": "UTC",
                   "scan.startup.mode": "latest-offset"},
        "sink": {"type": "doris", "fenodes": standin.fe_http, "username": "root", "password": ""},
        "pipeline": {"name": f"sc_{db}", "schema.change.behavior": behavior,
                     "tidemark.state.dir": str(tmp_path / "state")},
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


class Pipeline:
    def __init__(self, tmp_path, mysql_server, standin, root_conn, db, instance, behavior="evolve"):
        self.handle = PipelineHandle.load(write_pipeline(tmp_path, mysql_server, standin, db, behavior))
        self.instance = instance
        self.root_conn, self.db, self.standin = root_conn, db, standin
        sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a INT NOT NULL, b VARCHAR(10))")
        self.runner = spark_service(self.handle.definition)
        self.runner.binlog_lag()
        sql(root_conn, f"INSERT INTO `{db}`.t VALUES (1, 1, 'a'), (2, 2, 'b'), (3, 3, 'c')")
        assert catch_up(self.runner) is None

    def defs(self):
        return build_definitions([self.handle])

    def run_job(self, offset, raise_on_error: bool = False):
        job = self.defs().resolve_job_def(schema_change_job_name(self.handle))
        return job.execute_in_process(instance=self.instance, run_config=run_config_for(offset),
                                      raise_on_error=raise_on_error, tags=self.handle.run_tags(stream=True))

    def next_offset(self):
        found = SchemaChangeSteps(self.runner).next_ddl()
        assert found is not None
        return found.offset


def test_job_runs_ops_in_order_and_sensor_decides(tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance):
    p = Pipeline(tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance)
    db = fresh_db
    assert isinstance(decide_schema_change_run(p.handle, p.runner, instance), dg.SkipReason)
    sql(root_conn, f"UPDATE `{db}`.t SET a = 10 WHERE id = 1", f"ALTER TABLE `{db}`.t ADD COLUMN c INT",
        f"UPDATE `{db}`.t SET c = id")
    request = decide_schema_change_run(p.handle, p.runner, instance)
    assert isinstance(request, dg.RunRequest)
    offset = p.next_offset()
    assert request.run_key == f"{p.handle.slug}:ddl:{offset.file}:{offset.position}"
    result = p.run_job(offset)
    assert result.success
    assert [e.step_key for e in result.all_events if e.event_type_value == "STEP_SUCCESS"] == [
        "quiesce", "flush", "apply", "resume"]
    assert not p.runner.store.get("flags", "binlog_paused")
    assert catch_up(p.runner) is None
    assert doris_columns(doris_standin, db, "t")["c"] == "int"
    assert_rows_match(doris_standin, root_conn, db, "t")
    # once carried over, the sensor has nothing more to ask for
    assert isinstance(decide_schema_change_run(p.handle, p.runner, instance), dg.SkipReason)


@pytest.mark.parametrize("crash", ["quiesce", "flush", "apply", "resume", "inside_apply"])
def test_killed_after_each_op_and_rerun(crash, tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance,
                                        monkeypatch):
    p = Pipeline(tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance)
    db = fresh_db
    sql(root_conn, f"INSERT INTO `{db}`.t VALUES (4, 4, 'd')", f"DELETE FROM `{db}`.t WHERE id = 2",
        f"ALTER TABLE `{db}`.t ADD COLUMN c INT, MODIFY a BIGINT NOT NULL",
        f"UPDATE `{db}`.t SET c = id, a = a + 3000000000", f"INSERT INTO `{db}`.t VALUES (5, 5, 'e', 5)")
    offset = p.next_offset()

    ddl_statements: list[str] = []
    original_execute = DorisCatalog.execute

    def counting_execute(self, database, statement):
        if statement.lstrip().upper().startswith("ALTER TABLE"):
            ddl_statements.append(statement)
        return original_execute(self, database, statement)

    monkeypatch.setattr(DorisCatalog, "execute", counting_execute)

    class Killed(RuntimeError):
        pass

    if crash == "inside_apply":
        original = SchemaRegistry.record_outcome
        state = {"armed": True}

        def dies_after_doris(self, index, outcome):
            if state["armed"]:
                state["armed"] = False
                raise Killed("killed after Doris ran the DDL, before the outcome was recorded")
            return original(self, index, outcome)

        monkeypatch.setattr(SchemaRegistry, "record_outcome", dies_after_doris)
    else:
        original = getattr(SchemaChangeSteps, crash)
        state = {"armed": True}

        def dies_after(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            if state["armed"]:
                state["armed"] = False
                raise Killed(f"killed after {crash}")
            return result

        monkeypatch.setattr(SchemaChangeSteps, crash, dies_after)

    first = p.run_job(offset)
    assert not first.success
    # a fresh runner, as after a process restart
    p.runner.close()
    p.runner = spark_service(p.handle.definition)
    registry = SchemaRegistry(p.runner.store)
    expected_status = {"quiesce": RequestStatus.WAITING_FOR_FLUSH, "flush": RequestStatus.APPLYING,
                       "inside_apply": RequestStatus.APPLYING, "apply": RequestStatus.FINISHED,
                       "resume": RequestStatus.IDLE}[crash]
    assert registry.status is expected_status
    # while unfinished, the stream stays paused at the DDL
    assert bool(p.runner.store.get("flags", "binlog_paused")) == (crash != "resume")
    second = p.run_job(offset)
    assert second.success
    assert registry.status is RequestStatus.IDLE
    assert catch_up(p.runner) is None
    cols = doris_columns(doris_standin, db, "t")
    assert cols["c"] == "int" and cols["a"] == "bigint"
    assert_rows_match(doris_standin, root_conn, db, "t")
    # each derived change reached Doris exactly once
    assert len(ddl_statements) == 2, ddl_statements
    done = registry.handled(offset)
    assert done is not None and [d["outcome"]["outcome"] for d in done["derived"]].count("applied") == 2 - (
        1 if crash == "inside_apply" else 0)
    # re-running the finished DDL changes nothing
    assert p.run_job(offset).success
    assert len(ddl_statements) == 2


def test_several_ddls_in_a_row_in_binlog_order(tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance):
    p = Pipeline(tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance, behavior="lenient")
    db = fresh_db
    sql(root_conn,
        f"ALTER TABLE `{db}`.t ADD COLUMN c INT", f"UPDATE `{db}`.t SET c = id",
        f"ALTER TABLE `{db}`.t RENAME COLUMN b TO b2", f"INSERT INTO `{db}`.t VALUES (7, 7, 'g', 7)",
        f"ALTER TABLE `{db}`.t MODIFY c BIGINT", f"UPDATE `{db}`.t SET c = c + 3000000000, b2 = CONCAT('x', id)")
    offsets = []
    for _ in range(3):
        request = decide_schema_change_run(p.handle, p.runner, instance)
        assert isinstance(request, dg.RunRequest), request
        offset = p.next_offset()
        assert not offsets or offset > offsets[-1], "DDLs are carried over in binlog order"
        offsets.append(offset)
        assert p.run_job(offset).success
    assert isinstance(decide_schema_change_run(p.handle, p.runner, instance), dg.SkipReason)
    assert catch_up(p.runner) is None
    cols = doris_columns(doris_standin, db, "t")
    assert list(cols) == ["id", "a", "b", "c", "b2"] and cols["c"] == "bigint"
    assert_rows_match(doris_standin, root_conn, db, "t")


def test_run_once_carries_ddl_over(tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance):
    """``tidemark run --once`` goes through the same schema_change job when its range holds DDL."""
    from rich.console import Console

    from orchestration.cli.run_once import OnceRun

    p = Pipeline(tmp_path, mysql_server, doris_standin, root_conn, fresh_db, instance)
    db = fresh_db
    sql(root_conn, f"INSERT INTO `{db}`.t VALUES (4, 4, 'd')", f"ALTER TABLE `{db}`.t ADD COLUMN c INT",
        f"UPDATE `{db}`.t SET c = id", f"ALTER TABLE `{db}`.t DROP COLUMN b", f"INSERT INTO `{db}`.t VALUES (5, 5, 5)")
    once = OnceRun(p.handle, instance, Console(stderr=True, quiet=True))
    try:
        summary = once.run()
    finally:
        once.service.close()
    assert summary.schema_changes == 2
    cols = doris_columns(doris_standin, db, "t")
    assert "c" in cols and "b" not in cols
    assert_rows_match(doris_standin, root_conn, db, "t")
