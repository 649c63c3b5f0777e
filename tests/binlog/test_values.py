"""A row reads the same from the binlog (fast decoder or mysql-replication) and from the snapshot."""

from __future__ import annotations

import random

import pytest

from cdc_core.model.events import DataChangeEvent
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import DorisValueConverter
from tests.binlog.conftest import current_offset, next_server_id, read_schema

COLUMNS = [
    ("ti", "tinyint"), ("tu", "tinyint unsigned"), ("b1", "tinyint(1)"), ("si", "smallint"),
    ("su", "smallint unsigned"), ("mi", "mediumint"), ("mu", "mediumint unsigned"), ("i", "int"),
    ("iu", "int unsigned"), ("bi", "bigint"), ("bu", "bigint unsigned"), ("d1", "decimal(10,2)"),
    ("d2", "decimal(5,0)"), ("d3", "decimal(18,9)"), ("d4", "decimal(19,10)"), ("d5", "decimal(65,30)"),
    ("d6", "decimal(4,4)"), ("du", "decimal(8,3) unsigned"), ("f", "float"), ("db", "double"),
    ("vc", "varchar(20)"), ("vl", "varchar(300)"), ("ch", "char(5)"), ("l1", "varchar(10) character set latin1"),
    ("tx", "text"), ("mt", "mediumtext"), ("vb", "varbinary(10)"), ("bn", "binary(4)"), ("bl", "blob"),
    ("dt", "date"), ("t0", "datetime"), ("t3", "datetime(3)"), ("t6", "datetime(6)"), ("t1", "datetime(1)"),
    ("ts", "timestamp(2) NULL"), ("y", "year"), ("js", "json"), ("en", "enum('x','y')"), ("st", "set('p','q')"),
    ("bt", "bit(9)"), ("tm", "time(3)"), ("uu", "uuid"), ("i6", "inet6"), ("i4", "inet4"),
]
NARROW = [c for c in COLUMNS if c[0] not in ("js", "en", "st", "bt", "tm")]  # all fast-path types


def _value(rng: random.Random, name: str, sql_type: str) -> object:
    if rng.random() < 0.15:
        return None
    t = sql_type.split("(")[0].split()[0]
    unsigned = "unsigned" in sql_type
    if t in ("tinyint", "smallint", "mediumint", "int", "bigint"):
        bits = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}[t]
        if name == "b1":
            return rng.choice([0, 1, 1, 5, -3])
        return rng.randrange(0, 2 ** bits) if unsigned else rng.randrange(-(2 ** (bits - 1)), 2 ** (bits - 1))
    if t == "decimal":
        p, s = (int(x) for x in sql_type.split("(")[1].split(")")[0].split(","))
        digits = rng.randint(0, p)
        intpart = rng.randrange(0, 10 ** min(p - s, 30)) if p > s else 0
        intpart = intpart // (10 ** max(0, (p - s) - digits)) if p > s else 0
        frac = rng.randrange(0, 10 ** s) if s else 0
        sign = "" if unsigned or rng.random() < 0.6 else "-"
        return f"{sign}{intpart}" + (f".{frac:0{s}d}" if s else "")
    if t == "float":
        return rng.choice([1.1, -3.25, 0.0, 123456.789, 1e-7])
    if t == "double":
        return rng.uniform(-1e9, 1e9)
    if t in ("varchar", "char", "text", "mediumtext"):
        alphabet = "abcXYZ é漢😀 " if "latin1" not in sql_type else "abcXYZ éü"
        n = rng.randint(0, 5 if t == "char" else 12)
        return "".join(rng.choice(alphabet) for _ in range(n)).rstrip(" ") if t == "char" else \
            "".join(rng.choice(alphabet) for _ in range(n))
    if t in ("varbinary", "binary", "blob"):
        return bytes(rng.randrange(256) for _ in range(rng.randint(0, 4)))
    if t == "date":
        return rng.choice(["2026-02-28", "1999-12-31", "0000-00-00", "2024-02-29", "1000-01-01"])
    if t in ("datetime", "timestamp"):
        day = rng.choice(["2026-01-01", "2024-02-29", "1970-01-02"] + (["0000-00-00"] if t == "datetime" else []))
        return f"{day} {rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(10**6):06d}"
    if t == "year":
        return rng.choice([1901, 2026, 2155, 0])
    if t == "json":
        return rng.choice(['{"a": 1}', "[1, 2]", '"s"'])
    if t == "enum":
        return rng.choice(["x", "y"])
    if t == "set":
        return rng.choice(["", "p", "q,p"])
    if t == "bit":
        return rng.randrange(512)
    if t == "time":
        return rng.choice(["-838:59:59.000", "12:34:56.789", "00:00:00"])
    if t in ("uuid", "inet6", "inet4"):
        # bytes with runs of zero bytes (trimmed from the binlog's end, compressed in INET6 text)
        raw = bytes(rng.choice([0, 0, 0xFF, rng.randrange(256)]) for _ in range(4 if t == "inet4" else 16))
        return _fixed_binary_literal(t, raw)
    raise AssertionError(sql_type)


