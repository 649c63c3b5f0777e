"""Table identity and table schemas, as value types shared by the source, the sink and the state.

A ``TableSchema`` is what discovery reads from MySQL, what the schema history stores at each
binlog offset, what DDL events transform, and what the Doris sink creates tables from. It keeps
MySQL's own type text (``COLUMN_TYPE``, e.g. ``decimal(10,2) unsigned``) so that conversions can
be decided from the source's truth, not from a lossy intermediate.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True, order=True)
class TableId:
    """``database.table`` as MySQL names it (case preserved)."""

    database: str
    table: str

    @classmethod
    def parse(cls, text: str) -> TableId:
        database, sep, table = text.partition(".")
        if not sep or not database or not table:
            raise ValueError(f"expected 'database.table', got {text!r}")
        return cls(database, table)

    def __str__(self) -> str:
        return f"{self.database}.{self.table}"


@dataclass(frozen=True)
class Column:
    """One column: name and MySQL type exactly as ``information_schema.COLUMNS`` reports them."""

    name: str
    column_type: str  # COLUMN_TYPE, e.g. "bigint(20) unsigned", "varchar(64)", "enum('a','b')"
    data_type: str  # DATA_TYPE, e.g. "bigint", "varchar", "enum"
    nullable: bool = True
    default: str | None = None
    comment: str = ""
    charset: str | None = None
    char_length: int | None = None  # CHARACTER_MAXIMUM_LENGTH
    numeric_precision: int | None = None
    numeric_scale: int | None = None
    datetime_precision: int | None = None

    @property
    def unsigned(self) -> bool:
        return "unsigned" in self.column_type.lower()

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Column:
        return cls(**data)


@dataclass(frozen=True)
class TableSchema:
    """A table's columns in order, its primary key, its comment and its default character set.

    ``charset`` (the charset string columns added without one take; None: unknown) is left out of
    equality: two schemas are equal when their rows are, and a ``CREATE TABLE`` without a charset
    takes the database's default, which the statement does not name.
    """

    table_id: TableId
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...] = ()
    comment: str = ""
    charset: str | None = field(default=None, compare=False)
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name.lower() == name.lower():
                return col
        raise KeyError(
            f"table {self.table_id} has no column {name!r}; its columns are: "
            + ", ".join(c.name for c in self.columns)
        )

    def has_column(self, name: str) -> bool:
        return any(c.name.lower() == name.lower() for c in self.columns)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def with_columns(self, columns: tuple[Column, ...] | list[Column], **changes: Any) -> TableSchema:
        return replace(self, columns=tuple(columns), **changes)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "table_id": str(self.table_id),
            "columns": [c.to_dict() for c in self.columns],
            "primary_key": list(self.primary_key),
            "comment": self.comment,
        }
        if self.charset is not None:
            out["charset"] = self.charset
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableSchema:
        return cls(
            TableId.parse(data["table_id"]),
            tuple(Column.from_dict(c) for c in data["columns"]),
            tuple(data.get("primary_key", ())),
            data.get("comment", ""),
            data.get("charset"),
        )
