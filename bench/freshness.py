"""Freshness under a steady write load, with the daemon-driven binlog sensor: MySQL commit →
row visible in Doris.

Starts a private MariaDB and the Doris stand-in on free ports, snapshots a small table with
``tidemark run --once`` (in process), then runs ``dagster-daemon`` alone (the sensor needs no
webserver) while a writer commits 200 rows/s (20 transactions/s) for the measured window. A
poller asks Doris every 0.2 s for new ids; freshness of a row = first seen in Doris − its MySQL
commit. Reports p50/p90/p99/max, the ratios to the limits (p50 ≤ 10 s, p99 ≤ 30 s), and where a
binlog run's time goes (sensor tick → run created → started → finished, from Dagster's records):
a markdown table, then the whole report as JSON.

    PYTHONPATH=. .venv/bin/python bench/freshness.py [--seconds 90] [--rate 200] [--queue-ahead] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
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
from devstack.procs import free_port  # noqa: E402
from devstack.stack import DorisStandIn  # noqa: E402

P50_LIMIT_S, P99_LIMIT_S = 10.0, 30.0
DB = "fresh_bench"

PIPELINE = """
source:
  type: mysql
  hostname: 127.0.0.1
  port: {port}
  username: cdc
  password: cdc
  tables: {db}.\\.*
  server-id: 5600-5604
  server-time-zone: UTC
sink:
  type: doris
  fenodes: {fe}
  username: root
  password: ""
  table.create.properties.replication_num: 1
pipeline:
  name: freshness
  parallelism: 1
  tidemark.state.dir: {state}
