"""Sharded tables routed many-to-one evolve their Doris table to the widest schema of all sources,
as Flink CDC does: columns are added (never dropped), types widened to hold every source's values."""

from __future__ import annotations

from jobs.spark_executor import spark_service
from tests.schema.helpers import carry_next_ddl, catch_up, doris_columns, doris_rows, mysql_rows, sql


def test_many_to_one_route_evolves_to_the_widest_schema(pipeline_factory, root_conn, fresh_db, doris_standin):
    db, standin = fresh_db, doris_standin
    sql(root_conn, f"CREATE TABLE `{db}`.t_1 (id INT PRIMARY KEY, v INT NOT NULL)",
        f"CREATE TABLE `{db}`.t_2 (id INT PRIMARY KEY, v INT NOT NULL)")
    runner = spark_service(pipeline_factory(
        f"{db}.t_\\d+", source={"scan.startup.mode": "latest-offset"}, pipeline={"schema.change.behavior": "evolve"},
        route=[{"source-table": f"{db}.t_\\d+", "sink-table": f"{db}.all"}]))
    runner.binlog_lag()
    sql(root_conn, f"INSERT INTO `{db}`.t_1 VALUES (1, 1), (2, 2)", f"INSERT INTO `{db}`.t_2 VALUES (101, 101)")
    assert catch_up(runner) is None

    ddls = [
        (f"ALTER TABLE `{db}`.t_1 ADD COLUMN c VARCHAR(10)", [f"UPDATE `{db}`.t_1 SET c = CONCAT('one', id)"]),
        (f"ALTER TABLE `{db}`.t_2 MODIFY v BIGINT NOT NULL", [f"UPDATE `{db}`.t_2 SET v = v + 5000000000"]),
        (f"ALTER TABLE `{db}`.t_2 ADD COLUMN c VARCHAR(30)",
         [f"INSERT INTO `{db}`.t_2 VALUES (102, 102, 'a rather long text value')"]),
        (f"ALTER TABLE `{db}`.t_1 DROP COLUMN v", [f"INSERT INTO `{db}`.t_1 VALUES (3, 'three')"]),
    ]
    v_before_drop = {}
    for ddl, after in ddls:
        if "DROP COLUMN v" in ddl:
            v_before_drop = {r[0]: r[1] for r in mysql_rows(root_conn, db, "t_1")[1]}
        sql(root_conn, ddl, *after)
        out = carry_next_ddl(runner)
        assert all(c["outcome"] in ("applied", "skipped", "ignored") for c in out["apply"]["changes"])
        assert catch_up(runner) is None

    cols = doris_columns(standin, db, "all")
    assert cols == {"id": "int", "v": "bigint", "c": "varchar(120)"}  # utf8mb4: 4 bytes a character
    want = []
    for table in ("t_1", "t_2"):
        names, rows = mysql_rows(root_conn, db, table)
        for r in rows:
            row = dict(zip(names, r, strict=True))
            # t_1's rows written before it dropped v keep their v (a merged table keeps columns); later ones have none
            v = row["v"] if "v" in row else v_before_drop.get(row["id"])
            want.append((row["id"], v, row.get("c")))
    got = [tuple(r) for r in doris_rows(standin, db, "all", ["id", "v", "c"])]
    assert got == sorted(want, key=lambda r: r[0])
    assert (3, None, "three") in got and v_before_drop == {1: 1, 2: 2}
