"""Every charset the devstack MariaDB lists reads exactly, by the snapshot and by the binlog.

For each charset of ``SHOW CHARACTER SET`` (but ``binary``) a table holds every value the charset
can hold — single-byte charsets: each byte 0x00-0xFF the server takes; CJK charsets: every
sequence the server takes as one character; the UTF charsets: every BMP code point and a spread
of supplementary ones up to U+10FFFF — packed many characters to a row, in a ``VARCHAR``, a
``TEXT`` and a ``CHAR`` (the binlog writes them differently; CHAR drops trailing spaces). The reference is MariaDB's own
``CONVERT(col USING utf8mb4)``; the snapshot chunk read and the binlog (fast decoder and
mysql-replication) must give exactly that text for every row.

Lone UTF-16 surrogates, which MariaDB stores in ucs2/utf32/utf8 columns but no UTF-8 text can
carry, are refused by both paths rather than replaced (the last test).
"""

from __future__ import annotations

import pytest

from cdc_core.model.events import DataChangeEvent
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.types import DorisValueConverter
from cdc_core.mysql.types.charset_tables import VALID_COUNT
from cdc_core.mysql.types.charsets import UndecodableTextError, decoder_for, supported_charsets
from tests.binlog.conftest import current_offset, next_server_id, read_schema

PER_ROW = 60  # characters packed into one value (VARCHAR(64) holds them in any charset)
_SURROGATES = range(0xD800, 0xE000)
_UTF = {"utf8mb3": "utf-8", "utf8mb4": "utf-8", "ucs2": "utf-16-be", "utf16": "utf-16-be",
        "utf16le": "utf-16-le", "utf32": "utf-32-be"}


def _code_points(charset: str) -> list[int]:
    bmp = [cp for cp in range(0x10000) if cp not in _SURROGATES]
    if charset in ("utf8mb3", "ucs2"):
        return bmp
    return bmp + list(range(0x10000, 0x110000, 251)) + [0x1F600, 0x10FFFF]


def _candidates(charset: str, maxlen: int) -> list[bytes]:
    """Byte sequences to offer the server as one character of ``charset`` (it keeps the valid ones)."""
    if charset in _UTF:
        return [chr(cp).encode(_UTF[charset]) for cp in _code_points(charset)]
    ones = [bytes([b]) for b in range(256)]
    if maxlen == 1:
        return ones
    twos = [bytes([a, b]) for a in range(0x80, 0x100) for b in range(256)]
    threes = [bytes([0x8F, a, b]) for a in range(0xA1, 0xFF) for b in range(0xA1, 0xFF)] if maxlen == 3 else []
    return ones + twos + threes


def _valid(cur, charset: str, candidates: list[bytes]) -> list[bytes]:
    """The candidates the server takes as exactly one well-formed character of ``charset``."""
    cur.execute("CREATE OR REPLACE TEMPORARY TABLE cand (i int PRIMARY KEY, b varbinary(4))")
    for start in range(0, len(candidates), 4000):
        cur.execute("INSERT INTO cand VALUES " + ",".join(
            f"({start + k}, X'{c.hex()}')" for k, c in enumerate(candidates[start:start + 4000])))
    cur.execute(f"SELECT b FROM cand WHERE HEX(CONVERT(b USING {charset})) = HEX(b) "
                f"AND CHAR_LENGTH(CONVERT(b USING {charset})) = 1 ORDER BY i")
    return [bytes(r[0]) for r in cur.fetchall()]


