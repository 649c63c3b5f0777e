"""The Spark settings a pipeline's session starts with (``jobs.spark.session_settings``)."""

from __future__ import annotations

import os
from types import SimpleNamespace

from jobs.spark import prepare_environment, session_settings

C1_ONLY = "-XX:TieredStopAtLevel=1"


def options(**kw):
    return SimpleNamespace(pipeline=SimpleNamespace(**{"parallelism": 2, "spark_master": None,
                                                       "spark_remote": None, "spark_conf": {}, **kw}))


def test_local_mode_compiles_with_c1_only():
    settings = session_settings(options())
    assert settings["master"].startswith("local[")
    assert settings["conf"]["spark.driver.extraJavaOptions"] == C1_ONLY


def test_a_pipelines_own_java_options_replace_it():
    mine = "-Xss4m -XX:+UseG1GC"
    conf = session_settings(options(spark_conf={"spark.driver.extraJavaOptions": mine}))["conf"]
    assert conf["spark.driver.extraJavaOptions"] == mine


def test_a_cluster_or_spark_connect_keeps_its_own_jvm_settings():
    cluster = session_settings(options(spark_master="spark://host:7077"))
    connect = session_settings(options(spark_remote="sc://host:15002"))
    assert "spark.driver.extraJavaOptions" not in cluster["conf"]
    assert "spark.driver.extraJavaOptions" not in connect["conf"]


def test_only_a_local_driver_is_put_on_loopback(monkeypatch):
    """A driver on a cluster is reached by executors on other machines at the address it
    advertises: SPARK_LOCAL_IP=127.0.0.1 (the local default) would make that the loopback."""
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    prepare_environment("spark://spark-master.internal:7077")
    assert "SPARK_LOCAL_IP" not in os.environ
    prepare_environment("local[2,4]")
    assert os.environ["SPARK_LOCAL_IP"] == "127.0.0.1"
