"""Loads into the Doris stand-in: 2PC visibility, deletes, sequence order, formats, redirects."""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

from cdc_core.doris.committable import Committable
from cdc_core.doris.rows import DELETE_SIGN, SEQUENCE_COLUMN, event_row, snapshot_row
from cdc_core.model.events import DataChangeEvent, Op
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from tests.sink.conftest import make_client, select, users_schema


def test_precommitted_rows_are_invisible_until_commit(sink, doris_db):
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    rows = [snapshot_row({"id": i, "name": f"n{i}", "score": Decimal("1.50")}, 100) for i in range(1, 4)]
    c = sink.load(target, "chunk-0-g0", rows)
    assert c.rows == 3 and c.txn_id is not None and c.label.startswith("tm_test__")
    assert select(sink, target) == []
    sink.commit([c])
    assert select(sink, target, "id, name, score") == [(1, "n1", 1.5), (2, "n2", 1.5), (3, "n3", 1.5)]
    # the committable round-trips through JSON and commits again harmlessly
    sink.commit([Committable.from_dict(c.to_dict())])
    assert len(select(sink, target)) == 3


def test_abort_discards_and_frees_the_label(sink, doris_db):
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    c = sink.load(target, "chunk-1-g0", [snapshot_row({"id": 1, "name": "a"}, 5)])
    sink.abort([c])
    sink.abort([c])  # idempotent
    assert select(sink, target) == []
    c2 = sink.load(target, "chunk-1-g0", [snapshot_row({"id": 1, "name": "b"}, 5)])
    assert c2.txn_id != c.txn_id
    sink.commit([c2])
    assert select(sink, target, "id, name") == [(1, "b")]


def _event(op: Op, row: dict, position: int) -> DataChangeEvent:
    off = BinlogOffset("binlog.000001", position)
    before, after = (row, None) if op is Op.DELETE else (None, row)
    return DataChangeEvent(TableId("src", "users"), op, before, after, off)


def test_late_snapshot_chunk_does_not_overwrite_newer_binlog_rows(sink, doris_db):
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    # binlog at positions 2000/2100 updates row 1 and deletes row 2
    binlog = [event_row(_event(Op.UPDATE, {"id": 1, "name": "new"}, 2000)),
              event_row(_event(Op.DELETE, {"id": 2, "name": "x"}, 2100))]
    sink.commit([sink.load(target, "binlog-1-2", binlog)])
    # a snapshot chunk read with high watermark 1500 arrives late
    hw = BinlogOffset("binlog.000001", 1500).sequence
    chunk = [{"id": 1, "name": "old"}, {"id": 2, "name": "old2"}, {"id": 3, "name": "three"}]
    sink.commit([sink.load(target, "chunk-0-g0", chunk, sequence=hw)])
    assert select(sink, target, "id, name") == [(1, "new"), (3, "three")]
    # a replay of an even older binlog delete of row 3 cannot remove it either
    sink.commit([sink.load(target, "binlog-0-1", [event_row(_event(Op.DELETE, {"id": 3}, 1000))])])
    assert select(sink, target, "id, name") == [(1, "new"), (3, "three")]
    # while a newer delete does
    sink.commit([sink.load(target, "binlog-2-3", [event_row(_event(Op.DELETE, {"id": 3}, 3000))])])
    assert select(sink, target, "id, name") == [(1, "new")]
    assert select(sink, target, f"id, {SEQUENCE_COLUMN}") == [(1, BinlogOffset("binlog.000001", 2000).sequence)]


@pytest.mark.parametrize("fmt", ["json", "csv", "arrow"])
def test_formats_and_arrow_input(sink, doris_db, fmt):
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    table = pa.table({
        "id": pa.array([1, 2, 3], pa.int32()),
        "name": ["a", None, "c"],
        "score": pa.array([Decimal("1.25"), Decimal("2.00"), None], pa.decimal128(10, 2)),
        DELETE_SIGN: pa.array([0, 0, 0], pa.int8()),
    })
    c = sink.load(target, f"chunk-0-g0-{fmt}", table, sequence=10, fmt=fmt)
    assert c.rows == 3
    sink.commit([c])
    assert select(sink, target, "id, name, score") == [(1, "a", 1.25), (2, None, 2.0), (3, "c", None)]
    if fmt != "arrow":
        dict_rows = [{"id": 2, "name": "bee", DELETE_SIGN: 0}, {"id": 3, DELETE_SIGN: 1}]
        sink.commit([sink.load(target, f"binlog-x-{fmt}", iter(dict_rows), sequence=11, fmt=fmt)])
        assert select(sink, target, "id, name") == [(1, "a"), (2, "bee")]


def test_gzip_and_backend_routes(doris, doris_db, sink):
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    from cdc_core.doris.sink import DorisSink
    from tests.sink.conftest import test_type_mapper

    for i, (route_kwargs, gz) in enumerate([({"auto_redirect": False}, False),
                                             ({"benodes": doris.be}, True),
                                             ({}, True)]):
        s = DorisSink(make_client(doris, **route_kwargs), "tm_test", type_mapper=test_type_mapper, gzip=gz)
        c = s.load(target, f"chunk-{i}-g0", [{"id": 10 + i, "name": f"r{i}"}], sequence=1)
        s.commit([c])
        s.close()
    assert [r[0] for r in select(sink, target, "id")] == [10, 11, 12]


def test_fe_redirect_to_backend_on_another_port_keeps_auth(doris, doris_db, sink):
    assert doris.fe_port != doris.be_port
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    assert sink.client.load_route == "redirect"
    url = sink.loader.resolve_redirect(doris_db, "users", f"/api/{doris_db}/users/_stream_load", 0)
    assert url.startswith(f"http://{doris.be}/") and "@" not in url and doris.password not in url
    sink.commit([sink.load(target, "chunk-0-g0", [{"id": 1, "name": "x"}], sequence=1)])
    assert select(sink, target, "id, name") == [(1, "x")]


