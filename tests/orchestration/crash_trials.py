"""The crash matrix's moving parts (issue #15 item 6): a pipeline over a live write workload, a
``tidemark run --once`` killed at a step boundary or at a random moment, the plain re-runs that
heal it, and ``tidemark verify --json``. Test helpers only; the tests are in
``tests/orchestration/test_crash_matrix.py``.

A trial ("episode") on a pipeline:

1. the write workload runs (inserts, updates, deletes, and one hot key updated ~50 times a second);
2. schema-change points only: a DDL on the captured table ``items``, so the run stops at it;
3. ``tidemark run --once`` with ``TIDEMARK_FAULTS`` = the point's ``kill`` — or, for a random
   moment, no fault and a SIGKILL of the run's whole process group (driver, Spark JVM, Python
   workers) after a random delay;
4. a plain ``tidemark run --once`` while the workload still writes (it must exit 0), the workload
   stopped, a final plain run (exit 0), then ``tidemark verify --json`` must exit 0 with
   ``equal: true``.

``snapshot.read`` and ``snapshot.after_precommit`` fire inside a Spark task: their ``kill`` kills a
Python worker, not the driver. Every attempt of every task then dies there, Spark gives up after
``spark.task.maxFailures`` and the run fails (exit 1) with the killed workers' loads left
precommitted in Doris under labels no state record names — what the re-run must survive. A driver
killed mid-read is what the random-moment trials add.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pymysql

from cdc_core.instrumentation.faults import POINTS
from devstack.workload import SteadyWriter
from tests.orchestration.test_e2e_dagster import _create_tables, write_e2e_pipeline

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
TASK_POINTS = ("snapshot.read", "snapshot.after_precommit")  # they fire in a Spark task, not the driver
RANDOM = "random-moment"


class HotKey(threading.Thread):
    """Updates one row ``per_s`` times a second (the same key changed many times within a batch)."""

    def __init__(self, connect: Any, key: int, per_s: float = 50.0):
        super().__init__(daemon=True, name=f"hot-key-{key}")
        self.connect, self.key, self.per_s = connect, key, per_s
        self.updates = 0
        self.error: BaseException | None = None
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            conn = self.connect()
            try:
                while not self._halt.wait(1.0 / self.per_s):
                    with conn.cursor() as cur:
                        cur.execute("UPDATE items SET qty = qty + 1, updated = NOW(3) WHERE id = %s", (self.key,))
                    conn.commit()
                    self.updates += 1
            finally:
                conn.close()
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> int:
        self._halt.set()
        self.join(30)
        if self.error is not None:
            raise RuntimeError(f"the hot-key writer failed: {self.error}") from self.error
        return self.updates


@dataclass
class Workload:
    """The concurrent writes of one trial (``start`` / ``stop`` once each)."""

    socket: str
    db: str
    first_id: int
    seed: int
    writers: list[Any] = field(default_factory=list)

    def connect(self) -> Any:
        return pymysql.connect(unix_socket=self.socket, user="root", database=self.db, autocommit=False)

    def start(self) -> None:
        steady = SteadyWriter(
            self.connect, "items", ("name", "qty", "price", "updated"),
            lambda i, rng: (f"new {i}", rng.randint(0, 50), Decimal(rng.randint(0, 9999)) / 100,
                            "2026-11-22 00:00:00.000"),
            rate=60, ticks_per_s=10, first_id=self.first_id, update_share=0.3, delete_share=0.15,
            update_sql="UPDATE items SET qty = qty + 1, updated = NOW(3) WHERE id = %s", seed=self.seed,
        )
        self.writers = [steady, HotKey(self.connect, key=7)]
        for w in self.writers:
            w.start()

    def stop(self) -> None:
        for w in self.writers:
            w.stop()
        self.writers = []


@dataclass
class Outcome:
    """What one trial saw (printed by the slow test, one line per trial)."""

    target: str
    pipeline: str
    killed_rc: int
    delay_s: float | None
    reruns: int
    equal: bool

    def line(self) -> str:
        moment = f" after {self.delay_s:.1f}s" if self.delay_s is not None else ""
        return (f"{self.target}{moment} on {self.pipeline}: killed run rc={self.killed_rc}, "
                f"{self.reruns} plain re-run(s), verify equal={self.equal}")


class CrashPipeline:
    """One pipeline (its own MySQL database, state dir and Dagster home) that trials run against."""

    def __init__(self, mysql_server: Any, root_conn: Any, doris: Any, base: Path, db: str):
        self.mysql_server, self.root_conn, self.db = mysql_server, root_conn, db
        with root_conn.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{db}`")
        _create_tables(root_conn, db)
        base.mkdir(parents=True, exist_ok=True)
        self.path = base / f"{db}.yaml"
        write_e2e_pipeline(self.path, mysql_server, doris, db, f"crash_{db}",
                           base / "state")
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(base / "dagster")}
        self.env.pop("TIDEMARK_FAULTS", None)
        self.next_id = 100_000
        self.snapshot_done = False
        self.ddl_count = 0

    def drop(self) -> None:
        with self.root_conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{self.db}`")

    def workload(self, seed: int) -> Workload:
        first = self.next_id
        self.next_id += 100_000
        return Workload(self.mysql_server.endpoint.root_socket, self.db, first, seed)

    def cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "orchestration.cli", *args]

    def run_once(self, faults: dict[str, Any] | None = None, kill_after_s: float | None = None,
                 timeout_s: float = 600) -> subprocess.CompletedProcess:
        """``tidemark run --once`` in its own process group; SIGKILL of the group after ``kill_after_s``."""
        env = dict(self.env)
        if faults:
            env["TIDEMARK_FAULTS"] = json.dumps(faults)
        proc = subprocess.Popen(self.cli("run", str(self.path), "--once"), cwd=ROOT, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=kill_after_s if kill_after_s is not None else timeout_s)
        except subprocess.TimeoutExpired:
            if kill_after_s is None:
                os.killpg(proc.pid, signal.SIGKILL)
                out, err = proc.communicate()
                raise AssertionError(f"tidemark run --once did not end within {timeout_s}s: {err[-3000:]}") from None
            os.killpg(proc.pid, signal.SIGKILL)  # the driver, its Spark JVM and the Python workers
            out, err = proc.communicate()
        else:
            # the fault's kill: the driver is gone, its Spark JVM (same group) may linger — end it too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def plain_run(self) -> None:
        done = self.run_once()
        assert done.returncode == 0, f"a plain re-run of {self.path.name} failed:\n{done.stderr[-4000:]}"
        self.snapshot_done = True

    def verify(self) -> dict[str, Any]:
        done = subprocess.run(self.cli("verify", str(self.path), "--json"), cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"verify of {self.path.name}: rc={done.returncode}\n{done.stdout[-4000:]}\n" \
                                     f"{done.stderr[-4000:]}"
        report = json.loads(done.stdout)
        assert report["equal"], report
        return report

    def ddl(self) -> str:
        """A DDL on the captured table ``items`` (alternately adds and drops a nullable column)."""
        n = self.ddl_count
        self.ddl_count += 1
        if n % 2 == 0:
            stmt = f"ALTER TABLE `{self.db}`.items ADD COLUMN note{n // 2} VARCHAR(20) NULL"
        else:
            stmt = f"ALTER TABLE `{self.db}`.items DROP COLUMN note{n // 2}"
        with self.root_conn.cursor() as cur:
            cur.execute(stmt)
        return stmt


def trial(pipeline: CrashPipeline, target: str, rng: random.Random, kill_window_s: float = 20.0) -> Outcome:
    """One crash trial on ``pipeline`` (see the module docstring); raises AssertionError when it does not heal."""
    workload = pipeline.workload(rng.randrange(1 << 30))
    workload.start()
    try:
        stage = target.split(".")[0]
        if stage in ("binlog", "schema_change") and not pipeline.snapshot_done:
            pipeline.plain_run()  # the snapshot first: these points fire in the binlog half
        if stage == "schema_change" or (target == RANDOM and pipeline.snapshot_done and rng.random() < 0.5):
            time.sleep(0.3)  # some changes before the DDL in the binlog
            pipeline.ddl()
            time.sleep(0.3)
        delay = None
        if target == RANDOM:
            delay = rng.uniform(0.5, kill_window_s)
            killed = pipeline.run_once(kill_after_s=delay)
        else:
            killed = pipeline.run_once(faults={target: {"action": "kill"}})
            if target in TASK_POINTS:
                # On Spark a Python worker dies at the point on every attempt: Spark gives up, the run
                # fails. A run small enough to read in the driver (tidemark.snapshot.in-process-rows)
                # dies itself there.
                assert killed.returncode in (1, -signal.SIGKILL), killed.stderr[-4000:]
            else:
                assert killed.returncode == -signal.SIGKILL, \
                    f"the fault {target} did not kill the run (rc={killed.returncode}):\n{killed.stderr[-4000:]}"
        logger.info("%s: killed run rc=%s", target, killed.returncode)
        pipeline.plain_run()  # the workload still writes
    finally:
        workload.stop()
    pipeline.plain_run()  # after the workload stopped: everything it wrote
    report = pipeline.verify()
    return Outcome(target, pipeline.db, killed.returncode, delay, 2, report["equal"])


# The partition sweep's points fire only after partition maintenance, which this workload does not
# do (``items`` is not partitioned): their faults are tried where the sweep runs,
# tests/schema/test_partition_maintenance.py.
SWEEP_POINTS = ("schema_change.before_sweep", "reload.after_page_commit")
# The points between a run's groups fire only in a run or batch past the running-transaction bound
# (tidemark.doris.max-running-txns-per-db), which this workload's one-table batches never reach:
# tests/jobs/test_doris_txn_limit.py and tests/orchestration/test_txn_limit_crash.py kill there.
GROUP_POINTS = ("snapshot.between_groups", "binlog.between_groups")
# The heal commands' points fire only under `tidemark resnapshot` and `tidemark verify --repair`, which
# this workload does not run: tests/orchestration/test_resnapshot.py and tests/jobs/test_repair.py.
HEAL_POINTS = ("resnapshot.after_request", "repair.after_loads")
ALL_TARGETS = (*(p for p in POINTS if p not in SWEEP_POINTS + GROUP_POINTS + HEAL_POINTS), RANDOM)
