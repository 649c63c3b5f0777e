"""``source:`` with ``type: mysql``: Flink CDC's ``MySqlDataSourceOptions``.

Also the TLS settings a Flink CDC file may carry in other blocks: Connector/J's switches
(``jdbc.properties.useSSL`` ...) are read as the ``ssl-mode`` they mean; its key stores and
Debezium's ``debezium.database.ssl.*`` are refused by name, with the source option that does it.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, SecretStr, field_validator, model_validator

from cdc_core.config.options import (
    ChunkKeyColumns,
    OptionBlock,
    Seconds,
    TableExclusions,
    TablePatterns,
    lowercased,
)
from cdc_core.config.selectors import TableSelector


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


class MySqlSourceOptions(OptionBlock):
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
        BeforeValidator(lowercased),
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
