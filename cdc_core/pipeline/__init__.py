"""The pipeline service: the exactly-once core between the orchestration and the engines.

``PipelineService`` (``service.py``) is the facade; its steps live in small modules:
``planning`` (server check, split plan), ``snapshot`` (run / commit / abort chunks),
``binlog_batch`` (micro-batches of the stream), ``recovery`` (what a crash left),
``parity/`` (MySQL against Doris: the checks after a run and ``tidemark verify``),
``schema_change`` (the four steps of a DDL). The Spark work is injected through the
``executor`` protocol, so this package needs neither Spark nor Dagster (docs/ARCHITECTURE.md
says why it lives in ``cdc_core``).
"""
