"""The human side of ``bench/run_all.py``'s results: a markdown table and two PNG plots per run.

    .venv/bin/python bench/report.py bench/results/<date>-<sha>.json

rewrites ``<date>-<sha>.md`` and the plots next to a results JSON (e.g. after changing this file).
Each figure sits beside the limit measured in the same run, and the peers beside Tidemark.
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

log = logging.getLogger(__name__)

# phases of `tidemark run --timings` (cdc_core/instrumentation/phases.py); "snapshot" and "binlog" enclose others, and
# Spark starts lazily inside the first read_load (orchestration/defs/resources.py), so it is taken out of it; the
# table_parity check at the end of the run is "verify" inside "parity" (orchestration/cli/run_once.py), so it is
# taken out of "parity", which keeps the chunk_parity checks
SNAPSHOT_PHASES = ("planning", "spark_start", "read_load", "commit", "reload_sweep", "resolve_pending", "parity",
                   "verify")


def split_phases(once: dict) -> dict[str, float]:
    """Disjoint seconds per phase of one ``tidemark run --once``, plus ``rest`` (Dagster's runs and
    events, process start and exit) so that they add up to the wall time."""
    given = once.get("phases_s", {})
    out = {p: float(given.get(p, 0.0)) for p in SNAPSHOT_PHASES}
    if out["spark_start"] <= out["read_load"]:
        out["read_load"] -= out["spark_start"]
    if out["verify"] <= out["parity"]:
        out["parity"] -= out["verify"]
    out["rest"] = max(0.0, once["wall_s"] - sum(out.values()) - float(given.get("binlog", 0.0)))
    return out


def _n(value: float | int | None, unit: str = "", digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) or (isinstance(value, float) and value >= 1000):
        return f"{value:,.0f}{unit}"
    return f"{value:.{digits}f}{unit}"


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}×"


def snapshot_rows(result: dict) -> list[str]:
    peers = result.get("peers", {})
    lines = ["| rows | `mariadb --quick` scan (limit) | `tidemark run --once` | ÷ limit | daemon backfill | ÷ limit | "
             "naive reload (pandas → 1 stream load) | tap-mysql FULL_TABLE (to a null target) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in result.get("snapshot", []):
        once, back = r["tidemark_run_once"], r.get("daemon_backfill", {})
        naive = peers.get("naive_reload") if peers.get("rows") == r["rows"] else None
        tap = peers.get("tap_full_table") if peers.get("rows") == r["rows"] else None
        lines.append(
            f"| {r['rows']:,} | {r['c_client_scan_s']:.2f} s ({r['c_client_rows_per_s']:,} rows/s) | "
            f"{once['wall_s']:.1f} s ({once['rows_per_s']:,} rows/s) | {once['ratio_to_c_client_scan']}× | "
            + (f"{back['wall_s']:.1f} s ({back.get('rows_per_s', 0):,} rows/s) | {back['ratio_to_c_client_scan']}× | "
               if back else "- | - | ")
            + (f"{naive['wall_s']:.1f} s ({naive['rows_per_s']:,} rows/s) | " if naive else "- | ")
            + (f"{tap['wall_s']:.1f} s ({tap['rows_per_s']:,} rows/s) |" if tap else "- |"))
    return lines


def phase_rows(result: dict) -> list[str]:
    names = [*SNAPSHOT_PHASES, "rest"]
    lines = ["| rows | " + " | ".join(names) + " | wall |", "|---:|" + "---:|" * (len(names) + 1)]
    for r in result.get("snapshot", []):
        once = r["tidemark_run_once"]
        split = split_phases(once)
        lines.append(f"| {r['rows']:,} | " + " | ".join(f"{split[p]:.1f} s" for p in names)
                     + f" | {once['wall_s']:.1f} s |")
    return lines


def parity_rows(result: dict) -> list[str]:
    """What the chunk_parity check cost, where ``bench/snapshot_e2e.py`` measured it (5M rows)."""
    rows = [r for r in result.get("snapshot", []) if r.get("parity_cost")]
    if not rows:
        return []
    lines = ["| rows | the check's step | MySQL's side during the reads and commits | reads with / without checks | "
             "commits with / without checks | cost (step + what it added to the reads and commits) | "
             "wall with / without checks (jitter included) |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        p, once = r["parity_cost"], r["tidemark_run_once"]
        lines.append(f"| {r['rows']:,} | {p['check_step_s']:.1f} s ({p['check_step_share']:.1%}) | "
                     f"{p['mysql_side_during_commits_s']:.1f} s | "
                     f"{p.get('read_load_s', 0.0):.1f} s / {p.get('read_load_s_without_checks', 0.0):.1f} s | "
                     f"{p['commit_s']:.1f} s / {p['commit_s_without_checks']:.1f} s | "
                     f"{p['cost_s']:.1f} s ({p['cost_share']:.1%}) | "
                     f"{once['wall_s']:.1f} s / {p['without_checks_wall_s']:.1f} s |")
    return lines


def binlog_rows(result: dict) -> list[str]:
    b = result.get("binlog")
    if not b:
        return []
    tap = result.get("peers", {}).get("tap_log_based")
    return ["| row events | mysql-replication raw decode (limit) | `mariadb-binlog -v` (C) | Tidemark | ÷ raw | "
            "÷ `mariadb-binlog` | tap-mysql LOG_BASED |",
            "|---:|---:|---:|---:|---:|---:|---:|",
            f"| {b['rows']:,} | {b['raw_mysql_replication_rows_per_s']:,} rows/s | "
            f"{b['mariadb_binlog_v_rows_per_s']:,} rows/s | **{b['tidemark_rows_per_s']:,} rows/s** | "
            f"{b['ratio_tidemark_to_raw']}× | {b['ratio_tidemark_to_mariadb_binlog']}× | "
            + (f"{tap['rows_per_s']:,} rows/s ({tap['records']:,} records in {tap['wall_s']:.1f} s) |" if tap else "- |")]


def freshness_rows(result: dict) -> list[str]:
    lines = ["| write rate | rows measured | p50 | p90 | p99 | max | Dagster floor for p50 (limit) | p50 ÷ floor | "
             "sensor interval | binlog runs (median run) | p50 ≤ 10 s, p99 ≤ 30 s |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for f in result.get("freshness", []):
        s, runs = f["freshness_s"], f["binlog_runs"]
        lines.append(
            f"| {f['rate_rows_per_s']:,.0f} rows/s | {f['rows_measured']:,} | {s['p50']:.2f} s | {s['p90']:.2f} s | "
            f"{s['p99']:.2f} s | {_n(s['max'], ' s')} | {_n(f['dagster_floor_p50_s'], ' s')} | "
            f"{_ratio(f['ratio_p50_to_floor'])} | {_n(f['sensor'].get('interval_s_median'), ' s')} | "
            f"{runs['runs']} ({_n(runs['started_to_finished_s_median'], ' s')}) | "
            f"{'within' if f['ok'] else 'OVER'}{'' if not f['rows_missing_after_120s'] else ', rows MISSING'} |")
    return lines


def pause_rows(result: dict) -> list[str]:
    p = result.get("schema_pause")
    if not p:
        return []
    return ["| DDLs (`ADD COLUMN`, under a write load) | pause median | pause max | limit | max ÷ limit |",
            "|---:|---:|---:|---:|---:|",
            f"| {len(p['ddls'])} at {p['write_rate_rows_per_s']:.0f} rows/s | {p['pause_window_s']['median']:.2f} s | "
            f"{p['pause_window_s']['max']:.2f} s | {p['limit_s']:.0f} s | {p['ratio_to_limit_max']}× |"]


ESTATE_START, ESTATE_END = "<!-- estate:start -->", "<!-- estate:end -->"


def estate_rows(result: dict) -> list[str]:
    """The estate phase (``bench/estate.py``): a whole database of small tables beside the same rows
    in one table, the text-keyed table with and without checks, a stream spread over the tables,
    and the peak of Doris transactions running per database."""
    e = result.get("estate")
    if not e:
        return []
    lines = ["| measured | Tidemark | beside, same run | ratio | target |", "|---|---:|---:|---:|---|"]
    many = e.get("tables")
    if many:
        rounds = many.get("rounds") or []
        each = (f" (median of {len(rounds)} rounds: " + ", ".join(f"{r['ratio']}×" for r in rounds) + ")"
                if len(rounds) > 1 else "")
        lines.append(f"| {many['tables']} tables × {many['rows_per_table']:,} rows (mixed keys), `tidemark run --once` | "
                     f"{many['run_once']['wall_s']:.1f} s | the same {many['rows']:,} rows in one table "
                     f"{many['one_table_run_once']['wall_s']:.1f} s | {many['ratio_to_one_table']}×{each} | ≤ 2× |")
        lines.append(f"| Doris transactions running at once in the database, those runs (peak) | "
                     f"{many['peak_running_txns']} | `max_running_txn_num_per_db` {many['limit_running_txns']} | "
                     f"{many['peak_running_txns'] / many['limit_running_txns']:.2f}× | ≤ 100 |")
    text = e.get("text_key")
    if text and text.get("parity_cost"):
        p, once = text["parity_cost"], text["tidemark_run_once"]
        lines.append(f"| {text['rows']:,} rows keyed by `VARCHAR(32)`, `tidemark run --once` | {once['wall_s']:.1f} s | "
                     f"`--no-checks` {p['without_checks_wall_s']:.1f} s | parity {p['cost_s']:.1f} s = "
                     f"{p['cost_share']:.1%} of the run (wall difference {p['wall_delta_share']:.1%}) | ≤ 10 % |")
    st = e.get("stream")
    if st:
        f = st["freshness_s"]
        lines.append(f"| stream {st['rate_rows_per_s']:,.0f} rows/s over {st['tables']} tables, freshness p50 / p99 "
                     f"({st['rows_measured']:,} rows of {st['sampled_tables']} tables) | {f['p50']:.1f} s / {f['p99']:.1f} s | "
                     f"the writer reached {st['write_rate_rows_per_s']:,} rows/s; {st['binlog_runs']['runs']} binlog "
                     f"run(s); {st['rows_not_seen_after_120s']:,} rows not seen 120 s after the load | "
                     f"{f['p99'] / st['target_p99_s']:.2f}× | p99 ≤ 5 s |")
        lines.append(f"| Doris transactions running at once in the database, the stream (peak) | "
                     f"{st['peak_running_txns']} | | | ≤ 100 |")
    if many:
        lines += ["", "Where the two runs' time went (`--timings`, seconds):", "",
                  "| run | " + " | ".join([*SNAPSHOT_PHASES, "rest"]) + " | wall |",
                  "|---|" + "---:|" * (len(SNAPSHOT_PHASES) + 2)]
        for name, once in ((f"{many['tables']} tables", many["run_once"]), ("one table", many["one_table_run_once"])):
            split = split_phases(once)
            lines.append(f"| {name} | " + " | ".join(f"{split[p]:.1f}" for p in [*SNAPSHOT_PHASES, "rest"])
                         + f" | {once['wall_s']:.1f} |")
    return lines


def estate_section(result: dict) -> str:
    """The estate phase's section of the markdown, between its markers (a run of that phase alone
    replaces only it in bench/RESULTS.md: ``replace_estate_section``)."""
    m = result["machine"]
    return "\n".join([
        ESTATE_START, "## A whole database: many small tables (`bench/run_all.py --only estate`)", "",
        f"At `{result['commit']}`, {result['date'][:10]}, load average {m['loadavg_start']} at the start. "
        "`bench/estate.py`: tables of the database `many`, half keyed by a BIGINT, a quarter by `(INT, "
        "VARCHAR(16))`, a quarter by a `VARCHAR(32)`; the same rows in `one.t`; the text-keyed table is "
        "`bench/snapshot_e2e.py --key varchar`; the stream writes every table once a second, four commits a second.",
        "", *estate_rows(result), "", ESTATE_END])


def replace_estate_section(doc: Path, result: dict) -> None:
    """Put this run's estate section into ``doc`` (bench/RESULTS.md), in place of the one there, or at its end."""
    text = doc.read_text() if doc.exists() else ""
    section = estate_section(result)
    if ESTATE_START in text and ESTATE_END in text:
        before, rest = text.split(ESTATE_START, 1)
        _, after = rest.split(ESTATE_END, 1)
        text = f"{before}{section}{after}"
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    doc.write_text(text)


