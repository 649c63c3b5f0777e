"""Where one pipeline stands, read without moving it: what ``tidemark status`` shows.

Everything comes from the state store, one MySQL connection (the server's position, the binlog
files' sizes and clock, and a short binlog read for the age of the oldest change not applied) and
one Doris request (is the FE there); no Spark, no Dagster run, and no state written: unlike the
stream's own steps, this never fixes the startup mode or draws a label epoch, so asking for the
status of a pipeline that never ran leaves it as it was (with an empty state store). A server that
does not answer does not stop it: what the state store knows is shown, the fields only that server
could give are None, and ``unreachable`` says which server did not answer and why (a status is
wanted most while something is down). The orchestration only
formats the frozen :class:`PipelineStatus` (``orchestration/cli/status.py``) and adds what Dagster
knows (the last failed run).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cdc_core.doris.catalog import DorisCatalog
from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.errors import DorisAuthError, DorisConnectionError, DorisError
from cdc_core.model.offsets import BinlogOffset
from cdc_core.mysql.binlog_distance import EventTimeUnavailable, bytes_between, first_event_time, server_time
from cdc_core.mysql.connection import NOTHING_ANSWERED
from cdc_core.mysql.failover import align, behind_by_gtid, failed_over
from cdc_core.mysql.finished_chunk import FinishedChunk
from cdc_core.mysql.hybrid_assigner import HybridSplitAssigner
from cdc_core.mysql.purge import binary_logs
from cdc_core.mysql.snapshot_assigner import AssignerState
from cdc_core.mysql.startup import StartupPlan, resolve_startup
from cdc_core.pipeline.context import PipelineContext
from cdc_core.pipeline.keys import chunk_key
from cdc_core.pipeline.preflight import connection_gist
from cdc_core.pipeline.snapshot_estimate import SNAPSHOT_MODES
from cdc_core.schema_evolution.registry import SchemaRegistry
from cdc_core.state import BatchStatus, ChunkRecord, ChunkStatus
from cdc_core.state.keys import (
    ASSIGNER_STATE,
    BINLOG_PAUSED,
    COMMITTED_OFFSET,
    PENDING_DDL,
    PLAN_OFFSET,
    PLANNED_TABLES,
    STARTUP,
)
from cdc_core.state.leases import db_now, holders

logger = logging.getLogger(__name__)


class Unreachable(ConnectionError):
    """MySQL or Doris did not answer; ``system`` says which (``mysql`` or ``doris``)."""

    def __init__(self, system: str, message: str):
        super().__init__(message)
        self.system = system


class Phase(StrEnum):
    """Where the pipeline is in its life."""

    NOT_STARTED = "not_started"  # nothing planned, no stream start fixed
    PLANNING = "planning"  # the split plan is being made (a huge table, several rounds)
    SNAPSHOT = "snapshot"  # planned; not every chunk is committed yet
    STREAMING = "streaming"  # the binlog stream may run (snapshot committed, or none needed)


@dataclass(frozen=True)
class TableProgress:
    """One captured table's snapshot chunks by status."""

    table: str
    chunks: int
    committed: int
    prepared: int
    running: int
    pending: int


@dataclass(frozen=True)
class StreamPosition:
    """The committed offset against the server's position now.

    ``committed_offset`` is where the stream goes on from: the committed offset, or before the
    first batch the start the snapshot fixed (the minimum high watermark); None while the stream
    cannot start yet. ``seconds_behind`` is the age of the oldest change not applied (0 when not
    behind); None with ``seconds_behind_unknown`` saying why when it cannot be read.
    """

    startup_mode: str
    committed_offset: dict[str, Any] | None
    server_offset: dict[str, Any] | None  # None: MySQL does not answer
    behind: bool | None  # None: unknown (MySQL does not answer)
    bytes_behind: int | None
    seconds_behind: float | None
    seconds_behind_unknown: str | None = None
    last_batch: dict[str, Any] | None = None  # the latest binlog batch: id, status, end offset


