"""Start Spark while ``tidemark run --once`` does the rest of its set-up, when the run will need it.

A local Spark session takes ~8 s to start on a 2-core machine (the JVM), and the CLI spends ~4 s
before its snapshot job first asks for the session (Dagster's imports, the instance, recovery,
planning, the run's start). One after the other, the user waits for both; side by side, the run
waits ~4 s for its session instead of ~8 s: 5M rows took 38.1 s instead of 41.9 s here (the means
of three interleaved runs each, on a host where ``mariadb --quick`` scans them in 5.8 s).

So ``tidemark run`` starts :class:`SparkPrestart` first thing. Its thread imports only the state
store, the MySQL client and PySpark, reads how much of the snapshot is left
(``cdc_core/pipeline/snapshot_estimate.py``) and, when that needs Spark (more rows than
``tidemark.snapshot.in-process-rows``), starts the session with the settings the run's PySpark
resource uses (``jobs.spark.start_session``); the resource's ``getOrCreate`` then finds it. A run
that only streams the binlog, or reads a small snapshot in the CLI's own process, starts no JVM.

The thread only reads: a pipeline without a state store yet has none created by it (its server's
row estimates decide). It decides from the pipeline file's connection settings, as the CLI's
connection check does. When it cannot decide (a file that does not load, a server that does not
answer), it logs why at debug level and starts nothing: the run reports that problem itself.
When starting Spark fails, it logs a warning with the cause and the run starts Spark when it
needs it, failing there with its own error. Nothing waits for the thread: a process that ends
without using the session ends its JVM too (PySpark's gateway exits when its stdin closes).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cdc_core.instrumentation.phases import phase

if TYPE_CHECKING:
    from cdc_core.config import PipelineDefinition

logger = logging.getLogger(__name__)


class SparkPrestart:
    """The thread that starts Spark for the first of the pipeline files whose snapshot needs it."""

    def __init__(self, paths: Sequence[Path]):
        self._paths = list(paths)
        self._thread = threading.Thread(target=self._run, name="tidemark-spark-prestart", daemon=True)
        self.started_for: str | None = None
        self.workers_for: str | None = None  # the pipeline whose local workers were spawned ahead

    def start(self) -> SparkPrestart:
        self._thread.start()
        return self

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    def _run(self) -> None:
        with phase("spark_prestart"):
            definition = self._first_needing_spark()
            if definition is None:
                self._warm_local_workers()
                return
            from jobs.spark import start_session

            self.started_for = definition.name
            try:
                start_session(definition)
            except Exception:  # noqa: BLE001 - the run starts Spark itself and raises its own error
                logger.warning("starting Spark ahead of the run failed; the run starts it when it needs it",
                               exc_info=True)

    def _warm_local_workers(self) -> None:
        """No Spark, but a snapshot the local worker processes will read (``jobs/local_workers.py``):
        spawn them now, so that their start overlaps the CLI's too."""
        for path in self._paths:
            try:
                definition, workers = _local_workers_needed(path)
            except Exception:  # noqa: BLE001 - the run reports a file or a server it cannot use
                logger.debug("could not tell whether %s needs local workers", path, exc_info=True)
                continue
            if workers > 1:
                from jobs.local_workers import warm_local_workers

                self.workers_for = definition.name
                try:
                    warm_local_workers(workers)
                except Exception:  # noqa: BLE001 - the run spawns them itself and raises its own error
                    logger.warning("starting the local snapshot workers ahead of the run failed; the run starts "
                                   "them when it needs them", exc_info=True)
                return

    def _first_needing_spark(self) -> PipelineDefinition | None:
        for path in self._paths:
            try:
                definition = _needs_spark(path)
            except Exception:  # noqa: BLE001 - the run reports a file or a server it cannot use
                logger.debug("could not tell whether %s needs Spark; not starting it ahead", path, exc_info=True)
                continue
            if definition is not None:
                return definition
        return None


def _rows_left(path: Path) -> tuple[PipelineDefinition, dict[str, int]]:
    from cdc_core.config import load_pipeline
    from cdc_core.pipeline.snapshot_estimate import rows_left
    from cdc_core.state import StateStore
    from orchestration.defs.env_overrides import state_location

    definition = load_pipeline(path)
    url, state_dir = state_location(definition)
    # None: nothing run yet; the server's estimates decide, and no state is created here
    store = StateStore.open_existing(definition, url=url, state_dir=state_dir)
    try:
        if store is not None and _held_by_a_live_run(store):
            return definition, {}
        return definition, rows_left(definition, store)
    finally:
        if store is not None:
            store.close()


def _held_by_a_live_run(store) -> bool:
    """Whether another run holds a lease of this pipeline now: ``tidemark run`` would then decline
    (``cdc_core/state/leases.py``), so starting a JVM or workers for it would only print their
    start-up lines before its one line and register an application with a cluster for nothing.
    Two runs started at the same moment can both read no holder; the loser then has started Spark
    in vain, which costs time but nothing else."""
    from cdc_core.state.leases import live_holders

    holders = live_holders(store)
    if holders:
        logger.debug("a live run holds %s; nothing started ahead", ", ".join(r.scope for r in holders))
    return bool(holders)


def _local_workers_needed(path: Path) -> tuple[PipelineDefinition, int]:
    """The pipeline's definition and how many local workers its snapshot left will use (1: none)."""
    from cdc_core.pipeline.snapshot_estimate import local_workers_for, needs_spark

    definition, left = _rows_left(path)
    rows = sum(left.values())
    if not left or needs_spark(definition, left):
        return definition, 1
    return definition, local_workers_for(definition, rows, chunks=2 if rows > 0 else 0)


def _needs_spark(path: Path) -> PipelineDefinition | None:
    """The pipeline's definition when its snapshot has more left than the driver reads alone."""
    from cdc_core.pipeline.snapshot_estimate import needs_spark

    definition, left = _rows_left(path)
    if not needs_spark(definition, left):
        logger.debug("%s: ~%d snapshot rows left; no Spark ahead", definition.name, sum(left.values()))
        return None
    logger.debug("%s: ~%d snapshot rows left; starting Spark ahead of the run", definition.name,
                 sum(left.values()))
    return definition
