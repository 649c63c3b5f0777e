"""The snapshot as a user runs it: ``tidemark run PIPELINE --once`` and a daemon-executed backfill
of ``snapshot_chunks``, each beside the ``mariadb --quick`` scan of the same table in the same run.

    .venv/bin/python bench/snapshot_e2e.py [--rows 1000000 5000000] [--no-daemon] [--profile] [--key varchar] [--parity-ab] [--naive] [--spark-ab]
        [--chunk-size N (default: the pipeline's, sized by row width)] [--parallelism 2] [--out bench/results/snapshot_e2e-<date>.json]

For each row count: a private MariaDB and Doris stand-in on free ports, the table
``shop.t(id BIGINT PK, name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3))`` filled in MariaDB,
then, measured in the same run (``--key varchar``: the key is ``k VARCHAR(32)``, 20 hex digits, a dash and
the row's number, in ``utf8mb4_general_ci``; the text-keyed table of issue 30):

* the limit: ``mariadb --quick -e 'SELECT * FROM shop.t' > /dev/null`` over TCP (best of 2);
* ``tidemark run PIPELINE --once`` as a subprocess, wall time from exec to exit, its phases
  (``--timings``: planning, Spark start, read + load, commits, parity, binlog) and the peak RSS of
  each process it and the servers ran (sampled every 0.2 s from /proc through psutil), and its plan:
  the chunks (each a Dagster partition) beside ``tidemark.snapshot.max-partitions``, their rows;
  and the verdicts of its checks (chunk and table parity: the run exits 0 when they fail);
* (``--spark-ab``) the same ``tidemark run --once`` by a fresh pipeline into an empty Doris on Spark's
  local mode (``tidemark.snapshot.in-process-rows: 0``) instead of the local worker processes;
* (``--naive``) the naive reload a user might script (``bench/naive_reload.py``: pandas ``read_sql``,
  CSV, one stream load) of the same table, and ``tidemark run``'s ratio to it;
* (5M rows and more, or any with ``--parity-ab``; never with ``--no-parity-ab``) ``tidemark run --once --no-checks`` by a fresh
  pipeline state into an empty Doris: what the parity check costs, its own step plus what it added
  to the commits, beside the plain difference of the two runs' wall times (``parity_cost``);
* (unless ``--no-daemon``) the same snapshot by a fresh pipeline state, launched as a UI backfill
  of every ``snapshot_chunks`` partition (Dagster's GraphQL ``launchPartitionBackfill``) and
  executed by ``dagster-daemon`` + the webserver under ``tidemark dev``: from the launch to the
  backfill's COMPLETED, then its ratio to the ``tidemark run`` figure.

``--ab TREE_A TREE_B [--pairs N]``: instead of the above, ``tidemark run --once`` of the code in two
source trees (a checkout of the old commit and of the new), alternated A B A B on the same filled
table, each by a fresh pipeline into an empty Doris: its wall and the CPU seconds of the command and
every process under it (``perf stat -e task-clock`` when perf is there, else the reaped children's
rusage), and its ``--timings`` phases. CPU is what compares on a machine others load.

Doris is checked to hold every row after each. ``--profile`` runs ``tidemark run`` under
``py-spy record --subprocesses`` and writes a speedscope file next to the JSON.
Prints a markdown table and writes the whole report as JSON (``bench/results/``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.report import split_phases  # noqa: E402
from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.pipeline_file import write_pipeline  # noqa: E402
from devstack.procs import free_port, two_free_ports  # noqa: E402
from devstack.stack import DorisStandIn  # noqa: E402

VENV_BIN = Path(sys.executable).parent
TARGET_5M_S = 40.0
NAIVE_MAX_ROWS = 1_000_000
"""``--naive`` reloads at most this many rows: pandas holds the whole table in memory (issue 30 compares at 1M)."""


def private_stack(work: Path, doris_dir: Path | None = None) -> tuple[MariaDBServer, DorisStandIn]:
    """A private MariaDB (under ``work``) and Doris stand-in (under ``doris_dir``, else ``work``) on
    free ports, both started; the caller stops them. A stand-in that fails to start stops the MariaDB."""
    mysql = MariaDBServer(work / "mysql", port=free_port())
    fe, be = two_free_ports()
    doris = DorisStandIn((doris_dir or work) / "doris", fe_port=fe, be_port=be)
    mysql.start()
    try:
        doris.start()
    except BaseException:
        mysql.stop()
        raise
    return mysql, doris


def fill(mysql: MariaDBServer, rows: int, key: str = "bigint") -> int:
    batches = max(1, rows // 100_000)
    per = rows // batches
    key_column = ("k VARCHAR(32) COLLATE utf8mb4_general_ci PRIMARY KEY" if key == "varchar"
                  else "id BIGINT PRIMARY KEY")
    mysql.root_sql(
        f"DROP DATABASE IF EXISTS shop; CREATE DATABASE shop; CREATE TABLE shop.t ({key_column}, "
        "name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3)) DEFAULT CHARSET utf8mb4;"
        + "".join(
            "INSERT INTO shop.t SELECT "
            + (f"CONCAT(LEFT(MD5(seq + {b * per}), 20), '-', seq + {b * per})" if key == "varchar" else f"seq + {b * per}")
            + f", CONCAT('customer-', seq + {b * per}, '-', MD5(seq)), "
            f"(seq % 100000) / 100, '2026-01-01' + INTERVAL (seq + {b * per}) SECOND FROM shop.seq_1_to_{per};"
            for b in range(batches)
        )
        + "ANALYZE TABLE shop.t;"
    )
    return batches * per


def settle(mysql: MariaDBServer, limit_s: float = 180.0) -> float:
    """Wait until InnoDB has written the fill's dirty pages and purged its undo history, so that
    every run measured afterwards meets the same quiet server (the first run after a 5M-row fill
    otherwise shares the cores with InnoDB's background flushing and purge). Seconds waited."""
    t0 = time.perf_counter()
    pct = mysql.root_sql("SELECT @@innodb_max_dirty_pages_pct").strip()
    mysql.root_sql("SET GLOBAL innodb_max_dirty_pages_pct = 0")
    try:
        while time.perf_counter() - t0 < limit_s:
            dirty, history = mysql.root_sql(
                "SELECT (SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                "WHERE VARIABLE_NAME = 'INNODB_BUFFER_POOL_PAGES_DIRTY'), "
                "(SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
                "WHERE VARIABLE_NAME = 'INNODB_HISTORY_LIST_LENGTH')").split()
            if int(dirty) == 0 and int(history) < 100:
                break
            time.sleep(0.5)
    finally:
        mysql.root_sql(f"SET GLOBAL innodb_max_dirty_pages_pct = {pct}")
    return time.perf_counter() - t0


