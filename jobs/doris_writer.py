"""A PySpark data sink for Doris: each task precommits its rows with a two-phase-commit stream load.

Nothing a task loads is visible: every load is precommitted, and the prepared transactions go
back as the task's commit message. When every task has succeeded, Spark calls ``commit`` on
the driver side, which does *not* commit them in Doris: it hands them to the caller through
the pipeline's state store (``cdc_core/state/keys.py:SPARK_RESULTS``, by the job's token). The
orchestration commits after the materialization succeeds. When the job fails, ``abort`` aborts
what the successful tasks prepared.

Retries are safe by construction. Labels are deterministic per (target table, batch), and:

* a **snapshot chunk** may read different rows on a retry (a later high watermark), so its
  load aborts whatever an earlier attempt left under its label and loads afresh (``fresh``);
* a **binlog batch** is the same events on a retry, so an earlier attempt's precommitted load
  under the same label is reused as it is.
"""

from __future__ import annotations

import json
import logging
from contextlib import ExitStack
from typing import Any

import pyarrow as pa

from cdc_core.config import PipelineDefinition
from cdc_core.doris.labels import snapshot_batch_id
from cdc_core.doris.sink import DorisSink
from cdc_core.doris.table_creation import DorisTable
from cdc_core.model.schema import TableId
from cdc_core.state import StateStore
from cdc_core.state.keys import SPARK_RESULTS
from jobs.specs import ResultsSpec, WriterSpec

logger = logging.getLogger(__name__)

FORMAT = "tidemark_doris"


# Python workers are reused across tasks: keep one sink (HTTP session, table layouts) per worker,
# with the scope in which its client reuses an FE's redirect (closed with the sink).
_SINKS: dict[str, tuple[DorisSink, ExitStack]] = {}


def make_sink(spec: WriterSpec, password: str) -> DorisSink:
    """The worker's ``DorisSink`` for this job (``SinkSpec.build``: the driver's factory, the
    driver's label prefix); nothing secret in the spec.

    The sink's client reuses the BE an FE last redirected a load to for its whole life in this
    worker (``DorisHttpClient.reusing_redirects``: a few requests within seconds, then an FE is
    asked again; a failed request's retry goes through an FE). A run over hundreds of one-chunk
    tables makes a load per table in each worker, and asking an FE first for every one is one more
    request and connection per table on both sides."""

    cache_key = json.dumps([spec.sink.to_dict(), spec.token], sort_keys=True)
    cached = _SINKS.get(cache_key)
    if cached is not None:
        return cached[0]
    _close_sinks()
    sink = spec.sink.build(password)
    scope = ExitStack()
    scope.enter_context(sink.client.reusing_redirects())
    _SINKS[cache_key] = (sink, scope)
    return sink


def _close_sinks() -> None:
    for stale, scope in _SINKS.values():
        scope.close()
        stale.close()
    _SINKS.clear()


def discard_sink(sink: DorisSink) -> None:
    """After a failed load: the next task of this worker starts with a fresh sink (``sink`` is the
    cached one, :func:`make_sink`'s, closed with the others)."""
    _close_sinks()


def load_chunk(sink: DorisSink, spec: WriterSpec, chunk: dict[str, Any], table: pa.Table) -> list[dict[str, Any]]:
    """Precommit one snapshot chunk into every target; returns the prepared transactions.

    An earlier attempt may have read the chunk at another watermark: whatever it left under the
    label is aborted, never reused (``fresh``). An empty chunk loads nothing, so it aborts such a
    leftover itself.
    """
    batch_id = snapshot_batch_id(spec.source_table, chunk["index"], spec.generation(chunk["index"]))
    committables = []
    for target_text in spec.targets:
        target = TableId.parse(target_text)
        layout = spec.layouts.get(target_text)
        if layout is not None:
            sink.remember(target, DorisTable.from_dict(layout))
        if table.num_rows:
            committables.append(sink.load(target, batch_id, table, fresh=True,
                                          source=TableId.parse(spec.source_table)).to_dict())
        else:
            sink.committer.abort_label(target.database, sink.label(target, batch_id))
    return committables


def open_results_store(results: ResultsSpec) -> StateStore:
    return StateStore.open(results.state_dir, results.state_url)


# -- driver side --------------------------------------------------------------------------------


def write_to_doris(df: Any, definition: PipelineDefinition, spec: WriterSpec) -> list[dict[str, Any]]:
    """Run the Spark write of ``df`` into Doris and return the tasks' messages (precommitted loads
    and chunk bookkeeping), taken back out of the state store."""
    # The state URL may carry a password: like the sink's password it travels as an option of its
    # own, which Spark redacts in plans and logs (``spark.sql.redaction.options.regex``: url), and
    # never inside the ``spec`` JSON (``WriterSpec.to_json``), which Spark shows as it is.
    (
        df.write.format(FORMAT)
        .option("spec", spec.to_json())
        .option("password", definition.sink.password.get_secret_value())
        .option("state_url", spec.results.state_url or "")
        .mode("append")
        .save()
    )
    store = open_results_store(spec.results)
    try:
        with store.transaction() as tx:
            results = SPARK_RESULTS.key(spec.token)
            messages = results.get_or(tx, [])
            results.delete(tx)
    finally:
        store.close()
    return messages
