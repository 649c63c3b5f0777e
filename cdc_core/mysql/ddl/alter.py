"""``ALTER [ONLINE] [IGNORE] TABLE t spec, spec, ...``: one small function per kind of spec.

:data:`_SPECS` maps a spec's first word to its function; table options, partition maintenance
and the like change no column and are skipped whole. A new spec kind is one more function and
one more entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cdc_core.events import (
    AddColumnEvent,
    AlterColumnCommentEvent,
    AlterColumnTypeEvent,
    AlterTableCommentEvent,
    DropColumnEvent,
    RenameColumnEvent,
    RenameTableEvent,
    SchemaChangeEvent,
)
from cdc_core.mysql.ddl.column_definitions import ColumnDef, is_period_definition
from cdc_core.mysql.ddl.errors import DdlSyntaxError
from cdc_core.mysql.ddl.statement import Statement
from cdc_core.mysql.ddl.tokens import Cursor
from cdc_core.schema import TableId

# Specs that change no column of a captured table: the spec is skipped up to the next ','.
_TABLE_OPTIONS = (
    "ENGINE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "CHARACTER", "CHARSET", "CHECKSUM", "COLLATE", "COMPRESSION",
    "CONNECTION", "DATA", "INDEX", "DELAY_KEY_WRITE", "ENCRYPTION", "ENCRYPTED", "ENCRYPTION_KEY_ID",
    "INSERT_METHOD", "KEY_BLOCK_SIZE", "MAX_ROWS", "MIN_ROWS", "PACK_KEYS", "PASSWORD", "ROW_FORMAT",
    "STATS_AUTO_RECALC", "STATS_PERSISTENT", "STATS_SAMPLE_PAGES", "TABLESPACE", "UNION", "PAGE_CHECKSUM",
    "PAGE_COMPRESSED", "PAGE_COMPRESSION_LEVEL", "TRANSACTIONAL", "IETF_QUOTES", "SEQUENCE", "ALGORITHM", "LOCK",
    "STORAGE", "AUTOEXTEND_SIZE", "ENGINE_ATTRIBUTE", "SECONDARY_ENGINE", "SECONDARY_ENGINE_ATTRIBUTE",
)
_MAINTENANCE = (
    "FORCE", "ENABLE", "DISABLE", "UPGRADE", "WITH", "WITHOUT", "LOCK", "ALGORITHM", "SECONDARY_LOAD",
    "SECONDARY_UNLOAD",
)
# Partition operations and tablespace commands: MySQL's grammar makes each the last thing in its
# ALTER (only ALGORITHM/LOCK may precede it), and they take name lists (``p0, p1``) or ``ALL``,
# so the rest of the statement is theirs. None changes a column.
_STANDALONE = (
    "PARTITION", "REMOVE", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK", "OPTIMIZE", "REBUILD",
    "REPAIR", "TRUNCATE", "DISCARD", "IMPORT",
)
# Partition clauses that may follow the last spec without a comma.
_TRAILING_PARTITION_CLAUSES = (
    "PARTITION", "REMOVE", "ADD", "DROP", "COALESCE", "REORGANIZE", "EXCHANGE", "ANALYZE", "CHECK", "OPTIMIZE",
    "REBUILD", "REPAIR", "TRUNCATE", "DISCARD", "IMPORT",
)
_VERSIONING = "SYSTEM VERSIONING {} hidden row_start/row_end columns; system-versioned tables are not supported"


@dataclass
class _Alter:
    """The ALTER in progress: its statement, its table, and the events so far.

    In one ALTER TABLE every old column name (CHANGE old, MODIFY, DROP, RENAME COLUMN old) names a
    column of the table *as it was before the statement*, while the events are applied one after
    another. ``names`` maps each original name (lower case) to the column's current name, so
    ``CHANGE a b INT, CHANGE b a INT`` swaps; a rename onto a name that a later clause frees goes
    through a temporary name, and ``finish`` gives the column its final name.
    """

    stmt: Statement
    table: TableId
    relevant: bool  # a captured table (or a tracked shadow): unknown columns are errors, not ignored
    events: list[SchemaChangeEvent] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    parked: list[tuple[str, ColumnDef | None, str]] = field(default_factory=list)  # (temp, def, final name)

    def emit(self, event: SchemaChangeEvent) -> None:
        self.stmt.emit(self.events, event)

    def current_name(self, old: str) -> str:
        """Where the column called ``old`` before this statement is now."""
        return self.names.get(old.lower(), old)

    def rename(self, current: str, new: str, d: ColumnDef | None = None) -> bool:
        """Emit the rename of ``current`` to ``new``; False when it had to be parked under a temporary
        name because ``new`` is still taken (by a column a later clause renames away)."""
        origin = next((o for o, c in self.names.items() if c.lower() == current.lower()), current.lower())
        schema = self.stmt.schema(self.table)
        if schema is not None and schema.has_column(new) and new.lower() != current.lower():
            temp = f"__tidemark_rename_{len(self.parked) + 1}"
            self.emit(RenameColumnEvent(self.table, old_name=current, new_name=temp))
            self.names[origin] = temp
            self.parked.append((temp, d, new))
            return False
        self.emit(RenameColumnEvent(self.table, old_name=current, new_name=new))
        self.names[origin] = new
        return True

    def finish(self) -> None:
        """Give parked columns their final names (and their new definitions)."""
        for temp, d, final in self.parked:
            schema = self.stmt.schema(self.table)
            if schema is not None and schema.has_column(final):
                raise DdlSyntaxError(f"ALTER TABLE {self.table}: column {final!r} exists twice after the statement")
            self.emit(RenameColumnEvent(self.table, old_name=temp, new_name=final))
            if d is not None:
                _definition_changed(self, d)
        self.parked.clear()


def parse_alter(stmt: Statement) -> list[SchemaChangeEvent]:
    cur = stmt.cur
    cur.expect_word("ALTER")
    cur.accept("ONLINE")
    cur.accept("IGNORE")
    if not cur.is_word("TABLE"):
        return []
    cur.next()
    cur.accept_seq("IF", "EXISTS")
    t = stmt.table()
    stmt.wait_clause()
    alter = _Alter(stmt, t, stmt.is_relevant(t))
    while not cur.at_end():
        _spec(alter)
        if not cur.accept_punct(","):
            break
    if not cur.at_end() and not cur.is_word(*_TRAILING_PARTITION_CLAUSES):
        raise DdlSyntaxError(f"unexpected {cur.found()} in ALTER TABLE")
    alter.finish()
    return stmt.route_shadow(alter.events)


def _spec(alter: _Alter) -> None:
    cur = alter.stmt.cur
    if cur.is_word(*_SPECS):
        _SPECS[cur.next().up](alter)
    elif cur.is_word(*_STANDALONE):
        _skip_to_statement_end(cur)
    elif cur.accept_seq("ORDER", "BY"):
        _order_by(alter)
    elif cur.is_word(*_TABLE_OPTIONS, *_MAINTENANCE):
        cur.next()
        cur.skip_to_item_end()
    else:
        raise DdlSyntaxError(f"unsupported ALTER TABLE clause starting at {cur.found()}")


def _skip_to_statement_end(cur: Cursor) -> None:
    while not cur.at_end():
        if cur.is_punct("("):
            cur.skip_balanced()
        else:
            cur.next()


def _order_by(alter: _Alter) -> None:
    """``ORDER BY col [ASC|DESC] [, col ...]``: the rows' physical order, no column changes. A comma
    followed by another spec's first word ends the list."""
    cur = alter.stmt.cur
    while True:
        cur.ident()
        cur.accept("ASC", "DESC")
        if not cur.is_punct(",") or cur.is_word(*_SPECS, *_STANDALONE, *_TABLE_OPTIONS, *_MAINTENANCE, k=1):
            return
        cur.next()