def _fill(cur, db: str, charset: str, valid: list[bytes]) -> None:
    cur.execute(f"CREATE TABLE `{db}`.`{charset}` (pk int PRIMARY KEY, "
                f"v varchar({PER_ROW + 4}) CHARACTER SET {charset}, t text CHARACTER SET {charset}, "
                f"c char({PER_ROW}) CHARACTER SET {charset})")
    rows = [b"".join(valid[i:i + PER_ROW]) for i in range(0, len(valid), PER_ROW)]
    # a value of its own for each single character too, at the ends of the row (trailing bytes)
    rows += valid[:: max(1, len(valid) // 64)] + valid[-3:]
    for start in range(0, len(rows), 500):
        cur.execute(f"INSERT INTO `{db}`.`{charset}` VALUES " + ",".join(
            f"({start + k}, CONVERT(X'{r.hex()}' USING {charset}), CONVERT(X'{r.hex()}' USING {charset}), "
            f"CONVERT(X'{r.hex()}' USING {charset}))"
            for k, r in enumerate(rows[start:start + 500])))


def _server_text(cur, db: str, charset: str) -> dict[int, dict[str, str]]:
    cur.execute(f"SELECT pk, HEX(CONVERT(v USING utf8mb4)), HEX(CONVERT(t USING utf8mb4)), "
                f"HEX(CONVERT(c USING utf8mb4)) FROM `{db}`.`{charset}`")
    return {pk: {"v": bytes.fromhex(v).decode("utf-8"), "t": bytes.fromhex(t).decode("utf-8"),
                 "c": bytes.fromhex(c).decode("utf-8")} for pk, v, t, c in cur.fetchall()}


def _binlog(settings, schema, start, stop, fast: bool) -> dict[int, dict[str, str]]:
    reader = BinlogSplitReader(settings, next_server_id(), {schema.table_id: schema}.get, DorisValueConverter("UTC"),
                               fast_decoder=fast)
    events = [e for e in reader.read_range(start, stop, {schema.table_id}) if isinstance(e, DataChangeEvent)]
    return {e.after["pk"]: {c: e.after[c] for c in ("v", "t", "c")} for e in events}


def _snapshot(mysql_server, schema) -> dict[int, dict[str, str]]:
    ep = mysql_server.endpoint
    snap = SnapshotSplitReader(MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password),
                               server_id_range=(32040, 32050))
    try:
        rows = snap.read(SnapshotSplit(schema.table_id, 0, None, None), schema).table.to_pylist()
    finally:
        snap.close()
    return {r["pk"]: {c: r[c] for c in ("v", "t", "c")} for r in rows}


def _first_difference(got: dict, want: dict) -> str:
    assert got.keys() == want.keys(), f"rows {sorted(got.keys() ^ want.keys())[:5]} only on one side"
    for pk in sorted(want):
        for col in ("v", "t", "c"):
            a, b = got[pk][col], want[pk][col]
            if a != b:
                at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
                return (f"row {pk} {col} at character {at}: got {a[at:at + 3]!r} "
                        f"({' '.join(f'U+{ord(c):04X}' for c in a[at:at + 3])}), MariaDB reads {b[at:at + 3]!r} "
                        f"({' '.join(f'U+{ord(c):04X}' for c in b[at:at + 3])})")
    return ""


@pytest.fixture(params=["FULL", "MINIMAL"])
def row_metadata(request, root_conn) -> str:
    """The binlog written with column names and charsets (FULL) or without (MINIMAL: the schema history
    gives them). Global-only; tests of a session run one at a time (as tests/binlog/test_minimal_row_metadata.py)."""
    with root_conn.cursor() as cur:
        cur.execute(f"SET GLOBAL binlog_row_metadata = '{request.param}'")
    try:
        yield request.param
    finally:
        with root_conn.cursor() as cur:
            cur.execute("SET GLOBAL binlog_row_metadata = 'FULL'")


def test_every_charset_reads_as_mariadb_converts_it_by_snapshot_and_by_binlog(
        mysql_server, settings, root_conn, fresh_db, row_metadata):
    with root_conn.cursor() as cur:
        cur.execute("SHOW CHARACTER SET")
        charsets = sorted((name, int(maxlen)) for name, _, _, maxlen in cur.fetchall() if name != "binary")
    assert len(charsets) >= 39  # MariaDB 10.11 lists 40 with binary
    assert {name for name, _ in charsets} <= supported_charsets()
    failures = []
    with root_conn.cursor() as cur:
        cur.execute(f"USE `{fresh_db}`")
        valid = {name: _valid(cur, name, _candidates(name, maxlen)) for name, maxlen in charsets}
        for name, maxlen in charsets:
            if maxlen == 1:
                assert len(valid[name]) >= 128, name  # ASCII at least; most take all 256 bytes
            elif name in VALID_COUNT:
                assert len(valid[name]) == VALID_COUNT[name], f"{name}: the tables were made for another server"
        start = current_offset(root_conn)
        for name, _ in charsets:
            _fill(cur, fresh_db, name, valid[name])
        stop = current_offset(root_conn)
        expected = {name: _server_text(cur, fresh_db, name) for name, _ in charsets}
    for name, _ in charsets:
        schema = read_schema(root_conn, TableId(fresh_db, name))
        assert schema.column("v").charset == name
        for path, got in (("snapshot", _snapshot(mysql_server, schema)),
                          ("binlog (fast decoder)", _binlog(settings, schema, start, stop, True)),
                          ("binlog (mysql-replication)", _binlog(settings, schema, start, stop, False))):
            difference = _first_difference(got, expected[name])
            if difference:
                failures.append(f"{name} by {path}: {difference}")
    assert not failures, "\n".join(failures)


def _members(cur, charset: str, valid: list[bytes]) -> list[str]:
    """Up to six ENUM/SET members of non-ASCII characters of ``charset`` (as utf8mb4 text), each a
    character the server reads as itself (not '?') and writes back to the same bytes."""
    chars = []
    for seq in valid:
        if seq[0] < 0x80 and len(seq) == 1 or charset in _UTF and seq.decode(_UTF[charset]).isascii():
            continue
        cur.execute(f"SELECT HEX(CONVERT(CONVERT(X'{seq.hex()}' USING {charset}) USING utf8mb4)), "
                    f"HEX(CONVERT(CONVERT(CONVERT(X'{seq.hex()}' USING {charset}) USING utf8mb4) USING {charset}))")
        text_hex, back = cur.fetchone()
        text = bytes.fromhex(text_hex).decode("utf-8")
        if text not in ("?", "\ufffd", ",", " ") and text.isprintable() and back == seq.hex().upper():
            chars.append(text)
        if len(chars) == 12:
            break
    return [chars[i] + chars[i + 1] for i in range(0, len(chars) - 1, 2)]


def test_enum_and_set_members_in_every_charset_read_as_mariadb_converts_them(
        mysql_server, settings, root_conn, fresh_db, row_metadata):
    """mysql-replication decodes the members a FULL TableMap carries as UTF-8 whatever their charset,
    blanking the ones it cannot; the binlog path takes the history's members instead."""
    with root_conn.cursor() as cur:
        cur.execute("SHOW CHARACTER SET")
        charsets = sorted((name, int(maxlen)) for name, _, _, maxlen in cur.fetchall() if name != "binary")
        cur.execute(f"USE `{fresh_db}`")
        members = {}
        for name, maxlen in charsets:
            found = _members(cur, name, _valid(cur, name, _candidates(name, maxlen)))
            if found:
                members[name] = found
        assert len(members) >= 35  # ascii and swe7 have no non-ASCII character MariaDB reads back
        start = current_offset(root_conn)
        for name, found in members.items():
            listed = ", ".join("'" + m.replace("'", "''") + "'" for m in found)
            cur.execute(f"CREATE TABLE `e_{name}` (pk int PRIMARY KEY, e ENUM({listed}), s SET({listed})) "
                        f"CHARACTER SET {name} COLLATE {name}_bin")
            rows = [(k, m, ",".join(found[: k + 1])) for k, m in enumerate(found)]
            cur.executemany(f"INSERT INTO `e_{name}` VALUES (%s, %s, %s)", rows)
        stop = current_offset(root_conn)
    failures = []
    for name in members:
        schema = read_schema(root_conn, TableId(fresh_db, f"e_{name}"))
        with root_conn.cursor() as cur:
            cur.execute(f"SELECT pk, HEX(CONVERT(e USING utf8mb4)), HEX(CONVERT(s USING utf8mb4)) FROM `e_{name}`")
            expected = {pk: (bytes.fromhex(e).decode(), bytes.fromhex(s_).decode()) for pk, e, s_ in cur.fetchall()}
        reader = BinlogSplitReader(settings, next_server_id(), {schema.table_id: schema}.get,
                                   DorisValueConverter("UTC"))
        events = [e for e in reader.read_range(start, stop, {schema.table_id}) if isinstance(e, DataChangeEvent)]
        from_binlog = {e.after["pk"]: (e.after["e"], e.after["s"]) for e in events}
        ep = mysql_server.endpoint
        snap = SnapshotSplitReader(MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password),
                                   server_id_range=(32060, 32070))
        try:
            rows = snap.read(SnapshotSplit(schema.table_id, 0, None, None), schema).table.to_pylist()
        finally:
            snap.close()
        from_snapshot = {r["pk"]: (r["e"], r["s"]) for r in rows}
        for path, got in (("binlog", from_binlog), ("snapshot", from_snapshot)):
            if got != expected:
                failures.append(f"{name} by {path}: {got} != MariaDB's {expected}")
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("charset, stored", [
    ("ucs2", "D800"), ("utf32", "0000DFFF"), ("utf8mb4", "EDA080"), ("utf8mb3", "EDBFBF")])
