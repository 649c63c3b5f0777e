"""A recording double of ``PipelineService`` for testing the orchestration's own logic.

It keeps its chunk and batch records in a real ``StateStore`` (so the pause flag, the ledger
and the checks read real state) and records every facade call in order, so tests can assert
*when* the orchestration commits, aborts, resolves and checks. It moves no data: the
end-to-end tests (test_e2e_*.py) use the real service against MariaDB and the Doris stand-in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_core.config import PipelineDefinition, load_pipeline
from cdc_core.doris.errors import DorisConnectionError
from cdc_core.pipeline.keys import chunk_key, parse_chunk_key
from cdc_core.pipeline.parity.table_verify import TableVerdict
from cdc_core.pipeline.results import (
    BatchResult,
    BinlogLag,
    ChunkResult,
    ParityResult,
    PlanResult,
    ResolveReport,
)
from cdc_core.pipeline.service import PipelineService
from cdc_core.state import BatchRecord, BatchStatus, ChunkRecord, ChunkStatus, StateStore
from orchestration.defs.pipelines import PipelineHandle
from orchestration.defs.resources import TidemarkPipelineResource, pipeline_resource

PIPELINE_YAML = """
source:
  type: mysql
  hostname: 127.0.0.1
  port: 3306
  username: cdc
  password: not-a-real-password-s3cret
  tables: shop.\\.*
sink:
  type: doris
  fenodes: 127.0.0.1:8030
  username: root
  password: ""
pipeline:
  name: {name}
  tidemark.state.dir: {state_dir}
