"""Generate ``cdc_core/mysql/types/charset_tables.py``: what MariaDB itself reads each charset's bytes as.

Usage: ``python tools/charset_tables.py [--socket PATH]`` (without ``--socket`` a devstack MariaDB
is started in a temporary directory and stopped afterwards).

For every charset ``SHOW CHARACTER SET`` lists (but ``binary``), the server is asked to convert
bytes to utf8mb4 — ``CONVERT(CONVERT(b USING cs) USING utf8mb4)`` — so the tables are MariaDB's
own conversion, byte for byte:

* single-byte charsets: all 256 bytes → a 256-character decoding table;
* multibyte charsets other than the UTF ones: every candidate sequence (each byte; each lead byte
  0x80-0xFF with each second byte; ``0x8F`` with two bytes 0xA1-0xFE for the EUC-JP family) that
  the server takes as exactly one well-formed character; the result is stored as the differences
  from the closest Python codec (sequences the server reads as ``'?'`` as ranges), plus each lead
  byte's sequence length;
* the UTF charsets (utf8mb3/utf8mb4/ucs2/utf16/utf16le/utf32) decode with Python's codecs, which
  ``tests/snapshot/test_charsets.py`` checks against the server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pymysql

OUT = Path(__file__).resolve().parent.parent / "cdc_core" / "mysql" / "types" / "charset_tables.py"
UNICODE = {"utf8mb3", "utf8mb4", "ucs2", "utf16", "utf16le", "utf32", "binary"}
# the Python codecs tried for each multibyte charset; the one with fewest differences is kept
CANDIDATES = {
    "big5": ("big5", "cp950"), "ujis": ("euc_jp", "euc_jis_2004"), "sjis": ("shift_jis", "cp932"),
    "euckr": ("cp949", "euc_kr"), "gb2312": ("gb2312", "gbk"), "gbk": ("gbk", "gb18030"), "cp932": ("cp932",),
    "eucjpms": ("euc_jis_2004", "euc_jp", "cp932"),
}
QUESTION = "?"


@contextlib.contextmanager
def _server(socket: str | None) -> Iterator[pymysql.connections.Connection]:
    if socket is not None:
        conn = pymysql.connect(unix_socket=socket, user="root", charset="utf8mb4", autocommit=True)
        try:
            yield conn
        finally:
            conn.close()
        return
    sys.path.insert(0, str(OUT.parents[3]))
    from devstack.mysql import MariaDBServer
    from devstack.procs import free_port

    with tempfile.TemporaryDirectory() as tmp:
        server = MariaDBServer(Path(tmp), port=free_port())
        server.start()
        try:
            conn = pymysql.connect(unix_socket=server.endpoint.root_socket, user="root", charset="utf8mb4",
                                   autocommit=True)
            try:
                yield conn
            finally:
                conn.close()
        finally:
            server.stop()


def _converted(cur, charset: str, table: str) -> dict[bytes, str]:
    """Each candidate in ``table`` the server reads as one well-formed character of ``charset`` → that
    character, as the server converts it to utf8mb4 (HEX: a lone surrogate is not valid UTF-8)."""
    cur.execute(f"SELECT b, HEX(CONVERT(CONVERT(b USING {charset}) USING utf8mb4)) FROM {table} "
                f"WHERE HEX(CONVERT(b USING {charset})) = HEX(b) AND CHAR_LENGTH(CONVERT(b USING {charset})) = 1")
    return {bytes(b): bytes.fromhex(h).decode("utf-8", "surrogatepass") for b, h in cur.fetchall()}


def _python(seq: bytes, codec: str) -> str | None:
    try:
        return seq.decode(codec)
    except UnicodeDecodeError:
        return None


def _question_ranges(valid: list[int], exceptions: dict[int, str]) -> list[tuple[int, int]]:
    """Runs of consecutive valid sequences (in byte order) the server reads as '?'."""
    ranges: list[tuple[int, int]] = []
    previous = None
    for seq in valid:
        if exceptions.get(seq) == QUESTION:
            if ranges and ranges[-1][1] == previous:
                ranges[-1] = (ranges[-1][0], seq)
            else:
                ranges.append((seq, seq))
        previous = seq
    return ranges


def generate(conn: pymysql.connections.Connection) -> str:
    cur = conn.cursor()
    cur.execute("SELECT VERSION()")
    version = cur.fetchone()[0]
    cur.execute("SHOW CHARACTER SET")
    charsets = sorted((name, int(maxlen)) for name, _, _, maxlen in cur.fetchall())
    cur.execute("CREATE DATABASE IF NOT EXISTS tm_charset_tables")
    cur.execute("CREATE OR REPLACE TABLE tm_charset_tables.one (b varbinary(1) PRIMARY KEY)")
    cur.execute("INSERT INTO tm_charset_tables.one VALUES " + ",".join(f"(X'{b:02X}')" for b in range(256)))
    seqs = {bytes([b]) for b in range(256)} | {bytes([a, b]) for a in range(0x80, 0x100) for b in range(256)} \
        | {bytes([0x8F, a, b]) for a in range(0xA1, 0xFF) for b in range(0xA1, 0xFF)}
    cur.execute("CREATE OR REPLACE TABLE tm_charset_tables.multi (b varbinary(3) PRIMARY KEY)")
    ordered = sorted(seqs)
    for i in range(0, len(ordered), 4000):
        cur.execute("INSERT INTO tm_charset_tables.multi VALUES "
                    + ",".join(f"(X'{s.hex()}')" for s in ordered[i:i + 4000]))
    single: dict[str, str] = {}
    multi: dict[str, dict] = {}
    for name, maxlen in charsets:
        if name in UNICODE:
            continue
        if maxlen == 1:
            table = _converted(cur, name, "tm_charset_tables.one")
            single[name] = "".join(table[bytes([b])] for b in range(256))
            continue
        table = _converted(cur, name, "tm_charset_tables.multi")
        lengths = [0] * 256
        for seq in table:
            if lengths[seq[0]] not in (0, len(seq)):
                raise SystemExit(f"{name}: lead byte {seq[0]:#x} starts sequences of different lengths")
            lengths[seq[0]] = len(seq)
        best = None
        for codec in CANDIDATES[name]:
            exceptions = {int.from_bytes(s, "big"): c for s, c in table.items() if _python(s, codec) != c}
            if best is None or len(exceptions) < len(best[1]):
                best = (codec, exceptions)
        codec, exceptions = best
        valid = sorted(int.from_bytes(s, "big") for s in table)
        multi[name] = {
            "codec": codec, "lengths": lengths, "question": _question_ranges(valid, exceptions),
            "other": {s: c for s, c in sorted(exceptions.items()) if c != QUESTION},
            "count": len(table),
        }
    cur.execute("DROP DATABASE tm_charset_tables")
    return _module(version, single, multi)


def _module(version: str, single: dict[str, str], multi: dict[str, dict]) -> str:
    lines = [
        '"""Generated by ``tools/charset_tables.py`` — do not edit; run it again instead.',
        "",
        f"What MariaDB {version} itself reads each charset's bytes as: its own conversion to utf8mb4",
        "(``CONVERT(CONVERT(b USING cs) USING utf8mb4)``) of every byte (single-byte charsets) and of every",
        "sequence it takes as one character (multibyte charsets). The server's single-byte tables come from",
        "the ``<unicode>`` maps of MariaDB's ``sql/share/charsets/*.xml`` (repository MariaDB/server; macce",
        "checked by hand at commit 54449161f8fa953af493f4785305b14fe89af104); a byte a map leaves undefined",
        "the server reads as ``'?'``, and so do these tables. ``cdc_core.mysql.types.charsets`` decodes with",
        "them; ``tests/snapshot/test_charsets.py`` checks them, and both read paths, against the live server.",
        '"""',
        "",
        "# fmt: off",
        "# ruff: noqa: E501",
        "",
        "# 256 characters per charset: byte b reads as SINGLE_BYTE[charset][b]",
        "SINGLE_BYTE: dict[str, str] = {",
    ]
    for name, text in single.items():
        lines.append(f"    {name!r}: {json.dumps(text, ensure_ascii=True)},")
    lines += [
        "}",
        "",
        "# per multibyte charset: the Python codec it agrees with but for the listed sequences; LENGTHS:",
        "# the sequence length a lead byte starts (0: no character starts with it); QUESTION: inclusive",
        "# ranges of sequences (big-endian integers) MariaDB reads as '?'; OTHER: the remaining differences",
        "CODEC: dict[str, str] = {",
    ]
    lines += [f"    {n!r}: {m['codec']!r}," for n, m in multi.items()]
    lines += ["}", "", "LENGTHS: dict[str, bytes] = {"]
    lines += [f"    {n!r}: bytes.fromhex({bytes(m['lengths']).hex()!r})," for n, m in multi.items()]
    lines += ["}", "", "QUESTION: dict[str, tuple[tuple[int, int], ...]] = {"]
    for n, m in multi.items():
        body = ", ".join(f"({lo:#x}, {hi:#x})" for lo, hi in m["question"])
        lines.append(f"    {n!r}: ({body}{',' if len(m['question']) == 1 else ''}),")
    lines += ["}", "", "OTHER: dict[str, dict[int, str]] = {"]
    for n, m in multi.items():
        body = ", ".join(f"{s:#x}: {json.dumps(c, ensure_ascii=True)}" for s, c in m["other"].items())
        lines.append(f"    {n!r}: {{{body}}},")
    lines += ["}", "", "# sequences MariaDB takes as one character, per multibyte charset (a check for the tests)",
              "VALID_COUNT: dict[str, int] = {"]
    lines += [f"    {n!r}: {m['count']}," for n, m in multi.items()]
    lines += ["}", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--socket", help="a running MariaDB's socket (root, no password)")
    args = parser.parse_args()
    with _server(args.socket) as conn:
        OUT.write_text(generate(conn))
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
