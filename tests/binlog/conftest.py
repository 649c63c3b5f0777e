"""Helpers for binlog tests: the CDC user's settings, current offsets, schemas from the server."""

from __future__ import annotations

import itertools

import pymysql
import pytest

from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId, TableSchema
from cdc_core.mysql.binlog_status import read_current_offset
from cdc_core.mysql.discovery import read_table_schema

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
    """The table's schema as the snapshot's discovery reads it (the schema both paths share)."""
    return read_table_schema(conn, table_id)


@pytest.fixture
def schema_lookup(root_conn):
    return lambda table_id: read_schema(root_conn, table_id)
