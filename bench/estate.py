"""A whole database of small tables, as a user captures it (``tables: many.\\.*``): what planning costs.

    .venv/bin/python bench/estate.py [--tables 300] [--rows 2000] [--repeat 2] [--run] [--out FILE.json]

A private MariaDB (and a Doris stand-in) on free ports, the database ``many`` filled by
:func:`fill_estate`: ``--tables`` tables of ``--rows`` rows each, half keyed by a BIGINT, a quarter
by a composite key ``(a INT, b VARCHAR(16))``, a quarter by a ``VARCHAR(32)``. Then, measured:

* ``tidemark splits PIPELINE`` as a subprocess (best of ``--repeat``): the planning a run does, with
  nothing recorded, and the same in-process (``next_plan``) without the process start;
* with ``--run``, ``tidemark run PIPELINE --once --timings`` (the planning step among its phases).

:func:`fill_estate` is what the estate phase of ``bench/run_all.py`` reuses.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.snapshot_e2e import env  # noqa: E402
from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.pipeline_file import write_pipeline  # noqa: E402
from devstack.procs import free_port, two_free_ports  # noqa: E402
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--run", action="store_true", help="also tidemark run --once")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tidemark-estate-"))
    mysql = MariaDBServer(work / "mysql", port=free_port())
    fe, be = two_free_ports()
    doris = DorisStandIn(work / "doris", fe_port=fe, be_port=be)
    mysql.start()
    doris.start()
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
            report["run_once"] = time_run(work, pipeline)
            print(f"tidemark run --once: {report['run_once']['wall_s']} s, phases {report['run_once']['phases_s']}",
                  flush=True)
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
