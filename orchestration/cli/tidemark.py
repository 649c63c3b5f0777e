"""The ``tidemark`` command.

Each subcommand imports what it needs when it runs, so that ``tidemark devstack up`` or
``tidemark validate`` never pays for importing Dagster or starting Spark.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.table import Table

    from cdc_core.config import PipelineDefinition
    from cdc_core.mysql.splits import SnapshotSplit
    from cdc_core.pipeline.parity.table_verify import TableVerdict

Handler = Callable[[argparse.Namespace], int]
logger = logging.getLogger(__name__)


def _one_line(exc: BaseException) -> str:
    """An exception's message as one line (its first), for the terminal; the rest is in the log file."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _print_json(value: object) -> None:
    print(json.dumps(value, indent=None, sort_keys=False))


# -- devstack --------------------------------------------------------------------------------


def _devstack(args: argparse.Namespace) -> int:
    from devstack.stack import DevStack

    stack = DevStack(
        Path(args.dir), mysql_port=args.mysql_port, doris_port=args.doris_port, doris_be_port=args.doris_be_port,
        replica_port=args.replica_port, doris_max_running_txn_num_per_db=args.doris_max_running_txn_num_per_db,
    )
    if args.action == "up":
        endpoints = stack.up(replica=args.replica)
        if args.json:
            _print_json(endpoints)
        else:
            _print_endpoints(endpoints, stack)
        return 0
    if args.action == "down":
        stopped = stack.down()
        if args.json:
            _print_json({"stopped": stopped})
        else:
            print(f"Stopped: {', '.join(stopped)}" if stopped else "Nothing was running.")
            print(f"Data kept in {stack.base_dir}")
        return 0
    status = stack.status()
    if args.json:
        _print_json(status)
    else:
        mysql, doris = status["mysql"], status["doris"]

        def state(part: dict) -> str:
            return f"running (pid {part['pid']})" if part["running"] else "stopped"

        print(f"MariaDB   {state(mysql)}  {mysql['host']}:{mysql['port']}{_gtid_line(mysql)}")
        replica = status.get("mysql_replica")
        if replica is not None:
            link = (f"replicating from {replica['primary']}" if replica["replicating"] else
                    f"not replicating ({replica['last_error']})" if replica["last_error"] else "not replicating")
            print(f"Replica   {state(replica)}  {replica['host']}:{replica['port']}{_gtid_line(replica)}"
                  f"{'  ' + link if replica['running'] else ''}")
        if not doris["available"]:
            print("Doris     not available yet (the stand-in is not part of this build)")
        else:
            print(f"Doris     {state(doris)}  FE {doris['fe_http']}  BE {doris['be_http']}")
    return 0


def _gtid_line(server: dict) -> str:
    """`  server_id 1  gtid 0-1-42  binlog.000003` for a running server (empty when stopped)."""
    if "server_id" not in server:
        return ""
    return f"  server_id {server['server_id']}  gtid {server['gtid_current_pos'] or '-'}  {server['binlog_file']}"


def _print_endpoints(endpoints: dict, stack: object) -> None:
    mysql, doris = endpoints["mysql"], endpoints["doris"]
    print("Local stack is up.")
    print(f"  MySQL (MariaDB, ROW binlog)  {mysql['host']}:{mysql['port']}  user {mysql['user']} / "
          f"password {mysql['password']}")
    print(f"    root over the socket:      mariadb -uroot --socket={mysql['root_socket']}")
    print(f"    as the CDC user:           mariadb -h{mysql['host']} -P{mysql['port']} -u{mysql['user']} "
          f"-p{mysql['password']}")
    replica = endpoints.get("mysql_replica")
    if replica is not None:
        print(f"  MySQL replica (GTID)         {replica['host']}:{replica['port']}  same users; promote it with "
              "DevStack.fail_over() (devstack/stack.py)")
    if doris is None:
        print("  Doris                        not available yet (the stand-in is not part of this build)")
    else:
        print(f"  Doris FE HTTP                http://{doris['fe_http']}  user {doris['user']!r} / "
              f"password {doris['password']!r}")
        print(f"  Doris BE HTTP                http://{doris['be_http']}")
    print(f"  Data and logs                {stack.base_dir}")  # type: ignore[attr-defined]


