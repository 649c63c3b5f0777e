"""Compare a table in MySQL with its Doris table from outside Tidemark, row by row.

Both sides are brought to one canonical text per value, following the type table in docs/configuration.md
("Types"): what each MySQL value must look like in Doris. MySQL is read with pymysql (text types
through ``CONVERT(... USING utf8mb4)``, so MySQL itself decodes every charset); Doris through the
FE's query API, paged by an ``ORDER BY`` over every column (the API returns at most ``limit`` rows
a statement). Rows are compared as multisets: a keyless table may hold the same row twice.
"""

from __future__ import annotations

import base64
import collections
import json
import math
import re
import struct
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

import requests

PAGE = 1000
_BINARY_TYPES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_TEXT_TYPES = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext", "enum", "set"}
_SPATIAL = {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
            "geometrycollection"}


@dataclass(frozen=True)
class Column:
    """A MySQL column as information_schema describes it."""

    name: str
    data_type: str
    column_type: str
    nullable: bool
    charset: str | None

    @property
    def binary(self) -> bool:
        return self.data_type in _BINARY_TYPES or (self.data_type in _TEXT_TYPES and self.charset == "binary")

    def select_expr(self) -> str:
        q = "`" + self.name.replace("`", "``") + "`"
        if self.data_type in _SPATIAL:
            return f"IF({q} IS NULL, NULL, CONCAT(IF(ST_SRID({q}) <> 0, CONCAT('SRID=', ST_SRID({q}), ';'), ''), " \
                   f"ST_AsText({q})))"
        if self.binary:
            return q
        if self.data_type in _TEXT_TYPES or self.data_type in {"json", "uuid", "inet6", "inet4"}:
            return f"CONVERT({q} USING utf8mb4)"
        if self.data_type == "bit":
            return f"CAST({q} + 0 AS CHAR)"
        if self.data_type == "float":
            # MySQL prints a FLOAT with 6 significant digits (1.2345678 reads "1.23457"): a display, not the
            # stored float32, which Doris holds. As a DOUBLE it reads exactly (1.2345677614212036).
            return f"CAST({q} AS DOUBLE)"
        if self.column_type.startswith("year(2)"):
            return f"CAST(YEAR({q}) AS CHAR)"  # the year: YEAR(2) reads as two digits
        if self.data_type in {"date", "datetime", "timestamp", "time", "year"}:
            return f"CAST({q} AS CHAR)"
        return q


def columns(conn, db: str, table: str) -> list[Column]:
    with conn.cursor() as cur:
        cur.execute("SELECT column_name, data_type, column_type, is_nullable, character_set_name "
                    "FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
                    "ORDER BY ordinal_position", (db, table))
        return [Column(r[0], r[1].lower(), r[2].lower(), r[3] == "YES", r[4]) for r in cur.fetchall()]


def _zero_date(text: str) -> bool:
    m = re.match(r"^(\d{4})-(\d{2})-(\d{2})", text)
    return bool(m) and (int(m.group(1)) == 0 or int(m.group(2)) == 0 or int(m.group(3)) == 0)


def _strip_fraction(text: str) -> str:
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def _float32(v: float) -> float:
    return struct.unpack("f", struct.pack("f", v))[0]


def expected(col: Column, v: Any) -> str | None:
    """MySQL's value ``v`` (as read by ``col.select_expr()``) as the text Doris must hold."""
    if v is None:
        return None
    t = col.data_type
    if col.binary:
        raw = bytes(v) if not isinstance(v, str) else v.encode("latin1")
        return base64.b64encode(raw).decode()
    if t == "tinyint" and col.column_type.startswith("tinyint(1)") and "unsigned" not in col.column_type:
        return "true" if v else "false"
    if t == "bit":
        n = int(v)
        return ("true" if n else "false") if col.column_type == "bit(1)" else str(n)
    if t in {"float"}:
        return repr(_float32(float(v)))
    if t == "double":
        return repr(float(v))
    if t == "decimal":
        d = Decimal(v)
        return str(d.normalize()) if d != 0 else "0"
    if t == "year":
        return str(int(v))
    if t in {"date", "datetime", "timestamp"}:
        text = str(v)
        if _zero_date(text):
            if col.nullable:
                return None
            text = "1970-01-01" + text[10:]
        return _strip_fraction(text) if t != "date" else text
    if t == "time":
        return str(v)
    if t == "json":
        return json.dumps(json.loads(v), sort_keys=True)
    if isinstance(v, bytes):
        return v.decode("utf-8")
    return str(v)


