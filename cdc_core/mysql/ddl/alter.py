"""``ALTER [ONLINE] [IGNORE] TABLE t spec, spec, ...``: one small function per kind of spec.

:data:`_SPECS` maps a spec's first word to its function; table options and the like change no
column and are skipped whole. A new spec kind is one more function and one more entry.

Why one module of ~600 lines: the spec functions are one statement's grammar over one shared state,
:class:`_Alter` (the original-name map, the renames parked under temporary names, the primary key
after the statement), and they call one another: a ``CHANGE`` is a rename, a definition change and
a move, and ``_Alter.finish`` calls back into the last two for the parked columns. Split by spec
kind, each part would import the others' private helpers and the state class both ways; kept
together, an ALTER reads top to bottom, as ``create.py`` does for CREATE TABLE.

Partition maintenance changes no column either, but some of it removes or replaces rows with no
row event in the binlog (``TRUNCATE``/``DROP``/``EXCHANGE``/``CONVERT PARTITION``, ``IMPORT
TABLESPACE``): those give a :class:`PartitionRowsEvent` per table whose rows changed, so the
schema change reloads the table (:func:`_partition_clause`). The others (``ADD``, ``REORGANIZE``,
``COALESCE``, ``REBUILD``, ``ANALYZE``, ``OPTIMIZE``, ``CHECK``, ``REPAIR``, ``REMOVE
PARTITIONING``, ``PARTITION BY``) keep every row, which MySQL checks (a row that fits no new
partition fails the statement), and give nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from cdc_core.model.events import (
    AddColumnEvent,
    AlterColumnCommentEvent,
    AlterColumnPositionEvent,
    AlterColumnTypeEvent,
    AlterPrimaryKeyEvent,
    AlterTableCharsetEvent,
    AlterTableCommentEvent,
    CreateTableEvent,
    DropColumnEvent,
    DropTableEvent,
    PartitionRowsEvent,
    RenameColumnEvent,
    RenameTableEvent,
    SchemaChangeEvent,
)
from cdc_core.model.schema import Column, TableId
from cdc_core.mysql.ddl.column_definitions import (
    ColumnDef,
    charset_name,
    charset_of_collation,
    is_period_definition,
    with_literal_members,
)
from cdc_core.mysql.ddl.column_types import STRING_TYPES, converted_column
from cdc_core.mysql.ddl.errors import DdlSyntaxError
from cdc_core.mysql.ddl.statement import Statement
from cdc_core.mysql.ddl.tokens import Cursor

# Table options: a run of them (up to the next ',') is read by ``_table_options``, which keeps the
# default charset and the comment; the others change no column of a captured table.
_TABLE_OPTIONS = (
    "DEFAULT", "COMMENT", "CHAR", "ENGINE", "AUTO_INCREMENT", "AVG_ROW_LENGTH", "CHARACTER", "CHARSET", "CHECKSUM",
    "COLLATE", "COMPRESSION",
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

    Column positions (``FIRST`` / ``AFTER x``) are applied clause by clause, in statement order,
    against the columns as the earlier clauses left them, with ``x`` a name after the statement:
    MariaDB places them the same way (``tests/binlog/test_ddl_as_mysql_reads_it.py`` compares).
    Primary-key changes are gathered in ``pk`` (the key after the statement, in its final names)
    and become one :class:`AlterPrimaryKeyEvent` at the end.
    """

    stmt: Statement
    table: TableId
    relevant: bool  # a captured table (or a tracked shadow): unknown columns are errors, not ignored
    events: list[SchemaChangeEvent] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    parked: list[tuple[str, ColumnDef | None, str]] = field(default_factory=list)  # (temp, def, final name)
    pk: list[str] | None = None  # the primary key after the statement, when a clause changes it

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
                _moved(self, d)
        self.parked.clear()
        if self.pk is not None:
            schema = self.stmt.schema(self.table)
            if schema is None or [k.lower() for k in schema.primary_key] != [k.lower() for k in self.pk]:
                self.emit(AlterPrimaryKeyEvent(self.table, primary_key=tuple(self.pk)))


