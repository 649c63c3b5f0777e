"""Resources (secrets stay out of the UI), the code location's loading, dagster.yaml and workspace.yaml."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.remote_representation.external_data import RepositorySnap
from dagster._serdes import serialize_value

from orchestration.cli.instance import prepare_home
from orchestration.definitions import build_definitions, definitions_for_paths
from orchestration.defs.pipelines import PipelineHandle, load_handles, pipeline_paths
from orchestration.defs.resources import TidemarkPipelineResource, TidemarkPySparkResource, pipeline_resource
from tests.orchestration.fakes import write_pipeline

ROOT = Path(__file__).resolve().parents[2]
FILE_PASSWORD = "not-a-real-password-s3cret"


def test_secrets_never_reach_the_ui_snapshot(tmp_path, monkeypatch):
    monkeypatch.setenv("TIDEMARK_SHOP_DORIS_PASSWORD", "env-doris-pw-9876")
    monkeypatch.setenv("TIDEMARK_SHOP_STATE_URL", f"sqlite:///{tmp_path / 'shared.db'}")
    handle = PipelineHandle.load(write_pipeline(tmp_path))
    resource = pipeline_resource(str(handle.path), handle.definition)
    assert isinstance(resource.doris.password, dg.EnvVar)
    assert resource.mysql.password is None  # the file's password stays in the file
    defs = build_definitions([handle], resources={handle.slug: resource})
    # What the webserver shows comes from this snapshot of the repository.
    text = serialize_value(RepositorySnap.from_def(defs.get_repository_def()))
    assert "TIDEMARK_SHOP_DORIS_PASSWORD" in text
    assert "env-doris-pw-9876" not in text and FILE_PASSWORD not in text and "shared.db" not in text


def test_resource_applies_overrides_and_opens_the_state_store(tmp_path, monkeypatch):
    monkeypatch.setenv("TIDEMARK_SHOP_MYSQL_PORT", "3999")
    monkeypatch.setenv("TIDEMARK_SHOP_DORIS_PASSWORD", "env-doris-pw-9876")
    handle = PipelineHandle.load(write_pipeline(tmp_path))
    resource = pipeline_resource(str(handle.path), handle.definition)
    with dg.build_resources({"p": resource}) as resources:
        live: TidemarkPipelineResource = resources.p
        definition = live.definition()
        assert definition.source.port == 3999
        assert definition.sink.password.get_secret_value() == "env-doris-pw-9876"
        assert definition.source.password.get_secret_value() == FILE_PASSWORD
        runner = live.service()
        assert (handle.definition.state_dir / "state.sqlite").is_file()
        assert runner.definition is definition
        assert "env-doris-pw-9876" not in repr(definition) and FILE_PASSWORD not in repr(definition)


def test_state_url_resource_and_spark_settings(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    monkeypatch.setenv("TIDEMARK_SHOP_STATE_URL", url)
    handle = PipelineHandle.load(write_pipeline(tmp_path))
    resource = pipeline_resource(str(handle.path), handle.definition)
    with dg.build_resources({"p": resource}) as resources:
        store = resources.p.state.open(handle.definition)
        store.put("flags", "binlog_paused", True)
        store.close()
    assert (tmp_path / "shared.db").is_file()
    spark = resource.pyspark
    assert isinstance(spark, TidemarkPySparkResource)  # dagster-pyspark's lazy session: nothing started
    assert spark.spark_config["spark.master"].startswith("local[")
    assert spark.spark_config["spark.sql.execution.arrow.pyspark.enabled"] == "true"


def test_several_pipelines_one_definitions(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    paths = [write_pipeline(tmp_path / "a", "alpha"), write_pipeline(tmp_path / "b", "beta")]
    monkey_spec = os.pathsep.join(str(p) for p in paths)
    assert pipeline_paths(monkey_spec) == [p.resolve() for p in paths]
    defs = definitions_for_paths(paths)
    repo = defs.get_repository_def()
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert {"alpha/snapshot_chunks", "beta/snapshot_chunks", "alpha/binlog_stream", "beta/binlog_stream"} <= keys
    assert {s.name for s in repo.sensor_defs} == {"alpha_binlog_sensor", "beta_binlog_sensor",
                                                  "alpha_ddl_sensor", "beta_ddl_sensor"}
    pools = {repo.assets_defs_by_key[dg.AssetKey([p, "binlog_stream"])].op.pool for p in ("alpha", "beta")}
    assert pools == {"tidemark_alpha", "tidemark_beta"}
    # the same name twice is a clear error
    write_pipeline(tmp_path, "alpha")
    with pytest.raises(ValueError, match="both named 'alpha'"):
        load_handles([*paths, tmp_path / "alpha.yaml"])
    with pytest.raises(FileNotFoundError, match="TIDEMARK_PIPELINES"):
        pipeline_paths(str(tmp_path / "missing.yaml"))


def test_dagster_yaml_limits_runs_of_one_pipeline(tmp_path):
    home = prepare_home(tmp_path / "home")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        config = instance.get_concurrency_config()
        limits = config.run_queue_config.tag_concurrency_limits
        assert {"key": "tidemark/stream", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits
        assert config.pool_config.default_pool_limit == 1
        assert config.pool_config.pool_granularity.value == "run"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
    text = (home / "dagster.yaml").read_text()
    assert "telemetry:\n  enabled: false" in text and "nux:\n  enabled: false" in text


def test_workspace_yaml_loads_the_code_location(tmp_path):
    path = write_pipeline(tmp_path)
    env = {**os.environ, "TIDEMARK_PIPELINES": str(path), "DAGSTER_HOME": str(prepare_home(tmp_path / "home")),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([str(Path(sys.executable).parent / "dagster"), "definitions", "validate", "-w",
                           str(ROOT / "workspace.yaml")], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Validation successful" in done.stdout + done.stderr
