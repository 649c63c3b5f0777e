"""Pipeline files: Flink CDC's format and defaults, ${VAR}, and one-line errors for each kind of mistake."""

from __future__ import annotations

import textwrap

import pytest

from cdc_core.config import PipelineConfigError, load_pipeline, parse_pipeline
from cdc_core.doris.labels import label_prefix

GOOD = """
source:
  type: mysql
  hostname: 127.0.0.1
  port: 3307
  username: cdc
  password: ${MYSQL_PW}
  tables: shop.\\.*, crm.user_[0-9]{1,3}
  tables.exclude: shop.tmp_\\.*
  server-id: 5400-5404
  jdbc.properties.useSSL: false
sink:
  type: doris
  fenodes: 127.0.0.1:8030
  username: root
  password: ""
  table.create.properties.replication_num: 1
  sink.properties.format: json
route:
  - source-table: crm.user_[0-9]+
    sink-table: ods.users
pipeline:
  name: Sync Shop
  parallelism: 4
"""


def parse(text: str, env: dict[str, str] | None = None):
    return parse_pipeline(textwrap.dedent(text), "pipelines/test.yaml", env if env is not None else {"MYSQL_PW": "s3cret"})


def error_of(text: str, env: dict[str, str] | None = None) -> str:
    with pytest.raises(PipelineConfigError) as info:
        parse(text, env)
    message = str(info.value)
    assert "\n" not in message, "errors are one line"
    assert message.startswith("pipelines/test.yaml: "), "errors name the file"
    return message


def test_good_file_keeps_flink_names_and_defaults():
    d = parse(GOOD)
    assert d.source.password.get_secret_value() == "s3cret"
    # unset: sized per table by its row width (cdc_core/mysql/chunk_sizing.py)
    assert d.source.chunk_size is None and d.source.fetch_size == 1024
    assert d.source.distribution_factor_upper == 1000.0 and d.source.distribution_factor_lower == 0.05
    assert d.source.startup_mode == "initial" and d.source.unbounded_chunk_first is False
    assert d.source.heartbeat_interval == 30.0 and d.source.connect_timeout == 30.0
    assert d.source.server_id_range() == (5400, 5404)
    assert d.source.jdbc_properties == {"useSSL": "false"}
    assert d.sink.flush_max_rows == 50000 and d.sink.flush_max_bytes == 10 * 1024 * 1024
    assert d.sink.flush_interval == 10.0 and d.sink.enable_2pc is True
    assert d.sink.table_create_properties == {"replication_num": "1"}
    assert d.sink.stream_load_properties == {"format": "json"}
    assert d.routes[0].sink_table == "ods.users"
    assert d.pipeline.schema_change_behavior == "lenient" and d.pipeline.parallelism == 4
    assert d.name == "sync_shop" and d.state_dir.name == "sync_shop"
    assert d.sink.configured_label_prefix == ""
    assert label_prefix(d.sink.configured_label_prefix, d.name, None) == "tidemark_sync_shop"
    assert label_prefix(d.sink.configured_label_prefix, d.name, "a1b2c3") == "tidemark_sync_shop_a1b2c3"


def test_table_selector_reads_flink_syntax():
    sel = parse(GOOD).source.selector
    assert sel.matches("shop", "orders")
    assert not sel.matches("shop", "tmp_1"), "tables.exclude wins"
    assert sel.matches("crm", "user_12") and not sel.matches("crm", "user_1234")
    assert not sel.matches("shopx", "orders"), "patterns match whole names"


def test_defaults_for_name_and_state_dir(tmp_path, monkeypatch):
    path = tmp_path / "orders_sync.yaml"
    path.write_text(GOOD.replace("  name: Sync Shop\n", ""))
    monkeypatch.chdir(tmp_path)
    d = load_pipeline(path, env={"MYSQL_PW": "x"})
    assert d.name == "orders_sync"
    assert d.state_dir == (tmp_path / ".tidemark/state/orders_sync").resolve()