def test_a_lone_surrogate_is_refused_never_replaced(mysql_server, settings, root_conn, fresh_db, charset, stored):
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.s (pk int PRIMARY KEY, v varchar(4) CHARACTER SET {charset})")
        start = current_offset(root_conn)
        cur.execute(f"INSERT INTO `{fresh_db}`.s VALUES (1, CONVERT(X'{stored}' USING {charset}))")
        cur.execute(f"SELECT HEX(v) FROM `{fresh_db}`.s")
        assert cur.fetchone()[0] == stored  # MariaDB keeps it
        stop = current_offset(root_conn)
    schema = read_schema(root_conn, TableId(fresh_db, "s"))
    for fast in (True, False):
        with pytest.raises(UndecodableTextError, match="surrogate"):
            _binlog(settings, schema, start, stop, fast)
    with pytest.raises(UndecodableTextError, match="surrogate"):
        decoder_for(charset)(bytes.fromhex(stored))
    with pytest.raises(UndecodableTextError, match="not UTF-8.*surrogate.*columns that can hold one: v"):
        _snapshot(mysql_server, schema)


# a client charset, and ENUM members and a comment written in it (mysql-replication reads every statement as UTF-8)
CLIENT_TEXT = [("latin1", ("é", "ü", "Ã©"), "Prix (€) ä"), ("koi8r", ("ж", "я", "Ё"), "Цена"),
               ("gbk", ("汉", "字", "表"), "价格"), ("utf8mb4", ("é", "€", "字"), "Prix € 字")]


