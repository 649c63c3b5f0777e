"""Load the corpus, run ``tidemark run --once`` over it as a user would, change it, run again, compare.

Each group is its own pipeline (its own state and server ids), all run by one ``tidemark run
--once`` call: a stream that stops at one table's change then holds back only that group.

1. Every group is loaded into MariaDB (tests/corpus/corpus.py).
2. ``tidemark validate --connect`` names the tables Tidemark refuses before anything is loaded (a
   Doris-illegal name, a charset it cannot decode...); each is recorded with Tidemark's words and
   left out with ``tables.exclude``, and validation runs again until it passes.
3. ``tidemark run --once``: the snapshot.
4. The binlog phase: each mysql-test group is replayed into ``<db>_b`` (its CREATE, ALTER,
   RENAME, INSERT, UPDATE and DELETE statements reach Doris through the binlog only), and the
   sample databases get row changes and a DDL; ``tidemark run --once`` again.
5. Each MySQL table is compared with its Doris table from outside (tests/corpus/compare.py).

A run that fails naming captured tables (in either phase) records them with the message and starts
that group over without them: fresh pipeline state, fresh Doris databases, its binlog databases
dropped (a sample database reloaded), snapshot, changes, binlog. So one table cannot hide the
result of every other; the tables a stopped stream held back are measured on the next attempt.
A stream that stops at a DDL gets what a user would do: the way out its message names.
``tidemark resnapshot --table`` first (a primary key or type Doris cannot change: the table is
re-created and read again, and should then end equal); a table Tidemark refuses, or that the
resnapshot cannot read any more (renamed away since), is left out with ``tables.exclude`` (it
counts as refused with Tidemark's words) and the group starts over. A table renamed later from a
left-out one enters the stream without its rows (``scan.newly-added-table.enabled`` is off, as
Flink CDC's default): it differs, and says why.

A table ends as ``equal``, ``refused`` (Tidemark named it and said why: acceptable), or
``differing`` (Doris lacks it, or holds other rows; the reason is kept).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import pymysql

from devstack.pipeline_file import write_pipeline
from tests.corpus import compare
from tests.corpus.corpus import Group, GroupKind, load_group

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
# Row changes and a DDL for the sample databases' binlog phase (the mysql-test groups bring their own).
SAMPLE_CHANGES: dict[str, tuple[str, ...]] = {
    "sakila": (
        "UPDATE sakila.film SET rental_rate = rental_rate + 1, description = CONCAT(description, ' (re-release)') "
        "WHERE film_id <= 40",
        "DELETE FROM sakila.payment WHERE payment_id > 15900",
        "INSERT INTO sakila.actor (first_name, last_name) VALUES ('ZOË', 'ŁUKASIEWICZ'), ('日本', 'テスト')",
        "ALTER TABLE sakila.category ADD COLUMN note VARCHAR(40) NULL",
        "UPDATE sakila.category SET note = CONCAT('cat ', name) WHERE category_id % 2 = 0",
    ),
    "world": (
        "UPDATE world.city SET Population = Population + 1 WHERE CountryCode = 'NLD'",
        "DELETE FROM world.countrylanguage WHERE Percentage < 0.2",
        "INSERT INTO world.city (Name, CountryCode, District, Population) VALUES ('Zürich-Ost', 'CHE', 'Zürich', 1)",
    ),
    "employees": (
        "UPDATE employees.salaries SET salary = salary + 100 WHERE emp_no BETWEEN 10001 AND 10100",
        "DELETE FROM employees.titles WHERE emp_no > 10900",
        "ALTER TABLE employees.departments MODIFY dept_name VARCHAR(60) NOT NULL",
        "INSERT INTO employees.departments VALUES ('d010', 'Département Été')",
    ),
}


class Outcome(StrEnum):
    EQUAL = "equal"
    REFUSED = "refused"
    DIFFERING = "differing"


@dataclass(frozen=True)
class TableResult:
    table: str  # db.table
    outcome: Outcome
    detail: str = ""


@dataclass
class Report:
    results: list[TableResult] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    attempts: int = 0
    resnapshots: list[str] = field(default_factory=list)  # the ways out taken: `tidemark resnapshot --table`

    def count(self, outcome: Outcome) -> int:
        return sum(1 for r in self.results if r.outcome is outcome)

    @property
    def differing(self) -> list[TableResult]:
        return [r for r in self.results if r.outcome is Outcome.DIFFERING]

    def summary(self) -> str:
        loaded = len(self.results) - self.count(Outcome.REFUSED)
        lines = [
            "corpus:   tables  loaded  equal  refused  differing",
            f"          {len(self.results):6d}  {loaded:6d}  {self.count(Outcome.EQUAL):5d}  "
            f"{self.count(Outcome.REFUSED):7d}  {self.count(Outcome.DIFFERING):9d}",
            "runtime:  " + ", ".join(f"{k} {v:.0f} s" for k, v in self.seconds.items()),
        ]
        if self.resnapshots:
            lines.append(f"resnapshot --table (the way out a stopped stream named): {', '.join(self.resnapshots)}")
        for r in self.results:
            if r.outcome is not Outcome.EQUAL:
                lines.append(f"  {r.outcome:9s} {r.table}: {r.detail}"[:400])
        causes: dict[str, int] = {}
        for r in self.results:
            if r.outcome is not Outcome.EQUAL:
                causes[f"{r.outcome}: {_cause(r.detail)}"] = causes.get(f"{r.outcome}: {_cause(r.detail)}", 0) + 1
        if causes:
            lines.append("by cause (tables):")
            lines += [f"  {n:4d}  {c}" for c, n in sorted(causes.items(), key=lambda kv: -kv[1])]
        return "\n".join(lines)


def _cause(detail: str) -> str:
    """A differing or refused table's reason with its names and values taken out, to count causes."""
    text = detail.split("; the group's binlog run failed: ", 1)
    why = text[1] if len(text) > 1 else text[0]
    for marker in ("detailMessage = ", "KeyError: ", "Error: ", "failed: ", "column "):
        if marker in why:
            why = why[why.index(marker):]
            break
    why = re.sub(r"`[^`]*`|'[^']*'|\"[^\"]*\"|\[[^\]]*\]|\b\w+\.\w+\b|\d+", "_", why)
    return " ".join(why.split())[:120]


