"""Data semantics: unique-key upserts, the delete-sign and sequence columns, merge types, duplicate-key
tables."""

from __future__ import annotations

import requests

from .conftest import AUTH, StandInProcess
from .helpers import JSONL, jsonl, make_users


def test_unique_upsert_whole_row_and_json_key_matching(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    doris.load(db, "users", jsonl({"id": 1, "name": "a", "amount": 1}, {"id": 2, "name": "b", "amount": 2}), **JSONL)
    # whole-row replace: the missing 'amount' becomes NULL; unknown keys are ignored
    res = doris.load(db, "users", jsonl({"id": 1, "name": "a2", "unknown": {"x": 1}}), **JSONL)
    assert res["Status"] == "Success" and res["NumberLoadedRows"] == 1
    assert doris.rows("SELECT id, name, amount FROM users ORDER BY id", db) == [[1, "a2", None], [2, "b", 2.0]]
    # NOT NULL violations filter the row
    res = doris.load(db, "users", jsonl({"name": "no id"}, {"id": 3}), max_filter_ratio="0.5", **JSONL)
    assert (res["NumberLoadedRows"], res["NumberFilteredRows"]) == (1, 1)
    assert "column(id) values is null while columns is not nullable" in requests.get(res["ErrorURL"]).text
    # within one load the last row of a key wins
    doris.load(db, "users", jsonl({"id": 5, "name": "first"}, {"id": 5, "name": "last"}), **JSONL)
    assert doris.rows("SELECT name FROM users WHERE id = 5", db) == [["last"]]


def test_delete_sign_hidden_columns_and_merge_types(doris: StandInProcess, db: str) -> None:
    make_users(doris, db)
    doris.load(db, "users", jsonl(*[{"id": i, "name": f"n{i}"} for i in range(1, 7)]), **JSONL)
    res = doris.load(db, "users", jsonl({"id": 1, "__DORIS_DELETE_SIGN__": "1"}, {"id": 2, "name": "keep",
                                        "__DORIS_DELETE_SIGN__": "0"}),
                     hidden_columns="__DORIS_DELETE_SIGN__", **JSONL)
    assert res["Status"] == "Success"
    assert doris.rows("SELECT id, name FROM users ORDER BY id", db)[:2] == [[2, "keep"], [3, "n3"]]
    # without hidden_columns the key is ignored (plain upsert)
    doris.load(db, "users", jsonl({"id": 3, "name": "still", "__DORIS_DELETE_SIGN__": 1}), **JSONL)
    assert doris.rows("SELECT name FROM users WHERE id = 3", db) == [["still"]]
    doris.load(db, "users", jsonl({"id": 3}), merge_type="DELETE", **JSONL)
    doris.load(db, "users", "4,x,1\n5,y,0\n", column_separator=",", columns="id,name,flag",
               merge_type="MERGE", delete="flag=1")
    assert doris.rows("SELECT id, name FROM users ORDER BY id", db) == [[2, "keep"], [5, "y"], [6, "n6"]]
    res = doris.load(db, "users", jsonl({"id": 6}), delete="id=6", **JSONL)
    assert res["Message"].endswith("Not support DELETE ON clause when merge type is not MERGE.")
    # Doris reads the sign as a number: 1 and 1.0 delete just as "1" does.
    doris.load(db, "users", jsonl({"id": 7, "name": "a"}, {"id": 8, "name": "b"}), **JSONL)
    doris.load(db, "users", jsonl({"id": 7, "__DORIS_DELETE_SIGN__": 1}, {"id": 8, "__DORIS_DELETE_SIGN__": 1.0}),
               hidden_columns="__DORIS_DELETE_SIGN__", **JSONL)
    assert doris.rows("SELECT COUNT(*) FROM users WHERE id IN (7, 8)", db) == [[0]]
    res = doris.load(db, "users", jsonl({"id": 6}), merge_type="UPSERT", **JSONL)
    assert res["Status"] == "Fail" and "Invalid merge type UPSERT" in res["Message"]


def test_sequence_column_orders_upserts_and_deletes(doris: StandInProcess, db: str) -> None:
    make_users(doris, db, extra_props=", 'function_column.sequence_col' = 'ver'", extra_cols=",\n  `ver` BIGINT")
    h = {**JSONL, "hidden_columns": "__DORIS_DELETE_SIGN__"}
    doris.load(db, "users", jsonl({"id": 1, "name": "v5", "ver": 5}), headers=h)
    doris.load(db, "users", jsonl({"id": 1, "name": "v3", "ver": 3}), headers=h)  # older: ignored
    assert doris.rows("SELECT name, ver FROM users", db) == [["v5", 5]]
    doris.load(db, "users", jsonl({"id": 1, "name": "v5b", "ver": 5}), headers=h)  # tie: newer load wins
    assert doris.rows("SELECT name FROM users", db) == [["v5b"]]
    # in one batch the highest sequence wins regardless of order
    doris.load(db, "users", jsonl({"id": 2, "name": "b9", "ver": 9}, {"id": 2, "name": "b7", "ver": 7}), headers=h)
    assert doris.rows("SELECT name FROM users WHERE id = 2", db) == [["b9"]]
    # deletes obey the sequence: an older delete is ignored, a newer one hides the row and blocks older rows
    doris.load(db, "users", jsonl({"id": 1, "ver": 4, "__DORIS_DELETE_SIGN__": "1"}), headers=h)
    assert doris.rows("SELECT name FROM users WHERE id = 1", db) == [["v5b"]]
    doris.load(db, "users", jsonl({"id": 1, "ver": 6, "__DORIS_DELETE_SIGN__": "1"}), headers=h)
    assert doris.rows("SELECT count(*) FROM users WHERE id = 1", db) == [[0]]
    doris.load(db, "users", jsonl({"id": 1, "name": "late", "ver": 5}), headers=h)
    assert doris.rows("SELECT count(*) FROM users WHERE id = 1", db) == [[0]]
    doris.load(db, "users", jsonl({"id": 1, "name": "newer", "ver": 7}), headers=h)
    assert doris.rows("SELECT name FROM users WHERE id = 1", db) == [["newer"]]


def test_sequence_type_requires_mapping(doris: StandInProcess, db: str) -> None:
    doris.ok(f"CREATE TABLE `{db}`.`st` (`id` INT, `v` VARCHAR(10), `pos` BIGINT) UNIQUE KEY(`id`) "
             "DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES ('function_column.sequence_type' = 'bigint')")
    res = doris.load(db, "st", jsonl({"id": 1, "v": "a", "pos": 2}), **JSONL)
    assert res["Status"] == "Fail" and "Table st has sequence column, need to specify the sequence column" in res[
        "Message"]
    h = {**JSONL, "function_column.sequence_col": "pos"}
    doris.load(db, "st", jsonl({"id": 1, "v": "a", "pos": 2}), headers=h)
    doris.load(db, "st", jsonl({"id": 1, "v": "old", "pos": 1}), headers=h)
    assert doris.rows("SELECT v FROM st", db) == [["a"]]


def test_duplicate_key_tables_append(doris: StandInProcess, db: str) -> None:
    doris.ok(f"CREATE TABLE `{db}`.`ev` (`k` INT, `v` STRING) DUPLICATE KEY(`k`) DISTRIBUTED BY HASH(`k`) BUCKETS 1")
    doris.load(db, "ev", jsonl({"k": 1, "v": "a"}, {"k": 1, "v": "a"}), **JSONL)
    doris.load(db, "ev", jsonl({"k": 1, "v": "b"}), **JSONL)
    assert doris.rows("SELECT k, v FROM ev ORDER BY v", db) == [[1, "a"], [1, "a"], [1, "b"]]
    res = doris.load(db, "ev", jsonl({"k": 1}), merge_type="DELETE", **JSONL)
    assert res["Status"] == "Fail" and "need to upgrade table to support batch delete" in res["Message"]
    schema = requests.get(f"{doris.fe}/api/{db}/ev/_schema", auth=AUTH).json()["data"]
    assert schema["keysType"] == "DUP_KEYS"


def test_upserts_replace_their_rows_whatever_the_key(doris: StandInProcess, db: str) -> None:
    """A merge narrows its search to the batch's key range: rows of every key type are still found,
    including keys that need quoting and a NULL key."""
    cases = {
        "k_str": ("`k` VARCHAR(20)", ["a'b", "{x}", "z\\\\q", "m"], "UNIQUE KEY(`k`)"),
        "k_dt": ("`k` DATETIME(3)", ["2026-01-01 00:00:00.250", "2026-01-02 10:00:00.000", "2025-12-31 23:59:59.999"],
                 "UNIQUE KEY(`k`)"),
        "k_dec": ("`k` DECIMAL(12,4)", ["-1.5000", "2.2500", "100000.0001"], "UNIQUE KEY(`k`)"),
        "k_null": ("`k` INT NULL", [None, 5, 7], "UNIQUE KEY(`k`)"),
    }
    for name, (column, keys, model) in cases.items():
        doris.ok(f"CREATE TABLE `{db}`.`{name}` ({column}, `v` VARCHAR(10)) {model} DISTRIBUTED BY HASH(`k`) "
                 "BUCKETS 1 PROPERTIES ('replication_num' = '1')")
        doris.load(db, name, jsonl(*[{"k": k, "v": "old"} for k in keys]), **JSONL)
        doris.load(db, name, jsonl(*[{"k": k, "v": "new"} for k in keys[:2]]), **JSONL)
        doris.load(db, name, jsonl({"k": keys[-1], "v": "newest"}), **JSONL)
        got = sorted(r[0] for r in doris.rows(f"SELECT v FROM `{name}`", db))
        assert got == sorted(["new"] * 2 + ["old"] * (len(keys) - 3) + ["newest"]), (name, got)
    doris.ok(f"CREATE TABLE `{db}`.`k_two` (`a` INT, `b` VARCHAR(5), `v` INT) UNIQUE KEY(`a`, `b`) "
             "DISTRIBUTED BY HASH(`a`) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    doris.load(db, "k_two", jsonl(*[{"a": a, "b": b, "v": 0} for a in (1, 2, 3) for b in ("x", "y")]), **JSONL)
    doris.load(db, "k_two", jsonl({"a": 2, "b": "y", "v": 1}, {"a": 3, "b": "x", "v": 1}), **JSONL)
    assert doris.rows("SELECT a, b, v FROM k_two WHERE v = 1 ORDER BY a", db) == [[2, "y", 1], [3, "x", 1]]
    assert doris.rows("SELECT count(*) FROM k_two", db) == [[6]]


def test_tables_named_like_the_merges_own_aliases_merge_as_any_other(doris: StandInProcess, db: str) -> None:
    """A unique-key table may be called anything Doris allows, ``w`` and ``d`` included (``__new`` is
    not a table name Doris allows: one starts with a letter)."""
    h = {**JSONL, "hidden_columns": "__DORIS_DELETE_SIGN__"}
    for name in ("w", "d", "new", "old"):
        doris.ok(f"CREATE TABLE `{db}`.`{name}` (`id` BIGINT NOT NULL, `v` VARCHAR(8), `ver` BIGINT) "
                 "UNIQUE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1 "
                 "PROPERTIES ('replication_num' = '1', 'function_column.sequence_col' = 'ver')")
        doris.load(db, name, jsonl({"id": 1, "v": "a", "ver": 2}, {"id": 2, "v": "b", "ver": 2}), headers=h)
        doris.load(db, name, jsonl({"id": 1, "v": "old", "ver": 1}, {"id": 2, "__DORIS_DELETE_SIGN__": 1, "ver": 3}),
                   headers=h)
        assert doris.rows(f"SELECT id, v FROM `{name}` ORDER BY id", db) == [[1, "a"]]


def test_dates_before_year_1000_print_with_four_digit_years(doris, db):
    """Doris prints ``0016-07-14 17:17:17`` (the stored value was always right; strftime's %Y drops
    the zeros before year 1000 on Linux)."""
    doris.ok(f"CREATE TABLE `{db}`.`old` (`id` INT NOT NULL, `d` DATE, `t` DATETIME, `t6` DATETIME(6)) "
             "UNIQUE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    doris.load(db, "old", jsonl({"id": 1, "d": "0016-07-14", "t": "0016-07-14 17:17:17", "t6": "0001-01-01 00:00:00.5"},
                                {"id": 2, "d": "0999-12-31", "t": "0999-12-31 23:59:59", "t6": None}), **JSONL)
    assert doris.rows("SELECT d, t, t6 FROM old ORDER BY id", db) == [
        ["0016-07-14", "0016-07-14 17:17:17", "0001-01-01 00:00:00.500000"],
        ["0999-12-31", "0999-12-31 23:59:59", None]]


def test_one_byte_strings_keep_empty_and_null_apart(doris, db):
    """What a MySQL CHAR(0)/VARCHAR(0) becomes in Doris (CHAR(1)/VARCHAR(1)): '' stays '', NULL stays NULL."""
    doris.ok(f"CREATE TABLE `{db}`.`z` (`id` INT NOT NULL, `c` CHAR(1), `v` VARCHAR(1)) "
             "UNIQUE KEY(`id`) DISTRIBUTED BY HASH(`id`) BUCKETS 1 PROPERTIES ('replication_num' = '1')")
    doris.load(db, "z", jsonl({"id": 1, "c": "", "v": ""}, {"id": 2, "c": None, "v": None}), **JSONL)
    doris.load(db, "z", "3,,\n4,\\N,\\N\n", format="csv", column_separator=",")
    assert doris.rows("SELECT id, c, v FROM z ORDER BY id", db) == [
        [1, "", ""], [2, None, None], [3, "", ""], [4, None, None]]