def _add(alter: _Alter) -> None:
    """``ADD [COLUMN] [IF NOT EXISTS] def`` or ``ADD (def, ...)``; ``ADD PRIMARY KEY``; keys are skipped."""
    cur, t = alter.stmt.cur, alter.table
    if cur.is_word("SYSTEM"):
        raise DdlSyntaxError("ADD " + _VERSIONING.format("adds"))
    if cur.is_word("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CONSTRAINT", "CHECK") \
            or is_period_definition(cur):
        cur.skip_to_item_end()
        return
    if cur.accept("PRIMARY"):
        cur.expect_word("KEY")
        alter.stmt.set_primary_key(t, alter.stmt.key_columns())
        return
    if cur.is_word("PARTITION"):
        _skip_to_statement_end(cur)
        return
    cur.accept("COLUMN")
    if_not_exists = cur.accept_seq("IF", "NOT", "EXISTS")
    columns = alter.stmt.columns()
    if cur.accept_punct("("):
        defs: list[ColumnDef] = []
        while True:
            if cur.is_word("INDEX", "KEY", "UNIQUE", "PRIMARY", "CONSTRAINT", "FOREIGN", "CHECK"):
                cur.skip_to_item_end()
            else:
                defs.append(columns.parse())
            if cur.accept_punct(","):
                continue
            cur.expect_punct(")")
            break
    else:
        defs = [columns.parse()]
    for d in defs:
        schema = alter.stmt.schema(t)
        if if_not_exists and schema is not None and schema.has_column(d.column.name):
            continue
        alter.emit(AddColumnEvent(t, column=d.column, position=d.position, after=d.after))
        if d.primary_key:
            alter.stmt.set_primary_key(t, [d.column.name])