# Tidemark's own refusals (a table it will not take, named, with the way out), not failures.
_REFUSALS = ("has no primary key", "SchemaChangeRefused", "is refused", "cannot capture", "refuses",
             "tables.exclude")


def keyless_chunk_keys(conn, dbs: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """A chunk key column for each keyless table of ``dbs`` (``db.table`` → column), as a user would
    set ``scan.incremental.snapshot.chunk.key-column``: an index's first column, else the first column
    of an orderable type, else the first column (Tidemark then takes it or says why not); and the
    keyless tables no column can name (a ``:`` or ``;`` in every candidate)."""
    orderable = {"tinyint", "smallint", "mediumint", "int", "bigint", "decimal", "char", "varchar", "date",
                 "datetime", "timestamp", "year", "time", "enum", "binary", "varbinary"}
    with conn.cursor() as cur:
        cur.execute("SELECT t.table_schema, t.table_name FROM information_schema.tables t WHERE t.table_type = "
                    f"'BASE TABLE' AND t.table_schema IN ({', '.join(['%s'] * len(dbs))}) AND NOT EXISTS "
                    "(SELECT 1 FROM information_schema.table_constraints c WHERE c.table_schema = t.table_schema "
                    "AND c.table_name = t.table_name AND c.constraint_type = 'PRIMARY KEY') ORDER BY 1, 2", list(dbs))
        keyless = [(r[0], r[1]) for r in cur.fetchall()]
        keys, none = {}, []
        for db, table in keyless:
            cur.execute("SELECT s.column_name, c.data_type FROM information_schema.statistics s JOIN "
                        "information_schema.columns c USING (table_schema, table_name, column_name) "
                        "WHERE s.table_schema = %s AND s.table_name = %s AND s.seq_in_index = 1 ORDER BY s.index_name",
                        (db, table))
            indexed = [r[0] for r in cur.fetchall() if r[1].lower() in orderable]
            cur.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s "
                        "AND table_name = %s ORDER BY ordinal_position", (db, table))
            every = [(r[0], r[1].lower()) for r in cur.fetchall()]
            plain = [n for n, t in every if t in orderable]
            column = (indexed or plain or [n for n, _ in every] or [None])[0]
            if column is None or ":" in column or ";" in column:
                none.append(f"{db}.{table}")
            else:
                keys[f"{db}.{table}"] = column
    return keys, none


