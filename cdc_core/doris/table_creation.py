"""Doris tables from source schemas: CREATE DATABASE / TABLE, or a check of an existing table.

Layout of a table Tidemark creates (Flink CDC's ``DorisSchemaFactory`` plus the sequence column):

* UNIQUE KEY on the source primary key, key columns first in key order (Doris requires keys to
  lead; when the source has them elsewhere the columns are reordered and a message says so); a
  STRING key becomes ``VARCHAR(65533)`` (Doris keys cannot be STRING); a FLOAT, DOUBLE or JSON
  key column, which Doris cannot key on, is refused by name (:meth:`TableCreator.key_problems`,
  also run at planning and ``validate --connect``).
* No primary key ⇒ still the UNIQUE model (``keyless`` ``exact``, the default): two hidden leading
  key columns, ``__tidemark_row_hash VARCHAR(32)`` and ``__tidemark_row_copy BIGINT``, give each
  row an identity (the hash of its image, which copy of that image it is:
  ``cdc_core/doris/row_identity.py``), so updates and deletes of a table of any shape (FLOAT first
  column, TEXT, BLOB, JSON, duplicate rows) apply exactly; distributed by the hash. With
  ``table.create.keyless: append`` (or for a keyless table with a ``transform:``, whose projected
  images the binlog path cannot hash, or one partitioned in Doris, which partitions a UNIQUE table
  by key columns only) the old form: DUPLICATE model, first column as key and
  distribution key when Doris accepts it as a key (else a duplicate table without keys,
  ``enable_duplicate_without_keys_by_default``, distributed at random), no sequence column,
  deletes dropped, an UPDATE appends its new image.
* ``__tidemark_seq BIGINT`` last, named by ``function_column.sequence_col``: loads carry the
  source position of each row, and Doris keeps the higher one.
* Key columns NOT NULL; value columns nullable (so later MySQL ``MODIFY ... NULL`` never breaks
  loads); column and table comments copied; no DEFAULT clauses (rows always carry every column).
* ``AUTO PARTITION BY ...`` when the table is partitioned (``cdc_core/doris/partitioning.py``:
  a transform's ``partition-keys`` or ``table.create.auto-partition.properties.*``).
* ``DISTRIBUTED BY HASH(keys) BUCKETS AUTO`` and ``PROPERTIES`` from
  ``table.create.properties.*`` (e.g. ``replication_num``), plus
  ``light_schema_change = true`` unless given.

An existing table is used as it is, after checking it can take the source's rows: every source
column present, same key columns for a keyed source. A mismatch raises
:class:`TableMismatchError` naming every difference and the way out.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cdc_core.doris.catalog import DorisCatalog, DorisTableInfo, qualified, quote_ident, quote_string
from cdc_core.doris.errors import TableMismatchError
from cdc_core.doris.names import check_names
from cdc_core.doris.partitioning import PartitionSpec, partition_clause
from cdc_core.doris.row_identity import (
    COPY_DORIS_TYPE,
    HASH_DORIS_TYPE,
    IDENTITY_COLUMNS,
    PLAIN_COMMENT,
    ROW_COPY,
    ROW_HASH,
    SALTED_COMMENT,
)
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.types import doris_type

log = logging.getLogger(__name__)

TypeMapper = Callable[[Column], str]


class KeylessMode(StrEnum):
    """How a table without a primary key is created in Doris (``table.create.keyless``)."""

    EXACT = "exact"  # UNIQUE model keyed by the hidden row identity: updates and deletes apply
    APPEND = "append"  # DUPLICATE model: inserts and updates' new images appended, deletes dropped


def default_type_mapper(tinyint1_as_boolean: bool = True) -> TypeMapper:
    """:func:`~cdc_core.mysql.types.doris_type` (Flink CDC's MySQL → Doris mapping) with the option bound."""
    return lambda column: doris_type(column, tinyint1_as_boolean=tinyint1_as_boolean)


_NOT_KEYABLE = ("STRING", "TEXT", "FLOAT", "DOUBLE", "JSON", "JSONB", "VARIANT", "ARRAY", "MAP", "STRUCT",
                "HLL", "BITMAP", "QUANTILE_STATE", "AGG_STATE")


def _keyable(doris_type: str) -> bool:
    """Whether Doris accepts a column of this type as a key (sort) column."""
    base = doris_type.split("(", 1)[0].strip().upper()
    return base not in _NOT_KEYABLE


@dataclass(frozen=True)
class DorisTable:
    """How rows for one Doris table must be sent: column order, delete sign, sequence column."""

    database: str
    table: str
    columns: tuple[str, ...]
    unique: bool
    sequence_column: str | None
    # a keyless source's exact form: the rows carry the hidden identity columns (row_identity.py)
    row_identity: bool = False
    # the identity hashes the source table's name too (several sources merged into the table)
    identity_salted: bool = False
    # each column's Doris type (``INT``, ``DECIMALV3(10,2)``), as ``columns``: what an Arrow load's
    # columns are cast to (cdc_core/doris/arrow_layout.py); empty: unknown, the table loads JSON
    column_types: tuple[str, ...] = ()

    @property
    def table_id(self) -> TableId:
        return TableId(self.database, self.table)

    @property
    def visible_columns(self) -> tuple[str, ...]:
        """The source's columns: neither the identity columns nor the sequence column."""
        return tuple(c for c in self.columns if c not in IDENTITY_COLUMNS and c != self.sequence_column)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe form (a snapshot job's ``WriterSpec.layouts``); :meth:`from_dict` reads it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DorisTable:
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

    @classmethod
    def from_info(cls, info: DorisTableInfo) -> DorisTable:
        seq = SEQUENCE_COLUMN if info.unique and info.column(SEQUENCE_COLUMN) is not None else None
        cols = tuple(c for c in info.column_names if c != DELETE_SIGN and not c.startswith("__DORIS_"))
        identity = info.unique and [k.lower() for k in info.key_columns] == list(IDENTITY_COLUMNS)
        hash_column = info.column(ROW_HASH)
        salted = identity and hash_column is not None and hash_column.comment == SALTED_COMMENT
        types = tuple(_type_text(info.column(c)) for c in cols)
        return cls(info.database, info.table, cols, info.unique, seq, identity, salted, types)


def _type_text(column: Any) -> str:
    """A column's Doris type as ``arrow_layout`` reads it: ``DECIMALV3(10,2)`` with its digits."""
    if column is None:
        return ""
    if column.precision is not None and "(" not in column.type:
        return f"{column.type}({column.precision},{column.scale or 0})"
    return column.type


class TableCreator:
    """Creates (or checks) the Doris table for a source table."""

    def __init__(self, catalog: DorisCatalog, type_mapper: TypeMapper, *,
                 properties: Mapping[str, str] | None = None, sequence_column: str = SEQUENCE_COLUMN,
                 partition: Callable[[TableId], PartitionSpec | None] | None = None,
                 keyless: KeylessMode = KeylessMode.EXACT, merged: bool = False):
        self.catalog = catalog
        self.keyless = KeylessMode(keyless)
        # the target receives several source tables: a keyless source's identity is salted
        self.merged = merged
        self.type_mapper = type_mapper
        self.properties = dict(properties or {})
        self.sequence_column = sequence_column
        # the partitioning of each target table (cdc_core/doris/partitioning.py); None: unpartitioned
        self.partition = partition or (lambda _target: None)

    # -- DDL text -------------------------------------------------------------------------------

    def row_identity(self, schema: TableSchema) -> bool:
        """Whether ``schema``'s Doris table is keyed by the hidden row identity (a keyless source, exact)."""
        return not schema.primary_key and self.keyless is KeylessMode.EXACT

    def key_columns(self, schema: TableSchema) -> tuple[str, ...]:
        """The Doris key: the primary key, or the identity columns of a keyless source (exact)."""
        if self.row_identity(schema):
            return IDENTITY_COLUMNS
        return tuple(schema.column(k).name for k in schema.primary_key)

    def ordered_columns(self, schema: TableSchema) -> list[Column]:
        if self.row_identity(schema):
            return list(schema.columns)
        keys = self.key_columns(schema)
        key_cols = [schema.column(k) for k in keys]
        rest = [c for c in schema.columns if c.name not in keys]
        ordered = key_cols + rest
        if [c.name for c in ordered] != list(schema.column_names):
            log.info(
                "Doris needs key columns first: %s gets the column order %s (source order %s)",
                schema.table_id, [c.name for c in ordered], list(schema.column_names),
            )
        return ordered

    def doris_type(self, column: Column, *, key: bool) -> str:
        text = self.type_mapper(column)
        if key and text.upper() == "STRING":
            return "VARCHAR(65533)"
        return text

    def key_problems(self, schema: TableSchema, target: TableId) -> list[str]:
        """Each primary-key column whose Doris type Doris cannot key on (FLOAT, DOUBLE, JSON): such a
        table is refused by name before anything is created (planning, ``validate --connect``)."""
        problems = []
        for name in schema.primary_key:
            column = schema.column(name)
            doris = self.doris_type(column, key=True)
            if not _keyable(doris):
                problems.append(
                    f"{schema.table_id}: primary-key column {column.name} is {column.column_type}, a {doris} in Doris, "
                    f"and Doris cannot key a table on {doris.split('(', 1)[0]} (Doris table {target} would be "
                    f"refused). Give {schema.table_id} a transform: rule whose projection casts {column.name} to a "
                    f"type Doris keys on (e.g. `CAST({column.name} AS DECIMAL(38,10)) AS {column.name}`) or "
                    "whose primary-keys name other columns, or leave the table out of the source's tables")
        return problems

    def create_table_ddl(self, schema: TableSchema, target: TableId) -> str:
        if self.row_identity(schema) and self._partitioned_keyless(schema, target):
            # Doris partitions a UNIQUE table by key columns only, and the identity is a hash: a
            # partitioned keyless table keeps the DUPLICATE form (appending, deletes dropped).
            log.warning("%s has no primary key and is partitioned in Doris (%s): Doris partitions unique-key tables "
                        "by key columns only, so it is created as a DUPLICATE table whose updates append rows and "
                        "whose deletes are dropped; give it a primary key (a transform's primary-keys) to have it "
                        "exact", schema.table_id, target)
            append = TableCreator(self.catalog, self.type_mapper, properties=self.properties,
                                  sequence_column=self.sequence_column, partition=self.partition,
                                  keyless=KeylessMode.APPEND)
            return append.create_table_ddl(schema, target)
        keys = self.key_columns(schema)
        identity = self.row_identity(schema)
        lines = []
        if identity:
            lines += [
                f"{quote_ident(ROW_HASH)} {HASH_DORIS_TYPE} NOT NULL COMMENT "
                + quote_string(SALTED_COMMENT if self.merged else PLAIN_COMMENT),
                f"{quote_ident(ROW_COPY)} {COPY_DORIS_TYPE} NOT NULL COMMENT "
                + quote_string("Tidemark: which copy of identical rows this is (0, 1, ...)"),
            ]
        for col in self.ordered_columns(schema):
            is_key = col.name in keys
            parts = [quote_ident(col.name), self.doris_type(col, key=is_key)]
            parts.append("NOT NULL" if is_key else "NULL")
            if col.comment:
                parts.append("COMMENT " + quote_string(col.comment))
            lines.append(" ".join(parts))
        props = dict(self.properties)
        if keys:
            lines.append(
                f"{quote_ident(self.sequence_column)} BIGINT NULL COMMENT "
                + quote_string("Tidemark: source position of the row (sequence column)")
            )
            props.setdefault("function_column.sequence_col", self.sequence_column)
        props.setdefault("light_schema_change", "true")
        ddl = f"CREATE TABLE IF NOT EXISTS {qualified(target.database, target.table)} (\n  "
        ddl += ",\n  ".join(lines) + "\n)"
        if keys:
            ddl += " UNIQUE KEY(" + ", ".join(quote_ident(k) for k in keys) + ")"
        comment = " COMMENT " + quote_string(schema.comment) if schema.comment else ""
        spec = self.partition(target)
        part = ""
        if spec is not None:
            types = {c.name: self.doris_type(c, key=c.name in keys) for c in schema.columns}
            clause = partition_clause(spec, schema, target, keys, types)
            part = " " + clause if clause else ""
        first = schema.columns[0]
        if identity:
            ddl += f"{comment}{part} DISTRIBUTED BY HASH({quote_ident(ROW_HASH)}) BUCKETS AUTO"
        elif keys:
            ddl += comment + part + " DISTRIBUTED BY HASH(" + ", ".join(quote_ident(k) for k in keys) + ") BUCKETS AUTO"
        elif _keyable(self.doris_type(first, key=False)):
            ddl += f" DUPLICATE KEY({quote_ident(first.name)}){comment}{part} DISTRIBUTED BY HASH({quote_ident(first.name)})"
            ddl += " BUCKETS AUTO"
        else:
            # Doris cannot sort by a STRING/FLOAT/JSON first column: a duplicate table without keys.
            props.setdefault("enable_duplicate_without_keys_by_default", "true")
            ddl += comment + part + " DISTRIBUTED BY RANDOM BUCKETS AUTO"
        ddl += " PROPERTIES (" + ", ".join(f"{quote_string(k)} = {quote_string(str(v))}" for k, v in props.items()) + ")"
        return ddl

    def _partitioned_keyless(self, schema: TableSchema, target: TableId) -> bool:
        spec = self.partition(target)
        if spec is None:
            return False
        types = {c.name: self.doris_type(c, key=False) for c in schema.columns}
        return bool(partition_clause(spec, schema, target, (), types))

    # -- ensure ---------------------------------------------------------------------------------

    def ensure(self, schema: TableSchema, target: TableId | None = None, *, absent: bool = False) -> DorisTable:
        """The Doris table for ``schema`` (at ``target``, default the same name), created if missing
        (:meth:`ensure_info`'s table as loads need it)."""
        return DorisTable.from_info(self.ensure_info(schema, target, absent=absent))

    def ensure_info(self, schema: TableSchema, target: TableId | None = None, *,
                    absent: bool = False) -> DorisTableInfo:
        """What Doris says of the table for ``schema`` (at ``target``, default the same name),
        created if missing.

        ``absent``: the caller has just seen that the table does not exist and that its database
        does (``DorisSink.doris_tables``, one statement for a whole database), so neither is asked
        again: a database of hundreds of new tables costs a CREATE and a read of each, not also two
        questions per table. ``CREATE TABLE IF NOT EXISTS`` keeps a table created meanwhile."""
        target = target or schema.table_id
        if not schema.columns:
            raise ValueError(f"source table {schema.table_id} has no columns")
        info = None if absent else self.catalog.table_info(target.database, target.table)
        if info is None:
            check_names(schema.table_id, target, [c.name for c in schema.columns])
            problems = self.key_problems(schema, target)
            if problems:
                raise TableMismatchError("; ".join(problems))
            if not absent and not self.catalog.database_exists(target.database):
                self.catalog.create_database(target.database)
            ddl = self.create_table_ddl(schema, target)
            log.info("creating Doris table %s:\n%s", target, ddl)
            self.catalog.execute(target.database, ddl)
            info = self.catalog.table_info(target.database, target.table)
            if info is None:
                raise TableMismatchError(f"Doris accepted CREATE TABLE {target} but does not show the table")
        else:
            self.check(schema, info)
        return info

    def check(self, schema: TableSchema, info: DorisTableInfo) -> None:
        problems = []
        where = f"{info.database}.{info.table}"
        missing = [c.name for c in schema.columns if info.column(c.name) is None]
        if missing:
            problems.append(f"it has no column(s) {', '.join(missing)}")
        keys = self.key_columns(schema)
        if not schema.primary_key and not (info.unique and [k.lower() for k in info.key_columns] == list(keys)):
            # A keyless source's table created some other way (the DUPLICATE form of earlier releases or
            # of table.create.keyless: append): used as it is, appending.
            if self.row_identity(schema):
                log.warning(
                    "Doris table %s (of %s, which has no primary key) is a %s table: its updates append rows and "
                    "its deletes are dropped; `tidemark resnapshot --table %s` re-creates it exact",
                    where, schema.table_id, info.keys_type or "DUPLICATE", schema.table_id)
            keys = ()
        if keys:
            if not info.unique:
                problems.append(f"it is a {info.keys_type or 'non-UNIQUE'} table, but {schema.table_id} has a "
                                f"primary key ({', '.join(keys)}): updates and deletes need the UNIQUE model")
            elif [k.lower() for k in info.key_columns] != [k.lower() for k in keys]:
                problems.append(f"its key is ({', '.join(info.key_columns)}), the source's primary key is "
                                f"({', '.join(keys)})")
        if problems:
            raise TableMismatchError(
                f"Doris table {where} exists but cannot receive {schema.table_id}: " + "; ".join(problems)
                + f". Drop it to let Tidemark create it, alter it to match, or route {schema.table_id} elsewhere"
            )
        if keys and info.column(self.sequence_column) is None:
            log.warning(
                "Doris table %s has no %s sequence column: a late or replayed load can overwrite newer rows. "
                "Tables Tidemark creates have one", where, self.sequence_column,
            )
