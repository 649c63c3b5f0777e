"""BinlogEventFilter (Flink's shouldEmit) and the hybrid assigner, with real collations."""

from __future__ import annotations

import pymysql
import pytest

from cdc_core.model.events import DataChangeEvent, DropColumnEvent, Op
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.binlog_filter import BinlogEventFilter
from cdc_core.mysql.collation import CollationWeigher
from cdc_core.mysql.finished_chunk import FinishedChunk
from cdc_core.mysql.hybrid_assigner import BinlogSplit, HybridSplitAssigner
from cdc_core.state import ChunkRecord, ChunkStatus, StateStore

T = TableId("db", "t")
SCHEMA = TableSchema(T, (Column("id", "bigint(20)", "bigint", False), Column("v", "varchar(10)", "varchar")), ("id",))


def off(pos: int) -> BinlogOffset:
    return BinlogOffset("binlog.000001", pos)


def ins(key, pos, table=T, keyname="id"):
    return DataChangeEvent(table, Op.INSERT, None, {keyname: key}, off(pos))


def upd(old, new, pos, keyname="id"):
    return DataChangeEvent(T, Op.UPDATE, {keyname: old}, {keyname: new}, off(pos))


CHUNKS = [  # (-inf,100) HW 500, [100,200) HW 300, [200,+inf) HW 700
    FinishedChunk(T, 0, None, (100,), off(500)),
    FinishedChunk(T, 1, (100,), (200,), off(300)),
    FinishedChunk(T, 2, (200,), None, off(700)),
]


def make(**kw):
    return BinlogEventFilter(CHUNKS, {T: SCHEMA}.get, **kw)


def test_stream_start_is_min_high_watermark_and_snapshot_stops_at_max():
    split = HybridSplitAssigner.create_binlog_split(CHUNKS)
    assert split.start == off(300) and split.stop is None
    assert HybridSplitAssigner.create_binlog_split(CHUNKS, startup_mode="snapshot").stop == off(700)
    assert BinlogSplit.from_dict(split.to_dict()) == split
    with pytest.raises(ValueError):
        HybridSplitAssigner.stream_start([])


def test_from_state_store_records(tmp_path):
    store = StateStore.open(tmp_path)
    with store.transaction() as tx:
        tx.add_chunks([ChunkRecord.planned("db.t", i, None if c.start is None else list(c.start),
                                           None if c.end is None else list(c.end)) for i, c in enumerate(CHUNKS)])
        for i, c in enumerate(CHUNKS[:2]):
            tx.update_chunk("db.t", i, high_watermark=c.high_watermark.to_dict(), status=ChunkStatus.COMMITTED)
        with pytest.raises(ValueError, match="not finished"):
            HybridSplitAssigner.from_state(tx.chunks())
        tx.update_chunk("db.t", 2, high_watermark=CHUNKS[2].high_watermark.to_dict(), status=ChunkStatus.COMMITTED)
        split = HybridSplitAssigner.from_state(tx.chunks())
    assert split.start == off(300) and [c.start for c in split.finished_chunks] == [None, (100,), (200,)]


def test_binary_search_by_chunk_high_watermark():
    f = make()
    assert f(ins(50, 400)) == []            # chunk 0, HW 500: already in the snapshot
    assert f(ins(50, 600)) == [ins(50, 600)]
    assert f(ins(100, 301)) == [ins(100, 301)]  # start bound belongs to the chunk [100,200), HW 300
    assert f(ins(199, 300)) == []           # at the HW is not after it
    assert f(ins(200, 650)) == []           # [200, +inf) HW 700
    assert f(DataChangeEvent(T, Op.INSERT, None, {"id": None}, off(400))) == []  # NULL key: first chunk
    assert f(ins(10**12, 701)) != []


def test_an_image_without_the_chunk_key_is_emitted():
    """After the chunk-key column was renamed the images carry another name: no chunk can be told,
    and emitting is the safe side (the sequence column makes a covered change harmless)."""
    f = make()
    assert f(ins(50, 400, keyname="renamed_id")) == [ins(50, 400, keyname="renamed_id")]
    assert f(upd(10, 20, 400, keyname="renamed_id")) == [upd(10, 20, 400, keyname="renamed_id")]
    assert f(ins(50, 400)) == []  # the old name still decides where it is present


def test_table_becomes_pure_binlog_after_max_high_watermark():
    f = make()
    assert f(ins(250, 701)) != []
    assert f(ins(250, 650)) != []  # once past every HW, the table is pure binlog (Flink's behaviour)


def test_key_moving_update_is_judged_per_image():
    f = make()
    # 50 (chunk 0, HW 500) → 150 (chunk 1, HW 300) at 400: old row is in chunk 0's snapshot as 50? No:
    # chunk 0 was read at 500 > 400, so it never saw 50; chunk 1 (read at 300) lacks 150 → INSERT only.
    out = f(upd(50, 150, 400))
    assert [(e.op, e.before, e.after) for e in out] == [(Op.INSERT, None, {"id": 150})]
    # 150 → 50 at 400: chunk 1 (HW 300) holds 150 → DELETE it; chunk 0 (HW 500) already has 50.
    out = f(upd(150, 50, 400))
    assert [(e.op, e.before, e.after) for e in out] == [(Op.DELETE, {"id": 150}, None)]
    assert f(upd(120, 130, 400)) == [upd(120, 130, 400)]  # same chunk, after its HW
    assert f(upd(10, 20, 400)) == []