@dataclass(frozen=True)
class PendingTransaction:
    """A Doris transaction the state store holds PREPARED (precommitted, not yet committed)."""

    owner: str  # the chunk key or the binlog batch id
    label: str
    txn_id: Any
    database: str | None
    table: str | None


@dataclass(frozen=True)
class PipelineStatus:
    """One pipeline's state, as ``tidemark status`` shows it (``to_dict`` is its ``--json``)."""

    pipeline: str
    phase: Phase
    plan_complete: bool
    snapshot_done: bool
    tables: tuple[TableProgress, ...]
    stream: StreamPosition
    pending_transactions: tuple[PendingTransaction, ...]
    binlog_paused: dict[str, Any] | None  # the pause flag a schema change (or a person) set
    pending_ddl: dict[str, Any] | None  # the DDL the stream stopped before, waiting for its schema change
    schema_registry: str  # the schema-change coordinator's state (IDLE when no change is under way)
    schema_change_error: str | None  # the error the schema change under way recorded, if any
    doris_fe: str | None  # the FE that answered (None: none did)
    unreachable: dict[str, str] = dataclasses.field(default_factory=dict)  # "mysql"/"doris": why it did not answer
    # the runs holding the pipeline's leases now (cdc_core/state/leases.py): scope -> who, since when, heartbeat
    running: dict[str, str] = dataclasses.field(default_factory=dict)

    def chunk_totals(self) -> TableProgress:
        """Every table's chunks added up (``table`` is ``*``)."""
        fields = ("chunks", "committed", "prepared", "running", "pending")
        return TableProgress("*", *(sum(getattr(t, f) for t in self.tables) for f in fields))

    def to_dict(self) -> dict[str, Any]:
        totals = dataclasses.asdict(self.chunk_totals())
        del totals["table"]
        return {
            "pipeline": self.pipeline,
            "phase": self.phase.value,
            "snapshot": {"plan_complete": self.plan_complete, "done": self.snapshot_done, "chunks": totals,
                         "tables": [dataclasses.asdict(t) for t in self.tables]},
            "binlog": dataclasses.asdict(self.stream),
            "pending_transactions": [dataclasses.asdict(t) for t in self.pending_transactions],
            "paused": {"binlog": self.binlog_paused, "pending_ddl": self.pending_ddl,
                       "schema_registry": self.schema_registry, "schema_change_error": self.schema_change_error},
            "doris_fe": self.doris_fe,
            "unreachable": dict(self.unreachable),
            "running": dict(self.running),
        }


def pipeline_status(ctx: PipelineContext) -> PipelineStatus:
    """Gather the status; a server that does not answer leaves its fields None and is named in
    ``unreachable`` (the state store's part is complete either way)."""
    store = ctx.store
    with store.transaction(readonly=True) as tx:
        chunks = tx.chunks()
        assigner = ASSIGNER_STATE.get(tx)
        planned_tables = PLANNED_TABLES.get_or(tx, [])
        saved_startup = STARTUP.get(tx)
        committed = COMMITTED_OFFSET.get(tx)
        plan_offset = PLAN_OFFSET.get(tx)
        pending_ddl = PENDING_DDL.get(tx)
        paused = BINLOG_PAUSED.get(tx)
        batches = tx.batches()
    registry = SchemaRegistry(store)
    current = registry.current() or {}
    plan_complete = assigner is not None and AssignerState.from_dict(assigner).finished
    snapshot_done = plan_complete and all(c.status is ChunkStatus.COMMITTED for c in chunks)
    startup = _startup(ctx, saved_startup)
    needs_snapshot = startup.snapshot if startup is not None else ctx.definition.source.startup_mode in SNAPSHOT_MODES
    if startup is None and not needs_snapshot:
        phase = Phase.NOT_STARTED
    elif not needs_snapshot or snapshot_done:
        phase = Phase.STREAMING
    elif assigner is None:
        phase = Phase.NOT_STARTED
    else:
        phase = Phase.PLANNING if not plan_complete else Phase.SNAPSHOT
    start = None
    if phase is Phase.STREAMING and startup is not None:
        finished = [FinishedChunk.from_state(c) for c in chunks if c.status is ChunkStatus.COMMITTED]
        start = HybridSplitAssigner.resume_offset(
            startup, finished, committed=committed, plan_offset=plan_offset)
    unreachable: dict[str, str] = {}
    try:
        stream = _stream_position(ctx, startup, start, batches)
    except Unreachable as exc:
        logger.debug("status of %s: MySQL does not answer", ctx.definition.name, exc_info=True)
        unreachable[exc.system] = str(exc)
        stream = _stored_position(ctx, startup, start, batches)
    try:
        doris_fe: str | None = _probe_doris(ctx)
    except Unreachable as exc:
        logger.debug("status of %s: Doris does not answer", ctx.definition.name, exc_info=True)
        unreachable[exc.system] = str(exc)
        doris_fe = None
    return PipelineStatus(
        pipeline=ctx.definition.name, phase=phase, plan_complete=plan_complete, snapshot_done=snapshot_done,
        tables=_progress(chunks, planned_tables), stream=stream,
        pending_transactions=_pending(chunks, batches), binlog_paused=paused or None, pending_ddl=pending_ddl,
        schema_registry=current.get("status", "IDLE"), schema_change_error=current.get("error"), doris_fe=doris_fe,
        unreachable=unreachable, running=_running(ctx),
    )


