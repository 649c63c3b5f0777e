"""The typed Spark boundary (``jobs/specs.py``): the specs travel as JSON and pickled without a
password, and a task's sink, made by the driver's factory from the writer spec, makes the driver
sink's labels (epoch included)."""

from __future__ import annotations

import json
import pickle

from cdc_core.config.pipeline import parse_pipeline
from cdc_core.doris.labels import chunk_batch_id, label_prefix
from cdc_core.doris.sink import DorisSink
from cdc_core.model.schema import Column, TableId, TableSchema
from jobs.specs import ChunkSpec, ReadSpec, ResultsSpec, SourceSpec, WriteMode, WriterSpec

MYSQL_SECRET = "my-Secret/42+x"
DORIS_SECRET = "doris-Secret/43+y"
URL_SECRET = "url-Secret/44+z"


def _definition(state: str = "tidemark.state.dir: /tmp/tm-spec-state", prefix: str = ""):
    text = f"""
source: {{type: mysql, hostname: db.local, port: 3307, username: u, password: "{MYSQL_SECRET}", tables: "app.\\\\.*",
          server-id: 5500-5503, ssl-mode: disabled}}
sink:
  type: doris
  fenodes: "127.0.0.1:8030"
  username: root
  password: "{DORIS_SECRET}"
  {prefix}
  sink.properties.format: csv
  table.create.properties.replication_num: "1"
pipeline: {{name: app, {state}}}
"""
    return parse_pipeline(text, "app.yaml", env={})


def _schema() -> TableSchema:
    return TableSchema(TableId("app", "orders"), (Column("id", "int(11)", "int", nullable=False),
                                                   Column("note", "varchar(20)", "varchar")), ("id",))


def test_a_read_spec_round_trips_through_json_and_pickle_without_the_password():
    definition = _definition()
    spec = ReadSpec("app.orders", _schema(), SourceSpec.from_options(definition.source),
                    (ChunkSpec(0, None, (101,), ("id",)), ChunkSpec(1, (101,), None, ("id",))), {"X": "y"})
    assert spec.source.server_id_range == (5500, 5503) and spec.source.port == 3307
    text = spec.to_json()
    assert MYSQL_SECRET not in text and DORIS_SECRET not in text
    assert ReadSpec.from_json(text) == spec
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert json.loads(text)["chunks"][1] == {"index": 1, "start": [101], "end": None, "key_columns": ["id"]}


def test_a_writer_spec_carries_the_sinks_prefix_and_no_secret():
    definition = _definition("tidemark.state.url: " + f'"postgresql://tm:{URL_SECRET}@db/tm"')
    driver = DorisSink.from_pipeline(definition, label_epoch="a1b2c3", type_mapper=str)
    assert driver.label_prefix == "tidemark_app_a1b2c3"
    spec = WriterSpec.create(driver, definition, WriteMode.SNAPSHOT, "app.orders", ["ods.orders"],
                             generations={3: 2})
    assert spec.sink.label_prefix == driver.label_prefix and spec.generation(3) == 2 and spec.generation(4) == 0
    assert spec.results.state_url and URL_SECRET in spec.results.state_url
    assert URL_SECRET not in repr(spec)
    text = spec.to_json()
    for secret in (MYSQL_SECRET, DORIS_SECRET, URL_SECRET):
        assert secret not in text
    back = WriterSpec.from_json(text, spec.results.state_url)
    assert back == spec
    assert WriterSpec.from_json(text).results == ResultsSpec(None, None)
    assert pickle.loads(pickle.dumps(spec)) == spec


def test_a_tasks_sink_makes_the_drivers_labels():
    """The worker's sink (``SinkSpec.build``: ``DorisSink.from_options``) and the driver's
    (``from_pipeline``) are one factory: same options, same effective label prefix."""
    for prefix_line, epoch in (("", "0f0f0f"), ("sink.label-prefix: tm_custom", "beef01"), ("", None)):
        definition = _definition(prefix=prefix_line)
        driver = DorisSink.from_pipeline(definition, label_epoch=epoch, type_mapper=str)
        spec = WriterSpec.create(driver, definition, WriteMode.BINLOG, "app.orders", ["app.orders"], batch_id="b-1-2")
        worker = WriterSpec.from_json(spec.to_json()).sink.build(DORIS_SECRET)
        try:
            assert worker.label_prefix == driver.label_prefix == label_prefix(
                definition.sink.configured_label_prefix, "app", epoch)
            target = TableId("app", "orders")
            assert worker.label(target, chunk_batch_id(5, 1)) == driver.label(target, chunk_batch_id(5, 1))
            assert worker.loader.format == driver.loader.format == "csv"
            assert worker.table_properties == driver.table_properties == {"replication_num": "1"}
            assert worker.enable_delete == driver.enable_delete
        finally:
            worker.close()
            driver.close()


def test_the_label_prefix_is_the_one_it_always_was():
    """Byte-identical to the prefix before it had one owner: ``<sink.label-prefix or tidemark_<name>[:64]>_<epoch>``."""
    assert label_prefix("", "shop", "abc123") == "tidemark_shop_abc123"
    assert label_prefix("tm_x", "shop", "abc123") == "tm_x_abc123"
    assert label_prefix("", "n" * 80, "e") == ("tidemark_" + "n" * 80)[:64] + "_e"
    assert label_prefix("", "shop", None) == "tidemark_shop"


def test_a_writer_spec_carries_the_drivers_layouts_to_the_tasks_sink():
    """The layout the driver read or created travels in the spec (JSON and pickled); a task's sink
    takes it for the target (no schema read of its own) unless it has one cached."""
    import dataclasses

    import pyarrow as pa

    from cdc_core.doris.table_creation import DorisTable
    from jobs.doris_writer import load_chunk

    definition = _definition()
    driver = DorisSink.from_pipeline(definition, label_epoch="e1", type_mapper=str)
    layout = DorisTable("ods", "orders", ("id", "v", "__tidemark_seq"), True, "__tidemark_seq")
    spec = dataclasses.replace(
        WriterSpec.create(driver, definition, WriteMode.SNAPSHOT, "app.orders", ["ods.orders"]),
        layouts={"ods.orders": dataclasses.asdict(layout)})
    for back in (WriterSpec.from_json(spec.to_json(), spec.results.state_url), pickle.loads(pickle.dumps(spec))):
        worker = back.sink.build(DORIS_SECRET)
        empty = pa.table({"id": []})
        worker.committer.abort_label = lambda *a: None  # an empty chunk only aborts a leftover: nothing to reach
        load_chunk(worker, back, {"index": 0}, empty)
        assert worker.table(TableId("ods", "orders")) == layout  # from the spec, never asked of Doris
