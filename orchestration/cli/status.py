"""``tidemark status PIPELINE.yaml``: the pipeline service's status plus what Dagster knows, formatted.

The pipeline's own state comes from ``PipelineService.status`` (``cdc_core/pipeline/status.py``);
this module adds the last failed Dagster run of the pipeline, from its instance
(``orchestration/cli/instance.py``: the same home ``tidemark dev`` and ``tidemark run`` use) when
that instance exists — a status check never creates one — and turns both into a rich table or
one JSON object. The JSON's field names are stable (docs/operations.md, "tidemark status").
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from cdc_core.pipeline.status import PipelineStatus, TableProgress
from orchestration.cli.instance import has_external_storage
from orchestration.defs.pipelines import PipelineHandle

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class FailedRun:
    """The most recent failed Dagster run of the pipeline and why it failed."""

    run_id: str
    job: str
    ended_at: str | None  # ISO 8601, UTC
    message: str


@dataclass(frozen=True)
class StatusReport:
    """What ``tidemark status`` prints: the pipeline's status, its file and Dagster's last failure."""

    file: str
    status: PipelineStatus
    dagster_home: str
    dagster_instance: bool  # the instance exists (else no run of this pipeline was ever launched there)
    last_failed_run: FailedRun | None
    dagster_instance_used: str = ""  # DagsterHome.describe(): which instance, whose dagster.yaml

    def to_dict(self) -> dict[str, Any]:
        out = {"file": self.file, **self.status.to_dict()}
        out["last_error"] = {
            "dagster_home": self.dagster_home, "dagster_instance": self.dagster_instance,
            "dagster_instance_used": self.dagster_instance_used,
            "dagster_run": None if self.last_failed_run is None else asdict(self.last_failed_run),
            "schema_change": self.status.schema_change_error,
        }
        return out


def instance_exists(home: Path) -> bool:
    """The instance has run storage: the SQLite default's file (something ran there), or storage
    its ``dagster.yaml`` names (PostgreSQL: nothing local to look at)."""
    return (home / "history" / "runs.db").is_file() or has_external_storage(home)


def last_failed_run(handle: PipelineHandle, home: Path) -> FailedRun | None:
    """The pipeline's most recent failed run in the instance at ``home`` (None when there is none,
    or no instance: looking must not create one)."""
    if not instance_exists(home):
        return None
    from dagster import DagsterInstance  # deferred: seconds to import, only when an instance exists

    from orchestration.defs.runs import failure_message, latest_failed_run
    from orchestration.defs.schema_change_job import schema_change_job_name

    jobs = {handle.splits_job_name, handle.snapshot_job_name, handle.binlog_job_name, schema_change_job_name(handle)}
    with DagsterInstance.from_config(str(home)) as instance:
        run = latest_failed_run(instance, handle.owns_asset_prefix, jobs)
        if run is None:
            return None
        record = instance.get_run_record_by_id(run.run_id)
        ended = record.end_time if record is not None else None
        return FailedRun(run.run_id, run.job_name,
                         None if ended is None else dt.datetime.fromtimestamp(ended, dt.UTC).isoformat(),
                         failure_message(instance, run))


def _offset(offset: dict[str, Any] | None) -> str:
    """``file:position``, and the GTID position and server when the offset carries them (a failover
    resumes from the GTID position, on another server)."""
    if not offset:
        return "—"
    extra = [f"GTID {offset['gtid_set']}"] if offset.get("gtid_set") else []
    extra += [offset["server"]] if offset.get("server") else []
    extra += [f"epoch {offset['epoch']}"] if offset.get("epoch") else []
    return f"{offset['file']}:{offset['position']}" + (f" ({', '.join(extra)})" if extra else "")


def _chunks(progress: TableProgress) -> str:
    text = f"{progress.committed}/{progress.chunks} committed"
    others = [(progress.prepared, "prepared"), (progress.running, "running"), (progress.pending, "pending")]
    extra = ", ".join(f"{n} {what}" for n, what in others if n)
    return text + (f" ({extra})" if extra else "")


def status_table(report: StatusReport) -> Table:
    """The human form: one row per fact, one per captured table."""
    status, stream = report.status, report.status.stream
    table = Table(title=f"tidemark status {status.pipeline}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(overflow="fold")

    def row(name: str, value: str, style: str = "") -> None:
        table.add_row(name, Text(value, style=style))  # Text: brackets in a message are not markup

    row("file", report.file)
    if report.dagster_instance_used:
        row("Dagster", report.dagster_instance_used)
    for system, why in status.unreachable.items():  # first: the rest of the table is read in its light
        row({"mysql": "MySQL", "doris": "Doris"}.get(system, system), why, "red")
    row("phase", status.phase.value + ("" if status.plan_complete or not status.tables
                                                  else " (the split plan is not complete)"))
    row("running", "nothing" if not status.running else
        "; ".join(f"{scope}: {who}" for scope, who in sorted(status.running.items())))
    row("snapshot", _chunks(status.chunk_totals()) if status.tables else "no chunks planned")
    for progress in status.tables:
        row(f"  {progress.table}", _chunks(progress))
    row("startup mode", stream.startup_mode)
    row("committed offset", _offset(stream.committed_offset))
    row("server offset", _offset(stream.server_offset))
    if stream.committed_offset is None:
        lag = "—"
    else:
        size = "?" if stream.bytes_behind is None else f"{stream.bytes_behind:,} bytes"
        age = f"{stream.seconds_behind:,.1f} s" if stream.seconds_behind is not None else "? s"
        lag = f"{size}, {age}"
    if stream.seconds_behind_unknown:
        lag += f" ({stream.seconds_behind_unknown})"
    row("behind", lag)
    if stream.last_batch:
        last = stream.last_batch
        row("last batch", f"{last['batch_id']} {last['status']} → {_offset(last['end_offset'])}")
    pending = status.pending_transactions
    row("prepared transactions", "none" if not pending else
                  f"{len(pending)}: " + ", ".join(f"{t.label} ({t.owner})" for t in pending[:5])
                  + (" …" if len(pending) > 5 else ""))
    paused = status.binlog_paused
    row("binlog paused", "no" if not paused else
                  f"yes: {paused.get('reason', 'by hand')} ({paused.get('status', '?')})")
    if status.pending_ddl:
        ddl = status.pending_ddl
        row("pending DDL", f"{ddl.get('type')} on {ddl.get('table_id')} at {_offset(ddl.get('offset'))}")
    row("schema registry", status.schema_registry)
    if status.schema_change_error:
        row("schema change error", status.schema_change_error, "red")
    failed = report.last_failed_run
    if not report.dagster_instance:
        row("last failed run", f"— (no Dagster instance at {report.dagster_home})")
    elif failed is None:
        row("last failed run", "none (or a later run of the same job succeeded)")
    else:
        row("last failed run", f"{failed.job} {failed.run_id[:8]} at {failed.ended_at or '?'}")
        row("  error", failed.message, "red")
    return table


__all__ = ["FailedRun", "StatusReport", "instance_exists", "last_failed_run", "status_table"]
