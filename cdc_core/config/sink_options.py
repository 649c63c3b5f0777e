"""``sink:`` with ``type: doris``: Flink CDC's ``DorisDataSinkOptions``.

Flink's Doris sink buffers rows and flushes them by size and time; Tidemark does not (each batch
and chunk is one stream load per table), so those options accept only their default and refuse any
other by name, as do the ones Tidemark always applies (two-phase commit, UTF-8).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator, model_validator

from cdc_core.config.options import OptionBlock, Seconds

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


class DorisSinkOptions(OptionBlock):
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
    # as written (may be empty); the effective prefix is the sink's (cdc_core/doris/labels.py:label_prefix)
    configured_label_prefix: str = Field("", alias="sink.label-prefix")
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
    # a table without a primary key: "exact" (UNIQUE model keyed by a hidden row identity, updates and
    # deletes applied) or "append" (DUPLICATE model, deletes dropped); cdc_core/doris/table_creation.py
    table_create_keyless: Literal["exact", "append"] = Field("exact", alias="table.create.keyless")
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

    @field_validator("configured_label_prefix")
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
