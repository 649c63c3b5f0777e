"""The sensor path, daemon-driven: ``dagster-daemon`` alone runs ``binlog_sensor`` and ``ddl_sensor``;
a DDL committed under a write load is detected, carried over by a ``schema_change`` run, and the
stream goes on; Doris ends with the new column and MySQL's rows."""

from __future__ import annotations

import time
from pathlib import Path

import pymysql
import pytest
from dagster import DagsterInstance, RunsFilter
from dagster._core.storage.tags import SENSOR_NAME_TAG

from cdc_core.config import load_pipeline
from devstack.pipeline_file import write_pipeline
from devstack.procs import two_free_ports
from devstack.stack import DorisStandIn
from devstack.workload import SteadyWriter
from jobs.spark_executor import spark_service
from orchestration.cli.dev import DagsterServices
from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.schema_change_job import ddl_sensor_name
from tests.schema.helpers import assert_rows_match, doris_columns, sql

ROOT = Path(__file__).resolve().parents[2]



@pytest.fixture(scope="module")
def private_standin(tmp_path_factory):
    fe, be = two_free_ports()
    standin = DorisStandIn(tmp_path_factory.mktemp("doris"), fe_port=fe, be_port=be)
    standin.start()
    yield standin
    standin.stop()


@pytest.mark.slow
def test_ddl_sensor_carries_a_ddl_over_under_load(mysql_server, root_conn, fresh_db, private_standin, tmp_path):
    db, standin = fresh_db, private_standin
    sql(root_conn, f"CREATE TABLE `{db}`.ticks (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL)")
    path = tmp_path / "p.yaml"
    write_pipeline(path, host="127.0.0.1", port=mysql_server.endpoint.port, fe=standin.fe_http, tables=f"{db}.\\.*",
                   name=f"d_{db}", state_dir=tmp_path / "state", server_id="5800-5804", parallelism=None,
                   source={"scan.startup.mode": "latest-offset"}, pipeline={"schema.change.behavior": "evolve"})
    handle = PipelineHandle.load(path)
    runner = spark_service(load_pipeline(path))
    runner.binlog_lag()

    def connect():
        return pymysql.connect(unix_socket=mysql_server.endpoint.root_socket, user="root", database=db,
                               autocommit=False)

    writer = SteadyWriter(connect, "ticks", ("payload",), lambda i, rng: (f"tick {i}",), rate=20, ticks_per_s=10,
                          first_id=1)
    services = DagsterServices([path], tmp_path / "dagster", webserver=False, daemon=True,
                               log_dir=tmp_path / "logs", working_dir=ROOT)
    try:
        services.start()
        writer.start()
        time.sleep(15)
        sql(root_conn, f"ALTER TABLE `{db}`.ticks ADD COLUMN c INT")
        time.sleep(5)
        writer.stop()
        sql(root_conn, f"UPDATE `{db}`.ticks SET c = id")
        deadline = time.monotonic() + 300
        with DagsterInstance.from_config(str(services.home)) as instance:
            while time.monotonic() < deadline:
                done = instance.get_runs(filters=RunsFilter(tags={SENSOR_NAME_TAG: ddl_sensor_name(handle)}))
                cols = doris_columns(standin, db, "ticks") or {}
                if done and all(r.status.value == "SUCCESS" for r in done) and "c" in cols \
                        and not runner.binlog_lag().behind:
                    break
                time.sleep(1)
            else:
                pytest.fail(f"the DDL was not carried over; logs in {tmp_path / 'logs'}")
            assert len(done) == 1
        assert_rows_match(standin, root_conn, db, "ticks")
    finally:
        if writer.is_alive():
            writer.stop()
        services.stop()
        runner.close()