def c_client_scan(port: int) -> float:
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        subprocess.run(["mariadb", "--no-defaults", "--quick", "-h127.0.0.1", f"-P{port}", "-ucdc", "-pcdc", "-e",
                        "SELECT * FROM shop.t"], stdout=subprocess.DEVNULL, check=True)
        best = min(best, time.perf_counter() - t0)
    return best


def kind_of(proc: psutil.Process, kinds: dict[str, str] | None = None) -> str | None:
    """What a process is, from its command line; ``kinds`` (substring → kind) is tried first."""
    try:
        cmd = " ".join(proc.cmdline())
    except (psutil.Error, OSError):
        return None
    if not cmd:
        return None
    for needle, kind in (kinds or {}).items():
        if needle in cmd:
            return kind
    if "mariadbd" in cmd:
        return "mariadbd"
    if "multiprocessing" in cmd and "spawn_main" in cmd:
        return "local_workers"  # jobs/local_workers.py: Spark's fused tasks without Spark
    if "devstack.doris" in cmd:
        return "doris_standin"
    if "java" in cmd:
        return "spark_jvm"
    if "pyspark" in cmd:
        return "spark_python_workers"
    if "dagster-daemon" in cmd or "dagster_daemon" in cmd or "daemon" in cmd.split()[-3:]:
        return "dagster_daemon"
    if "dagster-webserver" in cmd or "dagster_webserver" in cmd:
        return "dagster_webserver"
    if "dagster" in cmd and "api" in cmd:
        return "dagster_code_server_or_run"
    if "tidemark" in cmd:
        return "tidemark"
    return None


