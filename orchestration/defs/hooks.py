"""The commit hooks: a materialization's Doris transactions become visible only after it succeeded.

The assets prepare (two-phase commit, nothing visible) and write down in the ``StepLedger`` what
they prepared; the success hook commits exactly that and the failure hook aborts it. The hooks
sit on the assets themselves (``@asset(hooks=...)``), so they run for every launch path: the UI's
Materialize button (the implicit asset job), backfills, sensors, schedules and ``tidemark run``.

Dagster reports a run as successful even when a hook raises (it logs HOOK_ERRORED). So a failed
commit is never the end of the story: the PREPARED record stays in the state store, the
``no_pending_transactions`` check shows it, and the next run or sensor tick calls
``resolve_pending`` before doing anything else.

A commit or abort that fails for an expected reason (the Doris FE down, a refused login) does not
raise: a hook that raises is a HOOK_ERRORED event with its stack trace on the run page. The hook
logs the one line at ERROR (the stack trace at DEBUG) and writes it into the step's ledger entry,
where the ``no_pending_transactions`` check finds it and fails the run with it
(``orchestration/defs/checks.py``). Any other exception raises as before.

After a commit, the hooks report a materialization of each Doris table asset the chunks or the
batch loaded (``orchestration/defs/doris_tables.py``): the table's rows are visible from then on.
"""


from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dagster import HookContext, HookDefinition, failure_hook, success_hook
from dagster._core.errors import DagsterInvalidPropertyError, DagsterInvariantViolationError

from cdc_core.instrumentation.phases import span
from cdc_core.pipeline.targets import TargetUpdate
from orchestration.defs.console_logger import FAILURE_EXTRA
from orchestration.defs.doris_tables import report_written
from orchestration.defs.failures import expected_line
from orchestration.defs.pipelines import PipelineHandle


def run_checks_parity(instance: Any, run_id: str, handle: PipelineHandle) -> bool:
    """Whether run ``run_id`` executes ``handle``'s ``chunk_parity`` check (its plan has the check's
    step): the snapshot step computes MySQL's side of it while it reads, and the commit hook the rest
    (``cdc_core/pipeline/parity/overlap.py``)."""
    parity_step = f"{handle.chunks_key.to_python_identifier()}_chunk_parity"  # the check's op
    run = instance.get_run_by_id(run_id)
    if run is None or run.execution_plan_snapshot_id is None:
        return False
    plan = instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
    return parity_step in (plan.step_keys_to_execute or [step.key for step in plan.steps])


@dataclass(frozen=True)
class PipelineHooks:
    commit_chunks: HookDefinition
    abort_chunks: HookDefinition
    commit_batch: HookDefinition
    abort_batch: HookDefinition