# -- validate --------------------------------------------------------------------------------


def _validate(args: argparse.Namespace) -> int:
    from cdc_core.config import PipelineConfigError, load_pipeline
    from cdc_core.pipeline.preflight import state_location

    status = 0  # 2: a file is invalid; 1: a server is not ready (or refused the login)
    for path in args.pipelines:
        try:
            definition = load_pipeline(path)
        except PipelineConfigError as exc:
            for line in exc.lines:
                print(line, file=sys.stderr)
            status = 2
            continue
        if args.connect and not (_server_ready(path, definition) and _state_ready(path, definition)):
            status = max(status, 1)
            continue
        checked = ", source server ready for CDC, Doris answers, state database answers" if args.connect else ""
        print(f"{path}: ok (pipeline '{definition.name}', state in {state_location(definition)}{checked})")
    return status


def _server_ready(path: str, definition: PipelineDefinition) -> bool:
    """Run the source server check; print each problem on its own line (what is wrong, the fix)."""
    from cdc_core.mysql.server_check import ServerCheckError, check_source_server
    from cdc_core.pipeline.preflight import ConnectionCheckError, check_doris

    where = f"{path}: source {definition.source.hostname}:{definition.source.port}"
    try:
        info = check_source_server(definition.source,
                                   needs_reload=definition.pipeline.binlog_on_purged == "resnapshot")
    except ServerCheckError as exc:
        for problem in exc.problems:
            print(f"{where}: {problem}", file=sys.stderr)
        return False
    except ConnectionError as exc:
        print(f"{where}: {exc}", file=sys.stderr)
        return False
    print(f"{where}: {info.row_metadata_mode}")  # information: either mode is supported
    if not _names_fit_doris(path, definition):
        return False
    try:
        check_doris(definition)
    except ConnectionCheckError as exc:
        print(f"{path}: sink: {exc}", file=sys.stderr)
        return False
    return True


def _state_ready(path: str, definition: PipelineDefinition) -> bool:
    """The state URL's database lets Tidemark in (a state directory needs nothing)."""
    from cdc_core.pipeline.preflight import ConnectionCheckError, check_state_store

    try:
        check_state_store(definition)
    except ConnectionCheckError as exc:
        print(f"{path}: state: {exc}", file=sys.stderr)
        return False
    return True


def _names_fit_doris(path: str, definition: PipelineDefinition) -> bool:
    """The ``tables`` patterns match tables (as planning requires: none matching at all is an error,
    one of several matching nothing yet a warning), every captured table's Doris table and column
    names are names Doris takes, and every text column's charset one Tidemark decodes exactly (each
    refusal on its line)."""
    from cdc_core.mysql.connection import MySqlConnectionSettings, connect
    from cdc_core.mysql.discovery import (
        DiscoveryError,
        list_captured_tables,
        read_table_schema,
        require_matching_tables,
    )
    from cdc_core.mysql.types.charsets import charset_problems
    from cdc_core.pipeline.planning import doris_name_problems

    conn = connect(MySqlConnectionSettings.from_options(definition.source))
    try:
        try:
            unmatched = require_matching_tables(conn, definition.source.selector)
        except DiscoveryError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
            return False
        for pattern in unmatched:
            print(f"{path}: source.tables: warning: {pattern.describe()}; a table created later that matches is "
                  "captured", file=sys.stderr)
        schemas = [read_table_schema(conn, t) for t in list_captured_tables(conn, definition.source.selector)]
    finally:
        conn.close()
    problems = doris_name_problems(definition, schemas) + charset_problems(schemas)
    for problem in problems:
        print(f"{path}: {problem}", file=sys.stderr)
    return not problems


# -- run -------------------------------------------------------------------------------------