class MemorySampler(threading.Thread):
    """Peak RSS per kind of process (summed over processes of one kind at each sample), over the
    given processes and their descendants only (other work on the machine is not counted), and
    the CPU seconds each kind used meanwhile (a process's last sample before it ended)."""

    def __init__(self, roots: list[int | None], interval_s: float = 0.2, kinds: dict[str, str] | None = None):
        super().__init__(daemon=True)
        self.roots = [r for r in roots if r]
        self.kinds = kinds
        self.interval_s = interval_s
        self.peak: dict[str, int] = {}
        self.cpu_first: dict[int, float] = {}
        self.cpu_last: dict[int, tuple[str, float]] = {}
        self.halt = threading.Event()

    def processes(self) -> list[psutil.Process]:
        found = []
        for pid in self.roots:
            try:
                root = psutil.Process(pid)
                found += [root, *root.children(recursive=True)]
            except (psutil.Error, OSError):  # gone meanwhile
                continue
        return found

    def run(self) -> None:
        while not self.halt.is_set():
            now: dict[str, int] = {}
            for proc in self.processes():
                kind = kind_of(proc, self.kinds)
                if kind is None:
                    continue
                try:
                    now[kind] = now.get(kind, 0) + proc.memory_info().rss
                    times = proc.cpu_times()
                except (psutil.Error, OSError):
                    continue
                used = times.user + times.system + times.children_user + times.children_system
                self.cpu_first.setdefault(proc.pid, used)
                self.cpu_last[proc.pid] = (kind, used)  # its last kind: spark-submit's shell becomes the JVM
            for kind, rss in now.items():
                self.peak[kind] = max(self.peak.get(kind, 0), rss)
            self.halt.wait(self.interval_s)

    def stop(self) -> dict[str, float]:
        self.halt.set()
        self.join()
        return {k: round(v / 2**20, 1) for k, v in sorted(self.peak.items())}

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds per kind between each process's first and last sample (a server's earlier
        work is not counted; a process that lived less than one interval is missed)."""
        out: dict[str, float] = {}
        for pid, (kind, last) in self.cpu_last.items():
            out[kind] = out.get(kind, 0.0) + last - self.cpu_first[pid]
        return {k: round(v, 1) for k, v in sorted(out.items())}


def pipeline_file(work: Path, name: str, mysql: MariaDBServer, doris: DorisStandIn, args: argparse.Namespace,
                  pipeline: dict | None = None) -> Path:
    return write_pipeline(work / f"{name}.yaml", host="127.0.0.1", port=mysql.port, fe=doris.fe_http, tables="shop.t",
                          name=name, state_dir=work / f"state-{name}", server_id="5400-5420",
                          source={"scan.incremental.snapshot.chunk.size": args.chunk_size} if args.chunk_size else None,
                          parallelism=args.parallelism, pipeline=pipeline)


def doris_count(doris: DorisStandIn, table: str = "t") -> int:
    body = requests.post(f"http://{doris.fe_http}/api/query/default_cluster/shop", auth=("root", ""), timeout=60,
                         json={"stmt": f"SELECT COUNT(*) FROM {table}"}).json()
    return int(body["data"]["data"][0][0])


_compiled = False


def compile_sources() -> None:
    """Byte-compile Tidemark's packages once, as ``pip install`` does: a shell with
    ``PYTHONDONTWRITEBYTECODE`` set (this machine's sessions) otherwise made every measured run
    compile Tidemark's sources anew (~5 s of the main process's CPU on a loaded host, py-spy),
    a cost no installed copy pays, while the peers' libraries come compiled."""
    global _compiled
    if not _compiled:
        subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0",
                        *(str(ROOT / p) for p in ("cdc_core", "jobs", "orchestration", "devstack"))],
                       cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        _compiled = True


def env() -> dict[str, str]:
    return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable, "PYTHONPATH": str(ROOT)}


