"""Tidemark on Dagster: how users run pipelines. Two halves, laid out as Dagster's
``create-dagster`` projects are:

* ``definitions.py`` — the code location (``workspace.yaml``): one ``Definitions`` built from the
  factories in ``defs/`` for each pipeline file (asset key prefix = the pipeline's name).
* ``defs/`` — the Dagster definitions by kind:

  * ``assets.py`` — ``snapshot_splits`` (plan + one dynamic partition per chunk),
    ``snapshot_chunks`` (partitioned; a backfill puts up to 500 chunks in one run),
    ``binlog_stream`` (one micro-batch per materialization, gated on the snapshot);
    ``doris_tables.py`` — one external asset per Doris table the pipeline loads.
  * ``hooks.py`` — success hook commits what the step prepared, failure hook aborts it.
  * ``checks.py`` — ``chunk_parity``, ``table_parity``, ``no_pending_transactions``.
  * ``sensors.py`` / ``schedules.py`` — ``<name>_binlog_sensor`` (running by default) and
    ``<name>_incremental_schedule`` (stopped by default; opt-in); pause flag; one run at a time;
    run key = offset range (``runs.py``).
  * ``jobs.py`` — ``<name>_splits_job``, ``<name>_snapshot_job``, ``<name>_binlog_job`` (in process);
    ``schema_change_job.py`` — ``<name>_schema_change_job`` and the DDL sensor that launches it.
  * ``resources.py`` — MySQL source, Doris sink, state store, dagster-pyspark, tied together by
    ``TidemarkPipelineResource`` (key ``tidemark_<name>``), which hands out the ``PipelineService``;
    ``env_overrides.py`` names the environment variables that override a pipeline file.
  * ``pipelines.py`` — ``PipelineHandle``, what every factory above is built for.

* ``cli/`` — the ``tidemark`` command and the development tooling behind it; it imports ``defs/``,
  never the other way round: ``tidemark.py`` (the parser), ``run_once.py`` (``tidemark run
  --once``), ``status.py``, ``dev.py`` (``tidemark dev``, with ``dev_logs.py``, ``dev_watchdog.py``
  and ``dagster_daemon.py``), ``instance.py`` (the Dagster home), ``spark_prestart.py``,
  ``demo.py`` (``tidemark demo``'s sample data).

Everything that moves data goes through ``cdc_core.pipeline.service.PipelineService``.
"""
