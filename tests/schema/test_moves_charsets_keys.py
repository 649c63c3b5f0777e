"""Column moves, charset conversions and primary-key changes through the schema-change job, end to
end: real MariaDB binlog, the runner's stream, the job's steps, the Doris stand-in.

A move and a table charset change must never stop the stream or fail the job (Doris needs no
change for them), while the schema history follows MySQL's column order and charsets; a key
change Doris cannot follow stops the job with the table and the fix named.
"""

from __future__ import annotations

import pytest

from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.mysql.schema_history import SchemaHistory
from cdc_core.pipeline.schema_change import SchemaChangeApplyError, SchemaChangeSteps
from cdc_core.schema_evolution.derivation import SchemaChangeRefused
from cdc_core.schema_evolution.registry import RequestStatus, SchemaRegistry
from jobs.spark_executor import spark_service
from tests.binlog.conftest import read_schema
from tests.schema.helpers import assert_rows_match, carry_next_ddl, catch_up, doris_columns, sql


def _history(runner, table: TableId, ddl_offset: dict):
    return SchemaHistory(runner.store).schema_at(table, BinlogOffset.from_dict(ddl_offset))


@pytest.mark.parametrize(("behavior", "c_type"), [("lenient", "TEXT"), ("exception", "VARCHAR(20)")])
def test_moves_and_charsets_carry_over_and_a_key_change_stops_with_the_fix(behavior, c_type, pipeline_factory,
                                                                             root_conn, fresh_db, doris_standin):
    """Under ``exception`` the conversion changes charsets only (a VARCHAR), which Doris does not
    have, so nothing is refused; under ``lenient`` TEXT becomes MEDIUMTEXT (both STRING in Doris)."""
    db, t = fresh_db, TableId(fresh_db, "t")
    sql(root_conn, f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, a INT, b VARCHAR(10), c {c_type}) DEFAULT CHARSET=latin1")
    runner = spark_service(pipeline_factory(f"{db}.t", source={"scan.startup.mode": "latest-offset"},
                                            pipeline={"schema.change.behavior": behavior}))
    runner.binlog_lag()
    sql(root_conn, f"INSERT INTO `{db}`.t VALUES (1, 1, 'caf\u00e9', 'na\u00efve'), (2, 2, 'b', 'c')")
    assert catch_up(runner) is None
    columns_before = list(doris_columns(doris_standin, db, "t"))

    # a move: no Doris change (not even a refusal under 'exception'), the history in MySQL's order
    sql(root_conn, f"ALTER TABLE `{db}`.t MODIFY c {c_type} FIRST, MODIFY a INT AFTER b",
        f"INSERT INTO `{db}`.t VALUES ('d\u00e9j\u00e0', 3, 'x', 3)", f"UPDATE `{db}`.t SET a = a + 10")
    assert catch_up(runner) is not None
    out = carry_next_ddl(runner)
    assert out["apply"]["changes"] == [] and out["resume"]["status"] == "IDLE"
    history = _history(runner, t, out["resume"]["ddl_offset"])
    assert history.column_names == read_schema(root_conn, t).column_names == ("c", "id", "b", "a")
    assert catch_up(runner) is None
    assert list(doris_columns(doris_standin, db, "t")) == columns_before
    assert_rows_match(doris_standin, root_conn, db, "t")

    # CONVERT TO utf8mb4: the columns' charsets (and TEXT → MEDIUMTEXT) follow, so 4-byte characters decode
    sql(root_conn, f"ALTER TABLE `{db}`.t CONVERT TO CHARACTER SET utf8mb4",
        f"INSERT INTO `{db}`.t VALUES ('\U0001f600 smile', 4, '\u00fc\U0001f680', 4)")
    assert catch_up(runner) is not None
    out = carry_next_ddl(runner)
    assert out["resume"]["status"] == "IDLE"
    history = _history(runner, t, out["resume"]["ddl_offset"])
    server = read_schema(root_conn, t)
    assert [(c.name, c.column_type, c.charset) for c in history.columns] == [
        (c.name, c.column_type, c.charset) for c in server.columns]
    assert history.column("c").column_type == ("mediumtext" if c_type == "TEXT" else "varchar(20)")
    assert history.charset == "utf8mb4"
    assert catch_up(runner) is None
    assert_rows_match(doris_standin, root_conn, db, "t")

    # a primary-key change: Doris cannot re-key its UNIQUE table, the job stops naming the table and the fix
    sql(root_conn, f"ALTER TABLE `{db}`.t DROP PRIMARY KEY, ADD PRIMARY KEY (id, a)")
    assert catch_up(runner) is not None
    steps = SchemaChangeSteps(runner, run_id="test")
    found = steps.next_ddl()
    steps.quiesce(found.offset)
    steps.flush()
    expected = SchemaChangeApplyError if behavior == "lenient" else SchemaChangeRefused
    with pytest.raises(expected) as info:
        steps.apply()
    message = str(info.value)
    assert f"{db}.t" in message
    if behavior == "lenient":
        assert "tidemark resnapshot" in message and "--table" in message and "exclude.schema.changes" in message
    assert SchemaRegistry(runner.store).status is RequestStatus.APPLYING  # the stream stays paused at the DDL
