"""The ``tidemark`` CLI: ``validate`` (offline, and ``--connect`` against the real MariaDB),
the human ``splits`` report, and the ``demo`` subcommand's sample data."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_core.model.schema import TableId
from cdc_core.mysql.splits import SnapshotSplit
from orchestration.cli.demo import (
    CHECKSUM_COLUMNS,
    DATABASE,
    DemoSizes,
    demo_exists,
    load_demo,
    mysql_summary,
)
from orchestration.cli.tidemark import build_parser, main, splits_report


def write_pipeline(tmp_path: Path, ep, database: str, user: str, password: str, fe: str = "127.0.0.1:8030") -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(
        "source:\n  type: mysql\n"
        f"  hostname: {ep.host}\n  port: {ep.port}\n  username: {user}\n  password: {password}\n"
        f"  tables: {database}.\\.*\n"
        f"sink:\n  type: doris\n  fenodes: {fe}\n  username: root\n"
        f"pipeline:\n  name: cli_{database}\n  tidemark.state.dir: {tmp_path / 'state'}\n"
    )
    return path


def run_sql(root_conn, *statements: str) -> None:
    with root_conn.cursor() as cur:
        for sql in statements:
            cur.execute(sql)


def test_validate_offline_needs_no_server(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text("source:\n  type: mysql\n  hostname: 127.0.0.1\n  port: 1\n  username: u\n  password: p\n"
                    "  tables: a.b\n"
                    "sink:\n  type: doris\n  fenodes: 127.0.0.1:8030\n  username: root\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("source:\n  type: mysql\n  hostname: h\nsink:\n  type: doris\n")
    assert main(["validate", str(good)]) == 0  # port 1: nothing listens there, and nothing connects
    assert f"{good}: ok" in capsys.readouterr().out
    assert main(["validate", str(good), str(bad)]) == 2  # 2: an invalid file
    err = capsys.readouterr().err
    assert f"{bad}: source.username" in err


def test_validate_connect_passes_on_a_ready_server(mysql_server, root_conn, fresh_db, doris_standin, tmp_path, capsys):
    run_sql(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)")
    ep = mysql_server.endpoint
    path = write_pipeline(tmp_path, ep, fresh_db, ep.user, ep.password, fe=doris_standin.fe_http)
    assert main(["validate", "--connect", str(path)]) == 0
    captured = capsys.readouterr()
    assert "source server ready for CDC" in captured.out and captured.err == ""
    assert "binlog_row_metadata=FULL: column names from the binlog" in captured.out


def test_validate_connect_reports_minimal_row_metadata_as_information(mysql_server, root_conn, fresh_db, doris_standin,
                                                                      tmp_path, capsys):
    run_sql(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)",
            "SET GLOBAL binlog_row_metadata = 'MINIMAL'")
    try:
        ep = mysql_server.endpoint
        path = write_pipeline(tmp_path, ep, fresh_db, ep.user, ep.password, fe=doris_standin.fe_http)
        status = main(["validate", "--connect", str(path)])
    finally:
        run_sql(root_conn, "SET GLOBAL binlog_row_metadata = 'FULL'")
    captured = capsys.readouterr()
    assert status == 0 and captured.err == ""
    assert "binlog_row_metadata=MINIMAL: column names, order, types and charsets from the schema history" \
        in captured.out
    assert "source server ready for CDC" in captured.out


def test_validate_connect_names_each_missing_grant_and_setting_with_its_fix(mysql_server, root_conn, fresh_db,
                                                                          tmp_path, capsys):
    """A user without REPLICATION CLIENT (MariaDB: BINLOG MONITOR) on a server whose row image is
    not FULL: one line per problem, each with the statement that fixes it; exit status 1."""
    run_sql(root_conn, f"CREATE TABLE `{fresh_db}`.t (id INT PRIMARY KEY)",
            "CREATE USER IF NOT EXISTS 'noclient'@'%' IDENTIFIED BY 'noclient-pw'",
            "GRANT SELECT, REPLICATION SLAVE ON *.* TO 'noclient'@'%'",
            "SET GLOBAL binlog_row_image = 'MINIMAL'")
    try:
        path = write_pipeline(tmp_path, mysql_server.endpoint, fresh_db, "noclient", "noclient-pw")
        status = main(["validate", "--connect", str(path)])
    finally:
        run_sql(root_conn, "SET GLOBAL binlog_row_image = 'FULL'", "DROP USER 'noclient'@'%'")
    captured = capsys.readouterr()
    assert status == 1 and captured.out == ""  # the mode line is printed only for a server that passes
    lines = captured.err.strip().splitlines()
    assert len(lines) == 2, lines
    assert all(line.startswith(f"{path}: source {mysql_server.endpoint.host}:") for line in lines)
    (image,) = [line for line in lines if "binlog_row_image" in line]
    assert "binlog_row_image is MINIMAL" in image and "SET GLOBAL binlog_row_image = 'FULL'" in image
    (grant,) = [line for line in lines if "BINLOG MONITOR" in line]
    assert "GRANT BINLOG MONITOR ON *.*" in grant
    assert "noclient-pw" not in captured.err


def test_validate_connect_reports_a_refused_login(mysql_server, fresh_db, tmp_path, capsys):
    ep = mysql_server.endpoint
    path = write_pipeline(tmp_path, ep, fresh_db, ep.user, "not-the-password")
    assert main(["validate", "--connect", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: source ") and "not-the-password" not in err


def test_splits_report_is_a_table_with_counts_per_table():
    orders, customers = TableId("shop", "orders"), TableId("shop", "customers")
    report = splits_report([SnapshotSplit(orders, 0, None, (100,)), SnapshotSplit(orders, 1, (100,), None),
                            SnapshotSplit(customers, 0, None, None)])
    lines = report.splitlines()
    assert lines[0].split("|")[1:4] == [" table          ", "   chunk ", " key range   "]
    assert "| shop.orders    |       0 | (-∞, 100)   |" in lines
    assert "| shop.orders    |       1 | [100, +∞)   |" in lines
    assert "| shop.customers |       0 | (-∞, +∞)    |" in lines
    assert "| shop.orders    |        2 |" in lines  # the chunk count per table
    assert lines[-1] == "3 chunk(s)"
    assert splits_report([]) == "0 chunk(s)"


def test_demo_is_a_cli_subcommand():
    args = build_parser().parse_args(["demo", "load", "--reset"])
    assert (args.action, args.reset, args.pipeline) == ("load", True, "pipelines/demo.yaml")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", "drop"])


def test_demo_load_creates_the_sample_tables(root_conn):
    try:
        counts = load_demo(root_conn, DemoSizes(customers=20, products=5, orders=10, events=10))
        assert demo_exists(root_conn)
        summary = mysql_summary(root_conn)
        assert set(summary) == set(CHECKSUM_COLUMNS)
        assert {t: n for t, (n, _) in summary.items()} == counts
    finally:
        run_sql(root_conn, f"DROP DATABASE IF EXISTS {DATABASE}")


def _verify_text(verdicts, width: int | None) -> str:
    import io

    from rich.console import Console

    from orchestration.cli.tidemark import verify_table

    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(verify_table("demo", verdicts))
    return out.getvalue()


def test_verify_table_is_not_cut_and_names_the_doris_table_only_when_routed(monkeypatch):
    """Issue 29, item 8: piped (not a tty) the table is as wide as its cells, nothing cut to
    "tidemark_dem…"; on a narrow terminal the cells fold; the "Doris table" column appears only when
    a route sends a table elsewhere, and then says "same" for the others."""
    import io

    from cdc_core.pipeline.parity.table_verify import TableVerdict
    from orchestration.cli import tidemark

    long = "tidemark_demo_with_a_long_database_name.customer_addresses_history"
    verdicts = [TableVerdict(long, long, True, 12_345, 12_345, 3),
                TableVerdict("tidemark_demo.orders", "tidemark_demo.orders", True, 10, 10, 1)]
    monkeypatch.setattr(tidemark.sys, "stdout", io.StringIO())
    assert tidemark._report_width() == 1_000
    piped = _verify_text(verdicts, tidemark._report_width())
    assert long in piped and "…" not in piped and "Doris table" not in piped
    assert max(len(line) for line in piped.splitlines()) < 200  # as wide as needed, not 1000
    narrow = _verify_text(verdicts, 60)
    folded = "".join(line.strip("│ ").split("│")[0].strip() for line in narrow.splitlines())
    assert "…" not in narrow and "customer_addresses_history" in folded, narrow

    routed = [verdicts[0], TableVerdict("tidemark_demo.orders", "analytics.orders_copy", False, 10, 9, 1, 1,
                                        ((7,),))]
    text = _verify_text(routed, 1_000)
    assert "Doris table" in text and "analytics.orders_copy" in text and "same" in text
    assert text.count(long) == 1
