"""Run the corpus on a private MariaDB and Doris stand-in and print the summary.

    python -m tests.corpus [--sample] [--minimal] [--only DB ...]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
from pathlib import Path

from devstack.mysql import MariaDBServer
from devstack.procs import free_port
from devstack.stack import DorisStandIn
from tests.corpus.corpus import all_groups, group
from tests.corpus.harness import CorpusRun
from tests.corpus.sample import SAMPLE_DBS


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", action="store_true", help="the default suite's sample only")
    ap.add_argument("--minimal", action="store_true", help="binlog_row_metadata=MINIMAL")
    ap.add_argument("--only", nargs="*", help="these groups' databases only")
    ap.add_argument("--keep", type=Path, help="work in this directory and leave it")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    groups = [group(db) for db in args.only] if args.only else \
        [group(db) for db in SAMPLE_DBS] if args.sample else list(all_groups())
    work = args.keep or Path(tempfile.mkdtemp(prefix="corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    server = MariaDBServer(work / "mariadb", port=free_port())
    standin = DorisStandIn(work / "doris", fe_port=free_port(), be_port=free_port())
    server.start()
    standin.start()
    try:
        if args.minimal:
            server.root_sql("SET GLOBAL binlog_row_metadata = 'MINIMAL'")
        report = CorpusRun(server, standin.fe_http, groups, work).run()
        print(report.summary())
        return 0 if not report.differing else 1
    finally:
        standin.stop()
        server.stop()


if __name__ == "__main__":
    raise SystemExit(main())
