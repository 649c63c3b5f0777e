"""Snapshot throughput through Spark into the Doris stand-in, against the C client scan of the same table.

    .venv/bin/python bench/snapshot_spark.py [--rows 1000000] [--chunk-size ROWS (default: Flink's, FLINK_DEFAULT_ROWS)] [--parallelism 2]
        [--dataframe | --read-only]

Starts its own MariaDB and Doris stand-in on free ports in a temporary directory, fills
``shop.t(id bigint pk, name varchar(64), amount decimal(10,2), ts datetime(3))`` as in
machine-notes §4, and measures in the same run:

* the limit: ``mariadb --quick -e 'SELECT * FROM shop.t' > /dev/null`` as ``cdc`` over TCP (best of 2);
* ours: ``PipelineService.run_chunks`` over every chunk — from the start of the job to the last
  prepared load (the Spark session, its JVM and its Python workers are started and warmed with a
  few small jobs before, as in a long-running process).

By default each Spark task reads and loads its chunks (``jobs.fused_chunks``); ``--dataframe``
measures the DataFrame path instead (chunk source → Doris writer, the rows crossing the JVM).
``--read-only`` measures the ceiling the loads leave: the same job, whose tasks read their
chunks (watermarks, scan, conversion) and load nothing — what Spark and the reads alone reach
on this machine. Nothing is committed then.
Also prints the CPU seconds each kind of process spent during the job (Python workers, the
Doris stand-in, the JVM, MariaDB), which shows where a 2-core machine's time goes.

Prints rows/s for both and the ratio; with ``--rows 5000000`` also whether it took ≤ 60 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

import yaml


def c_client_scan(port: int) -> float:
    best = float("inf")
    for _ in range(2):
        t0 = time.perf_counter()
        subprocess.run(
            ["mariadb", "--no-defaults", "--quick", "-h127.0.0.1", f"-P{port}", "-ucdc", "-pcdc", "-e",
             "SELECT * FROM shop.t"], stdout=subprocess.DEVNULL, check=True,
        )
        best = min(best, time.perf_counter() - t0)
    return best


WARM_JOBS = 8


def warm_worker(positions):  # noqa: ANN001, ANN201 - an RDD partition function, as the fused job's
    import connectorx  # noqa: F401

    import cdc_core.doris.sink  # noqa: F401
    import cdc_core.mysql.snapshot_reader  # noqa: F401
    import jobs.fused_chunks  # noqa: F401

    for _ in positions:
        yield True


def read_only_task(read_spec, source_password, write_spec, sink_password):  # noqa: ANN001, ANN201, ARG001
    """Stands in for ``jobs.fused_chunks.chunk_messages`` with ``--read-only``: read, load nothing."""
    chunks = read_spec.chunks

    def run(positions):  # noqa: ANN001, ANN202
        from jobs.snapshot_source import read_chunk

        for position in positions:
            table, meta = read_chunk(read_spec, source_password, chunks[position])
            yield json.dumps({"committables": [], "chunks": [meta], "rows": table.num_rows})

    return run


def cpu_seconds() -> dict[str, float]:
    """User + system CPU seconds so far of this machine's processes, by kind (from /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    kinds: dict[str, float] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        kind = ("mariadbd" if "mariadbd" in cmd else "doris_standin" if "devstack.doris" in cmd
                else "jvm" if "java" in cmd else "python_workers" if "pyspark" in cmd else None)
        if kind:
            kinds[kind] = kinds.get(kind, 0.0) + (int(fields[11]) + int(fields[12])) / tick
    return kinds