def got(col: Column, v: Any) -> str | None:
    """Doris's value ``v`` (as the query API's JSON gives it) as canonical text."""
    if v is None:
        return None
    t = col.data_type
    if col.binary:
        return str(v)
    if (t == "tinyint" and col.column_type.startswith("tinyint(1)") and "unsigned" not in col.column_type) \
            or col.column_type == "bit(1)":
        if isinstance(v, bool):
            return "true" if v else "false"
        return "true" if str(v).lower() in {"1", "true"} else "false"
    if t == "float":
        return repr(_float32(float(v)))
    if t == "double":
        return repr(float(v))
    if t == "decimal":
        try:
            d = Decimal(str(v))
        except InvalidOperation:
            return str(v)
        return str(d.normalize()) if d != 0 else "0"
    if t in {"datetime", "timestamp"}:
        return _strip_fraction(str(v))
    if t == "json":
        try:
            return json.dumps(json.loads(v) if isinstance(v, str) else v, sort_keys=True)
        except ValueError:
            return str(v)
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return str(int(v))
    return str(v)


def _key(values: tuple) -> tuple:
    return tuple("\x00" if v is None else v for v in values)


def mysql_rows(conn, db: str, table: str, cols: list[Column]) -> collections.Counter:
    select = ", ".join(c.select_expr() for c in cols)
    with conn.cursor() as cur:
        cur.execute(f"SELECT {select} FROM `{db}`.`{table}`")
        return collections.Counter(_key(tuple(expected(c, v) for c, v in zip(cols, r, strict=True)))
                                   for r in cur.fetchall())


def doris_query(fe: str, db: str, stmt: str, *, limit: int = PAGE) -> dict:
    resp = requests.post(f"http://{fe}/api/query/default_cluster/{db}", json={"stmt": stmt, "limit": limit},
                         auth=("root", ""), timeout=120)
    return resp.json()


def doris_rows(fe: str, db: str, table: str, cols: list[Column]) -> collections.Counter | str:
    """Doris's rows (canonical), or the error text when Doris cannot answer (no such table)."""
    names = ", ".join("`" + c.name.replace("`", "``") + "`" for c in cols)
    order = ", ".join(str(i + 1) for i in range(len(cols)))
    out: collections.Counter = collections.Counter()
    offset = 0
    while True:
        body = doris_query(fe, db, f"SELECT {names} FROM `{table}` ORDER BY {order} LIMIT {PAGE} OFFSET {offset}")
        if body.get("code") != 0:
            return f"{body.get('msg')}: {body.get('data')}"[:300]
        rows = body["data"]["data"]
        for r in rows:
            out[_key(tuple(got(c, v) for c, v in zip(cols, r, strict=True)))] += 1
        if len(rows) < PAGE:
            return out
        offset += PAGE


def diff_text(want: collections.Counter, have: collections.Counter, cols: list[Column], limit: int = 3) -> str:
    """A short account of what differs: the counts and the first rows only one side has."""
    missing = list((want - have).elements())[:limit]
    extra = list((have - want).elements())[:limit]
    parts = [f"MySQL {sum(want.values())} rows, Doris {sum(have.values())}"]
    if missing or extra:
        # the first column that differs between a missing row and an extra one, by position
        if missing and extra:
            for c, a, b in zip(cols, missing[0], extra[0], strict=True):
                if a != b:
                    parts.append(f"column {c.name} ({c.column_type}): MySQL {a!r} vs Doris {b!r}")
                    break
        parts.append(f"only in MySQL: {missing!r}"[:300])
        parts.append(f"only in Doris: {extra!r}"[:300])
    return "; ".join(parts)