def _drop(alter: _Alter) -> None:
    """``DROP [COLUMN] [IF EXISTS] c``; ``DROP PRIMARY KEY``; keys, checks, partitions are skipped."""
    cur, t = alter.stmt.cur, alter.table
    if cur.is_word("SYSTEM"):
        raise DdlSyntaxError("DROP " + _VERSIONING.format("removes"))
    if cur.is_word("PARTITION"):
        _skip_to_statement_end(cur)
        return
    if cur.is_word("INDEX", "KEY", "FOREIGN", "CONSTRAINT", "CHECK") or (
            cur.is_word("PERIOD") and cur.is_word("FOR", k=1)):
        cur.skip_to_item_end()
        return
    if cur.accept("PRIMARY"):
        cur.expect_word("KEY")
        alter.stmt.set_primary_key(t, [])
        return
    cur.accept("COLUMN")
    if_exists = cur.accept_seq("IF", "EXISTS")
    name = alter.current_name(cur.ident())
    cur.accept("RESTRICT", "CASCADE")
    schema = alter.stmt.schema(t)
    if if_exists and schema is not None and not schema.has_column(name):
        return
    alter.emit(DropColumnEvent(t, column_name=name))


def _modify(alter: _Alter) -> None:
    """``MODIFY [COLUMN] [IF EXISTS] def``: the column keeps its name."""
    cur = alter.stmt.cur
    cur.accept("COLUMN")
    if_exists = cur.accept_seq("IF", "EXISTS")
    d = alter.stmt.columns().parse()
    _changed(alter, alter.current_name(d.column.name), replace(d, column=replace(
        d.column, name=alter.current_name(d.column.name))), if_exists)


def _change(alter: _Alter) -> None:
    """``CHANGE [COLUMN] [IF EXISTS] old def``: a rename and/or a new definition."""
    cur = alter.stmt.cur
    cur.accept("COLUMN")
    if_exists = cur.accept_seq("IF", "EXISTS")
    old = alter.current_name(cur.ident())
    d = alter.stmt.columns().parse()
    _changed(alter, old, d, if_exists)


def _changed(alter: _Alter, old: str, d: ColumnDef, if_exists: bool) -> None:
    """The events of MODIFY/CHANGE: a rename if the name differs, then a type change or a comment change."""
    t = alter.table
    schema = alter.stmt.schema(t)
    current = schema.column(old) if schema is not None and schema.has_column(old) else None
    if if_exists and schema is not None and current is None:
        return
    new = d.column
    renamed = current.name != new.name if current is not None else old != new.name
    if renamed and not alter.rename(current.name if current else old, new.name, d):
        return  # parked: its definition is applied once it has its final name
    _definition_changed(alter, d, known=current is not None)


