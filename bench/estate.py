"""A whole database of small tables, as a user captures it (``tables: many.\\.*``): what planning costs.

    .venv/bin/python bench/estate.py [--tables 300] [--rows 2000] [--repeat 2] [--run [--rounds 3]] [--out FILE.json]

A private MariaDB (and a Doris stand-in) on free ports, the database ``many`` filled by
:func:`fill_estate`: ``--tables`` tables of ``--rows`` rows each, half keyed by a BIGINT, a quarter
by a composite key ``(a INT, b VARCHAR(16))``, a quarter by a ``VARCHAR(32)``. Then, measured:

* ``tidemark splits PIPELINE`` as a subprocess (best of ``--repeat``): the planning a run does, with
  nothing recorded, and the same in-process (``next_plan``) without the process start;
* with ``--run``, ``tidemark run PIPELINE --once --timings`` (the planning step among its phases),
  and the same on the same rows in one table (``one.t``, filled by :func:`fill_one_table`): the
  ratio of the two is what a table costs besides its rows.

``bench/run_all.py --only estate`` runs :func:`measure` (the 300 tables beside one table, the
peak number of Doris transactions running per database) and :func:`stream` (a steady write load
spread over the tables, freshness through ``dagster-daemon``), beside the 200k-row
``VARCHAR(32)``-keyed table with and without checks (``bench/snapshot_e2e.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.snapshot_e2e import env, private_stack  # noqa: E402
from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.pipeline_file import write_pipeline  # noqa: E402
from devstack.stack import DorisStandIn  # noqa: E402

VENV_BIN = Path(sys.executable).parent
DATABASE = "many"


def table_kinds(tables: int) -> list[tuple[str, str]]:
    """(table name, key kind) of each table: half ``bigint``, a quarter ``composite``, a quarter ``varchar``."""
    out = []
    for i in range(tables):
        kind = "bigint" if i < tables // 2 else "composite" if i < tables * 3 // 4 else "varchar"
        out.append((f"t{i:03d}", kind))
    return out


def fill_estate(mysql: MariaDBServer, tables: int = 300, rows: int = 2000, database: str = DATABASE) -> int:
    """Create and fill ``database``'s tables (see the module doc); the rows written in all."""
    ddl = {
        "bigint": "(id BIGINT PRIMARY KEY, name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3))",
        "composite": "(a INT, b VARCHAR(16), name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3), "
                     "PRIMARY KEY (a, b))",
        "varchar": "(k VARCHAR(32) PRIMARY KEY, name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3))",
    }
    keys = {"bigint": "seq", "composite": "seq DIV 10, CONCAT('b', seq % 10)", "varchar": "CONCAT(LEFT(MD5(seq), 20), '-', seq)"}
    statements = [f"DROP DATABASE IF EXISTS {database}", f"CREATE DATABASE {database}"]
    for name, kind in table_kinds(tables):
        statements.append(f"CREATE TABLE {database}.{name} {ddl[kind]}")
        statements.append(
            f"INSERT INTO {database}.{name} SELECT {keys[kind]}, CONCAT('customer-', seq), (seq % 100000) / 100, "
            f"'2026-01-01' + INTERVAL seq SECOND FROM {database}.seq_1_to_{rows}")
    statements.append(f"ANALYZE TABLE {', '.join(f'{database}.{n}' for n, _ in table_kinds(tables))}")
    mysql.root_sql("; ".join(statements) + ";")
    return tables * rows


