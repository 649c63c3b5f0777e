"""CREATE TABLE: ids issued from memory (held by the catalog rows, never reused); CREATE TABLEs that
queue behind the write lock created together in one transaction, each checked as if alone."""

from __future__ import annotations

import threading
import time

import pytest

from devstack.doris import ddl
from devstack.doris.query import QueryExecutor
from devstack.doris.sql_lexer import SqlError
from devstack.doris.storage import Storage, data_ref


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


DDL = "(id BIGINT NOT NULL, v VARCHAR(8)) UNIQUE KEY(id) DISTRIBUTED BY HASH(id) BUCKETS 1"


def _queued_together(storage: Storage, statements: list[str]) -> tuple[list[BaseException | None], int]:
    """Run ``statements`` on threads while the write lock is held, so that they queue into one group,
    then release it; each statement's error (None: it succeeded), and how many transactions ran."""
    run = QueryExecutor(storage).execute
    out: list[BaseException | None] = [None] * len(statements)

    def one(i: int) -> None:
        try:
            run(statements[i], "d")
        except BaseException as e:  # noqa: BLE001 - handed to the test
            out[i] = e

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(statements))]
    with storage.lock:
        for t in threads:
            t.start()
        queue = ddl._create_queues[storage]
        while len(queue.waiting) < len(statements):  # every one queued behind the lock
            time.sleep(0.01)
        holds = storage.lock_holds
    for t in threads:
        t.join()
    return out, storage.lock_holds - holds


def test_create_tables_queued_together_are_one_transaction_each_checked_as_if_alone(tmp_path) -> None:
    storage = Storage(tmp_path)
    run = QueryExecutor(storage).execute
    run("CREATE DATABASE d", "")
    run(f"CREATE TABLE d.warm {DDL}", "")  # the queue exists
    errors, transactions = _queued_together(storage, [
        f"CREATE TABLE a {DDL}", f"CREATE TABLE b {DDL}", f"CREATE TABLE IF NOT EXISTS warm {DDL}",
        f"CREATE TABLE nope.c {DDL}", "CREATE TABLE bad (v FLOAT NOT NULL) UNIQUE KEY(v) DISTRIBUTED BY HASH(v)",
        f"CREATE TABLE warm {DDL}",
    ])
    assert transactions == 1
    assert errors[:3] == [None, None, None]
    assert [str(e) for e in errors[3:]] == ["Unknown database 'nope'", "Float or double can not used as a key, "
                                           "use decimal instead.", "Table 'warm' already exists"]
    assert sorted(n for (_, n) in storage.tables) == ["a", "b", "warm"]
    storage.close()
    again = Storage(tmp_path)
    try:
        assert sorted(n for (_, n) in again.tables) == ["a", "b", "warm"]
        assert QueryExecutor(again).execute("SELECT count(*) FROM a", "d")["data"] == [[0]]
    finally:
        again.close()


def test_a_group_that_duckdb_refuses_is_retried_one_by_one(tmp_path) -> None:
    storage = Storage(tmp_path)
    run = QueryExecutor(storage).execute
    run("CREATE DATABASE d", "")
    run(f"CREATE TABLE d.warm {DDL}", "")
    with storage.cursor() as cur:  # a stored table the catalog does not know: DuckDB refuses its CREATE
        cur.execute(f"CREATE TABLE {data_ref('d', 'clash')} (x INT)")
    errors, transactions = _queued_together(storage, [f"CREATE TABLE a {DDL}", f"CREATE TABLE clash {DDL}",
                                                      f"CREATE TABLE b {DDL}"])
    assert transactions == 4  # the group's, rolled back, then one each
    assert errors[0] is None and errors[2] is None
    assert errors[1] is not None and not isinstance(errors[1], SqlError)
    assert sorted(n for (_, n) in storage.tables) == ["a", "b", "warm"]
    with pytest.raises(SqlError, match="does not exist"):
        run("SELECT * FROM clash", "d")
    storage.close()


