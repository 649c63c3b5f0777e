"""Schema changes applied to Doris, following Flink CDC's ``DorisMetadataApplier`` flows.

Every change checks first whether it is already in place, so re-applying it after a crash
(the schema-change job resumes at APPLYING) is a no-op:

* add column — skipped when the column exists; else light-schema-change check, ``ADD COLUMN``
  with the value MySQL gave the rows it already held (the constant default, or a NOT NULL column's
  implicit one: ``cdc_core/mysql/types/defaults.py``), which the rows already in Doris take (position ignored,
  as the connector does: Doris value columns follow the keys and the sequence column, and
  loads match JSON by name and CSV by Doris's own order);
* drop column — skipped when absent; else check (drop), ``DROP COLUMN``;
* rename column — skipped when the old name is gone and the new one exists; else check (the
  connector checks with ``isDropColumn=true`` on the old name), ``RENAME COLUMN``;
* alter column type — skipped when Doris already has the type, or a type that holds every value
  of the new one (``cdc_core/doris/type_changes.py``: MySQL narrowings, tables made by an older
  mapping); ``MODIFY COLUMN`` keeps the comment, the default Doris has (Doris refuses a modify that
  changes it) and the nullability (Doris cannot make a nullable column NOT NULL, and a nullable
  column holds every value of MySQL's NOT NULL one); Doris's "Nothing is changed" counts as done; a
  change Doris refuses stops the stream naming the table, the column and the ways out;
* column / table comment — ``MODIFY COLUMN ... COMMENT`` / ``MODIFY COMMENT``;
* truncate — ``TRUNCATE TABLE``; drop — ``DROP TABLE IF EXISTS``; create — see
  :class:`TableCreator`; rename table — ``ALTER TABLE ... RENAME`` (skipped when done);
* column moved, table default charset, partition rows — nothing to do (skipped): stream loads
  match columns by name, Doris has no charsets, and partition maintenance is a reload of rows
  (``cdc_core/schema_evolution/derivation.py`` does not even derive them);
* primary key — skipped when the Doris table is a UNIQUE table on exactly the new key; else an
  error naming the table and the way out, because Doris cannot change a table's key columns or
  model: ``tidemark resnapshot --table`` (which re-creates the table at the DDL:
  ``cdc_core/pipeline/schema_change.py``), excluding the table, or excluding ``alter.primary.key``
  to keep the old key.

For a Doris table that merges several source tables (routing), table-wide changes of one
source — truncate, drop table, drop column, rename table — are not applied (the other sources
still own rows and columns there) and the result says so.
"""

from __future__ import annotations

import base64
import logging
import re
from dataclasses import dataclass
from typing import assert_never

from cdc_core.doris.catalog import DorisCatalog, qualified, quote_ident, quote_string
from cdc_core.doris.errors import QueryError, SchemaChangeError
from cdc_core.doris.names import name_problems, table_name_problem
from cdc_core.doris.table_creation import TableCreator, TypeMapper
from cdc_core.doris.type_changes import holds, refused_message
from cdc_core.model import events as ev
from cdc_core.model.schema import TableId
from cdc_core.mysql.types.defaults import added_rows_default
from cdc_core.mysql.types.kinds import TypeKind, kind_of

log = logging.getLogger(__name__)

NOTHING_CHANGED = re.compile(r"nothing is changed", re.IGNORECASE)


@dataclass(frozen=True)
class AppliedChange:
    """What happened: ``applied`` (a statement ran), ``skipped`` (already so), ``ignored`` (not for this table)."""

    outcome: str
    target: TableId
    statement: str | None = None
    reason: str = ""


_TYPE_ALIASES = {"DATETIMEV2": "DATETIME", "DATEV2": "DATE", "DECIMALV3": "DECIMAL", "TEXT": "STRING",
                 "JSONB": "JSON", "DATETIME(0)": "DATETIME"}


_NOW = re.compile(r"^(current_timestamp|now|localtimestamp|localtime)(\(\d*\))?$", re.IGNORECASE)
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


_BITS = re.compile(r"^b'([01]*)'$", re.IGNORECASE)