def _run(args: argparse.Namespace) -> int:
    import time
    import warnings

    warnings.filterwarnings("ignore")
    from cdc_core.instrumentation import phases
    from cdc_core.instrumentation.collector import freeze_start_up
    from orchestration.cli.spark_prestart import SparkPrestart

    # First, before the imports below: Spark's start then overlaps them (orchestration/cli/spark_prestart.py).
    SparkPrestart([Path(p) for p in args.pipelines]).start()  # a daemon thread: nothing waits for it
    with phases.span("imports"):
        from dagster import DagsterInstance
        from rich.console import Console
        from rich.markup import escape

        from cdc_core.pipeline.preflight import ConnectionCheckError, check_connections
        from orchestration.cli.instance import dagster_home_for, local_instance_note, prepare_home
        from orchestration.cli.run_once import OnceRun, RunOnceError, summary_table
        from orchestration.defs.pipelines import load_handles
    console = Console(stderr=True)
    handles = load_handles([Path(p) for p in args.pipelines])
    if not args.once and len(handles) > 1:
        console.print("[red]tidemark run: without --once, one pipeline per command (start one `tidemark run` "
                      "per pipeline, or `tidemark dev` for several)[/]")
        return 2
    status = 0
    ready = []
    for handle in handles:  # a wrong password or a server that is down: said before anything is written
        try:
            with phases.span("check_connections"):
                check_connections(handle.definition)
        except ConnectionCheckError as exc:
            console.print(f"[red]tidemark run {handle.slug}: {escape(str(exc))}[/]", soft_wrap=True)
            status = 1
        else:
            ready.append(handle)
    if not ready:
        return status
    handles = ready
    where = dagster_home_for(handles)
    home = prepare_home(where)
    # Which instance records the runs goes to stdout: stderr is the run's progress and, when it fails,
    # exactly one line saying why (docs/cli.md).
    print(f"tidemark run: {where.describe()}", flush=True)
    note = local_instance_note(home, handles)
    if note:
        print(f"tidemark run: {note}", flush=True)
    started = time.perf_counter()
    with phases.span("dagster_instance"):
        instance_cm = DagsterInstance.from_config(str(home))
    freeze_start_up()  # what the imports made, out of the collector's walks (cdc_core/instrumentation/collector.py)
    with instance_cm as instance:
        if not args.once:
            status = _run_until_stopped(handles[0], instance, console, parity_checks=not args.no_checks)
        for handle in handles if args.once else ():
            once = OnceRun(handle, instance, console, parity_checks=not args.no_checks)
            try:
                summary = once.run()
            except RunOnceError as exc:
                console.print(f"[red]tidemark run {handle.slug}: {escape(str(exc))}[/]", soft_wrap=True)
                status = max(status, exc.code)
                continue
            finally:
                once.service.close()
            console.print(summary_table(handle, summary))
    if args.timings is not None:
        spent = {**phases.totals(), "total": round(time.perf_counter() - started, 3)}
        args.timings.write_text(json.dumps(spent, indent=2) + "\n")
        phases.mark("timings_written")
        # where the seconds went in order, since the process started (docs/operations.md)
        timeline = args.timings.with_name(args.timings.stem + ".timeline.json")
        timeline.write_text(json.dumps(phases.timeline(), indent=1) + "\n")
    return status


# -- resnapshot ------------------------------------------------------------------------------


def _resnapshot(args: argparse.Namespace) -> int:
    """Exit 0 when the tables were read again, the stale rows deleted and the stream caught up."""
    import warnings

    warnings.filterwarnings("ignore")
    from dagster import DagsterInstance
    from rich.console import Console
    from rich.markup import escape

    from cdc_core.pipeline.preflight import ConnectionCheckError, check_connections
    from orchestration.cli.instance import dagster_home_for, prepare_home
    from orchestration.cli.run_once import OnceRun, RunOnceError, summary_table
    from orchestration.defs.pipelines import load_handles

    console = Console(stderr=True)
    (handle,) = load_handles([Path(args.pipeline)])
    try:
        check_connections(handle.definition)
    except ConnectionCheckError as exc:
        console.print(f"[red]tidemark resnapshot {handle.slug}: {escape(str(exc))}[/]", soft_wrap=True)
        return 1
    home = prepare_home(dagster_home_for([handle]))
    with DagsterInstance.from_config(str(home)) as instance:
        once = OnceRun(handle, instance, console)
        try:
            summary = once.resnapshot(args.table or None)
        except RunOnceError as exc:
            console.print(f"[red]tidemark resnapshot {handle.slug}: {escape(str(exc))}[/]", soft_wrap=True)
            return exc.code
        finally:
            once.service.close()
    console.print(summary_table(handle, summary))
    return 0


