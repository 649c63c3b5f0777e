"""One large binlog batch through the stream's own code path, timed: the profile target for the
stream's throughput ceiling.

Starts a private MariaDB and the Doris stand-in, snapshots a small ``ticks`` table with the
pipeline service (in the driver, no Spark), then writes ``--rows`` single-row INSERTs in
transactions of ``--per-commit`` rows (the binlog shape ``bench/freshness.py`` produces: a
TableMap and a one-row WriteRows event per row) and applies them with what a ``binlog_stream``
run calls: ``PipelineService.run_binlog_batch`` then ``commit_batch`` (the commit hook's call),
repeated until the stream has caught up. Prints the time of each batch and the rows/s.

Profile it (the stand-in is a child process, so ``--subprocesses`` separates its time)::

    .venv/bin/py-spy record --subprocesses --format raw -o /tmp/stream.txt -- \\
        .venv/bin/python bench/stream_batch.py --rows 100000
    PYTHONPATH=. .venv/bin/python bench/stream_batch.py --rows 100000 [--max-events 200000]

The estate stream's batch shape, CPU per batch of 300 tables (this process's threads and the
stand-in's, from ``/proc``; the first round compiles and connects, compare the later ones)::

    PYTHONPATH=. .venv/bin/python bench/stream_batch.py --rows 15000 --tables 300 --repeat 4
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pymysql

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.procs import free_port  # noqa: E402
from devstack.stack import DorisStandIn  # noqa: E402

DB = "stream_bench"
PIPELINE = """
source:
  type: mysql
  hostname: 127.0.0.1
  port: {port}
  username: cdc
  password: cdc
  tables: {db}.\\.*
  server-id: 5700-5704
  server-time-zone: UTC
sink:
  type: doris
  fenodes: {fe}
  username: root
  password: ""
  table.create.properties.replication_num: 1
pipeline:
  name: stream_bench
  parallelism: 1
  tidemark.state.dir: {state}
  tidemark.binlog.max-events: {max_events}
"""


def _no_spark():
    raise RuntimeError("the stream batch benchmark never starts Spark")


def write_rows(conn, first_id: int, rows: int, per_commit: int) -> None:
    """Single-row INSERTs, ``per_commit`` to a transaction (as ``devstack.workload.SteadyWriter``)."""
    insert = f"INSERT INTO {DB}.ticks (id, payload, written_at) VALUES (%s, %s, %s)"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    with conn.cursor() as cur:
        for i in range(first_id, first_id + rows):
            cur.execute(insert, (i, f"tick {i}", stamp))
            if (i - first_id + 1) % per_commit == 0:
                conn.commit()
    conn.commit()


def create_tables(conn, tables: int) -> None:
    """``tables`` tables shaped like ``ticks`` (``t000`` ...), for the estate stream's batch shape."""
    with conn.cursor() as cur:
        for t in range(tables):
            cur.execute(f"CREATE TABLE {DB}.t{t:03d} (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL, "
                        "written_at DATETIME(6) NOT NULL)")
    conn.commit()