def test_tables_without_chunks_follow_newly_added_options():
    other = TableId("db", "new")
    e = ins(1, 100, table=other)
    assert make(captured=lambda t: True)(e) == []  # neither option: the table list is fixed at start
    f = make(captured=lambda t: True, binlog_newly_added_table_enabled=True)
    assert f(e) == [e]
    f = make(captured=lambda t: True, newly_added_table_enabled=True)
    assert f(e) == [] and f.awaiting_snapshot == {other}
    new_schema = TableSchema(other, SCHEMA.columns, ("id",))
    f.schemas = {T: SCHEMA, other: new_schema}.get
    f.add_chunks([FinishedChunk(other, 0, None, None, off(150))])
    assert f(ins(1, 140, table=other)) == [] and f(ins(1, 160, table=other)) != []
    assert make(captured=lambda t: False)(e) == []
    assert make(stream_tables={other})(e) == [e]  # captured without a snapshot (e.g. latest-offset)


def test_schema_changes_of_captured_tables_pass():
    f = make(captured=lambda t: t == T)
    ddl = DropColumnEvent(T, off(10), column_name="v")
    assert f(ddl) == [ddl]
    assert f(DropColumnEvent(TableId("db", "x"), off(10), column_name="v")) == []


def test_backfill_skipped_emits_everything_before_max_hw():
    assert make(backfill_skipped=True)(ins(50, 400)) == [ins(50, 400)]


@pytest.fixture
def ci_table(mysql_server, root_conn, fresh_db):
    t = TableId(fresh_db, "s")
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.s (k varchar(20) COLLATE utf8mb4_general_ci PRIMARY KEY, "
                    "b varchar(20) COLLATE utf8mb4_bin)")
    schema = TableSchema(t, (Column("k", "varchar(20)", "varchar", False, charset="utf8mb4"),
                             Column("b", "varchar(20)", "varchar", charset="utf8mb4")), ("k",))
    ep = mysql_server.endpoint
    weigher = CollationWeigher(lambda: pymysql.connect(host=ep.host, port=ep.port, user=ep.user, password=ep.password))
    yield t, schema, weigher
    weigher.close()


def test_string_keys_follow_the_column_collation(ci_table, root_conn):
    t, schema, weigher = ci_table
    chunks = [FinishedChunk(t, 0, None, ("M",), off(500)), FinishedChunk(t, 1, ("M",), None, off(300))]
    f = BinlogEventFilter(chunks, {t: schema}.get, weigher=weigher)

    def at(key, pos):
        return DataChangeEvent(t, Op.INSERT, None, {"k": key, "b": None}, off(pos))

    events = [at("a", 400), at("Z", 400), at("m", 400), at("M  ", 400), at("l", 400), at("é", 400), at("ÿ", 400)]
    kept = {e.after["k"] for e in f.apply(events)}
    # case-insensitive, PAD SPACE: 'm' and 'M  ' sort with 'M' → chunk 1 (HW 300) → due at 400;
    # 'a', 'l', 'é' (= 'E') sort before 'M' → chunk 0 (HW 500) → already snapshotted
    assert kept == {"Z", "m", "M  ", "ÿ"}
    # the same order the server uses in a chunk query
    with root_conn.cursor() as cur:
        cur.execute("SELECT %s COLLATE utf8mb4_general_ci < 'M', %s COLLATE utf8mb4_general_ci < 'M'", ("ÿ", "é"))
        assert cur.fetchone() == (0, 1)


def test_binary_collation_chunk_key(ci_table):
    t, schema, weigher = ci_table
    chunks = [FinishedChunk(t, 0, None, ("M",), off(500), ("b",)), FinishedChunk(t, 1, ("M",), None, off(300), ("b",))]
    f = BinlogEventFilter(chunks, {t: schema}.get, weigher=weigher)
    kept = [e.after["b"] for e in f.apply(
        [DataChangeEvent(t, Op.INSERT, None, {"k": "x", "b": v}, off(400)) for v in ("a", "Z", "m", "A", "L")])]
    assert kept == ["a", "Z", "m"]  # utf8mb4_bin: 'A' < 'L' < 'M' <= 'Z' < 'a' < 'm' (code points)


def test_enum_chunk_key_orders_by_member_index():
    t = TableId("db", "e")
    schema = TableSchema(t, (Column("k", "enum('zeta','alpha','mid')", "enum", False),), ("k",))
    chunks = [FinishedChunk(t, 0, None, ("alpha",), off(500)), FinishedChunk(t, 1, ("alpha",), None, off(300))]
    f = BinlogEventFilter(chunks, {t: schema}.get)

    def at(v):
        return DataChangeEvent(t, Op.INSERT, None, {"k": v}, off(400))

    # member order zeta(1) < alpha(2) < mid(3): 'zeta' is in chunk 0 (HW 500), 'mid' in chunk 1 (HW 300)
    assert [e.after["k"] for e in f.apply([at("zeta"), at("alpha"), at("mid")])] == ["alpha", "mid"]


def test_a_corrupt_chunk_plan_is_refused_not_guessed():
    from cdc_core.mysql.binlog_filter import ChunkPlanError

    overlapping = [FinishedChunk(T, 0, None, (150,), off(500)), FinishedChunk(T, 1, (100,), None, off(300))]
    with pytest.raises(ChunkPlanError, match="overlap"):
        BinlogEventFilter(overlapping, {T: SCHEMA}.get)
    backwards = [FinishedChunk(T, 0, None, (100,), off(500)), FinishedChunk(T, 1, (200,), (100,), off(300))]
    with pytest.raises(ChunkPlanError, match="ends before it starts"):
        BinlogEventFilter(backwards, {T: SCHEMA}.get)
    # A gap is allowed (a filter may hold only some of a table's chunks); keys in it belong to no chunk.
    gapped = [FinishedChunk(T, 0, None, (100,), off(500)), FinishedChunk(T, 2, (200,), None, off(300))]
    assert BinlogEventFilter(gapped, {T: SCHEMA}.get).start_offset == off(300)
