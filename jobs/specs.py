"""What crosses into a Spark task: the read spec of a snapshot job and the writer spec of a Doris load.

The driver builds them (``jobs/snapshot_job.py``, ``jobs/binlog_job.py``); a task gets them
either pickled in its closure (``jobs/fused_chunks.py``) or as a data-source option in JSON
(``tidemark_snapshot`` / ``tidemark_doris``: :meth:`ReadSpec.to_json`, :meth:`WriterSpec.to_json`).
Frozen dataclasses, so a task cannot change what the driver asked for, and every field is named
and typed here rather than in the string keys of a dict.

Secrets are no field of a JSON form: the MySQL and Doris passwords travel as options of their
own (Spark redacts options named like passwords), and the state URL — which may carry one — is
:attr:`ResultsSpec.state_url`, left out of :meth:`WriterSpec.to_json` and given back by the data
source from its own ``state_url`` option (docs/ARCHITECTURE.md, "Credentials and TLS").
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cdc_core.config import PipelineDefinition
from cdc_core.config.sink_options import DorisSinkOptions
from cdc_core.config.source_options import MySqlSourceOptions
from cdc_core.doris.sink import DorisSink
from cdc_core.instrumentation import faults
from cdc_core.model.schema import TableSchema
from cdc_core.pipeline.executor import ChunkTask


def _adopt(forwarded: Mapping[str, str] | None) -> None:
    if forwarded is not None:
        faults.adopt({"faults": dict(forwarded)})


def _faults_json(forwarded: Mapping[str, str] | None) -> dict[str, str] | None:
    return None if forwarded is None else dict(forwarded)


@dataclass(frozen=True)
class SourceSpec:
    """What a chunk reader needs to connect to MySQL, without the password."""

    host: str
    port: int
    user: str
    server_id_range: tuple[int, int]
    time_zone: str
    tinyint1_as_boolean: bool
    fetch_size: int
    backfill_skip: bool
    connect_timeout: float
    ssl_mode: str
    ssl_ca: str | None

    @classmethod
    def from_options(cls, source: MySqlSourceOptions) -> SourceSpec:
        lo, hi = source.server_id_range()
        return cls(
            host=source.hostname, port=source.port, user=source.username, server_id_range=(lo, hi),
            time_zone=source.server_time_zone or "UTC", tinyint1_as_boolean=source.tinyint1_as_boolean,
            fetch_size=source.fetch_size, backfill_skip=source.backfill_skip,
            connect_timeout=source.connect_timeout, ssl_mode=source.ssl_mode, ssl_ca=source.ssl_ca,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "user": self.user, "server_id_range": list(self.server_id_range),
                "time_zone": self.time_zone, "tinyint1_as_boolean": self.tinyint1_as_boolean,
                "fetch_size": self.fetch_size, "backfill_skip": self.backfill_skip,
                "connect_timeout": self.connect_timeout, "ssl_mode": self.ssl_mode, "ssl_ca": self.ssl_ca}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SourceSpec:
        lo, hi = data["server_id_range"]
        return cls(**{**data, "server_id_range": (int(lo), int(hi))})


@dataclass(frozen=True)
class ChunkSpec:
    """One chunk to read: its index, key range (None: unbounded) and chunk key columns."""

    index: int
    start: tuple[Any, ...] | None
    end: tuple[Any, ...] | None
    key_columns: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "start": None if self.start is None else list(self.start),
                "end": None if self.end is None else list(self.end), "key_columns": list(self.key_columns)}

    @classmethod
    def from_task(cls, task: ChunkTask, key_columns: tuple[str, ...] | list[str]) -> ChunkSpec:
        return cls(task.index, None if task.start is None else tuple(task.start),
                   None if task.end is None else tuple(task.end), tuple(key_columns))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ChunkSpec:
        return cls(int(data["index"]), None if data["start"] is None else tuple(data["start"]),
                   None if data["end"] is None else tuple(data["end"]), tuple(data["key_columns"]))


@dataclass(frozen=True)
class ReadSpec:
    """A snapshot job's chunks of one table: what its read tasks need (no password)."""

    table_id: str
    schema: TableSchema
    source: SourceSpec
    chunks: tuple[ChunkSpec, ...]
    faults: Mapping[str, str] | None = None  # a test's fault points (cdc_core/faults.py); None: not forwarded
    batch_rows: int = 65536  # rows per Arrow batch a read task yields
    # The offset (as a dict) that decides the epoch of the chunks' watermarks (failover.align); None: epoch 0
    epoch_reference: Mapping[str, Any] | None = None
    # The snapshot job the chunks belong to (a token drawn per job): a worker's reader carries a
    # chunk's high watermark to the next chunk only within one job (SnapshotSplitReader.read)
    job: str | None = None

    def adopt_faults(self) -> None:
        """In the task: take the driver's fault setting, when the spec forwards one."""
        _adopt(self.faults)

    def to_json(self) -> str:
        return json.dumps({"table_id": self.table_id, "schema": self.schema.to_dict(), "source": self.source.to_dict(),
                           "chunks": [c.to_dict() for c in self.chunks], "faults": _faults_json(self.faults),
                           "batch_rows": self.batch_rows,
                           "epoch_reference": None if self.epoch_reference is None else dict(self.epoch_reference),
                           "job": self.job})

    @classmethod
    def from_json(cls, text: str) -> ReadSpec:
        data = json.loads(text)
        return cls(data["table_id"], TableSchema.from_dict(data["schema"]), SourceSpec.from_dict(data["source"]),
                   tuple(ChunkSpec.from_dict(c) for c in data["chunks"]), data.get("faults"),
                   int(data.get("batch_rows", 65536)), data.get("epoch_reference"), data.get("job"))