def run_sampled(cmd: list[str], servers: list[int], *, env: dict[str, str] | None = None,
                kinds: dict[str, str] | None = None,
                ) -> tuple[subprocess.CompletedProcess, float, dict[str, float], dict[str, float]]:
    """Run ``cmd`` to its end: its result, its wall seconds from exec to exit, and the peak RSS and
    CPU seconds per process kind of it, its children and ``servers`` meanwhile."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = MemorySampler([proc.pid, *servers], kinds=kinds)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    memory = sampler.stop()
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), wall, memory, sampler.cpu_seconds()


def run_once(work: Path, pipeline: Path, profile: Path | None, servers: list[int], *, checks: bool = True) -> dict:
    timings = work / "timings.json"
    cmd = [str(VENV_BIN / "tidemark"), "run", str(pipeline), "--once", "--timings", str(timings)]
    if not checks:
        cmd.append("--no-checks")
    if profile is not None:
        cmd = [str(VENV_BIN / "py-spy"), "record", "--subprocesses", "--rate", "50", "--format", "speedscope",
               "-o", str(profile), "--", *cmd]
    done, wall, memory, cpu = run_sampled(cmd, servers, env=env())
    if done.returncode != 0:
        raise SystemExit(f"tidemark run failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    state = work / f"state-{pipeline.stem}"
    return {"wall_s": round(wall, 2), "phases_s": json.loads(timings.read_text()) if timings.exists() else {},
            "steps_s": step_seconds(state / "dagster"), "peak_rss_mib": memory, "cpu_s": cpu,
            "plan": told(plan_summary, pipeline), "checks": told(check_verdicts, state / "dagster")}


def told(read: Callable[[Path], dict], path: Path) -> dict:
    """``read(path)``, or the error it raised: a report's detail never loses a long run's figures."""
    try:
        return read(path)
    except Exception as exc:  # noqa: BLE001 - any failure is reported in its place
        return {"error": f"{type(exc).__name__}: {exc}"}


def check_verdicts(dagster_home: Path) -> dict[str, dict[str, int]]:
    """How the run's asset checks came out (chunk_parity once per snapshot run, table_parity at the
    end, no_pending_transactions): ``tidemark run --once`` exits 0 when a non-blocking parity
    check fails, so the bench reads the verdicts from the runs' events."""
    from dagster import DagsterEventType, DagsterInstance

    with DagsterInstance.from_config(str(dagster_home)) as instance:
        # "": the run-less evaluations (table_parity implied by the chunk checks: orchestration/cli/run_once.py)
        evaluations = [(data.check_name, data.passed) for run_id in [r.run_id for r in instance.get_runs()] + [""]
                       for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
                       if (data := entry.dagster_event.event_specific_data) is not None]
    return tally_checks(evaluations)


def tally_checks(evaluations: list[tuple[str, bool]]) -> dict[str, dict[str, int]]:
    """Passed and failed evaluations per check name."""
    out: dict[str, dict[str, int]] = {}
    for name, passed in evaluations:
        counts = out.setdefault(name, {"passed": 0, "failed": 0})
        counts["passed" if passed else "failed"] += 1
    return out


def plan_summary(pipeline: Path) -> dict:
    """What the run planned, beside the partition cap it planned under: the chunks (each a Dagster
    partition), the rows per chunk and the server's row estimate the plan started from, and the
    planner's notes (chunk sizes grown to stay under the cap say so there)."""
    from cdc_core.config.pipeline import load_pipeline
    from cdc_core.state.keys import CHUNK_SIZES, PLAN_NOTES, TABLE_ROWS
    from cdc_core.state.store import StateStore

    definition = load_pipeline(pipeline)
    store = StateStore.open_existing(definition)
    if store is None:
        return {}
    try:
        with store.transaction(readonly=True) as tx:
            chunks = tx.chunks()
            sizes, estimates, notes = CHUNK_SIZES.get_or(tx, {}), TABLE_ROWS.get_or(tx, {}), PLAN_NOTES.get_or(tx, [])
    finally:
        store.close()
    return {"chunks": len(chunks), "max_partitions": definition.pipeline.snapshot_max_partitions,
            "chunk_rows": sizes, "table_rows_estimate": estimates, "notes": notes,
            "rows_loaded": sum(c.rows or 0 for c in chunks)}


def step_seconds(dagster_home: Path) -> dict[str, float]:
    """Each step's wall time over the runs in a pipeline's Dagster home (Dagster's step stats: its
    start to its end, the step's events included), by step key without the pipeline's prefix."""
    from dagster import DagsterInstance

    with DagsterInstance.from_config(str(dagster_home)) as instance:
        return sum_steps([(stats.step_key, stats.start_time, stats.end_time)
                          for run in instance.get_runs() for stats in instance.get_run_step_stats(run.run_id)])


def sum_steps(stats: list[tuple[str, float | None, float | None]]) -> dict[str, float]:
    """Seconds per step key (``pipeline__step``: the prefix dropped), summed over every run that ran
    the step: ``tidemark run --once`` loads a big table in several snapshot runs (a partition range
    of chunks each), and each run's ``chunk_parity`` is part of what the checks cost, not the last
    run's alone. A step that has not both started and ended is left out."""
    out: dict[str, float] = {}
    for key, start, end in stats:
        if start is not None and end is not None:
            name = key.split("__", 1)[-1]
            out[name] = round(out.get(name, 0.0) + end - start, 3)
    return out


