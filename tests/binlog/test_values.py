"""A row reads the same from the binlog (fast decoder or mysql-replication) and from the snapshot."""

from __future__ import annotations

import random

import pytest

from cdc_core.events import DataChangeEvent
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import DorisValueConverter
from cdc_core.schema import TableId
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
    ("bt", "bit(9)"), ("tm", "time(3)"),
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
    raise AssertionError(sql_type)


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
