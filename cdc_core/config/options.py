"""The blocks of a pipeline file, with Flink CDC's option names and defaults: what they share.

Names and defaults follow Flink CDC's MySQL pipeline source (``MySqlDataSourceOptions``), its
Doris pipeline sink (``DorisDataSinkOptions``) and ``PipelineOptions``. Where Tidemark differs,
the field says so:

* ``sink.enable-2pc`` defaults to true and cannot be turned off: every Tidemark load is a
  two-phase-commit load, that is how it is exactly-once.
* ``pipeline.name`` defaults to the pipeline file's stem (Flink: "Flink CDC Pipeline Job"),
  because the name becomes the state directory and the Dagster asset key prefix.
* Options Tidemark adds live under ``tidemark.`` in the ``pipeline:`` block.

One module per block: ``source_options.py`` (``source:``, MySQL, with the Connector/J and
Debezium TLS settings it reads or refuses), ``sink_options.py`` (``sink:``, Doris, with the Flink
buffering options it refuses), ``rule_options.py`` (``route:`` and ``transform:`` entries) and
``pipeline_options.py`` (``pipeline:``, Flink's and Tidemark's own). This module holds what they
share: the block base class, the duration and table-pattern types, and the option names the
loader (``pipeline.py``) treats specially.

Prefixed pass-through options (``jdbc.properties.*``, ``debezium.*``, ``sink.properties.*``,
``table.create.properties.*``, ``table.create.auto-partition.properties.*``,
``tidemark.spark.conf.*``) are collected into dicts before validation.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

from cdc_core.config.durations import parse_duration
from cdc_core.config.selectors import SelectorError, TableSelector, parse_chunk_key_columns

Seconds = Annotated[float, BeforeValidator(parse_duration)]


def _selector(value: str) -> str:
    try:
        TableSelector.parse(value)
    except SelectorError as exc:
        raise ValueError(str(exc)) from None
    return value


def _exclusions(value: str) -> str:
    try:
        TableSelector.parse("x.y", value)
    except SelectorError as exc:
        raise ValueError(str(exc)) from None
    return value


def _chunk_keys(value: str) -> str:
    try:
        parse_chunk_key_columns(value)
    except SelectorError as exc:
        raise ValueError(str(exc)) from None
    return value


# Flink CDC's ``db.table`` regex lists, checked when the file is read.
TablePatterns = Annotated[str, AfterValidator(_selector)]
TableExclusions = Annotated[str, AfterValidator(_exclusions)]
ChunkKeyColumns = Annotated[str, AfterValidator(_chunk_keys)]


def lowercased(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def uppercased(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


class OptionBlock(BaseModel):
    """A block of options. Cross-option checks raise ``ValueError("<option>: <problem>")``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True)


PREFIXED_OPTIONS = {
    "source": ("jdbc.properties.", "debezium."),
    "sink": ("sink.properties.", "table.create.properties.", "table.create.auto-partition.properties."),
    "pipeline": ("tidemark.spark.conf.",),
}
SECRET_KEYS = {"password", "tidemark.state.url"}
