"""``make bench``: every benchmark in one run on one local stack, each figure beside its limit.

    .venv/bin/python bench/run_all.py [--quick] [--only PHASE ...] [--skip PHASE ...] [--no-peers]
        [--out-dir DIR] [--keep]

One private MariaDB and one Doris stand-in (free ports, a temporary directory) serve all the
phases, in this order:

* ``binlog``: ``bench/binlog_throughput.py`` — Tidemark's stream path vs mysql-replication's raw
  decode and ``mariadb-binlog -v`` over the same binlog range; then the peer
  ``pipelinewise-tap-mysql`` LOG_BASED over that range;
* ``snapshot``: ``bench/snapshot_e2e.py`` per row count — the ``mariadb --quick`` scan, then
  ``tidemark run --once`` and the daemon-executed backfill; at the peers' row count, the peers
  on the same table: tap-mysql FULL_TABLE and the naive reload (``bench/naive_reload.py``);
* ``freshness``: ``bench/freshness.py`` per write rate, beside Dagster's floor (sensor cadence +
  run launch, from the same run's records);
* ``pause``: ``bench/schema_pause.py``, the schema-change pause beside its 30 s limit;
* ``estate``: ``bench/estate.py``, a whole database of small tables (300 × 2,000 rows, mixed keys)
  beside the same rows in one table, the 200k-row ``VARCHAR(32)``-keyed table with and without
  checks, a stream at 10,000 rows/s spread over 300 tables (freshness through the daemon), and the
  peak number of Doris transactions running per database (the stand-in counts them). Runnable
  alone: ``--only estate`` replaces only its section of ``bench/RESULTS.md`` and its table in
  docs/performance.md.

Every phase samples the peak RSS of each process it runs (Tidemark, Spark's JVM and Python
workers, Dagster's daemon and run processes, the peers) and of MariaDB and the stand-in.

Profiles: the default (full) one is what docs/performance.md's table shows (snapshot 1M and 5M rows,
~1M binlog row events, freshness 90 s at 200, 2,000 and 10,000 rows/s, 3 DDLs; about 10-15 min
on a quiet 2-core machine). ``--quick`` (200k rows, 20 s windows at 200 and 2,000 rows/s, one
DDL; a few minutes) is for trying changes. The full profile writes
``bench/results/<date>-<sha>.{json,md}`` and two PNG plots, and copies the markdown to
``bench/RESULTS.md`` (docs/performance.md links it); ``--quick`` writes under ``.tidemark/bench/results/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

import binlog_throughput  # noqa: E402
import estate  # noqa: E402
import freshness  # noqa: E402
import peers  # noqa: E402
import report  # noqa: E402
import schema_pause  # noqa: E402
import snapshot_e2e  # noqa: E402

from devstack.mysql import MariaDBServer  # noqa: E402
from devstack.procs import free_port  # noqa: E402
from devstack.stack import DorisStandIn  # noqa: E402

PHASES = ("binlog", "snapshot", "freshness", "pause", "estate")


@dataclass(frozen=True)
class Profile:
    """The sizes of one bench run."""

    name: str
    snapshot_rows: tuple[int, ...]
    peer_rows: int  # the snapshot row count the peers run on (one of snapshot_rows)
    daemon_backfill: bool
    binlog_rows: int
    binlog_repeat: int
    freshness_rates: tuple[int, ...]
    freshness_seconds: float
    freshness_warmup: float
    ddls: int
    estate_tables: int
    estate_rows: int  # per table
    estate_text_rows: int
    estate_stream_seconds: float
    estate_rounds: int  # pairs of runs (the tables, the one table) whose median ratio is reported
    expected: str  # the wall time to expect on a quiet 2-core machine (printed at the start)


PROFILES = {
    "full": Profile("full", (1_000_000, 5_000_000), 1_000_000, True, 1_000_000, 2, (200, 2_000, 10_000), 90.0, 15.0, 3,
                    300, 2_000, 200_000, 60.0, 3, "about 15-20 min"),
    "quick": Profile("quick", (200_000,), 200_000, True, 200_000, 1, (200, 2_000), 20.0, 5.0, 1, 60, 2_000, 50_000, 20.0, 1,
                     "about 5-10 min"),
}


class Progress:
    """Timestamped progress lines on stderr (the run is long; the summary goes to stdout)."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()

    def __call__(self, message: object) -> None:
        elapsed = int(time.monotonic() - self.t0)
        print(f"[bench {elapsed // 60:02d}:{elapsed % 60:02d}] {message}", file=sys.stderr, flush=True)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def machine_facts() -> dict:
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    version = subprocess.run([mariadbd, "--version"], capture_output=True, text=True).stdout.strip()
    os_name = platform.platform()
    release = Path("/etc/os-release")
    if release.exists():
        fields = dict(line.split("=", 1) for line in release.read_text().splitlines() if "=" in line)
        os_name = fields.get("PRETTY_NAME", os_name).strip('"')
    return {"cpus": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30),
            "os": os_name, "python": platform.python_version(),
            "mariadb": " ".join(version.split()[1:3]) if version else "MariaDB (version unknown)",
            "loadavg_start": [round(x, 2) for x in os.getloadavg()]}


