"""The soak (issue 28 item 5): mixed writes at 2,000 rows/s over 20 tables under ``tidemark dev``,
faults at seeded random moments, Doris compared with MySQL at every quiet point and at the end.

The stack is private (free ports, everything under the output directory): a MariaDB primary, a
MariaDB replica of it replicating by GTID with ``log_slave_updates`` (started at the soak's start,
for the failover), and the Doris stand-in. The pipeline captures ``soak.*`` with
``tidemark.binlog.on-purged: resnapshot``. The initial snapshot is one ``tidemark run --once``
before the writes start; from then on the pipeline runs only under ``tidemark dev`` (the real CLI,
its daemon's binlog sensor launching the stream runs).

The faults (``tests/soak/schedule.py`` says when), as each happens in production:

* **kill -9 of a run**: the process executing a ``binlog_stream`` (or schema-change) run, found by
  the run's process tag, and its children, killed with SIGKILL mid-flight;
* **Doris BE / FE restart**: the stand-in's node restart (``/_standin/restart``): the BE drops its
  loads, the FE refuses and then answers 503;
* **MariaDB restart**: the current primary stopped (SIGTERM) and started again under the writes;
* **DDL**: ``ALTER TABLE … ADD COLUMN`` on a written table, then rows given values in it;
* **purge**: ``tidemark dev`` stopped (the pipeline down), the binlog rotated and every older file
  purged while the writes go on, ``tidemark dev`` started again: its next run meets the purged
  position and heals by the configured resnapshot;
* **failover**: the writer paused until the replica has everything, the primary stopped (under the
  running pipeline, whose runs fail), the replica promoted, the writer moved to it, the pipeline
  file's ``port`` pointed at it and ``tidemark dev`` restarted (its code server reads the file once).

A quiet point pauses the writer, waits until the committed offset has reached the server's position
(nothing prepared, no schema change pending), compares every row (``tests/soak/compare.py``), and
resumes the writes. The writer's clock stops while it is paused, so the soak is ``minutes`` of writes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import logging
import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pymysql
import requests

from devstack.mysql import MariaDBServer
from devstack.mysql_replica import MariaDBReplica
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port, two_free_ports
from devstack.stack import DorisStandIn
from tests.soak import schedule
from tests.soak.compare import TableDiff, compare_table
from tests.soak.schedule import Event
from tests.soak.workload import CREATE_TABLE, TABLES, Counter, Writer, WriterConfig, initial_rows

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
DB = "soak"
PIPELINE = "soak"
CATCH_UP_TIMEOUT_S = 600.0
DEV_READY_S = 300.0


@dataclass(frozen=True)
class SoakConfig:
    minutes: float
    seed: int
    out_dir: Path
    rate: float = 2000.0
    keep: bool = False  # leave the servers running at the end (to look at them)


@dataclass
class Record:
    """One event of the soak, as the figures list it."""

    kind: str
    at_write_s: float
    wall: str
    took_s: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)


class WriteClock:
    """Seconds of writing: stops while the writer is paused."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.paused_total = 0.0
        self.paused_at: float | None = None

    def pause(self) -> None:
        if self.paused_at is None:
            self.paused_at = time.monotonic()

    def resume(self) -> None:
        if self.paused_at is not None:
            self.paused_total += time.monotonic() - self.paused_at
            self.paused_at = None

    def now(self) -> float:
        end = self.paused_at if self.paused_at is not None else time.monotonic()
        return end - self.started - self.paused_total


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%H:%M:%S")