"""


def write_pipeline(tmp_path: Path, name: str = "shop") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(PIPELINE_YAML.format(name=name, state_dir=tmp_path / "state" / name))
    return path


@dataclass
class Script:
    """What the double answers; tests change it between calls."""

    tables: dict[str, int] = field(default_factory=lambda: {"shop.orders": 3, "shop.items": 2})
    plan_rounds: int = 1  # >1: plan_splits reports complete=False until called this often
    notes: tuple[str, ...] = ()
    committed_offset: dict | None = None
    server_offset: dict = field(default_factory=lambda: {"file": "binlog.000001", "position": 400})
    fail_run_chunks: bool = False
    fail_commit: bool = False
    # what a commit raises with the Doris FE down (cdc_core/doris/client.py words it so); None: no outage
    commit_outage: str | None = None
    fail_batch: bool = False
    parity_ok: bool = True


class RecordingRunner(PipelineService):
    def __init__(self, definition: PipelineDefinition, store: StateStore, script: Script | None = None):
        super().__init__(definition, store)
        self.script = script or Script()
        self.calls: list[tuple[str, Any]] = []
        self.parity_run_ids: list[tuple[str, str | None]] = []  # the run ids reads, commits and checks were given
        self._plan_calls = 0
        self._batches = itertools.count(1)

    def _log(self, name: str, arg: Any = None) -> None:
        self.calls.append((name, arg))

    def names(self) -> list[str]:
        return [c[0] for c in self.calls]

    # -- snapshot ---------------------------------------------------------------------------

    def plan_splits(self, max_steps: int | None = None) -> PlanResult:
        self._log("plan_splits", max_steps)
        self._plan_calls += 1
        complete = self._plan_calls >= self.script.plan_rounds
        keys = []
        with self.store.transaction() as tx:
            existing = {c.key for c in tx.chunks()}
            new = []
            for table, count in self.script.tables.items():
                # an incomplete plan has only the first chunk of each table so far
                upto = count if complete else 1
                for i in range(upto):
                    keys.append(chunk_key(table, i))
                    if (table, i) not in existing:
                        new.append(ChunkRecord.planned(table, i, [i * 10], [i * 10 + 10]))
            tx.add_chunks(new)
        return PlanResult(tuple(keys), tuple(self.script.tables), complete, self.script.notes)

    def chunk_keys(self) -> list[str]:
        with self.store.transaction(readonly=True) as tx:
            return [chunk_key(*c.key) for c in tx.chunks()]

    def run_chunks(self, keys: list[str], *, parity_run_id: str | None = None) -> list[ChunkResult]:
        self._log("run_chunks", list(keys))
        self.parity_run_ids.append(("run_chunks", parity_run_id))
        if self.script.fail_run_chunks:
            raise RuntimeError("boom: the chunk read failed")
        out = []
        with self.store.transaction() as tx:
            for key in keys:
                table, index = parse_chunk_key(key)
                hw = {"file": "binlog.000001", "position": 100 + index}
                tx.update_chunk(table, index, status=ChunkStatus.PREPARED, high_watermark=hw,
                                transactions=[{"label": f"l-{key}", "txn_id": index}], rows=10)
                out.append(ChunkResult(key, table, index, 10, {"file": "binlog.000001", "position": 90}, hw,
                                       ({"label": f"l-{key}", "txn_id": index},), 0.5))
        return out

    def commit_chunks(self, keys: list[str], *, parity_run_id: str | None = None) -> list[str]:
        self._log("commit_chunks", list(keys))
        self.parity_run_ids.append(("commit_chunks", parity_run_id))
        if self.script.commit_outage:
            raise DorisConnectionError(self.script.commit_outage)
        if self.script.fail_commit:
            raise RuntimeError("Doris FE unreachable during commit")
        with self.store.transaction() as tx:
            for key in keys:
                tx.update_chunk(*parse_chunk_key(key), status=ChunkStatus.COMMITTED)
        return []

    def abort_chunks(self, keys: list[str]) -> None:
        self._log("abort_chunks", list(keys))
        with self.store.transaction() as tx:
            for key in keys:
                tx.update_chunk(*parse_chunk_key(key), status=ChunkStatus.PENDING, transactions=None)

    def snapshot_done(self) -> bool:
        self._log("snapshot_done")
        with self.store.transaction(readonly=True) as tx:
            chunks = tx.chunks()
        return bool(chunks) and all(c.status is ChunkStatus.COMMITTED for c in chunks)

    # -- binlog -----------------------------------------------------------------------------

    def binlog_ready(self) -> bool:
        self._log("binlog_ready")
        return self.snapshot_done()

    def binlog_lag(self) -> BinlogLag:
        self._log("binlog_lag")
        committed = self.script.committed_offset
        server = self.script.server_offset
        behind = committed is None or (committed["file"], committed["position"]) < (server["file"], server["position"])
        return BinlogLag(committed, server, behind)

    def server_offset(self) -> dict:
        self._log("server_offset")
        return dict(self.script.server_offset)

    def run_binlog_batch(self, max_events: int | None = None) -> BatchResult:
        self._log("run_binlog_batch")
        if self.script.fail_batch:
            raise RuntimeError("boom: binlog read failed")
        start = self.script.committed_offset or {"file": "binlog.000001", "position": 100}
        end = dict(self.script.server_offset)
        if start == end:  # nothing to read: as the real batch, no batch at all
            return BatchResult("", start, start, {}, ())
        batch_id = f"b{next(self._batches):04d}"
        with self.store.transaction() as tx:
            tx.put_batch(BatchRecord(batch_id, start, end, BatchStatus.PREPARED, [{"label": f"l-{batch_id}", "txn_id": 9}]))
        return BatchResult(batch_id, start, end, {"shop.orders": 4, "shop.items": 1},
                           ({"label": f"l-{batch_id}", "txn_id": 9},), None, 1.5)

    def commit_batch(self, batch_id: str) -> bool:
        self._log("commit_batch", batch_id)
        if self.script.commit_outage:
            raise DorisConnectionError(self.script.commit_outage)
        if self.script.fail_commit:
            raise RuntimeError("Doris FE unreachable during commit")
        with self.store.transaction() as tx:
            batch = tx.batch(batch_id)
            tx.put_batch(batch.with_status(BatchStatus.COMMITTED))
        self.script.committed_offset = batch.end_offset
        return True

    def abort_batch(self, batch_id: str) -> None:
        self._log("abort_batch", batch_id)
        with self.store.transaction() as tx:
            batch = tx.batch(batch_id)
            tx.put_batch(batch.with_status(BatchStatus.ABORTED, transactions=None))

    # -- recovery and checks ----------------------------------------------------------------

    def resolve_pending(self) -> ResolveReport:
        self._log("resolve_pending")
        committed = []
        if self.script.fail_commit:
            return ResolveReport(failed=tuple(t["label"] for t in self.pending_transactions(log=False)))
        with self.store.transaction() as tx:
            for c in tx.chunks(status=ChunkStatus.PREPARED):
                tx.update_chunk(c.table_id, c.chunk_index, status=ChunkStatus.COMMITTED)
                committed += [t["label"] for t in c.transactions or []]
            for b in tx.batches(status=BatchStatus.PREPARED):
                tx.put_batch(b.with_status(BatchStatus.COMMITTED))
                committed += [t["label"] for t in b.transactions or []]
                self.script.committed_offset = b.end_offset
        return ResolveReport(committed=tuple(committed))

    def pending_transactions(self, log: bool = True) -> list[dict[str, Any]]:
        if log:
            self._log("pending_transactions")
        with self.store.transaction(readonly=True) as tx:
            out = [t for c in tx.chunks(status=ChunkStatus.PREPARED) for t in c.transactions or []]
            out += [t for b in tx.batches(status=BatchStatus.PREPARED) for t in b.transactions or []]
        return out

    @contextmanager
    def session(self) -> Iterator[None]:  # holds no connection: the recording runner has none
        yield

    def chunks_parity(self, keys: list[str], run_id: str | None = None) -> list[ParityResult]:
        self.parity_run_ids.append(("chunks_parity", run_id))
        return [self.chunk_parity(k) for k in keys]

    def chunk_parity(self, key: str) -> ParityResult:
        self._log("chunk_parity", key)
        table, _ = parse_chunk_key(key)
        doris = 10 if self.script.parity_ok else 9
        return ParityResult(table, (0, 10), 10, doris, "abc", "abc" if self.script.parity_ok else "abd")

    def table_parity(self, table_id: str) -> ParityResult:
        self._log("table_parity", table_id)
        doris = 10 if self.script.parity_ok else 9
        return ParityResult(table_id, None, 10, doris, "abc", "abc" if self.script.parity_ok else "abd")

    def verify(self, tables: Any = None, *, max_keys: int = 100) -> list[TableVerdict]:
        self._log("verify", tables)
        ok = self.script.parity_ok
        return [TableVerdict(t, t, ok, 10, 10 if ok else 9, 1, 0 if ok else 1, () if ok else (("7",),))
                for t in self.captured_tables()]

    def close(self) -> None:  # the double outlives resource teardown; tests close it
        pass


# Resources are rebuilt for every run and tick; the double they hand out is shared per file.
RUNNERS: dict[str, RecordingRunner] = {}


class RecordingPipelineResource(TidemarkPipelineResource):
    def start_spark(self) -> None:
        """The double moves no data, so it needs no Spark session; the call is recorded."""
        self.service()._log("start_spark")

    def make_service(self, definition: PipelineDefinition, store: StateStore) -> PipelineService:
        runner = RUNNERS.get(self.pipeline_file)
        if runner is None:
            runner = RUNNERS[self.pipeline_file] = RecordingRunner(definition, store)
        else:
            store.close()
        return runner


def recording_resource(handle: PipelineHandle) -> RecordingPipelineResource:
    return pipeline_resource(str(handle.path), handle.definition, resource_class=RecordingPipelineResource)


def load_definition(path: Path) -> PipelineDefinition:
    return load_pipeline(path)
