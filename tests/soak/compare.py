"""Doris against MySQL, row by row, for the soak's quiet points.

Independent of Tidemark's own ``verify`` (which the soak runs too, at the end): every row of
MySQL (the current primary) is read with its columns and compared with the row of the same key read
from the Doris stand-in through the FE's query API, in key ranges of ``RANGE`` ids. Values are
compared as values (a DECIMAL 12.30 equals 12.3 as Doris's JSON gives it; a DATETIME(3) as its
text with milliseconds).
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
from dataclasses import dataclass, field
from typing import Any

import requests

from tests.soak.workload import KEY_SPACE

RANGE = 5000
MAX_SHOWN = 10


@dataclass(frozen=True)
class TableDiff:
    table: str
    mysql_rows: int
    doris_rows: int
    missing: int  # keys MySQL has and Doris does not
    extra: int  # keys Doris has and MySQL does not
    changed: int  # keys both have with different values
    examples: tuple[str, ...] = field(default=())
    error: str | None = None

    @property
    def differences(self) -> int:
        return self.missing + self.extra + self.changed + (1 if self.error else 0)


def _norm(v: Any) -> Any:
    if v is None:
        return None
    if isinstance(v, bool):
        return decimal.Decimal(int(v))
    if isinstance(v, int | float | decimal.Decimal):
        return decimal.Decimal(str(v))
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ", timespec="milliseconds")
    text = str(v)
    try:
        return decimal.Decimal(text) if text and text.lstrip("-").replace(".", "", 1).isdigit() else text
    except decimal.InvalidOperation:
        return text


def mysql_table(conn: Any, db: str, table: str) -> tuple[list[str], dict[int, tuple]]:
    with conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{db}`.`{table}` ORDER BY id")
        names = [d[0] for d in cur.description]
        rows = {int(r[0]): tuple(_norm(v) for v in r) for r in cur.fetchall()}
    conn.commit()
    return names, rows


def doris_query(fe: str, db: str, stmt: str, limit: int = 10_000) -> dict[str, Any]:
    resp = requests.post(f"http://{fe}/api/query/default_cluster/{db}", json={"stmt": stmt, "limit": limit},
                         auth=("root", ""), timeout=120)
    body = json.loads(resp.text, parse_float=decimal.Decimal)
    if body.get("code") != 0:
        raise RuntimeError(f"Doris answered {body.get('msg') or body}")
    return body["data"]


def doris_table(fe: str, db: str, table: str, names: list[str], max_key: int) -> dict[int, tuple]:
    cols = ", ".join(f"`{c}`" for c in names)
    rows: dict[int, tuple] = {}
    for lo in range(0, max_key + 1, RANGE):
        data = doris_query(fe, db, f"SELECT {cols} FROM `{table}` WHERE id >= {lo} AND id < {lo + RANGE} ORDER BY id")
        got = data["data"]
        if len(got) >= 10_000:
            raise RuntimeError(f"{table}: a range of {RANGE} ids returned {len(got)} rows (cut)")
        rows.update({int(r[0]): tuple(_norm(v) for v in r) for r in got})
    count = doris_query(fe, db, f"SELECT COUNT(*) FROM `{table}`")["data"][0][0]
    if int(count) != len(rows):
        # keys outside the compared ranges: count them as extra rows
        rows.update({-(i + 1): ("?",) for i in range(int(count) - len(rows))})
    return rows


def compare_table(conn: Any, fe: str, db: str, table: str) -> TableDiff:
    try:
        names, want = mysql_table(conn, db, table)
        got = doris_table(fe, db, table, names, max(KEY_SPACE, max(want, default=0)))
    except Exception as exc:  # noqa: BLE001 - a table that cannot be compared is a difference, named
        return TableDiff(table, 0, 0, 0, 0, 0, error=f"{type(exc).__name__}: {exc}")
    missing = [k for k in want if k not in got]
    extra = [k for k in got if k not in want]
    changed = [k for k in want if k in got and got[k] != want[k]]
    examples = [f"missing id={k}: {want[k]}" for k in missing[:MAX_SHOWN]]
    examples += [f"extra id={k}: {got[k]}" for k in extra[:MAX_SHOWN]]
    examples += [f"changed id={k}: MySQL {want[k]} Doris {got[k]}" for k in changed[:MAX_SHOWN]]
    return TableDiff(table, len(want), len(got), len(missing), len(extra), len(changed), tuple(examples))
