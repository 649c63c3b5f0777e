"""The ``/api/query/{ns}/{db}`` statement executor: DDL, SHOW and SELECT in Doris' answer shapes.

Like FE ``StatementSubmitter``: queries and SHOW return ``result_set`` (``meta`` + ``data``, at most
``limit`` rows, default 1000), DDL returns ``exec_status``; DML (INSERT/UPDATE/DELETE) is rejected
with ``Unsupported statement type`` as that FE path does. Values are rendered as JDBC ``getObject``
would serialise them through Gson: numbers as JSON numbers (DECIMAL exact), DATE/DATETIME as text.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import time
from typing import Any

from . import ddl, sql_query
from .catalog import Table
from .sql import (
    AlterTable,
    CreateDatabase,
    CreateTable,
    DropDatabase,
    DropTable,
    Query,
    Show,
    TruncateTable,
    parse,
)
from .sql_lexer import SqlError
from .sql_query import INFO_SCHEMA_STORE, translate_query
from .storage import Storage
from .types import DorisType

DEFAULT_LIMIT = 1000
_DEC = "\u0000DEC:"


def _duck_meta(type_text: str) -> str:
    t = type_text.upper()
    if t.startswith("DECIMAL"):
        return "DECIMAL"
    return {
        "INTEGER": "INT", "HUGEINT": "LARGEINT", "TIMESTAMP": "DATETIME", "REAL": "FLOAT",
        "VARCHAR": "VARCHAR", "TIMESTAMP WITH TIME ZONE": "DATETIME", "UBIGINT": "LARGEINT",
        "UINTEGER": "BIGINT", "USMALLINT": "INT", "UTINYINT": "SMALLINT",
    }.get(t, t)


def _fmt_datetime(v: dt.datetime, precision: int | None) -> str:
    # not strftime: its %Y does not pad years before 1000 to four digits on Linux (Doris prints 0016-07-14)
    base = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
    if precision is None:
        precision = 6 if v.microsecond else 0
    if precision:
        base += "." + f"{v.microsecond:06d}"[:precision]
    return base


def _value(v: Any, precision: int | None) -> Any:
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else str(v)
    if isinstance(v, decimal.Decimal):
        return _DEC + str(v)
    if isinstance(v, dt.datetime):
        return _fmt_datetime(v, precision)
    if isinstance(v, dt.date):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        try:
            return bytes(v).decode("utf-8")
        except UnicodeDecodeError:
            # the answer is JSON text: bytes that are no UTF-8 are refused, never shown altered
            raise SqlError(f"the query returns bytes that are not UTF-8 text ({bytes(v)[:32]!r}); select "
                           "hex(...) or to_base64(...) of them instead") from None
    return str(v)


def dumps(obj: Any) -> str:
    """JSON with exact decimals (emitted as bare numbers, as Gson does for BigDecimal)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    if "\\u0000DEC:" not in text:
        return text
    import re

    return re.sub(r'"\\u0000DEC:(-?[0-9.eE+-]+)"', r"\1", text)


def _result(names: list[str], types: list[str], rows: list[list[Any]], start: float) -> dict[str, Any]:
    return {
        "type": "result_set",
        "meta": [{"name": n, "type": t} for n, t in zip(names, types, strict=True)],
        "data": rows,
        "status": {},
        "time": int((time.monotonic() - start) * 1000),
    }


def _exec_status(start: float) -> dict[str, Any]:
    return {"type": "exec_status", "status": {}, "time": int((time.monotonic() - start) * 1000)}


