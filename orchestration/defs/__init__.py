"""The Dagster definitions, by kind (assets, checks, hooks, jobs, sensors, schedules, resources).

Each module is a factory over a ``PipelineHandle`` (``pipelines.py``): a pipeline file becomes its
own set of definitions, merged into one code location by ``orchestration/definitions.py``. Nothing
here imports ``orchestration.cli``.
"""
