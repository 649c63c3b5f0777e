"""bench/report.py: the results table and the docs/performance.md block ``make bench`` writes, from a report dict.

The figures here are made up; what is checked is that each lands beside its limit and its peers,
that the snapshot's phases add up to the wall time, and that docs/performance.md keeps its text outside
the markers.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("bench_report", BENCH / "report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_report"] = module
    spec.loader.exec_module(module)
    return module


def result() -> dict:
    return {
        "profile": "full", "date": "2026-11-23T20:00:00+00:00", "commit": "abc1234", "duration_s": 1200.0,
        "machine": {"cpus": 2, "memory_gib": 24, "os": "Debian", "python": "3.11.7", "mariadb": "MariaDB 10.11",
                    "loadavg_start": [0.1, 0.1, 0.1]},
        "snapshot": [{
            "rows": 1_000_000, "c_client_scan_s": 0.64, "c_client_rows_per_s": 1_562_500,
            "tidemark_run_once": {"wall_s": 36.2, "rows_per_s": 27_624, "ratio_to_c_client_scan": 56.6,
                                  "phases_s": {"planning": 0.5, "spark_start": 10.9, "read_load": 22.1, "commit": 3.8,
                                               "parity": 1.9, "snapshot": 30.0},
                                  "peak_rss_mib": {"tidemark": 240.0, "spark_jvm": 900.0, "mariadbd": 170.0}},
            "daemon_backfill": {"wall_s": 86.6, "rows_per_s": 11_547, "ratio_to_c_client_scan": 135.3,
                                "peak_rss_mib": {"dagster_daemon": 130.0}},
        }],
        "peers": {"rows": 1_000_000,
                  "naive_reload": {"wall_s": 40.0, "rows_per_s": 25_000, "peak_rss_mib": {"peer_naive_reload": 900.0}},
                  "tap_full_table": {"wall_s": 50.0, "rows_per_s": 20_000, "records": 1_000_000,
                                     "peak_rss_mib": {"peer_tap_mysql": 50.0}},
                  "tap_log_based": {"wall_s": 45.0, "rows_per_s": 22_222, "records": 1_000_000,
                                    "peak_rss_mib": {"peer_tap_mysql": 55.0}}},
        "binlog": {"rows": 1_000_000, "raw_mysql_replication_rows_per_s": 60_000, "tidemark_rows_per_s": 168_000,
                   "mariadb_binlog_v_rows_per_s": 2_400_000, "ratio_tidemark_to_raw": 2.8,
                   "ratio_tidemark_to_mariadb_binlog": 0.07},
        "freshness": [{"rate_rows_per_s": 200, "rows_measured": 18_000, "rows_missing_after_120s": 0, "ok": True,
                       "freshness_s": {"p50": 3.0, "p90": 5.0, "p99": 5.8, "max": 6.1}, "dagster_floor_p50_s": 2.6,
                       "ratio_p50_to_floor": 1.15, "sensor": {"interval_s_median": 5.0},
                       "binlog_runs": {"runs": 18, "started_to_finished_s_median": 1.2},
                       "series_t_median_max_s": [[0, 2.0, 3.0], [1, 4.0, 5.0]], "peak_rss_mib": {}}],
        "schema_pause": {"ddls": [{}, {}, {}], "write_rate_rows_per_s": 20.0, "limit_s": 30.0,
                         "pause_window_s": {"median": 9.0, "max": 11.0}, "ratio_to_limit_max": 0.37,
                         "peak_rss_mib": {}},
    }


def test_phases_add_up_to_the_wall_time_with_spark_taken_out_of_read_load(report):
    split = report.split_phases(result()["snapshot"][0]["tidemark_run_once"])
    assert split["read_load"] == pytest.approx(22.1 - 10.9)
    assert sum(split.values()) == pytest.approx(36.2)
    assert split["rest"] == pytest.approx(36.2 - 0.5 - 10.9 - 11.2 - 3.8 - 1.9)


def test_each_figure_stands_beside_its_limit_and_the_peers(report):
    text = report.markdown({**result(), "json_name": "r.json"}, {"Freshness over time": "r-freshness.png"})
    snapshot = next(line for line in text.splitlines() if line.startswith("| 1,000,000 |"))
    assert "0.64 s" in snapshot and "36.2 s" in snapshot and "56.6×" in snapshot
    assert "40.0 s (25,000 rows/s)" in snapshot and "50.0 s (20,000 rows/s)" in snapshot
    assert "**168,000 rows/s**" in text and "22,222 rows/s" in text
    assert "| 200 rows/s | 18,000 | 3.00 s |" in text
    assert "![Freshness over time](r-freshness.png)" in text
    memory = next(line for line in text.splitlines() if line.startswith("| snapshot 1,000,000: run --once |"))
    assert "900" in memory and "170" in memory


def test_the_table_is_replaced_between_its_markers_only(report, tmp_path):
    readme = tmp_path / "performance.md"
    readme.write_text("intro\n<!-- bench:start -->\nold table\n<!-- bench:end -->\noutro\n")
    assert report.update_marked_table(readme, result(), "bench/RESULTS.md")
    text = readme.read_text()
    assert text.startswith("intro\n<!-- bench:start -->\n| measured |") and text.endswith("<!-- bench:end -->\noutro\n")
    assert "old table" not in text and "(bench/RESULTS.md)" in text
    assert "tap-mysql LOG_BASED 22,222 rows/s" in text
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert not report.update_marked_table(plain, result(), "x") and plain.read_text() == "no markers\n"


def test_docs_performance_holds_the_markers_run_all_rewrites():
    text = (BENCH.parent / "docs" / "performance.md").read_text()
    start, end = text.index("<!-- bench:start -->"), text.index("<!-- bench:end -->")
    assert start < end and "| measured | Tidemark |" in text[start:end]
    assert '"docs" / "performance.md"' in (BENCH / "run_all.py").read_text()


def test_the_plots_are_written_next_to_the_results(report, tmp_path):
    made = report.plot(result(), tmp_path, "r")
    assert made == {"Freshness over time": "r-freshness.png", "Throughput per phase": "r-throughput.png"}
    for name in made.values():
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_parity_cost_is_the_checks_step_plus_what_it_added_to_the_reads_and_commits(report, monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))
    from bench.snapshot_e2e import parity_cost

    once = {"wall_s": 50.0, "phases_s": {"spark_start": 12.0, "read_load": 33.0, "commit": 8.5, "parity": 2.6,
                                         "parity_overlap": 6.0},
            "steps_s": {"snapshot_chunks_chunk_parity": 2.8}}
    bare = {"wall_s": 44.0, "phases_s": {"spark_start": 9.0, "read_load": 29.0, "commit": 8.0}}
    cost = parity_cost(once, bare)
    # reads 33 - 12 (Spark's start) against 29 - 9: the check's MySQL side beside them added 1.0 s
    assert cost["cost_s"] == pytest.approx(2.8 + 0.5 + 1.0) and cost["cost_share"] == pytest.approx(4.3 / 50)
    assert cost["wall_delta_s"] == pytest.approx(6.0)  # Spark's jitter included: reported, not the cost
    quicker = parity_cost(once, {**bare, "phases_s": {**bare["phases_s"], "commit": 9.0, "read_load": 31.0}})
    assert quicker["cost_s"] == pytest.approx(2.8)  # reads and commits that happened to be quicker are not credited
    beside_none = {**once, "phases_s": {k: v for k, v in once["phases_s"].items() if k != "parity_overlap"}}
    assert parity_cost(beside_none, bare)["cost_s"] == pytest.approx(2.8 + 0.5)  # the reads' jitter is not the check's
    text = report.markdown({**result(), "json_name": "r.json",
                            "snapshot": [{**result()["snapshot"][0], "parity_cost": cost}]}, {})
    assert "| 1,000,000 | 2.8 s (5.6%) | 6.0 s | 21.0 s / 20.0 s | 8.5 s / 8.0 s | 4.3 s (8.6%) | 36.2 s / 44.0 s |" in text


def test_step_seconds_add_up_over_the_snapshot_runs_of_one_tidemark_run(monkeypatch):
    """A 50M-row table is six snapshot runs of 64 chunks: each run's chunk_parity is counted, not the last's."""
    monkeypatch.syspath_prepend(str(BENCH.parent))
    from bench.snapshot_e2e import sum_steps

    stats = [("bench__snapshot_chunks", 0.0, 93.5), ("bench__snapshot_chunks_chunk_parity", 100.0, 125.7),
             ("bench__snapshot_chunks", 200.0, 260.8), ("bench__snapshot_chunks_chunk_parity", 270.0, 293.3),
             ("bench__binlog_stream_table_parity", 300.0, 541.1), ("bench__binlog_stream", 290.0, None)]
    assert sum_steps(stats) == {"snapshot_chunks": pytest.approx(154.3), "snapshot_chunks_chunk_parity": pytest.approx(49.0),
                                "binlog_stream_table_parity": pytest.approx(241.1)}


def test_the_table_parity_at_the_end_of_the_run_is_counted_once(report):
    """run --once's table_parity is 'verify' inside 'parity' (the 50M-row run: parity 370.3 s = chunk
    parity 130.2 s + verify 240.1 s); counted in both, the phases passed the wall time by 240 s."""
    once = {"wall_s": 1048.4, "phases_s": {"planning": 0.129, "spark_start": 13.882, "read_load": 289.864,
                                           "commit": 278.935, "resolve_pending": 0.749, "parity": 370.316,
                                           "verify": 240.132, "binlog": 4.136}}
    split = report.split_phases(once)
    assert split["parity"] == pytest.approx(370.316 - 240.132) and split["verify"] == pytest.approx(240.132)
    assert sum(split.values()) + 4.136 == pytest.approx(1048.4)
    assert split["rest"] == pytest.approx(1048.4 - 0.129 - 13.882 - 275.982 - 278.935 - 0.749 - 130.184 - 240.132 - 4.136)


def test_check_verdicts_are_counted_per_check(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))
    from bench.snapshot_e2e import tally_checks

    assert tally_checks([("chunk_parity", True), ("chunk_parity", False), ("table_parity", True)]) == {
        "chunk_parity": {"passed": 1, "failed": 1}, "table_parity": {"passed": 1, "failed": 0}}


def test_the_estate_ratio_is_the_median_of_its_rounds_each_shown(report):
    run = {"wall_s": 6.0, "phases_s": {"planning": 0.3, "read_load": 4.0, "commit": 0.3, "parity": 0.2, "snapshot": 5.0}}
    one = {"wall_s": 3.0, "phases_s": {"planning": 0.1, "read_load": 1.0, "commit": 0.1, "parity": 0.2, "snapshot": 2.0}}
    estate = {"tables": {"tables": 300, "rows_per_table": 2000, "rows": 600_000, "run_once": run,
                         "one_table_run_once": one, "ratio_to_one_table": 1.9,
                         "rounds": [{"tables_wall_s": 6.6, "one_table_wall_s": 3.0, "ratio": 2.2},
                                    {"tables_wall_s": 5.7, "one_table_wall_s": 3.0, "ratio": 1.9},
                                    {"tables_wall_s": 5.4, "one_table_wall_s": 3.0, "ratio": 1.8}],
                         "peak_running_txns": 80, "limit_running_txns": 100}}
    lines = report.estate_rows({**result(), "estate": estate})
    row = next(line for line in lines if line.startswith("| 300 tables"))
    assert "| 1.9× (median of 3 rounds: 2.2×, 1.9×, 1.8×) | ≤ 2× |" in row
    assert "| 6.0 s | the same 600,000 rows in one table 3.0 s |" in row