def update_estate_table(doc: Path, result: dict, link: str) -> bool:
    """Replace the table between the estate markers of ``doc`` (docs/performance.md)."""
    start, end = "<!-- bench-estate:start -->", "<!-- bench-estate:end -->"
    text = doc.read_text()
    if start not in text or end not in text or not result.get("estate"):
        return False
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    lines = estate_rows(result)
    rows = lines[:lines.index("")] if "" in lines else lines  # the headline table, not the phases after it
    foot = (f"From `bench/run_all.py --only estate` ({result['date'][:10]}, `{result['commit']}`, load average "
            f"{result['machine']['loadavg_start']} at the start): [the figures]({link}).")
    doc.write_text(f"{before}{start}\n" + "\n".join(rows) + f"\n\n{foot}\n{end}{after}")
    return True


def memory_by_phase(result: dict) -> dict[str, dict[str, float]]:
    phases: dict[str, dict[str, float]] = {}
    for r in result.get("snapshot", []):
        phases[f"snapshot {r['rows']:,}: run --once"] = r["tidemark_run_once"].get("peak_rss_mib", {})
        if "daemon_backfill" in r:
            phases[f"snapshot {r['rows']:,}: backfill"] = r["daemon_backfill"].get("peak_rss_mib", {})
    for f in result.get("freshness", []):
        phases[f"freshness {f['rate_rows_per_s']:,.0f} rows/s"] = f.get("peak_rss_mib", {})
    if result.get("schema_pause"):
        phases["schema pause"] = result["schema_pause"].get("peak_rss_mib", {})
    for name, peer in result.get("peers", {}).items():
        if isinstance(peer, dict) and "peak_rss_mib" in peer:
            phases[f"peer: {name}"] = peer["peak_rss_mib"]
    return phases


