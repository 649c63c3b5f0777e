"""The Spark settings a pipeline's session starts with (``jobs.spark.session_settings``)."""

from __future__ import annotations

from types import SimpleNamespace

from jobs.spark import session_settings

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
