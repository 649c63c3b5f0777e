"""The ``route:`` and ``transform:`` entries of a pipeline file (Flink CDC's route and transform
rules)."""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from cdc_core.config.options import OptionBlock, TablePatterns


class RouteRule(OptionBlock):
    """One ``route:`` entry: source tables (regex) into one sink table."""

    source_table: TablePatterns = Field(alias="source-table")
    sink_table: str = Field(alias="sink-table")
    replace_symbol: str | None = Field(None, alias="replace-symbol")
    description: str | None = None


SOFT_DELETE = "SOFT_DELETE"


class TransformRule(OptionBlock):
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