def default_clause(default: str | None, doris_type: str, *, binary: bool = False) -> str:
    """`` DEFAULT …`` for an added column, so the rows Doris already holds take the value MySQL
    gave its existing rows (Flink CDC's Doris applier passes the default on too).

    ``default`` as ``information_schema.COLUMNS`` shows it (MariaDB quotes strings), from
    :func:`~cdc_core.mysql.types.defaults.added_rows_default` (a NOT NULL column's implicit default, a
    zero date as the epoch). ``binary``: a binary string column, whose Doris values are base64. Empty
    for no default, NULL, a zero date, a JSON column (Doris: "JSONB or VARIANT type column default
    value just support null") or an expression Doris cannot hold (those rows stay NULL).
    """
    if default is None or default.upper() == "NULL" or doris_type.upper().startswith("JSON"):
        return ""
    if _NOW.match(default):
        return " DEFAULT CURRENT_TIMESTAMP" if doris_type.upper().startswith("DATETIME") else ""
    bits = _BITS.match(default)
    if len(default) >= 2 and default[0] == default[-1] == "'":
        text = default[1:-1].replace("''", "'")
    elif _NUMBER.match(default):
        text = default
    elif bits:
        text = str(int(bits.group(1) or "0", 2))
    else:
        return ""
    if text.startswith("0000-00-00"):
        return ""
    if binary:
        if not text.isascii():
            return ""  # information_schema's text of bytes beyond ASCII is not the bytes themselves
        text = base64.b64encode(text.encode("ascii")).decode("ascii")
    if doris_type.upper() == "BOOLEAN":
        text = "false" if text in ("0", "0.0") else "true"
    return " DEFAULT " + quote_string(text)


def _normalize_type(text: str) -> str:
    """Doris type text in one spelling: ``DATETIMEV2(0)`` = ``datetime``, ``STRING`` = ``text``."""
    out = re.sub(r"\s+", "", text.upper())
    for alias, canonical in _TYPE_ALIASES.items():
        out = re.sub(rf"^{re.escape(alias)}(?=\(|$)" if "(" not in alias else rf"^{re.escape(alias)}$", canonical, out)
    return out