def _tables(conn, dbs: Sequence[str]) -> list[tuple[str, str]]:
    with conn.cursor() as cur:
        cur.execute("SELECT table_schema, table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE' "
                    f"AND table_schema IN ({', '.join(['%s'] * len(dbs))}) ORDER BY 1, 2", list(dbs))
        return [(r[0], r[1]) for r in cur.fetchall()]


def _selector(db: str, table: str) -> str:
    """``db.table`` in Flink's selector syntax (an escaped ``\\.`` is any character)."""
    return re.escape(db) + "." + re.escape(table)


def _mentions(text: str, names: Sequence[str]) -> list[str]:
    return [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", text)]


def _forms(name: str) -> tuple[str, str]:
    db, table = name.split(".", 1)
    return f"`{db}`.`{table}`", f"'{name}'"


def _error_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines()
            if re.search(r"Error|refused|cannot|failed", ln) and "Aborted the Doris loads" not in ln]


def _culprits(text: str, captured: Sequence[str]) -> list[str]:
    """The captured tables a failed run's error lines name (as Doris DDL or a quoted ``'db.table'``)."""
    errors = "\n".join(_error_lines(text))
    named = [t for t in captured if any(f in errors for f in _forms(t))]
    return named or _mentions(errors, captured)


def _culprit_context(text: str, name: str) -> str:
    """The error line naming ``name`` and the reason lines after it, on one line."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln in _error_lines(ln) and (any(f in ln for f in _forms(name)) or name in ln):
            tail = [x for x in lines[i:i + 12] if "reason" in x or x is ln]
            return " ".join(" ".join(tail).split())[:600]
    return ""


def _named_in(text: str, dbs: Sequence[str]) -> list[str]:
    """The tables of ``dbs`` a message names (``db.t``, ```db`.`t```), whether MySQL still has them or not."""
    out: list[str] = []
    # the way out names the table whole, whatever its characters ('a/a'): "leave db.t out", "tables.exclude: db.t"
    for m in re.finditer(r"leave (\S+) out of the pipeline|tables\.exclude: ([^\s)]+)", text):
        name = m.group(1) or m.group(2)
        if name.split(".", 1)[0] in dbs and name not in out:
            out.append(name)
    if out:
        return out
    for db in dbs:
        pattern = rf"(?<![\w.`]){re.escape(db)}\.([A-Za-z0-9_$]+)|`{re.escape(db)}`\.`([^`]+)`"
        for m in re.finditer(pattern, text):
            name = f"{db}.{m.group(1) or m.group(2)}"
            if name not in out:
                out.append(name)
    return out


def _is_refusal(why: str) -> bool:
    """Tidemark's own refusal (named, with the way out), not something it sent that Doris refused."""
    if "Doris cannot take" in why:  # Tidemark's own check of a name, before Doris is asked anything
        return True
    if "Doris refused" in why or "Failed to execute sql" in why:
        return False
    return any(marker in why for marker in _REFUSALS)


