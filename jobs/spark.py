"""Spark session settings from the pipeline file, and what a session needs before Tidemark's jobs run.

The session itself is owned by the Dagster resource (``TidemarkPySparkResource`` in
``orchestration/defs/resources.py``, dagster-pyspark), which starts it only when a step asks for it
(a session costs ~10 s to start); the pipeline service reaches it through the executor's lazy
session provider (``jobs/spark_executor.py``). ``build_session`` is the same builder for tests and
benchmarks that run without Dagster. ``local[N]`` is the default (N = the pipeline's
parallelism, at least 1, at most the cores; its JVM compiles with C1 only, see
``session_settings``); ``tidemark.spark.master`` points at a cluster
(``spark://host:7077``, ``yarn``, ``k8s://...``) and ``tidemark.spark.remote`` at Spark Connect
(``sc://host:15002``). ``tidemark.spark.conf.*`` passes any Spark setting through.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import sys
import tempfile
import threading
import weakref
import zipfile
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_prepared: weakref.WeakSet[Any] = weakref.WeakSet()  # sessions whose data sources are registered


def prepare_environment(master: str | None = None) -> None:
    """What PySpark needs here: workers must run this venv's Python (it has pyarrow), and a local
    driver must bind to loopback rather than a name that resolves elsewhere. Only a local one: the
    driver of a session on a cluster (``master`` ``spark://…``, ``yarn``…) is reached by executors on
    other machines at the address it advertises, which ``SPARK_LOCAL_IP=127.0.0.1`` would make the
    loopback; without ``SPARK_LOCAL_IP`` (or ``spark.driver.host``) Spark advertises the machine's
    own address."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if master is None or master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def session_settings(pipeline: Any | None) -> dict[str, Any]:
    """Master/remote and conf for a pipeline (``PipelineOptions``), without starting anything."""
    options = getattr(pipeline, "pipeline", pipeline)
    parallelism = max(1, int(getattr(options, "parallelism", 1) or 1))
    master = getattr(options, "spark_master", None)
    remote = getattr(options, "spark_remote", None)
    conf: dict[str, str] = {
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": str(max(2, parallelism * 2)),
        "spark.ui.showConsoleProgress": "false",
        # A failed task is retried once before the job fails (the writer makes retries safe).
        "spark.task.maxFailures": "4",
    }
    if not master and not remote:
        master = f"local[{min(parallelism, os.cpu_count() or 1)},4]"
        conf["spark.driver.host"] = os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")
        # C1 only: the driver JVM (which is the executor in local mode) compiles Spark's start-up
        # code with the quick compiler instead of also running C2 on both cores while the
        # workers start. ~8 CPU-s less at each start here, for no loss on the snapshot path,
        # whose rows never enter the JVM, nor on the DataFrame path (bench/snapshot_spark.py
        # --dataframe: the same wall time). A pipeline's own extraJavaOptions replace this.
        conf["spark.driver.extraJavaOptions"] = "-XX:TieredStopAtLevel=1"
    conf.update(dict(getattr(options, "spark_conf", {}) or {}))
    return {"master": master, "remote": remote, "conf": conf}


def session_config(pipeline: Any | None, app_name: str | None = None) -> dict[str, str]:
    """A pipeline's settings as one flat Spark conf, master or remote included: what the Dagster
    PySpark resource starts its session with (``orchestration/defs/resources.py``). The app name is
    ``app_name``, else ``tidemark-<pipeline>``, unless the pipeline's conf sets one."""
    settings = session_settings(pipeline)
    config = dict(settings["conf"])
    if settings.get("remote"):
        config["spark.remote"] = settings["remote"]
    elif settings.get("master"):
        config["spark.master"] = settings["master"]
    name = getattr(pipeline, "name", None)
    config.setdefault("spark.app.name", app_name or (f"tidemark-{name}" if name else "tidemark"))
    return config


def start_session(pipeline: Any | None, app_name: str | None = None) -> Any:
    """Start (or find) the process's session with :func:`session_config`, built as dagster-pyspark
    builds it, so that the resource's own ``getOrCreate`` later finds this one."""
    config = session_config(pipeline, app_name)
    prepare_environment(config.get("spark.master"))
    from pyspark.sql import SparkSession  # here: importing PySpark costs ~0.7 s a run without Spark saves

    builder = SparkSession.builder
    for key, value in config.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


def build_session(pipeline: Any | None = None, app_name: str = "tidemark") -> Any:
    """A session with the pipeline's settings (``getOrCreate``: the process's active one if any),
    ready for Tidemark's jobs."""
    session = start_session(pipeline, app_name)
    remote = spark_context(session) is None
    if not remote:
        session.sparkContext.setLogLevel("WARN")
    logger.info("Spark session on %s", "Spark Connect" if remote else session.sparkContext.master)
    return prepare_session(session)


def prepare_session(session: Any) -> Any:
    """Register Tidemark's data sources on ``session`` and, on a cluster, ship the code (once per session)."""
    with _lock:
        if session in _prepared:
            return session
        remote = spark_context(session) is None
        master = "" if remote else str(session.sparkContext.master)
        if remote or not master.startswith("local"):
            _ship_code(session, remote)
        _register_sources(session)
        _prepared.add(session)
        logger.debug("Spark session prepared for Tidemark's jobs (master %s)", master or "Spark Connect")
    return session


def _register_sources(session: Any) -> None:
    from jobs.spark_sources import DorisDataSource, SnapshotChunkDataSource

    session.dataSource.register(SnapshotChunkDataSource)
    session.dataSource.register(DorisDataSource)


def _ship_code(session: Any, remote: bool) -> None:
    """Executors on a cluster may not have Tidemark installed: send ``cdc_core`` and ``jobs``."""
    root = Path(__file__).resolve().parent.parent
    scratch = tempfile.mkdtemp(prefix="tidemark-code-")
    # The driver serves the file to executors from this path for the session's life; removed when
    # the process exits, so runs leave nothing behind on the launching machine's disk.
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    archive = Path(scratch) / "tidemark_code.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in ("cdc_core", "jobs"):
            for path in (root / package).rglob("*.py"):
                zf.write(path, path.relative_to(root))
    if remote:
        session.addArtifacts(str(archive), pyfile=True)
    else:
        session.sparkContext.addPyFile(str(archive))


def spark_context(session: Any) -> Any:
    """The session's SparkContext, or None for a Spark Connect session (it has none)."""
    try:
        return session.sparkContext
    except Exception:  # noqa: BLE001 - Connect raises on the attribute
        return None


def activate_in_thread(session: Any) -> None:
    """Make ``session`` the JVM thread's active session.

    A job started from a driver thread other than the one that created the session would not
    find Python data sources registered on it (the write path looks them up through the active
    session, which is thread-local in the JVM). Spark Connect sessions need nothing.
    """
    jvm = getattr(session, "_jvm", None)
    jsession = getattr(session, "_jsparkSession", None)
    if jvm is not None and jsession is not None:
        jvm.org.apache.spark.sql.SparkSession.setActiveSession(jsession)
