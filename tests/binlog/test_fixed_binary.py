"""MariaDB's UUID / INET6 / INET4 against the real server: text from the binlog, order, DDL mapping.

The binlog carries these types as bytes; ``cdc_core.mysql.types.fixed_binary`` renders them. Here
thousands of values chosen to hit every rendering rule (zero runs of each length and place, IPv4-
mapped and -compatible prefixes, trailing zero bytes the binlog cuts off, every UUID version and
variant nibble) go through the binlog reader and must equal what the server SELECTs; their sort
keys must order them as the server's ORDER BY does.
"""

from __future__ import annotations

import random

from cdc_core.model.events import AddColumnEvent, DataChangeEvent
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.chunk_key_order import ChunkKeyOrder
from cdc_core.mysql.types import DorisValueConverter, doris_type
from cdc_core.mysql.types.fixed_binary import sort_key
from tests.binlog.conftest import current_offset, next_server_id, read_schema


def _inet6_values(rng: random.Random, n: int) -> list[bytes]:
    values = []
    for _ in range(n):
        words = [rng.choice([0, 0, 0, 1, 0xFFFF, rng.randrange(65536)]) for _ in range(8)]
        values.append(b"".join(w.to_bytes(2, "big") for w in words))
    # the IPv4-compatible / -mapped prefixes with every small tail, and the zero-run corner cases
    for w5 in (0, 1, 0xFFFF):
        for w6 in (0, 1, 0xFFFF):
            for w7 in (0, 1, 2, 0xFFFF):
                values.append(bytes(10) + b"".join(w.to_bytes(2, "big") for w in (w5, w6, w7)))
                values.append(bytes(8) + b"\xff\xff" + b"".join(w.to_bytes(2, "big") for w in (w5, w6, w7)))
    return values


def _uuid_values(rng: random.Random, n: int) -> list[bytes]:
    values = []
    for _ in range(n):
        raw = bytearray(rng.choice([0, 0xFF, rng.randrange(256)]) for _ in range(16))
        raw[6] = rng.randrange(16) << 4 | rng.randrange(16)  # every version nibble
        raw[8] = rng.randrange(16) << 4 | rng.randrange(16)  # every variant nibble
        if raw[6] & 0x80 and 0 < raw[8] <= 0x80:
            raw[8] |= 0x81  # MariaDB refuses these (they would read as a swapped UUID in a record)
        values.append(bytes(raw))
    return values