def _definition_changed(alter: _Alter, d: ColumnDef, known: bool = True) -> None:
    """A type change or a comment change of the column now called ``d.column.name``."""
    t = alter.table
    schema = alter.stmt.schema(t)
    current = schema.column(d.column.name) if schema is not None and schema.has_column(d.column.name) else None
    new = d.column
    if current is not None and new.charset is None and current.data_type == new.data_type:
        new = replace(new, charset=current.charset)
    if not known or current is None:
        alter.emit(AlterColumnTypeEvent(t, column_name=new.name, column=new))
        return
    type_changed = (current.column_type.lower(), current.nullable, current.default) != (
        new.column_type.lower(), new.nullable, new.default)
    if type_changed:
        alter.emit(AlterColumnTypeEvent(t, column_name=new.name, column=new))
    elif (current.comment or "") != (new.comment or ""):
        alter.emit(AlterColumnCommentEvent(t, column_name=new.name, comment=new.comment))


def _rename(alter: _Alter) -> None:
    """``RENAME COLUMN a TO b``, ``RENAME INDEX`` (skipped), ``RENAME [TO|AS] new_table``."""
    cur, t = alter.stmt.cur, alter.table
    if cur.accept("COLUMN"):
        cur.accept_seq("IF", "EXISTS")
        old = alter.current_name(cur.ident())
        cur.expect_word("TO")
        new = cur.ident()
        if old != new:
            alter.rename(old, new)
        return
    if cur.accept("INDEX", "KEY"):
        cur.skip_to_item_end()
        return
    cur.accept("TO", "AS")
    new_t = alter.stmt.table()
    if new_t != t:
        alter.emit(RenameTableEvent(t, new_table_id=new_t))


def _alter_column(alter: _Alter) -> None:
    """``ALTER [COLUMN] c SET DEFAULT v | DROP DEFAULT | SET [IN]VISIBLE``; ``ALTER INDEX`` is skipped."""
    cur, t = alter.stmt.cur, alter.table
    if cur.is_word("INDEX", "KEY", "CONSTRAINT", "CHECK"):
        cur.skip_to_item_end()
        return
    cur.accept("COLUMN")
    cur.accept_seq("IF", "EXISTS")
    name = cur.ident()
    schema = alter.stmt.schema(t)
    current = schema.column(name) if schema is not None and schema.has_column(name) else None
    if cur.accept_seq("SET", "DEFAULT"):
        if cur.is_punct("("):
            start = cur.peek().start
            cur.skip_balanced()
            default = cur.sql[start + 1:cur.toks[cur.i - 1].end].strip()
        else:
            default = alter.stmt.columns().default()
        if current is not None:
            alter.emit(AlterColumnTypeEvent(t, column_name=current.name, column=replace(current, default=default)))
        elif alter.relevant:
            raise DdlSyntaxError(f"ALTER COLUMN {name} SET DEFAULT on an unknown column")
    elif cur.accept_seq("DROP", "DEFAULT"):
        if current is not None:
            alter.emit(AlterColumnTypeEvent(t, column_name=current.name, column=replace(current, default=None)))
        elif alter.relevant:
            raise DdlSyntaxError(f"ALTER COLUMN {name} DROP DEFAULT on an unknown column")
    elif cur.accept("SET"):
        cur.expect_word("VISIBLE", "INVISIBLE")
    else:
        raise DdlSyntaxError(f"unexpected {cur.found()} after ALTER COLUMN {name}")


def _table_comment(alter: _Alter) -> None:
    """``COMMENT [=] 'text'``."""
    cur = alter.stmt.cur
    cur.accept_punct("=")
    tok = cur.next()
    if tok.kind != "string":
        raise DdlSyntaxError("table COMMENT without a string")
    alter.emit(AlterTableCommentEvent(alter.table, comment=tok.text))


def _convert(alter: _Alter) -> None:
    """``CONVERT TO CHARACTER SET ...``: no event today."""
    cur = alter.stmt.cur
    cur.expect_word("TO")
    cur.skip_to_item_end()


def _table_default(alter: _Alter) -> None:
    """``DEFAULT CHARACTER SET / COLLATE ...`` (the table's defaults): no event today."""
    alter.stmt.cur.skip_to_item_end()


_SPECS: dict[str, Callable[[_Alter], None]] = {
    "ADD": _add,
    "DROP": _drop,
    "MODIFY": _modify,
    "CHANGE": _change,
    "RENAME": _rename,
    "ALTER": _alter_column,
    "COMMENT": _table_comment,
    "CONVERT": _convert,
    "DEFAULT": _table_default,
}