def _fixed_binary_literal(type_name: str, raw: bytes) -> str:
    """A value the server accepts for the type (not necessarily its canonical text)."""
    if type_name == "uuid":
        return raw.hex().upper()  # MariaDB takes 32 hex digits without hyphens, in either case
    if type_name == "inet4":
        return ".".join(str(b) for b in raw)
    return ":".join(raw[i:i + 2].hex() for i in range(0, 16, 2))  # uncompressed, leading zeros


def _fill(root_conn, db: str, table: str, columns, rows: int, seed: int) -> None:
    rng = random.Random(seed)
    cols = ", ".join(f"`{n}` {t}" for n, t in columns)
    with root_conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")  # allow zero dates and out-of-range clipping, as legacy apps do
        cur.execute(f"CREATE TABLE `{db}`.`{table}` (pk int primary key, {cols})")
        names = ", ".join(f"`{n}`" for n, _ in columns)
        marks = ", ".join(["%s"] * (len(columns) + 1))
        for k in range(rows):
            cur.execute(f"INSERT INTO `{db}`.`{table}` (pk, {names}) VALUES ({marks})",
                        [k] + [_value(rng, n, t) for n, t in columns])
        cur.execute("SET SESSION sql_mode = DEFAULT")


def _events(settings, schema, start, stop, converter, fast):
    reader = BinlogSplitReader(settings, next_server_id(), {schema.table_id: schema}.get, converter,
                               fast_decoder=fast)
    return [e for e in reader.read_range(start, stop, {schema.table_id}) if isinstance(e, DataChangeEvent)]


@pytest.mark.parametrize("converter", [DorisValueConverter("UTC"), DorisValueConverter("Asia/Tokyo", False), None],
                         ids=["doris-utc", "doris-tokyo", "identity"])
def test_fast_decoder_equals_mysql_replication(settings, root_conn, fresh_db, converter):
    t = TableId(fresh_db, "v")
    start = current_offset(root_conn)
    _fill(root_conn, fresh_db, "v", NARROW, 120, seed=1)
    with root_conn.cursor() as cur:
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute(f"UPDATE `{fresh_db}`.v SET d1 = -d1, vc = CONCAT(vc, 'u'), t3 = '2025-05-05 05:05:05.5' "
                    "WHERE pk % 3 = 0")
        cur.execute(f"DELETE FROM `{fresh_db}`.v WHERE pk % 5 = 0")
        cur.execute("SET SESSION sql_mode = DEFAULT")
    stop = current_offset(root_conn)
    schema = read_schema(root_conn, t)
    fast = _events(settings, schema, start, stop, converter, True)
    slow = _events(settings, schema, start, stop, converter, False)
    assert len(fast) == 120 + 40 + 24
    for a, b in zip(fast, slow, strict=True):
        assert (a.op, a.offset, a.row_index) == (b.op, b.offset, b.row_index)
        for image_a, image_b in ((a.before, b.before), (a.after, b.after)):
            if image_a != image_b:
                diff = {k: (image_a[k], image_b[k]) for k in image_a if image_a[k] != image_b.get(k)}
                raise AssertionError(f"fast vs mysql-replication differ on {diff}")


def test_binlog_rows_equal_snapshot_rows(mysql_server, settings, root_conn, fresh_db):
    """Every type, NULLs, zero dates, 4-byte UTF-8: the binlog path and the chunk read agree."""
    t = TableId(fresh_db, "w")
    start = current_offset(root_conn)
    _fill(root_conn, fresh_db, "w", COLUMNS, 80, seed=2)
    stop = current_offset(root_conn)
    schema = read_schema(root_conn, t)
    converter = DorisValueConverter("UTC")
    from_binlog = {e.after["pk"]: e.after for e in _events(settings, schema, start, stop, converter, True)}
    ep = mysql_server.endpoint
    snap = SnapshotSplitReader(MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password),
                               server_id_range=(32000, 32010))
    try:
        rows = snap.read(SnapshotSplit(t, 0, None, None), schema).table.to_pylist()
    finally:
        snap.close()
    from_snapshot = {r["pk"]: r for r in rows}
    assert from_binlog.keys() == from_snapshot.keys()
    for pk, row in from_snapshot.items():
        assert from_binlog[pk] == row, f"row {pk}: binlog {from_binlog[pk]} != snapshot {row}"