@dataclass
class GroupRun:
    """One group's pipeline: its attempt number, and the tables refused or failed so far."""

    group: Group
    index: int
    attempt: int = 0
    refused: dict[str, str] = field(default_factory=dict)  # db.table -> Tidemark's words
    failed: dict[str, str] = field(default_factory=dict)  # db.table -> the failed run's message
    unnamed_failure: str = ""  # a failure that named no table: the whole group differs
    chunk_keys: dict[str, str] = field(default_factory=dict)  # keyless db.table -> its chunk key column
    binlog_stop: str = ""  # the binlog run's failure: the stream stopped there, later changes wait
    resnapshots: list[str] = field(default_factory=list)  # tables `tidemark resnapshot --table` re-created

    @property
    def dbs(self) -> list[str]:
        return [self.group.db] + ([f"{self.group.db}_b"] if self.group.kind is GroupKind.MYSQL_TEST else [])

    @property
    def slug(self) -> str:
        return f"c{self.index}a{self.attempt}"


class CorpusRun:
    """One corpus run over ``groups`` on a MariaDB server and a Doris FE."""

    def __init__(self, server, fe: str, groups: Sequence[Group], workdir: Path, *, server_id_base: int = 5600,
                 max_attempts: int = 6):
        self.server, self.fe, self.workdir = server, fe, workdir
        self.runs = [GroupRun(g, i) for i, g in enumerate(groups)]
        self.server_id_base, self.max_attempts = server_id_base, max_attempts
        self.report = Report()
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "TIDEMARK_DAGSTER_HOME": str(workdir / "dagster")}
        self.env.pop("TIDEMARK_FAULTS", None)

    def _conn(self):
        return pymysql.connect(unix_socket=self.server.endpoint.root_socket, user="root", autocommit=True,
                               charset="utf8mb4")

    def _captured(self, run: GroupRun) -> list[str]:
        conn = self._conn()
        try:
            return [f"{d}.{t}" for d, t in _tables(conn, run.dbs)]
        finally:
            conn.close()

    def _time(self, phase: str, started: float) -> None:
        self.report.seconds[phase] = self.report.seconds.get(phase, 0.0) + time.perf_counter() - started

    # -- the pipeline files -----------------------------------------------------------------
    def pipeline(self, run: GroupRun) -> Path:
        path = self.workdir / f"{run.slug}.yaml"
        excluded = sorted(run.refused.keys() | run.failed.keys())
        source: dict = {"scan.incremental.snapshot.chunk.size": 20000}
        if excluded:
            source["tables.exclude"] = ",".join(_selector(*t.split(".", 1)) for t in excluded)
        keys = {t: c for t, c in run.chunk_keys.items() if t not in excluded}
        if keys:
            source["scan.incremental.snapshot.chunk.key-column"] = ";".join(
                f"{_selector(*t.split('.', 1))}:{c}" for t, c in sorted(keys.items()))
        first = self.server_id_base + 4 * run.index
        write_pipeline(path, host=self.server.endpoint.host, port=self.server.endpoint.port, fe=self.fe,
                       tables=",".join(f"{re.escape(db)}.\\.*" for db in run.dbs), name=run.slug,
                       state_dir=self.workdir / "state" / run.slug, server_id=f"{first}-{first + 3}",
                       source=source, pipeline={"schema.change.behavior": "evolve"})
        return path

    def _cli(self, *args: str, timeout: float = 7200) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "orchestration.cli", *args], cwd=ROOT, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    # -- the phases -------------------------------------------------------------------------
    def load(self, runs: Sequence[GroupRun]) -> None:
        """Load ``runs``' groups into MariaDB; their Doris databases are dropped first (a stand-in
        shared with an earlier run must not hand back its tables)."""
        started = time.perf_counter()
        for run in runs:
            for db in run.dbs:
                compare.doris_query(self.fe, "information_schema", f"DROP DATABASE IF EXISTS `{db}`")
        conn = self._conn()
        try:
            for run in runs:
                with conn.cursor() as cur:  # a binlog database left by an earlier run would be snapshotted
                    for db in run.dbs[1:]:
                        cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
                load_group(conn, run.group)
                run.chunk_keys, _ = keyless_chunk_keys(conn, [run.group.db])
        finally:
            conn.close()
        self._time("load", started)

    def validate(self) -> None:
        """Validate every pipeline; record and leave out each table a refusal names, until all pass."""
        started = time.perf_counter()
        pending = list(self.runs)
        for _ in range(20):
            paths = {str(self.pipeline(r)): r for r in pending}
            done = self._cli("validate", "--connect", *paths, timeout=1800)
            if done.returncode == 0:
                break
            still = []
            for run in pending:
                # a warning (a binlog database that does not exist yet matches no table) is no refusal
                lines = [ln for ln in done.stderr.splitlines()
                         if ln.startswith(str(self.workdir / run.slug)) and ": warning: " not in ln]
                if not lines:
                    continue
                captured = [t for t in self._captured(run) if t not in run.refused]
                named = False
                for line in lines:
                    for t in _mentions(line, captured):
                        run.refused.setdefault(t, line.split(".yaml: ", 1)[-1].strip())
                        named = True
                if not named:
                    run.unnamed_failure = "validate: " + " ".join(lines)[-800:]
                    continue
                still.append(run)
            pending = still
            if not pending:
                break
        self._time("validate", started)

    def _run_once(self, runs: Sequence[GroupRun], phase: str) -> list[GroupRun]:
        """``tidemark run --once`` over ``runs``' pipelines; the runs that failed naming a table."""
        runs = [r for r in runs if not r.unnamed_failure]
        if not runs:
            return []
        started = time.perf_counter()
        done = self._cli("run", *(str(self.workdir / f"{r.slug}.yaml") for r in runs), "--once", "--no-checks")
        self.report.attempts += 1
        (self.workdir / f"run{self.report.attempts}-{phase}.log").write_text(done.stderr)
        self._time(phase, started)
        if done.returncode == 0:
            return []
        failed = []
        lines = done.stderr.splitlines()
        for run in runs:
            # the runner's last word on this pipeline: "tidemark run c3a0: <why>"
            mine = [i for i, ln in enumerate(lines) if f"tidemark run {run.slug}: " in ln]
            if not mine:
                continue
            message = " ".join(" ".join(lines[mine[-1]:mine[-1] + 8]).split())[:1500]
            if phase == "binlog":
                if self._take_the_way_out(run, message):
                    failed.append(run)
                continue
            captured = [t for t in self._captured(run) if t not in run.failed and t not in run.refused]
            named = _culprits(done.stderr, captured)
            if not named:
                run.unnamed_failure = f"{phase}: {message}"
                continue
            for t in named:
                why = _culprit_context(done.stderr, t) or message
                (run.refused if _is_refusal(why) else run.failed)[t] = f"{phase}: {why}"
            log.warning("%s of %s failed naming %s; that group starts over without them", phase, run.group.db,
                        ", ".join(named))
            failed.append(run)
        return failed

    def _take_the_way_out(self, run: GroupRun, message: str) -> bool:
        """The group's stream stopped at a DDL: do what its message tells a user. ``tidemark resnapshot
        --table`` first (the table then ends equal if it heals it); a table Tidemark refuses (or that
        resnapshot cannot read any more) is left out with ``tables.exclude`` and the group starts over
        (True); a stop naming no table of the group is kept as the group's binlog stop (False)."""
        for _ in range(12):
            wanted = [t for t in dict.fromkeys(re.findall(r"--table (\S+?)[`'\s,;)]", message + " "))
                      if t.split(".", 1)[0] in run.dbs]
            if wanted:
                started = time.perf_counter()
                done = self._cli("resnapshot", str(self.workdir / f"{run.slug}.yaml"),
                                 *(a for t in wanted for a in ("--table", t)))
                self._time("resnapshot", started)
                self.report.attempts += 1
                (self.workdir / f"run{self.report.attempts}-resnapshot-{run.slug}.log").write_text(done.stderr)
                run.resnapshots += wanted
                log.warning("binlog of %s stopped; tidemark resnapshot --table %s: exit %d", run.group.db,
                            " --table ".join(wanted), done.returncode)
                if done.returncode == 0:
                    return False
                mine = [ln for ln in done.stderr.splitlines() if f"tidemark resnapshot {run.slug}: " in ln]
                message = " ".join((mine[-1] if mine else done.stderr[-1500:]).split())[:1500]
                if "tables.exclude" not in message:
                    continue  # stopped again, further on: its own way out
            named = _named_in(message, run.dbs)
            if not named:
                run.binlog_stop = message
                return False
            for t in named:
                (run.refused if _is_refusal(message) else run.failed)[t] = f"binlog: {message}"
            log.warning("binlog of %s stopped naming %s; that group starts over without them", run.group.db,
                        ", ".join(named))
            return True
        run.binlog_stop = message
        return False

    def change(self, runs: Sequence[GroupRun]) -> None:
        """The binlog phase's changes: mysql-test groups replayed into ``<db>_b``, sample row changes."""
        started = time.perf_counter()
        conn = self._conn()
        try:
            for run in runs:
                g = run.group
                if g.kind is GroupKind.MYSQL_TEST:
                    load_group(conn, g, db=f"{g.db}_b")
                else:
                    with conn.cursor() as cur:
                        for s in SAMPLE_CHANGES.get(g.db, ()):
                            cur.execute(s)
        finally:
            conn.close()
        self._time("changes", started)

    def _restart(self, runs: Sequence[GroupRun]) -> None:
        """Start ``runs`` over: next attempt, their Doris databases dropped, MySQL as before the changes."""
        conn = self._conn()
        try:
            for run in runs:
                run.attempt += 1
                for db in run.dbs:
                    compare.doris_query(self.fe, "information_schema", f"DROP DATABASE IF EXISTS `{db}`")
                if run.group.kind is GroupKind.MYSQL_TEST:
                    with conn.cursor() as cur:
                        cur.execute(f"DROP DATABASE IF EXISTS `{run.group.db}_b`")
                else:
                    load_group(conn, run.group)
                self.pipeline(run)
        finally:
            conn.close()

    def compare(self) -> Report:
        started = time.perf_counter()
        conn = self._conn()
        try:
            for run in self.runs:
                self.report.resnapshots += run.resnapshots
                for db, table in _tables(conn, run.dbs):
                    self.report.results.append(self._compare_one(conn, run, db, table))
        finally:
            conn.close()
        self._time("compare", started)
        return self.report

    def _compare_one(self, conn, run: GroupRun, db: str, table: str) -> TableResult:
        name = f"{db}.{table}"
        if name in run.refused:
            return TableResult(name, Outcome.REFUSED, run.refused[name])
        if name in run.failed:
            return TableResult(name, Outcome.DIFFERING, run.failed[name])
        if run.unnamed_failure:
            return TableResult(name, Outcome.DIFFERING, f"the group's run failed: {run.unnamed_failure}")
        cols = compare.columns(conn, db, table)
        want = compare.mysql_rows(conn, db, table, cols)
        have = compare.doris_rows(self.fe, db, table, cols)
        if isinstance(have, str):
            stop = f"; the group's binlog run failed: {run.binlog_stop}" if run.binlog_stop else ""
            return TableResult(name, Outcome.DIFFERING, f"Doris: {have}{stop}")
        if want != have:
            stop = f"; the group's binlog run failed: {run.binlog_stop}" if run.binlog_stop else ""
            return TableResult(name, Outcome.DIFFERING, compare.diff_text(want, have, cols) + stop)
        return TableResult(name, Outcome.EQUAL)

    def run(self) -> Report:
        started = time.perf_counter()
        self.load(self.runs)
        self.validate()
        pending = list(self.runs)
        for attempt in range(self.max_attempts):
            again = self._run_once(pending, "snapshot")
            ok = [r for r in pending if r not in again and not r.unnamed_failure]
            self.change(ok)
            again += self._run_once(ok, "binlog")
            if not again or attempt == self.max_attempts - 1:
                break  # the last attempt's groups are compared as they stand, not dropped for a run never made
            self._restart(again)
            pending = again
        report = self.compare()
        report.seconds["total"] = time.perf_counter() - started
        return report