def peak_memory(result: dict) -> dict[str, float]:
    """The highest RSS of each process kind over every phase, in MiB."""
    peaks: dict[str, float] = {}
    for mem in memory_by_phase(result).values():
        for kind, mib in mem.items():
            peaks[kind] = max(peaks.get(kind, 0.0), mib)
    return peaks


def memory_rows(result: dict) -> list[str]:
    phases = memory_by_phase(result)
    kinds = sorted({k for mem in phases.values() for k in mem})
    if not kinds:
        return []
    lines = ["| phase | " + " | ".join(kinds) + " |", "|---|" + "---:|" * len(kinds)]
    for name, mem in phases.items():
        lines.append(f"| {name} | " + " | ".join(_n(mem.get(k), "", 0) for k in kinds) + " |")
    return lines


def headline(result: dict, link: str) -> str:
    """docs/performance.md's table: one line per figure, its limit and the peers, all from one run."""
    peers = result.get("peers", {})
    lines = ["| measured | Tidemark | limit, same run | Tidemark ÷ limit | peers, same run |", "|---|---:|---:|---:|---|"]
    for r in result.get("snapshot", []):
        once, back = r["tidemark_run_once"], r.get("daemon_backfill")
        peer = "-"
        if peers.get("rows") == r["rows"] and "naive_reload" in peers:
            peer = (f"naive reload {peers['naive_reload']['wall_s']:.1f} s; tap-mysql FULL_TABLE "
                    f"{peers['tap_full_table']['wall_s']:.1f} s")
        scan = f"`mariadb --quick` {r['c_client_scan_s']:.2f} s"
        lines.append(f"| snapshot {r['rows']:,} rows, `tidemark run --once` | {once['wall_s']:.1f} s | {scan} | "
                     f"{once['ratio_to_c_client_scan']}× | {peer} |")
        if r.get("parity_cost"):
            p = r["parity_cost"]
            lines.append(f"| snapshot {r['rows']:,} rows, what the parity check cost | {p['cost_s']:.1f} s | "
                         f"10 % of the run (target) | {p['cost_share']:.1%} | |")
        if back:
            lines.append(f"| snapshot {r['rows']:,} rows, backfill by the daemon | {back['wall_s']:.1f} s | {scan} | "
                         f"{back['ratio_to_c_client_scan']}× | |")
    b = result.get("binlog")
    if b:
        tap = peers.get("tap_log_based")
        lines.append(f"| binlog, {b['rows']:,} row events | {b['tidemark_rows_per_s']:,} rows/s | raw decode "
                     f"{b['raw_mysql_replication_rows_per_s']:,} rows/s; `mariadb-binlog -v` "
                     f"{b['mariadb_binlog_v_rows_per_s']:,} rows/s | {b['ratio_tidemark_to_raw']}×; "
                     f"{b['ratio_tidemark_to_mariadb_binlog']}× | "
                     + (f"tap-mysql LOG_BASED {tap['rows_per_s']:,} rows/s |" if tap else "|"))
    for f in result.get("freshness", []):
        s = f["freshness_s"]
        lines.append(f"| freshness at {f['rate_rows_per_s']:,.0f} rows/s, p50 / p99 | {s['p50']:.1f} s / {s['p99']:.1f} s | "
                     f"Dagster floor {_n(f['dagster_floor_p50_s'], ' s', 1)} | {_ratio(f['ratio_p50_to_floor'])} | |")
    sp = result.get("schema_pause")
    if sp:
        lines.append(f"| schema-change pause, max of {len(sp['ddls'])} | {sp['pause_window_s']['max']:.1f} s | "
                     f"{sp['limit_s']:.0f} s (target) | {sp['ratio_to_limit_max']}× | |")
    peaks = peak_memory(result)
    if peaks:
        ours = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(peaks.items()) if not k.startswith("peer_"))
        theirs = ", ".join(f"{k[5:]} {v:,.0f}" for k, v in sorted(peaks.items()) if k.startswith("peer_"))
        lines.append(f"| peak RSS per process kind (MiB) | {ours} | | | {theirs} |")
    m = result["machine"]
    lines += ["", f"From one `make bench` ({result['profile']} profile, {result['date'][:10]}, `{result['commit']}`, "
              f"{m['cpus']} cores, {result['duration_s'] / 60:.0f} min): [all the figures and the plots]({link})."]
    return "\n".join(lines)


