"""Table discovery with Flink's selector syntax, schemas, and the plan persisted in the state store."""

from __future__ import annotations

from cdc_core.config.selectors import TableSelector
from cdc_core.model.schema import TableId
from cdc_core.mysql.chunk_splitter import SplitOptions
from cdc_core.mysql.discovery import list_captured_tables, read_table_schema
from cdc_core.mysql.snapshot_assigner import (
    AssignerState,
    SnapshotSplitAssigner,
    assign_into_store,
)
from cdc_core.state import StateStore
from cdc_core.state.keys import ASSIGNER_STATE
from tests.snapshot.conftest import analyze, run


def test_tables_and_exclude_regexes_as_flink_reads_them(root_conn, fresh_db, text_conn):
    for t in ("orders", "order_items", "orders_2024", "users", "tmp_x"):
        run(root_conn, f"CREATE TABLE `{fresh_db}`.`{t}` (id INT PRIMARY KEY)")
    run(root_conn, f"CREATE VIEW `{fresh_db}`.v_orders AS SELECT id FROM `{fresh_db}`.orders")

    def tables(include, exclude=None):
        return [t.table for t in list_captured_tables(text_conn, TableSelector.parse(include, exclude))]

    assert tables(f"{fresh_db}.\\.*") == ["order_items", "orders", "orders_2024", "tmp_x", "users"]  # no views
    assert tables(f"{fresh_db}.orders") == ["orders"]  # a full match, not a prefix
    assert tables(f"{fresh_db}.order\\.*", f"{fresh_db}.orders_[0-9]+") == ["order_items", "orders"]
    assert tables(f"{fresh_db}.orders_[0-9]{{4}}, {fresh_db}.users") == ["orders_2024", "users"]
    assert tables("other_db.\\.*") == []


def test_schema_columns_key_and_mariadb_json(root_conn, fresh_db, text_conn):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.t (a INT, b VARCHAR(10) NOT NULL COMMENT 'the b', "
                   f"doc JSON, PRIMARY KEY (b, a)) COMMENT 'a table'")
    schema = read_table_schema(text_conn, TableId(fresh_db, "t"))
    assert schema.primary_key == ("b", "a")
    assert schema.comment == "a table"
    assert [(c.name, c.data_type, c.nullable) for c in schema.columns] == [
        ("a", "int", False), ("b", "varchar", False), ("doc", "json", True)]
    assert schema.column("b").comment == "the b" and schema.column("b").char_length == 10


def test_plan_is_persisted_step_by_step_and_resumes(root_conn, fresh_db, text_conn, tmp_path):
    run(root_conn, f"CREATE TABLE `{fresh_db}`.a (k VARCHAR(8) PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.a SELECT LPAD(seq, 4, '0') FROM `{fresh_db}`.seq_0_to_99",
        f"CREATE TABLE `{fresh_db}`.b (id INT PRIMARY KEY)",
        f"INSERT INTO `{fresh_db}`.b SELECT seq FROM `{fresh_db}`.seq_0_to_100")
    analyze(root_conn, fresh_db, "a", "b")
    tables = [TableId(fresh_db, "a"), TableId(fresh_db, "b")]
    options = SplitOptions(chunk_size=25, split_pause_s=0)

    def schemas(t):
        return read_table_schema(text_conn, t)

    store = StateStore.open(tmp_path / "state")
    try:
        first = SnapshotSplitAssigner(text_conn, tables, schemas, options)
        assert assign_into_store(first, store, max_steps=2) == 2  # two uneven chunks of table a
        with store.transaction(readonly=True) as tx:
            cursor = ASSIGNER_STATE.get(tx)
            assert len(tx.chunks()) == 2
        # "restart": a new assigner from the persisted cursor finishes the plan
        resumed = SnapshotSplitAssigner(text_conn, [], schemas, options, state=AssignerState.from_dict(cursor))
        assign_into_store(resumed, store)
        with store.transaction(readonly=True) as tx:
            chunks = tx.chunks()
            assert AssignerState.from_dict(ASSIGNER_STATE.get(tx)).finished
    finally:
        store.close()
    got = [(c.table_id, c.chunk_index, c.start, c.end) for c in chunks]
    assert got == [
        (f"{fresh_db}.a", 0, None, ["0024"]), (f"{fresh_db}.a", 1, ["0024"], ["0048"]),
        (f"{fresh_db}.a", 2, ["0048"], ["0072"]), (f"{fresh_db}.a", 3, ["0072"], ["0096"]),
        (f"{fresh_db}.a", 4, ["0096"], None),
        (f"{fresh_db}.b", 0, None, [25]), (f"{fresh_db}.b", 1, [25], [50]), (f"{fresh_db}.b", 2, [50], [75]),
        (f"{fresh_db}.b", 3, [75], [100]), (f"{fresh_db}.b", 4, [100], None),
    ]
    assert all(c.status == "PENDING" for c in chunks)
