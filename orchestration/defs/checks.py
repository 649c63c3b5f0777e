"""Asset checks: parity between MySQL and Doris, and no transaction left prepared.

Parity is only *authoritative* when MySQL did not move while we compared and Doris had caught
up with it (the committed binlog offset equals the server's position, or for a chunk, nothing
was written since its high watermark). Otherwise a difference may just be changes the binlog
has not applied yet, and the check reports it as a warning that says so instead of an error.
"""


import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    asset_check,
)

from cdc_core.pipeline.results import ParityResult
from cdc_core.pipeline.service import PipelineService
from orchestration.defs.failures import OneLineFailure, line_metadata, one_line_failures
from orchestration.defs.heal_jobs import repair_job_name
from orchestration.defs.hooks import COMMIT_ERROR
from orchestration.defs.pipelines import PipelineHandle

# A chunk_parity check run on its own (not after a materialization) looks at this many chunks.
MAX_CHUNKS_PER_CHECK = 1000


@dataclass(frozen=True)
class PipelineChecks:
    chunk_parity: AssetChecksDefinition
    table_parity: AssetChecksDefinition
    chunks_no_pending: AssetChecksDefinition
    binlog_no_pending: AssetChecksDefinition

    @property
    def all(self) -> list[AssetChecksDefinition]:
        return [self.chunk_parity, self.table_parity, self.chunks_no_pending, self.binlog_no_pending]


def quiet_between(service: PipelineService, compare: Any) -> tuple[Any, bool]:
    """Run ``compare`` and tell whether the result is authoritative: the server's binlog did not
    move meanwhile and Doris had applied everything up to it."""
    before = service.binlog_lag()
    result = compare()
    after = service.binlog_lag()
    quiet = before.server_offset == after.server_offset and not before.behind and not after.behind
    return result, quiet


def parity_result(results: list[ParityResult], authoritative: bool, what: str,
                  extra: dict[str, Any] | None = None, remedy: str = "") -> AssetCheckResult:
    bad = [r for r in results if not r.ok]
    metadata: dict[str, Any] = {
        **(extra or {}),
        "checked": len(results),
        "mismatched": len(bad),
        "mysql_rows": sum(r.mysql_rows for r in results),
        "doris_rows": sum(r.doris_rows for r in results),
        "authoritative": authoritative,
    }
    if bad:
        metadata["mismatches"] = MetadataValue.json([
            {
                "table": r.table_id,
                "key_range": [str(v) for v in r.key_range] if r.key_range else None,
                "mysql_rows": r.mysql_rows,
                "doris_rows": r.doris_rows,
                "mysql_checksum": r.mysql_checksum,
                "doris_checksum": r.doris_checksum,
            }
            for r in bad[:50]
        ])
    if not bad:
        return AssetCheckResult(passed=True, metadata=metadata, description=f"{what}: MySQL and Doris agree")
    if authoritative:
        return AssetCheckResult(
            passed=False, severity=AssetCheckSeverity.ERROR, metadata=metadata,
            description=f"{what}: {len(bad)} of {len(results)} differ while MySQL was quiet and Doris caught up"
                        + remedy,
        )
    return AssetCheckResult(
        passed=False, severity=AssetCheckSeverity.WARN, metadata=metadata,
        description=(f"{what}: {len(bad)} of {len(results)} differ, but MySQL was written meanwhile or the binlog "
                     "is not applied yet; re-run this check when the stream has caught up" + remedy),
    )