def main() -> None:
    from cdc_core.mysql.chunk_sizing import FLINK_DEFAULT_ROWS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunk-size", type=int, default=FLINK_DEFAULT_ROWS)
    parser.add_argument("--parallelism", type=int, default=2)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dataframe", action="store_true", help="rows through a DataFrame, not fused tasks")
    mode.add_argument("--read-only", action="store_true", help="the same job without its loads (a ceiling)")
    args = parser.parse_args()

    from cdc_core.config import load_pipeline
    from devstack.mysql import MariaDBServer
    from devstack.procs import free_port
    from devstack.stack import DorisStandIn
    from jobs.spark_executor import spark_service

    work = Path(tempfile.mkdtemp(prefix="tidemark-bench-"))
    mysql = MariaDBServer(work / "mysql", port=free_port())
    doris = DorisStandIn(work / "doris", fe_port=free_port(), be_port=free_port())
    mysql.start()
    doris.start()
    try:
        batches = max(1, args.rows // 100_000)
        per = args.rows // batches
        mysql.root_sql(
            "CREATE DATABASE shop; CREATE TABLE shop.t (id BIGINT PRIMARY KEY, name VARCHAR(64), "
            "amount DECIMAL(10,2), ts DATETIME(3));"
            + "".join(
                f"INSERT INTO shop.t SELECT seq + {b * per}, CONCAT('customer-', seq + {b * per}, '-', MD5(seq)), "
                f"(seq % 100000) / 100, '2026-01-01' + INTERVAL (seq + {b * per}) SECOND FROM shop.seq_1_to_{per};"
                for b in range(batches)
            )
            + "ANALYZE TABLE shop.t;"
        )
        rows = batches * per
        scan_s = c_client_scan(mysql.port)

        pipeline = work / "bench.yaml"
        pipeline.write_text(yaml.safe_dump({
            "source": {"type": "mysql", "hostname": "127.0.0.1", "port": mysql.port, "username": "cdc",
                       "password": "cdc", "tables": "shop.t", "server-id": "5400-5420",
                       "scan.incremental.snapshot.chunk.size": args.chunk_size},
            "sink": {"type": "doris", "fenodes": doris.fe_http, "username": "root", "password": ""},
            "pipeline": {"name": "bench", "parallelism": args.parallelism, "tidemark.state.dir": str(work / "state"),
                         "tidemark.spark.fused-chunk-tasks": not args.dataframe},
        }))
        runner = spark_service(load_pipeline(pipeline, env={}))
        spark = runner.executor.session()
        spark.range(1000).count()  # warm the session, as a long-running process has it
        # … its JVM (the first jobs with Python tasks cost it several times a warm one's CPU) and
        # its Python workers (they keep their imports from task to task)
        for _ in range(WARM_JOBS):
            spark.sparkContext.parallelize(range(64), 4 * args.parallelism).mapPartitions(warm_worker).collect()
        if args.read_only:
            import jobs.fused_chunks

            jobs.fused_chunks.chunk_messages = read_only_task
        keys = list(runner.plan_splits().chunk_keys)
        before = cpu_seconds()
        t0 = time.perf_counter()
        results = runner.run_chunks(keys)
        job_s = time.perf_counter() - t0
        after = cpu_seconds()
        t1 = time.perf_counter()
        if not args.read_only:
            runner.commit_chunks(keys)
        commit_s = time.perf_counter() - t1
        loaded = sum(r.rows for r in results)
        assert loaded == rows, f"loaded {loaded} of {rows} rows"
        report = {
            "mode": "read-only" if args.read_only else "dataframe" if args.dataframe else "fused",
            "rows": rows,
            "chunks": len(keys),
            "chunk_size": args.chunk_size,
            "parallelism": args.parallelism,
            "c_client_scan_s": round(scan_s, 3),
            "c_client_rows_per_s": round(rows / scan_s),
            "snapshot_job_s": round(job_s, 2),
            "snapshot_rows_per_s": round(rows / job_s),
            "ratio_to_c_client": round((rows / job_s) / (rows / scan_s), 3),
            "commit_s": round(commit_s, 2),
            "job_cpu_s": {k: round(after.get(k, 0.0) - before.get(k, 0.0), 2) for k in sorted(after)},
        }
        if rows >= 5_000_000:
            report["five_million_within_60s"] = job_s <= 60.0
        print(json.dumps(report, indent=2))
        runner.close()
        spark.stop()
    finally:
        doris.stop()
        mysql.stop()


if __name__ == "__main__":
    main()