# MariaDB's UUID / INET6 / INET4: each row as inserted (not always canonical) and as the server prints it.
FIXED_BINARY_ROWS = [
    (("00000000-0000-0000-0000-000000000000", "::", "0.0.0.0", None),
     ("00000000-0000-0000-0000-000000000000", "::", "0.0.0.0", None)),
    (("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF", "255.255.255.255",
      "6ccd780c-baba-1026-9564-5b8c656024db"),
     ("ffffffff-ffff-ffff-ffff-ffffffffffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "255.255.255.255",
      "6ccd780c-baba-1026-9564-5b8c656024db")),
    (("6ccd780c-baba-1026-9564-5b8c656024db", "0:0:0:0:0:ffff:1.2.3.4", None, "00000000-0000-1000-8000-000000000000"),
     ("6ccd780c-baba-1026-9564-5b8c656024db", "::ffff:1.2.3.4", None, "00000000-0000-1000-8000-000000000000")),
    (("123456789abc6def8123456789abcdef", "2001:0db8:0000:0000:0000:0000:0000:0001", "1.2.3.4",
      "ffffffff-ffff-1fff-8fff-ffffffffffff"),
     ("12345678-9abc-6def-8123-456789abcdef", "2001:db8::1", "1.2.3.4", "ffffffff-ffff-1fff-8fff-ffffffffffff")),
    (("00000000-0000-0000-0000-000000000001", "::1", "0.0.0.1", "10000000-0000-0000-0000-000000000000"),
     ("00000000-0000-0000-0000-000000000001", "::1", "0.0.0.1", "10000000-0000-0000-0000-000000000000")),
    (("11111111-2222-1333-a444-555555555555", "::1.2.3.4", "10.0.0.0", None),
     ("11111111-2222-1333-a444-555555555555", "::1.2.3.4", "10.0.0.0", None)),
    (("a0000000-0000-0000-0000-000000000000", "2001:db8::", None, None),
     ("a0000000-0000-0000-0000-000000000000", "2001:db8::", None, None)),
    (("b0000000-0000-0000-0000-000000000000", "fe80:0:0:0:1:0:0:0", None, None),
     ("b0000000-0000-0000-0000-000000000000", "fe80::1:0:0:0", None, None)),
    (("c0000000-0000-0000-0000-000000000000", "1:0:1:1:1:1:1:1", None, None),
     ("c0000000-0000-0000-0000-000000000000", "1::1:1:1:1:1:1", None, None)),
    (("d0000000-0000-0000-0000-000000000000", None, None, None),
     ("d0000000-0000-0000-0000-000000000000", None, None, None)),
]
FIXED_BINARY_COLUMNS = ("id", "ip", "ip4", "u")