def _running(ctx: PipelineContext) -> dict[str, str]:
    """Who holds which of the pipeline's leases now (a dead holder's expired lease is not shown)."""
    with ctx.store.transaction(readonly=True) as tx:
        now = db_now(tx.conn)
        return {r.scope: r.describe(now) for r in holders(tx) if not r.expired(now) and not r.gone_here()}


def _startup(ctx: PipelineContext, saved: dict[str, Any] | None) -> StartupPlan | None:
    """The fixed startup plan; for a snapshot mode not fixed yet, the plan it will be (it needs no
    server); None for a binlog-only mode whose start is not fixed yet (fixing it is the stream's)."""
    if saved is not None:
        return StartupPlan.from_dict(saved)
    if ctx.definition.source.startup_mode in SNAPSHOT_MODES:
        return resolve_startup(ctx.definition.source, ctx.settings)
    return None


def _progress(chunks: list[ChunkRecord], planned: list[str]) -> tuple[TableProgress, ...]:
    by_table: dict[str, list[ChunkRecord]] = {t: [] for t in planned}
    for chunk in chunks:
        by_table.setdefault(chunk.table_id, []).append(chunk)

    def count(records: list[ChunkRecord], status: ChunkStatus) -> int:
        return sum(1 for r in records if r.status is status)

    return tuple(TableProgress(table, len(records), count(records, ChunkStatus.COMMITTED),
                               count(records, ChunkStatus.PREPARED), count(records, ChunkStatus.RUNNING),
                               count(records, ChunkStatus.PENDING))
                 for table, records in by_table.items())


def _pending(chunks: list[ChunkRecord], batches: list[Any]) -> tuple[PendingTransaction, ...]:
    owners = [(chunk_key(*c.key), c.transactions) for c in chunks if c.status is ChunkStatus.PREPARED]
    owners += [(b.batch_id, b.transactions) for b in batches if b.status is BatchStatus.PREPARED]
    return tuple(PendingTransaction(owner, str(t.get("label", "")), t.get("txn_id"), t.get("db"), t.get("table"))
                 for owner, transactions in owners for t in transactions or [])


