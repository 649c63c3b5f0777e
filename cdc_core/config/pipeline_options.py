"""``pipeline:``: Flink CDC's ``PipelineOptions`` and Tidemark's own under ``tidemark.``.

Flink options whose work Tidemark does another way (runtime mode, partitioning strategy, the
transform expressions' time zone and decimal mode) are refused by name with what to do instead.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, SecretStr, field_validator

from cdc_core.config.options import OptionBlock, Seconds, lowercased, uppercased


class PipelineOptions(OptionBlock):
    """``pipeline:`` — Flink CDC's options plus Tidemark's own under ``tidemark.``."""

    name: str
    parallelism: int = Field(1, ge=1)
    runtime_mode: Annotated[Literal["STREAMING", "BATCH"], BeforeValidator(uppercased)] = Field(
        "STREAMING", alias="execution.runtime-mode"
    )
    schema_change_behavior: Annotated[
        Literal["exception", "evolve", "try_evolve", "lenient", "ignore"], BeforeValidator(lowercased)
    ] = Field("lenient", alias="schema.change.behavior")
    route_mode: Annotated[Literal["ALL_MATCH", "FIRST_MATCH"], BeforeValidator(uppercased)] = Field(
        "ALL_MATCH", alias="route-mode"
    )
    local_time_zone: str | None = Field(None, alias="local-time-zone")
    operator_uid_prefix: str | None = Field(None, alias="operator.uid.prefix")
    schema_operator_rpc_timeout: Seconds = Field(180.0, alias="schema-operator.rpc-timeout")
    partitioning_strategy: Annotated[
        Literal["SINK_DEFINED", "PRIMARY_KEY", "TABLE_ID"], BeforeValidator(uppercased)
    ] = Field("SINK_DEFINED", alias="sink.partitioning.strategy")
    decimal_precision_mode: Annotated[Literal["UP_TO_19", "UP_TO_38"] | None, BeforeValidator(uppercased)] = Field(
        None, alias="transform.decimal.precision.mode"
    )
    state_dir: str | None = Field(None, alias="tidemark.state.dir")

    @field_validator("runtime_mode")
    @classmethod
    def _runtime_mode(cls, v: str) -> str:
        if v != "STREAMING":
            raise ValueError(
                "Tidemark runs pipelines as streams only; for a one-off copy that ends after the snapshot "
                "use source option scan.startup.mode: snapshot and remove this option"
            )
        return v

    @field_validator("partitioning_strategy")
    @classmethod
    def _partitioning(cls, v: str) -> str:
        if v != "SINK_DEFINED":
            raise ValueError(
                "Tidemark loads each Doris table in one exactly-once stream load per batch (what "
                "SINK_DEFINED means for the Doris sink); remove the option"
            )
        return v

    # Flink CDC uses the next two only for transform expressions; Tidemark evaluates those in
    # Spark SQL, whose own rules apply, so a value set here would be ignored: refused instead.
    @field_validator("local_time_zone")
    @classmethod
    def _local_time_zone(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError(
                "Tidemark evaluates transform expressions in Spark SQL and does not apply this option; remove "
                "it and set tidemark.spark.conf.spark.sql.session.timeZone for the expressions' time zone"
            )
        return v

    @field_validator("decimal_precision_mode")
    @classmethod
    def _decimal_precision_mode(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError(
                "Tidemark evaluates transform expressions in Spark SQL, whose DECIMAL arithmetic keeps up to "
                "38 digits, and does not apply this option; remove it"
            )
        return v
    state_url: SecretStr | None = Field(None, alias="tidemark.state.url")
    spark_master: str | None = Field(None, alias="tidemark.spark.master")
    spark_remote: str | None = Field(None, alias="tidemark.spark.remote")
    spark_conf: dict[str, str] = Field(default_factory=dict, alias="tidemark.spark.conf.*")
    # A snapshot chunk of a table without a transform is read and loaded in one Spark task, its
    # rows never entering the JVM (``jobs.fused_chunks``); false sends them through the DataFrame.
    spark_fused_chunk_tasks: bool = Field(True, alias="tidemark.spark.fused-chunk-tasks")
    # A snapshot run of at most this many rows (its chunks × the chunk size), all of tables without
    # a transform, in a pipeline that names no Spark master nor Connect server, reads and loads its
    # chunks without Spark: by ``parallelism`` local worker processes (jobs/local_workers.py), or in
    # the driver for at most 50,000 rows. Spark's local mode runs the same per-chunk function in as
    # many Python workers, plus a JVM whose start (~3 s, ~6 CPU-s here) cost more than it saved at
    # 1M and 5M rows (docs/performance.md). 0: always Spark.
    snapshot_in_process_rows: int = Field(10_000_000, ge=0, alias="tidemark.snapshot.in-process-rows")
    # At most this many chunks in a snapshot plan: each is a Dagster partition, and Dagster's
    # guidance is at most 100k partitions per asset (the UI slows down past it). A plan that would
    # need more grows the chunk sizes (``cdc_core/pipeline/planning.py``).
    snapshot_max_partitions: int = Field(100_000, gt=0, alias="tidemark.snapshot.max-partitions")
    # Planning pauses this long after every 10 chunks of one table split by queries (a text or
    # composite key: Flink's ``maySleep``, 100 ms, which Flink hard-codes), sparing MySQL during a
    # long run of split queries; a table of fewer chunks never waits. 0: no pause.
    snapshot_split_pause_ms: int = Field(100, ge=0, alias="tidemark.snapshot.split-pause-ms")
    # ``tidemark run`` plans at most this many split steps (an uneven table's chunk each, an even
    # table's chunks all at once) before it loads the chunks planned so far: a huge table's first
    # chunks are loading while its later ones are still to be split (orchestration/cli/run_once.py).
    snapshot_split_steps_per_run: int = Field(2_000, gt=0, alias="tidemark.snapshot.split-steps-per-run")
    # A binlog batch with fewer changes than this (and no transform) is compacted and loaded in the
    # driver: a Spark job costs seconds, which freshness cannot afford. Above the default batch size
    # (``binlog_max_events``), so a batch goes to Spark only when the user raises that: each
    # sensor-launched run is a new process, where Spark would start anew (~10 s) for a batch the
    # driver loads in a fraction of that, and a stream that falls behind would fall further.
    binlog_spark_min_events: int = Field(250_000, ge=0, alias="tidemark.binlog.spark-min-events")
    binlog_max_events: int = Field(200_000, gt=0, alias="tidemark.binlog.max-events")
    # One binlog_stream run applies batch after batch, each committed before the next is read,
    # while the binlog has moved on, for up to this long (``cdc_core/pipeline/stream_run.py``):
    # a run's start (a new process, ~4 s) is paid once, not per batch. Between two runs the rows
    # wait ~5-8 s (sensor tick, run start); 300 s keeps that under 1 % of a steady stream's rows,
    # where 60 s put 3-4 % of them past the single-batch runs' p99 (bench/freshness.py, 200 rows/s).
    # 0: one batch per run.
    binlog_run_seconds: float = Field(300.0, ge=0, alias="tidemark.binlog.run-seconds")
    # A batch begins reading at least this long after the previous one did, in any run or process
    # (``binlog_batch._pace``): Doris gets at most one load per table and interval (each is a new
    # version to compact; Doris advises about one a second), and a steady stream's batches grow.
    binlog_batch_interval_s: float = Field(1.0, ge=0, alias="tidemark.binlog.batch-interval-s")
    # A run that has caught up commits its batch and waits this long for the binlog to move before
    # it ends: a stream whose commits come a fraction of a second apart stays in one run instead
    # of a run per burst, each started anew by the sensor (~5 s between runs; at 200 rows/s in 4
    # commits a second that put p99 at 6.4 s, bench/freshness.py). 0: a caught-up run ends at once.
    binlog_idle_wait_s: float = Field(10.0, ge=0, alias="tidemark.binlog.idle-wait-s")
    # A run holds a lease on the work it does in the state store (cdc_core/state/leases.py), renewed
    # every third of this; a lease not renewed for this long is taken to be a dead run's (killed, its
    # machine gone), and the next run anywhere resolves what it left prepared. Short enough that a
    # killed run delays the next by seconds; long enough that a stalled heartbeat (a GC pause, the
    # state database failing over) is not taken for a death.
    run_lease_ttl_s: float = Field(30.0, ge=3, le=3600, alias="tidemark.run.lease-ttl-s")
    # The most 2PC transactions Tidemark keeps running (begun or precommitted, not yet committed or
    # aborted) in one Doris database: a snapshot run or binlog batch whose loads would pass it is
    # cut into groups, each committed before the next begins (``cdc_core/pipeline/txn_groups.py``).
    # It must not exceed the FE's max_running_txn_num_per_db (100 by default), which every writer
    # of the database shares: 80 leaves 20 for other pipelines, users' loads and recovery's probes.
    doris_max_running_txns_per_db: int = Field(80, ge=1, alias="tidemark.doris.max-running-txns-per-db")
    # The binlog the stream resumes from was purged: ``fail`` stops the stream with a message naming
    # ``tidemark resnapshot``; ``resnapshot`` runs it unattended (a warning, a Dagster observation on
    # binlog_stream) and goes on from the new chunks' watermarks (``cdc_core/pipeline/resnapshot.py``).
    binlog_on_purged: Annotated[Literal["fail", "resnapshot"], BeforeValidator(lowercased)] = Field(
        "fail", alias="tidemark.binlog.on-purged"
    )

    @property
    def slug(self) -> str:
        """The name as a directory and Dagster-key friendly identifier."""
        return re.sub(r"[^A-Za-z0-9_]+", "_", self.name).strip("_").lower() or "pipeline"
