"""``tidemark run PIPELINE.yaml --once``: the Dagster definitions executed in this process.

The same asset jobs the UI launches, run with ``execute_in_process`` against the pipeline's
Dagster instance (so the UI shows them later): plan the snapshot, load the chunks that are not
committed yet in partition ranges, then apply the binlog up to the server's position seen when
the command started. Every materialization's commit hook runs before the next one starts, so
when the command exits 0 everything is committed. Progress (chunks done / total, rows/s,
binlog lag) is drawn with rich on stderr.
"""

from __future__ import annotations

import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from dagster import AssetCheckKey
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cdc_core.instrumentation.faults import fault_point
from cdc_core.instrumentation.phases import phase, span
from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.server_check import ServerCheckError
from cdc_core.schema_evolution.registry import RequestStatus
from cdc_core.state import ChunkStatus
from cdc_core.state.keys import BINLOG_PAUSED, PENDING_DDL
from cdc_core.state.leases import LeaseHeld, Scope
from orchestration.definitions import build_definitions
from orchestration.defs.assets import PLAN_STEPS_TAG, plan_and_register
from orchestration.defs.failures import EXPECTED_FAILURES, one_line
from orchestration.defs.pipelines import BINLOG_RUN_SECONDS_TAG, PipelineHandle
from orchestration.defs.runs import LeaseView, fail_runs_of_dead_holders, runs_in_flight
from orchestration.defs.schema_change_job import run_config_for, schema_change_job_name

logger = logging.getLogger(__name__)

# Chunks per in-process run: small enough for a live progress bar, big enough for Spark. A run
# takes more chunks, up to RUN_MAX_CHUNKS, while their planned rows stay within RUN_ROWS: a
# database of small tables (one chunk each) is then one run and one Spark job, not one per 64
# tables, each paying Dagster's run and Spark's job scheduling for a few thousand rows.
CHUNKS_PER_RUN = 64
RUN_ROWS = 1_000_000
RUN_MAX_CHUNKS = 500  # as a backfill's runs (orchestration/defs/assets.py)
# Warnings on the terminal, one line each; a failure is said once, by `tidemark run` itself
# (orchestration/defs/console_logger.py).
QUIET_LOGS = {"loggers": {"console": {"config": {"log_level": "WARNING", "show_failures": False}}}}
MAX_BATCHES = 100_000
# Passes over the chunks not committed yet: a chunk whose load Doris lost is read again in the next.
SNAPSHOT_PASSES = 3