def build_checks(handle: PipelineHandle) -> PipelineChecks:
    resource_key = handle.resource_key

    def service_of(context: AssetCheckExecutionContext) -> PipelineService:
        return getattr(context.resources, resource_key).service()

    @asset_check(
        asset=handle.chunks_key, name="chunk_parity", required_resource_keys={resource_key}, blocking=False,
        description="Row count and checksum of each chunk's key range, MySQL against Doris (after the commit hook).",
    )
    @one_line_failures
    def chunk_parity(context: AssetCheckExecutionContext) -> AssetCheckResult:
        service = service_of(context)
        op_context = context.op_execution_context
        if op_context.has_partition_key or op_context.has_partition_key_range:
            keys = list(op_context.partition_keys)
        else:
            keys = service.committed_chunk_keys()[:MAX_CHUNKS_PER_CHECK]
        with service.session():
            results, quiet = quiet_between(service, lambda: service.chunks_parity(keys, op_context.run_id))
        early = sum(1 for r in results if r.detail.get("mysql_side_during_commit"))
        return parity_result(results, quiet, f"{len(keys)} chunk(s)", {"mysql_side_during_commit": early})

    @asset_check(
        asset=handle.binlog_key, name="table_parity", required_resource_keys={resource_key}, blocking=False,
        description="`tidemark verify` as a check: every captured table, MySQL against Doris by checksums "
        "computed in both databases; the keys that differ in the metadata.",
    )
    @one_line_failures
    def table_parity(context: AssetCheckExecutionContext) -> AssetCheckResult:
        service = service_of(context)
        verdicts, quiet = quiet_between(service, service.verify)
        results = [ParityResult(v.table_id, None, v.mysql_rows, v.doris_rows, "", "" if v.equal else "differs",
                                {"skipped": v.skipped} if v.skipped else {}) for v in verdicts]
        keys = {v.table_id: [list(k) for k in v.differing_keys[:20]] for v in verdicts if v.differing_keys}
        extra = {"differing_keys": MetadataValue.json(keys)} if keys else {}
        remedy = (f". To mend the rows that differ (safe while the stream runs), launch the {repair_job_name(handle)} "
                  "job (config ops.repair.config.tables: the tables, empty = all) or run `tidemark verify "
                  "PIPELINE.yaml --repair`")
        return parity_result(results, quiet, f"{len(verdicts)} table(s)", extra, remedy)

    @one_line_failures
    def no_pending(context: AssetCheckExecutionContext) -> Iterator[AssetCheckResult]:
        service = service_of(context)
        pending = service.pending_transactions()
        if not pending:
            yield AssetCheckResult(passed=True, metadata={"pending": 0})
            return
        # this run's commit hook says why, when it failed for an expected reason (orchestration/defs/hooks.py)
        run_id = context.op_execution_context.run_id
        asset_key = context.check_specs[0].asset_key if context.check_specs else None
        entry = service.step_ledger().read(run_id, asset_key.to_python_identifier()) if asset_key else {}
        why = entry.get(COMMIT_ERROR)
        description = (f"{len(pending)} Doris transaction(s) prepared but not committed, as the commit failed: {why}; "
                       "the next run or sensor tick commits them first (resolve_pending)" if why else
                       f"{len(pending)} Doris transaction(s) prepared but not committed (a commit hook failed?): "
                       "run the job again, or wait for the next sensor tick: it commits them first (resolve_pending)")
        yield AssetCheckResult(
            passed=False,
            severity=AssetCheckSeverity.ERROR,
            metadata={"pending": len(pending),
                      "transactions": MetadataValue.json(_json_safe(pending[:50]))},
            description=description,
        )
        # the run fails on this line (Dagster's own failure of a blocking check is a stack trace on the run page)
        raise OneLineFailure(description, line_metadata(description, "PendingTransactions"))

    checks = {}
    for asset_key, fn_name in ((handle.chunks_key, "chunks"), (handle.binlog_key, "binlog")):
        checks[fn_name] = asset_check(
            asset=asset_key, name="no_pending_transactions", required_resource_keys={resource_key},
            # Blocking: Dagster records a materialization before its commit hook runs and keeps the run
            # green when the hook raises; this check fails the run instead, so a commit that did not
            # happen is red in the UI (and stops downstream assets) until the next run finishes it.
            blocking=True, description="No Doris transaction of this pipeline is left prepared but uncommitted.",
        )(no_pending)
    return PipelineChecks(chunk_parity, table_parity, checks["chunks"], checks["binlog"])


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
