"""Spark on localhost from the installed PySpark: a standalone cluster (one master, one worker)
and a Spark Connect server.

They show that Tidemark's jobs run on a real cluster by configuration alone: the same job, with
``tidemark.spark.master: spark://127.0.0.1:<port>`` or ``tidemark.spark.remote: sc://127.0.0.1:<port>``.
Started with ``spark-class`` / ``spark-submit`` as Spark's own scripts would, each process in its own
session so it can be stopped as a group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from devstack.procs import free_port, port_open, wait_gone


def _spark_home() -> Path:
    import pyspark  # the installed PySpark ships the jars and bin/spark-class

    return Path(pyspark.__file__).parent


@dataclass
class SparkStandaloneCluster:
    base_dir: Path
    host: str = "127.0.0.1"
    worker_cores: int = 2
    worker_memory: str = "2g"
    master_port: int = field(default_factory=free_port)
    master_ui_port: int = field(default_factory=free_port)
    worker_ui_port: int = field(default_factory=free_port)
    _procs: list[subprocess.Popen] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://{self.host}:{self.master_port}"

    def _env(self) -> dict[str, str]:
        home = _spark_home()
        return {
            **os.environ,
            "SPARK_HOME": str(home),
            "SPARK_LOCAL_IP": self.host,
            "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
            "SPARK_LOG_DIR": str(self.base_dir),
            "SPARK_WORKER_DIR": str(self.base_dir / "work"),
        }

    def _spawn(self, name: str, *args: str) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.base_dir / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            [str(_spark_home() / "bin" / "spark-class"), *args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=self._env(), start_new_session=True,
        )
        log.close()
        self._procs.append(proc)

    def start(self, timeout_s: float = 90.0) -> str:
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", self.host,
                    "--port", str(self.master_port), "--webui-port", str(self.master_ui_port))
        self._wait(lambda: port_open(self.host, self.master_port), timeout_s, "master")
        self._spawn("worker", "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", self.host,
                    "--cores", str(self.worker_cores), "--memory", self.worker_memory,
                    "--webui-port", str(self.worker_ui_port), "--work-dir", str(self.base_dir / "work"))
        self._wait(self._worker_registered, timeout_s, "worker")
        return self.master_url

    def _worker_registered(self) -> bool:
        log = self.base_dir / "worker.log"
        return log.exists() and "Successfully registered with master" in log.read_text(errors="replace")

    def _wait(self, ready, timeout_s: float, what: str) -> None:  # noqa: ANN001
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            if any(p.poll() is not None for p in self._procs):
                break
            time.sleep(0.3)
        tail = (self.base_dir / f"{what}.log").read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"Spark standalone {what} did not start; log tail:\n{tail}")

    def stop(self) -> None:
        for proc in reversed(self._procs):
            _stop_group(proc)
        self._procs.clear()


def _stop_group(proc: subprocess.Popen) -> None:
    """TERM the process's session, KILL it after 20 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        if not wait_gone(proc.pid, 20):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@dataclass
class SparkConnectServer:
    """A Spark Connect server on localhost from the installed PySpark (its driver runs ``master``).

    Shows the ``tidemark.spark.remote: sc://…`` path: the client process holds no SparkContext,
    and Tidemark's code reaches the server's Python workers as artifacts.
    """

    base_dir: Path
    host: str = "127.0.0.1"
    master: str = "local[1,4]"
    port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    _proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    def start(self, timeout_s: float = 120.0) -> str:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        home = _spark_home()
        env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOCAL_IP": self.host,
               "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable)}
        log_path = self.base_dir / "connect.log"
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
        self._proc = subprocess.Popen(
            [str(home / "bin" / "spark-submit"), "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
             "--name", "Spark Connect server", "--master", self.master,
             "--conf", f"spark.connect.grpc.binding.port={self.port}",
             "--conf", f"spark.connect.grpc.binding.address={self.host}",
             "--conf", f"spark.driver.host={self.host}", "--conf", f"spark.ui.port={self.ui_port}"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if port_open(self.host, self.port):
                return self.url
            if self._proc.poll() is not None:
                break
            time.sleep(0.3)
        tail = log_path.read_text(errors="replace")[-2000:]
        self.stop()
        raise RuntimeError(f"the Spark Connect server did not start; log tail:\n{tail}")

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            _stop_group(proc)