class RunOnceError(RuntimeError):
    """A step failed; ``str()`` is the message for the user, ``code`` the exit status."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


@dataclass
class Summary:
    chunks_total: int = 0
    chunks_loaded: int = 0
    rows: int = 0
    snapshot_s: float = 0.0
    batches: int = 0
    events: int = 0
    binlog_s: float = 0.0
    start_offset: str = "-"
    final_offset: str = "-"
    schema_changes: int = 0
    snapshot_done_before: bool = False  # committed by an earlier run: nothing of it loaded by this one
    notes: list[str] = field(default_factory=list)
    # chunk_parity as this run's snapshot runs evaluated it: chunks checked, and whether every check passed
    chunks_checked: int = 0
    chunk_parity_failed: bool = False
    table_parity: str = ""  # how the end-of-run table_parity went: "compared", "implied", "" (not run)


def _offset(value: dict[str, Any] | None) -> BinlogOffset | None:
    return BinlogOffset.from_dict(value) if value else None


def _contiguous_ranges(ordered: list[str], wanted: set[str], limit: int, rows: dict[str, int] | None = None,
                       rows_limit: int = 0, max_limit: int = 0) -> list[tuple[str, str, int]]:
    """Group ``wanted`` keys into runs of neighbours in partition order, at most ``limit`` long;
    with ``rows`` (each key's estimated rows), longer, up to ``max_limit``, while the run's rows
    stay within ``rows_limit``."""
    ranges: list[tuple[str, str, int]] = []
    start = end = None
    count = total = 0

    def fits(key: str) -> bool:
        if count < limit:
            return True
        return rows is not None and count < max_limit and total + rows.get(key, rows_limit) <= rows_limit

    for key in ordered:
        if key in wanted and (start is None or fits(key)):
            start = start or key
            end, count, total = key, count + 1, total + (rows or {}).get(key, 0)
            continue
        if start is not None:
            ranges.append((start, end, count))
            start = end = None
            count = total = 0
        if key in wanted:
            start, end, count, total = key, key, 1, (rows or {}).get(key, 0)
    if start is not None:
        ranges.append((start, end, count))
    return ranges


def _one_line(message: str | None) -> str:
    """An error's whole message on one line. Not only its last line: a stop's message can span lines
    (a DDL error appends ``DDL: <statement>`` on its own line), and the cause and the way out it
    names come first."""
    return " ".join(line.strip() for line in (message or "").splitlines() if line.strip())


def _first_error(result: Any) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.user_failure_data:
            # an expected failure (orchestration/defs/failures.py): its one line says the cause and the fix
            description = event.step_failure_data.user_failure_data.description
            if description:
                return f"{event.step_key}: {description}"
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            error = event.step_failure_data.error
            message = _one_line(error.message)
            cause = error.cause
            while cause is not None:
                message = _one_line(cause.message) or message
                cause = cause.cause
            return f"{event.step_key}: {message}"
    return "the run failed (see the Dagster UI for its log)"


def _cause(failed: str) -> str:
    """A ``ResolveReport.failed`` entry (``label: error``) without its label when the error names it."""
    label, sep, error = failed.partition(": ")
    return error if sep and label in error else failed


class OnceRun:
    """One ``--once`` execution of one pipeline."""

    def __init__(self, handle: PipelineHandle, instance: Any, console: Console | None = None,
                 resource: Any = None, parity_checks: bool = True):
        self.handle = handle
        self.instance = instance
        self.console = console or Console(stderr=True)
        with span("definitions"):
            self.defs = build_definitions([handle], resources={handle.slug: resource} if resource else None)
            self.resource = self.defs.resources[handle.resource_key]
            self.service = self.resource.service()
        self.summary = Summary()
        self.parity_checks = parity_checks
        # _report_caught_up stood in for the binlog run: its no_pending_transactions evaluation is
        # then reported by this command (_report_no_pending)
        self.binlog_run_skipped = False

    def stop_requested(self) -> bool:
        """Whether to load no further chunk run (``tidemark run`` without ``--once`` asks on Ctrl-C)."""
        return False

    def on_chunks(self, done: int, total: int, rows: int) -> None:
        """After each chunk run: chunks committed of all, snapshot rows loaded by this command."""

    def _job(self, job_name: str) -> Any:
        job = self.defs.resolve_job_def(job_name)
        if job_name == self.handle.snapshot_job_name and not self.parity_checks:
            pending = AssetCheckKey(self.handle.chunks_key, "no_pending_transactions")
            job = job.get_subset(asset_selection={self.handle.chunks_key}, asset_check_selection={pending})
        return job

    def _execute(self, job_name: str, tags: dict[str, str] | None = None) -> Any:
        job = self._job(job_name)
        with warnings.catch_warnings(), span(f"run {job_name.removeprefix(self.handle.slug + '_')}"):
            warnings.simplefilter("ignore")
            result = job.execute_in_process(instance=self.instance, tags=tags or {}, raise_on_error=False,
                                            run_config=QUIET_LOGS)
        failed_steps = {e.step_key for e in result.all_events if e.is_step_failure}
        if any(e.event_type_value == "HOOK_ERRORED" for e in result.all_events) or (
                failed_steps and all("no_pending_transactions" in (k or "") for k in failed_steps)):
            # The commit hook failed (raised, or said why on one line: orchestration/defs/hooks.py): the
            # loads stay prepared and the blocking no_pending_transactions check failed the run. Finish
            # them now, loudly; the run is then as good as committed.
            try:
                report = self.service.resolve_pending()
            except EXPECTED_FAILURES as exc:  # still down: the run's own line says why and what to do
                raise RunOnceError(_first_error(result)) from exc
            if report.failed:
                raise RunOnceError(
                    f"{self.handle.slug}: committing the run's loads failed, {len(report.failed)} transaction(s) "
                    f"stay precommitted in Doris for the next run to commit: {_cause(report.failed[0])}"
                )
            if report.committed:  # (a failed abort hook leaves nothing to commit: the step's error says it)
                self.console.print(f"[yellow]{self.handle.slug}: a commit hook failed; its loads were committed "
                                   f"afterwards ({len(report.committed)} transaction(s))[/yellow]")
            if all("no_pending_transactions" in (k or "") for k in failed_steps):
                return result
        if not result.success:
            raise RunOnceError(_first_error(result))  # `tidemark run SLUG:` prefixes it
        return result

    def _refuse_in_flight(self, command: str) -> None:
        """Decline while a Dagster run of the pipeline is executing. Called holding the pipeline's
        lease: a run marked executing that holds no lease and has logged nothing for longer than the
        lease's time to live died before taking one (``orchestration/defs/runs.py:fail_leaseless_runs``);
        it is marked failed here, with one line, rather than blocking every run until a hand edit."""
        leases = LeaseView(frozenset(r.run_id for r in self.service.live_leases() if r.run_id),
                           self.service.definition.pipeline.run_lease_ttl_s, any_steps=True)
        in_flight = runs_in_flight(self.instance, prefix=self.handle.owns_asset_prefix, leases=leases,
                                   on_failed=lambda gone: self.console.print(
                                       f"[yellow]{self.handle.slug}: {gone.line}[/yellow]"))
        if in_flight:
            raise RunOnceError(
                f"run {in_flight[0].run_id[:8]} of pipeline '{self.handle.slug}' is in flight in {self.instance.root_directory}; "
                f"wait for it (or stop `tidemark dev`'s sensor and schedule) before `{command}`", code=1)

    def _take_lease(self, command: str) -> None:
        """Hold the whole pipeline for this command in the state store every machine shares
        (``cdc_core/state/leases.py``): atomic, so of two commands started at the same moment on any
        two machines exactly one goes on; the other ends here with one line, having written nothing.
        A holder that died (killed, its machine gone) is recognised by its expired heartbeat: its
        lease is taken over and ``_prepare``'s ``resolve_pending`` finishes what it left prepared."""
        fault_point("run.before_lease", pipeline=self.handle.slug)
        try:
            dead = self.service.take_lease([Scope.PIPELINE], purpose=command)
        except LeaseHeld as exc:
            raise RunOnceError(str(exc), code=1) from None
        fail_runs_of_dead_holders(self.instance, dead)
        # one line per dead process, naming its command (its lease on the whole pipeline) when it had one
        for record in {r.owner: r for r in sorted(dead, key=lambda r: r.scope == Scope.PIPELINE)}.values():
            self.console.print(f"[yellow]{self.handle.slug}: an earlier run is gone ({record.purpose} on {record.host}, "
                               f"pid {record.pid}: {record.death()}); finishing what it "
                               "left prepared[/yellow]", soft_wrap=True)  # one line, whatever the width

    def _give_back_lease(self) -> None:
        try:
            self.service.give_back_lease([Scope.PIPELINE])
        except Exception:  # noqa: BLE001 - the run's result stands; the lease expires on its own
            logger.warning("could not give back the lease of %s; it expires on its own", self.handle.slug,
                           exc_info=True)

    def resnapshot(self, tables: list[str] | None) -> Summary:
        """``tidemark resnapshot``: mark the tables for reading again (``cdc_core/pipeline/resnapshot.py``),
        then the same runs as ``--once``: the chunks through the snapshot job, and the binlog, whose
        first batch sweeps the rows MySQL no longer has and goes on from the new watermarks."""
        self._take_lease("tidemark resnapshot")
        try:
            self._refuse_in_flight("tidemark resnapshot")
            try:
                # stopped at a change Doris refused (a new primary key...): the tables are re-created at the DDL
                recreated = self.service.schema_change_steps().recreate_at_stop(tables or [])
                if recreated:
                    self.console.print(f"{self.handle.slug}: the stream is stopped at a schema change Doris could "
                                       f"not apply; re-creating {', '.join(recreated)} with the new schema, reading "
                                       "it again, and going on past the DDL")
                    return self._work()
                request = self.service.request_resnapshot(tables)
            except ValueError as exc:
                raise RunOnceError(str(exc), code=2) from exc
            except ServerCheckError as exc:  # a grant missing (RELOAD), nothing marked: exit 1, as validate
                raise RunOnceError(one_line(exc)) from exc
            self.console.print(f"{self.handle.slug}: {request.describe()}")
            return self._work()
        finally:
            self._give_back_lease()

    def run(self) -> Summary:
        """The whole command under the pipeline's lease (``_take_lease``)."""
        self._take_lease(self.command)
        try:
            return self._work()
        finally:
            self._give_back_lease()

    command = "tidemark run --once"

    def _work(self) -> Summary:
        with span("prepare"):
            self._prepare()
        try:
            target: dict[str, Any] | None = self.service.binlog_lag().server_offset
        except (AttributeError, NotImplementedError) as exc:  # a service built without the binlog half
            target, missing = None, exc
        else:
            missing = None
            self.summary.start_offset = f"{target.get('file')}:{target.get('position')}"
        if not self.service.binlog_ready():
            with phase("snapshot"):
                self._snapshot()
        else:
            self.summary.snapshot_done_before = True
            self.summary.chunks_total = len(self.service.chunk_statuses())
        # A reload's or resnapshot's sweep (cdc_core/pipeline/reload.py) runs before every binlog batch;
        # here too, so that it is done when the binlog has not moved since (no batch then).
        self.service.sweep_reloads()
        if missing is not None:
            raise RunOnceError(f"the snapshot is committed, but this build's service cannot read the binlog yet "
                               f"({type(missing).__name__}: {missing})")
        with phase("binlog"):
            self._binlog(_offset(target))
        with span("no_pending_left"):
            self._no_pending_left()
            if self.binlog_run_skipped:
                self._report_no_pending()
        if self.parity_checks:
            with phase("parity"):
                if self._table_parity_implied():
                    with span("table_parity_implied"):
                        self._report_implied_table_parity()
                else:
                    self._table_parity()
        return self.summary

    def _table_parity_implied(self) -> bool:
        """Whether this run's chunk checks already compared every table whole, as ``table_parity``
        would again: this run loaded every chunk of the snapshot, every chunk's parity check passed,
        and the binlog brought no row change and no schema change since the snapshot's watermarks.
        The chunks of a table cover its whole key space (the first and last are open-ended), nothing
        but this run wrote those ranges in Doris, and MySQL's tables did not change after their chunks
        were compared (else the binlog would have had events for them), so comparing the tables again
        reads both databases once more to find what is already known (docs/performance.md)."""
        s = self.summary
        return (not s.snapshot_done_before and s.chunks_total > 0 and s.chunks_loaded >= s.chunks_total
                and s.chunks_checked >= s.chunks_total and not s.chunk_parity_failed
                and s.events == 0 and s.schema_changes == 0)

    def _report_implied_table_parity(self) -> None:
        """Record binlog_stream's table_parity as passed by this run's chunk checks (a run-less check
        evaluation, so the UI shows it evaluated, with why in its description and metadata)."""
        from dagster import AssetCheckEvaluation, MetadataValue
        from dagster._core.definitions.asset_checks.asset_check_evaluation import (
            AssetCheckEvaluationTargetMaterializationData,
        )

        s = self.summary
        key = self.handle.check_key(self.handle.binlog_key, "table_parity")
        # the evaluation is of binlog_stream's latest materialization (this run's), as a run's would be:
        # the UI counts a check against the materialization it targets
        latest = self.instance.fetch_materializations(self.handle.binlog_key, limit=1).records
        target = (AssetCheckEvaluationTargetMaterializationData(
            storage_id=latest[0].storage_id, run_id=latest[0].run_id, timestamp=latest[0].timestamp)
            if latest else None)
        description = (f"{s.chunks_total} chunk(s) compared by chunk_parity in this run, all equal, and no change "
                       "came through the binlog since: every table is equal, not compared a second time "
                       "(`tidemark verify` compares them again)")
        self.instance.report_runless_asset_event(AssetCheckEvaluation(
            asset_key=key.asset_key, check_name=key.name, passed=True, description=description,
            metadata={"implied_by": "chunk_parity", "chunks": s.chunks_total,
                      "binlog_events_since_snapshot": 0, "compared": MetadataValue.bool(False)},
            target_materialization_data=target))
        s.table_parity = "implied"

    def _table_parity(self) -> None:
        """binlog_stream's table_parity check (``tidemark verify`` as a check), once the run is done:
        the UI then shows it evaluated, and a difference is said here too (the run still exits 0: the
        check is not blocking; ``tidemark verify`` is the command that fails on a difference)."""
        with self.console.status(f"[bold]{self.handle.slug}[/]: comparing every table in MySQL and Doris..."):
            result = self._execute(self.handle.verify_job_name)
        self.summary.table_parity = "compared"
        for evaluation in result.get_asset_check_evaluations():
            if not evaluation.passed:
                self.console.print(f"[yellow]{self.handle.slug}: the table_parity check failed: "
                                   f"{evaluation.description or 'see its metadata in the UI'}[/yellow]")

    def _no_pending_left(self) -> None:
        pending = self.service.pending_transactions()
        if pending:
            raise RunOnceError(f"{len(pending)} transaction(s) are still prepared after the run; see the "
                               "no_pending_transactions check")

    def _prepare(self) -> None:
        """No other run of the pipeline in flight; what an earlier run left PREPARED finished."""
        self._refuse_in_flight("tidemark run")
        report = self.service.resolve_pending()
        if report.failed:
            raise RunOnceError(f"{len(report.failed)} prepared transaction(s) of '{self.handle.slug}' cannot be "
                               f"resolved now; the first: {report.failed[0]}")
        if report.redo:
            self.console.print(f"[yellow]Doris lost the loads of {len(report.redo)} chunk(s)/batch(es) before their "
                               f"commit; reading them again: {', '.join(report.redo[:5])}[/yellow]")

    # -- snapshot ---------------------------------------------------------------------------

    def _snapshot(self) -> None:
        """Plan a slice of the split (``tidemark.snapshot.split-steps-per-run`` steps), load the chunks
        planned so far, plan the next slice...: a huge table's first chunks are loading while its later
        ones are still to be split, and the splitter's cursor is in the state after every step (a crash
        resumes the split where it stopped). Then up to two more passes over chunks Doris lost."""
        started = time.monotonic()
        steps = self.service.definition.pipeline.snapshot_split_steps_per_run
        progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("chunks  {task.fields[rows]:,} rows  {task.fields[rate]:,.0f} rows/s"), TimeElapsedColumn(),
            console=self.console, transient=False,
        )
        name = f"{self.handle.slug} snapshot"
        try:  # the display starts after the first planning step: a plan that fails prints its one line alone
            task = progress.add_task(f"{name} (planning)", total=None, completed=0, rows=0, rate=0.0)
            complete = False
            while not complete:
                md = {k: getattr(v, "value", v) for k, v in self._plan(steps).items()}
                progress.start()
                notes = md.get("notes")
                if notes is not None and notes != "(none)" and notes not in self.summary.notes:
                    self.summary.notes.append(notes)
                complete = bool(md["complete"]) if "complete" in md else True
                ordered = self.instance.get_dynamic_partitions(self.handle.partitions_name)
                status = self.service.chunk_statuses()
                todo = {k for k in ordered if status.get(k) is not ChunkStatus.COMMITTED}
                self.summary.chunks_total = len(ordered)
                progress.update(task, description=name if complete else f"{name} (splitting)", total=len(ordered),
                                completed=len(ordered) - len(todo))
                if not self._load(ordered, todo, progress, task, started):
                    return
            for _attempt in range(1, SNAPSHOT_PASSES):
                # A chunk whose load Doris lost before its commit is PENDING again: read it again.
                status = self.service.chunk_statuses()
                todo = {k for k in ordered if status.get(k) is not ChunkStatus.COMMITTED}
                if not todo:
                    break
                self.console.print(f"[yellow]Doris lost the loads of {len(todo)} chunk(s) before their commit; "
                                   "reading them again[/yellow]")
                progress.update(task, completed=len(ordered) - len(todo))
                if not self._load(ordered, todo, progress, task, started):
                    return
        finally:
            progress.stop()
        self.summary.snapshot_s = time.monotonic() - started
        if not self.service.snapshot_done():
            raise RunOnceError(f"the snapshot of '{self.handle.slug}' is not complete after loading every chunk "
                               "(a commit failed?); run again to resume")

    def _plan(self, steps: int) -> dict[str, Any]:
        """Plan ``steps`` split steps in this process, as the snapshot_splits asset does
        (``orchestration/defs/assets.py:plan_and_register``), and report its materialization without
        a Dagster run: the UI shows snapshot_splits materialized with the same metadata, for the
        ~0.4 CPU-s less of a run whose work is a few queries (issue 30). The command holds the
        pipeline's lease and resolved what was prepared, as the run would have first; a crash
        mid-plan resumes from the splitter's cursor, as in a run. A planning that fails is done
        again as the Dagster run it was: the failure is then in the UI, and said as before."""
        from dagster import AssetMaterialization

        try:
            with span("plan in process"):
                metadata = plan_and_register(self.instance, self.handle.partitions_name, self.service, steps,
                                             logger.info)
        except Exception:  # noqa: BLE001 - the run below does it again and reports its failure its way
            logger.info("planning %s in process failed; planning in a Dagster run", self.handle.slug, exc_info=True)
            result = self._execute(self.handle.splits_job_name, tags={PLAN_STEPS_TAG: str(steps)})
            return dict(result.asset_materializations_for_node(f"{self.handle.slug}__snapshot_splits")[0].metadata)
        self.instance.report_runless_asset_event(AssetMaterialization(
            asset_key=self.handle.splits_key, metadata=metadata,
            description=f"planned by `{self.command}` in its own process (no Dagster run)"))
        return metadata

    def _load(self, ordered: list[str], todo: set[str], progress: Progress, task: Any, started: float) -> bool:
        """Load the ``todo`` chunks in partition ranges; False when a stop was requested."""
        done = len(ordered) - len(todo)
        rows = self.service.chunk_row_estimates()
        for start, end, count in _contiguous_ranges(ordered, todo, CHUNKS_PER_RUN, rows, RUN_ROWS, RUN_MAX_CHUNKS):
            if self.stop_requested():
                return False  # the chunks not loaded stay PENDING: the next run loads them
            tags = {"dagster/asset_partition_range_start": start, "dagster/asset_partition_range_end": end,
                    **self.handle.run_tags()}
            result = self._execute(self.handle.snapshot_job_name, tags=tags)
            mats = result.asset_materializations_for_node(f"{self.handle.slug}__snapshot_chunks")
            self._count_chunk_checks(result)
            self.summary.rows += sum(int(m.metadata["rows"].value) for m in mats if "rows" in m.metadata)
            self.summary.chunks_loaded += count
            done += count
            elapsed = time.monotonic() - started
            progress.update(task, advance=count, rows=self.summary.rows,
                            rate=self.summary.rows / elapsed if elapsed else 0.0)
            self.on_chunks(done, len(ordered), self.summary.rows)
        return not self.stop_requested()

    def _count_chunk_checks(self, result: Any) -> None:
        """Note what a snapshot run's chunk_parity said (for ``_table_parity_implied``)."""
        for evaluation in result.get_asset_check_evaluations():
            if evaluation.check_name != "chunk_parity":
                continue
            checked = evaluation.metadata.get("checked")
            self.summary.chunks_checked += int(checked.value) if checked is not None else 0
            if not evaluation.passed:
                self.summary.chunk_parity_failed = True

    # -- binlog -----------------------------------------------------------------------------

    def _resume_paused(self) -> None:
        """A binlog paused by an unfinished schema change (a failed run): finish it first; paused by hand:
        exit 3."""
        flag = self.service.binlog_paused()
        if flag:
            if self.service.schema_registry().status is RequestStatus.IDLE:  # paused by hand, not by a DDL
                raise RunOnceError(f"the binlog of '{self.handle.slug}' is paused by a schema change ({flag!r}); "
                                   "run again once it is finished", code=3)
            self._schema_change(None)

    def _stream_at_ddl(self, committed: BinlogOffset | None) -> BinlogOffset | None:
        """The DDL the stream stands before, when the state says so: a batch stopped before it
        (``PENDING_DDL``, cleared when the schema change releases the stream past it), the committed
        offset is before it in the same epoch, and no schema change is under way or paused by hand.
        A binlog run from there would read nothing, stop at this DDL again and hand it to the
        schema_change job; that job's flush applies whatever lies before the DDL itself
        (``cdc_core/pipeline/schema_change.py``), so handing the DDL to it directly loses nothing."""
        if committed is None:
            return None
        with self.service.store.transaction(readonly=True) as tx:
            pending = PENDING_DDL.get(tx)
            paused = BINLOG_PAUSED.get(tx)
        if paused or not pending or not pending.get("offset"):
            return None
        ddl = BinlogOffset.from_dict(pending["offset"])
        if ddl.epoch != committed.epoch or not committed < ddl:
            return None
        if self.service.schema_registry().status is not RequestStatus.IDLE:
            return None
        return ddl

    @staticmethod
    def _nothing_to_read(lag: Any, committed: BinlogOffset | None) -> bool:
        """The server's position is not past where the stream stands, on the same server (its offset
        aligned to the stream's epoch: a failover not yet followed has the next one, and its empty
        batch would move the committed offset there). A binlog run would read nothing and write no
        state: its batch ends at once with no batch id (``cdc_core/pipeline/binlog_batch.py:run_batch``)."""
        server = _offset(lag.server_offset)
        return (committed is not None and server is not None and server.epoch == committed.epoch
                and not lag.behind and server <= committed)

    def _report_caught_up(self, committed: BinlogOffset) -> None:
        """binlog_stream materialized without a Dagster run, when there is nothing to read (a run
        right after the snapshot, a re-run with nothing new): the UI shows where the stream stands, as
        an empty binlog run's materialization would, for ~0.6 CPU-s less (that run's process captures,
        its SQLite file, its ~20 events). Nothing is written to the state; ``_work`` reports the
        no_pending_transactions evaluation once it has checked that nothing is left prepared."""
        from dagster import AssetMaterialization, MetadataValue

        at = f"{committed.file}:{committed.position}"
        self.console.log(f"binlog: nothing new since {at}")
        self.instance.report_runless_asset_event(AssetMaterialization(
            asset_key=self.handle.binlog_key,
            description=f"`{self.command}`: nothing to read after {at} (the server's position when it looked); "
                        "no binlog run was launched",
            metadata={"batch_id": "", "start_offset": at, "end_offset": at, "events": 0,
                      "events_per_table": MetadataValue.json({}), "transactions": 0, "batches": 0,
                      "run_ended": "nothing to read", "binlog_run": "not launched: nothing to read"}))
        self.binlog_run_skipped = True

    def _report_no_pending(self) -> None:
        """binlog_stream's no_pending_transactions evaluation, as the binlog run's blocking check would
        have recorded it, after ``_no_pending_left`` found nothing prepared."""
        from dagster import AssetCheckEvaluation
        from dagster._core.definitions.asset_checks.asset_check_evaluation import (
            AssetCheckEvaluationTargetMaterializationData,
        )

        key = self.handle.check_key(self.handle.binlog_key, "no_pending_transactions")
        latest = self.instance.fetch_materializations(self.handle.binlog_key, limit=1).records
        target = (AssetCheckEvaluationTargetMaterializationData(
            storage_id=latest[0].storage_id, run_id=latest[0].run_id, timestamp=latest[0].timestamp)
            if latest else None)
        self.instance.report_runless_asset_event(AssetCheckEvaluation(
            asset_key=key.asset_key, check_name=key.name, passed=True, metadata={"pending": 0},
            description=f"no Doris transaction left prepared after `{self.command}`",
            target_materialization_data=target))

    def _binlog(self, target: BinlogOffset | None) -> None:
        started = time.monotonic()
        self._resume_paused()
        handed: BinlogOffset | None = None  # the last DDL handed to the schema_change job without a binlog run
        with self.console.status("") as status:
            for attempt in range(MAX_BATCHES):
                lag = self.service.binlog_lag()
                committed = _offset(lag.committed_offset)
                self.summary.final_offset = str(committed) if committed else "-"
                caught_up = committed is not None and target is not None and committed >= target
                if caught_up and attempt:
                    break
                if not attempt and self._nothing_to_read(lag, committed):
                    self._report_caught_up(committed)  # type: ignore[arg-type]
                    break
                # A schema change's resume batch (or an earlier run's last batch) stopped before the next
                # DDL: the binlog run would be an empty batch stopping there again (issue 30: ~half of the
                # corpus's binlog phase in mt_alter_table). The same DDL twice means the schema change did
                # not carry it over: then the binlog run, as before, says what is wrong.
                ddl = self._stream_at_ddl(committed)
                if ddl is not None and ddl != handed:
                    handed = ddl
                    self.console.log(f"binlog: the stream stands before the DDL at {ddl}")
                    self._schema_change(ddl)
                    continue
                # caught up with the target, but the server has moved past it since the command started
                # (or is another server: a failover to follow): one batch all the same
                status.update(f"[bold]{self.handle.slug}[/] binlog: committed {committed or '-'}, target {target}, "
                              f"server {lag.server_offset.get('file')}:{lag.server_offset.get('position')}"
                              + (f", {lag.bytes_behind:,} bytes behind" if lag.bytes_behind is not None else ""))
                # one batch per run: each run's batch reads up to the server's position at its start,
                # and the loop stops at the target seen when the command started
                result = self._execute(self.handle.binlog_job_name,
                                       tags={**self.handle.run_tags(stream=True), BINLOG_RUN_SECONDS_TAG: "0"})
                md = result.asset_materializations_for_node(f"{self.handle.slug}__binlog_stream")[0].metadata
                self.summary.events += int(md["events"].value)
                lag_s = md.get("lag_s")
                if not md["batch_id"].value:
                    self.console.log(f"binlog: nothing new since {md['start_offset'].value}")
                    break
                self.summary.batches += 1
                self.console.log(f"batch {md['batch_id'].value}: {md['start_offset'].value} → {md['end_offset'].value}, "
                                 f"{md['events'].value} events" + (f", lag {lag_s.value:.1f} s" if lag_s else ""))
                if "stopped_at_ddl" in md:
                    ddl = md["stopped_at_ddl"].value
                    self._schema_change(_offset(ddl.get("offset")))
                    continue
                if caught_up:
                    break
                after = _offset(self.service.binlog_lag().committed_offset)
                if committed is not None and after is not None and after <= committed:
                    raise RunOnceError(f"binlog batch {md['batch_id'].value} did not move the committed offset "
                                       f"past {committed}; see the run's log in the Dagster UI")
        self.summary.binlog_s = time.monotonic() - started

    def _schema_change(self, offset: BinlogOffset | None) -> None:
        """The binlog stopped before a DDL: the schema_change job carries it over (same ops as the
        ddl_sensor's runs), then the stream goes on."""
        job = self.defs.resolve_job_def(schema_change_job_name(self.handle))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = job.execute_in_process(instance=self.instance, raise_on_error=False,
                                            tags=self.handle.run_tags(stream=True),
                                            run_config={**QUIET_LOGS, **run_config_for(offset)})
        if not result.success:
            raise RunOnceError(f"the binlog of '{self.handle.slug}' is paused by a schema change at "
                               f"{offset or 'the pending DDL'} that failed: {_first_error(result)} (the stream stays "
                               "paused before it; fix the cause and run again)", code=3)
        self.summary.schema_changes += 1
        self.console.log(f"schema change at {offset or 'the pending DDL'} carried over to Doris")


