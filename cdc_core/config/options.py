"""The blocks of a pipeline file, with Flink CDC's option names and defaults.

Names and defaults follow Flink CDC's MySQL pipeline source (``MySqlDataSourceOptions``), its
Doris pipeline sink (``DorisDataSinkOptions``) and ``PipelineOptions``. Where Tidemark differs,
the field says so:

* ``sink.enable-2pc`` defaults to true and cannot be turned off: every Tidemark load is a
  two-phase-commit load, that is how it is exactly-once.
* ``pipeline.name`` defaults to the pipeline file's stem (Flink: "Flink CDC Pipeline Job"),
  because the name becomes the state directory and the Dagster asset key prefix.
* Options Tidemark adds live under ``tidemark.`` in the ``pipeline:`` block.

Prefixed pass-through options (``jdbc.properties.*``, ``debezium.*``, ``sink.properties.*``,
``table.create.properties.*``, ``table.create.auto-partition.properties.*``,
``tidemark.spark.conf.*``) are collected into dicts before validation.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)

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


def _lower(value: object) -> object:
    return value.lower() if isinstance(value, str) else value


def _upper(value: object) -> object:
    return value.upper() if isinstance(value, str) else value


def _ssl_mode(value: object) -> object:
    """``VERIFY_CA`` (MySQL's and Connector/J's spelling) reads as ``verify-ca``."""
    return value.lower().replace("_", "-") if isinstance(value, str) else value


# Connector/J's TLS switches, as a Flink CDC file carries them (``jdbc.properties.useSSL: false``),
# are read as the ssl-mode they mean. Its key stores and Debezium's ``debezium.database.ssl.*`` are
# not: Tidemark reads neither block otherwise, so such a setting would be silently ignored; refused
# instead, naming the source option that does it.
_JDBC_SSL_MODES = {"disabled": "disabled", "preferred": "preferred", "required": "required",
                   "verify_ca": "verify-ca", "verify_identity": "verify-identity"}
_FOREIGN_TLS = {
    "trustcertificatekeystoreurl": "ssl-ca (a PEM file)",
    "trustcertificatekeystorepassword": "ssl-ca (a PEM file needs no password)",
    "trustcertificatekeystoretype": "ssl-ca (a PEM file)",
    "clientcertificatekeystoreurl": "a password over ssl-mode: verify-ca (client certificates are not supported)",
    "clientcertificatekeystorepassword": "a password over ssl-mode: verify-ca (client certificates are not supported)",
    "clientcertificatekeystoretype": "a password over ssl-mode: verify-ca (client certificates are not supported)",
    "database.ssl.mode": "ssl-mode",
    "database.ssl.truststore": "ssl-ca (a PEM file)",
    "database.ssl.truststore.password": "ssl-ca (a PEM file needs no password)",
    "database.ssl.keystore": "a password over ssl-mode: verify-ca (client certificates are not supported)",
    "database.ssl.keystore.password": "a password over ssl-mode: verify-ca (client certificates are not supported)",
}


class _Block(BaseModel):
    """A block of options. Cross-option checks raise ``ValueError("<option>: <problem>")``."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True)


