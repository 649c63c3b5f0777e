"""Database and table ids: issued from memory, held by the catalog rows, never reused."""

from __future__ import annotations

from devstack.doris.query import QueryExecutor
from devstack.doris.storage import Storage


def test_table_ids_are_never_reused_after_the_newest_table_is_dropped(tmp_path) -> None:
    """A CREATE writes no id counter (its catalog row holds its id); a DROP records the counter, so a
    table created after a restart gets an id above the dropped one's."""
    storage = Storage(tmp_path)
    run = QueryExecutor(storage).execute
    run("CREATE DATABASE d", "")
    ddl = "(id BIGINT NOT NULL, v VARCHAR(8)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1"
    run(f"CREATE TABLE d.a {ddl}", "")
    run(f"CREATE TABLE d.b {ddl}", "")
    first, newest = storage.tables[("d", "a")].table_id, storage.tables[("d", "b")].table_id
    assert storage.dbs["d"] < first < newest
    run("DROP TABLE d.b", "")
    storage.close()

    again = Storage(tmp_path)
    try:
        QueryExecutor(again).execute(f"CREATE TABLE d.c {ddl}", "")
        assert again.tables[("d", "a")].table_id == first
        assert again.tables[("d", "c")].table_id == newest + 1
    finally:
        again.close()


def test_ids_continue_after_a_restart_without_drops(tmp_path) -> None:
    """With no counter written since, the next id follows the largest a catalog row holds."""
    storage = Storage(tmp_path)
    QueryExecutor(storage).execute("CREATE DATABASE d", "")
    QueryExecutor(storage).execute("CREATE TABLE d.a (id INT) DUPLICATE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1", "")
    top = storage.tables[("d", "a")].table_id
    storage.close()

    again = Storage(tmp_path)
    try:
        QueryExecutor(again).execute("CREATE DATABASE e", "")
        assert again.dbs["e"] == top + 1
    finally:
        again.close()