def update_marked_table(doc: Path, result: dict, link: str) -> bool:
    """Replace the table between the bench markers of ``doc`` (docs/performance.md); False when it has none."""
    start, end = "<!-- bench:start -->", "<!-- bench:end -->"
    text = doc.read_text()
    if start not in text or end not in text:
        return False
    before, rest = text.split(start, 1)
    _, after = rest.split(end, 1)
    doc.write_text(f"{before}{start}\n{headline(result, link)}\n{end}{after}")
    return True


def markdown(result: dict, plots: dict[str, str]) -> str:
    m = result["machine"]
    head = [
        f"# Bench results: {result['date']} at `{result['commit']}`{' (uncommitted changes)' if result.get('dirty') else ''}, "
        f"profile `{result['profile']}`",
        "",
        f"`make bench` on {m['cpus']} cores, {m['memory_gib']} GiB RAM, {m['os']}, Python {m['python']}, "
        f"{m['mariadb']}. The whole run took {result['duration_s'] / 60:.1f} min; load average "
        f"{m['loadavg_start']} at the start, {m.get('loadavg_end', '-')} at the end (other work on the machine "
        "slows every figure, limits included). One MariaDB and one Doris stand-in served every phase. "
        f"Raw figures: [`{result['json_name']}`]({result['json_name']}).",
        "",
        "Each figure stands beside its limit, measured in the same run on the same data: the C client's scan for "
        "the snapshot, mysql-replication's bare decode (and the C `mariadb-binlog -v`) for the binlog, Dagster's "
        "own sensor cadence and run launch for freshness. The table every throughput figure uses is "
        "`t(id BIGINT PK, name VARCHAR(64), amount DECIMAL(10,2), ts DATETIME(3))`.",
        "",
        "## Snapshot, with the peers",
        "",
        *snapshot_rows(result),
        "",
        "Where `tidemark run --once`'s time went (`--timings`; `read_load` without the Spark start inside it; "
        "`rest`: Dagster's runs and events, process start and exit):",
        "",
        *phase_rows(result),
        "",
        "What the parity check after the snapshot cost (`chunk_parity`, checksums computed in both databases; "
        "the same table again with `tidemark run --once --no-checks` into an empty Doris; the cost is the check's step plus "
        "what it added to the reads and the commits):",
        "",
        *parity_rows(result),
        "",
        "## Binlog throughput (row events/s, same binlog range)",
        "",
        *binlog_rows(result),
        "",
        "## Freshness (MySQL commit → row visible in Doris, daemon-driven sensor)",
        "",
        *freshness_rows(result),
        "",
        "The floor is half the median interval between the binlog sensor's ticks, plus the fastest "
        "creation → start of a binlog run in the window, plus half the Doris poll interval: about what a "
        "no-op run launched by the same sensor would show as p50. Tidemark's own work (reading, converting, "
        "loading, committing) is the rest.",
        "",
        "## Schema-change pause (DDL commit → first later row visible in Doris)",
        "",
        *pause_rows(result),
        "",
        *([estate_section(result), ""] if result.get("estate") else []),
        "## Peak memory per process kind (RSS, MiB, summed over processes of a kind)",
        "",
        *memory_rows(result),
        "",
    ]
    for title, name in plots.items():
        head += [f"![{title}]({name})", ""]
    return "\n".join(head)


