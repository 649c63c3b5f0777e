"""Change events: row changes and schema changes, as frozen value types.

Row values are already converted to what the Doris sink sends (``cdc_core.mysql.types``), so a
row reads the same whether it came from a snapshot chunk or from the binlog. ``offset`` is the
event's end position in the binlog (see ``cdc_core.model.offsets``); ``offset.sequence`` feeds
Doris's sequence column.

Schema-change events follow Flink CDC's ``SchemaChangeEventType`` names (``type_name``), which
``include.schema.changes`` / ``exclude.schema.changes`` and ``schema.change.behavior`` use. Three
have no Flink counterpart, because the schema history must follow MySQL where Flink's events do
not reach: a column moved (``MODIFY c INT FIRST``), the primary key changed, the table's default
character set changed. A fourth, ``partition.rows``, is no schema change at all: partition
maintenance that removed or replaced rows without row events, which the stream must reload. Rows
of a server with ``binlog_row_metadata=MINIMAL`` carry no column names: the history names them in
their binlog order and decodes string bytes by its charsets (``cdc_core.mysql.table_map_binding``),
so both must be exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeAlias, get_args

from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema


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
class SchemaChangeBase:
    """The fields every schema change has: DDL on one captured table, read from the binlog at
    ``offset``. Not an event of its own: annotate with :data:`SchemaChangeEvent`, the closed union."""

    table_id: TableId
    offset: BinlogOffset | None = None
    ddl: str | None = None

    type_name = "schema.change"

    def __post_init__(self) -> None:
        if type(self) is SchemaChangeBase:
            raise TypeError("SchemaChangeBase is no event: build one of SCHEMA_CHANGE_EVENTS")


@dataclass(frozen=True)
class CreateTableEvent(SchemaChangeBase):
    """``renamed_from``: the table came into the captured names by a RENAME from one the pipeline does
    not capture (left out by ``tables.exclude``, say), so Doris has none of the rows it holds."""

    schema: TableSchema | None = None
    renamed_from: TableId | None = None
    type_name = "create.table"


@dataclass(frozen=True)
class AddColumnEvent(SchemaChangeBase):
    """``position`` is ``"FIRST"``, ``"AFTER"`` (with ``after``) or ``"LAST"``."""

    column: Column | None = None
    position: str = "LAST"
    after: str | None = None
    type_name = "add.column"


@dataclass(frozen=True)
class DropColumnEvent(SchemaChangeBase):
    column_name: str = ""
    type_name = "drop.column"


@dataclass(frozen=True)
class RenameColumnEvent(SchemaChangeBase):
    old_name: str = ""
    new_name: str = ""
    type_name = "rename.column"


@dataclass(frozen=True)
class AlterColumnTypeEvent(SchemaChangeBase):
    """A column's type (and nullability/default/comment) changed; ``column`` is the new definition."""

    column_name: str = ""
    column: Column | None = None
    type_name = "alter.column.type"


@dataclass(frozen=True)
class AlterColumnPositionEvent(SchemaChangeBase):
    """A column moved (``MODIFY``/``CHANGE ... FIRST | AFTER x``): ``position`` is ``"FIRST"`` or
    ``"AFTER"`` (with ``after``, a column's name after the statement). The source's column order
    changes; Doris loads match columns by name, so it needs no Doris DDL."""

    column_name: str = ""
    position: str = "FIRST"
    after: str | None = None
    type_name = "alter.column.position"


@dataclass(frozen=True)
class AlterPrimaryKeyEvent(SchemaChangeBase):
    """The primary key became ``primary_key`` (empty: dropped). One event per statement, with the
    key as it is after the statement (``DROP PRIMARY KEY, ADD PRIMARY KEY (a, b)`` is one change)."""

    primary_key: tuple[str, ...] = ()
    type_name = "alter.primary.key"


@dataclass(frozen=True)
class AlterTableCharsetEvent(SchemaChangeBase):
    """The table's default character set (``ALTER TABLE t [DEFAULT] CHARACTER SET x``), which
    string columns added later without their own charset take. Existing columns keep theirs
    (``CONVERT TO CHARACTER SET`` changes them with :class:`AlterColumnTypeEvent`\\ s)."""

    charset: str | None = None
    type_name = "alter.table.charset"


@dataclass(frozen=True)
class AlterColumnCommentEvent(SchemaChangeBase):
    column_name: str = ""
    comment: str = ""
    type_name = "alter.column.comment"


@dataclass(frozen=True)
class AlterTableCommentEvent(SchemaChangeBase):
    comment: str = ""
    type_name = "alter.table.comment"


@dataclass(frozen=True)
class TruncateTableEvent(SchemaChangeBase):
    type_name = "truncate.table"


@dataclass(frozen=True)
class PartitionRowsEvent(SchemaChangeBase):
    """Partition maintenance that removed or replaced the table's rows without a row event in
    the binlog: ``TRUNCATE PARTITION``, ``DROP PARTITION``, ``EXCHANGE PARTITION`` (both tables),
    MariaDB's ``CONVERT PARTITION``/``CONVERT TABLE``, ``IMPORT [PARTITION] TABLESPACE``.

    No schema changes and Doris derives nothing from it; the schema change re-reads the table
    (``cdc_core/pipeline/reload.py``), so Doris loses the rows MySQL no longer has and gains the
    rows an exchange brought in. ``operation`` names the clause, for logs.
    """

    operation: str = ""
    type_name = "partition.rows"


@dataclass(frozen=True)
class DropTableEvent(SchemaChangeBase):
    type_name = "drop.table"


@dataclass(frozen=True)
class RenameTableEvent(SchemaChangeBase):
    new_table_id: TableId | None = None
    type_name = "rename.table"


# The closed set of schema changes: a new event class is added here (and to nothing else in this
# package); every consumer dispatches with a ``match`` ending in ``assert_never`` and
# tests/foundation/test_schema_change_dispatch.py fails for each consumer that forgets the new class.
SchemaChangeEvent: TypeAlias = (
    CreateTableEvent
    | AddColumnEvent
    | DropColumnEvent
    | RenameColumnEvent
    | AlterColumnTypeEvent
    | AlterColumnPositionEvent
    | AlterPrimaryKeyEvent
    | AlterTableCharsetEvent
    | AlterColumnCommentEvent
    | AlterTableCommentEvent
    | TruncateTableEvent
    | PartitionRowsEvent
    | DropTableEvent
    | RenameTableEvent
)

SCHEMA_CHANGE_EVENTS: tuple[type[SchemaChangeBase], ...] = get_args(SchemaChangeEvent)
"""Every schema-change event class, once: the union's members in its order."""
