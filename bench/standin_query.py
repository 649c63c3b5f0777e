"""The Doris stand-in's CPU per statement of its query API, and per CREATE TABLE.

``python -m bench.standin_query [TABLES]`` (default 300) starts a stand-in on free ports in a
temporary directory, creates TABLES tables of ``bench/estate.py``'s estate one at a time (as
``bench/standin_estate.py``'s ``tidemark`` format does), then sends TABLES each of: ``SELECT 1``; a
``SELECT COUNT(*)`` of one table; a whole-table parity statement of five tables (each time others) (``UNION ALL`` of
``COUNT(*)`` and ``SUM(CRC32(CONCAT_WS(...)))``, the shape of
``cdc_core/pipeline/parity/whole_tables.py``); ``SHOW FULL COLUMNS``; an ``information_schema.COLUMNS``
read of one table — and the parity statements of the whole estate (50 tables a statement) twice, the
first time as a fresh stand-in sees them. It prints the stand-in's CPU (``/proc``) per statement in
milliseconds (``_ms``), or in all in seconds (``_s``): a figure that stays meaningful when the machine
is busy. ``$STANDIN_ROOT`` runs the stand-in of another checkout (an A/B pair).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import requests

from bench.standin_estate import _TIDEMARK_DDL, AUTH, ROOT, _cpu_s, _free_port, _tidemark_kind, wait_until_up

_KEYS = {"bigint": ("id",), "composite": ("a", "b"), "varchar": ("k",)}


def _wholes(tables: Sequence[int], of: int) -> str:
    """The whole-table parity statement of ``tables`` (of ``of`` in the estate)."""
    return " UNION ALL ".join(
        f"SELECT {n} AS n, COUNT(*) AS c, COALESCE(SUM(CAST(CRC32(CONCAT_WS('|', "
        + ", ".join([f"`{c}`" for c in _KEYS[_tidemark_kind(t, of)]]
                    + ["COALESCE(CONCAT('v', `name`), 'n')", "COALESCE(CAST(`amount` AS STRING), 'n')",
                       "COALESCE(CAST(`ts` AS STRING), 'n')", "COALESCE(`__tidemark_seq`, 'n')"])
        + f")) AS DECIMAL(38, 0))), 0) AS s FROM `t{t}`" for n, t in enumerate(tables))


def main(tables: int = 300) -> dict[str, float]:
    root = os.environ.get("STANDIN_ROOT") or str(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        fe_port, be_port = _free_port(), _free_port()
        proc = subprocess.Popen(
            [sys.executable, "-m", "devstack.doris", "--host", "127.0.0.1", "--fe-port", str(fe_port),
             "--be-port", str(be_port), "--data-dir", str(Path(tmp) / "data")],
            cwd=root, env=dict(os.environ, PYTHONPATH=root), stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        fe = f"http://127.0.0.1:{fe_port}"
        session = requests.Session()
        session.auth = AUTH
        try:
            wait_until_up(fe, session.get)

            def query(stmt: str, db: str = "many") -> None:
                r = session.post(f"{fe}/api/query/default_cluster/{db}", json={"stmt": stmt}, timeout=60)
                assert r.json()["code"] == 0, r.text

            query("CREATE DATABASE many", "information_schema")
            out: dict[str, float] = {}

            def each(name: str, stmt: Callable[[int], str]) -> None:
                cpu0 = _cpu_s(proc.pid)
                for i in range(tables):
                    query(stmt(i))
                out[f"{name}_ms"] = round((_cpu_s(proc.pid) - cpu0) / tables * 1000, 2)

            each("create_table", lambda i: f"CREATE TABLE IF NOT EXISTS t{i} ({_TIDEMARK_DDL[_tidemark_kind(i, tables)]} "
                 "BUCKETS AUTO PROPERTIES ('replication_num' = '1', 'function_column.sequence_col' = '__tidemark_seq')")
            each("select_1", lambda i: "SELECT 1")
            each("count", lambda i: f"SELECT COUNT(*) FROM `t{i}`")
            each("parity_5_tables", lambda i: _wholes([(i + n) % tables for n in range(5)], tables))
            each("show_full_columns", lambda i: f"SHOW FULL COLUMNS FROM `many`.`t{i}`")
            each("information_schema_columns", lambda i: "SELECT `TABLE_NAME`, `COLUMN_NAME` FROM "
                 f"`INFORMATION_SCHEMA`.`COLUMNS` WHERE TABLE_SCHEMA = 'many' AND TABLE_NAME = 't{i}'")
            for run in ("first", "again"):
                cpu0 = _cpu_s(proc.pid)
                for first in range(0, tables, 50):
                    query(_wholes(range(first, min(tables, first + 50)), tables))
                out[f"parity_estate_{run}_s"] = round(_cpu_s(proc.pid) - cpu0, 2)
            out["loadavg_1m"] = os.getloadavg()[0]
            return out
        finally:
            proc.terminate()
            proc.wait(30)


if __name__ == "__main__":
    print(json.dumps(main(*[int(a) for a in sys.argv[1:2]])))