"""


class DorisPoller(threading.Thread):
    """Polls ``MAX(id)`` in Doris every ``interval_s``; an id is visible from the first poll whose
    maximum reaches it. Valid because ids are inserted in increasing order and each binlog batch
    becomes visible atomically and in order; ``missing`` checks afterwards that every id arrived."""

    def __init__(self, fe: str, interval_s: float = 0.2):
        super().__init__(daemon=True, name="doris-poller")
        self.fe, self.interval_s = fe, interval_s
        self.maxima: list[tuple[float, int]] = []  # (time, max id) whenever the maximum grew
        self.halt = threading.Event()
        self.errors = 0
        self.session = requests.Session()

    def query(self, sql: str) -> list:
        body = self.session.post(f"http://{self.fe}/api/query/default_cluster/{DB}", auth=("root", ""), timeout=10,
                                 json={"stmt": sql}).json()
        if body.get("code") != 0:
            raise RuntimeError(str(body)[:300])
        return body["data"]["data"]

    def run(self) -> None:
        last = -1
        while not self.halt.is_set():
            started = time.time()
            try:
                (value,), = self.query(f"SELECT COALESCE(MAX(id), 0) FROM {DB}.ticks")
                if int(value) > last:
                    last = int(value)
                    self.maxima.append((time.time(), last))
            except (requests.RequestException, ValueError, RuntimeError):
                self.errors += 1
            self.halt.wait(max(0.0, self.interval_s - (time.time() - started)))

    def visible_at(self, row_id: int) -> float | None:
        for seen_at, maximum in self.maxima:
            if maximum >= row_id:
                return seen_at
        return None

    def missing(self, ids: list[int]) -> int:
        """How many of ``ids`` (a contiguous range) are not in Doris."""
        (count,), = self.query(f"SELECT COUNT(*) FROM {DB}.ticks WHERE id BETWEEN {min(ids)} AND {max(ids)}")
        return len(ids) - int(count)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, int(round(q * (len(ordered) - 1)))))
    return ordered[index]


def freshness_table(p50: float, p90: float, p99: float, latencies: list[float]) -> pd.DataFrame:
    """Freshness percentiles next to their limits (``None``: no limit for that percentile)."""
    rows = [("p50", p50, P50_LIMIT_S), ("p90", p90, None), ("p99", p99, P99_LIMIT_S),
            ("max", max(latencies) if latencies else float("nan"), None)]
    table = pd.DataFrame(rows, columns=["freshness", "seconds", "limit (s)"])
    table["ratio to limit"] = table["seconds"] / table["limit (s)"]
    return table.astype(object).where(table.notna(), None)  # printed as "-" (no limit, or no value)


def run_breakdown(instance, sensor_name: str, since: float) -> dict:
    from dagster import RunsFilter
    from dagster._core.storage.tags import SENSOR_NAME_TAG

    records = instance.get_run_records(filters=RunsFilter(tags={SENSOR_NAME_TAG: sensor_name}), limit=10_000)
    queued, running, statuses = [], [], {}
    for record in records:
        if record.create_timestamp.timestamp() < since:
            continue
        statuses[record.dagster_run.status.value] = statuses.get(record.dagster_run.status.value, 0) + 1
        if record.start_time and record.end_time:
            queued.append(record.start_time - record.create_timestamp.timestamp())
            running.append(record.end_time - record.start_time)
    return {
        "runs": sum(statuses.values()),
        "statuses": statuses,
        "created_to_started_s_median": round(statistics.median(queued), 2) if queued else None,
        "started_to_finished_s_median": round(statistics.median(running), 2) if running else None,
        "started_to_finished_s_max": round(max(running), 2) if running else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="measured window of the write load")
    parser.add_argument("--warmup", type=float, default=15.0, help="write load before measuring")
    parser.add_argument("--rate", type=float, default=200.0, help="rows per second")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument("--queue-ahead", action="store_true",
                        help="TIDEMARK_BINLOG_QUEUE_AHEAD=1: queue the next binlog run behind the running one")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    from dagster import DagsterInstance
    from rich.console import Console

    from devstack.workload import SteadyWriter
    from orchestration.dev import DagsterServices
    from orchestration.instance import prepare_home
    from orchestration.pipelines import PipelineHandle
    from orchestration.run_once import OnceRun

    console = Console(stderr=True)
    work = Path(tempfile.mkdtemp(prefix="tidemark-freshness-"))
    mysql = MariaDBServer(work / "mysql", port=free_port())
    fe, be = free_port(), free_port()
    doris = DorisStandIn(work / "doris", fe_port=fe, be_port=be)
    services = None
    writer = None
    poller = DorisPoller(doris.fe_http)
    try:
        mysql.start()
        doris.start()
        root = pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root", autocommit=True)
        with root.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DB}")
            cur.execute(f"CREATE TABLE {DB}.ticks (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL, "
                        "written_at DATETIME(6) NOT NULL)")
            cur.executemany(f"INSERT INTO {DB}.ticks VALUES (%s, %s, NOW(6))", [(i, f"seed {i}") for i in range(1, 101)])
        path = work / "freshness.yaml"
        path.write_text(PIPELINE.format(port=mysql.endpoint.port, db=DB, fe=doris.fe_http, state=work / "state"))
        handle = PipelineHandle.load(path)
        home = prepare_home(work / "dagster")
        with console.status("snapshot (tidemark run --once, in process)..."), \
                DagsterInstance.from_config(str(home)) as instance:
            once = OnceRun(handle, instance, console, parity_checks=False)
            once.run()
            once.service.close()
        env = {**os.environ, "TIDEMARK_BINLOG_QUEUE_AHEAD": "1" if args.queue_ahead else "0"}
        services = DagsterServices([path], home, webserver=False, daemon=True, log_dir=work / "logs",
                                   working_dir=ROOT, env=env).start()

        def connect():
            return pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root", database=DB, autocommit=False)

        writer = SteadyWriter(connect, "ticks", ("payload", "written_at"),
                              lambda i, rng: (f"tick {i}", time.strftime("%Y-%m-%d %H:%M:%S")),
                              rate=args.rate, ticks_per_s=20, first_id=1_000)
        poller.start()
        console.log(f"write load {args.rate:.0f} rows/s: warm-up {args.warmup:.0f} s, then {args.seconds:.0f} s measured")
        writer.start()
        time.sleep(args.warmup)
        measured_from = time.time()
        time.sleep(args.seconds)
        measured_to = time.time()
        stats = writer.stop()
        wanted = {i: t for i, t in stats.commit_times.items() if measured_from <= t <= measured_to}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and poller.visible_at(max(stats.commit_times)) is None:
            time.sleep(0.5)
        poller.halt.set()
        latencies = [poller.visible_at(i) - t for i, t in wanted.items() if poller.visible_at(i) is not None]
        missing = poller.missing(sorted(wanted))
        with DagsterInstance.from_config(str(home)) as instance:
            breakdown = run_breakdown(instance, handle.sensor_name, measured_from - args.warmup)
        p50, p90, p99 = (percentile(latencies, q) for q in (0.5, 0.9, 0.99))
        result = {
            "queue_ahead": args.queue_ahead,
            "rows_measured": len(wanted),
            "rows_missing_after_120s": missing,
            "write_rate_rows_per_s": round(len(wanted) / (measured_to - measured_from), 1),
            "writer_late_ticks": stats.late_ticks,
            "freshness_s": {"p50": round(p50, 2), "p90": round(p90, 2), "p99": round(p99, 2),
                            "max": round(max(latencies), 2) if latencies else None},
            "ratio_to_limit": {"p50": round(p50 / P50_LIMIT_S, 2), "p99": round(p99 / P99_LIMIT_S, 2)},
            "binlog_runs": breakdown,
            "poll_errors": poller.errors,
        }
        print(freshness_table(p50, p90, p99, latencies).to_markdown(index=False, floatfmt=".2f", missingval="-"))
        print()
        print(json.dumps(result, indent=2))
        ok = missing == 0 and p50 <= P50_LIMIT_S and p99 <= P99_LIMIT_S
        console.print(f"freshness p50 {p50:.2f} s ({p50 / P50_LIMIT_S:.2f} of the limit), p99 {p99:.2f} s "
                      f"({p99 / P99_LIMIT_S:.2f} of the limit): {'[green]within[/]' if ok else '[red]OVER[/]'} the targets")
        return 0 if ok else 1
    finally:
        poller.halt.set()
        if services is not None:
            services.stop()
        doris.stop()
        mysql.stop()
        if writer is not None and writer.is_alive():
            writer.stop()
        if args.keep:
            console.log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