def fill_one_table(mysql: MariaDBServer, rows: int, database: str = "one") -> int:
    """``database``.t: ``rows`` rows with the BIGINT-keyed tables' columns, the estate's rows in one table."""
    batches = max(1, rows // 100_000)
    per = rows // batches
    mysql.root_sql(
        f"DROP DATABASE IF EXISTS {database}; CREATE DATABASE {database}; CREATE TABLE {database}.t "
        "(id BIGINT PRIMARY KEY, name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3));"
        + "".join(f"INSERT INTO {database}.t SELECT seq + {b * per}, CONCAT('customer-', seq), (seq % 100000) / 100, "
                  f"'2026-01-01' + INTERVAL seq SECOND FROM {database}.seq_1_to_{per};" for b in range(batches))
        + f"ANALYZE TABLE {database}.t;")
    return batches * per


def time_splits(pipeline: Path, repeat: int) -> dict:
    """``tidemark splits`` as a subprocess (best of ``repeat``) and ``next_plan`` in this process."""
    walls = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run([str(VENV_BIN / "tidemark"), "splits", str(pipeline)], env=env(), cwd=ROOT,
                              capture_output=True, text=True)
        walls.append(time.perf_counter() - t0)
        if done.returncode != 0:
            raise SystemExit(f"tidemark splits failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    from cdc_core.config import load_pipeline
    from cdc_core.pipeline.planning import next_plan

    t0 = time.perf_counter()
    plan = next_plan(load_pipeline(pipeline))
    in_process = time.perf_counter() - t0
    return {"tidemark_splits_s": round(min(walls), 2), "tidemark_splits_all_s": [round(w, 2) for w in walls],
            "next_plan_in_process_s": round(in_process, 2), "chunks": len(plan.splits), "tables": len(plan.tables)}


def time_run(work: Path, pipeline: Path) -> dict:
    timings = work / "timings.json"
    t0 = time.perf_counter()
    done = subprocess.run([str(VENV_BIN / "tidemark"), "run", str(pipeline), "--once", "--timings", str(timings)],
                          env=env(), cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"tidemark run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return {"wall_s": round(wall, 2), "phases_s": json.loads(timings.read_text()) if timings.exists() else {}}


def _doris_db(doris: DorisStandIn, database: str) -> None:
    from bench.snapshot_e2e import doris_sql

    doris_sql(doris, f"DROP DATABASE IF EXISTS {database}")


def peak_running(doris: DorisStandIn) -> dict[str, int]:
    """The most Doris transactions each database held running at once since the last reset (the
    stand-in counts them: ``GET /_standin/txns``)."""
    return {db: int(d.get("peak_running", 0)) for db, d in doris.txn_stats()["databases"].items()}


def measure(mysql: MariaDBServer, doris: DorisStandIn, work: Path, tables: int = 300, rows: int = 2000,
            log=print, rounds: int = 3) -> dict:
    """The estate beside the same rows in one table, each by ``tidemark run --once --timings`` in
    the same session on the same servers, ``rounds`` times (each round a fresh state and dropped
    Doris databases; the order within a round alternates, so neither run always comes first); the
    ratio reported is the median of the rounds' ratios. One pair moved between 1.7× and 2.2× run to
    run on this 2-core machine (docs/performance.md), so one pair settles nothing near the target.
    ``run_once`` and ``one_table_run_once`` are the runs of the median round; every round's walls
    are in ``rounds``. The peak of Doris transactions running per database is the highest over the
    estate's runs."""
    from bench.snapshot_e2e import settle

    t0 = time.perf_counter()
    total = fill_estate(mysql, tables, rows)
    fill_one_table(mysql, total)
    settle(mysql)
    log(f"estate: {total:,} rows in {tables} tables of {DATABASE} and in one.t ({time.perf_counter() - t0:.0f} s); "
        f"tidemark run --once on the tables and on the one table, {rounds} round(s)...")
    pairs: list[dict] = []
    peak = 0
    for n in range(max(1, rounds)):
        for db in (DATABASE, "one"):
            _doris_db(doris, db)
        estate = write_pipeline(work / "estate.yaml", host="127.0.0.1", port=mysql.port, fe=doris.fe_http,
                                tables=f"{DATABASE}.\\.*", name="estate", state_dir=work / f"state-estate-{n}",
                                server_id="5600-5620")
        one = write_pipeline(work / "one.yaml", host="127.0.0.1", port=mysql.port, fe=doris.fe_http, tables="one.t",
                             name="one", state_dir=work / f"state-one-{n}", server_id="5621-5640")
        runs: dict[str, dict] = {}
        for kind in (("many", "one") if n % 2 == 0 else ("one", "many")):
            if kind == "many":
                doris.reset_txn_peaks()
                runs[kind] = time_run(work, estate)
                peak = max(peak, peak_running(doris).get(DATABASE, 0))
            else:
                runs[kind] = time_run(work, one)
        ratio = round(runs["many"]["wall_s"] / runs["one"]["wall_s"], 2)
        pairs.append({"run_once": runs["many"], "one_table_run_once": runs["one"], "ratio": ratio})
        log(f"estate: round {n + 1}: {tables} tables {runs['many']['wall_s']} s, one table {runs['one']['wall_s']} s, "
            f"{ratio}×")
    middle = sorted(pairs, key=lambda p: p["ratio"])[len(pairs) // 2]
    ratio = round(statistics.median(p["ratio"] for p in pairs), 2)
    log(f"estate: ratio {ratio}× (median of {len(pairs)} round(s); target ≤ 2×)")
    return {"tables": tables, "rows_per_table": rows, "rows": total, "run_once": middle["run_once"],
            "one_table_run_once": middle["one_table_run_once"], "ratio_to_one_table": ratio, "target_ratio": 2.0,
            "rounds": [{"tables_wall_s": p["run_once"]["wall_s"], "one_table_wall_s": p["one_table_run_once"]["wall_s"],
                        "ratio": p["ratio"]} for p in pairs],
            "peak_running_txns": peak, "limit_running_txns": doris.txn_stats()["max_running_txn_num_per_db"]}


class SpreadWriter(threading.Thread):
    """``rate`` rows/s of inserts spread over ``tables`` tables ``ticks_per_s`` commits a second:
    each commit writes a rotating share of the tables (every table once a second), one multi-row
    INSERT each. Ids grow across all tables, so a table's ``MAX(id)`` in Doris tells which of its
    rows are visible."""

    def __init__(self, connect, database: str, tables: list[str], rate: float, ticks_per_s: int = 4,
                 first_id: int = 1_000_000):
        super().__init__(daemon=True, name="spread-writer")
        self.connect, self.database, self.tables, self.rate, self.ticks_per_s = connect, database, tables, rate, ticks_per_s
        self.next_id = first_id
        self.commit_times: dict[int, tuple[str, float]] = {}  # id -> (table, commit time)
        self.late_ticks = 0
        self.error: BaseException | None = None
        self.halt = threading.Event()

    def run(self) -> None:
        try:
            conn = self.connect()
            interval = 1.0 / self.ticks_per_s
            per_tick = max(1, len(self.tables) // self.ticks_per_s)
            start, tick = time.monotonic(), 0
            while not self.halt.is_set():
                slot = start + tick * interval
                now = time.monotonic()
                if now < slot:
                    time.sleep(slot - now)
                elif now - slot > interval:
                    self.late_ticks += 1
                chosen = [self.tables[(tick * per_tick + i) % len(self.tables)] for i in range(per_tick)]
                tick += 1
                rows = int(self.rate * interval)
                written: list[tuple[int, str]] = []
                with conn.cursor() as cur:
                    for n, table in enumerate(chosen):
                        share = rows // len(chosen) + (1 if n < rows % len(chosen) else 0)
                        ids = list(range(self.next_id, self.next_id + share))
                        self.next_id += share
                        if not ids:
                            continue
                        # one statement (pymysql's executemany sends a row per statement when the
                        # VALUES clause holds anything but placeholders, as NOW(6) here)
                        cur.execute(f"INSERT INTO {self.database}.{table} (id, payload, written_at) VALUES "
                                    + ", ".join(["(%s, %s, NOW(6))"] * len(ids)),
                                    [v for i in ids for v in (i, f"tick {i}")])
                        written += [(i, table) for i in ids]
                conn.commit()
                committed = time.time()
                self.commit_times.update({i: (table, committed) for i, table in written})
            conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> None:
        self.halt.set()
        self.join(30)
        if self.error is not None:
            raise RuntimeError(f"the spread write load failed: {self.error}") from self.error


class SamplePoller(threading.Thread):
    """``MAX(id)`` of a sample of the tables in Doris, in one statement every ``interval_s``."""

    def __init__(self, fe: str, database: str, tables: list[str], interval_s: float = 0.25):
        super().__init__(daemon=True, name="estate-poller")
        import requests

        self.fe, self.database, self.tables, self.interval_s = fe, database, tables, interval_s
        self.session = requests.Session()
        self.maxima: dict[str, list[tuple[float, int]]] = {t: [] for t in tables}
        self.errors = 0
        self.halt = threading.Event()

    def run(self) -> None:
        statement = " UNION ALL ".join(f"SELECT {n} AS n, COALESCE(MAX(id), 0) AS m FROM {self.database}.{t}"
                                       for n, t in enumerate(self.tables))
        while not self.halt.is_set():
            started = time.time()
            try:
                body = self.session.post(f"http://{self.fe}/api/query/default_cluster/{self.database}",
                                         auth=("root", ""), timeout=10, json={"stmt": statement}).json()
                seen = time.time()
                for n, m in body["data"]["data"]:
                    series = self.maxima[self.tables[int(n)]]
                    if not series or int(m) > series[-1][1]:
                        series.append((seen, int(m)))
            except Exception:  # noqa: BLE001 - counted; a poll that failed is a poll late
                self.errors += 1
            self.halt.wait(max(0.0, self.interval_s - (time.time() - started)))

    def visible_at(self, table: str, row_id: int) -> float | None:
        for seen_at, maximum in self.maxima[table]:
            if maximum >= row_id:
                return seen_at
        return None


def batch_timeline(state_dir: Path, since: float, until: float) -> dict:
    """Where the stream's freshness goes: the committed binlog batches that began reading in the
    measured window, from their records' ``timings`` (``cdc_core/pipeline/binlog_batch.py``) —
    how long each read, loaded and committed, the gap from one batch's commit to the next one's
    start, and its lag (MySQL commit of its newest change → the batch prepared)."""
    from cdc_core.state import BatchStatus
    from cdc_core.state.store import StateStore

    store = StateStore.open(state_dir)
    try:
        with store.transaction(readonly=True) as tx:
            records = tx.batches(status=BatchStatus.COMMITTED)
    finally:
        store.engine.dispose()
    rows: list[dict] = []
    for r in records:
        detail = r.detail or {}
        timings = detail.get("timings") or {}
        if "began_at" not in timings or not since <= timings["began_at"] <= until:
            continue
        rows.append({**timings, "events": sum((detail.get("events_per_table") or {}).values()),
                     "tables": len(detail.get("events_per_table") or {}),
                     "lag_s": round(detail["lag_s"], 2) if detail.get("lag_s") is not None else None})
    rows.sort(key=lambda r: r["began_at"])
    for earlier, later in zip(rows, rows[1:], strict=False):
        if "committed_at" in earlier:
            earlier["gap_to_next_s"] = round(later["began_at"] - earlier["committed_at"], 3)

    def median(key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return round(statistics.median(values), 3) if values else None

    return {"count": len(rows), **{f"{k}_median": median(k) for k in
                                  ("read_s", "load_s", "commit_s", "gap_to_next_s", "events", "tables", "lag_s")},
            "timeline": [{k: (round(v - since, 2) if k.endswith("_at") else v) for k, v in r.items()} for r in rows]}


def stream(mysql: MariaDBServer, doris: DorisStandIn, work: Path, tables: int = 300, rate: float = 10_000,
           seconds: float = 60.0, warmup: float = 15.0, sample: int = 12, log=print) -> dict:
    """A write load of ``rate`` rows/s spread over ``tables`` tables (``SpreadWriter``), captured by
    a pipeline whose binlog runs the daemon's sensor launches (as ``bench/freshness.py``); freshness
    (MySQL commit → visible in Doris) of the rows of ``sample`` tables spread over them, and the
    peak of Doris transactions running in the database."""
    import warnings

    import pymysql
    from dagster import DagsterInstance
    from rich.console import Console

    from bench.freshness import percentile, run_breakdown, sensor_ticks
    from orchestration.cli.dev import DagsterServices
    from orchestration.cli.instance import prepare_home
    from orchestration.cli.run_once import OnceRun
    from orchestration.defs.pipelines import PipelineHandle

    warnings.filterwarnings("ignore")
    database = "estate_stream"
    names = [f"s{i:03d}" for i in range(tables)]
    mysql.root_sql(f"DROP DATABASE IF EXISTS {database}; CREATE DATABASE {database};" + "".join(
        f"CREATE TABLE {database}.{n} (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL, written_at DATETIME(6) "
        f"NOT NULL); INSERT INTO {database}.{n} SELECT seq, CONCAT('seed ', seq), NOW(6) FROM {database}.seq_1_to_10;"
        for n in names))
    _doris_db(doris, database)
    path = write_pipeline(work / "stream.yaml", host="127.0.0.1", port=mysql.port, fe=doris.fe_http,
                          tables=f"{database}.\\.*", name="estate_stream", state_dir=work / "state-stream",
                          server_id="5641-5660", parallelism=1)
    handle = PipelineHandle.load(path)
    home = prepare_home(work / "dagster-stream")
    console = Console(stderr=True, quiet=True)
    t0 = time.perf_counter()
    with DagsterInstance.from_config(str(home)) as instance:
        once = OnceRun(handle, instance, console, parity_checks=False)
        once.run()
        once.service.close()
    log(f"stream: {tables} tables snapshotted ({time.perf_counter() - t0:.0f} s); dagster-daemon, {rate:,.0f} rows/s "
        f"for {warmup:.0f} s warm-up + {seconds:.0f} s measured")
    services = DagsterServices([path], home, webserver=False, daemon=True, log_dir=work / "logs-stream",
                               working_dir=ROOT, env=dict(os.environ)).start()
    chosen = [names[i * tables // sample] for i in range(sample)]
    poller = SamplePoller(doris.fe_http, database, chosen)
    writer = SpreadWriter(lambda: pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root",
                                                  autocommit=False), database, names, rate)
    try:
        poller.start()
        doris.reset_txn_peaks()
        writer.start()
        time.sleep(warmup)
        measured_from = time.time()
        time.sleep(seconds)
        measured_to = time.time()
        writer.stop()
        wanted = {i: (t, c) for i, (t, c) in writer.commit_times.items()
                  if measured_from <= c <= measured_to and t in poller.maxima}
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and any(
                poller.visible_at(t, max(i for i, (tt, _) in wanted.items() if tt == t)) is None
                for t in {t for t, _ in wanted.values()}):
            time.sleep(0.5)
        poller.halt.set()
        peaks = peak_running(doris)
        latencies = [seen - c for i, (t, c) in wanted.items() if (seen := poller.visible_at(t, i)) is not None]
        missing = len(wanted) - len(latencies)
        with DagsterInstance.from_config(str(home)) as instance:
            breakdown = run_breakdown(instance, handle.sensor_name, measured_from - warmup)
            ticks = sensor_ticks(instance, handle.sensor_name, measured_from - warmup)
        p50, p90, p99 = (percentile(latencies, q) for q in (0.5, 0.9, 0.99))
        batches = batch_timeline(work / "state-stream", measured_from, measured_to)
        return {"tables": tables, "rate_rows_per_s": rate, "seconds": seconds, "sampled_tables": sample,
                "rows_written": len(writer.commit_times),
                "write_rate_rows_per_s": round(sum(1 for _, c in writer.commit_times.values()
                                                   if measured_from <= c <= measured_to) / (measured_to - measured_from)),
                "rows_measured": len(wanted), "rows_not_seen_after_120s": missing, "writer_late_ticks": writer.late_ticks,
                "freshness_s": {"p50": round(p50, 2), "p90": round(p90, 2), "p99": round(p99, 2),
                                "max": round(max(latencies), 2) if latencies else None},
                "target_p99_s": 5.0, "peak_running_txns": peaks.get(database, 0), "binlog_runs": breakdown,
                "sensor": ticks, "batches": batches, "poll_errors": poller.errors, "poll_interval_s": poller.interval_s}
    finally:
        poller.halt.set()
        if writer.is_alive():
            writer.halt.set()
        services.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--run", action="store_true", help="also tidemark run --once")
    parser.add_argument("--rounds", type=int, default=3, help="with --run: pairs of runs, the median ratio reported")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidemark-estate-"))
    mysql, doris = private_stack(work)
    try:
        t0 = time.perf_counter()
        total = fill_estate(mysql, args.tables, args.rows)
        print(f"{total:,} rows in {args.tables} tables of {DATABASE} ({time.perf_counter() - t0:.1f} s)", flush=True)
        pipeline = write_pipeline(work / "estate.yaml", host="127.0.0.1", port=mysql.port, fe=doris.fe_http,
                                  tables=f"{DATABASE}.\\.*", name="estate", state_dir=work / "state-estate",
                                  server_id="5600-5620")
        report = {"tables": args.tables, "rows_per_table": args.rows, "planning": time_splits(pipeline, args.repeat)}
        print(f"tidemark splits: {report['planning']['tidemark_splits_s']} s (best of {args.repeat}), "
              f"next_plan in process {report['planning']['next_plan_in_process_s']} s, "
              f"{report['planning']['chunks']} chunks", flush=True)
        if args.run:
            report.update(measure(mysql, doris, work, args.tables, args.rows, rounds=args.rounds))
        text = json.dumps(report, indent=2)
        print(text)
        if args.out:
            args.out.write_text(text + "\n")
    finally:
        doris.stop()
        mysql.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
