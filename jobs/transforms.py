"""The pipeline's ``transform:`` rules, applied in Spark on the way to Doris.

Flink CDC writes a transform as a projection (a select list) and a filter (a boolean
expression) in a SQL close to Spark SQL, so the expressions are handed to Spark as they are,
after three rewrites:

* ``\\*`` (YAML needs the escape) is ``*``;
* the metadata columns ``__namespace_name__``, ``__schema_name__`` and ``__table_name__`` become
  string literals of the source table; ``__data_event_type__`` is ``'-D'`` for deletes and
  ``'+I'`` otherwise (Tidemark keeps last-change-per-key, so an update reads as ``'+I'``);
* the control columns (delete sign, sequence, chunk bookkeeping) always pass through.

``converter-after-transform: SOFT_DELETE`` (Flink CDC's converter after transform) runs last: a
delete's row (its before-image, filtered and projected like any row, ``__data_event_type__``
``'-D'``) is sent as an upsert, its delete sign cleared. Snapshot rows read ``'+I'``. The
sequence column still orders it, so a later insert of the same key wins over the soft delete.

As in Flink CDC, the first rule whose ``source-table`` matches a table applies to it, and a
filter is evaluated on the row image that is sent (the before-image for a delete). A projection
must keep the primary-key columns unless ``primary-keys`` names the new key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from cdc_core.config.selectors import split_top_level
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.pipeline.context import transform_rule_index

DELETE_SIGN = "__DORIS_DELETE_SIGN__"
_METADATA = ("__namespace_name__", "__schema_name__", "__table_name__", "__data_event_type__")


class TransformError(ValueError):
    """A transform rule that cannot apply to a table; the message names the rule and the fix."""


@dataclass(frozen=True)
class TableTransform:
    table_id: TableId
    projection: tuple[str, ...] | None  # select items, rewritten; None keeps every column
    filter: str | None
    primary_keys: tuple[str, ...] | None
    rule_index: int
    soft_delete: bool = False

    def _rewrite(self, expression: str, has_delete_sign: bool) -> str:
        text = expression.replace("\\*", "*")
        literals = {
            "__namespace_name__": "''",
            "__schema_name__": _sql_string(self.table_id.database),
            "__table_name__": _sql_string(self.table_id.table),
            "__data_event_type__": (
                f"(CASE WHEN `{DELETE_SIGN}` = 1 THEN '-D' ELSE '+I' END)" if has_delete_sign else "'+I'"
            ),
        }
        for name in _METADATA:
            text = re.sub(rf"(?<![\w`]){name}(?![\w`])", literals[name], text)
        return text

    def apply(self, df: Any, control_columns: tuple[str, ...]) -> Any:
        """The DataFrame with the filter and projection applied, control columns kept."""
        present = [c for c in control_columns if c in df.columns]
        has_sign = DELETE_SIGN in df.columns
        if self.filter:
            condition = self._rewrite(self.filter, has_sign)
            # Bookkeeping rows (no data) must survive any user filter.
            if "__tidemark_meta" in df.columns:
                condition = f"(`__tidemark_meta` IS NOT NULL) OR ({condition})"
            df = df.filter(condition)
        if self.projection:
            items = [self._rewrite(item, has_sign) for item in self.projection]
            items += [f"`{c}`" for c in present if not _projects(items, c)]
            df = df.selectExpr(*items)
        if self.soft_delete and has_sign:
            from pyspark.sql import functions as F  # here: the in-process path imports no PySpark

            df = df.withColumn(DELETE_SIGN, F.lit(0).cast(df.schema[DELETE_SIGN].dataType))
        return df


def _sql_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _projects(items: list[str], column: str) -> bool:
    """Whether the select list already yields ``column`` (by name, or through a bare ``*``)."""
    return any(item.strip().strip("`") in (column, "*") for item in items)


def transform_for(definition: Any, table_id: TableId) -> TableTransform | None:
    """The first transform rule of the pipeline that matches ``table_id``, if any."""
    index = transform_rule_index(definition, table_id)
    if index is None:
        return None
    rule = definition.transforms[index]
    projection = tuple(split_top_level(rule.projection, ",")) if rule.projection else None
    keys = tuple(k.strip() for k in rule.primary_keys.split(",")) if rule.primary_keys else None
    return TableTransform(table_id, projection, rule.filter or None, keys, index, soft_delete=rule.soft_delete)


# Spark SQL types of computed columns → a MySQL column type with the same Doris mapping, so the
# one type mapper (cdc_core.mysql.types.doris_type) decides every Doris column type.
_SPARK_TO_MYSQL = {
    "string": ("longtext", "longtext"),
    "boolean": ("tinyint(1)", "tinyint"),
    "tinyint": ("tinyint(4)", "tinyint"),
    "smallint": ("smallint(6)", "smallint"),
    "int": ("int(11)", "int"),
    "bigint": ("bigint(20)", "bigint"),
    "float": ("float", "float"),
    "double": ("double", "double"),
    "date": ("date", "date"),
    "timestamp": ("datetime(6)", "datetime"),
    "timestamp_ntz": ("datetime(6)", "datetime"),
}


def _column_for_spark_field(field: Any) -> Column:
    type_name = field.dataType.simpleString()
    decimal = re.fullmatch(r"decimal\((\d+),(\d+)\)", type_name)
    if decimal:
        p, s = int(decimal.group(1)), int(decimal.group(2))
        return Column(field.name, f"decimal({p},{s})", "decimal", field.nullable, numeric_precision=p,
                      numeric_scale=s)
    if type_name not in _SPARK_TO_MYSQL:
        raise TransformError(
            f"a projected column {field.name!r} has Spark type {type_name}, which Tidemark cannot map "
            "to a Doris column; CAST it to STRING, BIGINT, DOUBLE, DECIMAL(p,s), DATE or TIMESTAMP"
        )
    column_type, data_type = _SPARK_TO_MYSQL[type_name]
    precision = 6 if data_type == "datetime" else None
    return Column(field.name, column_type, data_type, field.nullable, datetime_precision=precision,
                  charset="utf8mb4" if data_type == "longtext" else None)


def transformed_schema(schema: TableSchema, transform: TableTransform, output_fields: list[Any]) -> TableSchema:
    """The Doris-facing schema after a projection: source columns keep their MySQL type, computed
    ones get one from their Spark type. ``output_fields`` is the projected DataFrame's schema."""
    columns = []
    for field in output_fields:
        if field.name.startswith("__tidemark") or field.name == DELETE_SIGN or field.name.startswith("__"):
            continue
        if schema.has_column(field.name) and _is_passthrough(transform, field.name):
            columns.append(schema.column(field.name))
        else:
            columns.append(_column_for_spark_field(field))
    names = {c.name.lower() for c in columns}
    keys = transform.primary_keys or schema.primary_key
    missing = [k for k in keys if k.lower() not in names]
    if missing:
        raise TransformError(
            f"transform[{transform.rule_index}] drops the key column(s) {', '.join(missing)} of {schema.table_id}; "
            "keep them in the projection or name the new key with 'primary-keys'"
        )
    return schema.with_columns(columns, primary_key=tuple(keys))


def _is_passthrough(transform: TableTransform, name: str) -> bool:
    if transform.projection is None:
        return True
    for item in transform.projection:
        bare = item.strip().replace("\\*", "*")
        if bare == "*" or bare.strip("`") == name:
            return True
    return False