def _run_until_stopped(handle: Any, instance: Any, console: Any, parity_checks: bool) -> int:
    """``tidemark run PIPELINE.yaml``: until Ctrl-C or SIGTERM (``orchestration/cli/run_loop.py``);
    0 after a clean stop, the error's code when the pipeline cannot go on, 130 for a second Ctrl-C."""
    from orchestration.cli.run_loop import LiveStatus, LoopRun, run_until_stopped
    from orchestration.cli.run_once import RunOnceError, summary_table
    from orchestration.defs import live_run

    live_run.reset()
    run = LoopRun(handle, instance, console, parity_checks=parity_checks, live=LiveStatus(handle.slug))
    try:
        summary = run_until_stopped(run, console)
    except RunOnceError as exc:
        run.service.close()
        console.print(f"[red]tidemark run {handle.slug}: {exc}[/]", soft_wrap=True)
        return exc.code
    except KeyboardInterrupt:  # the second Ctrl-C: the worker thread dies with the process, like a kill
        console.print(f"tidemark run {handle.slug}: stopped at once; the next `tidemark run` finishes or redoes "
                      "what was in flight")
        return 130
    finally:
        live_run.reset()
    run.service.close()
    console.print(summary_table(handle, summary, once=False))
    return 0


# -- verify ----------------------------------------------------------------------------------


def _report_width() -> int | None:
    """The terminal's width on a terminal (rich reads it); else wide enough that no cell is cut: a
    report piped to a file or a CI log is read whole (rich's default there is 80 columns)."""
    return None if sys.stdout.isatty() else 1_000


def verify_table(pipeline: str, verdicts: Sequence[TableVerdict]) -> Table:
    """One row per table; its Doris table only when a ``route:`` sends one elsewhere (then the
    others read "same"). Cells fold rather than being cut ("tidemark_dem…")."""
    from rich.table import Table

    routed = any(v.target != v.table_id for v in verdicts)
    table = Table(title=f"tidemark verify {pipeline}")
    for name in ("table", *(("Doris table",) if routed else ()), "MySQL rows", "Doris rows", "segments", "result"):
        table.add_column(name, overflow="fold")
    for v in verdicts:
        if v.skipped:
            result = f"[yellow]not compared: {v.skipped}[/]"
        elif v.equal:
            result = "[green]equal[/]"
        else:
            shown = ", ".join("/".join(str(x) for x in k) for k in v.differing_keys[:10])
            more = " …" if v.keys_truncated or len(v.differing_keys) > 10 else ""
            result = f"[red]DIFFERENT[/] ({v.differing_segments} segment(s); keys: {shown or '-'}{more})"
        doris = (("same" if v.target == v.table_id else v.target),) if routed else ()
        table.add_row(v.table_id, *doris, f"{v.mysql_rows:,}", f"{v.doris_rows:,}", str(v.segments), result)
    return table


