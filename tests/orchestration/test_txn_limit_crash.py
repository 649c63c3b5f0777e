"""``tidemark run --once`` killed with SIGKILL between two groups of a run past the running-transaction
bound (``tidemark.doris.max-running-txns-per-db``; the stand-in enforcing the same limit): between
two groups of snapshot chunks, then between two groups of a binlog batch whose one MySQL transaction
touches both tables (one of them keyless: its copies are counted from Doris). Plain re-runs heal it,
``tidemark verify`` finds Doris equal to MySQL, and no more transactions ran at once than the bound.
"""

from __future__ import annotations

import signal
import uuid

import pytest
import yaml

from tests.orchestration.crash_trials import CrashPipeline
from tests.orchestration.test_e2e_dagster import doris_standin  # noqa: F401

BOUND = 1


@pytest.mark.slow  # the bound itself is tests/jobs/test_doris_txn_limit.py, in the default suite
def test_killed_between_groups_heals_within_the_bound(mysql_server, root_conn, doris_standin, doris_txn_limit,  # noqa: F811
                                                     tmp_path):
    doris_txn_limit(BOUND)
    pipeline = CrashPipeline(mysql_server, root_conn, doris_standin, tmp_path, f"txns_{uuid.uuid4().hex[:10]}")
    try:
        doc = yaml.safe_load(pipeline.path.read_text())
        doc["pipeline"]["tidemark.doris.max-running-txns-per-db"] = BOUND
        pipeline.path.write_text(yaml.safe_dump(doc, sort_keys=False))
        doris_standin.reset_txn_peaks()

        killed = pipeline.run_once(faults={"snapshot.between_groups": {"action": "kill", "when": {"group": 2}}})
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-4000:]
        pipeline.plain_run()

        with root_conn.cursor() as cur:  # one transaction over both tables: two groups at a bound of 1
            cur.execute("BEGIN")
            cur.execute(f"INSERT INTO `{pipeline.db}`.logs VALUES (5000, 'in one txn', '2026-11-26 00:00:00')")
            cur.execute(f"UPDATE `{pipeline.db}`.items SET qty = qty + 1 WHERE id <= 10")
            cur.execute("COMMIT")
        killed = pipeline.run_once(faults={"binlog.between_groups": {"action": "kill"}})
        assert killed.returncode == -signal.SIGKILL, killed.stderr[-4000:]
        with root_conn.cursor() as cur:  # the binlog moves on before the re-run
            cur.execute(f"INSERT INTO `{pipeline.db}`.logs VALUES (5001, 'later', '2026-11-26 00:00:01')")
            cur.execute(f"DELETE FROM `{pipeline.db}`.items WHERE id = 3")
        root_conn.commit()
        pipeline.plain_run()
        report = pipeline.verify()
        assert report["equal"]
        stats = doris_standin.txn_stats()["databases"][pipeline.db]
        assert stats["peak_running"] <= BOUND and stats["running"] == 0
    finally:
        pipeline.drop()