@dataclass(frozen=True)
class SinkSpec:
    """The sink a writing task builds (``DorisSink.from_options``): the ``sink:`` options without
    the password and the durations, the sink's effective label prefix (epoch included), and the
    format its Arrow rows travel in (``DorisSink.load_format``: the driver asked the FE's version
    once, so no task asks it again)."""

    options: Mapping[str, Any]  # alias-keyed, as DorisSinkOptions reads them
    label_prefix: str
    load_format: str | None = None  # None: the task's sink asks (once per process)

    @classmethod
    def of(cls, sink: DorisSink, definition: PipelineDefinition) -> SinkSpec:
        """The spec of the driver's ``sink``: its label prefix is the one every task's loads carry."""
        options = definition.sink.model_dump(by_alias=True, exclude={"password", "flush_interval"}, exclude_none=True)
        return cls(options, sink.label_prefix, sink.load_format)

    def build(self, password: str) -> DorisSink:
        """The task's sink: the same factory as the driver's, given the password on its own."""
        return DorisSink.from_options(DorisSinkOptions.model_validate({**self.options, "password": password}),
                                      self.label_prefix, default_format=self.load_format)

    def to_dict(self) -> dict[str, Any]:
        return {"options": dict(self.options), "label_prefix": self.label_prefix, "load_format": self.load_format}


@dataclass(frozen=True)
class ResultsSpec:
    """Where the writer's ``commit`` leaves the job's results: the pipeline's state store."""

    state_dir: str | None = None
    state_url: str | None = field(default=None, repr=False)  # may carry a password: never in JSON

    @classmethod
    def of(cls, definition: PipelineDefinition) -> ResultsSpec:
        url = definition.pipeline.state_url
        if url is not None:
            return cls(state_url=url.get_secret_value())
        return cls(state_dir=str(definition.state_dir))


class WriteMode(StrEnum):
    """A snapshot chunk's load (aborts an earlier attempt's) or a binlog batch's (reuses it)."""

    SNAPSHOT = "snapshot"
    BINLOG = "binlog"


@dataclass(frozen=True)
class WriterSpec:
    """What a writing task needs (no password: it travels on its own).

    ``generations``: a snapshot chunk's generation by chunk index (its label's); ``batch_id``: a
    binlog batch's id. ``token`` keys the job's results in the state store.
    """

    mode: WriteMode
    source_table: str
    targets: tuple[str, ...]
    sink: SinkSpec
    results: ResultsSpec
    token: str
    faults: Mapping[str, str] | None = None  # a test's fault points (cdc_core/faults.py); None: not forwarded
    generations: Mapping[int, int] = field(default_factory=dict)
    batch_id: str | None = None
    # the driver's layout of each target (``DorisTable``'s fields, by "db.table"), read or created
    # just before the job: a task's sink takes it rather than asking Doris again for every table
    layouts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def create(cls, sink: DorisSink, definition: PipelineDefinition, mode: WriteMode, source_table: str,
               targets: list[str] | tuple[str, ...], *, generations: Mapping[int, int] | None = None,
               batch_id: str | None = None) -> WriterSpec:
        """A new job's spec: the label prefix is ``sink``'s, a fresh token, the driver's fault setting."""
        return cls(WriteMode(mode), source_table, tuple(targets), SinkSpec.of(sink, definition),
                   ResultsSpec.of(definition), f"{mode}-{uuid.uuid4().hex}", faults.forwarded(),
                   dict(generations or {}), batch_id)

    def adopt_faults(self) -> None:
        """In the task: take the driver's fault setting, when the spec forwards one."""
        _adopt(self.faults)

    def generation(self, index: int) -> int:
        return int(self.generations.get(index, 0))

    def to_json(self) -> str:
        """The spec as the ``tidemark_doris`` option: without the state URL (its own option)."""
        return json.dumps({
            "mode": self.mode.value, "source_table": self.source_table, "targets": list(self.targets),
            "sink": self.sink.to_dict(), "results": {"state_dir": self.results.state_dir}, "token": self.token,
            "faults": _faults_json(self.faults), "generations": {str(i): g for i, g in self.generations.items()},
            "batch_id": self.batch_id, "layouts": {t: dict(v) for t, v in self.layouts.items()},
        })

    @classmethod
    def from_json(cls, text: str, state_url: str | None = None) -> WriterSpec:
        data = json.loads(text)
        return cls(
            WriteMode(data["mode"]), data["source_table"], tuple(data["targets"]),
            SinkSpec(data["sink"]["options"], data["sink"]["label_prefix"], data["sink"].get("load_format")),
            ResultsSpec(data["results"].get("state_dir"), state_url or None), data["token"],
            data.get("faults"), {int(i): int(g) for i, g in (data.get("generations") or {}).items()},
            data.get("batch_id"), dict(data.get("layouts") or {}),
        )
