"""A table name that changes hands in the binlog: ``DROP TABLE t`` or ``RENAME TABLE t TO t_old``,
then a new ``CREATE TABLE t`` with other columns. Found by the corpus (tests/corpus/): MariaDB's
own tests do this all the time, and so do online schema change tools. The stream used to keep the
old table's chunk for the name, whose key column the new table lacks ("table t has no column ..."):
the stream stopped for good at the new table's first row."""

from __future__ import annotations

import pytest

from jobs.spark_executor import spark_service
from tests.schema.helpers import assert_rows_match, catch_up, sql


@pytest.mark.parametrize("retire", ["RENAME TABLE `{db}`.t TO `{db}`.t_old", "DROP TABLE `{db}`.t"])
def test_a_new_table_under_an_old_name_streams_with_its_own_columns(retire, pipeline_factory, root_conn, fresh_db,
                                                                    doris_standin):
    db = fresh_db
    runner = spark_service(pipeline_factory(f"{db}.\\.*", source={"scan.startup.mode": "latest-offset"},
                                            pipeline={"schema.change.behavior": "evolve"}))
    try:
        runner.binlog_lag()  # fixes the latest offset as the stream's start
        sql(root_conn, f"CREATE TABLE `{db}`.t (col1 INT PRIMARY KEY, v VARCHAR(10))",
            f"INSERT INTO `{db}`.t VALUES (1, 'old'), (2, 'old')")
        for _ in range(3):
            if catch_up(runner) is None:
                break
            runner.schema_change_steps().run()
        sql(root_conn, retire.format(db=db),
            f"CREATE TABLE `{db}`.t (name VARCHAR(20) PRIMARY KEY, n INT)",
            f"INSERT INTO `{db}`.t VALUES ('new', 1), ('newest', 1), ('newer', 2)",
            f"UPDATE `{db}`.t SET n = 3 WHERE name = 'newer'")
        for _ in range(6):
            if catch_up(runner) is None:
                break
            runner.schema_change_steps().run()
        else:
            raise AssertionError("the stream did not catch up")
        assert_rows_match(doris_standin, root_conn, db, "t")
        if retire.startswith("RENAME"):
            assert_rows_match(doris_standin, root_conn, db, "t_old")
    finally:
        runner.close()