def build_hooks(handle: PipelineHandle) -> PipelineHooks:
    resource_key = handle.resource_key

    def service_and_entry(context: HookContext):
        service = getattr(context.resources, resource_key).service()
        ledger = service.step_ledger()
        return service, ledger, ledger.read(context.run_id, step_key_of(context))

    @contextmanager
    def lease_given_back(service: Any, context: HookContext) -> Iterator[None]:
        """The run's lease (taken by the asset, ``orchestration/defs/assets.py:take_lease``) is
        given back once the hook is done, whatever it met."""
        try:
            yield
        finally:
            service.give_back_lease(run_id=context.run_id)

    def parity_follows(context: HookContext) -> bool:
        """This run executes the ``chunk_parity`` check after the commit (its plan has the check's
        step): MySQL's side of it is computed during the commit, on the core the commits leave idle."""
        try:
            instance = context.instance
        except DagsterInvariantViolationError:  # a hook context built without an instance: no run to look at
            return False
        return run_checks_parity(instance, context.run_id, handle)

    @success_hook(name=f"{handle.slug}_commit_chunks_hook", required_resource_keys={resource_key})
    def commit_chunks_hook(context: HookContext) -> None:
        service, ledger, entry = service_and_entry(context)
        with lease_given_back(service, context):
            keys = list(entry.get("prepared") or [])
            committed: list[str] = []
            if keys:
                try:
                    redo = service.commit_chunks(keys,
                                                 parity_run_id=context.run_id if parity_follows(context) else None)
                except Exception as exc:
                    if not _commit_failed(context, ledger, exc, f"the commit of {len(keys)} chunk load(s)"):
                        raise
                    return
                context.log.info(f"Committed the Doris loads of {len(keys) - len(redo)} chunk(s): {_preview(keys)}")
                committed = [k for k in keys if k not in set(redo)]
                if redo:
                    context.log.warning(f"Doris lost the loads of {len(redo)} chunk(s) before the commit (it aborted "
                                        f"them on its own): {_preview(redo)}. They are PENDING again; the next run or "
                                        "backfill of snapshot_chunks reads them again")
            ledger.forget(context.run_id, step_key_of(context))
            if committed:
                with span("written_targets"):
                    updates = service.written_targets(chunk_keys=committed, run_id=context.run_id)
                _report(context, updates, f"snapshot chunks ({len(committed)})")

    @failure_hook(name=f"{handle.slug}_abort_chunks_hook", required_resource_keys={resource_key})
    def abort_chunks_hook(context: HookContext) -> None:
        service, ledger, entry = service_and_entry(context)
        with lease_given_back(service, context):
            keys = list(entry.get("prepared") or entry.get("chunk_keys") or [])
            if keys:
                try:
                    service.abort_chunks(keys)
                except Exception as exc:
                    if not _abort_failed(context, exc, f"the abort of {len(keys)} chunk load(s)"):
                        raise
                    return
                # info: the step's failure is what the run reports; this is its consequence
                context.log.info(f"Aborted the Doris loads of {len(keys)} chunk(s) after the failure: {_preview(keys)}")
            ledger.forget(context.run_id, step_key_of(context))

    @success_hook(name=f"{handle.slug}_commit_batch_hook", required_resource_keys={resource_key})
    def commit_batch_hook(context: HookContext) -> None:
        service, ledger, entry = service_and_entry(context)
        with lease_given_back(service, context):
            batch_id = entry.get("batch_id")
            # a run that streamed several batches committed all but its last itself (orchestration/defs/assets.py)
            committed_batches = list(entry.get("committed_batch_ids") or [])
            try:
                committed = bool(batch_id) and service.commit_batch(batch_id)
            except Exception as exc:
                if not _commit_failed(context, ledger, exc, f"the commit of binlog batch {batch_id}"):
                    raise
                return
            if committed:
                context.log.info(f"Committed binlog batch {batch_id}; the committed offset moved to its end")
                committed_batches.append(batch_id)
            elif batch_id:
                context.log.warning(f"Doris lost a load of binlog batch {batch_id} before the commit (it aborted it on "
                                    "its own); the offset stays, and the next batch reads the same range again")
            ledger.forget(context.run_id, step_key_of(context))
            if committed_batches:
                label = committed_batches[0] if len(committed_batches) == 1 else \
                    f"{committed_batches[0]} … {committed_batches[-1]} ({len(committed_batches)} batches)"
                _report(context, service.written_targets(batch_ids=committed_batches), f"binlog batch {label}")

    @failure_hook(name=f"{handle.slug}_abort_batch_hook", required_resource_keys={resource_key})
    def abort_batch_hook(context: HookContext) -> None:
        service, ledger, entry = service_and_entry(context)
        with lease_given_back(service, context):
            batch_id = entry.get("batch_id")
            if batch_id:
                try:
                    service.abort_batch(batch_id)
                except Exception as exc:
                    if not _abort_failed(context, exc, f"the abort of binlog batch {batch_id}"):
                        raise
                    return
                context.log.info(f"Aborted binlog batch {batch_id} after the failure; the offset stays where it was")
            else:
                context.log.info(
                    "The binlog batch failed before it was recorded; whatever it prepared is aborted by the "
                    "next run's resolve_pending"
                )
            ledger.forget(context.run_id, step_key_of(context))

    return PipelineHooks(commit_chunks_hook, abort_chunks_hook, commit_batch_hook, abort_batch_hook)


# The key of a step's ledger entry under which a commit hook leaves why its commit failed.
COMMIT_ERROR = "commit_error"


def _commit_failed(context: HookContext, ledger: Any, exc: Exception, what: str) -> bool:
    """An expected failure of a commit: said on one line and left in the ledger for the
    ``no_pending_transactions`` check (the loads stay prepared, the ledger entry stays). False: a bug."""
    line = expected_line(context, exc)
    if line is None:
        return False
    context.log.error(f"{what} failed; its loads stay prepared and the next run commits them first: {line}",
                      extra=FAILURE_EXTRA)
    ledger.record(context.run_id, step_key_of(context), **{COMMIT_ERROR: line})
    return True


def _abort_failed(context: HookContext, exc: Exception, what: str) -> bool:
    """An expected failure of an abort: one line; the next run's ``resolve_pending`` aborts them."""
    line = expected_line(context, exc)
    if line is None:
        return False
    context.log.warning(f"{what} failed; the next run aborts its loads first: {line}", extra=FAILURE_EXTRA)
    return True


def step_key_of(context: HookContext) -> str:
    """The step's key; our assets are single ops, so it is the op's name (which is all a
    ``build_hook_context`` in a unit test knows)."""
    try:
        return context.step_key
    except DagsterInvalidPropertyError:
        return context.op.name


def _report(context: HookContext, updates: list[TargetUpdate], by: str) -> None:
    """The Doris table assets these committed loads wrote are materialized (after the ledger is
    forgotten: the commit is done whatever reporting it costs)."""
    if updates:
        with span("report_written"):
            report_written(context.instance, updates, run_id=context.run_id, by=by)


def _preview(keys: list[str], limit: int = 5) -> str:
    shown = ", ".join(keys[:limit])
    return shown + (f" and {len(keys) - limit} more" if len(keys) > limit else "")