def run_binlog(profile: Profile, mysql: MariaDBServer, doris: DorisStandIn, result: dict, with_peers: bool,
               say: Progress) -> None:
    say(f"binlog: filling {profile.binlog_rows:,} rows, then raw decode / tidemark / mariadb-binlog -v "
        f"(best of {profile.binlog_repeat})")
    figures, table = binlog_throughput.measure(mysql, profile.binlog_rows, profile.binlog_repeat, db="binlog_bench")
    result["binlog"] = figures
    say("binlog:\n" + table.to_markdown(index=False, floatfmt=",.2f", intfmt=","))
    if with_peers:
        say("peer: tap-mysql LOG_BASED over the same binlog range")
        start = figures["binlog_start"]
        tap = peers.tap_log_based(mysql.port, "binlog_bench", "t", start["file"], start["position"],
                                  [mysql.pid(), doris.pid()])
        if tap["records"] != profile.binlog_rows:
            raise RuntimeError(f"tap-mysql LOG_BASED emitted {tap['records']} records, expected {profile.binlog_rows}")
        tap["ratio_tidemark_to_tap"] = round(figures["tidemark_rows_per_s"] / tap["rows_per_s"], 2)
        result.setdefault("peers", {})["tap_log_based"] = tap
        say(f"peer: tap-mysql LOG_BASED {tap['rows_per_s']:,} rows/s ({tap['wall_s']} s)")


def run_snapshot(profile: Profile, mysql: MariaDBServer, doris: DorisStandIn, result: dict, with_peers: bool,
                 say: Progress, keep: bool) -> None:
    args = argparse.Namespace(chunk_size=None, parallelism=2, no_daemon=not profile.daemon_backfill, profile=False,
                              keep=keep, no_parity_ab=False)
    result["snapshot"] = []
    for rows in profile.snapshot_rows:
        say(f"snapshot {rows:,} rows: fill, mariadb --quick scan, tidemark run --once"
            + (", daemon backfill" if profile.daemon_backfill else ""))
        figures = snapshot_e2e.measure(rows, args, BENCH / "results", stack=(mysql, doris), log=say)
        result["snapshot"].append(figures)
        once, back = figures["tidemark_run_once"], figures.get("daemon_backfill", {})
        say(f"snapshot {rows:,}: scan {figures['c_client_scan_s']} s, run --once {once['wall_s']} s "
            f"({once['ratio_to_c_client_scan']}× the scan)"
            + (f", backfill {back['wall_s']} s" if back else ""))
        if with_peers and rows == profile.peer_rows:
            servers = [mysql.pid(), doris.pid()]
            say(f"peer: naive reload (pandas read_sql → one stream load) of {rows:,} rows")
            naive = peers.naive_reload(mysql.port, doris.fe_http, "shop", "t", servers)
            say(f"peer: naive reload {naive['wall_s']} s ({naive['rows_per_s']:,} rows/s)")
            say(f"peer: tap-mysql FULL_TABLE of {rows:,} rows (venv under {peers.PEERS_DIR})")
            tap = peers.tap_full_table(mysql.port, "shop", "t", servers)
            if tap["records"] != rows:
                raise RuntimeError(f"tap-mysql FULL_TABLE emitted {tap['records']} records, expected {rows}")
            say(f"peer: tap-mysql FULL_TABLE {tap['wall_s']} s ({tap['rows_per_s']:,} rows/s)")
            result.setdefault("peers", {}).update({"rows": rows, "naive_reload": naive, "tap_full_table": tap})
            snapshot_e2e.doris_sql(doris, "DROP DATABASE IF EXISTS naive")  # the stand-in's memory, for what follows