def daemon_backfill(work: Path, pipeline: Path, name: str, servers: list[int]) -> dict:
    """``tidemark dev``; plan the splits (materialize snapshot_splits), then a backfill of every
    snapshot_chunks partition, as the UI launches it; time from the launch to COMPLETED."""
    from devstack.dagster_graphql import DagsterApi

    port = free_port()
    log = (work / f"dev-{name}.log").open("w")
    dev = subprocess.Popen([str(VENV_BIN / "tidemark"), "dev", str(pipeline), "--port", str(port)], env=env(),
                           cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    sampler = MemorySampler([dev.pid, *servers])
    try:
        api = DagsterApi(f"http://127.0.0.1:{port}")
        deadline = time.monotonic() + 180
        while True:
            try:
                if requests.get(f"{api.url}/server_info", timeout=5).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline or dev.poll() is not None:
                raise SystemExit(f"tidemark dev did not come up; see {log.name}")
            time.sleep(0.5)
        run_id = api.launch_job(f"{name}_splits_job")
        if api.wait_run(run_id, timeout_s=600) != "SUCCESS":
            raise SystemExit(f"planning the splits failed; see {log.name}")
        sampler.start()
        t0 = time.perf_counter()
        launched = time.time()
        backfill_id = api.backfill_all_partitions([name, "snapshot_chunks"], title="bench")
        status = api.wait_backfill(backfill_id, timeout_s=3600)
        wall = time.perf_counter() - t0
        memory = sampler.stop()
        if status not in ("COMPLETED", "COMPLETED_SUCCESS"):
            raise SystemExit(f"the backfill ended {status}; see {log.name}")
        return {"wall_s": round(wall, 2), "peak_rss_mib": memory, "cpu_s": sampler.cpu_seconds(),
                **backfill_phases(api.backfill_timeline(backfill_id), launched, launched + wall)}
    finally:
        os.killpg(dev.pid, signal.SIGINT)
        try:
            dev.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(dev.pid, signal.SIGKILL)
        log.close()


def backfill_phases(timeline: dict, launched: float, completed: float) -> dict:
    """Where a backfill's time went: waiting for the backfill daemon to create its runs (it wakes
    every 30 s, a constant of Dagster's), the runs themselves (queued, then executing: the run
    process, Spark, the chunks, the commit hook, the checks), and waiting for the daemon to mark
    the backfill done after the last run ended."""
    runs = timeline.get("runs") or []
    if not runs:
        return {}
    created = min(r["creationTime"] for r in runs)
    started = min(r["startTime"] or created for r in runs)
    ended = max(r["endTime"] or completed for r in runs)
    return {
        "runs": len(runs),
        "launch_to_runs_ended_s": round(ended - launched, 2),
        "phases_s": {
            "daemon_creates_runs": round(created - launched, 2),
            "queued_and_starting": round(started - created, 2),
            "runs_executing": round(ended - started, 2),
            "daemon_marks_completed": round(completed - ended, 2),
        },
        # each step of the first run, from the run's start: where the run's own time went
        "first_run_steps_s": {st["stepKey"]: [round((st["startTime"] or started) - started, 2),
                                              round((st["endTime"] or ended) - started, 2)]
                              for st in sorted(runs, key=lambda r: r["creationTime"])[0].get("stepStats") or []},
    }


def doris_sql(doris: DorisStandIn, stmt: str, db: str = "information_schema") -> list:
    body = requests.post(f"http://{doris.fe_http}/api/query/default_cluster/{db}", auth=("root", ""), timeout=120,
                         json={"stmt": stmt}).json()
    if body.get("code") != 0:
        raise RuntimeError(f"Doris stand-in refused {stmt!r}: {str(body)[:300]}")
    return (body.get("data") or {}).get("data") or []


def measure(rows_wanted: int, args: argparse.Namespace, out_dir: Path,
            stack: tuple[MariaDBServer, DorisStandIn] | None = None, log=lambda message: None) -> dict:
    """One row count: fill ``shop.t``, the C client scan, ``tidemark run --once`` and (unless
    ``args.no_daemon``) the daemon backfill. ``stack``: a running MariaDB and stand-in to use (and
    leave running, with ``shop.t`` filled, for the peers of ``bench/run_all.py``); else its own."""
    compile_sources()
    work = Path(tempfile.mkdtemp(prefix="tidemark-e2e-"))
    if stack is None:
        mysql, doris = private_stack(work)
    else:
        mysql, doris = stack
    try:
        rows = fill(mysql, rows_wanted, getattr(args, "key", "bigint"))
        settled_s = settle(mysql)
        doris_sql(doris, "DROP DATABASE IF EXISTS shop")
        scan_s = c_client_scan(mysql.port)
        report: dict = {"rows": rows, "key": getattr(args, "key", "bigint"), "chunk_size": args.chunk_size, "parallelism": args.parallelism,
                        "mysql_settled_after_fill_s": round(settled_s, 1),
                        "c_client_scan_s": round(scan_s, 3), "c_client_rows_per_s": round(rows / scan_s)}
        profile = out_dir / f"snapshot_e2e-{rows}.speedscope.json" if args.profile else None
        log(f"{rows:,} rows in shop.t; mariadb --quick {scan_s:.2f} s; tidemark run --once...")
        once = run_once(work, pipeline_file(work, "bench", mysql, doris, args), profile, [mysql.pid(), doris.pid()])
        assert doris_count(doris) == rows, "Doris does not hold every row after tidemark run"
        once["rows_per_s"] = round(rows / once["wall_s"])
        once["ratio_to_c_client_scan"] = round(once["wall_s"] / scan_s, 1)
        report["tidemark_run_once"] = once
        if getattr(args, "naive", False) and rows <= NAIVE_MAX_ROWS:
            from bench import peers

            log(f"tidemark run --once {once['wall_s']} s; the naive reload (pandas read_sql → one stream load)...")
            naive = peers.naive_reload(mysql.port, doris.fe_http, "shop", "t", [mysql.pid(), doris.pid()])
            doris_sql(doris, "DROP DATABASE IF EXISTS naive")
            report["naive_reload"] = naive
            # its own wall (read, encode, load; without its interpreter's start): the stricter comparison
            once["ratio_to_naive_reload"] = round(once["wall_s"] / naive["wall_s"], 2)
            once["ratio_to_naive_reload_process"] = round(once["wall_s"] / naive["process_wall_s"], 2)
        if getattr(args, "spark_ab", False):
            log(f"tidemark run --once {once['wall_s']} s; again on Spark's local mode (in-process-rows 0)...")
            doris_sql(doris, "DROP DATABASE IF EXISTS shop")
            on_spark = run_once(work, pipeline_file(work, "bench_spark", mysql, doris, args,
                                                    {"tidemark.snapshot.in-process-rows": 0}),
                                None, [mysql.pid(), doris.pid()])
            assert doris_count(doris) == rows, "Doris does not hold every row after tidemark run on Spark"
            on_spark["ratio_to_c_client_scan"] = round(on_spark["wall_s"] / scan_s, 1)
            report["tidemark_run_once_spark"] = on_spark
            once["ratio_to_spark_run"] = round(once["wall_s"] / on_spark["wall_s"], 2)
        if rows >= 5_000_000:
            report["tidemark_run_once"]["within_40s"] = once["wall_s"] <= TARGET_5M_S
        if (rows >= 5_000_000 or getattr(args, "parity_ab", False)) and not args.no_parity_ab:
            log(f"tidemark run --once {once['wall_s']} s; again with --no-checks (what parity costs)...")
            doris_sql(doris, "DROP DATABASE IF EXISTS shop")
            bare = run_once(work, pipeline_file(work, "bench_nochecks", mysql, doris, args), None,
                            [mysql.pid(), doris.pid()], checks=False)
            assert doris_count(doris) == rows, "Doris does not hold every row after tidemark run --no-checks"
            report["parity_cost"] = parity_cost(once, bare)
        if not args.no_daemon:
            log(f"tidemark run --once {once['wall_s']} s; the daemon backfill (tidemark dev)...")
            doris_sql(doris, "DROP DATABASE IF EXISTS shop")  # the backfill starts from an empty Doris too
            backfill = daemon_backfill(work, pipeline_file(work, "bench_ui", mysql, doris, args), "bench_ui",
                                       [mysql.pid(), doris.pid()])
            assert doris_count(doris) == rows, "Doris does not hold every row after the backfill"
            backfill["rows_per_s"] = round(rows / backfill["wall_s"])
            backfill["ratio_to_run_once"] = round(backfill["wall_s"] / once["wall_s"], 2)
            backfill["ratio_to_c_client_scan"] = round(backfill["wall_s"] / scan_s, 1)
            report["daemon_backfill"] = backfill
        return report
    finally:
        if stack is None:
            doris.stop()
            mysql.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def parity_cost(once: dict, bare: dict) -> dict:
    """What the ``chunk_parity`` check costs the run, against ``bare`` (``--no-checks``, same table).

    ``cost_s``: the check's own step (Dagster's STEP_START to STEP_SUCCESS: Doris's side, MySQL's for
    chunks the reads and commits left no time for, and the step's events) plus what it added to the
    reads and the commits (MySQL's side computed meanwhile, ``parity_overlap``; the reads counted only
    in a run that has that phase). The phases before the reads do not see the check, so their run-to-run jitter (seconds on a shared 2-core machine:
    Spark's start above all) stays out of it; ``wall_delta_s``, the plain difference of the two
    runs' wall times, keeps it in."""
    with_phases, bare_phases = split_phases(once), split_phases(bare)
    step = float(once.get("steps_s", {}).get("snapshot_chunks_chunk_parity", with_phases["parity"]))
    commit_delta = with_phases["commit"] - bare_phases["commit"]
    # what it added to the reads, only when MySQL's side was computed beside them (else the difference
    # is the reads' own jitter); reads or commits that happened to be quicker are not credited
    overlapped = float(once.get("phases_s", {}).get("parity_overlap", 0.0)) > 0
    read_delta = with_phases["read_load"] - bare_phases["read_load"] if overlapped else 0.0
    cost = step + max(0.0, commit_delta) + max(0.0, read_delta)
    return {"check_s": round(with_phases["parity"], 3), "check_step_s": round(step, 3),
            "check_step_share": round(step / once["wall_s"], 4),
            "mysql_side_during_commits_s": once.get("phases_s", {}).get("parity_overlap", 0.0),
            "commit_s": with_phases["commit"], "commit_s_without_checks": bare_phases["commit"],
            "read_load_s": with_phases["read_load"], "read_load_s_without_checks": bare_phases["read_load"],
            "cost_s": round(cost, 2), "cost_share": round(cost / once["wall_s"], 4),
            "without_checks_wall_s": bare["wall_s"], "without_checks_phases_s": bare.get("phases_s", {}),
            "wall_delta_s": round(once["wall_s"] - bare["wall_s"], 2),
            "wall_delta_share": round((once["wall_s"] - bare["wall_s"]) / once["wall_s"], 4)}


def cpu_timed(cmd: list[str], cwd: Path, env: dict[str, str], work: Path) -> tuple[int, float, float]:
    """Run ``cmd`` to its end: its exit status, wall seconds, and CPU seconds of it and every process
    under it (``perf stat``'s task-clock follows the children; without perf, the rusage of the
    children this process reaped, which misses any that outlived the command)."""
    import resource

    perf = shutil.which("perf")
    out = work / "task-clock.txt"
    if perf:
        cmd = [perf, "stat", "-x,", "-e", "task-clock", "-o", str(out), *cmd]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if perf and out.exists():
        line = next((x for x in out.read_text().splitlines() if "task-clock" in x), "")
        if line.split(",")[0].replace(".", "", 1).isdigit():
            cpu = float(line.split(",")[0]) / 1000.0
    if done.returncode != 0:
        raise SystemExit(f"tidemark run failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.returncode, wall, cpu


def ab(rows_wanted: int, trees: list[Path], pairs: int, args: argparse.Namespace, log=print) -> list[dict]:
    """``tidemark run --once`` of each source tree in turn, ``pairs`` times, on one filled table."""
    work = Path(tempfile.mkdtemp(prefix="tidemark-ab-"))
    mysql, doris = private_stack(work)
    out: list[dict] = []
    try:
        for tree in trees:  # as compile_sources, for each tree
            subprocess.run([sys.executable, "-m", "compileall", "-q", "-j", "0",
                            *(str(tree / p) for p in ("cdc_core", "jobs", "orchestration", "devstack"))],
                           check=True, stdout=subprocess.DEVNULL)
        rows = fill(mysql, rows_wanted, getattr(args, "key", "bigint"))
        settle(mysql)
        n = 0
        for pair in range(pairs):
            for tree in trees:
                n += 1
                doris_sql(doris, "DROP DATABASE IF EXISTS shop")
                pipeline = pipeline_file(work, f"ab{n}", mysql, doris, args)
                timings = work / f"timings{n}.json"
                env_ = {**env(), "PYTHONPATH": str(tree)}
                _, wall, cpu = cpu_timed([sys.executable, "-m", "orchestration.cli", "run", str(pipeline), "--once",
                                          "--timings", str(timings)], tree, env_, work)
                assert doris_count(doris) == rows, "Doris does not hold every row after tidemark run"
                row = {"tree": str(tree), "pair": pair, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                       "load_1m": round(os.getloadavg()[0], 1),
                       "phases_s": json.loads(timings.read_text()) if timings.exists() else {}}
                log(json.dumps(row))
                out.append(row)
        return out
    finally:
        doris.stop()
        mysql.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def markdown(reports: list[dict]) -> str:
    lines = ["| rows | `mariadb --quick` scan | `tidemark run --once` | ratio | naive reload | ratio | chunks (cap) | "
             "phases (s) | daemon backfill | ratio to run |",
             "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"]
    for r in reports:
        once = r["tidemark_run_once"]
        phases = ", ".join(f"{k} {v}" for k, v in once["phases_s"].items())
        back = r.get("daemon_backfill", {})
        plan = once.get("plan", {})
        lines.append(f"| {r['rows']:,} | {r['c_client_scan_s']} s | {once['wall_s']} s ({once['rows_per_s']:,} rows/s) | "
                     f"{once['ratio_to_c_client_scan']}× | {r.get('naive_reload', {}).get('wall_s', '-')} s | "
                     f"{once.get('ratio_to_naive_reload', '-')}× | {plan.get('chunks', '-')} ({plan.get('max_partitions', '-')}) | "
                     f"{phases} | {back.get('wall_s', '-')} s | "
                     f"{back.get('ratio_to_run_once', '-')} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--chunk-size", type=int, default=None,
                        help="scan.incremental.snapshot.chunk.size (default: unset, as a user's pipeline file)")
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--no-daemon", action="store_true", help="only tidemark run --once")
    parser.add_argument("--profile", action="store_true", help="tidemark run under py-spy --subprocesses")
    parser.add_argument("--keep", action="store_true", help="keep the servers' directories")
    parser.add_argument("--no-parity-ab", action="store_true",
                        help="skip the second run --once with --no-checks (5M rows and more)")
    parser.add_argument("--key", choices=("bigint", "varchar"), default="bigint",
                        help="the table's key: id BIGINT, or k VARCHAR(32) (utf8mb4_general_ci)")
    parser.add_argument("--naive", action="store_true",
                        help="the naive reload (bench/naive_reload.py) of the same table after tidemark run, its ratio "
                             "(tables of at most 1M rows)")
    parser.add_argument("--spark-ab", action="store_true",
                        help="the same run --once again on Spark's local mode (tidemark.snapshot.in-process-rows: 0)")
    parser.add_argument("--parity-ab", action="store_true",
                        help="the --no-checks run (what parity costs) at any row count")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--ab", type=Path, nargs=2, metavar=("TREE_A", "TREE_B"), default=None,
                        help="alternate tidemark run --once of two source trees (old, new) on one table: wall, CPU-s")
    parser.add_argument("--pairs", type=int, default=3, help="with --ab: A B pairs")
    args = parser.parse_args()
    if args.ab:
        rows = ab(args.rows[0], [t.resolve() for t in args.ab], args.pairs, args)
        for tree in args.ab:
            mine = [r for r in rows if r["tree"] == str(tree.resolve())]
            print(f"{tree}: CPU {', '.join(str(r['cpu_s']) for r in mine)} s; "
                  f"wall {', '.join(str(r['wall_s']) for r in mine)} s")
        return
    sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = args.out or ROOT / "bench" / "results" / f"snapshot_e2e-{dt.date.today()}-{sha or 'nogit'}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    reports = [measure(rows, args, out.parent) for rows in args.rows]
    result = {"bench": "snapshot_e2e", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "commit": sha,
              "machine": {"cpus": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30)},
              "reports": reports}
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(reports))
    print(json.dumps(result, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