class Soak:
    def __init__(self, config: SoakConfig):
        self.config = config
        self.out = config.out_dir.resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.rng = random.Random(config.seed)
        self.primary = MariaDBServer(self.out / "primary", port=free_port())
        self.replica = MariaDBReplica(self.out / "replica", self.primary, port=free_port())
        fe, be = two_free_ports()
        self.doris = DorisStandIn(self.out / "doris", fe_port=fe, be_port=be)
        self.current: MariaDBServer = self.primary
        self.pipeline_path = self.out / "soak.yaml"
        self.dagster_home = self.out / "dagster"
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(self.dagster_home),
                    "TIDEMARK_LOG_FILE": str(self.out / "tidemark-cli.log")}
        self.env.pop("TIDEMARK_FAULTS", None)
        self.dev: subprocess.Popen | None = None
        self.dev_starts = 0
        self.writer: Writer | None = None
        self.clock = WriteClock()
        self.records: list[Record] = []
        self.quiet: list[dict[str, Any]] = []
        self.ddl_count = 0
        self.purged_at: float | None = None
        self.failed_over = False
        self.wedge: str | None = None

    # ---- set-up -------------------------------------------------------------------------------
    def write_pipeline_file(self) -> None:
        server = self.current
        write_pipeline(self.pipeline_path, host=server.endpoint.host, port=server.endpoint.port,
                       fe=self.doris.fe_http, tables=f"{DB}.\\.*", name=PIPELINE, state_dir=self.out / "state",
                       server_id="5800-5810", pipeline={"tidemark.binlog.on-purged": "resnapshot"})

    def setup(self) -> None:
        self.primary.start()
        self.doris.start()
        conn = self.root_conn()
        try:
            with conn.cursor() as cur:
                cur.execute(f"CREATE DATABASE `{DB}`")
                cur.execute(f"USE `{DB}`")
                for i, table in enumerate(TABLES):
                    cur.execute(CREATE_TABLE.format(table=table))
                    rows = initial_rows(i)
                    cur.executemany(f"INSERT INTO `{table}` (id,k,v,amount,ts) VALUES (%s,%s,%s,%s,NOW(3))", rows)
            conn.commit()
        finally:
            conn.close()
        self.replica.start()
        self.replica.wait_caught_up(120)
        self.write_pipeline_file()
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "orchestration.cli", "run", str(self.pipeline_path), "--once"],
                              cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=900)
        (self.out / "initial-run.log").write_text(done.stdout + done.stderr)
        if done.returncode != 0:
            raise RuntimeError(f"the initial snapshot failed (rc={done.returncode}):\n{done.stderr[-3000:]}")
        self.record("initial snapshot (tidemark run --once)", time.monotonic() - started,
                    {"rows": sum(len(initial_rows(i)) for i in range(len(TABLES)))})

    def root_conn(self, server: MariaDBServer | None = None) -> Any:
        server = server or self.current
        return pymysql.connect(unix_socket=server.endpoint.root_socket, user="root", autocommit=False,
                               charset="utf8mb4")

    # ---- tidemark dev -------------------------------------------------------------------------
    def start_dev(self) -> None:
        self.dev_starts += 1
        port = free_port()
        log_file = open(self.out / f"dev-{self.dev_starts}.log", "wb")  # noqa: SIM115 - handed to the child
        self.dev = subprocess.Popen(
            [sys.executable, "-m", "orchestration.cli", "dev", str(self.pipeline_path), "--port", str(port)],
            cwd=ROOT, env=self.env, stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
            start_new_session=True)
        log_file.close()
        deadline = time.monotonic() + DEV_READY_S
        while True:
            if self.dev.poll() is not None:
                raise RuntimeError(f"tidemark dev exited ({self.dev.returncode}); see {self.out}/dev-{self.dev_starts}.log")
            with contextlib.suppress(requests.RequestException):
                if requests.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError(f"tidemark dev did not answer within {DEV_READY_S:.0f} s")
            time.sleep(1)

    def stop_dev(self) -> None:
        """SIGTERM, as Ctrl-C: ``tidemark dev`` stops its webserver, daemon and code server."""
        if self.dev is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.dev.pid, signal.SIGTERM)
        try:
            self.dev.wait(90)
        except subprocess.TimeoutExpired:
            os.killpg(self.dev.pid, signal.SIGKILL)  # its watchdog stops the Dagster processes
            self.dev.wait(30)
        self.dev = None

    # ---- Dagster runs -------------------------------------------------------------------------
    def instance(self):
        from dagster import DagsterInstance

        return DagsterInstance.from_config(str(self.dagster_home))

    def executing_run_process(self) -> tuple[str, str, int] | None:
        """(run id, job, pid) of an executing run of the pipeline whose process is alive."""
        from dagster import DagsterRunStatus, RunsFilter

        from orchestration.defs.runs import RunProcess

        with self.instance() as instance:
            for run in instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED]), limit=20):
                process = RunProcess.of(run)
                if process is not None and Path(f"/proc/{process.pid}").exists():
                    return run.run_id, run.job_name, process.pid
        return None

    def run_summary(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        with self.instance() as instance:
            for run in instance.get_runs(limit=100_000):
                job = out.setdefault(run.job_name, {})
                job[run.status.value] = job.get(run.status.value, 0) + 1
        return out

    def purge_heals(self) -> list[dict[str, str]]:
        """The runs whose log says the purged binlog was healed by a resnapshot."""
        found = []
        with self.instance() as instance:
            for run in instance.get_runs(limit=100_000):
                for entry in instance.all_logs(run.run_id):
                    if "was purged" in (entry.user_message or ""):
                        found.append({"run_id": run.run_id, "job": run.job_name,
                                      "message": entry.user_message[:300]})
                        break
        return found

    # ---- bookkeeping --------------------------------------------------------------------------
    def record(self, kind: str, took_s: float, detail: dict[str, Any] | None = None) -> Record:
        rec = Record(kind, round(self.clock.now(), 1), _now(), round(took_s, 1), detail or {})
        self.records.append(rec)
        log.info("%s at %.0f s of writing (%.1f s): %s", kind, rec.at_write_s, took_s, detail or "")
        self.save()
        return rec

    def pause_writer(self) -> None:
        assert self.writer is not None
        self.writer.pause()
        self.clock.pause()

    def resume_writer(self, socket: str | None = None) -> None:
        assert self.writer is not None
        self.clock.resume()
        self.writer.resume(socket)

    # ---- the faults ---------------------------------------------------------------------------
    def kill_run(self) -> dict[str, Any]:
        deadline = time.monotonic() + 120
        found = self.executing_run_process()
        while found is None and time.monotonic() < deadline:
            time.sleep(0.5)
            found = self.executing_run_process()
        if found is None:
            raise RuntimeError("no run of the pipeline was executing for 120 s: nothing to kill")
        time.sleep(self.rng.uniform(0, 3))  # a random moment inside the run
        run_id, job, pid = found
        victims = [pid, *_descendants(pid)]
        for p in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        return {"run_id": run_id, "job": job, "pids": victims}

    def doris_restart(self, node: str) -> dict[str, Any]:
        downtime = round(self.rng.uniform(3, 10), 1)
        unavailable = round(self.rng.uniform(2, 8), 1) if node == "fe" else 0.0
        self.doris.restart_node(node, downtime, unavailable)
        return {"node": node, "downtime_s": downtime, "unavailable_s": unavailable}

    def mariadb_restart(self) -> dict[str, Any]:
        server = self.current
        started = time.monotonic()
        server.stop()
        server.start()
        return {"port": server.port, "down_s": round(time.monotonic() - started, 1)}

    def ddl(self) -> dict[str, Any]:
        n = self.ddl_count
        self.ddl_count += 1
        table = TABLES[1 + self.rng.randrange(len(TABLES) - 1)]
        column = f"x{n}"
        conn = self.root_conn()
        try:
            with conn.cursor() as cur:
                cur.execute(f"ALTER TABLE `{DB}`.`{table}` ADD COLUMN {column} INT NULL")
                rows = cur.execute(f"UPDATE `{DB}`.`{table}` SET {column} = k WHERE id % 5 = 0")
            conn.commit()
        finally:
            conn.close()
        return {"statement": f"ALTER TABLE {DB}.{table} ADD COLUMN {column} INT NULL", "rows_set": rows}

    def purge(self) -> dict[str, Any]:
        self.stop_dev()
        time.sleep(self.rng.uniform(2, 8))  # the writes go on while the pipeline is down
        server = self.current
        before = server.binlog_files()
        current = server.flush_binary_logs()
        after = before
        for _ in range(30):
            if not self.failed_over:
                # a purge must not cut the replica off (the failover needs it), and MariaDB keeps a
                # file a replica still reads: the replica first gets past the rotation
                self.replica.wait_caught_up(120)
            server.root_sql(f"PURGE BINARY LOGS TO '{current}'")
            after = server.binlog_files()
            if after[0] == current:
                break
            time.sleep(1)
        else:
            raise RuntimeError(f"PURGE BINARY LOGS TO '{current}' left {after}")
        committed = self.committed_offset()
        if not committed or committed.get("file") in after:
            raise RuntimeError(f"the purge left the committed offset {committed} on the server ({after})")
        self.purged_at = time.time()
        self.start_dev()
        heal_s = self.wait_healed(after[0])
        return {"files_purged": [f for f in before if f not in after], "oldest_left": after[0],
                "committed_offset_purged": committed, "healed_after_s": heal_s,
                "resumed_at": self.committed_offset()}

    def wait_healed(self, oldest: str, timeout_s: float = 600.0) -> float:
        """Until the stream goes on from an offset the server still has: with ``on-purged:
        resnapshot`` the first run re-reads every table and restarts the stream at the new chunks'
        watermarks (with ``fail`` it would stop and stay in the purged file). The writes go on."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            with contextlib.suppress(Exception):
                service = self.service()
                try:
                    offset = service.binlog_lag().committed_offset
                    if (service.binlog_ready() and not service.resnapshot_in_progress() and offset
                            and offset["file"] >= oldest):
                        return round(time.monotonic() - started, 1)
                finally:
                    service.close()
            time.sleep(2)
        self.wedge = f"the purged binlog was not healed within {timeout_s:.0f} s"
        raise RuntimeError(self.wedge)

    def failover(self) -> dict[str, Any]:
        if self.failed_over:
            raise RuntimeError("one failover per soak")
        self.pause_writer()
        paused = time.monotonic()
        gtid = self.replica.wait_caught_up(120)
        self.primary.stop()  # under the running pipeline: its runs and sensor fail to reach MySQL
        self.replica.promote()
        self.current = self.replica
        self.failed_over = True
        self.resume_writer(self.replica.endpoint.root_socket)
        writes_paused = time.monotonic() - paused
        time.sleep(self.rng.uniform(5, 15))  # the pipeline still points at the dead primary
        self.stop_dev()
        self.write_pipeline_file()
        self.start_dev()
        return {"gtid_at_switch": gtid, "writes_paused_s": round(writes_paused, 1),
                "new_port": self.replica.port, "replica_binlog": self.replica.current_binlog()}

    def committed_offset(self) -> dict[str, Any] | None:
        service = self.service()
        try:
            return service.binlog_lag().committed_offset
        finally:
            service.close()

    def service(self):
        from cdc_core.config import load_pipeline
        from cdc_core.pipeline.service import PipelineService

        return PipelineService(load_pipeline(self.pipeline_path))

    # ---- quiet points -------------------------------------------------------------------------
    def caught_up(self) -> tuple[bool, dict[str, Any]]:
        service = self.service()
        try:
            if not service.binlog_ready():
                return False, {"state": "snapshot or resnapshot not finished"}
            if service.binlog_paused():
                return False, {"state": "paused by a schema change"}
            lag = service.binlog_lag()
            if lag.behind:
                return False, {"state": "behind", "bytes_behind": lag.bytes_behind}
            pending = service.pending_transactions()
            if pending:
                return False, {"state": f"{len(pending)} prepared transaction(s)"}
            return True, {"committed": lag.committed_offset, "server": lag.server_offset}
        finally:
            service.close()

    def quiet_point(self, final: bool = False) -> dict[str, Any]:
        self.pause_writer()
        started = time.monotonic()
        bytes_behind = None
        state: dict[str, Any] = {}
        try:
            while True:
                try:
                    ok, state = self.caught_up()
                except Exception as exc:  # noqa: BLE001 - a server restarting: ask again
                    ok, state = False, {"state": f"{type(exc).__name__}: {exc}"}
                if bytes_behind is None and state.get("bytes_behind") is not None:
                    bytes_behind = state["bytes_behind"]
                if ok:
                    break
                if self.writer is not None and self.writer.error():
                    raise RuntimeError("the writer failed")
                if time.monotonic() - started > CATCH_UP_TIMEOUT_S:
                    self.wedge = (f"the pipeline did not catch up within {CATCH_UP_TIMEOUT_S:.0f} s of a quiet "
                                  f"point: {state}")
                    raise RuntimeError(self.wedge)
                time.sleep(1)
            catch_up = time.monotonic() - started
            diffs = self.compare_all()
            total = sum(d.differences for d in diffs)
            again: int | None = None
            if total:  # the same rows a little later: a late commit, or a difference that stays?
                time.sleep(15)
                again = sum(d.differences for d in self.compare_all())
            point = {"index": len(self.quiet) + 1, "final": final, "at_write_s": round(self.clock.now(), 1),
                     "wall": _now(), "catch_up_s": round(catch_up, 1), "bytes_behind_at_pause": bytes_behind,
                     "rows_compared": sum(d.mysql_rows for d in diffs), "differences": total,
                     "differences_15s_later": again,
                     "tables": [asdict(d) for d in diffs if d.differences]}
            self.quiet.append(point)
            return point
        finally:
            if not final:
                self.resume_writer()

    def compare_all(self) -> list[TableDiff]:
        conn = self.root_conn()
        try:
            return [compare_table(conn, self.doris.fe_http, DB, t) for t in TABLES]
        finally:
            conn.close()

    def verify(self) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "orchestration.cli", "verify", str(self.pipeline_path), "--json"],
                              cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=900)
        try:
            report = json.loads(done.stdout)
        except ValueError:
            report = {"stdout": done.stdout[-2000:], "stderr": done.stderr[-2000:]}
        return {"rc": done.returncode, "equal": report.get("equal"), "report": report}

    # ---- the soak -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.config
        wall_start = time.time()
        plan = schedule.plan(cfg.minutes, cfg.seed)
        (self.out / "plan.json").write_text(json.dumps([{"at_s": p.at_s, "event": p.event.value} for p in plan],
                                                       indent=1))
        result: dict[str, Any] = {}
        try:
            self.setup()
            self.start_dev()
            self.writer = Writer(WriterConfig(self.current.endpoint.root_socket, DB, cfg.rate, cfg.seed))
            self.writer.start()
            self.clock = WriteClock()
            self.records = [Record(r.kind, 0.0, r.wall, r.took_s, r.detail) for r in self.records]
            self.soak_started = time.time()
            for item in plan:
                self.wait_writing_until(item.at_s)
                self.fire(item.event)
            self.wait_writing_until(cfg.minutes * 60.0)
            self.fire(Event.QUIET_POINT, final=True)
            result["verify"] = self.verify()
        except Exception as exc:  # noqa: BLE001 - the figures say what failed, then the caller fails
            log.exception("the soak failed")
            result["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            if self.writer is not None:
                self.writer.stop()
            result.update(self.figures(wall_start))
            self.save(result)
            if not cfg.keep:
                self.teardown()
        return result

    def wait_writing_until(self, at_s: float) -> None:
        while self.clock.now() < at_s:
            if self.writer is not None:
                err = self.writer.error()
                if err:
                    raise RuntimeError(f"the writer failed: {err}")
            if self.dev is not None and self.dev.poll() is not None:
                raise RuntimeError(f"tidemark dev exited ({self.dev.returncode}); see {self.out}/dev-{self.dev_starts}.log")
            time.sleep(min(1.0, max(0.05, at_s - self.clock.now())))

    def fire(self, event: Event, final: bool = False) -> None:
        started = time.monotonic()
        if event is Event.QUIET_POINT:
            point = self.quiet_point(final=final)
            self.record(event.value + (" (final)" if final else ""), time.monotonic() - started,
                        {k: point[k] for k in ("catch_up_s", "rows_compared", "differences")})
            if point["differences"]:
                log.error("quiet point %d: %d difference(s): %s", point["index"], point["differences"],
                          point["tables"])
            return
        actions = {
            Event.KILL_RUN: self.kill_run,
            Event.DORIS_BE_RESTART: lambda: self.doris_restart("be"),
            Event.DORIS_FE_RESTART: lambda: self.doris_restart("fe"),
            Event.MARIADB_RESTART: self.mariadb_restart,
            Event.DDL: self.ddl,
            Event.PURGE: self.purge,
            Event.FAILOVER: self.failover,
        }
        detail = actions[event]()
        self.record(event.value, time.monotonic() - started, detail)

    def figures(self, wall_start: float) -> dict[str, Any]:
        totals = self.writer.totals() if self.writer is not None else {}
        written = sum(totals.get(c.name.lower(), 0) for c in (Counter.INSERTED, Counter.UPDATED, Counter.DELETED))
        writing_s = self.clock.now()
        faults: dict[str, int] = {}
        for rec in self.records:
            if rec.kind in {e.value for e in schedule.FAULTS}:
                faults[rec.kind] = faults.get(rec.kind, 0) + 1
        checked = [q for q in self.quiet]
        out: dict[str, Any] = {
            "seed": self.config.seed, "minutes_planned": self.config.minutes, "target_rows_per_s": self.config.rate,
            "wall_start": dt.datetime.fromtimestamp(wall_start, dt.UTC).isoformat(timespec="seconds"),
            "wall_s": round(time.time() - wall_start, 1),
            "writing_s": round(writing_s, 1),
            "rows_written": written, "writer": totals,
            "rows_per_s_while_writing": round(written / writing_s, 1) if writing_s > 0 else None,
            "faults": faults, "faults_expected": {e.value: n for e, n in schedule.counts(self.config.minutes).items()
                                                  if e is not Event.QUIET_POINT},
            "quiet_points_checked": len(checked),
            "differences": sum(q["differences"] for q in checked),
            "max_catch_up_s": max((q["catch_up_s"] for q in checked), default=None),
            "quiet_points": checked, "events": [asdict(r) for r in self.records],
            "wedge": self.wedge, "dev_starts": self.dev_starts,
        }
        with contextlib.suppress(Exception):
            out["dagster_runs"] = self.run_summary()
        with contextlib.suppress(Exception):
            out["purge_heals"] = self.purge_heals()
        return out

    def save(self, result: dict[str, Any] | None = None) -> None:
        data = result if result is not None else {"events": [asdict(r) for r in self.records], "quiet_points": self.quiet}
        (self.out / ("figures.json" if result is not None else "progress.json")).write_text(
            json.dumps(data, indent=1, default=str))

    def teardown(self) -> None:
        with contextlib.suppress(Exception):
            self.stop_dev()
        for stop in (self.doris.stop, self.replica.stop, self.primary.stop):
            with contextlib.suppress(Exception):
                stop()


def _descendants(pid: int) -> list[int]:
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError):
                kids = [int(c) for c in (task / "children").read_text().split()]
                out += kids
                todo += kids
    return out


def summary_markdown(fig: dict[str, Any], command: str) -> str:
    lines = [
        "# Soak run", "",
        f"`{command}`", "",
        "| figure | value |", "|---|---:|",
        f"| started (UTC) | {fig['wall_start']} |",
        f"| duration of writes | {fig['writing_s'] / 60:.1f} min ({fig['wall_s'] / 60:.1f} min wall, with quiet points) |",
        f"| rows written (inserted / updated / deleted) | {fig['rows_written']:,} ({fig['writer'].get('inserted', 0):,} / "
        f"{fig['writer'].get('updated', 0):,} / {fig['writer'].get('deleted', 0):,}) |",
        f"| rate while writing (target {fig['target_rows_per_s']:,.0f}) | {fig['rows_per_s_while_writing'] or 0:,.0f} rows/s |",
        f"| writer ticks late / failed statements | {fig['writer'].get('late_ticks', 0)} / {fig['writer'].get('errors', 0)} |",
        *(f"| fault: {k} | {v} |" for k, v in fig["faults"].items()),
        f"| quiet points checked | {fig['quiet_points_checked']} |",
        f"| differences | {fig['differences']} |",
        f"| max catch-up at a quiet point | {fig['max_catch_up_s']} s |",
    ]
    if fig.get("verify"):
        lines.append(f"| `tidemark verify` at the end | rc={fig['verify']['rc']}, equal={fig['verify']['equal']} |")
    if fig.get("error"):
        lines += ["", f"**The soak failed:** {fig['error']}"]
    return "\n".join(lines) + "\n"
