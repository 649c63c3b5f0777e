"""Freshness under a steady write load, with the daemon-driven binlog sensor: MySQL commit →
row visible in Doris.

Starts a private MariaDB and the Doris stand-in on free ports, snapshots a small table with
``tidemark run --once`` (in process), then runs ``dagster-daemon`` alone (the sensor needs no
webserver) while a writer commits 200 rows/s (20 transactions/s) for the measured window. A
poller asks Doris every 0.2 s for new ids; freshness of a row = first seen in Doris − its MySQL
commit. Reports p50/p90/p99/max, the ratios to the limits (p50 ≤ 10 s, p99 ≤ 30 s), and where a
binlog run's time goes (sensor tick → run created → started → finished, from Dagster's records):
a markdown table, then the whole report as JSON.

    PYTHONPATH=. .venv/bin/python bench/freshness.py [--seconds 90] [--rate 200] [--commits-per-s 20] [--queue-ahead] [--keep]
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
from devstack.pipeline_file import write_pipeline  # noqa: E402
from devstack.procs import free_port  # noqa: E402
from devstack.stack import DorisStandIn  # noqa: E402

P50_LIMIT_S, P99_LIMIT_S = 10.0, 30.0
DB = "fresh_bench"



class DorisPoller(threading.Thread):
    """Polls ``MAX(id)`` in Doris every ``interval_s``; an id is visible from the first poll whose
    maximum reaches it. Valid because ids are inserted in increasing order and each binlog batch
    becomes visible atomically and in order; ``missing`` checks afterwards that every id arrived."""

    def __init__(self, fe: str, interval_s: float = 0.2, db: str = DB):
        super().__init__(daemon=True, name="doris-poller")
        self.fe, self.interval_s, self.db = fe, interval_s, db
        self.maxima: list[tuple[float, int]] = []  # (time, max id) whenever the maximum grew
        self.halt = threading.Event()
        self.errors = 0
        self.session = requests.Session()

    def query(self, sql: str) -> list:
        body = self.session.post(f"http://{self.fe}/api/query/default_cluster/{self.db}", auth=("root", ""), timeout=10,
                                 json={"stmt": sql}).json()
        if body.get("code") != 0:
            raise RuntimeError(str(body)[:300])
        return body["data"]["data"]

    def run(self) -> None:
        last = -1
        while not self.halt.is_set():
            started = time.time()
            try:
                (value,), = self.query(f"SELECT COALESCE(MAX(id), 0) FROM {self.db}.ticks")
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
        (count,), = self.query(f"SELECT COUNT(*) FROM {self.db}.ticks WHERE id BETWEEN {min(ids)} AND {max(ids)}")
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
        if record.start_time:  # a run still streaming when the window ends has started all the same
            queued.append(record.start_time - record.create_timestamp.timestamp())
        if record.start_time and record.end_time:
            running.append(record.end_time - record.start_time)
    return {
        "runs": sum(statuses.values()),
        "statuses": statuses,
        "created_to_started_s_median": round(statistics.median(queued), 2) if queued else None,
        "created_to_started_s_min": round(min(queued), 2) if queued else None,
        "started_to_finished_s_median": round(statistics.median(running), 2) if running else None,
        "started_to_finished_s_max": round(max(running), 2) if running else None,
    }


def sensor_ticks(instance, sensor_name: str, since: float) -> dict:
    """The floor Dagster sets, measured in the same run: how often the daemon evaluated the binlog
    sensor (median interval between its ticks) and how long one evaluation took. A row waits for
    the next tick, then for a run to be launched (the fastest launch of the window: creation →
    STARTED), before any of Tidemark's own work; so p50 freshness cannot be much under half the
    interval plus that launch."""
    state = next((s for s in instance.all_instigator_state() if s.instigator_name == sensor_name), None)
    if state is None:
        return {"ticks": 0}
    ticks = sorted(instance.get_ticks(state.instigator_origin_id, state.selector_id, after=since, limit=100_000),
                   key=lambda t: t.timestamp)
    stamps = [t.timestamp for t in ticks]
    gaps = [b - a for a, b in zip(stamps, stamps[1:], strict=False)]
    took = [t.end_timestamp - t.timestamp for t in ticks if t.end_timestamp]
    return {
        "ticks": len(ticks),
        "interval_s_median": round(statistics.median(gaps), 2) if gaps else None,
        "evaluation_s_median": round(statistics.median(took), 3) if took else None,
    }


def series(wanted: dict[int, float], poller: DorisPoller, start: float) -> list[list[float]]:
    """Freshness over time for the plots: per second of the window, [t, median, max] of the rows
    committed in it."""
    buckets: dict[int, list[float]] = {}
    for row_id, committed in wanted.items():
        seen = poller.visible_at(row_id)
        if seen is not None:
            buckets.setdefault(int(committed - start), []).append(seen - committed)
    return [[t, round(statistics.median(v), 3), round(max(v), 3)] for t, v in sorted(buckets.items())]


def measure(rate: float = 200.0, seconds: float = 90.0, warmup: float = 15.0, commits_per_s: int = 20,
            queue_ahead: bool = False, keep: bool = False, mysql: MariaDBServer | None = None,
            doris: DorisStandIn | None = None, db: str = DB, log=print) -> dict:
    """One freshness window at ``rate`` rows/s. ``mysql`` / ``doris``: running servers to use (and
    leave running; each call then needs its own ``db``); else its own on free ports."""
    from dagster import DagsterInstance
    from rich.console import Console

    from devstack.workload import SteadyWriter
    from orchestration.cli.dev import DagsterServices
    from orchestration.cli.instance import prepare_home
    from orchestration.cli.run_once import OnceRun
    from orchestration.defs.pipelines import PipelineHandle

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from snapshot_e2e import MemorySampler

    console = Console(stderr=True)
    work = Path(tempfile.mkdtemp(prefix="tidemark-freshness-"))
    own = mysql is None
    if own:
        mysql = MariaDBServer(work / "mysql", port=free_port())
        doris = DorisStandIn(work / "doris", fe_port=free_port(), be_port=free_port())
    services = None
    writer = None
    sampler = None
    poller = DorisPoller(doris.fe_http, db=db)
    try:
        if own:
            mysql.start()
            doris.start()
        root = pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root", autocommit=True)
        with root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS {db}")
            cur.execute(f"CREATE DATABASE {db}")
            cur.execute(f"CREATE TABLE {db}.ticks (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL, "
                        "written_at DATETIME(6) NOT NULL)")
            cur.executemany(f"INSERT INTO {db}.ticks VALUES (%s, %s, NOW(6))", [(i, f"seed {i}") for i in range(1, 101)])
        root.close()
        path = work / "freshness.yaml"
        write_pipeline(path, host="127.0.0.1", port=mysql.endpoint.port, fe=doris.fe_http, tables=f"{db}.\\.*",
                       name="freshness", state_dir=work / "state", server_id="5600-5604", parallelism=1)
        handle = PipelineHandle.load(path)
        home = prepare_home(work / "dagster")
        with console.status("snapshot (tidemark run --once, in process)..."), \
                DagsterInstance.from_config(str(home)) as instance:
            once = OnceRun(handle, instance, console, parity_checks=False)
            once.run()
            once.service.close()
        env = {**os.environ, "TIDEMARK_BINLOG_QUEUE_AHEAD": "1" if queue_ahead else "0"}
        services = DagsterServices([path], home, webserver=False, daemon=True, log_dir=work / "logs",
                                   working_dir=ROOT, env=env).start()
        sampler = MemorySampler([*(p.pid for p in services.procs.values()), mysql.pid(), doris.pid()])
        sampler.start()

        def connect():
            return pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root", database=db, autocommit=False)

        writer = SteadyWriter(connect, "ticks", ("payload", "written_at"),
                              lambda i, rng: (f"tick {i}", time.strftime("%Y-%m-%d %H:%M:%S")),
                              rate=rate, ticks_per_s=commits_per_s, first_id=1_000)
        poller.start()
        log(f"write load {rate:.0f} rows/s: warm-up {warmup:.0f} s, then {seconds:.0f} s measured")
        writer.start()
        time.sleep(warmup)
        measured_from = time.time()
        time.sleep(seconds)
        measured_to = time.time()
        stats = writer.stop()
        wanted = {i: t for i, t in stats.commit_times.items() if measured_from <= t <= measured_to}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and poller.visible_at(max(stats.commit_times)) is None:
            time.sleep(0.5)
        poller.halt.set()
        memory = sampler.stop()
        latencies = [poller.visible_at(i) - t for i, t in wanted.items() if poller.visible_at(i) is not None]
        missing = poller.missing(sorted(wanted))
        with DagsterInstance.from_config(str(home)) as instance:
            breakdown = run_breakdown(instance, handle.sensor_name, measured_from - warmup)
            ticks = sensor_ticks(instance, handle.sensor_name, measured_from - warmup)
        p50, p90, p99 = (percentile(latencies, q) for q in (0.5, 0.9, 0.99))
        floor = None
        if ticks.get("interval_s_median") is not None and breakdown["created_to_started_s_min"] is not None:
            floor = round(ticks["interval_s_median"] / 2 + breakdown["created_to_started_s_min"]
                          + poller.interval_s / 2, 2)
        return {
            "rate_rows_per_s": rate,
            "queue_ahead": queue_ahead,
            "rows_measured": len(wanted),
            "rows_missing_after_120s": missing,
            "write_rate_rows_per_s": round(len(wanted) / (measured_to - measured_from), 1),
            "writer_late_ticks": stats.late_ticks,
            "freshness_s": {"p50": round(p50, 2), "p90": round(p90, 2), "p99": round(p99, 2),
                            "max": round(max(latencies), 2) if latencies else None},
            "limits_s": {"p50": P50_LIMIT_S, "p99": P99_LIMIT_S},
            "ratio_to_limit": {"p50": round(p50 / P50_LIMIT_S, 2), "p99": round(p99 / P99_LIMIT_S, 2)},
            "sensor": ticks,
            # half a sensor interval + the fastest run launch + half a Doris poll: Dagster's floor for p50
            "dagster_floor_p50_s": floor,
            "ratio_p50_to_floor": round(p50 / floor, 2) if floor else None,
            "poll_interval_s": poller.interval_s,
            "binlog_runs": breakdown,
            "poll_errors": poller.errors,
            "peak_rss_mib": memory,
            "series_t_median_max_s": series(wanted, poller, measured_from),
            "ok": missing == 0 and p50 <= P50_LIMIT_S and p99 <= P99_LIMIT_S,
        }
    finally:
        poller.halt.set()
        if sampler is not None and sampler.is_alive():
            sampler.stop()
        if services is not None:
            services.stop()
        if own:
            doris.stop()
            mysql.stop()
        if writer is not None and writer.is_alive():
            writer.stop()
        if keep:
            console.log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=90.0, help="measured window of the write load")
    parser.add_argument("--warmup", type=float, default=15.0, help="write load before measuring")
    parser.add_argument("--rate", type=float, default=200.0, help="rows per second")
    parser.add_argument("--commits-per-s", type=int, default=20, help="MySQL transactions per second")
    parser.add_argument("--keep", action="store_true", help="keep the working directory")
    parser.add_argument("--queue-ahead", action="store_true",
                        help="TIDEMARK_BINLOG_QUEUE_AHEAD=1: queue the next binlog run behind the running one")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    from rich.console import Console

    console = Console(stderr=True)
    result = measure(args.rate, args.seconds, args.warmup, args.commits_per_s, args.queue_ahead, args.keep,
                     log=console.log)
    f = result["freshness_s"]
    print(freshness_table(f["p50"], f["p90"], f["p99"], [f["max"]] if f["max"] is not None else [])
          .to_markdown(index=False, floatfmt=".2f", missingval="-"))
    print()
    print(json.dumps({k: v for k, v in result.items() if k != "series_t_median_max_s"}, indent=2))
    console.print(f"freshness p50 {f['p50']:.2f} s ({result['ratio_to_limit']['p50']:.2f} of the limit), p99 "
                  f"{f['p99']:.2f} s ({result['ratio_to_limit']['p99']:.2f} of the limit): "
                  f"{'[green]within[/]' if result['ok'] else '[red]OVER[/]'} the targets")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
