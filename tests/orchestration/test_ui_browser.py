"""The Dagster UI in a real browser: a pipeline after the demo's ``tidemark run --once``, served by
``dagster-webserver`` (as ``tidemark dev`` starts it), rendered by Debian's headless Chromium page by
page: the asset graph (``binlog_stream`` materialized, its ``table_parity`` check evaluated), the
checks, the ``snapshot_chunks`` partitions, the automation page, the snapshot run, a Doris table
asset, a binlog run that failed because Doris was down, and one whose commit failed because the FE
dropped every commit: each failed run shows its cause and fix on one line and no stack trace
(issue 29, build 2: ``orchestration/defs/failures.py``).

And the asset graph of a pipeline capturing 300 tables in three databases (slow): each database a
group of its own beside the pipeline's, collapsed until opened, and the tables named ``db.table`` on
their nodes (issue 30, build 5; ``orchestration/defs/doris_tables.py``).

The screenshots (and the rendered DOM) stay in the test's tmp directory under ``ui/``, and are
copied to ``$TIDEMARK_UI_ARTIFACTS`` when it is set.
"""

import re
import sys
import time
from pathlib import Path
from urllib.parse import quote

import dagster as dg
import pytest
import requests
from rich.console import Console

from devstack.dagster_graphql import DagsterApi
from devstack.pipeline_file import write_pipeline
from devstack.procs import free_port
from devstack.stack import DorisStandIn
from orchestration.cli.dev import DagsterServices
from orchestration.cli.instance import prepare_home
from orchestration.cli.run_once import OnceRun
from orchestration.definitions import build_definitions
from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.runs import failure_message
from tests.browser import Browser, chromium_missing
from tests.orchestration.test_e2e_dagster import _create_tables, write_e2e_pipeline

ROOT = Path(__file__).resolve().parents[2]
# What a stack trace on a run page looks like (Dagster's "Stack Trace:" and Python's frames).
STACK_TRACE = ("Traceback", "Stack Trace", 'File "')