def test_generator_of_record_batches_and_of_dicts(sink, doris_db):
    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    batches = (pa.record_batch({"id": pa.array([i, i + 100], pa.int32()), "name": [f"a{i}", f"b{i}"]})
               for i in range(3))
    c = sink.load(target, "chunk-0-g0", batches, sequence=1, fmt="arrow")
    assert c.rows == 6
    dicts = ({"id": 1000 + i, "name": "d"} for i in range(5))
    c2 = sink.load(target, "chunk-1-g0", dicts, sequence=1)
    assert c2.rows == 5
    sink.commit([c, c2])
    assert len(select(sink, target)) == 11


def test_buffered_batch_is_one_load_per_table(sink, doris_db):
    from cdc_core.doris.batching import TableBuffers

    a, b = TableId(doris_db, "a"), TableId(doris_db, "b")
    sink.create_table(users_schema(doris_db, "a"))
    sink.create_table(users_schema(doris_db, "b"))
    buffers = TableBuffers(max_rows=4)
    events = [(a, Op.INSERT, {"id": 1, "name": "x"}, 100), (b, Op.INSERT, {"id": 1, "name": "y"}, 110),
              (a, Op.UPDATE, {"id": 1, "name": "x2"}, 120), (a, Op.DELETE, {"id": 2, "name": "gone"}, 130),
              (a, Op.INSERT, {"id": 3, "name": "z"}, 140)]
    for target, op, row, pos in events:
        buffers.add(target, event_row(_event(op, row, pos)), key=(row["id"],))
    assert not buffers.should_flush()
    buffers.add(b, event_row(_event(Op.INSERT, {"id": 2, "name": "w"}, 150)), key=(2,))
    buffers.add(b, event_row(_event(Op.INSERT, {"id": 3, "name": "v"}, 160)), key=(3,))
    buffers.add(b, event_row(_event(Op.INSERT, {"id": 4, "name": "u"}, 170)), key=(4,))
    assert buffers.should_flush()
    committables = sink.load_buffers(buffers.drain(), "binlog-100-170")
    assert [(c.table, c.rows) for c in committables] == [("a", 3), ("b", 4)]
    sink.commit(committables)
    assert select(sink, a, "id, name") == [(1, "x2"), (3, "z")]
    assert len(select(sink, b)) == 4


def test_deletes_are_dropped_where_they_cannot_apply(doris, doris_db):
    from cdc_core.doris.sink import DorisSink
    from tests.sink.conftest import test_type_mapper

    s = DorisSink(make_client(doris), "tm_test", type_mapper=test_type_mapper, enable_delete=False)
    target = TableId(doris_db, "users")
    s.create_table(users_schema(doris_db))
    s.commit([s.load(target, "b0", [{"id": 1, "name": "keep"}], sequence=5)])
    table = pa.table({"id": pa.array([1, 2], pa.int32()), "name": ["del", "new"],
                      DELETE_SIGN: pa.array([1, 0], pa.int8())})
    s.commit([s.load(target, "b1", table, sequence=6, fmt="arrow")])
    assert select(s, target, "id, name") == [(1, "keep"), (2, "new")]
    s.close()


def test_a_batch_reuses_the_fe_redirect_for_a_few_loads_and_commits(doris, doris_db, sink, monkeypatch):
    """Within ``reusing_redirects`` (a binlog batch's loads and commits) a load or a 2PC commit
    goes straight to the BE an FE last redirected a load to, for ``REDIRECT_REUSES`` requests, then
    an FE is asked again; outside it, every load asks an FE; a remembered BE that fails is not
    asked again on the retry, which goes through an FE."""
    from cdc_core.doris import client as client_module

    target = TableId(doris_db, "users")
    sink.create_table(users_schema(doris_db))
    monkeypatch.setattr(client_module, "REDIRECT_REUSES", 3)
    sent: list[str] = []
    send = sink.client.send

    def counting(method, url, **kwargs):
        sent.append(url.split("/")[2].rsplit("@", 1)[-1])
        return send(method, url, **kwargs)

    monkeypatch.setattr(sink.client, "send", counting)
    fe = doris.fe
    loaded = [sink.load(target, f"chunk-{i}-g0", [{"id": i, "name": "x"}], sequence=1) for i in range(2)]
    assert sent.count(fe) == 2  # no reuse outside the scope: each load asks an FE
    sent.clear()
    with sink.client.reusing_redirects():
        loaded += [sink.load(target, f"chunk-{i}-g0", [{"id": i, "name": "x"}], sequence=1) for i in range(2, 6)]
        sink.commit(loaded[:2])
    # 4 loads and 2 commits: an FE asked by the first load (a probe, then the load to the BE) and
    # by the first commit (send follows its 307 itself); the 3 loads between and the last commit reuse
    assert sent.count(fe) == 2 and len(sent) == 7
    assert sink.client.reuse_redirect() is None  # forgotten once the scope ends
    sent.clear()
    with sink.client.reusing_redirects():
        sink.commit(loaded[2:3])  # a commit redirected by an FE is remembered too
        sink.client._redirect = ("http://127.0.0.1:9", *sink.client._redirect[1:])  # a BE gone: refused
        sink.commit(loaded[3:])
    assert sent[0] == fe and "127.0.0.1:9" in sent and sent[-1] != "127.0.0.1:9"
    assert [r[0] for r in select(sink, target, "id")] == list(range(6))
