"""The DDL parser on a corpus of real-world MySQL/MariaDB DDL (tests/binlog/ddl_corpus.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cdc_core.model.events import AlterPrimaryKeyEvent, AlterTableCharsetEvent, SchemaChangeEvent
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.ddl import DdlParseError, MySqlDdlParser

CORPUS = yaml.safe_load((Path(__file__).parent / "ddl_corpus.yaml").read_text())

ORDERS = TableSchema(
    TableId("shop", "orders"),
    (
        Column("id", "bigint(20)", "bigint", False),
        Column("name", "varchar(64)", "varchar", True, None, "", "utf8mb4", 64),
        Column("amount", "decimal(10,2)", "decimal", True, None, "", None, None, 10, 2),
        Column("ts", "datetime(3)", "datetime", True, None, "", None, None, None, None, 3),
    ),
    ("id",),
)
USERS = TableSchema(
    TableId("shop", "users"),
    (
        Column("id", "int(11)", "int", False),
        Column("email", "varchar(255)", "varchar", True, None, "login", "utf8mb4", 255),
        Column("created_at", "timestamp", "timestamp", True, None, "", None, None, None, None, 0),
        Column("age", "tinyint(4)", "tinyint", True),
    ),
    ("id",),
)


def _captured(t: TableId) -> bool:
    return t.database == "shop"


def _describe(e: SchemaChangeEvent) -> dict[str, Any]:
    d: dict[str, Any] = {"type": e.type_name, "table": str(e.table_id)}
    col = getattr(e, "column", None)
    if isinstance(col, Column):
        d.update(column=col.name, column_type=col.column_type, data_type=col.data_type, nullable=col.nullable,
                 default=col.default, comment=col.comment, charset=col.charset, char_length=col.char_length,
                 numeric_precision=col.numeric_precision, numeric_scale=col.numeric_scale,
                 datetime_precision=col.datetime_precision)
    for name in ("position", "after", "column_name", "old_name", "new_name", "comment", "operation"):
        if hasattr(e, name) and name not in d:
            d[name] = getattr(e, name)
    if isinstance(e, AlterTableCharsetEvent):
        d["charset"] = e.charset
    if isinstance(e, AlterPrimaryKeyEvent):
        d["primary_key"] = list(e.primary_key)
    if getattr(e, "new_table_id", None) is not None:
        d["new_table"] = str(e.new_table_id)
    schema = getattr(e, "schema", None)
    if isinstance(schema, TableSchema):
        d.update(columns=list(schema.column_names), primary_key=list(schema.primary_key), comment=schema.comment)
    return d


def _check(expected: dict[str, Any], actual: dict[str, Any], ddl: str) -> None:
    for key, value in expected.items():
        got = actual.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and isinstance(got, str):
            value = str(value)
        assert got == value, f"{key}: expected {value!r}, got {got!r}\n  DDL: {ddl}\n  event: {actual}"


@pytest.mark.parametrize("case", CORPUS, ids=[f"{i:03d}" for i in range(len(CORPUS))])
def test_ddl_corpus(case: dict[str, Any]) -> None:
    parser = MySqlDdlParser(parse_online_schema_changes=bool(case.get("online")))
    schemas = {ORDERS.table_id: ORDERS, USERS.table_id: USERS}
    db = case.get("db", "shop")

    def schema_of(t: TableId) -> TableSchema | None:
        return schemas.get(t)

    for ddl in case.get("sequence", []):
        assert parser.parse_captured(ddl, db, _captured, schema_of) == []
    if case.get("error"):
        with pytest.raises(DdlParseError) as info:
            parser.parse_captured(case["ddl"], db, _captured, schema_of)
        assert case["ddl"].strip()[:40] in str(info.value)  # the error quotes the DDL
        return
    events = parser.parse_captured(case["ddl"], db, _captured, schema_of)
    expected = case["events"]
    assert len(events) == len(expected), (
        f"expected {len(expected)} events, got {[_describe(e) for e in events]}\n  DDL: {case['ddl']}")
    table_default = None
    for exp, ev in zip(expected, events, strict=True):
        exp = dict(exp)
        if "table" not in exp and table_default:
            exp["table"] = table_default
        table_default = exp.get("table", table_default)
        _check(exp, _describe(ev), case["ddl"])
        assert ev.ddl == case["ddl"]


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 100
