"""Dagster resources: the MySQL source, the Doris sink, the state store, PySpark, and the
pipeline resource that ties them to one pipeline file and hands out its ``PipelineService``.

The PySpark resource owns the process's Spark session (one owner): the service's executor asks
it for the session when a step first needs Spark, so a run that needs none starts none, and
``tidemark run --once``, which executes these jobs in process, uses the same session.

Connection settings come from the pipeline file (which already takes ``${VAR}``); a resource
field overrides the file only when it is set, typically with ``EnvVar("...")`` in a deployment.
Passwords are plain ``str | None`` fields meant to be given as ``EnvVar``: the Dagster UI then
shows the variable's name, never its value, and nothing here puts a password in metadata or logs.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from dagster import ConfigurableResource, EnvVar, InitResourceContext
from pydantic import PrivateAttr, SecretStr

from cdc_core.config import PipelineDefinition, load_pipeline
from cdc_core.instrumentation.faults import fault_point
from cdc_core.instrumentation.phases import phase
from cdc_core.pipeline.service import PipelineService
from cdc_core.pipeline.targets import DorisTarget
from cdc_core.state import StateStore
from jobs.spark import prepare_environment, session_config
from jobs.spark_executor import SparkExecutor
from orchestration.defs.env_overrides import env_prefix as default_env_prefix
from orchestration.defs.runs import record_run_process


class MySqlSourceResource(ConfigurableResource):
    """The MySQL (or MariaDB) server the pipeline captures. Unset fields come from the pipeline file."""

    hostname: str | None = None
    port: int | None = None
    username: str | None = None
    password: str | None = None  # give EnvVar("...") so the UI shows the name only

    def apply(self, definition: PipelineDefinition) -> PipelineDefinition:
        update: dict[str, Any] = {
            k: _resolved(v) for k, v in (("hostname", self.hostname), ("port", self.port),
                                         ("username", self.username))
            if v is not None
        }
        if self.password is not None:
            update["password"] = SecretStr(_resolved(self.password))
        if not update:
            return definition
        return dataclasses.replace(definition, source=definition.source.model_copy(update=update))


class DorisSinkResource(ConfigurableResource):
    """The Doris cluster the pipeline loads into. Unset fields come from the pipeline file."""

    fenodes: str | None = None
    username: str | None = None
    password: str | None = None  # give EnvVar("...")

    def apply(self, definition: PipelineDefinition) -> PipelineDefinition:
        update: dict[str, Any] = {
            k: _resolved(v) for k, v in (("fenodes", self.fenodes), ("username", self.username)) if v is not None
        }
        if self.password is not None:
            update["password"] = SecretStr(_resolved(self.password))
        if not update:
            return definition
        return dataclasses.replace(definition, sink=definition.sink.model_copy(update=update))


class StateStoreResource(ConfigurableResource):
    """Where the pipeline's state lives: embedded SQLite under the pipeline's state directory by
    default, or a SQLAlchemy URL (MySQL, Postgres) when several machines share the pipeline."""

    url: str | None = None  # give EnvVar("TIDEMARK_STATE_URL"); it carries a password
    state_dir: str | None = None

    def open(self, definition: PipelineDefinition) -> StateStore:
        return StateStore.for_pipeline(definition, url=self.url, state_dir=self.state_dir)


def _resolved(value: Any) -> Any:
    """An ``EnvVar`` / ``EnvVar.int`` field's value (a resource used outside a run, as
    ``tidemark run --once`` and the code location do, still holds them unresolved)."""
    if isinstance(value, EnvVar) or type(value).__name__ == "IntEnvVar":
        return value.get_value()
    return value


class TidemarkPySparkResource(ConfigurableResource):
    """A lazy Spark session (nothing starts until a chunk needs Spark), built by dagster-pyspark
    as its ``LazyPySparkResource`` builds it, with the environment PySpark needs here: workers on
    this interpreter, a local driver on loopback.

    Not a ``LazyPySparkResource`` subclass: that would import dagster-pyspark and PySpark (~1.2 s)
    wherever these resources are defined, ``tidemark run --once`` of a snapshot the local workers
    read included, which never starts Spark. Both are imported when the session is first asked for.
    """

    spark_config: dict[str, Any]
    _spark_session: Any = PrivateAttr(default=None)

    @property
    def spark_session(self) -> Any:
        if self._spark_session is None:
            prepare_environment(self.spark_config.get("spark.master"))
            from dagster_pyspark.resources import spark_session_from_config

            self._spark_session = spark_session_from_config(self.spark_config)
        return self._spark_session

    @property
    def spark_context(self) -> Any:
        return self.spark_session.sparkContext


class TidemarkPipelineResource(ConfigurableResource):
    """One pipeline file with its source, sink, state store and Spark; gives out the service.

    The service is created on first use and closed when the step (or sensor tick) ends.
    """

    pipeline_file: str
    mysql: MySqlSourceResource
    doris: DorisSinkResource
    state: StateStoreResource
    pyspark: TidemarkPySparkResource

    _definition: PipelineDefinition | None = PrivateAttr(default=None)
    _service: PipelineService | None = PrivateAttr(default=None)

    def definition(self) -> PipelineDefinition:
        if self._definition is None:
            definition = load_pipeline(self.pipeline_file)
            self._definition = self.doris.apply(self.mysql.apply(definition))
        return self._definition

    def service(self) -> PipelineService:
        if self._service is None:
            definition = self.definition()
            self._service = self.make_service(definition, self.state.open(definition))
        return self._service

    def make_service(self, definition: PipelineDefinition, store: StateStore) -> PipelineService:
        """The service for this pipeline, its Spark work on this resource's session (tests
        substitute a recording double here)."""
        return PipelineService(definition, store, executor=SparkExecutor(self.start_spark))

    def doris_targets_at_load(self) -> list[DorisTarget]:
        """The Doris tables the pipeline writes, read when the code location loads: from the
        state store only (``EnvVar`` fields resolved from the environment, as a run would), with
        no Spark, MySQL or Doris. Empty for a pipeline whose state does not exist yet (nothing
        is created for it)."""
        definition = load_pipeline(self.pipeline_file)
        store = StateStore.open_existing(definition, url=_resolved(self.state.url),
                                         state_dir=_resolved(self.state.state_dir))
        if store is None:
            return []
        service = self.make_service(definition, store)
        try:
            return service.doris_targets()
        finally:
            service.close()

    def start_spark(self) -> Any:
        """Start (or reuse) the process's Spark session through dagster-pyspark."""
        with phase("spark_start"):
            return self.pyspark.spark_session

    def setup_for_execution(self, context: InitResourceContext) -> None:
        # A run (not a sensor tick) writes down the process executing it: a run whose process is
        # gone can then be told from one still working (orchestration/defs/runs.py: fail_dead_runs).
        if context.run is not None and context.instance is not None:
            record_run_process(context.instance, context.run.run_id)
            fault_point("run.resource_setup", run=context.run.run_id)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None