class MySqlSourceOptions(_Block):
    """``source:`` with ``type: mysql``."""

    type: Literal["mysql"]
    name: str | None = None
    hostname: str
    port: int = Field(3306, ge=1, le=65535)
    username: str
    password: SecretStr
    tables: TablePatterns
    tables_exclude: TableExclusions | None = Field(None, alias="tables.exclude")
    schema_change_enabled: bool = Field(True, alias="schema-change.enabled")
    server_id: str | None = Field(None, alias="server-id")
    server_time_zone: str | None = Field(None, alias="server-time-zone")
    incremental_snapshot_enabled: bool = Field(True, alias="scan.incremental.snapshot.enabled")
    # Unset: each table's chunks hold ~16 MiB of its rows, 1,024 to 131,072 rows
    # (cdc_core/mysql/chunk_sizing.py); set: that many rows for every table, as in Flink CDC.
    chunk_size: int | None = Field(None, gt=1, alias="scan.incremental.snapshot.chunk.size")
    fetch_size: int = Field(1024, gt=0, alias="scan.snapshot.fetch.size")
    chunk_key_column: ChunkKeyColumns | None = Field(None, alias="scan.incremental.snapshot.chunk.key-column")
    backfill_skip: bool = Field(False, alias="scan.incremental.snapshot.backfill.skip")
    unbounded_chunk_first: bool = Field(False, alias="scan.incremental.snapshot.unbounded-chunk-first.enabled")
    close_idle_reader: bool = Field(False, alias="scan.incremental.close-idle-reader.enabled")
    startup_mode: Annotated[
        Literal["initial", "snapshot", "latest-offset", "earliest-offset", "specific-offset", "timestamp"],
        BeforeValidator(_lower),
    ] = Field("initial", alias="scan.startup.mode")
    startup_file: str | None = Field(None, alias="scan.startup.specific-offset.file")
    startup_pos: int | None = Field(None, ge=0, alias="scan.startup.specific-offset.pos")
    startup_gtid_set: str | None = Field(None, alias="scan.startup.specific-offset.gtid-set")
    startup_skip_events: int | None = Field(None, ge=0, alias="scan.startup.specific-offset.skip-events")
    startup_skip_rows: int | None = Field(None, ge=0, alias="scan.startup.specific-offset.skip-rows")
    startup_timestamp_millis: int | None = Field(None, ge=0, alias="scan.startup.timestamp-millis")
    connect_timeout: Seconds = Field(30.0, alias="connect.timeout")
    connect_max_retries: int = Field(3, ge=0, alias="connect.max-retries")
    connection_pool_size: int = Field(20, ge=1, alias="connection.pool.size")
    heartbeat_interval: Seconds = Field(30.0, alias="heartbeat.interval")
    chunk_meta_group_size: int = Field(1000, gt=1, alias="chunk-meta.group.size")
    distribution_factor_upper: float = Field(
        1000.0, ge=1.0, alias="chunk-key.even-distribution.factor.upper-bound"
    )
    distribution_factor_lower: float = Field(
        0.05, ge=0.0, le=1.0, alias="chunk-key.even-distribution.factor.lower-bound"
    )
    newly_added_table_enabled: bool = Field(False, alias="scan.newly-added-table.enabled")
    binlog_newly_added_table_enabled: bool = Field(False, alias="scan.binlog.newly-added-table.enabled")
    parse_online_schema_changes: bool = Field(False, alias="scan.parse.online.schema.changes.enabled")
    append_only: bool = Field(False, alias="scan.read-changelog-as-append-only.enabled")
    metadata_list: str | None = Field(None, alias="metadata.list")
    include_comments: bool = Field(False, alias="include-comments.enabled")
    tinyint1_as_boolean: bool = Field(True, alias="treat-tinyint1-as-boolean.enabled")
    jdbc_properties: dict[str, str] = Field(default_factory=dict, alias="jdbc.properties.*")
    debezium: dict[str, str] = Field(default_factory=dict, alias="debezium.*")
    # TLS to the server, for every connection Tidemark opens (control queries, chunk scans, the
    # binlog): MySQL's ``--ssl-mode`` values; ``ssl-ca`` a PEM file of the CA(s) to trust (else
    # the system's). ``preferred`` is what MySQL clients and Debezium do by default.
    ssl_mode: Annotated[
        Literal["disabled", "preferred", "required", "verify-ca", "verify-identity"], BeforeValidator(_ssl_mode)
    ] = Field("preferred", alias="ssl-mode")
    ssl_ca: str | None = Field(None, alias="ssl-ca")
    # Client certificates: named so that a user who sets them reads why they are refused.
    ssl_cert: str | None = Field(None, alias="ssl-cert")
    ssl_key: str | None = Field(None, alias="ssl-key")

    @field_validator("ssl_cert", "ssl_key")
    @classmethod
    def _client_certificate(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError(
                "client certificates are not supported: the snapshot's chunk reader (connectorx) cannot "
                "present one; remove the option and authenticate the user by password over "
                "ssl-mode: verify-ca or verify-identity"
            )
        return v

    @model_validator(mode="before")
    @classmethod
    def _jdbc_tls(cls, data: object) -> object:
        """``jdbc.properties.sslMode`` / ``useSSL`` / ``requireSSL`` / ``verifyServerCertificate``
        as the ``ssl-mode`` Connector/J gives them; one that disagrees with ``ssl-mode`` is refused."""
        if not isinstance(data, dict) or not isinstance(data.get("jdbc.properties.*"), dict):
            return data
        props = {k.lower(): (k, str(v).strip().lower()) for k, v in data["jdbc.properties.*"].items()}

        def flag(name: str) -> bool | None:
            if name not in props:
                return None
            key, value = props[name]
            if value not in ("true", "false"):
                raise ValueError(f"jdbc.properties.{key}: expected true or false, got {value!r}")
            return value == "true"

        mode, named = None, None
        if "sslmode" in props:
            named, value = props["sslmode"]
            mode = _JDBC_SSL_MODES.get(value.replace("-", "_"))
            if mode is None:
                raise ValueError(f"jdbc.properties.{named}: expected one of {', '.join(_JDBC_SSL_MODES).upper()}, "
                                 f"got {value!r}")
        else:
            use, require, verify = flag("usessl"), flag("requiressl"), flag("verifyservercertificate")
            if use is False:
                mode = "disabled"
            elif verify:
                mode = "verify-ca"
            elif require:
                mode = "required"
            elif use:
                mode = "preferred"
            named = next((props[n][0] for n in ("usessl", "requiressl", "verifyservercertificate") if n in props),
                         None)
        if mode is None:
            return data
        given = data.get("ssl-mode")
        if given is not None and _ssl_mode(given) != mode:
            raise ValueError(f"jdbc.properties.{named}: means ssl-mode: {mode}, but ssl-mode is {given!r}; "
                             "remove the jdbc property")
        return {**data, "ssl-mode": mode}

    @model_validator(mode="after")
    def _tls(self) -> MySqlSourceOptions:
        for block, alias, options in (("jdbc.properties.", "jdbc", self.jdbc_properties),
                                      ("debezium.", "debezium", self.debezium)):
            for key in options:
                replacement = _FOREIGN_TLS.get(key.lower())
                if replacement is not None:
                    raise ValueError(f"{block}{key}: Tidemark does not read {alias} TLS settings; "
                                     f"remove it and set the source option {replacement}")
        if self.ssl_mode == "disabled" and self.ssl_ca:
            raise ValueError("ssl-ca: has no effect with ssl-mode: disabled; remove one of them")
        if self.ssl_mode in ("preferred", "required") and self.ssl_ca:
            raise ValueError(
                f"ssl-ca: ssl-mode: {self.ssl_mode} does not verify the server's certificate; "
                "set ssl-mode: verify-ca (or verify-identity) to verify it against this CA"
            )
        return self

    @field_validator("connect_timeout")
    @classmethod
    def _connect_timeout(cls, v: float) -> float:
        if v <= 0.25:
            raise ValueError("must be longer than 250ms")
        return v

    @field_validator("server_id")
    @classmethod
    def _server_id(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if not re.fullmatch(r"\s*\d+\s*(-\s*\d+\s*)?", str(v)):
            raise ValueError(f"expected '5400' or a range '5400-5408', got {v!r}")
        lo, _, hi = str(v).partition("-")
        if hi and int(hi) < int(lo):
            raise ValueError(f"range {v!r} ends before it starts")
        return str(v).replace(" ", "")

    @model_validator(mode="after")
    def _startup(self) -> MySqlSourceOptions:
        if self.startup_mode == "specific-offset" and not (
            self.startup_gtid_set or (self.startup_file and self.startup_pos is not None)
        ):
            raise ValueError(
                "scan.startup.mode: 'specific-offset' needs scan.startup.specific-offset.file and .pos, "
                "or scan.startup.specific-offset.gtid-set"
            )
        if self.startup_mode == "timestamp" and self.startup_timestamp_millis is None:
            raise ValueError("scan.startup.mode: 'timestamp' needs scan.startup.timestamp-millis")
        return self

    @property
    def selector(self) -> TableSelector:
        return TableSelector.parse(self.tables, self.tables_exclude)

    def server_id_range(self) -> tuple[int, int]:
        """The inclusive server-id range; Flink's default is a random id in 5400–6400."""
        if self.server_id is None:
            return (5400, 6400)
        lo, _, hi = self.server_id.partition("-")
        return (int(lo), int(hi or lo))


SCHEMA_CHANGE_TYPES = (
    "add.column",
    "alter.column.type",
    "create.table",
    "drop.column",
    "drop.table",
    "rename.column",
    "truncate.table",
    "alter.table.comment",
)


def _scheme_of(node: str) -> str:
    return "https" if node.strip().lower().startswith("https://") else "http"


class DorisSinkOptions(_Block):
    """``sink:`` with ``type: doris``."""

    type: Literal["doris"]
    name: str | None = None
    fenodes: str
    benodes: str | None = None
    jdbc_url: str | None = Field(None, alias="jdbc-url")
    username: str
    password: SecretStr = SecretStr("")
    auto_redirect: bool = Field(False, alias="auto-redirect")
    charset_encoding: str = Field("UTF-8", alias="charset-encoding")
    enable_2pc: bool = Field(True, alias="sink.enable-2pc")
    check_interval_ms: int = Field(10000, ge=0, alias="sink.check-interval")
    max_retries: int = Field(3, ge=0, alias="sink.max-retries")
    buffer_size: int = Field(1024 * 1024, gt=0, alias="sink.buffer-size")
    buffer_count: int = Field(3, gt=0, alias="sink.buffer-count")
    label_prefix: str = Field("", alias="sink.label-prefix")
    enable_delete: bool = Field(True, alias="sink.enable-delete")
    batch_mode: bool = Field(True, alias="sink.enable.batch-mode")
    flush_queue_size: int = Field(2, gt=0, alias="sink.flush.queue-size")
    flush_max_rows: int = Field(50000, gt=0, alias="sink.buffer-flush.max-rows")
    flush_max_bytes: int = Field(10 * 1024 * 1024, gt=0, alias="sink.buffer-flush.max-bytes")
    flush_interval: Seconds = Field(10.0, alias="sink.buffer-flush.interval")
    ignore_update_before: bool = Field(True, alias="sink.ignore.update-before")
    use_cache: bool = Field(False, alias="sink.use-cache")
    include_schema_changes: list[str] | None = Field(None, alias="include.schema.changes")
    exclude_schema_changes: list[str] | None = Field(None, alias="exclude.schema.changes")
    stream_load_properties: dict[str, str] = Field(default_factory=dict, alias="sink.properties.*")
    table_create_properties: dict[str, str] = Field(default_factory=dict, alias="table.create.properties.*")
    table_create_auto_partition_properties: dict[str, str] = Field(
        default_factory=dict, alias="table.create.auto-partition.properties.*"
    )
    # HTTPS: ``fenodes`` (and ``benodes``) written ``https://host:port``; ``ssl-ca`` a PEM file of
    # the CA(s) that signed the FE's and BE's certificates (else the system's trusted CAs).
    ssl_ca: str | None = Field(None, alias="ssl-ca")

    @property
    def https(self) -> bool:
        """The nodes are addressed over HTTPS (``fenodes`` written ``https://…``)."""
        return self.fenodes.strip().lower().startswith("https://")

    @model_validator(mode="after")
    def _scheme(self) -> DorisSinkOptions:
        schemes = {_scheme_of(n) for n in (self.fenodes + "," + (self.benodes or "")).split(",") if n.strip()}
        if len(schemes) > 1:
            raise ValueError("fenodes: every FE and BE node must use the same scheme (all https:// or none)")
        if self.ssl_ca and not self.https:
            raise ValueError("ssl-ca: is only used over HTTPS; write fenodes as 'https://host:port' "
                             "(Doris with enable_https) or remove ssl-ca")
        return self

    # Flink's Doris sink buffers rows and flushes them by these; Tidemark has no such buffer (each
    # binlog batch and each snapshot chunk is one stream load per Doris table), so only the default
    # value is accepted (a copied Flink file keeps working) and any other is refused by name.
    @field_validator("flush_max_rows", "flush_max_bytes", "flush_interval", "batch_mode", "flush_queue_size",
                     "buffer_size", "buffer_count", "check_interval_ms", "use_cache")
    @classmethod
    def _unbuffered(cls, v: object, info: ValidationInfo) -> object:
        if v != cls.model_fields[info.field_name].default:
            raise ValueError(
                "Tidemark does not buffer rows as Flink's Doris sink does and does not apply this option: each "
                "binlog batch (at most pipeline tidemark.binlog.max-events events) and each snapshot chunk "
                "(scan.incremental.snapshot.chunk.size rows) is one stream load per Doris table; remove it")
        return v

    @field_validator("charset_encoding")
    @classmethod
    def _utf8(cls, v: str) -> str:
        if v.replace("-", "").upper() != "UTF8":
            raise ValueError("Tidemark sends every load as UTF-8 (any source charset is decoded first); remove it")
        return v

    @field_validator("enable_2pc")
    @classmethod
    def _two_phase(cls, v: bool) -> bool:
        if not v:
            raise ValueError("Tidemark always loads with two-phase commit (exactly-once); remove the option")
        return v

    @field_validator("fenodes", "benodes")
    @classmethod
    def _fenodes(cls, v: str | None) -> str | None:
        for node in (v or "").split(",") if v is not None else ():
            if not re.fullmatch(r"(?i:https?://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}", node.strip()):
                raise ValueError(f"expected 'host:http_port[,host:http_port]' (or 'https://host:port'), "
                                 f"got {node.strip()!r}")
        return v

    @field_validator("label_prefix")
    @classmethod
    def _label_prefix(cls, v: str) -> str:
        if v and not re.fullmatch(r"[-_A-Za-z0-9:]{1,64}", v):
            raise ValueError(f"label prefix {v!r} may use only letters, digits, '-', '_' and ':' (≤ 64)")
        return v

    @field_validator("include_schema_changes", "exclude_schema_changes", mode="before")
    @classmethod
    def _schema_change_types(cls, v: object) -> object:
        if v is None:
            return v
        items = [s.strip() for s in v.split(",")] if isinstance(v, str) else v
        if not isinstance(items, list):
            raise ValueError("expected a list of schema change types")
        for item in items:
            if not any(t == item or t.startswith(f"{item}.") or t.endswith(f".{item}") for t in SCHEMA_CHANGE_TYPES):
                raise ValueError(f"unknown schema change type {item!r} (known: {', '.join(SCHEMA_CHANGE_TYPES)})")
        return items


class RouteRule(_Block):
    """One ``route:`` entry: source tables (regex) into one sink table."""

    source_table: TablePatterns = Field(alias="source-table")
    sink_table: str = Field(alias="sink-table")
    replace_symbol: str | None = Field(None, alias="replace-symbol")
    description: str | None = None



SOFT_DELETE = "SOFT_DELETE"


class TransformRule(_Block):
    """One ``transform:`` entry: projection and filter for the matching source tables."""

    source_table: TablePatterns = Field(alias="source-table")
    projection: str | None = None
    filter: str | None = None
    primary_keys: str | None = Field(None, alias="primary-keys")
    partition_keys: str | None = Field(None, alias="partition-keys")
    table_options: str | None = Field(None, alias="table-options")
    table_options_delimiter: str = Field(",", alias="table-options.delimiter")
    converter_after_transform: str | None = Field(None, alias="converter-after-transform")
    description: str | None = None

    @field_validator("partition_keys")
    @classmethod
    def _partition_keys(cls, v: str | None) -> str | None:
        if v is not None and not [k for k in v.split(",") if k.strip()]:
            raise ValueError("expected column names separated by ',' (the Doris table's partition columns)")
        return v

    def partition_columns(self) -> tuple[str, ...]:
        """``partition-keys`` as column names (the tables the rule's source tables create are
        partitioned by them: ``cdc_core/doris/partitioning.py``)."""
        return tuple(k.strip().strip("`") for k in (self.partition_keys or "").split(",") if k.strip())

    @field_validator("converter_after_transform")
    @classmethod
    def _converter(cls, v: str | None) -> str | None:
        # Flink CDC's converters after transform: SOFT_DELETE (a delete becomes an upsert of the
        # deleted row, after the projection saw it as '-D'), the only one it defines.
        if v is None:
            return v
        if v.strip().upper() != SOFT_DELETE:
            raise ValueError(f"unknown converter {v!r}: Flink CDC defines {SOFT_DELETE} only (remove the option, "
                             f"or write {SOFT_DELETE})")
        return SOFT_DELETE

    @property
    def soft_delete(self) -> bool:
        """``converter-after-transform: SOFT_DELETE``: deletes reach Doris as upserts of the deleted row."""
        return self.converter_after_transform == SOFT_DELETE

    @model_validator(mode="after")
    def _table_options(self) -> TransformRule:
        self.table_properties()
        return self

    def table_properties(self) -> dict[str, str]:
        """``table-options`` as Doris table properties (``k=v`` items split by the delimiter)."""
        if not self.table_options:
            return {}
        out: dict[str, str] = {}
        for item in self.table_options.split(self.table_options_delimiter):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ValueError(
                    f"table-options: expected 'key=value' items separated by "
                    f"{self.table_options_delimiter!r}, got {item.strip()!r}"
                )
            out[key.strip()] = value.strip()
        return out



class PipelineOptions(_Block):
    """``pipeline:`` — Flink CDC's options plus Tidemark's own under ``tidemark.``."""

    name: str
    parallelism: int = Field(1, ge=1)
    runtime_mode: Annotated[Literal["STREAMING", "BATCH"], BeforeValidator(_upper)] = Field(
        "STREAMING", alias="execution.runtime-mode"
    )
    schema_change_behavior: Annotated[
        Literal["exception", "evolve", "try_evolve", "lenient", "ignore"], BeforeValidator(_lower)
    ] = Field("lenient", alias="schema.change.behavior")
    route_mode: Annotated[Literal["ALL_MATCH", "FIRST_MATCH"], BeforeValidator(_upper)] = Field(
        "ALL_MATCH", alias="route-mode"
    )
    local_time_zone: str | None = Field(None, alias="local-time-zone")
    operator_uid_prefix: str | None = Field(None, alias="operator.uid.prefix")
    schema_operator_rpc_timeout: Seconds = Field(180.0, alias="schema-operator.rpc-timeout")
    partitioning_strategy: Annotated[
        Literal["SINK_DEFINED", "PRIMARY_KEY", "TABLE_ID"], BeforeValidator(_upper)
    ] = Field("SINK_DEFINED", alias="sink.partitioning.strategy")
    decimal_precision_mode: Annotated[Literal["UP_TO_19", "UP_TO_38"] | None, BeforeValidator(_upper)] = Field(
        None, alias="transform.decimal.precision.mode"
    )
    state_dir: str | None = Field(None, alias="tidemark.state.dir")

    @field_validator("runtime_mode")
    @classmethod
    def _runtime_mode(cls, v: str) -> str:
        if v != "STREAMING":
            raise ValueError(
                "Tidemark runs pipelines as streams only; for a one-off copy that ends after the snapshot "
                "use source option scan.startup.mode: snapshot and remove this option"
            )
        return v

    @field_validator("partitioning_strategy")
    @classmethod
    def _partitioning(cls, v: str) -> str:
        if v != "SINK_DEFINED":
            raise ValueError(
                "Tidemark loads each Doris table in one exactly-once stream load per batch (what "
                "SINK_DEFINED means for the Doris sink); remove the option"
            )
        return v

    # Flink CDC uses the next two only for transform expressions; Tidemark evaluates those in
    # Spark SQL, whose own rules apply, so a value set here would be ignored: refused instead.
    @field_validator("local_time_zone")
    @classmethod
    def _local_time_zone(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError(
                "Tidemark evaluates transform expressions in Spark SQL and does not apply this option; remove "
                "it and set tidemark.spark.conf.spark.sql.session.timeZone for the expressions' time zone"
            )
        return v

    @field_validator("decimal_precision_mode")
    @classmethod
    def _decimal_precision_mode(cls, v: str | None) -> str | None:
        if v is not None:
            raise ValueError(
                "Tidemark evaluates transform expressions in Spark SQL, whose DECIMAL arithmetic keeps up to "
                "38 digits, and does not apply this option; remove it"
            )
        return v
    state_url: SecretStr | None = Field(None, alias="tidemark.state.url")
    spark_master: str | None = Field(None, alias="tidemark.spark.master")
    spark_remote: str | None = Field(None, alias="tidemark.spark.remote")
    spark_conf: dict[str, str] = Field(default_factory=dict, alias="tidemark.spark.conf.*")
    # A snapshot chunk of a table without a transform is read and loaded in one Spark task, its
    # rows never entering the JVM (``jobs.fused_chunks``); false sends them through the DataFrame.
    spark_fused_chunk_tasks: bool = Field(True, alias="tidemark.spark.fused-chunk-tasks")
    # A snapshot run of at most this many rows (its chunks × the chunk size), all of tables without
    # a transform, reads and loads its chunks in the driver, one after the other: starting Spark
    # costs ~10 s, more than such a run's work. 0: always Spark.
    snapshot_in_process_rows: int = Field(50_000, ge=0, alias="tidemark.snapshot.in-process-rows")
    # A binlog batch with fewer changes than this (and no transform) is compacted and loaded in the
    # driver: a Spark job costs seconds, which freshness cannot afford. Above the default batch size
    # (``binlog_max_events``), so a batch goes to Spark only when the user raises that: each
    # sensor-launched run is a new process, where Spark would start anew (~10 s) for a batch the
    # driver loads in a fraction of that, and a stream that falls behind would fall further.
    binlog_spark_min_events: int = Field(250_000, ge=0, alias="tidemark.binlog.spark-min-events")
    binlog_max_events: int = Field(200_000, gt=0, alias="tidemark.binlog.max-events")
    # One binlog_stream run applies batch after batch, each committed before the next is read,
    # while the binlog has moved on, for up to this long (``cdc_core/pipeline/stream_run.py``):
    # a run's start (a new process, ~4 s) is paid once, not per batch. Between two runs the rows
    # wait ~5-8 s (sensor tick, run start); 300 s keeps that under 1 % of a steady stream's rows,
    # where 60 s put 3-4 % of them past the single-batch runs' p99 (bench/freshness.py, 200 rows/s).
    # 0: one batch per run.
    binlog_run_seconds: float = Field(300.0, ge=0, alias="tidemark.binlog.run-seconds")
    # Within a run, a batch starts at least this long after the previous one started, so a quiet
    # stream sends Doris at most one load per table and interval (each is a new version to compact).
    binlog_batch_interval_s: float = Field(1.0, ge=0, alias="tidemark.binlog.batch-interval-s")
    # A run that has caught up commits its batch and waits this long for the binlog to move before
    # it ends: a stream whose commits come a fraction of a second apart stays in one run instead
    # of a run per burst, each started anew by the sensor (~5 s between runs; at 200 rows/s in 4
    # commits a second that put p99 at 6.4 s, bench/freshness.py). 0: a caught-up run ends at once.
    binlog_idle_wait_s: float = Field(10.0, ge=0, alias="tidemark.binlog.idle-wait-s")

    @property
    def slug(self) -> str:
        """The name as a directory and Dagster-key friendly identifier."""
        return re.sub(r"[^A-Za-z0-9_]+", "_", self.name).strip("_").lower() or "pipeline"


PREFIXED_OPTIONS = {
    "source": ("jdbc.properties.", "debezium."),
    "sink": ("sink.properties.", "table.create.properties.", "table.create.auto-partition.properties."),
    "pipeline": ("tidemark.spark.conf.",),
}
SECRET_KEYS = {"password", "tidemark.state.url"}