def _stream_position(ctx: PipelineContext, startup: StartupPlan | None, start: BinlogOffset | None,
                     batches: list[Any]) -> StreamPosition:
    where = f"the MySQL source {ctx.settings.host}:{ctx.settings.port}"
    try:
        with ctx.connection() as conn, conn.cursor() as cur:
            server = ctx.server_offset()
            moved = start is not None and failed_over(start, server)
            logs = binary_logs(cur) if start is not None and start.file != server.file and not moved else []
            now = server_time(cur)
    except ConnectionError as exc:
        cause = getattr(exc.__cause__, "args", None) or (None,)
        what = "does not answer" if cause[0] in NOTHING_ANSWERED else "refused the connection"
        raise Unreachable("mysql", f"{where} {what} ({connection_gist(str(exc))}): check hostname, port, "
                                   "username and password in the pipeline's source block, and that the server "
                                   "is up") from exc
    server = align(server, start)
    seconds: float | None = None
    unknown: str | None = None
    if start is not None and moved:
        # Another server than the committed offset's: its file positions say nothing about this
        # pipeline's; the next batch resumes by GTID (cdc_core/mysql/failover.py).
        behind = behind_by_gtid(start, server)
        bytes_behind = None
        unknown = (f"the source is now {server.server}, not {start.server} (a failover): the next batch resumes "
                   f"after GTID position {start.gtid_set}") if behind else None
        seconds = None if behind else 0.0
    else:
        behind = start is not None and server > start
        bytes_behind = None if start is None else bytes_between(logs, start, server)
    if moved:
        pass
    elif start is None:
        unknown = ("the snapshot is not finished" if startup is not None and startup.snapshot
                   else "the stream's start is not fixed yet (its first run fixes it)")
    elif not behind:
        seconds = 0.0
    else:
        try:
            written = first_event_time(ctx.settings, ctx.definition.source.server_id_range(), start)
        except EventTimeUnavailable as exc:
            unknown = str(exc)
        else:
            seconds = 0.0 if written is None else max(0.0, round(now - written, 3))
    return StreamPosition(
        startup_mode=startup.mode if startup is not None else ctx.definition.source.startup_mode,
        committed_offset=None if start is None else start.to_dict(), server_offset=server.to_dict(),
        behind=behind, bytes_behind=bytes_behind, seconds_behind=seconds, seconds_behind_unknown=unknown,
        last_batch=_last_batch(batches),
    )


def _last_batch(batches: list[Any]) -> dict[str, Any] | None:
    last = max(batches, key=lambda b: BinlogOffset.from_dict(b.end_offset), default=None)
    return None if last is None else {"batch_id": last.batch_id, "status": last.status.value,
                                      "end_offset": last.end_offset}


def _stored_position(ctx: PipelineContext, startup: StartupPlan | None, start: BinlogOffset | None,
                     batches: list[Any]) -> StreamPosition:
    """What the state store knows of the stream when MySQL does not answer: the committed offset and
    the last batch; the server's position, and so the lag, unknown."""
    return StreamPosition(
        startup_mode=startup.mode if startup is not None else ctx.definition.source.startup_mode,
        committed_offset=None if start is None else start.to_dict(), server_offset=None, behind=None,
        bytes_behind=None, seconds_behind=None, seconds_behind_unknown="the MySQL source does not answer",
        last_batch=_last_batch(batches),
    )


def _probe_doris(ctx: PipelineContext) -> str:
    """Ask the FE for its databases (one request, one retry); the FE that answered."""
    options = ctx.definition.sink
    client = DorisHttpClient.from_options(options, max_retries=1)
    started = time.monotonic()
    try:
        DorisCatalog(client).execute("information_schema", "SHOW DATABASES")
    except DorisError as exc:
        if isinstance(exc, DorisConnectionError):
            what = f"does not answer ({connection_gist(client.redact(str(exc)))})"
        elif isinstance(exc, DorisAuthError):
            what = f"refused user '{options.username}'"
        else:
            what = f"refused the status query ({connection_gist(client.redact(str(exc)))})"
        raise Unreachable("doris", f"the Doris sink (fenodes {options.fenodes}) {what}: check fenodes, username "
                                   "and password in the pipeline's sink block, and that the FE is up") from exc
    finally:
        client.close()
    logger.debug("Doris FE answered in %.2f s", time.monotonic() - started)
    return options.fenodes


__all__ = ["Phase", "PendingTransaction", "PipelineStatus", "StreamPosition", "TableProgress", "Unreachable",
           "pipeline_status"]