def _failed_binlog_run(home: Path, handle: PipelineHandle) -> tuple[str, str]:
    """A binlog run executed as the sensor's are (stream tags), which fails: its id and its cause."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        failed = build_definitions([handle]).resolve_job_def(handle.binlog_job_name).execute_in_process(
            instance=instance, raise_on_error=False, tags=handle.run_tags(stream=True))
        assert not failed.success
        # what a user reads of the failed run: its step's error, the line `tidemark status` shows too
        return failed.run_id, failure_message(instance, instance.get_run_by_id(failed.run_id))


def test_the_ui_shows_the_pipeline_after_a_snapshot(mysql_server, root_conn, fresh_db, tmp_path, spark_session):
    assert chromium_missing() is None, chromium_missing()
    _create_tables(root_conn, fresh_db)
    name = f"ui_{fresh_db}"
    path = tmp_path / f"{name}.yaml"
    # a Doris of its own: the test stops it to fail a run as an outage does
    doris = DorisStandIn(tmp_path / "doris", fe_port=free_port(), be_port=free_port())
    doris.start()
    write_e2e_pipeline(path, mysql_server, doris, fresh_db, name, tmp_path / "state")
    handle = PipelineHandle.load(path)
    home = prepare_home(tmp_path / "dagster")
    services = DagsterServices([path], home, port=free_port(), daemon=False, log_dir=tmp_path / "logs",
                               working_dir=ROOT)
    started = time.monotonic()
    out = tmp_path / "ui"
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            # The split plan first: the code location the webserver loads then has the Doris table assets.
            build_definitions([handle]).resolve_job_def(handle.splits_job_name).execute_in_process(instance=instance)
            services.start()  # it loads while the snapshot runs, in process, on the instance it serves
            # as the demo's `tidemark run --once`: the snapshot, one binlog batch, the table_parity check
            OnceRun(handle, instance, console=Console(stderr=True, quiet=True), parity_checks=True).run()
            runs = instance.get_runs(filters=dg.RunsFilter(job_name=handle.snapshot_job_name))
            chunks = instance.get_dynamic_partitions(handle.partitions_name)
        print(f"snapshot done after {time.monotonic() - started:.1f} s", file=sys.stderr)
        assert runs and chunks
        run_id, slug = runs[0].run_id, handle.slug
        services.wait_ready()
        print(f"webserver ready after {time.monotonic() - started:.1f} s", file=sys.stderr)
        location = DagsterApi(services.url).location
        base = services.url
        # the Doris tables are in their database's group: on the pipeline's page, links named db.table
        nodes = ("snapshot_splits", "snapshot_chunks", "binlog_stream", f"{fresh_db}.items", f"{fresh_db}.logs")
        check_names = ("chunk_parity", "no_pending_transactions")
        instigators = (f"{slug}_binlog_sensor", f"{slug}_ddl_sensor", f"{slug}_incremental_schedule")
        table_shows = ("External Asset", "Row count", "2,000", "Freshness policy", "DATETIMEV2")
        with Browser(out) as browser:
            pages = {
                "1-asset-graph": browser.render(f"{base}/locations/{location}/asset-groups/{slug}", "1-asset-graph",
                                                nodes, wait_gone=("Loading...",)),
                "2-chunk-checks": browser.render(f"{base}/assets/{slug}/snapshot_chunks?view=checks",
                                                 "2-chunk-checks", check_names),
                "3-partitions": browser.render(f"{base}/assets/{slug}/snapshot_chunks?view=partitions",
                                               "3-partitions", [f"Materialized ({len(chunks)})"]),
                "4-automation": browser.render(f"{base}/automation", "4-automation", instigators),
                "5-snapshot-run": browser.render(f"{base}/runs/{run_id}", "5-snapshot-run",
                                                 [handle.snapshot_job_name, "snapshot_chunks"]),
                "6-doris-items": browser.render(f"{base}/assets/doris/{fresh_db}.items", "6-doris-items",
                                                table_shows),
                "7-binlog-stream": browser.render(f"{base}/assets/{slug}/binlog_stream?view=checks",
                                                  "7-binlog-stream", ("table_parity", "Succeeded")),
            }
            # then an outage: Doris down while a change waits in the binlog; the binlog run fails
            doris.stop()
            with root_conn.cursor() as cur:
                cur.execute(f"UPDATE `{fresh_db}`.items SET qty = qty + 1 WHERE id = 1")
            failed_id, cause = _failed_binlog_run(home, handle)
            cause_shown = cause.split(": ", 1)[-1][:80]
            pages["8-failed-run"] = browser.render(f"{base}/runs/{failed_id}", "8-failed-run",
                                                   ("RUN_FAILURE", cause_shown))
            # then Doris back, but the node it commits on dropping every commit, as if it went down while the
            # hook commits: the loads stay prepared; the no_pending_transactions check fails the run on the line
            doris.start()
            faults = f"http://{doris.fe_http}/_standin/faults"
            requests.post(faults, json=[{"target": "commit", "mode": "drop_connection", "count": -1}],
                          timeout=5).raise_for_status()
            with root_conn.cursor() as cur:
                cur.execute(f"UPDATE `{fresh_db}`.items SET qty = qty + 1 WHERE id = 2")
            try:
                commit_id, commit_cause = _failed_binlog_run(home, handle)
            finally:
                requests.delete(faults, timeout=5).raise_for_status()
            commit_shown = commit_cause.split(": ", 1)[-1][:80]
            pages["9-commit-failed"] = browser.render(f"{base}/runs/{commit_id}", "9-commit-failed",
                                                      ("RUN_FAILURE", commit_shown))

        graph = pages["1-asset-graph"]
        for node in nodes:
            assert node in graph.text, f"asset {node} is not on the graph ({graph.screenshot})"
        # after the demo's run every pipeline asset was materialized: none reads "Never materialized"
        assert "Never materialized" not in graph.text, f"an asset is never materialized ({graph.screenshot})"
        assert "Not evaluated" not in graph.text, f"a check is not evaluated ({graph.screenshot})"
        node = re.search(r"binlog_stream Latest event (.*?) Asset checks (.*?) Partitions\b.*?\bAutomation\b.*?"
                         r"\b(Materialized|Never materialized)", graph.text)
        assert node, f"the binlog_stream node is not drawn ({graph.screenshot})"
        assert node.group(3) == "Materialized" and node.group(2) == "2 / 2 Passed", (node.group(0), graph.screenshot)

        stream = pages["7-binlog-stream"]
        assert "table_parity" in stream.text and "Not evaluated" not in stream.text, stream.screenshot
        assert "Succeeded" in stream.text, f"table_parity did not pass ({stream.screenshot})"

        checks = pages["2-chunk-checks"]
        for check in check_names:
            assert check in checks.text, f"check {check} is not listed ({checks.screenshot})"

        partitions = pages["3-partitions"]
        assert f"Materialized ({len(chunks)})" in partitions.text and "Missing (0)" in partitions.text, (
            f"not all {len(chunks)} chunk partitions shown as materialized ({partitions.screenshot})")
        assert all(chunk in partitions.text for chunk in chunks), partitions.screenshot

        automation = pages["4-automation"]
        for instigator in instigators:
            assert instigator in automation.text, f"{instigator} is not listed ({automation.screenshot})"

        run = pages["5-snapshot-run"]
        assert run_id[:8] in run.text and handle.snapshot_job_name in run.text, run.screenshot
        assert "snapshot_chunks" in run.text, run.screenshot

        table = pages["6-doris-items"]
        for shown in table_shows:
            assert shown in table.text, f"{shown!r} is not on the Doris table's page ({table.screenshot})"

        failure = pages["8-failed-run"]
        assert "Failure" in failure.text and cause_shown in failure.text, (
            f"the failed run does not show its cause {cause_shown!r} ({failure.screenshot})")
        # the label probe of the run's first step (resolve_pending) met the FE down: cause and fix, one line
        assert f"the Doris FE at {doris.fe_http} does not answer" in cause, cause
        assert "; check that the FE is up and that sink.fenodes names its HTTP address" in cause, cause
        assert cause.split(": ", 1)[-1] in failure.text, (cause, failure.screenshot)  # the whole line, as it is
        for shown in STACK_TRACE:
            assert shown not in failure.text, f"{shown!r}: a stack trace on the failed run's page ({failure.screenshot})"
        # the run rows carry no bookkeeping tags (the run's process is a hidden .dagster/ tag)
        assert "tidemark/pid" not in failure.text and "tidemark/host" not in failure.text, failure.screenshot

        commit = pages["9-commit-failed"]
        assert "prepared but not committed, as the commit failed: " in commit_cause, commit_cause
        # the stand-in, as Doris, commits on a BE the FE redirects to: the BE is named, and what to check
        assert re.search(r"the Doris BE at [\d.:]+ \(an FE redirected the request there\) does not answer "
                         r"\(ConnectionError \(Connection reset by peer\); 4 attempts at PUT /api/\w+/_stream_load_2pc\); "
                         "check that the BE is up", commit_cause), commit_cause
        assert commit_cause.split(": ", 1)[-1] in commit.text, (commit_cause, commit.screenshot)
        for shown in STACK_TRACE:
            assert shown not in commit.text, f"{shown!r}: a stack trace on the failed run's page ({commit.screenshot})"
        print(f"pages rendered after {time.monotonic() - started:.1f} s", file=sys.stderr)
    finally:
        services.stop()
        doris.stop()
    assert sorted(p.name for p in out.glob("*.png")) == [
        "1-asset-graph.png", "2-chunk-checks.png", "3-partitions.png", "4-automation.png", "5-snapshot-run.png",
        "6-doris-items.png", "7-binlog-stream.png", "8-failed-run.png", "9-commit-failed.png"]


# The asset graph's id of an asset group (Dagster's UI: ``groupIdForNode``, one graph for all code
# locations); ``?expanded=`` lists the groups drawn open.
def _group_id(group: str) -> str:
    return f"global@global:{group}"


def _graph_url(base: str, *expanded: str) -> str:
    return f"{base}/asset-groups?expanded={quote(','.join(_group_id(g) for g in expanded), safe='')}"


TABLES_PER_DATABASE = 100


@pytest.mark.slow
def test_the_asset_graph_of_300_tables_is_grouped_by_database(mysql_server, root_conn, doris_standin, tmp_path):
    """300 tables over three databases, discovered by the pipeline's own split plan (no rows: the graph
    needs none), served by the webserver ``tidemark dev`` starts: the Lineage page opens on four closed
    boxes, the pipeline's group and one group per database downstream of it; an opened database shows
    its tables named ``db.table``, as does the database's own group page. Slow: ~50-80 s here."""
    assert chromium_missing() is None, chromium_missing()
    # names as short as a user's, for the picture: no other test of the session's MariaDB uses them
    databases = ["shop", "billing", "crm"]
    tables = [f"t{i:03d}" for i in range(1, TABLES_PER_DATABASE + 1)]
    with root_conn.cursor() as cur:
        for db in databases:
            cur.execute(f"DROP DATABASE IF EXISTS `{db}`")
            cur.execute(f"CREATE DATABASE `{db}`")
            for table in tables:
                cur.execute(f"CREATE TABLE `{db}`.`{table}` (id BIGINT PRIMARY KEY, v INT)")
    started = time.monotonic()
    try:
        name = "estate"
        path = write_pipeline(tmp_path / f"{name}.yaml", host=mysql_server.endpoint.host,
                              port=mysql_server.endpoint.port, fe=doris_standin.fe_http,
                              tables=",".join(f"{db}.\\.*" for db in databases), name=name,
                              state_dir=tmp_path / "state", server_id="5540-5544")
        handle = PipelineHandle.load(path)
        home = prepare_home(tmp_path / "dagster")
        with dg.DagsterInstance.from_config(str(home)) as instance:
            # the split plan discovers the tables; the code location the webserver loads then has them
            build_definitions([handle]).resolve_job_def(handle.splits_job_name).execute_in_process(instance=instance)
        print(f"300 tables created and planned after {time.monotonic() - started:.1f} s", file=sys.stderr)
        groups = {handle.database_group_name(db): db for db in databases}
        specs = [s for s in build_definitions([handle]).resolve_all_asset_specs() if s.key.path[0] == "doris"]
        assert len(specs) == 3 * TABLES_PER_DATABASE
        assert {s.group_name for s in specs} == set(groups)

        services = DagsterServices([path], home, port=free_port(), daemon=False, log_dir=tmp_path / "logs",
                                   working_dir=ROOT)
        out = tmp_path / "ui"
        try:
            services.start()
            services.wait_ready()
            print(f"webserver ready after {time.monotonic() - started:.1f} s", file=sys.stderr)
            base = services.url
            location = DagsterApi(base).location
            first_group, first_db = next(iter(groups.items()))
            # what the webserver serves the graph: the node's name is the key's last component
            served = DagsterApi(base).query("{ assetNodes { assetKey { path } groupName dependencyKeys { path } } }")["assetNodes"]
            with Browser(out) as browser:
                # what the Lineage page opens on: a closed box for the pipeline and one per database
                lineage = browser.render(f"{base}/asset-groups", "300-tables-1-lineage", drawn=(handle.group_name, *groups),
                                         wait_gone=("Loading", "fetching statuses"), timeout_s=90)
                # the pipeline and one database opened: its tables, each node named db.table
                opened = browser.render(_graph_url(base, handle.group_name, first_group), "300-tables-2-opened",
                                        drawn=("snapshot_splits", "binlog_stream", f"{first_db}.t0"),
                                        wait_gone=("Loading",), timeout_s=90)
                # the database's own page (Catalog, or a table's group tag): its tables in full
                page = browser.render(f"{base}/locations/{location}/asset-groups/{first_group}", "300-tables-3-database",
                                      drawn=(f"{first_db}.t0", "binlog_stream"), wait_gone=("Loading",), timeout_s=60)
        finally:
            services.stop()
        print(f"pages rendered after {time.monotonic() - started:.1f} s", file=sys.stderr)
    finally:
        with root_conn.cursor() as cur:
            for db in databases:
                cur.execute(f"DROP DATABASE IF EXISTS `{db}`")

    served_tables = {(n["groupName"], n["assetKey"]["path"][-1]) for n in served if n["assetKey"]["path"][0] == "doris"}
    assert served_tables == {(handle.database_group_name(db), f"{db}.{t}") for db in databases for t in tables}
    # one edge per table, from the stream: 300 edges, not 600
    upstream = {tuple(d["path"]) for n in served if n["assetKey"]["path"][0] == "doris" for d in n["dependencyKeys"]}
    assert upstream == {tuple(handle.binlog_key.path)}
    # closed boxes only: the pipeline's, then one per database, downstream of it (nothing else is drawn)
    boxes = sorted(box.split(" ")[0] for box in lineage.drawn)
    assert boxes == sorted([handle.group_name, *groups]), (lineage.drawn, lineage.screenshot)
    for graph in (opened, page):
        # every table node drawn (those on screen) is one of the opened database's, named db.table
        names = [box.split(" ")[0] for box in graph.drawn]
        tables_drawn = [n for n in names if re.fullmatch(r"(\w+\.)?t\d{3}", n)]
        assert len(tables_drawn) >= 3, (names, graph.screenshot)
        assert all(n.startswith(f"{first_db}.") for n in tables_drawn), (names, graph.screenshot)
        assert "binlog_stream" in names, f"the tables' upstream is not drawn ({graph.screenshot})"
    names = [box.split(" ")[0] for box in opened.drawn]
    assert {"snapshot_splits", "snapshot_chunks", handle.group_name, first_group} <= set(names), (names, opened.screenshot)
