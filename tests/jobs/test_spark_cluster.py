"""The same snapshot job on a Spark standalone cluster (master + worker from the installed PySpark) and
through a Spark Connect server: only the pipeline file changes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tests.jobs.conftest import doris_query

SCRIPT = textwrap.dedent("""
    import json, sys
    from cdc_core.config import load_pipeline
    from jobs.spark_executor import spark_service

    runner = spark_service(load_pipeline(sys.argv[1], env={}))
    keys = list(runner.plan_splits().chunk_keys)
    results = runner.run_chunks(keys)
    runner.commit_chunks(keys)
    spark = runner.executor.session()  # the session the chunks were read with
    master = spark.conf.get("spark.master")
    remote = type(spark).__module__.startswith("pyspark.sql.connect")
    print(json.dumps({"master": master, "connect": remote, "rows": sum(r.rows for r in results),
                      "done": runner.snapshot_done()}))
    runner.close()
    spark.stop()
""")


def _snapshot(mysql_server, root_conn, fresh_db, tmp_path, doris_standin, name: str, server_ids: str,  # noqa: ANN001
              spark_options: dict[str, Any]) -> dict[str, Any]:
    """Snapshot a 3000-row table in a process of its own with ``spark_options`` in its pipeline file."""
    import yaml

    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY, v VARCHAR(10))")
        cur.execute(f"INSERT INTO `{fresh_db}`.t SELECT seq, CONCAT('v', seq) FROM `{fresh_db}`.seq_1_to_3000")
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"type": "mysql", "hostname": "127.0.0.1", "port": mysql_server.endpoint.port,
                   "username": "cdc", "password": "cdc", "tables": f"{fresh_db}.t", "server-id": server_ids,
                   "scan.incremental.snapshot.chunk.size": 1000},
        "sink": {"type": "doris", "fenodes": doris_standin.fe_http, "username": "root", "password": ""},
        "pipeline": {"name": name, "parallelism": 1, "tidemark.state.dir": str(tmp_path / "state"),
                     **spark_options},
    }))
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # a standalone cluster runs in the default suite in tests/orchestration/test_run_guard.py
def test_snapshot_job_runs_on_a_standalone_cluster(mysql_server, root_conn, fresh_db, doris_standin, tmp_path):
    from devstack.spark_cluster import SparkStandaloneCluster

    cluster = SparkStandaloneCluster(tmp_path / "spark", worker_cores=1, worker_memory="1g")
    master = cluster.start()
    try:
        # The master URL (and executor memory for this small worker).
        report = _snapshot(mysql_server, root_conn, fresh_db, tmp_path, doris_standin, "cluster_test", "5600-5610",
                           {"tidemark.spark.master": master, "tidemark.spark.conf.spark.executor.memory": "768m"})
    finally:
        cluster.stop()
    assert report == {"master": master, "connect": False, "rows": 3000, "done": True}
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM t") == [[3000]]


def test_snapshot_job_runs_through_spark_connect(mysql_server, root_conn, fresh_db, doris_standin, tmp_path):
    """``tidemark.spark.remote`` alone sends the job to a Spark Connect server: the fused chunk tasks
    run in the server's Python workers, with Tidemark's code shipped as artifacts."""
    from devstack.spark_cluster import SparkConnectServer

    server = SparkConnectServer(tmp_path / "connect", master="local[1,4]")
    url = server.start()
    try:
        report = _snapshot(mysql_server, root_conn, fresh_db, tmp_path, doris_standin, "connect_test", "5620-5630",
                           {"tidemark.spark.remote": url})
    finally:
        server.stop()
    assert report == {"master": "local[1,4]", "connect": True, "rows": 3000, "done": True}
    assert doris_query(doris_standin, fresh_db, "SELECT COUNT(*) FROM t") == [[3000]]