def plot(result: dict, out_dir: Path, stem: str) -> dict[str, str]:
    """Freshness over time (one line per write rate) and throughput per phase; returns title → file name."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made: dict[str, str] = {}
    fresh = result.get("freshness", [])
    if fresh:
        fig, ax = plt.subplots(figsize=(9, 4.5))
        for f in fresh:
            data = f.get("series_t_median_max_s") or []
            if not data:
                continue
            t, med, mx = zip(*data, strict=True)
            line, = ax.plot(t, med, label=f"{f['rate_rows_per_s']:,.0f} rows/s: median per second")
            ax.plot(t, mx, color=line.get_color(), alpha=0.35, linewidth=0.8)
            if f.get("dagster_floor_p50_s"):
                ax.axhline(f["dagster_floor_p50_s"], color=line.get_color(), linestyle=":", linewidth=0.8)
        ax.axhline(10, color="grey", linestyle="--", linewidth=0.8, label="p50 limit 10 s")
        ax.set_xlabel("seconds into the measured window")
        ax.set_ylabel("freshness (s): commit → visible in Doris")
        ax.set_title("Freshness over time (faint: max per second; dotted: Dagster floor)")
        ax.legend(fontsize=8)
        ax.set_ylim(bottom=0)
        name = f"{stem}-freshness.png"
        fig.tight_layout()
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        made["Freshness over time"] = name

    bars: list[tuple[str, float, str]] = []  # label, rows/s, colour
    peers = result.get("peers", {})
    for r in result.get("snapshot", []):
        rows = r["rows"]
        bars.append((f"snapshot {rows:,}: mariadb --quick (limit)", r["c_client_rows_per_s"], "grey"))
        bars.append((f"snapshot {rows:,}: tidemark run --once", r["tidemark_run_once"]["rows_per_s"], "tab:blue"))
        if "daemon_backfill" in r:
            bars.append((f"snapshot {rows:,}: daemon backfill", r["daemon_backfill"]["rows_per_s"], "tab:blue"))
        if peers.get("rows") == rows:
            for key, label in (("naive_reload", "naive reload"), ("tap_full_table", "tap-mysql FULL_TABLE")):
                if key in peers:
                    bars.append((f"snapshot {rows:,}: {label}", peers[key]["rows_per_s"], "tab:orange"))
    b = result.get("binlog")
    if b:
        bars += [(f"binlog {b['rows']:,}: mariadb-binlog -v", b["mariadb_binlog_v_rows_per_s"], "grey"),
                 (f"binlog {b['rows']:,}: mysql-replication raw (limit)", b["raw_mysql_replication_rows_per_s"], "grey"),
                 (f"binlog {b['rows']:,}: tidemark", b["tidemark_rows_per_s"], "tab:blue")]
        if "tap_log_based" in peers:
            bars.append((f"binlog {b['rows']:,}: tap-mysql LOG_BASED", peers["tap_log_based"]["rows_per_s"], "tab:orange"))
    snaps = result.get("snapshot", [])
    if bars:
        fig, axes = plt.subplots(1, 2, figsize=(13, 0.35 * len(bars) + 2),
                                 gridspec_kw={"width_ratios": [3, 2]})
        ax = axes[0]
        labels, values, colours = zip(*bars, strict=True)
        ax.barh(range(len(bars)), values, color=colours)
        ax.set_yticks(range(len(bars)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("rows/s (log scale); grey: limits, blue: Tidemark, orange: peers")
        for i, v in enumerate(values):
            ax.text(v, i, f" {v:,.0f}", va="center", fontsize=7)
        ax.set_title("Throughput per phase")
        ax = axes[1]
        if snaps:
            bottoms = [0.0] * len(snaps)
            names = [f"{r['rows']:,}" for r in snaps]
            splits = [split_phases(r["tidemark_run_once"]) for r in snaps]
            for p in (*SNAPSHOT_PHASES, "rest"):
                vals = [split[p] for split in splits]
                if any(vals):
                    ax.bar(names, vals, bottom=bottoms, label=p)
                    bottoms = [b_ + v for b_, v in zip(bottoms, vals, strict=True)]
            ax.set_ylabel("seconds")
            ax.set_xlabel("rows")
            ax.set_title("tidemark run --once: seconds per phase")
            ax.legend(fontsize=7)
        else:
            ax.axis("off")
        fig.tight_layout()
        name = f"{stem}-throughput.png"
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
        made["Throughput per phase"] = name
    return made


def write(result: dict, json_path: Path) -> Path:
    """The markdown and the plots next to ``json_path``; returns the markdown's path."""
    stem = json_path.stem
    plots = plot(result, json_path.parent, stem)
    md = json_path.with_suffix(".md")
    md.write_text(markdown({**result, "json_name": json_path.name}, plots))
    return md


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("json", type=Path)
    args = parser.parse_args()
    md = write(json.loads(args.json.read_text()), args.json)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
