"""The FE's metadata endpoints (schema, light schema change, backends, health) and SQL over HTTP
(the query API: DDL, queries, its row limit and errors)."""

from __future__ import annotations

import requests

from .conftest import AUTH, StandInProcess
from .helpers import JSONL, jsonl, make_users


def test_schema_light_schema_change_backends_health(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    r = requests.get(f"{doris.fe}/api/{db}/users/_schema", auth=AUTH).json()
    assert r["code"] == 0 and r["msg"] == "success"
    data = r["data"]
    assert data["status"] == 200 and data["keysType"] == "UNIQUE_KEYS"
    props = {p["name"]: p for p in data["properties"]}
    assert props["id"]["type"] == "BIGINT" and props["id"]["is_key"] == "Yes" and props["id"]["comment"] == "primary key"
    assert props["amount"]["type"] == "DECIMAL64" and (props["amount"]["precision"], props["amount"]["scale"]) == (
        "10", "2")
    assert props["name"]["aggregation_type"] == "REPLACE"
    r = requests.get(f"{doris.fe}/api/{db}/nope/_schema", auth=AUTH).json()
    assert r["code"] == 1 and r["msg"] == "Error"

    url = f"{doris.fe}/api/enable_light_schema_change/{db}/users"
    assert requests.get(url, auth=AUTH, json={"isDropColumn": False, "columnName": "x"}).json() == {
        "msg": "success", "code": 0, "data": None, "count": 0}
    r = requests.get(url, auth=AUTH, json={"isDropColumn": True, "columnName": "id"}).json()
    assert r["code"] == 1 and r["data"] == ("Column id is primary key in materializedIndex that can't do the light "
                                            "schema change")
    assert requests.get(url, auth=AUTH, json={"isDropColumn": True, "columnName": "name"}).json()["code"] == 0

    r = requests.get(f"{doris.fe}/api/backends?is_alive=true", auth=AUTH).json()
    assert r["code"] == 0 and r["data"]["backends"] == [{"ip": "127.0.0.1", "http_port": doris.be_port,
                                                         "is_alive": True}]
    assert requests.get(f"{doris.fe}/api/health").json() == {
        "msg": "success", "code": 0, "data": {"online_backend_num": 1, "total_backend_num": 1}, "count": 0}
    assert requests.get(f"{doris.be}/").status_code == 200
    assert requests.get(f"{doris.fe}/api/{db}/get_load_state", auth=AUTH).json()["code"] == 403


def test_sql_ddl_and_queries(doris: StandInProcess, db: str) -> None:
    res = doris.q(f"CREATE DATABASE IF NOT EXISTS `{db}`")
    assert res["code"] == 0 and res["data"]["type"] == "exec_status" and res["msg"] == "success"
    res = doris.q(f"CREATE DATABASE `{db}`")
    assert res == {"msg": "Error", "code": 1, "count": 0, "data": res["data"]}
    assert res["data"].startswith("Failed to execute sql: ") and f"Can't create database '{db}'" in res["data"]
    doris.ok(f"""CREATE TABLE IF NOT EXISTS `{db}`.`orders`(
        `id` BIGINT NOT NULL COMMENT 'pk',
        `cust` VARCHAR(30) DEFAULT 'anon' COMMENT 'it''s a customer',
        `total` DECIMALV3(12,2) COMMENT 't',
        `placed` DATETIMEV2(6),
        `day` DATEV2,
        `flag` BOOLEAN,
        `tiny` TINYINT, `small` SMALLINT, `i` INT, `big` LARGEINT,
        `f` FLOAT, `d` DOUBLE, `c` CHAR(3), `s` STRING, `j` JSONB,
        `seq` BIGINT
    ) UNIQUE KEY(`id`) COMMENT 'orders'
    DISTRIBUTED BY HASH(`id`) BUCKETS 4
    PROPERTIES ("replication_num" = "1", "function_column.sequence_col" = "seq")""")
    row = {"id": 1, "cust": "ann", "total": "12345678.91", "placed": "2026-01-02 03:04:05.123456", "day": "2026-01-02",
           "flag": True, "tiny": -128, "small": 32767, "i": 2147483647, "big": "170141183460469231731687303715884105727",
           "f": 1.5, "d": 2.25, "c": "abc", "s": "long text", "j": {"a": [1, 2]}, "seq": 1}
    res = doris.load(db, "orders", jsonl(row), **JSONL)
    assert res["Status"] == "Success", res
    data = doris.ok("SELECT * FROM orders", db)
    assert [m["name"] for m in data["meta"]] == list(row)
    assert data["data"] == [[1, "ann", 12345678.91, "2026-01-02 03:04:05.123456", "2026-01-02", True, -128, 32767,
                             2147483647, 170141183460469231731687303715884105727, 1.5, 2.25, "abc", "long text",
                             '{"a":[1,2]}', 1]]
    # exact decimals are JSON numbers in the raw body
    raw = requests.post(f"{doris.fe}/api/query/default_cluster/{db}", json={"stmt": "SELECT total FROM orders"},
                        auth=AUTH).text
    assert '"data":[[12345678.91]]' in raw

    for i in range(2, 8):
        doris.load(db, "orders", jsonl({"id": i, "cust": f"c{i % 3}", "total": i * 10, "seq": 1}), **JSONL)
    assert doris.rows("SELECT cust, count(*), sum(total) FROM orders WHERE id > 1 GROUP BY cust ORDER BY cust", db) == [
        ["c0", 2, 90.0], ["c1", 2, 110.0], ["c2", 2, 70.0]]
    agg = doris.ok("SELECT count(*), max(id) FROM orders", db)
    assert [m["name"] for m in agg["meta"]] == ["count(*)", "max(id)"]
    assert doris.rows("SELECT id FROM orders ORDER BY id DESC LIMIT 2", db) == [[7], [6]]
    assert len(doris.ok("SELECT id FROM orders", db, )["data"]) == 7
    assert len(doris.q("SELECT id FROM orders", db, limit=3)["data"]["data"]) == 3

    # information_schema lookups exactly as the connector issues them
    q = (f"SELECT COLUMN_NAME FROM information_schema.`COLUMNS` WHERE TABLE_SCHEMA = '{db}' AND TABLE_NAME = "
         "'orders' AND COLUMN_NAME = 'cust'")
    assert doris.rows(q, db) == [["cust"]]
    assert doris.rows(f"SELECT `SCHEMA_NAME` FROM `INFORMATION_SCHEMA`.`SCHEMATA` WHERE SCHEMA_NAME = '{db}'",
                      "information_schema") == [[db]]
    assert doris.rows("SELECT DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, COLUMN_KEY, COLUMN_COMMENT FROM "
                      f"information_schema.COLUMNS WHERE TABLE_SCHEMA = '{db}' AND COLUMN_NAME IN ('id', 'cust') "
                      "ORDER BY ORDINAL_POSITION", db) == [
        ["bigint", "bigint", "NO", "UNI", "pk"], ["varchar", "varchar(30)", "YES", "", "it's a customer"]]

    # SHOW FULL COLUMNS (row[0] name, row[5] default)
    cols = doris.ok(f"SHOW FULL COLUMNS FROM `{db}`.`orders`", db)
    assert [m["name"] for m in cols["meta"]] == ["Field", "Type", "Collation", "Null", "Key", "Default", "Extra",
                                                 "Privileges", "Comment"]
    assert cols["data"][1][0] == "cust" and cols["data"][1][5] == "anon"

    # ALTER TABLE: add / drop / rename / modify, as the connector writes them
    doris.ok(f"ALTER TABLE `{db}`.`orders` ADD COLUMN `note` VARCHAR(10) DEFAULT 'n/a' COMMENT 'new'")
    assert doris.rows("SELECT note FROM orders WHERE id = 1", db) == [["n/a"]]
    doris.ok(f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `note` VARCHAR(50) DEFAULT 'n/a' COMMENT 'wider'")
    doris.ok(f"ALTER TABLE `{db}`.`orders` RENAME COLUMN `note` `remark`")
    doris.ok(f"ALTER TABLE `{db}`.`orders` DROP COLUMN `s`")
    doris.ok(f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `small` INT")
    schema = requests.get(f"{doris.fe}/api/{db}/orders/_schema", auth=AUTH).json()["data"]
    by_name = {p["name"]: p for p in schema["properties"]}
    assert "s" not in by_name and by_name["remark"]["comment"] == "wider" and by_name["small"]["type"] == "INT"
    assert schema["schema_version"] == 5
    assert doris.rows("SELECT remark, small FROM orders WHERE id = 1", db) == [["n/a", 32767]]
    for stmt, msg in [
        (f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `remark` VARCHAR(5) DEFAULT 'n/a'", "Cannot shorten string length"),
        # Column.checkSchemaChangeAllowed: a MODIFY restates the default, and keeps a nullable column nullable
        (f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `remark` VARCHAR(60)", "Can not change default value"),
        (f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `remark` VARCHAR(60) DEFAULT 'x'", "Can not change default value"),
        (f"ALTER TABLE `{db}`.`orders` MODIFY COLUMN `remark` VARCHAR(60) NOT NULL DEFAULT 'n/a'",
         "Can not change from nullable to non-nullable"),
        (f"ALTER TABLE `{db}`.`orders` ADD COLUMN `jd` JSON DEFAULT '{{}}'",
         "JSONB or VARIANT type column default value just support null"),
        (f"ALTER TABLE `{db}`.`orders` DROP COLUMN `id`", "Can not drop key column in Unique data model table"),
        (f"ALTER TABLE `{db}`.`orders` ADD COLUMN `cust` INT", "Can not add column which already exists"),
        (f"ALTER TABLE `{db}`.`orders` DROP COLUMN `zzz`", "Column does not exists: zzz"),
        ("SELECT * FROM missing_table", "does not exist"),
        ("INSERT INTO orders VALUES (1)", "Unsupported statement type"),
        (f"CREATE TABLE `{db}`.`bad` (`a` INT, `b` INT) UNIQUE KEY(`b`) DISTRIBUTED BY HASH(`b`)",
         "Key columns should be a ordered prefix of the schema"),
        (f"CREATE TABLE `{db}`.`bad` (`a` INT) DUPLICATE KEY(`a`) DISTRIBUTED BY HASH(`a`) "
         "PROPERTIES ('replication_num'='3')", "Failed to find enough backend"),
    ]:
        res = doris.q(stmt, db)
        assert res["code"] == 1 and res["msg"] == "Error" and msg in res["data"], (stmt, res)

    doris.ok(f"TRUNCATE TABLE `{db}`.`orders`")
    assert doris.rows("SELECT count(*) FROM orders", db) == [[0]]
    doris.ok(f"DROP TABLE `{db}`.`orders`")
    assert doris.q("SELECT * FROM orders", db)["code"] == 1
    assert doris.rows(f"SELECT count(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = '{db}'", db) == [[0]]
    assert doris.q("", db)["code"] == 403


def test_names_follow_doris_identifier_rules(doris: StandInProcess, db: str) -> None:
    """Doris's FeNameFormat in unicode mode: table names start with a letter and hold letters,
    digits, '-' and '_' (at most 64 characters); column names may hold '"', spaces and punctuation
    but no single quote or backtick; reserved words are fine when quoted."""
    tail = " DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES ('replication_num' = '1')"
    for table in ("select", "café_ñ", "订单", "t" + "x" * 63):
        doris.ok(f"CREATE TABLE `{db}`.`{table}` (`id` INT, `order` INT, `a\"b` INT, `列 名` INT) "
                 f"DUPLICATE KEY(`id`){tail}")
    for table, why in (("it's", "regex"), ("a``b", "regex"), ("_x", "regex"), ("2024x", "regex"),
                       ("t" + "x" * 64, "table_name_length_limit")):
        res = doris.q(f"CREATE TABLE `{db}`.`{table}` (`id` INT) DUPLICATE KEY(`id`){tail}")
        assert res["code"] == 1 and "Incorrect table name" in res["data"] and why in res["data"], res
    for column in ("it's", "a``b"):
        res = doris.q(f"CREATE TABLE `{db}`.ok2 (`id` INT, `{column}` INT) DUPLICATE KEY(`id`){tail}")
        assert res["code"] == 1 and "Incorrect column name" in res["data"], res
        res = doris.q(f"ALTER TABLE `{db}`.`select` ADD COLUMN `{column}` INT")
        assert res["code"] == 1 and "Incorrect column name" in res["data"], res
    res = doris.q(f"ALTER TABLE `{db}`.`select` RENAME `it's`")
    assert res["code"] == 1 and "Incorrect table name" in res["data"], res
    res = doris.q("CREATE DATABASE `it's`")
    assert res["code"] == 1 and "Incorrect database name" in res["data"], res