def test_a_definition_is_its_stored_tables_comment_and_a_legacy_catalog_row_is_still_read(tmp_path) -> None:
    """A table's definition is written as its stored table's DuckDB comment (no ``__standin.tables``
    row); a data directory of an earlier stand-in, whose definitions are rows there, reads the same,
    and an ALTER of such a table moves its definition to the comment (the row goes)."""
    import json

    storage = Storage(tmp_path)
    run = QueryExecutor(storage).execute
    run("CREATE DATABASE d", "")
    run(f"CREATE TABLE d.a {DDL} PROPERTIES ('replication_num' = '1')", "")
    run("CREATE TABLE d.o (id INT, v VARCHAR(8) COMMENT 'it''s \"quoted\" ü') DUPLICATE KEY(id) "
        "DISTRIBUTED BY HASH(id) BUCKETS 1", "")
    with storage.cursor() as cur:
        assert cur.execute("SELECT count(*) FROM __standin.tables").fetchall() == [(0,)]
        # what an earlier stand-in wrote for d.o: a catalog row, and no comment
        cur.execute("INSERT INTO __standin.tables VALUES ('d', 'o', ?)", [json.dumps(storage.tables[("d", "o")].to_json())])
        cur.execute(f"COMMENT ON TABLE {data_ref('d', 'o')} IS NULL")
    before = {k: t.to_json() for k, t in storage.tables.items()}
    show = run("SHOW CREATE TABLE d.o", "")["data"]
    storage.close()

    again = Storage(tmp_path)
    try:
        assert {k: t.to_json() for k, t in again.tables.items()} == before
        run = QueryExecutor(again).execute
        assert run("SHOW CREATE TABLE d.o", "")["data"] == show
        run("ALTER TABLE d.o ADD COLUMN w INT", "")
        with again.cursor() as cur:
            assert cur.execute("SELECT count(*) FROM __standin.tables").fetchall() == [(0,)]
        run("ALTER TABLE d.o RENAME p", "")
        assert run("DESC d.p", "")["data"][-1][0] == "w"
    finally:
        again.close()
    third = Storage(tmp_path)
    try:
        assert sorted(third.tables) == [("d", "a"), ("d", "p")]
        assert [c.name for c in third.tables[("d", "p")].columns] == ["id", "v", "w"]
        assert third.tables[("d", "p")].columns[1].comment == "it's \"quoted\" ü"
        assert third.tables[("d", "a")].to_json() == before[("d", "a")]
    finally:
        third.close()


def test_a_create_table_queued_while_a_group_runs_joins_it_before_its_commit(tmp_path, monkeypatch) -> None:
    """What queues while a group's statements run is created in the same transaction (one COMMIT),
    after the group's first members and answered after that COMMIT like them."""
    storage = Storage(tmp_path)
    run = QueryExecutor(storage).execute
    run("CREATE DATABASE d", "")
    run(f"CREATE TABLE d.warm {DDL}", "")  # the queue exists
    queue = ddl._create_queues[storage]
    original, late, order = ddl._create_one, [], []

    def create_one(st, cur, p):  # noqa: ANN001, ANN202
        order.append(p.s.name)
        if not late:  # the leader's own statement: another CREATE queues meanwhile
            late.append(threading.Thread(target=run, args=(f"CREATE TABLE d.b {DDL}", "")))
            late[0].start()
            while not queue.waiting:
                time.sleep(0.01)
        return original(st, cur, p)

    monkeypatch.setattr(ddl, "_create_one", create_one)
    holds = storage.lock_holds
    run(f"CREATE TABLE d.a {DDL}", "")
    late[0].join()
    assert order == ["a", "b"]
    assert storage.lock_holds - holds == 1
    storage.close()
    again = Storage(tmp_path)
    try:
        assert sorted(n for (_, n) in again.tables) == ["a", "b", "warm"]
    finally:
        again.close()