def test_env_default_syntax():
    d = parse(GOOD.replace("${MYSQL_PW}", "${MYSQL_PW:-fallback}"), env={})
    assert d.source.password.get_secret_value() == "fallback"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        # unknown option, with a suggestion
        (("  port: 3307\n", "  port: 3307\n  scan.incremental.snapshot.chunk.sizes: 10\n"),
         "source.scan.incremental.snapshot.chunk.sizes: unknown option (did you mean 'scan.incremental.snapshot.chunk.size'?)"),
        # missing required option
        (("  hostname: 127.0.0.1\n", ""), "source.hostname: missing required option"),
        (("  fenodes: 127.0.0.1:8030\n", ""), "sink.fenodes: missing required option"),
        # wrong types
        (("  port: 3307\n", "  port: abc\n"), "source.port: expected an integer, got 'abc'"),
        (("  parallelism: 4\n", "  parallelism: many\n"), "pipeline.parallelism: expected an integer, got 'many'"),
        (("  server-id: 5400-5404\n", "  server-id: 5400-5404\n  scan.newly-added-table.enabled: maybe\n"),
         "source.scan.newly-added-table.enabled: expected true or false, got 'maybe'"),
        (("  server-id: 5400-5404\n", "  server-id: 5400-5404\n  heartbeat.interval: soon\n"),
         "source.heartbeat.interval: expected a duration like '30s' or '3min', got 'soon'"),
        (("  parallelism: 4\n", "  parallelism: 4\n  schema.change.behavior: yolo\n"),
         "pipeline.schema.change.behavior: expected one of 'exception', 'evolve', 'try_evolve', 'lenient' or 'ignore', got 'yolo'"),
        # bad regexes
        (("  tables: shop.\\.*, crm.user_[0-9]{1,3}\n", "  tables: shop.(orders\n"),
         "source.tables: bad regex in table pattern 'shop.(orders'"),
        (("  - source-table: crm.user_[0-9]+\n", "  - source-table: crm.user_[0-9+\n"),
         "route[0].source-table: bad regex in table pattern 'crm.user_[0-9+'"),
        (("  tables: shop.\\.*, crm.user_[0-9]{1,3}\n", "  tables: orders\n"),
         "source.tables: table pattern 'orders' must be 'database.table'"),
        # value rules
        (("  server-id: 5400-5404\n", "  server-id: 5404-5400\n"), "source.server-id: range '5404-5400' ends before it starts"),
        (("  parallelism: 4\n", "  parallelism: 0\n"), "pipeline.parallelism: must be greater than or equal to 1, got 0"),
        (("  username: root\n", "  username: root\n  sink.enable-2pc: false\n"),
         "sink.sink.enable-2pc: Tidemark always loads with two-phase commit"),
        (("  parallelism: 4\n", "  parallelism: 4\n  tidemark.state.dirr: /tmp/x\n"),
         "pipeline.tidemark.state.dirr: unknown Tidemark option"),
        # structure
        (("route:\n", "routes:\n"), "routes: unknown block (did you mean 'route'?)"),
        (("  type: doris\n", "  type: kafka\n"), "sink.type: unsupported sink type 'kafka' (supported: doris)"),
    ],
)
def test_each_mistake_gets_one_line_naming_the_key(edit, expected):
    old, new = edit
    assert old in GOOD
    message = error_of(GOOD.replace(old, new, 1))
    assert expected in message


def test_missing_env_var_names_the_variable():
    message = error_of(GOOD, env={})
    assert "source.password: environment variable MYSQL_PW is not set" in message


def test_secret_values_never_appear_in_errors():
    message = error_of(GOOD.replace("  port: 3307\n", "  port: 3307\n  connect.timeout: 0s\n"), env={"MYSQL_PW": "hunter2"})
    assert "hunter2" not in message
    d = parse(GOOD, env={"MYSQL_PW": "hunter2"})
    assert "hunter2" not in repr(d) and "hunter2" not in str(d.source)


def test_bad_yaml_and_missing_blocks():
    assert "not valid YAML" in error_of("source: [unclosed\n")
    assert "sink: missing required block" in error_of("source:\n  type: mysql\n")
    assert "expected a mapping" in error_of("- just\n- a list\n")


def test_missing_file(tmp_path):
    with pytest.raises(PipelineConfigError, match="no such pipeline file"):
        load_pipeline(tmp_path / "nope.yaml")


def test_specific_offset_needs_a_position():
    message = error_of(GOOD.replace("  server-id: 5400-5404\n", "  server-id: 5400-5404\n  scan.startup.mode: specific-offset\n"))
    assert "source.scan.startup.mode: 'specific-offset' needs scan.startup.specific-offset.file and .pos" in message