def snapshot_line(summary: Summary) -> str:
    """The summary's snapshot row: what this run loaded, or that an earlier run did it all."""
    if summary.snapshot_done_before:
        if not summary.chunks_total:
            return "none needed (the startup mode starts the stream without a snapshot)"
        return f"done before this run ({summary.chunks_total} chunk(s) committed); nothing to load"
    return (f"{summary.chunks_loaded} of {summary.chunks_total} chunks loaded, {summary.rows:,} rows"
            + (f" in {summary.snapshot_s:.1f} s ({summary.rows / summary.snapshot_s:,.0f} rows/s)"
               if summary.snapshot_s else ""))


def summary_table(handle: PipelineHandle, summary: Summary, once: bool = True) -> Table:
    table = Table(title=f"tidemark run {handle.slug}" + (" --once" if once else ""), show_header=False)
    table.add_row("snapshot", snapshot_line(summary))
    table.add_row("binlog", f"{summary.batches} batch(es), {summary.events:,} events, up to {summary.final_offset}"
                  + (f" (target {summary.start_offset})" if once else "")
                  + (f", {summary.schema_changes} schema change(s)" if summary.schema_changes else ""))
    if summary.table_parity == "implied":
        table.add_row("parity", f"every chunk's check passed and nothing changed since: the {summary.chunks_total} "
                      "chunk(s) cover every table, which is not compared a second time")
    for note in summary.notes:
        table.add_row("note", note)
    return table