def pipeline_resource(path: str, definition: PipelineDefinition, env_prefix: str | None = None,
                      resource_class: type[TidemarkPipelineResource] = TidemarkPipelineResource,
                      ) -> TidemarkPipelineResource:
    """The default resource for a pipeline file.

    Deployment overrides come from ``EnvVar``s named ``TIDEMARK_<PIPELINE>_<FIELD>`` when they
    are set (e.g. ``TIDEMARK_DEMO_MYSQL_PASSWORD``, ``TIDEMARK_DEMO_STATE_URL``); otherwise the
    pipeline file decides.
    """
    prefix = env_prefix or default_env_prefix(definition)

    def env(name: str) -> Any:
        var = prefix + name
        return EnvVar(var) if os.environ.get(var) else None

    def env_int(name: str) -> Any:
        var = prefix + name
        return EnvVar.int(var) if os.environ.get(var) else None

    return resource_class(
        pipeline_file=str(path),
        mysql=MySqlSourceResource(
            hostname=env("MYSQL_HOST"), port=env_int("MYSQL_PORT"), username=env("MYSQL_USER"),
            password=env("MYSQL_PASSWORD"),
        ),
        doris=DorisSinkResource(fenodes=env("DORIS_FENODES"), username=env("DORIS_USER"),
                                password=env("DORIS_PASSWORD")),
        state=StateStoreResource(url=env("STATE_URL"), state_dir=env("STATE_DIR")),
        pyspark=TidemarkPySparkResource(spark_config=session_config(definition)),
    )
