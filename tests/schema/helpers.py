"""Helpers for the schema-evolution tests: MySQL writes, Doris reads, driving the stream and the job."""

from __future__ import annotations

from typing import Any

import requests

from cdc_core.pipeline.schema_change import SchemaChangeSteps
from cdc_core.pipeline.service import PipelineService

HIDDEN = {"__tidemark_seq", "__DORIS_DELETE_SIGN__", "__DORIS_SEQUENCE_COL__"}


def sql(root_conn: Any, *statements: str) -> None:
    with root_conn.cursor() as cur:
        for s in statements:
            cur.execute(s)


def mysql_rows(root_conn: Any, db: str, table: str) -> tuple[list[str], list[tuple]]:
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT * FROM `{db}`.`{table}` ORDER BY 1")
        names = [d[0] for d in cur.description]
        return names, [tuple(r) for r in cur.fetchall()]


def doris(standin: Any, db: str, statement: str) -> dict[str, Any]:
    resp = requests.post(f"http://{standin.fe_http}/api/query/default_cluster/{db}", json={"stmt": statement},
                         auth=("root", ""), timeout=60)
    return resp.json()


def doris_columns(standin: Any, db: str, table: str) -> dict[str, str] | None:
    """Doris's columns (name → type) of a table through its SQL API; None if it does not exist."""
    body = doris(standin, db, f"SHOW FULL COLUMNS FROM `{table}`")
    if body.get("code") != 0:
        return None
    return {row[0]: row[1].lower() for row in body["data"]["data"] if row[0] not in HIDDEN}


def doris_rows(standin: Any, db: str, table: str, columns: list[str]) -> list[tuple]:
    cols = ", ".join(f"`{c}`" for c in columns)
    body = doris(standin, db, f"SELECT {cols} FROM `{table}` ORDER BY 1")
    assert body.get("code") == 0, body
    return [tuple(r) for r in body["data"]["data"]]


def _norm(v: Any) -> Any:
    if v is None:
        return None
    return str(v)


def assert_rows_match(standin: Any, root_conn: Any, db: str, table: str, *, doris_table: str | None = None,
                      extra_null: bool = True) -> None:
    """Doris holds MySQL's rows on the columns both have; columns only Doris has (kept by lenient or
    ignore) are NULL: every row was written after the DDL that left them behind."""
    doris_table = doris_table or table
    names, rows = mysql_rows(root_conn, db, table)
    dcols = doris_columns(standin, db, doris_table)
    assert dcols is not None, f"Doris has no table {doris_table}"
    shared = [n for n in names if n in dcols]
    got = doris_rows(standin, db, doris_table, shared)
    idx = [names.index(n) for n in shared]
    want = [tuple(_norm(r[i]) for i in idx) for r in rows]
    assert [tuple(_norm(v) for v in r) for r in got] == want, f"{doris_table}: Doris {got} vs MySQL {want}"
    if extra_null:
        extra = [c for c in dcols if c not in names]
        if extra and got:
            for r in doris_rows(standin, db, doris_table, extra):
                assert all(v is None for v in r), f"{doris_table}: columns {extra} should be NULL, got {r}"


def catch_up(runner: PipelineService, max_batches: int = 50) -> dict[str, Any] | None:
    """Run and commit batches until caught up; returns the DDL it stopped before (or None)."""
    for _ in range(max_batches):
        batch = runner.run_binlog_batch()
        runner.commit_batch(batch.batch_id)
        if batch.stopped_at_ddl:
            return batch.stopped_at_ddl
        if not batch.batch_id or batch.start_offset == batch.end_offset:
            return None
    raise AssertionError("the stream did not catch up")


def carry_next_ddl(runner: PipelineService, *, after_flush: Any = None, run_id: str = "test") -> dict[str, Any]:
    """The job's four steps for the next DDL the scanner finds (as the sensor would launch it)."""
    steps = SchemaChangeSteps(runner, run_id=run_id)
    found = steps.next_ddl()
    assert found is not None, "the DDL scanner found no DDL"
    out = {"found": found, "quiesce": steps.quiesce(found.offset), "flush": steps.flush()}
    if after_flush is not None:
        after_flush(out)
    out["apply"] = steps.apply()
    out["resume"] = steps.resume()
    return out
