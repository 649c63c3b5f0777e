"""Doris SQL front end: the statements and a small hand-written DDL/SHOW parser.

sqlglot's Doris dialect cannot parse Doris ``CREATE TABLE`` (``DATETIMEV2``, ``UNIQUE KEY``,
``DISTRIBUTED BY``, ``PROPERTIES``), so DDL is parsed here (over :mod:`devstack.doris.sql_lexer`'s
tokens) into plain dataclasses which :mod:`devstack.doris.ddl` applies to the storage. Queries
(``SELECT``/``WITH``) are recognised here and translated by :mod:`devstack.doris.sql_query`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .catalog import Column
from .sql_lexer import SqlError, TokenCursor
from .types import DorisType, TypeError_


# ---------------------------------------------------------------------------------------------
# statements
# ---------------------------------------------------------------------------------------------
@dataclass
class CreateDatabase:
    name: str
    if_not_exists: bool


@dataclass
class DropDatabase:
    name: str
    if_exists: bool


@dataclass
class CreateTable:
    db: str | None
    name: str
    if_not_exists: bool
    columns: list[Column]
    keys_kind: str | None  # UNIQUE | DUPLICATE | AGGREGATE | None
    key_names: list[str]
    distribution: list[str]
    buckets: str
    properties: dict[str, str]
    comment: str
    # [AUTO] PARTITION BY RANGE|LIST (...) (...): {"auto", "kind", "columns", "function", "unit", "definitions"}
    partition: dict = field(default_factory=dict)
    random_distribution: bool = False  # DISTRIBUTED BY RANDOM


@dataclass
class DropTable:
    db: str | None
    name: str
    if_exists: bool


@dataclass
class TruncateTable:
    db: str | None
    name: str


@dataclass
class AlterOp:
    kind: str  # add | drop | rename_column | modify | modify_comment | table_comment | rename | set
    column: Column | None = None
    name: str | None = None
    new_name: str | None = None
    position: str | None = None  # None | "FIRST" | "AFTER <col>"
    comment: str | None = None
    properties: dict[str, str] = field(default_factory=dict)
    null_spec: bool = False  # MODIFY COLUMN: was NULL / NOT NULL written explicitly?
    comment_spec: bool = False  # MODIFY COLUMN: was COMMENT written explicitly?


@dataclass
class AlterTable:
    db: str | None
    name: str
    ops: list[AlterOp]


@dataclass
class Show:
    what: str  # databases | tables | columns | create_table
    db: str | None = None
    name: str | None = None
    full: bool = False


@dataclass
class Query:
    sql: str


Statement = CreateDatabase | DropDatabase | CreateTable | DropTable | TruncateTable | AlterTable | Show | Query


def _column_def(p: TokenCursor) -> Column:
    p.null_spec = False
    p.comment_spec = False
    name = p.ident()
    tparts = [p.next()]
    if tparts[0].kind != "word":
        raise SqlError(f"Syntax error: expected a type for column {name}")
    if p.at("<"):
        raise SqlError(f"Unsupported data type: {tparts[0].text}<...> (complex types are not supported by the stand-in)")
    type_text = tparts[0].text
    if p.at("("):
        p.expect("(")
        args = [p.next().text]
        while p.accept(","):
            args.append(p.next().text)
        p.expect(")")
        type_text += "(" + ",".join(args) + ")"
    try:
        dtype = DorisType.parse(type_text)
    except TypeError_ as e:
        raise SqlError(str(e)) from e
    type_text = dtype.name + (
        f"({dtype.length})" if dtype.length is not None
        else f"({dtype.precision},{dtype.scale})" if dtype.name == "DECIMALV3"
        else f"({dtype.precision})" if dtype.name == "DATETIMEV2" else ""
    )
    col = Column(name=name, type=type_text)
    while not p.done() and not p.at(",") and not p.at(")") and not p.at("FIRST") and not p.at("AFTER"):
        if p.accept("NOT", "NULL"):
            col.nullable = False
            p.null_spec = True
        elif p.accept("NULL"):
            col.nullable = True
            p.null_spec = True
        elif p.accept("KEY"):
            col.is_key = True
        elif p.accept("AUTO_INCREMENT"):
            if p.at("("):
                p.skip_balanced()
        elif p.accept("DEFAULT"):
            t = p.next()
            if t.kind == "word" and t.text.upper() in ("CURRENT_TIMESTAMP", "NOW"):
                col.default = "CURRENT_TIMESTAMP"
                if p.at("("):
                    p.skip_balanced()
            elif t.kind == "word" and t.text.upper() == "NULL":
                col.default = None
            else:
                col.default = t.text
        elif p.accept("ON", "UPDATE"):
            p.next()
            if p.at("("):
                p.skip_balanced()
        elif p.accept("COMMENT"):
            col.comment = p.string()
            p.comment_spec = True
        elif p.peek() and p.peek().text.upper() in (  # type: ignore[union-attr]
            "REPLACE", "SUM", "MIN", "MAX", "REPLACE_IF_NOT_NULL", "HLL_UNION", "BITMAP_UNION", "NONE"
        ):
            p.next()
        else:
            t = p.peek()
            raise SqlError(f"Syntax error near '{t.raw if t else ''}' in definition of column {name}")
    return col


def _position(p: TokenCursor) -> str | None:
    if p.accept("FIRST"):
        return "FIRST"
    if p.accept("AFTER"):
        return "AFTER " + p.ident()
    return None


def _create_table(p: TokenCursor) -> CreateTable:
    ine = p.accept("IF", "NOT", "EXISTS")
    db, name = p.qualified()
    p.expect("(")
    cols: list[Column] = []
    while True:
        if p.at("INDEX"):
            while not (p.at(",") or p.at(")")):
                t = p.next()
                if t.text == "(":
                    p.i -= 1
                    p.skip_balanced()
        else:
            cols.append(_column_def(p))
        if p.accept(")"):
            break
        p.expect(",")
    ct = CreateTable(db, name, ine, cols, None, [], [], "AUTO", {}, "")
    while not p.done():
        if p.accept("ENGINE"):
            p.expect("=")
            engine = p.ident()
            if engine.upper() != "OLAP":
                raise SqlError(f"Unknown engine name: {engine} (only OLAP tables are supported by the stand-in)")
        elif p.peek() and p.peek().text.upper() in ("UNIQUE", "DUPLICATE", "AGGREGATE") and p.at(  # type: ignore[union-attr]
            p.peek().text.upper(), "KEY"  # type: ignore[union-attr]
        ):
            ct.keys_kind = p.next().text.upper()
            p.expect("KEY")
            ct.key_names = p.name_list()
        elif p.accept("COMMENT"):
            ct.comment = p.string()
        elif p.at("AUTO", "PARTITION", "BY") or p.at("PARTITION", "BY"):
            ct.partition = _partition_clause(p)
        elif p.accept("DISTRIBUTED", "BY"):
            if p.accept("HASH"):
                ct.distribution = p.name_list()
            else:
                p.expect("RANDOM")
                ct.random_distribution = True
            if p.accept("BUCKETS"):
                ct.buckets = p.next().text.upper()
        elif p.accept("PROPERTIES"):
            ct.properties = p.properties()
        elif p.accept("ROLLUP"):
            p.skip_balanced()
        else:
            t = p.peek()
            raise SqlError(f"Syntax error near '{t.raw if t else ''}'")
    return ct


def _partition_clause(p: TokenCursor) -> dict:
    """``[AUTO] PARTITION BY RANGE|LIST (col, ... | date_trunc(col, 'unit')) [(definitions)]``."""
    auto = p.accept("AUTO")
    p.expect("PARTITION", "BY")
    kind = p.next().text.upper()
    if kind not in ("RANGE", "LIST"):
        raise SqlError(f"Syntax error near '{kind}': expected RANGE or LIST")
    p.expect("(")
    columns: list[str] = []
    function = unit = None
    while True:
        name = p.ident()
        if p.accept("("):  # a partition function: date_trunc(`col`, 'day')
            function = name.lower()
            columns.append(p.ident())
            p.expect(",")
            unit = p.string().lower()
            p.expect(")")
        else:
            columns.append(name)
        if not p.accept(","):
            break
    p.expect(")")
    definitions = ""
    if p.at("("):
        start = p.i
        p.skip_balanced()
        if p.i - start > 2:  # not an empty ()
            definitions = " ".join(t.raw for t in p.toks[start:p.i])
    return {"auto": auto, "kind": kind, "columns": columns, "function": function, "unit": unit,
            "definitions": definitions}


def _alter_table(p: TokenCursor) -> AlterTable:
    db, name = p.qualified()
    ops: list[AlterOp] = []
    while True:
        if p.accept("ADD", "COLUMN") or (p.at("ADD") and not p.at("ADD", "INDEX") and p.accept("ADD")):
            if p.at("("):
                p.expect("(")
                while True:
                    ops.append(AlterOp("add", column=_column_def(p)))
                    if p.accept(")"):
                        break
                    p.expect(",")
            else:
                col = _column_def(p)
                ops.append(AlterOp("add", column=col, position=_position(p)))
        elif p.accept("DROP", "COLUMN"):
            ops.append(AlterOp("drop", name=p.ident()))
        elif p.accept("RENAME", "COLUMN"):
            old = p.ident()
            ops.append(AlterOp("rename_column", name=old, new_name=p.ident()))
        elif p.accept("MODIFY", "COLUMN"):
            if p.peek(1) and p.peek(1).text.upper() == "COMMENT":  # type: ignore[union-attr]
                cname = p.ident()
                p.expect("COMMENT")
                ops.append(AlterOp("modify_comment", name=cname, comment=p.string()))
            else:
                col = _column_def(p)
                ops.append(AlterOp("modify", column=col, name=col.name, position=_position(p),
                                   null_spec=p.null_spec, comment_spec=p.comment_spec))
        elif p.accept("MODIFY", "COMMENT"):
            ops.append(AlterOp("table_comment", comment=p.string()))
        elif p.accept("RENAME"):
            ops.append(AlterOp("rename", new_name=p.ident()))
        elif p.accept("SET"):
            ops.append(AlterOp("set", properties=p.properties()))
        else:
            t = p.peek()
            raise SqlError(f"Syntax error near '{t.raw if t else 'end of statement'}' (unsupported ALTER TABLE clause)")
        if p.done():
            break
        p.expect(",")
    return AlterTable(db, name, ops)


def parse(sql: str) -> Statement:
    """Classify and parse one statement."""
    stripped = sql.strip().rstrip(";").strip()
    head = stripped.split(None, 1)[0].upper() if stripped else ""
    if head in ("SELECT", "WITH", "(") or stripped.startswith("("):
        return Query(stripped)
    p = TokenCursor(stripped)
    if p.accept("CREATE", "DATABASE") or p.accept("CREATE", "SCHEMA"):
        ine = p.accept("IF", "NOT", "EXISTS")
        return CreateDatabase(p.ident(), ine)
    if p.accept("DROP", "DATABASE") or p.accept("DROP", "SCHEMA"):
        ie = p.accept("IF", "EXISTS")
        return DropDatabase(p.ident(), ie)
    if p.accept("CREATE", "TABLE"):
        return _create_table(p)
    if p.accept("DROP", "TABLE"):
        ie = p.accept("IF", "EXISTS")
        db, name = p.qualified()
        return DropTable(db, name, ie)
    if p.accept("TRUNCATE", "TABLE") or p.accept("TRUNCATE"):
        db, name = p.qualified()
        return TruncateTable(db, name)
    if p.accept("ALTER", "TABLE"):
        return _alter_table(p)
    if p.accept("SHOW", "DATABASES") or p.accept("SHOW", "SCHEMAS"):
        return Show("databases")
    if p.accept("SHOW", "TABLES"):
        db = p.ident() if (p.accept("FROM") or p.accept("IN")) else None
        return Show("tables", db=db)
    if p.accept("SHOW", "CREATE", "TABLE"):
        db, name = p.qualified()
        return Show("create_table", db=db, name=name)
    if p.at("SHOW", "FULL", "COLUMNS") or p.at("SHOW", "COLUMNS") or p.at("SHOW", "FULL", "FIELDS") or p.at("SHOW", "FIELDS"):
        p.accept("SHOW")
        full = p.accept("FULL")
        p.next()
        if not (p.accept("FROM") or p.accept("IN")):
            raise SqlError("Syntax error: expected FROM")
        db, name = p.qualified()
        if p.accept("FROM") or p.accept("IN"):
            db = p.ident()
        return Show("columns", db=db, name=name, full=full)
    if p.accept("DESC") or p.accept("DESCRIBE"):
        db, name = p.qualified()
        return Show("columns", db=db, name=name, full=False)
    raise SqlError("Unsupported statement type")
