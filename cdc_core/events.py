"""Change events: row changes and schema changes, as frozen value types.

Row values are already converted to what the Doris sink sends (``cdc_core.mysql.types``), so a
row reads the same whether it came from a snapshot chunk or from the binlog. ``offset`` is the
event's end position in the binlog (see ``cdc_core.mysql.offsets``); ``offset.sequence`` feeds
Doris's sequence column.

Schema-change events follow Flink CDC's ``SchemaChangeEventType`` names (``type_name``), which
``include.schema.changes`` / ``exclude.schema.changes`` and ``schema.change.behavior`` use.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cdc_core.mysql.offsets import BinlogOffset
from cdc_core.schema import Column, TableId, TableSchema


class Op(StrEnum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class DataChangeEvent:
    """One row change. ``before`` is None for inserts, ``after`` is None for deletes."""

    table_id: TableId
    op: Op
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    offset: BinlogOffset
    row_index: int = 0  # position of the row within its rows-event (several rows share an offset)
    gtid: str | None = None
    commit_time_ms: int | None = None

    @property
    def row(self) -> dict[str, Any]:
        """The image that identifies the row after the change (before-image for deletes)."""
        return self.after if self.after is not None else self.before  # type: ignore[return-value]


@dataclass(frozen=True)
class SchemaChangeEvent:
    """Base for DDL on one captured table, read from the binlog at ``offset``."""

    table_id: TableId
    offset: BinlogOffset | None = None
    ddl: str | None = None

    type_name = "schema.change"


@dataclass(frozen=True)
class CreateTableEvent(SchemaChangeEvent):
    schema: TableSchema | None = None
    type_name = "create.table"


@dataclass(frozen=True)
class AddColumnEvent(SchemaChangeEvent):
    """``position`` is ``"FIRST"``, ``"AFTER"`` (with ``after``) or ``"LAST"``."""

    column: Column | None = None
    position: str = "LAST"
    after: str | None = None
    type_name = "add.column"


@dataclass(frozen=True)
class DropColumnEvent(SchemaChangeEvent):
    column_name: str = ""
    type_name = "drop.column"


@dataclass(frozen=True)
class RenameColumnEvent(SchemaChangeEvent):
    old_name: str = ""
    new_name: str = ""
    type_name = "rename.column"


@dataclass(frozen=True)
class AlterColumnTypeEvent(SchemaChangeEvent):
    """A column's type (and nullability/default/comment) changed; ``column`` is the new definition."""

    column_name: str = ""
    column: Column | None = None
    type_name = "alter.column.type"


@dataclass(frozen=True)
class AlterColumnCommentEvent(SchemaChangeEvent):
    column_name: str = ""
    comment: str = ""
    type_name = "alter.column.comment"


@dataclass(frozen=True)
class AlterTableCommentEvent(SchemaChangeEvent):
    comment: str = ""
    type_name = "alter.table.comment"


@dataclass(frozen=True)
class TruncateTableEvent(SchemaChangeEvent):
    type_name = "truncate.table"


@dataclass(frozen=True)
class DropTableEvent(SchemaChangeEvent):
    type_name = "drop.table"


@dataclass(frozen=True)
class RenameTableEvent(SchemaChangeEvent):
    new_table_id: TableId | None = None
    type_name = "rename.table"