def parse_alter(stmt: Statement) -> list[SchemaChangeEvent]:
    cur = stmt.cur
    cur.expect_word("ALTER")
    cur.accept("ONLINE")
    cur.accept("IGNORE")
    if not cur.is_word("TABLE"):
        return []
    cur.next()
    if_exists = cur.accept_seq("IF", "EXISTS")
    t = stmt.table()
    if if_exists and stmt.schema(t) is None:
        return []  # the server did nothing: the table does not exist
    stmt.wait_clause()
    alter = _Alter(stmt, t, stmt.is_relevant(t))
    while not cur.at_end():
        _spec(alter)
        if not cur.accept_punct(","):
            break
    if not cur.at_end() and not cur.is_word(*_TRAILING_PARTITION_CLAUSES):
        raise DdlSyntaxError(f"unexpected {cur.found()} in ALTER TABLE")
    if not cur.at_end():
        _partition_clause(alter)
    alter.finish()
    return stmt.route_shadow(alter.events)


def _spec(alter: _Alter) -> None:
    cur = alter.stmt.cur
    if cur.is_word(*_SPECS):
        _SPECS[cur.next().up](alter)
    elif cur.is_word(*_STANDALONE):
        _partition_clause(alter)
    elif cur.accept_seq("ORDER", "BY"):
        _order_by(alter)
    elif cur.is_word(*_TABLE_OPTIONS):
        _table_options(alter)
    elif cur.is_word(*_MAINTENANCE):
        cur.next()
        cur.skip_to_item_end()
    else:
        raise DdlSyntaxError(f"unsupported ALTER TABLE clause starting at {cur.found()}")


def _partition_clause(alter: _Alter) -> None:
    """A partition (or tablespace) clause, the last thing in its ALTER: the rest of the statement.

    A clause that removes or replaces rows without row events gives a :class:`PartitionRowsEvent`
    for each table whose rows it changed; the parser's caller keeps those of captured tables.
    """
    cur = alter.stmt.cur
    word = cur.peek().up
    if word == "TRUNCATE":
        _rows_changed(alter, alter.table, "TRUNCATE PARTITION")
    elif word == "DROP" and cur.is_word("PARTITION", k=1):
        _rows_changed(alter, alter.table, "DROP PARTITION")
    elif word == "IMPORT":
        _rows_changed(alter, alter.table, "IMPORT TABLESPACE")
    elif word == "EXCHANGE":
        cur.next()
        cur.expect_word("PARTITION")
        cur.ident()
        cur.expect_word("WITH")
        cur.expect_word("TABLE")
        other = alter.stmt.table()
        _rows_changed(alter, alter.table, "EXCHANGE PARTITION")
        _rows_changed(alter, other, "EXCHANGE PARTITION")
    _skip_to_statement_end(cur)


def _rows_changed(alter: _Alter, table: TableId, operation: str) -> None:
    alter.emit(PartitionRowsEvent(table, operation=operation))