def write_spread(conn, first_id: int, rows: int, tables: int, per_commit: int, tables_per_commit: int) -> None:
    """The estate stream's binlog shape (``bench/estate.py``): each commit one multi-row INSERT
    into each of ``tables_per_commit`` tables (rotating over ``tables``), ``per_commit`` rows in all."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    per_table = max(1, per_commit // tables_per_commit)
    next_id, written, table = first_id, 0, 0
    with conn.cursor() as cur:
        while written < rows:
            for _ in range(tables_per_commit):
                n = min(per_table, rows - written)
                if n <= 0:
                    break
                values = ", ".join(f"({i}, 'tick {i}', '{stamp}')" for i in range(next_id, next_id + n))
                cur.execute(f"INSERT INTO {DB}.t{table % tables:03d} (id, payload, written_at) VALUES {values}")
                next_id += n
                written += n
                table += 1
            conn.commit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--per-commit", type=int, default=2_500)
    parser.add_argument("--tables", type=int, default=0,
                        help="spread the rows over this many extra tables (0: the one ticks table)")
    parser.add_argument("--tables-per-commit", type=int, default=75)
    parser.add_argument("--max-events", type=int, default=200_000, help="tidemark.binlog.max-events")
    parser.add_argument("--repeat", type=int, default=1,
                        help="write --rows and catch up this many times (the first round warms the process up: "
                             "compare the CPU of the later rounds' batches)")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the batches (the driver's side) into FILE")
    parser.add_argument("--keep", action="store_true")
    parser.add_argument("--standin-on-tmpfs", action="store_true",
                        help="keep the Doris stand-in's data directory in /dev/shm (its fsyncs then cost nothing; "
                             "see docs/performance.md)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")

    from cdc_core.config.pipeline import load_pipeline
    from cdc_core.pipeline.service import PipelineService
    from jobs.spark_executor import SparkExecutor

    work = Path(tempfile.mkdtemp(prefix="tidemark-stream-batch-"))
    mysql = MariaDBServer(work / "mysql", port=free_port())
    doris_dir = Path(tempfile.mkdtemp(prefix="tidemark-stream-batch-doris-", dir="/dev/shm")) if args.standin_on_tmpfs else work
    doris = DorisStandIn(doris_dir / "doris", fe_port=free_port(), be_port=free_port())
    try:
        mysql.start()
        doris.start()
        root = pymysql.connect(unix_socket=mysql.endpoint.root_socket, user="root", autocommit=False)
        with root.cursor() as cur:
            cur.execute(f"CREATE DATABASE {DB}")
            cur.execute(f"CREATE TABLE {DB}.ticks (id BIGINT PRIMARY KEY, payload VARCHAR(64) NOT NULL, "
                        "written_at DATETIME(6) NOT NULL)")
        write_rows(root, 1, 100, 100)
        if args.tables:
            create_tables(root, args.tables)
        path = work / "pipeline.yaml"
        path.write_text(PIPELINE.format(port=mysql.endpoint.port, db=DB, fe=doris.fe_http, state=work / "state",
                                        max_events=args.max_events))
        service = PipelineService(load_pipeline(path), executor=SparkExecutor(_no_spark))
        keys = list(service.plan_splits().chunk_keys)
        service.run_chunks(keys)
        service.commit_chunks(keys)
        batches = []
        profiler = None
        total = 0.0
        standin_cpu = 0.0
        for round_ in range(args.repeat):
            started = time.perf_counter()
            first_id = 1_000 + round_ * args.rows
            if args.tables:
                write_spread(root, first_id, args.rows, args.tables, args.per_commit, args.tables_per_commit)
            else:
                write_rows(root, first_id, args.rows, args.per_commit)
            print(f"wrote {args.rows} rows in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            if args.profile and profiler is None and round_ == args.repeat - 1:
                import cProfile

                profiler = cProfile.Profile()
                profiler.enable()
            total_started = time.perf_counter()
            standin_cpu0 = _cpu_s(doris.pid())
            while service.binlog_lag().behind:
                t0, c0, s0 = time.perf_counter(), time.process_time(), _cpu_s(doris.pid())
                batch = service.run_binlog_batch()
                t1, c1 = time.perf_counter(), time.process_time()
                assert service.commit_batch(batch.batch_id)
                t2, c2, s2 = time.perf_counter(), time.process_time(), _cpu_s(doris.pid())
                events = sum(batch.events_per_table.values())
                batches.append({"round": round_, "changes": events, "tables": len(batch.events_per_table),
                                "prepare_s": round(t1 - t0, 2), "commit_s": round(t2 - t1, 2),
                                "cpu_prepare_s": round(c1 - c0, 3), "cpu_commit_s": round(c2 - c1, 3),
                                "standin_cpu_s": round(s2 - s0, 3)})
                print(f"batch {batch.batch_id}: {events} change(s), prepared in {t1 - t0:.2f} s "
                      f"({c1 - c0:.2f} CPU-s), committed in {t2 - t1:.2f} s ({c2 - c1:.2f} CPU-s)", file=sys.stderr)
            total += time.perf_counter() - total_started
            standin_cpu += _cpu_s(doris.pid()) - standin_cpu0
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.profile)
        changes = sum(b["changes"] for b in batches)
        service.close()
        print(json.dumps({"rows": args.rows, "batches": batches, "total_s": round(total, 2),
                          "changes_per_s": round(changes / total, 1), "standin_cpu_s": round(standin_cpu, 2),
                          "standin_on_tmpfs": args.standin_on_tmpfs,
                          "loadavg_1m": round(os.getloadavg()[0], 2)}, indent=2))
        return 0
    finally:
        doris.stop()
        mysql.stop()
        if args.keep:
            print(f"kept {work}" + (f" and {doris_dir}" if doris_dir != work else ""), file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
            if doris_dir != work:
                shutil.rmtree(doris_dir, ignore_errors=True)


def _cpu_s(pid: int | None) -> float:
    """A process's CPU seconds so far (user + system, ``/proc``); NaN without a process."""
    if pid is None:
        return float("nan")
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    sys.exit(main())