def test_uuid_and_inet_reach_doris_as_their_text_by_snapshot_and_by_binlog(
        mysql_server, doris_standin, settings, root_conn, fresh_db):
    """UUID / INET6 / INET4 edge values (NULL, all zero, all ones, IPv4-mapped and -compatible,
    values whose trailing zero bytes the binlog cuts off, a UUID key) → Doris holds exactly the
    text MariaDB prints, whether they came by the snapshot or by the binlog (fast and slow decoder)."""
    from cdc_core.doris.client import DorisHttpClient
    from cdc_core.doris.rows import event_row, snapshot_row
    from cdc_core.doris.sink import DorisSink
    from cdc_core.mysql.types import doris_type

    t = TableId(fresh_db, "fb")
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.fb (id UUID PRIMARY KEY, ip INET6, ip4 INET4 NULL, u UUID NULL)")
    schema = read_schema(root_conn, t)
    start = current_offset(root_conn)
    with root_conn.cursor() as cur:
        for given, _ in FIXED_BINARY_ROWS:
            cur.execute(f"INSERT INTO `{fresh_db}`.fb VALUES (%s, %s, %s, %s)", given)
        cur.execute(f"UPDATE `{fresh_db}`.fb SET ip = '::ffff:0.0.0.0', u = '00000000-0000-0000-0000-0000000000ff' "
                    "WHERE id = 'd0000000-0000-0000-0000-000000000000'")
        cur.execute(f"DELETE FROM `{fresh_db}`.fb WHERE id = 'c0000000-0000-0000-0000-000000000000'")
        cur.execute(f"SELECT {', '.join(f'CAST({c} AS CHAR)' for c in FIXED_BINARY_COLUMNS)} FROM `{fresh_db}`.fb")
        server_text = sorted(cur.fetchall(), key=lambda r: r[0])
    stop = current_offset(root_conn)
    expected = sorted([row for _, row in FIXED_BINARY_ROWS if row[0] != "c0000000-0000-0000-0000-000000000000"
                       and row[0] != "d0000000-0000-0000-0000-000000000000"]
                      + [("d0000000-0000-0000-0000-000000000000", "::ffff:0.0.0.0", None,
                          "00000000-0000-0000-0000-0000000000ff")])
    assert [tuple(r) for r in server_text] == expected  # the expected text is the server's own

    converter = DorisValueConverter("UTC")
    fast = _events(settings, schema, start, stop, converter, True)
    slow = _events(settings, schema, start, stop, converter, False)
    assert [(e.op, e.before, e.after) for e in fast] == [(e.op, e.before, e.after) for e in slow]
    assert len(fast) == len(FIXED_BINARY_ROWS) + 2
    ep = mysql_server.endpoint
    snap = SnapshotSplitReader(MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password),
                               server_id_range=(32020, 32030))
    try:
        chunk = snap.read(SnapshotSplit(t, 0, None, None), schema)
    finally:
        snap.close()

    assert {c.name: doris_type(c) for c in schema.columns} == {
        "id": "VARCHAR(36)", "ip": "VARCHAR(39)", "ip4": "VARCHAR(15)", "u": "VARCHAR(36)"}
    sink = DorisSink(DorisHttpClient(doris_standin.fe_http, doris_standin.user, doris_standin.password),
                     "tm_fixed_binary", table_properties={"replication_num": "1"})
    try:
        by_snapshot, by_binlog = TableId(fresh_db, "by_snapshot"), TableId(fresh_db, "by_binlog")
        sink.create_table(schema, by_snapshot)
        sink.create_table(schema, by_binlog)
        sink.commit([sink.load(by_snapshot, "chunk-0", [snapshot_row(r, 1) for r in chunk.table.to_pylist()])])
        sink.commit([sink.load(by_binlog, "binlog-0", [event_row(e) for e in fast])])
        for target in (by_snapshot, by_binlog):
            types = sink.catalog.column_types(target.database, target.table)
            assert [types[c].upper() for c in FIXED_BINARY_COLUMNS] == [
                "VARCHAR(36)", "VARCHAR(39)", "VARCHAR(15)", "VARCHAR(36)"]
            rows = sink.catalog.execute(target.database, f"SELECT {', '.join(FIXED_BINARY_COLUMNS)} FROM "
                                        f"`{target.database}`.`{target.table}` ORDER BY id").rows
            assert [tuple(r) for r in rows] == expected, f"Doris table {target.table}"
    finally:
        sink.close()


def test_a_decoder_is_compiled_once_for_every_batch_and_table_of_one_shape(settings, root_conn, fresh_db,
                                                                          monkeypatch):
    """The stream makes a new reader per batch with schemas read anew from the history: the
    generated decoder is shared by value (layout, schema columns, converter), not compiled again
    per batch and table; another converter gets its own."""
    import dataclasses

    from cdc_core.mysql import row_decoder

    with root_conn.cursor() as cur:
        for name in ("a", "b"):
            cur.execute(f"CREATE TABLE `{fresh_db}`.{name} (id BIGINT PRIMARY KEY, v VARCHAR(20), ts DATETIME(3))")
    builds: list[int] = []
    real_build = row_decoder._Builder.build
    monkeypatch.setattr(row_decoder._Builder, "build", lambda self, update: builds.append(1) or real_build(self, update))
    monkeypatch.setattr(row_decoder, "_SHARED_PLANS", {})

    def batch(converter, k: int) -> list[dict]:
        start = current_offset(root_conn)
        with root_conn.cursor() as cur:
            for name in ("a", "b"):
                cur.execute(f"INSERT INTO `{fresh_db}`.{name} VALUES ({k}, 'x{k}', '2026-01-0{k} 10:00:00.125')")
        root_conn.commit()
        stop = current_offset(root_conn)
        # as a batch reads them: equal schema objects, new ones every batch
        schemas = {t: dataclasses.replace(read_schema(root_conn, t)) for t in (TableId(fresh_db, "a"), TableId(fresh_db, "b"))}
        reader = BinlogSplitReader(settings, next_server_id(), schemas.get, converter)
        with reader:
            return [e.after for e in reader.read_batch(start, stop).events if isinstance(e, DataChangeEvent)]

    utc = DorisValueConverter("UTC")
    assert batch(utc, 1) == [{"id": 1, "v": "x1", "ts": "2026-01-01 10:00:00.125"}] * 2
    assert batch(DorisValueConverter("UTC"), 2) == [{"id": 2, "v": "x2", "ts": "2026-01-02 10:00:00.125"}] * 2
    assert len(builds) == 1  # two tables, two batches, two equal converters: one decoder
    batch(DorisValueConverter("UTC", tinyint1_as_boolean=False), 3)
    assert len(builds) == 2