def _verify(args: argparse.Namespace) -> int:
    """Exit 0 when every table is equal, 1 when one differs, 2 when it could not be verified (an invalid
    file, no snapshot yet, a table the pipeline does not capture, a server that does not answer)."""
    from rich.console import Console

    from cdc_core.config import load_pipeline
    from cdc_core.doris.errors import DorisError
    from cdc_core.pipeline.preflight import ConnectionCheckError, check_connections
    from cdc_core.pipeline.service import PipelineService
    from cdc_core.state.leases import LeaseHeld

    definition = load_pipeline(args.pipeline)
    service = PipelineService(definition)
    try:
        if not service.captured_tables():
            print(f"tidemark verify: pipeline '{service.definition.name}' has no snapshot yet (no table to compare); "
                  f"run `tidemark run {args.pipeline} --once` first", file=sys.stderr)
            return 2
        try:
            check_connections(definition)  # a server down or a refused login: one line with the fix
            if args.repair:
                repairs = _repair_under_lease(service, args.table or None)
                verdicts = [r.verdict for r in repairs]
            else:
                repairs = []
                verdicts = service.verify(args.table or None, max_keys=args.max_keys)
        except ConnectionCheckError as exc:
            print(f"tidemark verify: {exc}", file=sys.stderr)
            return 2
        except LeaseHeld as exc:  # a run loads these tables now: it wrote nothing, nothing to mend yet
            print(f"tidemark verify --repair: {exc}", file=sys.stderr)
            return 2
        except (ValueError, ConnectionError, DorisError) as exc:  # a server that went away meanwhile, too
            logger.debug("verify of %s failed", args.pipeline, exc_info=True)
            print(f"tidemark verify: {_one_line(exc)}", file=sys.stderr)
            return 2
    finally:
        service.close()
    for r in repairs:
        if r.rounds:
            print(f"tidemark verify --repair: {r.table_id}: {r.upserted} row(s) re-read from MySQL, {r.deleted} "
                  f"deleted, in {r.rounds} round(s); {'now equal' if r.equal else 'still different'}",
                  file=sys.stderr)
        if r.not_repaired:
            print(f"tidemark verify --repair: {r.table_id} not repaired: {r.not_repaired}", file=sys.stderr)
    if args.json:
        _print_json({"pipeline": service.definition.name, "equal": all(v.equal for v in verdicts),
                     "tables": [r.as_dict() for r in repairs] if repairs else [v.as_dict() for v in verdicts]})
    else:
        Console(width=_report_width()).print(verify_table(service.definition.name, verdicts))
    return 0 if all(v.equal for v in verdicts) else 1


def _repair_under_lease(service: Any, tables: list[str] | None) -> list[Any]:
    """``verify --repair`` holding its tables' leases (``PipelineService.repair_scopes``), as
    ``tidemark resnapshot`` holds the pipeline's: a run of those tables on any machine, started
    before or after, and the repair never interleave; the one that comes second declines with one
    line (``LeaseHeld``). A dead holder's expired lease is taken over, and the repair's
    ``resolve_pending`` finishes what it left prepared."""
    dead = service.take_lease(service.repair_scopes(tables), purpose="tidemark verify --repair")
    try:
        for record in {r.owner: r for r in dead}.values():
            print(f"tidemark verify --repair: an earlier run is gone ({record.purpose} on {record.host}, pid "
                  f"{record.pid}: {record.death()}); finishing what it left prepared", file=sys.stderr)
        return service.repair(tables)
    finally:
        try:
            service.give_back_lease(service.repair_scopes(tables))
        except Exception:  # noqa: BLE001 - the repair's result stands; the lease expires on its own
            logger.warning("could not give back the repair's lease; it expires on its own", exc_info=True)


# -- dev -------------------------------------------------------------------------------------


def _dev(args: argparse.Namespace) -> int:
    from orchestration.cli.dev import run_dev

    return run_dev(args.pipelines, host=args.host, port=args.port, verbose=args.verbose)


# -- status ----------------------------------------------------------------------------------


def _status(args: argparse.Namespace) -> int:
    from cdc_core.pipeline.service import PipelineService
    from orchestration.cli.instance import dagster_home_for
    from orchestration.cli.status import StatusReport, instance_exists, last_failed_run, status_table
    from orchestration.defs.pipelines import PipelineHandle

    handle = PipelineHandle.load(args.pipeline)
    service = PipelineService(handle.definition)
    try:
        status = service.status()  # a server that does not answer: its fields are None, the rest is shown
    finally:
        service.close()
    where = dagster_home_for([handle])
    home = where.path
    report = StatusReport(str(handle.path), status, str(home), instance_exists(home), last_failed_run(handle, home),
                          dagster_instance_used=where.describe())
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        from rich.console import Console

        Console().print(status_table(report))
    for why in status.unreachable.values():
        print(f"tidemark status: {args.pipeline}: {why}", file=sys.stderr)
    return 1 if status.unreachable else 0


# -- sql -------------------------------------------------------------------------------------


