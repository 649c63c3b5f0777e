"""Issue 30's steady stream alone: ``bench.estate.stream`` (10,000 rows/s over 300 tables through
the Dagster daemon) with its own private MariaDB and Doris stand-in, for before/after figures of
the stream without the estate's snapshot runs::

    PYTHONPATH=. .venv/bin/python bench/estate_stream.py --seconds 60 > /tmp/estate_stream.json

Prints the report of ``stream()`` (freshness p50/p90/p99, the runs' batch times) and the load
averages before and after, as JSON. ``--standin-on-tmpfs`` keeps the stand-in's data directory in
``/dev/shm``, where its fsyncs cost nothing (a bench setting, named in the report; docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--tables", type=int, default=300)
    parser.add_argument("--rate", type=float, default=10_000)
    parser.add_argument("--standin-on-tmpfs", action="store_true",
                        help="keep the Doris stand-in's data directory in /dev/shm (its fsyncs then cost nothing; "
                             "see docs/performance.md)")
    args = parser.parse_args(argv)

    from bench.estate import stream
    from bench.snapshot_e2e import private_stack

    work = Path(tempfile.mkdtemp(prefix="tidemark-estate-stream-"))
    doris_dir = Path(tempfile.mkdtemp(prefix="tidemark-estate-stream-doris-", dir="/dev/shm")) if args.standin_on_tmpfs else work
    load_before = os.getloadavg()
    mysql, doris = private_stack(work, doris_dir)
    try:
        report = stream(mysql, doris, work, tables=args.tables, rate=args.rate, seconds=args.seconds,
                        log=lambda m: print(m, file=sys.stderr))
    finally:
        doris.stop()
        mysql.stop()
        shutil.rmtree(work, ignore_errors=True)
        if doris_dir != work:
            shutil.rmtree(doris_dir, ignore_errors=True)
    report["standin_on_tmpfs"] = args.standin_on_tmpfs
    report["loadavg_before"] = [round(x, 2) for x in load_before]
    report["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(report, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
