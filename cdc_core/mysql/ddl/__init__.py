"""The MySQL/MariaDB DDL parser: binlog DDL text → Flink-style schema-change events.

One module per reason to change: ``tokens`` (the tokenizer and cursor), ``column_types`` (type
text → ``COLUMN_TYPE``/``DATA_TYPE``), ``column_definitions`` (a column definition → ``Column``),
``statement`` (what every statement shares), ``create`` / ``alter`` / ``table_statements`` (the
statements), ``online_schema_change`` (gh-ost / pt-osc), ``parser`` (the entry point).
"""

from cdc_core.mysql.ddl.errors import DdlParseError
from cdc_core.mysql.ddl.online_schema_change import is_shadow_table, shadow_table_of
from cdc_core.mysql.ddl.parser import MySqlDdlParser
from cdc_core.mysql.ddl.statement import IsCaptured, SchemaOf

__all__ = ["DdlParseError", "IsCaptured", "MySqlDdlParser", "SchemaOf", "is_shadow_table", "shadow_table_of"]