def _sql(args: argparse.Namespace) -> int:
    from rich.console import Console

    from cdc_core.config import load_pipeline
    from orchestration.cli.sql import SqlError, answer_table, run_sql

    definition = load_pipeline(Path(args.pipeline))
    try:
        answer = run_sql(definition, args.statement, database=args.db, limit=args.limit)
    except SqlError as exc:
        print(f"tidemark sql: {exc}", file=sys.stderr)
        return exc.code
    if args.json:
        _print_json(answer.to_dict())
    else:
        console = Console()
        if not console.is_terminal:  # piped: the whole table, never cut at 80 columns
            console = Console(width=10_000)
        console.print(answer_table(answer))
        print(f"{len(answer.rows):,} row(s)")
    if answer.cut_note:
        print(f"tidemark sql: {answer.cut_note}", file=sys.stderr)
    return 0


# -- splits ----------------------------------------------------------------------------------


def _splits(args: argparse.Namespace) -> int:
    from cdc_core.config import load_pipeline
    from cdc_core.mysql.server_check import ServerCheckError
    from cdc_core.pipeline.service import PipelineService

    definition = load_pipeline(Path(args.pipeline))  # an invalid or missing file: exit 2, as every command
    try:
        plan = PipelineService.next_plan(definition)
        splits = plan.splits
        if args.table:
            planned = {str(s.table_id) for s in splits} | set(plan.tables)
            missing = [t for t in args.table if t not in planned]
            if missing:
                raise ValueError(
                    f"table(s) {', '.join(missing)} are not captured by this pipeline's snapshot plan (check "
                    "'tables' / 'tables.exclude', that the table exists, and scan.startup.mode); planned: "
                    + (", ".join(sorted(planned)) or "none"))
            splits = tuple(s for s in splits if str(s.table_id) in args.table)
    except (ValueError, ConnectionError, ServerCheckError) as exc:
        print(f"tidemark splits: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([s.to_plan_dict() for s in splits], ensure_ascii=False))
    else:
        print(splits_report(splits))
        for note in plan.notes:
            print(f"note: {note}")
        print({"recorded": "the plan in the pipeline's state: the next run loads these chunks",
               "resumed": "the pipeline's plan, its unsplit rest computed now (not recorded)",
               "computed": "no plan recorded yet: the one the next run makes from the server's estimates now"
               }[plan.source])
    return 0


def splits_report(splits: Sequence[SnapshotSplit]) -> str:
    """The chunk plan as a markdown table (one row per chunk, its key range as an interval), then
    the chunk count per table when there are several."""
    import pandas as pd  # deferred: ~0.5 s to import, and only this output needs it

    def key_range(split: SnapshotSplit) -> str:
        start = "(-∞" if split.start is None else "[" + ", ".join(map(str, split.start))
        end = "+∞)" if split.end is None else ", ".join(map(str, split.end)) + ")"
        return f"{start}, {end}"

    frame = pd.DataFrame([(str(s.table_id), s.index, key_range(s)) for s in splits],
                         columns=["table", "chunk", "key range"])
    if frame.empty:
        return "0 chunk(s)"
    lines = [frame.to_markdown(index=False)]
    per_table = frame.groupby("table", sort=False).size()
    if len(per_table) > 1:
        lines += ["", per_table.rename("chunks").to_frame().to_markdown()]
    lines.append(f"{len(frame)} chunk(s)")
    return "\n".join(lines)


# -- demo ------------------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    from devstack.stack import DevStack
    from orchestration.cli.demo import run_demo

    endpoints = DevStack(Path(args.dir)).endpoints()
    doris = endpoints["doris"]
    return run_demo(args.action, endpoints["mysql"]["root_socket"], doris["fe_http"] if doris else None,
                    reset=args.reset, pipeline=Path(args.pipeline))


# -- parser ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidemark", description="Change data capture from MySQL into Doris.")
    sub = parser.add_subparsers(dest="command", required=True)

    dev = sub.add_parser("devstack", help="the local MariaDB and Doris stand-in")
    dev.add_argument("action", choices=["up", "down", "status"])
    dev.add_argument("--dir", default=".tidemark/devstack", help="where the stack keeps data, logs and pids")
    dev.add_argument("--json", action="store_true", help="print one JSON object")
    dev.add_argument("--mysql-port", type=int, default=None, help="MariaDB TCP port (default 3307)")
    dev.add_argument("--doris-port", type=int, default=None, help="Doris FE HTTP port (default 8030)")
    dev.add_argument("--doris-be-port", type=int, default=None, help="Doris BE HTTP port (default 8040)")
    dev.add_argument("--replica", action="store_true",
                     help="up: also start a MariaDB replica of the stack's MariaDB (GTID replication, "
                     "log_slave_updates, its own binlog file names), e.g. to try a failover")
    dev.add_argument("--replica-port", type=int, default=None, help="the replica's TCP port (default 3308)")
    dev.add_argument("--doris-max-running-txn-num-per-db", type=int, default=None,
                     help="up: the Doris stand-in's max_running_txn_num_per_db (default 100, as Doris)")
    dev.set_defaults(handler=_devstack)

    val = sub.add_parser("validate", help="check pipeline files and report problems one per line")
    val.add_argument("pipelines", nargs="+")
    val.add_argument("--connect", action="store_true",
                     help="also connect to each pipeline's MySQL source and check its binlog settings and the "
                     "user's grants (each problem with the statement that fixes it), the Doris FE, and the "
                     "state database of tidemark.state.url")
    val.set_defaults(handler=_validate)

    run = sub.add_parser("run", help="run pipelines in this process: the snapshot, then the binlog")
    run.add_argument("pipelines", nargs="+", metavar="PIPELINE.yaml")
    run.add_argument("--once", action="store_true",
                     help="snapshot if not done, then the binlog up to the position seen at the start; then exit "
                     "(without it: the snapshot, then the binlog batch after batch until Ctrl-C or SIGTERM, which "
                     "commit the work in flight and exit 0)")
    run.add_argument("--timings", metavar="FILE", type=Path, default=None,
                     help="write the wall seconds per phase (planning, spark_start, read_load, commit, parity, "
                     "snapshot, binlog, total) to FILE as JSON, and every phase's start and end since the "
                     "process started (with the imports, the Dagster instance, each Dagster run) to FILE's "
                     "name with .timeline.json")
    run.add_argument("--no-checks", action="store_true",
                     help="skip the chunk parity checks after each snapshot run (faster on big tables)")
    run.set_defaults(handler=_run)

    ver = sub.add_parser("verify", help="compare each captured table in MySQL and Doris (checksums computed in "
                         "both databases); list the keys that differ; exit 0 when equal, 1 when not")
    ver.add_argument("pipeline", metavar="PIPELINE.yaml")
    ver.add_argument("--table", action="append", metavar="DB.TBL", help="only this table (repeatable)")
    ver.add_argument("--json", action="store_true", help="print one JSON object")
    ver.add_argument("--max-keys", type=int, default=100, help="the most differing keys listed per table")
    ver.add_argument("--repair", action="store_true",
                     help="mend what differs: the rows re-read from MySQL and loaded (upserts, deletes) with a sequence "
                     "no newer binlog change loses to (safe while the stream runs), then verified again")
    ver.set_defaults(handler=_verify)

    res = sub.add_parser("resnapshot", help="read captured tables again from now and delete from Doris the rows MySQL "
                         "lost meanwhile (after a purged binlog, or rows changed without binlog); the stream goes on")
    res.add_argument("pipeline", metavar="PIPELINE.yaml")
    res.add_argument("--table", action="append", metavar="DB.TBL",
                     help="only this table (repeatable; not after a purged binlog, which every table missed)")
    res.set_defaults(handler=_resnapshot)

    ui = sub.add_parser("dev", help="the Dagster UI and daemon for these pipelines (binlog and DDL sensors running)")
    ui.add_argument("pipelines", nargs="+", metavar="PIPELINE.yaml")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.add_argument("-v", "--verbose", action="store_true",
                    help="show all of Dagster's output here, tracebacks included (by default its INFO lines, e.g. "
                    "every sensor tick, and tracebacks go only to the log files <instance>/dev_logs/daemon.log and "
                    "webserver.log, the instance being <tidemark.state.dir>/dagster or $TIDEMARK_DAGSTER_HOME; "
                    "warnings and errors show here too)")
    ui.set_defaults(handler=_dev)

    st = sub.add_parser("status", help="where a pipeline stands: snapshot progress, binlog lag, pauses, last error "
                        "(reads only; starts no Spark or Dagster run)")
    st.add_argument("pipeline", metavar="PIPELINE.yaml")
    st.add_argument("--json", action="store_true", help="one JSON object (field names in docs/operations.md)")
    st.set_defaults(handler=_status)

    sql = sub.add_parser("sql", help="run one SQL statement on the pipeline's Doris (through the FE's HTTP query "
                         "API: the demo's stand-in and a real Doris alike) and print the answer as a table")
    sql.add_argument("pipeline", metavar="PIPELINE.yaml")
    sql.add_argument("statement", metavar="STATEMENT", help='e.g. "SELECT COUNT(*) FROM tidemark_demo.customers"')
    sql.add_argument("--db", default=None, help="the database unqualified table names are in (default: the one "
                     "Doris database the pipeline writes, else information_schema)")
    sql.add_argument("--limit", type=int, default=1000,
                     help="the most rows shown (at most 10000, the query API's cap); a cut result says so")
    sql.add_argument("--json", action="store_true", help="one JSON object: columns, rows, truncated")
    sql.set_defaults(handler=_sql)

    spl = sub.add_parser("splits", help="print the snapshot split plan (chunks) the next run loads")
    spl.add_argument("pipeline")
    spl.add_argument("--table", action="append", metavar="DB.TBL", help="only this table (repeatable)")
    spl.add_argument("--json", action="store_true", help="one JSON array of {table, index, start, end}")
    spl.set_defaults(handler=_splits)

    demo = sub.add_parser("demo", help="the demo's sample shop database in the local stack (what `make demo` runs)")
    demo.add_argument("action", choices=["load", "compare"],
                      help="load: create the sample database in MariaDB; compare: MySQL vs Doris, per table")
    demo.add_argument("--dir", default=".tidemark/devstack", help="the local stack's directory (as for devstack)")
    demo.add_argument("--reset", action="store_true",
                      help="load: start over: drop the sample database in MySQL and Doris, delete the demo "
                      "pipeline's state, and recreate the sample data")
    demo.add_argument("--pipeline", default="pipelines/demo.yaml", help="the demo pipeline (for --reset)")
    demo.set_defaults(handler=_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    from cdc_core.config import PipelineConfigError
    from orchestration.cli.cli_logging import configure_cli_logging
    from orchestration.cli.event_batches import enable_event_batches

    args = build_parser().parse_args(argv)
    enable_event_batches()  # the runs this command executes write asset events in batches
    configure_cli_logging()  # library logging to the log file; ours one line each (orchestration/cli/cli_logging.py)
    try:
        return args.handler(args)
    except PipelineConfigError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"tidemark {args.command}: {exc}", file=sys.stderr)
        return 1


# Commands whose process ends as soon as its work is done and said (see ``cli``).
PROMPT_EXIT = frozenset({"run", "resnapshot", "verify", "splits"})


def cli() -> None:
    """The ``tidemark`` command (``pyproject.toml``'s script): ``main``, then, for a command that
    has finished its work, the process ends at once. Python's own end (joining the thread and
    process pools, tearing down Dagster's, Spark's and pyarrow's modules) cost a 1M-row
    ``tidemark run --once`` about a second after everything was committed and printed
    (docs/performance.md). What must happen still happens: the local workers stop, the
    ``atexit`` functions run (Spark's scratch directory, the log file's flush), stdout and stderr
    are flushed. An exception is Python's to report, as before."""
    from cdc_core.instrumentation.collector import fewer_young_collections

    fewer_young_collections()  # before the imports (cdc_core/instrumentation/collector.py)
    argv = sys.argv[1:]
    code = main(argv)
    command = next((a for a in argv if not a.startswith("-")), "")
    if command in PROMPT_EXIT:
        end_process(code)
    sys.exit(code)


def end_process(code: int) -> None:
    """Flush and end this process now with ``code`` (see ``cli``)."""
    import atexit
    import contextlib
    import os

    from jobs.local_workers import end_local_workers

    end_local_workers()
    atexit._run_exitfuncs()  # noqa: SLF001 - the registered exit functions, without the rest of Python's end
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing more can be said on it
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    cli()