class QueryExecutor:
    def __init__(self, storage: Storage) -> None:
        self.st = storage
        sql_query.warm_up()

    def execute(self, stmt: str, db: str, limit: int = DEFAULT_LIMIT) -> dict[str, Any]:
        start = time.monotonic()
        s = parse(stmt)
        if isinstance(s, Query):
            return self._select(s.sql, db, limit, start)
        if isinstance(s, Show):
            return self._show(s, db, limit, start)
        if isinstance(s, CreateDatabase):
            ddl.create_database(self.st, s)
        elif isinstance(s, DropDatabase):
            ddl.drop_database(self.st, s)
        elif isinstance(s, CreateTable):
            ddl.create_table(self.st, s, db)
        elif isinstance(s, DropTable):
            ddl.drop_table(self.st, s, db)
        elif isinstance(s, TruncateTable):
            ddl.truncate_table(self.st, s, db)
        elif isinstance(s, AlterTable):
            ddl.alter_table(self.st, s, db)
        else:  # pragma: no cover - parse() only returns the types above
            raise SqlError("Unsupported statement type")
        return _exec_status(start)

    # ---- SELECT -------------------------------------------------------------------------------
    def _resolve(self, db: str, name: str) -> tuple[str, str]:
        if not self.st.db_exists(db):
            raise SqlError(f"Unknown database '{db}'")
        if self.st.table(db, name) is None:
            raise SqlError(f"Table [{name}] does not exist in database [{db}].")
        return db, name

    def _select(self, sql: str, db: str, limit: int, start: float) -> dict[str, Any]:
        duck_sql, refs = translate_query(sql, db, self._resolve)
        if INFO_SCHEMA_STORE in duck_sql:
            self.st.fresh_information_schema(duck_sql)
        precisions: dict[str, int] = {}
        for rdb, rname in refs:
            t = self.st.table(rdb, rname)
            for c in t.columns if t else []:
                d = c.dtype
                if d.name == "DATETIMEV2":
                    precisions.setdefault(c.name.lower(), d.precision or 0)
        # One execute and at most ``limit`` rows fetched from its streamed result (the cursor's close
        # ends the rest): a relation's ``sql`` then ``limit`` binds the statement twice before running
        # it, ~0.8 ms of DuckDB's CPU a query more.
        with self.st.cursor() as cur:
            try:
                cur.execute(duck_sql)
                if cur.description is None:
                    return _exec_status(start)
                names = [d[0] for d in cur.description]
                types = [str(d[1]) for d in cur.description]
                raw = cur.fetchmany(limit) if limit >= 0 else cur.fetchall()  # (as a relation's limit(-1))
            except Exception as e:
                raise SqlError(str(e).splitlines()[0]) from e
        prec = [precisions.get(n.lower()) for n in names]
        rows = [[_value(v, prec[i]) for i, v in enumerate(r)] for r in raw]
        return _result(names, [_duck_meta(t) for t in types], rows, start)

    # ---- SHOW ---------------------------------------------------------------------------------
    def _table(self, db: str | None, name: str | None, current: str) -> Table:
        dbn = db or current
        if not dbn:
            raise SqlError("No database selected")
        if not self.st.db_exists(dbn):
            raise SqlError(f"Unknown database '{dbn}'")
        t = self.st.table(dbn, name or "")
        if t is None:
            raise SqlError(f"Unknown table '{name}'")
        return t

    def _show(self, s: Show, db: str, limit: int, start: float) -> dict[str, Any]:
        if s.what == "databases":
            rows = [[n] for n in sorted(["information_schema", "mysql", *self.st.dbs])]
            return _result(["Database"], ["VARCHAR"], rows[:limit], start)
        if s.what == "tables":
            dbn = s.db or db
            if not self.st.db_exists(dbn):
                raise SqlError(f"Unknown database '{dbn}'")
            rows = [[n] for (d, n) in sorted(self.st.tables) if d == dbn]
            return _result([f"Tables_in_{dbn}"], ["VARCHAR"], rows[:limit], start)
        t = self._table(s.db, s.name, db)
        if s.what == "create_table":
            return _result(["Table", "Create Table"], ["VARCHAR", "VARCHAR"], [[t.name, show_create(t)]], start)
        rows = []
        for c in t.columns:
            d = c.dtype
            if s.full:
                rows.append([c.name, d.column_type(), "utf8mb4_0900_bin" if d.is_string() else "",
                             "YES" if c.nullable else "NO", "YES" if c.is_key else "NO", c.default, "",
                             "SELECT,INSERT,UPDATE,REFERENCES", c.comment])
            else:
                rows.append([c.name, d.sql().upper(), "Yes" if c.nullable else "No", "true" if c.is_key else "false",
                             c.default, ""])
        names = (["Field", "Type", "Collation", "Null", "Key", "Default", "Extra", "Privileges", "Comment"] if s.full
                 else ["Field", "Type", "Null", "Key", "Default", "Extra"])
        return _result(names, ["VARCHAR"] * len(names), rows[:limit], start)


def _q(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def show_create(t: Table) -> str:
    lines = []
    for c in t.columns:
        d = DorisType.parse(c.type)
        part = f"  `{c.name}` {d.sql()}{'' if c.nullable else ' NOT NULL'}"
        if c.default is not None:
            part += " DEFAULT CURRENT_TIMESTAMP" if c.default.upper() == "CURRENT_TIMESTAMP" else f' DEFAULT "{_q(c.default)}"'
        if c.comment:
            part += f" COMMENT '{c.comment}'"
        lines.append(part)
    kind = "UNIQUE KEY" if t.is_unique else "DUPLICATE KEY"
    keys = ", ".join(f"`{k}`" for k in t.key_names)
    dist = "RANDOM" if t.random_distribution else \
        "HASH(" + ", ".join(f"`{k}`" for k in (t.distribution or t.key_names[:1])) + ")"
    props = ",\n".join(f'"{k}" = "{_q(v)}"' for k, v in sorted({"replication_allocation": "tag.location.default: 1",
                                                                **t.properties}.items())
                       if k != "replication_num")
    key_line = f"{kind}({keys})\n" if t.key_names else ""  # a DUPLICATE table without keys has none
    return (f"CREATE TABLE `{t.name}` (\n" + ",\n".join(lines) + f"\n) ENGINE=OLAP\n{key_line}"
            f"COMMENT '{t.comment or 'OLAP'}'\n{_partition_text(t.partition)}"
            f"DISTRIBUTED BY {dist} BUCKETS {t.buckets}\nPROPERTIES (\n{props}\n);")


def _partition_text(part: dict) -> str:
    """The partition clause as Doris prints it (no partition listed: auto partitions are not kept)."""
    if not part:
        return ""
    columns = ", ".join(f"`{c}`" for c in part["columns"])
    expr = f"{part['function']}({columns}, '{part['unit']}')" if part.get("function") else columns
    return (f"{'AUTO ' if part['auto'] else ''}PARTITION BY {part['kind']} ({expr})\n"
            f"{part.get('definitions') or '()'}\n")