class DorisMetadataApplier:
    """Applies ``cdc_core.model.events`` schema changes to Doris tables (one ``match`` over the union)."""

    def __init__(self, catalog: DorisCatalog, creator: TableCreator, type_mapper: TypeMapper | None = None):
        self.catalog = catalog
        self.creator = creator
        self.type_mapper = type_mapper or creator.type_mapper

    def apply(self, event: ev.SchemaChangeEvent, target: TableId | None = None, *, merged: bool = False) -> AppliedChange:
        target = target or event.table_id
        try:
            return self._apply(event, target, merged)
        except QueryError as exc:
            raise SchemaChangeError(
                f"cannot apply {event.type_name} of {event.table_id} to Doris table {target}: {exc.reason}"
                f"\n  statement: {exc.statement}"
            ) from exc

    def _apply(self, event: ev.SchemaChangeEvent, target: TableId, merged: bool) -> AppliedChange:
        db, table = target.database, target.table
        match event:
            case ev.CreateTableEvent():
                if event.schema is None:
                    raise SchemaChangeError(f"create.table of {event.table_id} carries no schema")
                self.creator.ensure(event.schema, target)
                return AppliedChange("applied", target, reason="table ensured")
            case (ev.TruncateTableEvent() | ev.DropTableEvent() | ev.DropColumnEvent()
                  | ev.RenameTableEvent()) if merged:
                return AppliedChange("ignored", target, reason=f"{target} merges several source tables")
            case ev.AddColumnEvent():
                return self._add_column(event, target)
            case ev.DropColumnEvent():
                if not self.catalog.column_exists(db, table, event.column_name):
                    return AppliedChange("skipped", target, reason=f"column {event.column_name} absent")
                self.catalog.check_light_schema_change(db, table, event.column_name, drop=True)
                return self._run(target, f"ALTER TABLE {qualified(db, table)} DROP COLUMN "
                                         f"{quote_ident(event.column_name)}")
            case ev.RenameColumnEvent():
                old_there = self.catalog.column_exists(db, table, event.old_name)
                if not old_there and self.catalog.column_exists(db, table, event.new_name):
                    return AppliedChange("skipped", target, reason=f"column already renamed to {event.new_name}")
                _check_column_name(event.table_id, target, event.new_name)
                self.catalog.check_light_schema_change(db, table, event.old_name, drop=True)
                return self._run(target, f"ALTER TABLE {qualified(db, table)} RENAME COLUMN "
                                         f"{quote_ident(event.old_name)} {quote_ident(event.new_name)}")
            case ev.AlterColumnTypeEvent():
                return self._column_type(event, target)
            case ev.AlterColumnCommentEvent():
                return self._run(target, f"ALTER TABLE {qualified(db, table)} MODIFY COLUMN "
                                         f"{quote_ident(event.column_name)} COMMENT {quote_string(event.comment)}")
            case ev.AlterTableCommentEvent():
                return self._run(target, f"ALTER TABLE {qualified(db, table)} MODIFY COMMENT "
                                         f"{quote_string(event.comment)}")
            case ev.AlterColumnPositionEvent():
                return AppliedChange("skipped", target, reason="stream loads match columns by name: a moved column "
                                                               "needs no Doris change")
            case ev.AlterTableCharsetEvent():
                return AppliedChange("skipped", target, reason="Doris tables have no character set")
            case ev.AlterPrimaryKeyEvent():
                return self._primary_key(event, target)
            case ev.TruncateTableEvent():
                if self.catalog.table_info(db, table) is None:
                    return AppliedChange("skipped", target, reason="table absent")
                return self._run(target, f"TRUNCATE TABLE {qualified(db, table)}")
            case ev.DropTableEvent():
                return self._run(target, f"DROP TABLE IF EXISTS {qualified(db, table)}")
            case ev.RenameTableEvent():
                return self._rename_table(event, target)
            case ev.PartitionRowsEvent():
                return AppliedChange("skipped", target, reason="partition maintenance changes rows, not the schema: "
                                                               "the table is reloaded (cdc_core/pipeline/reload.py)")
            case _:
                assert_never(event)

    def _add_column(self, event: ev.AddColumnEvent, target: TableId) -> AppliedChange:
        db, table = target.database, target.table
        if event.column is None:
            raise SchemaChangeError(f"add.column on {event.table_id} carries no column")
        if self.catalog.column_exists(db, table, event.column.name):
            return AppliedChange("skipped", target, reason=f"column {event.column.name} exists")
        _check_column_name(event.table_id, target, event.column.name)
        self.catalog.check_light_schema_change(db, table, event.column.name, drop=False)
        doris_type = self.type_mapper(event.column)
        binary = kind_of(event.column, tinyint1_as_boolean=False) is TypeKind.BINARY
        stmt = f"ALTER TABLE {qualified(db, table)} ADD COLUMN {quote_ident(event.column.name)} " \
               f"{doris_type}{default_clause(added_rows_default(event.column), doris_type, binary=binary)}"
        if event.column.comment:
            stmt += " COMMENT " + quote_string(event.column.comment)
        return self._run(target, stmt)

    def _column_type(self, event: ev.AlterColumnTypeEvent, target: TableId) -> AppliedChange:
        db, table = target.database, target.table
        if event.column is None:
            raise SchemaChangeError(f"alter.column.type on {event.table_id} carries no column definition")
        name = event.column_name or event.column.name
        info = self.catalog.table_info(db, table)
        current = info.column(name) if info else None
        if current is None:
            raise SchemaChangeError(f"cannot change the type of {target}.{name}: Doris has no such column")
        new_type = self.type_mapper(event.column)
        if current.is_key and new_type.upper() == "STRING":
            new_type = "VARCHAR(65533)"
        current_type = self.catalog.column_types(db, table).get(current.name, current.type)
        if _normalize_type(current_type) == _normalize_type(new_type):
            return AppliedChange("skipped", target, reason=f"{name} is already {new_type}")
        if holds(current_type, new_type):  # a MySQL narrowing, or a table made by an older mapping
            return AppliedChange("skipped", target, reason=f"{name} is {current_type}, which holds every "
                                                           f"value of {new_type}")
        self.catalog.check_light_schema_change(db, table, name, drop=False)
        stmt = f"ALTER TABLE {qualified(db, table)} MODIFY COLUMN {quote_ident(name)} {new_type}"
        if current.is_key:
            # Doris cannot make a nullable column NOT NULL (a keyless table's first column is a nullable
            # key): the key keeps its nullability, which holds every value of a MySQL NOT NULL column too
            stmt += " KEY" + ("" if current.nullable else " NOT NULL")
        existing = self.catalog.column_defaults(db, table).get(current.name)
        if existing is not None:  # Doris refuses a MODIFY that changes (or drops) the column's default
            stmt += " DEFAULT CURRENT_TIMESTAMP" if _NOW.match(existing) else " DEFAULT " + quote_string(existing)
        comment = event.column.comment or current.comment
        if comment:
            stmt += " COMMENT " + quote_string(comment)
        try:
            return self._run(target, stmt)
        except QueryError as exc:
            raise SchemaChangeError(refused_message(event.table_id, target, event.column, current_type, new_type,
                                                    exc.reason or str(exc))) from exc

    def _rename_table(self, event: ev.RenameTableEvent, target: TableId) -> AppliedChange:
        db, table = target.database, target.table
        if event.new_table_id is None:
            raise SchemaChangeError(f"rename.table of {event.table_id} carries no new name")
        new = event.new_table_id
        if new.database != db:
            raise SchemaChangeError(
                f"Doris cannot rename {target} into another database ({new.database}); route the new table instead"
            )
        if self.catalog.table_info(db, table) is None and self.catalog.table_info(db, new.table) is not None:
            return AppliedChange("skipped", target, reason=f"already renamed to {new}")
        problem = table_name_problem(new.table)
        if problem:
            raise SchemaChangeError(f"Doris cannot rename {target} to {new.table}: {problem}; route {new} to a "
                                    f"name Doris takes with a route: rule")
        return self._run(target, f"ALTER TABLE {qualified(db, table)} RENAME {quote_ident(new.table)}")

    def _primary_key(self, event: ev.AlterPrimaryKeyEvent, target: TableId) -> AppliedChange:
        """A source key change: nothing to do if Doris is keyed so already; otherwise Doris cannot
        follow (a table's key columns and model are fixed when it is created)."""
        info = self.catalog.table_info(target.database, target.table)
        new = ", ".join(event.primary_key) or "none"
        if info is None:
            raise SchemaChangeError(f"the primary key of {event.table_id} changed to ({new}), but Doris has no "
                                    f"table {target}")
        if info.unique and [k.lower() for k in info.key_columns] == [k.lower() for k in event.primary_key]:
            return AppliedChange("skipped", target, reason=f"Doris table {target} is keyed on ({new}) already")
        keyed = f"a UNIQUE table keyed on ({', '.join(info.key_columns)})" if info.unique else \
            f"a {info.keys_type or 'non-UNIQUE'} table"
        raise SchemaChangeError(
            f"the primary key of {event.table_id} changed to ({new}), but Doris table {target} is {keyed}, and "
            "Doris cannot change a table's key or model. The way out: `tidemark resnapshot PIPELINE.yaml --table "
            f"{event.table_id}` re-creates Doris table {target} with the new key, reads {event.table_id} again and "
            f"goes on past this DDL; or leave {event.table_id} out of the pipeline (source tables.exclude). To keep "
            "loading by the old key instead, add alter.primary.key to the sink's exclude.schema.changes (rows "
            "that differ only in the new key's columns then overwrite each other in Doris)")

    def _run(self, target: TableId, statement: str) -> AppliedChange:
        try:
            self.catalog.execute(target.database, statement)
        except QueryError as exc:
            if NOTHING_CHANGED.search(exc.reason):
                return AppliedChange("skipped", target, statement, reason="Doris: nothing is changed")
            raise
        log.info("applied to Doris: %s", statement)
        return AppliedChange("applied", target, statement)


def _check_column_name(source: TableId, target: TableId, name: str) -> None:
    """A column name Doris would refuse stops the change with the name and the fix (cdc_core/doris/names.py)."""
    problems = name_problems(source, target, [name])
    if problems:
        raise SchemaChangeError("Doris cannot take this name: " + "; ".join(problems)
                                + f" (or leave {source} out of the pipeline: source tables.exclude)")
