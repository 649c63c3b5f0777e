"""Tidemark on Dagster: how users run pipelines.

Per pipeline file (asset key prefix = the pipeline's name), built by factories in
``definitions.py`` and merged into one ``Definitions``:

* ``assets.py`` — ``snapshot_splits`` (plan + one dynamic partition per chunk),
  ``snapshot_chunks`` (partitioned; a backfill puts up to 500 chunks in one run),
  ``binlog_stream`` (one micro-batch per materialization, gated on the snapshot).
* ``hooks.py`` — success hook commits what the step prepared, failure hook aborts it.
* ``checks.py`` — ``chunk_parity``, ``table_parity``, ``no_pending_transactions``.
* ``sensors.py`` / ``schedules.py`` — ``<name>_binlog_sensor`` (running by default) and
  ``<name>_incremental_schedule`` (stopped by default; opt-in); pause flag; one run at a time;
  run key = offset range (``runs.py``).
* ``jobs.py`` — ``<name>_splits_job``, ``<name>_snapshot_job``, ``<name>_binlog_job`` (in process).
* ``resources.py`` — MySQL source, Doris sink, state store, dagster-pyspark, tied together by
  ``TidemarkPipelineResource`` (key ``tidemark_<name>``), which hands out the ``PipelineService``.

The CLI (``cli.py``): ``tidemark run PIPELINE.yaml --once`` (``run_once.py``) and
``tidemark dev PIPELINE.yaml...`` (``dev.py``); ``demo.py`` is ``tidemark demo``'s sample data.
Everything that moves data goes through ``cdc_core.pipeline.service.PipelineService``.
"""
