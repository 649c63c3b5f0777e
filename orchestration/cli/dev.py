"""``tidemark dev PIPELINE.yaml...``: the Dagster webserver and daemon for these pipelines.

``DagsterServices`` starts ``dagster-webserver`` and ``dagster-daemon run`` on the code location
``orchestration.definitions``, each in its own process group with ordinary signal handling: a
background job without job control inherits SIGINT=ignored and Dagster copies that onto SIGTERM
(so the ignored signal survives into the servers), which would make them unstoppable. ``stop`` sends SIGTERM to each group,
waits, and kills what is left, so no code server is orphaned. A process killed outright runs no
handler, so ``start`` also launches a watchdog (``orchestration/cli/dev_watchdog.py``) that does the
same stop once the process that started the services is gone, however it died. The end-to-end
tests and the freshness bench use the same class.

One code server serves both (``dagster code-server start``, its own process group), as ``dagster
dev`` does, and the two are pointed at it by a ``grpc_server`` workspace written into
DAGSTER_HOME. Left to themselves, each would start a code server of its own, and the daemon
reloads its workspace every 60 s (Dagster's ``RELOAD_WORKSPACE_INTERVAL``) by starting a fresh
code server and abandoning the old one, which shuts itself down 20 s later for want of
heartbeats, warning "No heartbeat received in 20 seconds, shutting down": a warning on the
terminal and a re-import of the code location every minute, for ever (issue 29, item 5). With a
server the daemon does not own, its reload re-reads the same server and starts no process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TextIO

import requests

from cdc_core.pipeline.service import PipelineService
from orchestration.cli.dev_logs import LogRelay
from orchestration.cli.dev_watchdog import group_alive
from orchestration.cli.event_batches import enable_event_batches
from orchestration.cli.instance import DagsterHome, dagster_home_for, prepare_home
from orchestration.defs.pipelines import PIPELINES_ENV, PipelineHandle, load_handles

STOP_TIMEOUT_S = 20.0
# Where ``tidemark dev`` keeps the webserver's and the daemon's output, under DAGSTER_HOME. Not
# ``logs``: that directory is Dagster's telemetry queue, which its webserver renames to
# ``.logs_queue``, posts to Dagster's telemetry server and deletes.
DEV_LOG_DIR = "dev_logs"
CODE_LOCATION = ["-m", "orchestration.definitions", "-a", "defs"]
# The code location's name, as in workspace.yaml (what `dagster dev -w workspace.yaml` shows too).
LOCATION_NAME = "tidemark"
WORKSPACE_FILE = "dev_workspace.yaml"
CODE_SERVER_READY_S = 180.0


def _default_signals() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _script(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name


def dev_environment(pipeline_paths: list[Path], home: Path, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["DAGSTER_HOME"] = str(home)
    env[PIPELINES_ENV] = os.pathsep.join(str(Path(p).resolve()) for p in pipeline_paths)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    enable_event_batches(env)  # the runs these processes execute write asset events in batches
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


class DagsterServices:
    """dagster-webserver and dagster-daemon for some pipeline files, started and stopped cleanly."""

    def __init__(self, pipeline_paths: list[Path], home: Path | DagsterHome, host: str = "127.0.0.1", port: int = 3000,
                 webserver: bool = True, daemon: bool = True, log_dir: Path | None = None,
                 env: dict[str, str] | None = None, working_dir: Path | None = None,
                 terminal: TextIO | None = None, verbose: bool = False):
        """``log_dir``: each process's output goes to ``<log_dir>/<name>.log`` (else it is inherited);
        with ``terminal`` too, its warnings and errors (``verbose``: all of it) are also copied there
        (``orchestration/cli/dev_logs.py``)."""
        self.home = prepare_home(home if isinstance(home, DagsterHome) else Path(home))
        self.host, self.port = host, port
        self.want_webserver, self.want_daemon = webserver, daemon
        self.log_dir = Path(log_dir) if log_dir else None
        self.env = dev_environment(pipeline_paths, self.home, env)
        self.working_dir = Path(working_dir or Path.cwd())
        self.terminal, self.verbose = terminal, verbose
        self.procs: dict[str, subprocess.Popen] = {}
        self.relays: list[LogRelay] = []
        self.watchdog: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def _spawn(self, name: str, cmd: list[str]) -> None:
        out: int | object = None
        if self.log_dir is not None and self.terminal is not None:
            proc = subprocess.Popen(
                cmd, env=self.env, cwd=self.working_dir, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_default_signals,
            )
            self.procs[name] = proc
            relay = LogRelay(name, proc.stdout, self.log_dir / f"{name}.log", self.terminal, verbose=self.verbose)
            relay.start()
            self.relays.append(relay)
            return
        if self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            out = open(self.log_dir / f"{name}.log", "ab")  # noqa: SIM115 - handed to the child
        self.procs[name] = subprocess.Popen(
            cmd, env=self.env, cwd=self.working_dir, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT if out is not None else None,
            start_new_session=True, preexec_fn=_default_signals,
        )
        if out is not None:
            out.close()

    def init_storage(self) -> None:
        """Create the instance's SQLite databases once, here: the daemon and the webserver each
        create missing ones on start, and racing each other they fail ("alembic_version already exists")."""
        # dagster is imported when needed: this module is on the CLI's path, and importing
        # dagster costs seconds that `tidemark --help` should not pay.
        from dagster import DagsterInstance

        with DagsterInstance.from_config(str(self.home)) as instance:
            instance.get_runs(limit=1)
            instance.get_dynamic_partitions("tidemark_init")
            instance.all_instigator_state()

    def start(self) -> DagsterServices:
        self.init_storage()
        if not (self.want_daemon or self.want_webserver):
            return self
        workspace = self._start_code_server()
        try:
            if self.want_daemon:
                # Dagster's daemon CLI, its backfill daemon waking every 2 s (orchestration/cli/dagster_daemon.py)
                self._spawn("daemon", [sys.executable, "-m", "orchestration.cli.dagster_daemon", "run",
                                       "-w", str(workspace)])
            if self.want_webserver:
                self._spawn("webserver", [_script("dagster-webserver"), "-h", self.host, "-p", str(self.port),
                                          "-w", str(workspace)])
        finally:
            self._start_watchdog()
        return self

    def _start_code_server(self) -> Path:
        """The one code server the daemon and the webserver share; the workspace file naming it."""
        import yaml

        # below the kernel's ephemeral range: a port from bind(0) may be taken as the local port of
        # any outbound connection before the code server binds it (devstack/procs.py)
        from devstack.procs import free_port

        port = free_port("127.0.0.1")
        self._spawn("code_server", [_script("dagster"), "code-server", "start", "-h", "127.0.0.1", "-p", str(port),
                                    "--location-name", LOCATION_NAME, *CODE_LOCATION, "-d", str(self.working_dir)])
        workspace = self.home / WORKSPACE_FILE
        workspace.write_text(yaml.safe_dump({"load_from": [{"grpc_server": {
            "host": "127.0.0.1", "port": port, "location_name": LOCATION_NAME}}]}))
        try:
            self._wait_code_server(port)
        except BaseException:
            self._start_watchdog()
            raise
        return workspace

    def _wait_code_server(self, port: int, timeout_s: float = CODE_SERVER_READY_S) -> None:
        """Until the code server answers a ping (the webserver and the daemon load from it once, at start)."""
        from dagster._grpc.client import DagsterGrpcClient

        client = DagsterGrpcClient(port=port, host="127.0.0.1")
        deadline = time.monotonic() + timeout_s
        proc = self.procs["code_server"]
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the Dagster code server exited early ({proc.returncode}); "
                                   + (f"see {self.log_dir}/code_server.log" if self.log_dir else "see its output"))
            try:
                client.ping("")
                return
            except Exception:  # noqa: BLE001 - not listening yet: Dagster's client raises its own errors
                time.sleep(0.5)
        raise RuntimeError(f"the Dagster code server did not answer on 127.0.0.1:{port} within {timeout_s:.0f} s")

    def _start_watchdog(self) -> None:
        """The guard that stops the groups if this process is killed without running ``stop``."""
        groups = [str(p.pid) for p in self.procs.values()]
        if not groups:
            return
        self.watchdog = subprocess.Popen(
            [sys.executable, "-m", "orchestration.cli.dev_watchdog", str(os.getpid()), str(STOP_TIMEOUT_S), *groups],
            env=self.env, cwd=self.working_dir, stdin=subprocess.DEVNULL, start_new_session=True,
        )

    def wait_ready(self, timeout_s: float = 180.0) -> None:
        """Until the webserver answers and its code location loaded (or a process died)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
            if dead:
                raise RuntimeError(f"dagster {', '.join(dead)} exited early ({dead}); "
                                   + (f"see {self.log_dir}" if self.log_dir else "see its output above"))
            if not self.want_webserver or self._location_loaded():
                return
            time.sleep(0.5)
        raise RuntimeError(f"the Dagster webserver did not come up on {self.url} within {timeout_s:.0f} s")

    def _location_loaded(self) -> bool:
        query = "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus " \
                "locationOrLoadError { __typename ... on PythonError { message } } } } } }"
        try:
            body = requests.post(f"{self.url}/graphql", json={"query": query}, timeout=5).json()
        except (requests.RequestException, ValueError):
            return False
        entries = body.get("data", {}).get("workspaceOrError", {}).get("locationEntries", [])
        for entry in entries:
            error = entry.get("locationOrLoadError") or {}
            if error.get("__typename") == "PythonError":
                raise RuntimeError(f"the code location failed to load: {error.get('message', '').strip()}")
        return bool(entries) and all(e["loadStatus"] == "LOADED" and e.get("locationOrLoadError") for e in entries)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
        for proc in self.procs.values():
            # the group may still hold code servers even when the leader has exited; an empty
            # group's number may already be someone else's
            if group_alive(proc.pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(10)
        self.procs.clear()
        for relay in self.relays:  # the pipes end with the groups; the last lines reach the files
            relay.join(5)
        self.relays.clear()
        if self.watchdog is not None:  # it exits by itself once the groups are gone
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.watchdog.wait(5)
            if self.watchdog.poll() is None:
                self.watchdog.kill()
                self.watchdog.wait()
            self.watchdog = None

    def __enter__(self) -> DagsterServices:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _snapshot_done(handle: PipelineHandle) -> bool:
    try:
        service = PipelineService(handle.definition)
    except Exception:  # noqa: BLE001 - only a hint for the guide; the UI shows the real state
        return False
    try:
        return service.snapshot_done()
    finally:
        service.close()


def print_guide(url: str, handles: list[PipelineHandle], home: Path) -> None:
    print(f"\nDagster UI: {url}   (DAGSTER_HOME={home}; Ctrl-C stops it)", flush=True)
    for h in handles:
        print(f"  pipeline '{h.slug}' ({h.path}):", flush=True)
        if _snapshot_done(h):
            print(f"    the snapshot is committed: {url}/assets/{h.slug}/snapshot_chunks shows its chunks", flush=True)
        else:
            print(f"    1. {url}/assets/{h.slug}/snapshot_splits → Materialize: plans the chunks", flush=True)
            print(f"    2. {url}/assets/{h.slug}/snapshot_chunks → Materialize → all partitions: the backfill", flush=True)
        print(f"    the sensor {h.sensor_name} (running) streams the binlog: change rows in MySQL and watch "
              f"{url}/assets/{h.slug}/binlog_stream and its checks", flush=True)
        print(f"    ({url}/automation: the sensor, and {h.schedule_name}, off by default; {url}/runs: every run)",
              flush=True)


def run_dev(paths: list[str], host: str = "127.0.0.1", port: int = 3000, verbose: bool = False) -> int:
    """Start the webserver and the daemon, print the guide, and run until Ctrl-C (or a TERM, or
    the parent's exit). Their output goes to ``<DAGSTER_HOME>/dev_logs/{daemon,webserver}.log``;
    the terminal gets its warnings and errors, or everything with ``verbose``."""
    parent = os.getppid()
    handles = load_handles([Path(p) for p in paths])
    where = dagster_home_for(handles)
    print(f"tidemark dev: {where.describe()}", flush=True)
    home = prepare_home(where)
    log_dir = home / DEV_LOG_DIR
    services = DagsterServices([h.path for h in handles], where, host=host, port=port, log_dir=log_dir,
                               terminal=sys.stderr, verbose=verbose)
    shown = "all of their output" if verbose else "their warnings and errors (-v: everything)"
    print(f"tidemark dev: the Dagster daemon and webserver log to {log_dir}/daemon.log and webserver.log; "
          f"{shown} also show here", flush=True)
    previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        services.start()
        services.wait_ready()
        print_guide(services.url, handles, services.home)
        while all(p.poll() is None for p in services.procs.values()):
            if os.getppid() != parent:
                # Whoever started us (``make demo``, a supervisor) is gone — a TERM sent to it alone
                # never reaches us. Stop rather than leave the UI and the daemon running unowned.
                print("tidemark dev: the parent process exited; stopping", file=sys.stderr, flush=True)
                return 0
            time.sleep(1.0)
        dead = {n: p.returncode for n, p in services.procs.items() if p.poll() is not None}
        print(f"tidemark dev: dagster {', '.join(dead)} exited ({dead}); stopping", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ntidemark dev: stopping the webserver and the daemon...", flush=True)
        return 0
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        services.stop()


def _interrupt(signum: int, _frame: object) -> None:
    raise KeyboardInterrupt