def _convert_partition(alter: _Alter) -> None:
    """MariaDB's ``CONVERT PARTITION p TO TABLE x`` (the partition's rows leave for a new table
    ``x``) and ``CONVERT TABLE x TO PARTITION p VALUES ...`` (table ``x``'s rows join as a partition
    and ``x`` is gone): no row event either way."""
    cur, t = alter.stmt.cur, alter.table
    if cur.accept("PARTITION"):
        cur.ident()
        cur.expect_word("TO")
        cur.expect_word("TABLE")
        new = alter.stmt.table()
        _rows_changed(alter, t, "CONVERT PARTITION")
        if alter.stmt.captured(new):
            schema = alter.stmt.schema(t)
            if schema is None:
                raise DdlSyntaxError(f"a partition of {t} becomes the captured table {new}, but the schema of {t} "
                                     "is unknown")
            alter.emit(CreateTableEvent(new, schema=replace(schema, table_id=new)))
    else:
        cur.expect_word("TABLE")
        old = alter.stmt.table()
        _rows_changed(alter, t, "CONVERT TABLE TO PARTITION")
        alter.emit(DropTableEvent(old))
    _skip_to_statement_end(cur)


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
        while cur.accept_punct("."):  # t1.id, db.t1.id
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
    if cur.accept("CONSTRAINT"):
        cur.accept_seq("IF", "NOT", "EXISTS")
        if not cur.is_word("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
            cur.ident()  # the constraint's name
        if not cur.is_word("PRIMARY"):
            cur.skip_to_item_end()
            return
    if cur.is_word("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK") \
            or is_period_definition(cur):
        cur.skip_to_item_end()
        return
    if cur.accept("PRIMARY"):
        cur.expect_word("KEY")
        alter.pk = alter.stmt.key_columns()
        return
    if cur.is_word("PARTITION"):
        _skip_to_statement_end(cur)
        return
    cur.accept("COLUMN")
    if_not_exists = cur.accept_seq("IF", "NOT", "EXISTS")
    columns = alter.stmt.columns()
    listed_pk: list[str] | None = None
    if cur.accept_punct("("):
        defs: list[ColumnDef] = []
        while True:
            # ADD (..., [CONSTRAINT [name]] PRIMARY KEY [name] (cols), ...) declares the key too
            if cur.accept("CONSTRAINT") and not cur.is_word("PRIMARY", "UNIQUE", "FOREIGN", "CHECK"):
                cur.ident()
            if cur.accept("PRIMARY"):
                cur.expect_word("KEY")
                listed_pk = alter.stmt.key_columns()
            elif cur.is_word("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CHECK"):
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
        column = _literal_members(alter, d, _with_table_charset(d.column, schema.charset if schema is not None else None))
        alter.emit(AddColumnEvent(t, column=column, position=d.position, after=d.after))
        if d.primary_key:
            alter.pk = [d.column.name]
    if listed_pk is not None:
        alter.pk = listed_pk


def _drop(alter: _Alter) -> None:
    """``DROP [COLUMN] [IF EXISTS] c``; ``DROP PRIMARY KEY``; keys, checks, partitions are skipped."""
    cur, t = alter.stmt.cur, alter.table
    if cur.is_word("SYSTEM"):
        raise DdlSyntaxError("DROP " + _VERSIONING.format("removes"))
    if cur.is_word("PARTITION"):
        _rows_changed(alter, t, "DROP PARTITION")
        _skip_to_statement_end(cur)
        return
    if cur.is_word("INDEX", "KEY", "CONSTRAINT"):
        # ``DROP INDEX `PRIMARY``` and MariaDB's ``DROP CONSTRAINT `PRIMARY``` drop the primary key
        cur.next()
        cur.accept_seq("IF", "EXISTS")
        if cur.peek() is not None and cur.peek().kind in ("ident", "word") and cur.peek().text.upper() == "PRIMARY":
            alter.pk = []
        cur.skip_to_item_end()
        return
    if cur.is_word("FOREIGN", "CHECK") or (cur.is_word("PERIOD") and cur.is_word("FOR", k=1)):
        cur.skip_to_item_end()
        return
    if cur.accept("PRIMARY"):
        cur.expect_word("KEY")
        alter.pk = []
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
    if d.primary_key:
        alter.pk = [new.name]
    renamed = current.name != new.name if current is not None else old != new.name
    if renamed and not alter.rename(current.name if current else old, new.name, d):
        return  # parked: its definition (and position) is applied once it has its final name
    _definition_changed(alter, d, known=current is not None)
    _moved(alter, d)


def _moved(alter: _Alter, d: ColumnDef) -> None:
    """``FIRST`` / ``AFTER x`` of a MODIFY or CHANGE: the column moves (no event when it is
    already there)."""
    if d.position not in ("FIRST", "AFTER"):
        return
    t, name = alter.table, d.column.name
    schema = alter.stmt.schema(t)
    if schema is not None and schema.has_column(name):
        names = [c.name.lower() for c in schema.columns]
        at = names.index(name.lower())
        others = names[:at] + names[at + 1:]
        if d.position == "FIRST":
            to = 0
        elif d.after is not None and d.after.lower() in others:
            to = others.index(d.after.lower()) + 1
        elif alter.relevant:
            raise DdlSyntaxError(f"ALTER TABLE {t}: column {name!r} is moved AFTER {d.after!r}, which {t} "
                                 "does not have")
        else:
            return
        if to == at:
            return
    alter.emit(AlterColumnPositionEvent(t, column_name=name, position=d.position, after=d.after))


def _definition_changed(alter: _Alter, d: ColumnDef, known: bool = True) -> None:
    """A type change or a comment change of the column now called ``d.column.name``."""
    t = alter.table
    schema = alter.stmt.schema(t)
    current = schema.column(d.column.name) if schema is not None and schema.has_column(d.column.name) else None
    new = _with_table_charset(d.column, schema.charset if schema is not None else None)
    if current is not None and new.charset is None and new.data_type in STRING_TYPES and new.data_type != "json" \
            and current.data_type in STRING_TYPES:
        new = replace(new, charset=current.charset)  # the table's default is unknown: the column's is the guess
    new = _literal_members(alter, d, new)
    key = alter.pk if alter.pk is not None else (schema.primary_key if schema is not None else ())
    if new.name.lower() in (k.lower() for k in key):
        new = replace(new, nullable=False)  # a key column is NOT NULL whether the definition says so or not
    if not known or current is None:
        alter.emit(AlterColumnTypeEvent(t, column_name=new.name, column=new))
        return
    type_changed = (current.column_type.lower(), current.nullable, _default(current), current.charset) != (
        new.column_type.lower(), new.nullable, _default(new), new.charset)
    if type_changed:
        alter.emit(AlterColumnTypeEvent(t, column_name=new.name, column=new))
    elif (current.comment or "") != (new.comment or ""):
        alter.emit(AlterColumnCommentEvent(t, column_name=new.name, comment=new.comment))


def _default(column: Column) -> str | None:
    """The column's default, with MariaDB's ``NULL`` (how information_schema shows "no default" of a
    nullable column) as None; a string default is quoted, so ``'NULL'`` stays itself."""
    return None if column.default is None or column.default.upper() == "NULL" else column.default


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


def _comment_value(alter: _Alter) -> None:
    tok = alter.stmt.cur.next()
    if tok.kind != "string":
        raise DdlSyntaxError("table COMMENT without a string")
    alter.emit(AlterTableCommentEvent(alter.table, comment=tok.text))


def _literal_members(alter: _Alter, d: ColumnDef, column: Column) -> Column:
    """``column`` with the hex/bit-literal ENUM/SET members of its definition decoded in the charset it
    took from the table; refused by name when that is unknown (Tidemark does not guess it)."""
    if d.literal_members is None:
        return column
    if column.charset is None:
        raise DdlSyntaxError(
            f"column {column.name!r} of {alter.table} is an ENUM/SET whose members are hex or bit literals, read "
            "in the table's default character set, which Tidemark does not know here, and it does not guess it. "
            f"The way out: leave {alter.table} out of the pipeline (source tables.exclude: {alter.table}) and run again")
    return with_literal_members(column, *d.literal_members, alter.stmt.mariadb)


def _with_table_charset(column: Column, table_charset: str | None) -> Column:
    """A string column defined without a charset takes the table's default (MySQL does so for ADD,
    MODIFY and CHANGE alike); JSON has none of its own to take."""
    if column.charset is None and table_charset is not None and column.data_type in STRING_TYPES \
            and column.data_type != "json":
        if table_charset == "binary":  # VARCHAR becomes VARBINARY, TEXT BLOB, as the server makes them
            return converted_column(column, table_charset)
        return replace(column, charset=table_charset)
    return column


def _charset_word(cur: Cursor) -> bool:
    """``CHARSET``, ``CHARACTER SET`` or ``CHAR SET`` at the cursor (consumed)."""
    return cur.accept("CHARSET") or cur.accept_seq("CHARACTER", "SET") or cur.accept_seq("CHAR", "SET")


def _set_table_charset(alter: _Alter, charset: str | None) -> None:
    schema = alter.stmt.schema(alter.table)
    if schema is None or schema.charset != charset:
        alter.emit(AlterTableCharsetEvent(alter.table, charset=charset))


def _convert(alter: _Alter) -> None:
    """``CONVERT TO CHARACTER SET x [COLLATE y]``: every character column takes ``x`` (TEXT types
    widened as the server widens them, see ``column_types.converted_column``), and so does the
    table's default. ``CONVERT PARTITION`` / ``CONVERT TABLE`` are MariaDB's partition moves."""
    cur, t = alter.stmt.cur, alter.table
    if cur.is_word("PARTITION", "TABLE"):
        _convert_partition(alter)
        return
    cur.expect_word("TO")
    if not _charset_word(cur):
        raise DdlSyntaxError(f"expected CHARACTER SET after CONVERT TO, found {cur.found()}")
    cur.accept_punct("=")
    name = cur.ident()
    if cur.accept("COLLATE"):
        cur.accept_punct("=")
        cur.ident()
    schema = alter.stmt.schema(t)
    if name.lower() == "default":
        if alter.relevant:
            raise DdlSyntaxError(
                f"ALTER TABLE {t} CONVERT TO CHARACTER SET DEFAULT converts its columns to the database's default "
                "character set, which the statement does not name, so the charsets its rows must be decoded with "
                f"are unknown, and Tidemark does not guess them. The way out: leave {t} out of the pipeline "
                f"(source tables.exclude: {t}) and run again")
        return
    charset = charset_name(name)
    for column in schema.columns if schema is not None else ():
        new = converted_column(column, charset, mariadb=alter.stmt.mariadb)
        if new != column:
            alter.emit(AlterColumnTypeEvent(t, column_name=column.name, column=new))
    _set_table_charset(alter, charset)


def _table_options(alter: _Alter) -> None:
    """A run of table options up to the next ``,`` (MySQL lets them follow one another without
    commas: ``ENGINE=InnoDB DEFAULT CHARSET=latin1 COMMENT 'x'``). The default character set
    (``[DEFAULT] CHARACTER SET|CHARSET [=] x``, or the charset of ``[DEFAULT] COLLATE [=] y``) and
    the comment are kept; the other options change no column. Existing columns keep their charsets."""
    cur = alter.stmt.cur
    charset: str | None = None
    collation: str | None = None
    while not cur.at_end() and not cur.is_punct(",") and not cur.is_punct(")"):
        if _charset_word(cur):
            cur.accept_punct("=")
            charset = cur.ident()
        elif cur.accept("COLLATE"):
            cur.accept_punct("=")
            collation = cur.ident()
        elif cur.accept("COMMENT"):
            cur.accept_punct("=")
            _comment_value(alter)
        elif cur.is_word(*_TRAILING_PARTITION_CLAUSES):
            return  # a partition clause after the options, without a comma: parse_alter's
        elif cur.is_punct("("):
            cur.skip_balanced()
        else:
            cur.next()
    if charset is not None:
        _set_table_charset(alter, None if charset.lower() == "default" else charset_name(charset))
    elif collation is not None:
        _set_table_charset(alter, None if collation.lower() == "default" else charset_of_collation(collation))


_SPECS: dict[str, Callable[[_Alter], None]] = {
    "ADD": _add,
    "DROP": _drop,
    "MODIFY": _modify,
    "CHANGE": _change,
    "RENAME": _rename,
    "ALTER": _alter_column,
    "CONVERT": _convert,
}
