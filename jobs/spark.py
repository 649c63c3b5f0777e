"""One Spark session per process, configured from the pipeline file.

A session costs ~10 s to start on this kind of machine, so nothing creates one until a job needs
it, and every job in the process reuses it. ``local[N]`` is the default (N = the pipeline's
parallelism, at least 1, at most the cores); ``tidemark.spark.master`` points at a cluster
(``spark://host:7077``, ``yarn``, ``k8s://...``) and ``tidemark.spark.remote`` at Spark Connect
(``sc://host:15002``). ``tidemark.spark.conf.*`` passes any Spark setting through.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_session: Any = None


def prepare_environment() -> None:
    """What PySpark needs here: workers must run this venv's Python (it has pyarrow), and the
    driver must bind to loopback rather than a name that resolves elsewhere."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
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
    conf.update(dict(getattr(options, "spark_conf", {}) or {}))
    return {"master": master, "remote": remote, "conf": conf}


def get_spark(pipeline: Any | None = None, app_name: str = "tidemark") -> Any:
    """The process's Spark session, created on first use."""
    global _session
    with _lock:
        if _session is not None and not _is_stopped(_session):
            return _session
        prepare_environment()
        from pyspark.sql import SparkSession

        settings = session_settings(pipeline)
        builder = SparkSession.builder.appName(app_name)
        if settings["remote"]:
            builder = builder.remote(settings["remote"])
        else:
            builder = builder.master(settings["master"])
        for key, value in settings["conf"].items():
            builder = builder.config(key, value)
        _session = builder.getOrCreate()
        if not settings["remote"]:
            _session.sparkContext.setLogLevel("WARN")
        if not str(settings["master"] or "").startswith("local"):
            _ship_code(_session, bool(settings["remote"]))
        _register_sources(_session)
        return _session


def _register_sources(session: Any) -> None:
    from jobs.doris_writer import DorisDataSource
    from jobs.snapshot_source import SnapshotChunkDataSource

    session.dataSource.register(SnapshotChunkDataSource)
    session.dataSource.register(DorisDataSource)


def _ship_code(session: Any, remote: bool) -> None:
    """Executors on a cluster may not have Tidemark installed: send ``cdc_core`` and ``jobs``."""
    root = Path(__file__).resolve().parent.parent
    archive = Path(tempfile.mkdtemp(prefix="tidemark-code-")) / "tidemark_code.zip"
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


def _is_stopped(session: Any) -> bool:
    context = spark_context(session)
    return context is not None and context._jsc is None  # noqa: SLF001 - the only cheap liveness check


def stop_spark() -> None:
    global _session
    with _lock:
        if _session is not None:
            _session.stop()
            _session = None


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