@pytest.mark.parametrize("client, members, comment", CLIENT_TEXT, ids=[c[0] for c in CLIENT_TEXT])
def test_ddl_sent_in_any_client_charset_reaches_the_schema_history_exactly(
        mysql_server, settings, root_conn, fresh_db, row_metadata, client, members, comment):
    """A DDL is logged in its session's character_set_client; its ENUM members, defaults and comments
    reach the schema history (and so the rows' ENUM values) as the server stores them."""
    import pymysql

    t = TableId(fresh_db, "ddl_text")
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.ddl_text (id int PRIMARY KEY)")
    initial = read_schema(root_conn, t)
    start = current_offset(root_conn)
    conn = pymysql.connect(unix_socket=mysql_server.endpoint.root_socket, user="root", database=fresh_db,
                           autocommit=True, charset=client)
    try:
        listed = ", ".join(f"'{m}'" for m in members)
        with conn.cursor() as cur:
            cur.execute(f"ALTER TABLE ddl_text ADD COLUMN e ENUM({listed}) CHARACTER SET {client} COMMENT '{comment}', "
                        f"ADD COLUMN u ENUM({listed}) CHARACTER SET utf8mb4 DEFAULT '{members[1]}', "
                        f"ADD COLUMN v varchar(10) CHARACTER SET {client} DEFAULT '{members[2]}'")
            cur.executemany("INSERT INTO ddl_text (id, e, u, v) VALUES (%s, %s, %s, %s)",
                            [(k, m, m, m) for k, m in enumerate(members)])
    finally:
        conn.close()
    stop = current_offset(root_conn)
    reader = BinlogSplitReader(settings, next_server_id(), {t: initial}.get, DorisValueConverter("UTC"))
    rows = {e.after["id"]: e.after for e in reader.read_range(start, stop, {t}) if isinstance(e, DataChangeEvent)}
    live = read_schema(root_conn, t)
    history = reader.schema(t)
    for name in ("e", "u", "v"):
        assert (history.column(name).column_type, history.column(name).comment) == (
            live.column(name).column_type, live.column(name).comment), name
    assert history.column("e").comment == comment
    assert (history.column("u").default, history.column("v").default) == (f"'{members[1]}'", f"'{members[2]}'") == (
        live.column("u").default, live.column("v").default)  # MariaDB keeps a string default quoted
    assert rows == {k: {"id": k, "e": m, "u": m, "v": m} for k, m in enumerate(members)}
