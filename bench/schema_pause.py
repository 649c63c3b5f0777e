"""The pause window of a schema change, with the daemon-driven sensors: from the DDL's commit in
MySQL to the stream running again.

Starts a private MariaDB and the Doris stand-in on free ports and ``dagster-daemon`` alone (no
webserver), streams a table under a steady write load (``binlog_sensor``), then commits DDLs on it
one at a time. For each DDL, from Dagster's run records and a Doris poller:

* ``schema_change`` launched (``ddl_sensor``) and finished: created / started / ended;
* **pause window** = the first row committed after the DDL visible in Doris − the DDL's commit
  (what a user sees; the limit: ≤ 30 s);
* the start of the next ``binlog_stream`` run (the sensor-driven stream after the pause).

Reports one row per DDL as a markdown table (seconds after the DDL's commit), then the whole
report as JSON.

    PYTHONPATH=. .venv/bin/python bench/schema_pause.py [--ddls 3] [--rate 20] [--keep]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import pandas as pd
import pymysql
import requests

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.pipeline_file import write_pipeline  # noqa: E402
from devstack.procs import free_port  # noqa: E402
from devstack.stack import DorisStandIn  # noqa: E402

PAUSE_LIMIT_S = 30.0
DB = "pause_bench"



class DorisPoller(threading.Thread):
    """Records when each id of ``ticks`` first appears in Doris."""

    def __init__(self, fe: str, interval_s: float = 0.2):
        super().__init__(daemon=True, name="doris-poller")
        self.fe, self.interval_s = fe, interval_s
        self.seen: dict[int, float] = {}
        self.halt = threading.Event()

    def run(self) -> None:
        last = 0
        session = requests.Session()
        while not self.halt.is_set():
            try:
                body = session.post(f"http://{self.fe}/api/query/default_cluster/{DB}", auth=("root", ""), timeout=10,
                                    json={"stmt": f"SELECT id FROM {DB}.ticks WHERE id > {last}"}).json()
                if body.get("code") == 0:
                    now = time.time()
                    for (row_id,) in body["data"]["data"]:
                        self.seen.setdefault(int(row_id), now)
                        last = max(last, int(row_id))
            except (requests.RequestException, ValueError):
                pass
            self.halt.wait(self.interval_s)


def runs_of(instance, job_name: str, since: float) -> list:
    from dagster import RunsFilter

    records = instance.get_run_records(filters=RunsFilter(job_name=job_name), limit=1000)
    return sorted((r for r in records if r.create_timestamp.timestamp() >= since),
                  key=lambda r: r.create_timestamp.timestamp())


def measure_one(instance, handle, root, writer, poller, k: int, timeout_s: float) -> dict:
    from orchestration.defs.schema_change_job import schema_change_job_name

    with root.cursor() as cur:
        cur.execute(f"ALTER TABLE {DB}.ticks ADD COLUMN c{k} INT")
    t0 = time.time()
    deadline = time.monotonic() + timeout_s
    sc = resumed = None
    while time.monotonic() < deadline:
        scs = [r for r in runs_of(instance, schema_change_job_name(handle), t0) if r.end_time]
        if scs:
            sc = scs[0]
            after = [r for r in runs_of(instance, handle.binlog_job_name, t0)
                     if r.start_time and r.start_time >= sc.end_time]
            if after:
                resumed = after[0]
                break
        time.sleep(0.2)
    if sc is None or resumed is None:
        raise RuntimeError(f"DDL {k}: the stream did not resume within {timeout_s:.0f} s")
    first_after = min((i for i, t in writer.stats.commit_times.items() if t > t0), default=None)
    while first_after is not None and first_after not in poller.seen and time.monotonic() < deadline:
        time.sleep(0.2)
    visible = poller.seen.get(first_after) if first_after is not None else None
    if visible is None:
        raise RuntimeError(f"DDL {k}: no row written after it became visible in Doris within {timeout_s:.0f} s")
    return {
        "ddl": f"ALTER TABLE ticks ADD COLUMN c{k} INT",
        "schema_change_status": sc.dagster_run.status.value,
        "schema_change_created_s": round(sc.create_timestamp.timestamp() - t0, 2),
        "schema_change_started_s": round(sc.start_time - t0, 2),
        "schema_change_ended_s": round(sc.end_time - t0, 2),
        "next_binlog_run_started_s": round(resumed.start_time - t0, 2),
        # the pause a user sees: the first row committed after the DDL, visible in Doris
        "pause_window_s": None if visible is None else round(visible - t0, 2),
    }


def measure(ddls: int = 3, rate: float = 20.0, behavior: str = "lenient", keep: bool = False,
            mysql: MariaDBServer | None = None, doris: DorisStandIn | None = None, log=print) -> dict:
    """Commit ``ddls`` DDLs under a steady write load and time each pause. ``mysql`` / ``doris``:
    running servers to use (and leave running; ``pause_bench`` is dropped first); else its own."""
    from dagster import DagsterInstance
    from rich.console import Console

    from cdc_core.config import load_pipeline
    from devstack.workload import SteadyWriter
    from jobs.spark_executor import spark_service
    from orchestration.cli.dev import DagsterServices
    from orchestration.cli.instance import prepare_home
    from orchestration.defs.pipelines import PipelineHandle

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from snapshot_e2e import MemorySampler

    console = Console(stderr=True)
    work = Path(tempfile.mkdtemp(prefix="tidemark-schema-pause-"))
    own = mysql is None
    if own:
        mysql = MariaDBServer(work / "mysql", port=free_port())
        doris = DorisStandIn(work / "doris", fe_port=free_port(), be_port=free_port())
    services = writer = sampler = None
    poller = DorisPoller(doris.fe_http)
    try:
        if own:
            mysql.start()
            doris.start()
        root = pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root", autocommit=True)
        with root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {DB}")
            cur.execute(f"CREATE DATABASE {DB}")
            cur.execute(f"CREATE TABLE {DB}.ticks (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL)")
        path = work / "schema_pause.yaml"
        write_pipeline(path, host="127.0.0.1", port=mysql.endpoint.port, fe=doris.fe_http, tables=f"{DB}.\\.*",
                       name="schema_pause", state_dir=work / "state", server_id="5700-5704", parallelism=None,
                       source={"scan.startup.mode": "latest-offset"}, pipeline={"schema.change.behavior": behavior})
        handle = PipelineHandle.load(path)
        runner = spark_service(load_pipeline(path))
        runner.binlog_lag()  # latest-offset: the stream starts here
        runner.close()
        home = prepare_home(work / "dagster")
        services = DagsterServices([path], home, webserver=False, daemon=True, log_dir=work / "logs",
                                   working_dir=ROOT).start()
        sampler = MemorySampler([*(p.pid for p in services.procs.values()), mysql.pid(), doris.pid()])
        sampler.start()

        def connect():
            return pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root", database=DB, autocommit=False)

        writer = SteadyWriter(connect, "ticks", ("payload",), lambda i, rng: (f"tick {i}",), rate=rate,
                              ticks_per_s=10, first_id=1)
        poller.start()
        writer.start()
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and len(poller.seen) < 10:
            time.sleep(0.5)
        if len(poller.seen) < 10:
            raise RuntimeError(f"the stream did not start within 180 s; see {work / 'logs'}")
        log(f"streaming ({len(poller.seen)} rows in Doris); committing {ddls} DDL(s)")
        results = []
        with DagsterInstance.from_config(str(home)) as instance:
            for k in range(1, ddls + 1):
                time.sleep(3)
                results.append(measure_one(instance, handle, root, writer, poller, k, timeout_s=180))
                log(results[-1])
        writer.stop()
        memory = sampler.stop()
        root.close()
        pauses = [r["pause_window_s"] for r in results]
        worst = max(pauses)
        return {
            "behavior": behavior, "write_rate_rows_per_s": rate, "ddls": results,
            "pause_window_s": {"median": round(statistics.median(pauses), 2), "max": worst},
            "ratio_to_limit_max": round(worst / PAUSE_LIMIT_S, 2),
            "limit_s": PAUSE_LIMIT_S,
            "peak_rss_mib": memory,
            "ok": worst <= PAUSE_LIMIT_S and all(r["schema_change_status"] == "SUCCESS" for r in results),
        }
    finally:
        poller.halt.set()
        if sampler is not None and sampler.is_alive():
            sampler.stop()
        if writer is not None and writer.is_alive():
            writer.stop()
        if services is not None:
            services.stop()
        if own:
            doris.stop()
            mysql.stop()
        if keep:
            console.log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ddls", type=int, default=3)
    parser.add_argument("--rate", type=float, default=20.0, help="rows per second written while measuring")
    parser.add_argument("--behavior", default="lenient")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from rich.console import Console

    console = Console(stderr=True)
    out = measure(args.ddls, args.rate, args.behavior, args.keep, log=console.log)
    print(pd.DataFrame(out["ddls"]).to_markdown(index=False, floatfmt=".2f"))
    print()
    print(json.dumps(out, indent=2))
    worst = out["pause_window_s"]["max"]
    console.print(f"pause window max {worst:.2f} s = {worst / PAUSE_LIMIT_S:.2f} of the {PAUSE_LIMIT_S:.0f} s limit: "
                  f"{'[green]within[/]' if out['ok'] else '[red]OVER[/]'}")
    return 0 if out["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