# The write load of issue #18's acceptance: inserts in four commits a second, whatever the rate.
FRESHNESS_COMMITS_PER_S = 4


def run_freshness(profile: Profile, mysql: MariaDBServer, doris: DorisStandIn, result: dict, say: Progress) -> None:
    result["freshness"] = []
    for rate in profile.freshness_rates:
        say(f"freshness at {rate:,} rows/s: snapshot, dagster-daemon, {profile.freshness_warmup:.0f} s warm-up + "
            f"{profile.freshness_seconds:.0f} s measured")
        figures = freshness.measure(rate=rate, seconds=profile.freshness_seconds, warmup=profile.freshness_warmup,
                                    commits_per_s=FRESHNESS_COMMITS_PER_S, mysql=mysql, doris=doris, db=f"fresh_{rate}",
                                    log=say)
        result["freshness"].append(figures)
        f = figures["freshness_s"]
        say(f"freshness at {rate:,} rows/s: p50 {f['p50']} s, p99 {f['p99']} s (floor {figures['dagster_floor_p50_s']} s"
            f", {figures['binlog_runs']['runs']} binlog runs)")


def run_pause(profile: Profile, mysql: MariaDBServer, doris: DorisStandIn, result: dict, say: Progress) -> None:
    say(f"schema pause: {profile.ddls} DDL(s) under a 20 rows/s write load")
    figures = schema_pause.measure(ddls=profile.ddls, rate=20.0, mysql=mysql, doris=doris, log=say)
    result["schema_pause"] = figures
    say(f"schema pause: max {figures['pause_window_s']['max']} s (limit {figures['limit_s']:.0f} s)")


ESTATE_STREAM_RATE = 10_000


def _part(figures: dict, name: str, say: Progress, measure) -> dict | None:
    """``figures[name] = measure()``; a failure (SystemExit of a failed command included) is said and
    recorded under ``failed``, and the phase goes on with its other parts."""
    try:
        figures[name] = measure()
        return figures[name]
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - one part's failure is reported, not fatal
        text = str(exc)[-1500:]
        figures.setdefault("failed", {})[name] = text
        say(f"estate: {name} FAILED: {text}")
        return None


