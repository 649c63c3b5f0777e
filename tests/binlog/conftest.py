"""Helpers for binlog tests: the CDC user's settings, current offsets, schemas from the server."""

from __future__ import annotations

import itertools

import pymysql
import pytest

from cdc_core.mysql.offsets import BinlogOffset, read_current_offset
from cdc_core.schema import Column, TableId, TableSchema

_server_ids = itertools.count(7001)


def next_server_id() -> int:
    """A distinct replica id per reader: the server kills an older dump thread with the same id."""
    return next(_server_ids)


@pytest.fixture
def settings(mysql_server) -> dict:
    ep = mysql_server.endpoint
    return {"host": ep.host, "port": ep.port, "user": ep.user, "password": ep.password}


def current_offset(conn) -> BinlogOffset:
    with conn.cursor() as cur:
        return read_current_offset(cur)


def read_schema(conn: pymysql.connections.Connection, table_id: TableId) -> TableSchema:
    """A TableSchema from information_schema (test-side; production uses discovery)."""
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(
            "SELECT COLUMN_NAME, COLUMN_TYPE, DATA_TYPE, IS_NULLABLE, COLUMN_DEFAULT, COLUMN_COMMENT, "
            "CHARACTER_SET_NAME, CHARACTER_MAXIMUM_LENGTH, NUMERIC_PRECISION, NUMERIC_SCALE, "
            "DATETIME_PRECISION, COLUMN_KEY FROM information_schema.COLUMNS "
            "WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s ORDER BY ORDINAL_POSITION",
            (table_id.database, table_id.table),
        )
        rows = cur.fetchall()
        cur.execute(
            "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA=%s "
            "AND TABLE_NAME=%s AND CONSTRAINT_NAME='PRIMARY' ORDER BY ORDINAL_POSITION",
            (table_id.database, table_id.table),
        )
        pk = tuple(r["COLUMN_NAME"] for r in cur.fetchall())
    if not rows:
        raise KeyError(table_id)
    cols = tuple(
        Column(
            r["COLUMN_NAME"], r["COLUMN_TYPE"], r["DATA_TYPE"], r["IS_NULLABLE"] == "YES", r["COLUMN_DEFAULT"],
            r["COLUMN_COMMENT"] or "", r["CHARACTER_SET_NAME"], r["CHARACTER_MAXIMUM_LENGTH"],
            r["NUMERIC_PRECISION"], r["NUMERIC_SCALE"], r["DATETIME_PRECISION"],
        )
        for r in rows
    )
    return TableSchema(table_id, cols, pk)


@pytest.fixture
def schema_lookup(root_conn):
    return lambda table_id: read_schema(root_conn, table_id)