def _fill(root_conn, db: str, values: dict[str, list[bytes]]) -> None:
    n = max(len(v) for v in values.values())
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{db}`.fb (pk int primary key, u UUID, i6 INET6, i4 INET4)")
        rows = []
        for k in range(n):
            u, i6, i4 = (values[c][k] if k < len(values[c]) else None for c in ("u", "i6", "i4"))
            rows.append((k, u, i6, i4))
        cur.executemany(
            f"INSERT INTO `{db}`.fb VALUES (%s, CAST(%s AS UUID), CAST(CAST(%s AS BINARY(16)) AS INET6), "
            "CAST(CAST(%s AS BINARY(4)) AS INET4))", rows)


def test_binlog_values_equal_the_text_the_server_selects(settings, root_conn, fresh_db):
    rng = random.Random(7)
    values = {"u": [v.hex() for v in _uuid_values(rng, 1500)], "i6": _inet6_values(rng, 1500),
              "i4": [bytes(rng.choice([0, 255, rng.randrange(256)]) for _ in range(4)) for _ in range(300)]}
    t = TableId(fresh_db, "fb")
    start = current_offset(root_conn)
    _fill(root_conn, fresh_db, values)
    stop = current_offset(root_conn)
    with root_conn.cursor() as cur:
        cur.execute(f"SELECT pk, CAST(u AS CHAR), CAST(i6 AS CHAR), CAST(i4 AS CHAR) FROM `{fresh_db}`.fb")
        selected = {r[0]: {"pk": r[0], "u": r[1], "i6": r[2], "i4": r[3]} for r in cur.fetchall()}
    assert any(r["i6"] == "::" for r in selected.values()) and any("." in (r["i6"] or "") for r in selected.values())
    schema = read_schema(root_conn, t)
    for fast in (True, False):
        reader = BinlogSplitReader(settings, next_server_id(), {t: schema}.get, DorisValueConverter("UTC"),
                                   fast_decoder=fast)
        events = [e for e in reader.read_range(start, stop, {t}) if isinstance(e, DataChangeEvent)]
        from_binlog = {e.after["pk"]: e.after for e in events}
        assert from_binlog.keys() == selected.keys()
        mismatches = {pk: (row, selected[pk]) for pk, row in from_binlog.items() if row != selected[pk]}
        assert not mismatches, f"fast={fast}: {len(mismatches)} rows differ, e.g. {next(iter(mismatches.items()))}"


def test_sort_keys_order_values_as_the_server_orders_them(root_conn, fresh_db):
    rng = random.Random(11)
    uuids = list(dict.fromkeys(_uuid_values(rng, 2000)))
    inet6 = list(dict.fromkeys(_inet6_values(rng, 1000)))
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.u (k UUID PRIMARY KEY)")
        cur.execute(f"CREATE TABLE `{fresh_db}`.i (k INET6 PRIMARY KEY)")
        cur.executemany(f"INSERT INTO `{fresh_db}`.u VALUES (CAST(%s AS UUID))", [(v.hex(),) for v in uuids])
        cur.executemany(f"INSERT INTO `{fresh_db}`.i VALUES (CAST(CAST(%s AS BINARY(16)) AS INET6))", [(v,) for v in inet6])
    for table, type_name in (("u", "uuid"), ("i", "inet6")):
        with root_conn.cursor() as cur:
            cur.execute(f"SELECT k FROM `{fresh_db}`.`{table}` ORDER BY k")  # the primary key's order
            by_index = [r[0] for r in cur.fetchall()]
            cur.execute(f"SELECT k FROM `{fresh_db}`.`{table}` ORDER BY CONCAT(k) IS NULL, k")  # a filesort
            by_filesort = [r[0] for r in cur.fetchall()]
        assert by_index == by_filesort
        assert sorted(by_index, key=lambda v, t=type_name: sort_key(t, v)) == by_index
        # the binlog filter's order of a chunk key (bounds and event values are both this text)
        schema = read_schema(root_conn, TableId(fresh_db, table))
        order = ChunkKeyOrder(schema.table_id, schema.column("k"))
        assert sorted(by_index, key=order.event_key) == by_index
        assert [order.bound_key(v) for v in by_index] == [order.event_key(v) for v in by_index]
    assert by_index != sorted(by_index), "INET6 text order differs from MariaDB's: the test must notice"


def test_columns_added_by_ddl_map_like_discovered_ones(settings, root_conn, fresh_db):
    """A UUID / INET6 / INET4 column added while streaming gets the Doris type discovery gives it,
    and the rows after the DDL decode with it."""
    t = TableId(fresh_db, "evo")
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.evo (id int primary key)")
    initial = read_schema(root_conn, t)
    start = current_offset(root_conn)
    with root_conn.cursor() as cur:
        cur.execute(f"ALTER TABLE `{fresh_db}`.evo ADD COLUMN u uuid, ADD COLUMN ip INET6 NOT NULL, ADD i4 Inet4")
        cur.execute(f"INSERT INTO `{fresh_db}`.evo VALUES (1, '6CCD780C-BABA-1026-9564-5B8C656024DB', "
                    "'::ffff:10.0.0.1', '10.0.0.1')")
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {t: initial}.get, DorisValueConverter("UTC"))
    events = list(reader.read_range(start, stop, {t}))
    assert [type(e) for e in events] == [AddColumnEvent] * 3 + [DataChangeEvent]
    derived, discovered = reader.schema(t), read_schema(root_conn, t)
    assert {c.name: doris_type(c) for c in derived.columns} == {c.name: doris_type(c) for c in discovered.columns} \
        == {"id": "INT", "u": "VARCHAR(36)", "ip": "VARCHAR(39)", "i4": "VARCHAR(15)"}
    assert events[-1].after == {"id": 1, "u": "6ccd780c-baba-1026-9564-5b8c656024db", "ip": "::ffff:10.0.0.1",
                               "i4": "10.0.0.1"}