def run_estate(profile: Profile, mysql: MariaDBServer, doris: DorisStandIn, result: dict, say: Progress,
               keep: bool) -> None:
    work = Path(tempfile.mkdtemp(prefix="tidemark-estate-"))
    figures: dict = {}
    result["estate"] = figures
    try:
        # each part on its own: a part that fails is recorded as such and the others still run
        say(f"estate: {profile.estate_tables} tables × {profile.estate_rows:,} rows beside the same rows in one table")
        _part(figures, "tables", say, lambda: estate.measure(mysql, doris, work, profile.estate_tables,
                                                             profile.estate_rows, log=say,
                                                             rounds=profile.estate_rounds))
        say(f"estate: {profile.estate_text_rows:,} rows keyed by VARCHAR(32), with and without checks")
        args = argparse.Namespace(chunk_size=None, parallelism=2, no_daemon=True, profile=False, keep=keep,
                                  no_parity_ab=False, parity_ab=True, key="varchar")
        text = _part(figures, "text_key", say, lambda: snapshot_e2e.measure(
            profile.estate_text_rows, args, BENCH / "results", stack=(mysql, doris), log=say))
        if text:
            p = text["parity_cost"]
            say(f"estate: text key {text['tidemark_run_once']['wall_s']} s, without checks "
                f"{p['without_checks_wall_s']} s; parity {p['cost_s']} s = {p['cost_share']:.1%} of the run")
        stream = _part(figures, "stream", say, lambda: estate.stream(
            mysql, doris, work, profile.estate_tables, ESTATE_STREAM_RATE, profile.estate_stream_seconds, 15.0,
            log=say))
        if stream:
            f = stream["freshness_s"]
            say(f"estate: stream over {profile.estate_tables} tables p50 {f['p50']} s, p99 {f['p99']} s, peak "
                f"{stream['peak_running_txns']} Doris transactions running")
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def summary(result: dict) -> str:
    """The headline figures, one per line, for the terminal."""
    lines = [f"bench {result['profile']} at {result['commit']}: {result['duration_s'] / 60:.1f} min"]
    for r in result.get("snapshot", []):
        once, back = r["tidemark_run_once"], r.get("daemon_backfill")
        lines.append(f"  snapshot {r['rows']:>9,}: mariadb --quick {r['c_client_scan_s']:.2f} s | run --once "
                     f"{once['wall_s']:.1f} s ({once['rows_per_s']:,} rows/s, {once['ratio_to_c_client_scan']}× the scan)"
                     + (f" | backfill {back['wall_s']:.1f} s" if back else ""))
    p = result.get("peers", {})
    if "naive_reload" in p:
        lines.append(f"  peers {p['rows']:,} rows: naive reload {p['naive_reload']['wall_s']:.1f} s "
                     f"({p['naive_reload']['rows_per_s']:,} rows/s) | tap-mysql FULL_TABLE "
                     f"{p['tap_full_table']['wall_s']:.1f} s ({p['tap_full_table']['rows_per_s']:,} rows/s)")
    b = result.get("binlog")
    if b:
        lines.append(f"  binlog {b['rows']:,} events: tidemark {b['tidemark_rows_per_s']:,}/s | raw decode "
                     f"{b['raw_mysql_replication_rows_per_s']:,}/s ({b['ratio_tidemark_to_raw']}×) | mariadb-binlog -v "
                     f"{b['mariadb_binlog_v_rows_per_s']:,}/s ({b['ratio_tidemark_to_mariadb_binlog']}×)"
                     + (f" | tap-mysql LOG_BASED {p['tap_log_based']['rows_per_s']:,}/s" if "tap_log_based" in p else ""))
    for f in result.get("freshness", []):
        s = f["freshness_s"]
        lines.append(f"  freshness {f['rate_rows_per_s']:>6,.0f} rows/s: p50 {s['p50']:.2f} s p99 {s['p99']:.2f} s "
                     f"(floor {f['dagster_floor_p50_s']} s; {'within' if f['ok'] else 'OVER'} 10 s / 30 s)")
    sp = result.get("schema_pause")
    if sp:
        lines.append(f"  schema pause: median {sp['pause_window_s']['median']:.2f} s, max {sp['pause_window_s']['max']:.2f} s "
                     f"(limit {sp['limit_s']:.0f} s)")
    e = result.get("estate", {})
    if e.get("tables"):
        t = e["tables"]
        lines.append(f"  estate {t['tables']} tables: {t['run_once']['wall_s']:.1f} s vs one table "
                     f"{t['one_table_run_once']['wall_s']:.1f} s ({t['ratio_to_one_table']}×, target ≤ 2×); peak "
                     f"{t['peak_running_txns']} Doris transactions running")
    if e.get("text_key", {}).get("parity_cost"):
        lines.append(f"  estate text key: parity {e['text_key']['parity_cost']['cost_share']:.1%} of the run (≤ 10 %)")
    if e.get("stream"):
        f = e["stream"]["freshness_s"]
        lines.append(f"  estate stream: p50 {f['p50']:.2f} s, p99 {f['p99']:.2f} s (≤ 5 s), peak "
                     f"{e['stream']['peak_running_txns']} Doris transactions running")
    peaks = report.peak_memory(result)
    if peaks:
        lines.append("  peak RSS (MiB): " + ", ".join(f"{k} {v:,.0f}" for k, v in sorted(peaks.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the small profile, for trying changes")
    parser.add_argument("--only", nargs="+", choices=PHASES, help="run only these phases")
    parser.add_argument("--skip", nargs="+", choices=PHASES, default=[], help="leave these phases out")
    parser.add_argument("--no-peers", action="store_true", help="leave out tap-mysql and the naive reload")
    parser.add_argument("--out-dir", type=Path, default=None,
                        help="where the results go (default: bench/results, or .tidemark/bench/results with --quick)")
    parser.add_argument("--keep", action="store_true", help="keep the servers' directory")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    # as `make bench` sets them, for a run without make: Spark's workers use this venv's Python
    for name, value in (("SPARK_LOCAL_IP", "127.0.0.1"), ("PYSPARK_PYTHON", sys.executable),
                        ("PYSPARK_DRIVER_PYTHON", sys.executable)):
        os.environ.setdefault(name, value)
    profile = PROFILES["quick" if args.quick else "full"]
    phases = [p for p in (args.only or PHASES) if p not in args.skip]
    with_peers = not args.no_peers
    out_dir = args.out_dir or (ROOT / ".tidemark" / "bench" / "results" if args.quick else BENCH / "results")
    out_dir.mkdir(parents=True, exist_ok=True)
    say = Progress()
    sha = git("rev-parse", "--short", "HEAD") or "nogit"
    started = dt.datetime.now(dt.UTC)
    result: dict = {"bench": "run_all", "profile": profile.name, "sizes": asdict(profile), "phases": phases,
                    "date": started.isoformat(timespec="seconds"), "commit": sha,
                    "dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
                    "machine": machine_facts()}
    say(f"profile {profile.name}: {', '.join(phases)}{' + peers' if with_peers else ''} ({profile.expected} on a "
        f"quiet 2-core machine); load average now {result['machine']['loadavg_start']}")
    if with_peers and ("binlog" in phases or "snapshot" in phases):
        say(f"peers: the tap-mysql venv ({peers.TAP_PACKAGE}) at {peers.tap_venv().parent.parent}")
    work = Path(tempfile.mkdtemp(prefix="tidemark-bench-"))
    mysql = MariaDBServer(work / "mysql", port=free_port())
    doris = DorisStandIn(work / "doris", fe_port=free_port(), be_port=free_port())
    t0 = time.monotonic()
    try:
        mysql.start()
        doris.start()
        say(f"stack up: MariaDB on {mysql.port}, Doris stand-in on {doris.fe_http} (under {work})")
        for phase in phases:
            phase_t0 = time.monotonic()
            if phase == "binlog":
                run_binlog(profile, mysql, doris, result, with_peers, say)
            elif phase == "snapshot":
                run_snapshot(profile, mysql, doris, result, with_peers, say, args.keep)
            elif phase == "freshness":
                run_freshness(profile, mysql, doris, result, say)
            elif phase == "pause":
                run_pause(profile, mysql, doris, result, say)
            elif phase == "estate":
                run_estate(profile, mysql, doris, result, say, args.keep)
            result.setdefault("phase_seconds", {})[phase] = round(time.monotonic() - phase_t0, 1)
            say(f"{phase} done in {result['phase_seconds'][phase]:.0f} s")
    finally:
        doris.stop()
        mysql.stop()
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    result["duration_s"] = round(time.monotonic() - t0, 1)
    result["machine"]["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    stem = f"{started.date()}-{sha}" + ("-quick" if args.quick else "")
    json_path = out_dir / f"{stem}.json"
    json_path.write_text(json.dumps(result, indent=2) + "\n")
    md = report.write(result, json_path)
    partial = set(phases) != set(PHASES)
    if not args.quick and args.out_dir is None and partial and "estate" in phases:
        # a run of the estate phase (alone or with a few others) leaves the full run's figures in place
        report.replace_estate_section(BENCH / "RESULTS.md", {**result, "commit": sha})
        say("bench/RESULTS.md's estate section now shows this run")
        if report.update_estate_table(ROOT / "docs" / "performance.md", result, "../bench/RESULTS.md"):
            say("docs/performance.md's estate table now shows this run")
    elif not args.quick and args.out_dir is None:
        latest = BENCH / "RESULTS.md"
        text = md.read_text()
        for name in [json_path.name, *(p.name for p in out_dir.glob(f"{stem}-*.png"))]:
            text = text.replace(f"({name})", f"(results/{name})")
        latest.write_text(text)
        say(f"bench/RESULTS.md now shows {md.name}")
        if report.update_marked_table(ROOT / "docs" / "performance.md", result, "../bench/RESULTS.md"):
            say("docs/performance.md's table now shows this run")
        report.update_estate_table(ROOT / "docs" / "performance.md", result, "../bench/RESULTS.md")
    print(summary(result))
    print(f"results: {json_path}, {md}")
    over = [f"freshness at {f['rate_rows_per_s']:,.0f} rows/s" for f in result.get("freshness", []) if not f["ok"]]
    if not result.get("schema_pause", {}).get("ok", True):
        over.append("the schema-change pause")
    if over:
        say(f"over its target (exit status 1; the results are written): {', '.join(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