def test_demo_pipeline_is_valid():
    d = load_pipeline("pipelines/demo.yaml", env={})
    assert d.source.port == 3307 and d.sink.fenodes == "127.0.0.1:8030"
    assert d.source.selector.matches("tidemark_demo", "orders")


TRANSFORM = "transform:\n  - source-table: shop.orders\n"


@pytest.mark.parametrize(
    ("block", "line", "expected"),
    [
        ("pipeline", "execution.runtime-mode: BATCH",
         "pipeline.execution.runtime-mode: Tidemark runs pipelines as streams only; for a one-off copy that ends "
         "after the snapshot use source option scan.startup.mode: snapshot"),
        ("pipeline", "sink.partitioning.strategy: PRIMARY_KEY",
         "pipeline.sink.partitioning.strategy: Tidemark loads each Doris table in one exactly-once stream load"),
        ("pipeline", "local-time-zone: Asia/Shanghai",
         "pipeline.local-time-zone: Tidemark evaluates transform expressions in Spark SQL and does not apply this "
         "option; remove it and set tidemark.spark.conf.spark.sql.session.timeZone"),
        ("pipeline", "transform.decimal.precision.mode: UP_TO_38",
         "pipeline.transform.decimal.precision.mode: Tidemark evaluates transform expressions in Spark SQL"),
        ("transform", "partition-keys: ' , '",
         "transform[0].partition-keys: expected column names separated by ','"),
        ("sink", "sink.buffer-flush.max-rows: 1000",
         "sink.sink.buffer-flush.max-rows: Tidemark does not buffer rows as Flink's Doris sink does"),
        ("sink", "sink.buffer-flush.interval: 1s",
         "sink.sink.buffer-flush.interval: Tidemark does not buffer rows"),
        ("sink", "sink.enable.batch-mode: false", "sink.sink.enable.batch-mode: Tidemark does not buffer rows"),
        ("sink", "charset-encoding: GBK", "sink.charset-encoding: Tidemark sends every load as UTF-8"),
        ("transform", "converter-after-transform: HARD_DELETE",
         "transform[0].converter-after-transform: unknown converter 'HARD_DELETE': Flink CDC defines SOFT_DELETE only"),
        ("transform", "table-options: replication_num",
         "transform[0].table-options: expected 'key=value' items separated by ',', got 'replication_num'"),
    ],
)
def test_flink_options_tidemark_does_not_apply_are_refused_by_name(block, line, expected):
    if block == "sink":
        text = GOOD.replace("  sink.properties.format: json\n", f"  sink.properties.format: json\n  {line}\n")
    elif block == "pipeline":
        text = GOOD.replace("  parallelism: 4\n", f"  parallelism: 4\n  {line}\n")
    else:
        text = GOOD + TRANSFORM + f"    {line}\n"
    assert expected in error_of(text)


def test_the_default_values_of_flink_sink_buffer_options_are_accepted():
    d = parse(GOOD.replace("  sink.properties.format: json\n", "  sink.properties.format: json\n"
                           "  sink.buffer-flush.max-rows: 50000\n  sink.buffer-flush.interval: 10s\n"
                           "  sink.enable.batch-mode: true\n  charset-encoding: utf-8\n"))
    assert d.sink.flush_max_rows == 50000 and d.sink.flush_interval == 10.0 and d.sink.batch_mode


def test_the_default_values_of_honoured_pipeline_options_are_accepted():
    d = parse(GOOD.replace("  parallelism: 4\n", "  parallelism: 4\n  execution.runtime-mode: streaming\n"
                           "  sink.partitioning.strategy: SINK_DEFINED\n"))
    assert d.pipeline.runtime_mode == "STREAMING" and d.pipeline.partitioning_strategy == "SINK_DEFINED"


def test_table_options_become_doris_properties_of_the_matching_tables():
    from cdc_core.doris.sink import _rule_table_options
    from cdc_core.model.schema import TableId

    d = parse(GOOD + TRANSFORM + "    table-options: replication_num=1;compression = zstd\n"
              "    table-options.delimiter: ';'\n")
    assert d.transforms[0].table_properties() == {"replication_num": "1", "compression": "zstd"}
    options = _rule_table_options(d)
    assert options(TableId("shop", "orders")) == {"replication_num": "1", "compression": "zstd"}
    assert options(TableId("shop", "items")) == {}
