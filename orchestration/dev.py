"""``tidemark dev PIPELINE.yaml...``: the Dagster webserver and daemon for these pipelines.

Runs ``dagster dev`` (webserver + daemon + code server) as a child in its own process group
with ordinary signal handling (a background job without job control inherits SIGINT=ignored,
and Dagster copies that onto SIGTERM; see machine-notes §6), forwards Ctrl-C / SIGTERM to it,
and kills the group if it does not stop in time, so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from orchestration.instance import dagster_home_for, prepare_home
from orchestration.pipelines import PIPELINES_ENV, PipelineHandle, load_handles

STOP_TIMEOUT_S = 30.0


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def dev_environment(handles: list[PipelineHandle], home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["DAGSTER_HOME"] = str(home)
    env[PIPELINES_ENV] = os.pathsep.join(str(h.path) for h in handles)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


def dagster_dev_command(host: str, port: int, working_dir: Path) -> list[str]:
    return [sys.executable, "-m", "dagster", "dev", "-m", "orchestration.definitions", "-a", "defs",
            "-h", host, "-p", str(port), "-d", str(working_dir)]


def wait_for_webserver(url: str, proc: subprocess.Popen, timeout_s: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if requests.get(f"{url}/server_info", timeout=2).ok:
                return True
        except requests.RequestException:
            pass
        time.sleep(0.5)
    return False


def stop_group(proc: subprocess.Popen, timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM dagster dev (it stops its webserver, daemon and code servers); then the group."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout_s)
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        proc.wait(10)


def print_guide(url: str, handles: list[PipelineHandle], home: Path) -> None:
    print(f"Dagster UI: {url}   (DAGSTER_HOME={home}; Ctrl-C stops it)", flush=True)
    for h in handles:
        print(f"  pipeline '{h.slug}' ({h.path}):", flush=True)
        print(f"    1. {url}/assets/{h.slug}/snapshot_splits → Materialize (plans the chunks)", flush=True)
        print(f"    2. {url}/assets/{h.slug}/snapshot_chunks → Materialize → 'All partitions' (the backfill)", flush=True)
        print(f"    3. the sensor {h.sensor_name} (running) then streams the binlog: watch "
              f"{url}/assets/{h.slug}/binlog_stream and its checks", flush=True)


def run_dev(paths: list[str], host: str = "127.0.0.1", port: int = 3000) -> int:
    handles = load_handles([Path(p) for p in paths])
    home = prepare_home(dagster_home_for(handles))
    url = f"http://{host}:{port}"
    proc = subprocess.Popen(
        dagster_dev_command(host, port, Path.cwd()), env=dev_environment(handles, home),
        start_new_session=True, preexec_fn=_default_signals,
    )
    stopping = False

    def forward(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        if wait_for_webserver(url, proc):
            print_guide(url, handles, home)
        elif proc.poll() is not None:
            print(f"tidemark dev: dagster dev exited with status {proc.returncode}", file=sys.stderr)
            return proc.returncode or 1
        return proc.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        stop_group(proc)
        if stopping:
            print("tidemark dev: stopped", flush=True)
