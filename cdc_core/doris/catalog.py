"""Doris metadata and SQL over HTTP: the query API, table schemas, the light-schema-change check.

All statements go through ``POST /api/query/default_cluster/{db}`` (``{"stmt": ...}``), as the
Flink connector's ``SchemaChangeManager`` does, so the sink needs no MySQL-protocol connection
to the FE. ``X-Doris-Stream: false`` asks newer FEs for the classic (non-streamed) JSON answer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.errors import DorisError, QueryError, SchemaChangeError

log = logging.getLogger(__name__)


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def qualified(database: str, table: str) -> str:
    return f"{quote_ident(database)}.{quote_ident(table)}"


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class DorisColumn:
    name: str
    type: str
    is_key: bool
    nullable: bool
    comment: str = ""
    precision: int | None = None  # a DECIMALV3's, as _schema gives it
    scale: int | None = None


@dataclass(frozen=True)
class DorisTableInfo:
    """What Doris says about a table (``GET /api/{db}/{table}/_schema``)."""

    database: str
    table: str
    keys_type: str  # UNIQUE_KEYS / DUP_KEYS / AGG_KEYS
    columns: tuple[DorisColumn, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def key_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.is_key)

    @property
    def unique(self) -> bool:
        return self.keys_type == "UNIQUE_KEYS"

    def column(self, name: str) -> DorisColumn | None:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        return None


class DorisCatalog:
    """SQL and metadata calls against the FE."""

    def __init__(self, client: DorisHttpClient):
        self.client = client

    def execute(self, database: str, statement: str, *, limit: int | None = None) -> QueryResult:
        """Run one statement; a failure raises :class:`QueryError` with Doris's reason.

        ``limit``: the most rows the FE returns (its default is 1000, its maximum 10000).
        """
        body_json: dict[str, Any] = {"stmt": statement}
        if limit is not None:
            body_json["limit"] = limit
        resp = self.client.request(
            "POST", f"/api/query/default_cluster/{database}", json_body=body_json,
            headers={"X-Doris-Stream": "false"},
        )
        body = self.client.json_of(resp, "SQL statement")
        if not isinstance(body, dict) or body.get("code") != 0:
            reason = self.client.redact(str(body.get("data") or body.get("msg") if isinstance(body, dict) else body))
            raise QueryError(f"Doris refused: {statement}\n  reason: {reason}", statement=statement, reason=reason)
        data = body.get("data") or {}
        if isinstance(data, dict) and data.get("type") == "result_set":
            meta = tuple(m.get("name", "") for m in data.get("meta", []))
            return QueryResult(meta, tuple(tuple(r) for r in data.get("data", [])))
        return QueryResult((), ())

    # -- existence ------------------------------------------------------------------------------

    def database_exists(self, database: str) -> bool:
        res = self.execute(
            "information_schema",
            "SELECT `SCHEMA_NAME` FROM `INFORMATION_SCHEMA`.`SCHEMATA` WHERE SCHEMA_NAME = " + quote_string(database),
        )
        return bool(res.rows)

    def table_columns(self, database: str, *, at_most: int = 10_000) -> dict[str, tuple[str, ...]] | None:
        """Each table of ``database`` with its column names in order, in one statement
        (``information_schema.COLUMNS``); empty when the database does not exist or holds no table,
        None when its columns are more than ``at_most`` (the FE's query API returns at most 10,000
        rows: the caller then asks table by table)."""
        res = self.execute(
            "information_schema",
            "SELECT `TABLE_NAME`, `COLUMN_NAME` FROM `INFORMATION_SCHEMA`.`COLUMNS` WHERE TABLE_SCHEMA = "
            + quote_string(database) + " ORDER BY `TABLE_NAME`, `ORDINAL_POSITION`",
            limit=at_most,
        )
        if len(res.rows) >= at_most:
            return None
        columns: dict[str, list[str]] = {}
        for table, column in res.rows:
            columns.setdefault(str(table), []).append(str(column))
        return {table: tuple(names) for table, names in columns.items()}

    def create_database(self, database: str) -> None:
        self.execute("information_schema", f"CREATE DATABASE IF NOT EXISTS {quote_ident(database)}")

    def column_exists(self, database: str, table: str, column: str) -> bool:
        res = self.execute(
            database,
            "SELECT COLUMN_NAME FROM information_schema.`COLUMNS` WHERE TABLE_SCHEMA = "
            f"{quote_string(database)} AND TABLE_NAME = {quote_string(table)} AND COLUMN_NAME = {quote_string(column)}",
        )
        return bool(res.rows)

    def table_info(self, database: str, table: str) -> DorisTableInfo | None:
        """The table's key model and columns in order, or None when it does not exist."""
        resp = self.client.request("GET", f"/api/{database}/{table}/_schema")
        body = self.client.json_of(resp, f"schema of {database}.{table}")
        if not isinstance(body, dict):
            raise DorisError(f"schema of {database}.{table}: unexpected answer {str(body)[:200]}")
        if body.get("code") != 0:
            text = str(body.get("data") or body.get("msg") or "")
            if body.get("code") in (1, 404) or "not exist" in text.lower() or "not found" in text.lower():
                return None
            raise DorisError(f"cannot read the schema of {database}.{table}: {self.client.redact(text)[:300]}")
        data = body.get("data") or {}
        columns = tuple(
            DorisColumn(
                name=p["name"], type=str(p.get("type", "")),
                is_key=str(p.get("is_key", "No")).lower() in ("yes", "true"),
                nullable=str(p.get("is_nullable", "Yes")).lower() in ("yes", "true"),
                comment=str(p.get("comment") or ""),
                precision=_int_or_none(p.get("precision")), scale=_int_or_none(p.get("scale")),
            )
            for p in data.get("properties", [])
        )
        return DorisTableInfo(database, table, str(data.get("keysType", "")), columns)

    def column_types(self, database: str, table: str) -> dict[str, str]:
        """Column → full type text (``varchar(96)``, ``decimal(10,2)``) from ``SHOW FULL COLUMNS``.

        ``_schema`` gives only the bare type name (``VARCHAR``); comparing a type change needs
        lengths and precisions, which is why the connector's modify flow reads this too.
        """
        res = self.execute(database, f"SHOW FULL COLUMNS FROM {qualified(database, table)}")
        return {str(row[0]): str(row[1]) for row in res.rows}

    def column_defaults(self, database: str, table: str) -> dict[str, str | None]:
        """Column → its DEFAULT as Doris shows it (``SHOW FULL COLUMNS``, row[5]; None: none).

        A ``MODIFY COLUMN`` must restate it: Doris refuses a modify whose default differs ("Can not
        change default value"), as the connector's modify flow knows (it reads the same column)."""
        res = self.execute(database, f"SHOW FULL COLUMNS FROM {qualified(database, table)}")
        return {str(row[0]): (None if row[5] is None else str(row[5])) for row in res.rows}

    def table_exists(self, database: str, table: str) -> bool:
        return self.table_info(database, table) is not None

    # -- light schema change ----------------------------------------------------------------------

    def check_light_schema_change(self, database: str, table: str, column: str, *, drop: bool) -> None:
        """``GET /api/enable_light_schema_change/{db}/{t}`` with a JSON body; refusal raises."""
        import json

        payload = json.dumps({"isDropColumn": drop, "columnName": column}).encode()
        resp = self.client.request(
            "GET", f"/api/enable_light_schema_change/{database}/{table}",
            headers={"Content-Type": "application/json;charset=UTF-8"}, body=lambda: payload,
        )
        body = self.client.json_of(resp, f"light schema change check of {database}.{table}")
        if not isinstance(body, dict) or body.get("code") != 0:
            reason = self.client.redact(str(body.get("data") or body.get("msg") if isinstance(body, dict) else body))
            raise SchemaChangeError(
                f"Doris cannot change column {column!r} of {database}.{table} with a light schema change: {reason}. "
                "Enable it with ALTER TABLE ... SET (\"light_schema_change\" = \"true\"), or change the table by hand"
            )


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None
