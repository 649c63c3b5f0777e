"""The stand-in's CRC32 is zlib's (MySQL's, Doris's) for every string, over the array slices and
chunked arrays DuckDB hands it, with NULLs kept; compiled or not."""

from __future__ import annotations

import zlib

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from devstack.doris import crc32


@settings(deadline=None)  # the first call compiles the loop (or loads it from numba's cache)
@given(st.lists(st.one_of(st.none(), st.text()), max_size=60), st.integers(0, 10))
def test_equals_zlib_on_any_strings_slices_and_chunks(texts, cut):
    expected = [None if t is None else zlib.crc32(t.encode()) for t in texts]
    array = pa.array(texts, pa.string())
    assert crc32.crc32_arrow(array).to_pylist() == expected
    assert crc32.crc32_arrow(array.slice(min(cut, len(texts)))).to_pylist() == expected[min(cut, len(texts)):]
    chunked = pa.chunked_array([array.slice(0, cut), array.slice(cut)], pa.string())
    assert crc32.crc32_arrow(chunked).to_pylist() == expected


def test_the_compiled_loop_is_in_use_and_agrees_with_the_plain_one(monkeypatch):
    assert crc32.compiled() is not None, "numba (the dev extra) should be installed"
    texts = ["", "a", "näme 😀", None, "x" * 1000]
    compiled = crc32.crc32_arrow(pa.array(texts)).to_pylist()
    monkeypatch.setattr(crc32, "_compiled", [None])
    assert crc32.crc32_arrow(pa.array(texts)).to_pylist() == compiled
    assert compiled[:3] == [0, zlib.crc32(b"a"), zlib.crc32("näme 😀".encode())]


def test_in_sql_as_doris_answers(tmp_path):
    from devstack.doris.storage import Storage

    storage = Storage(tmp_path)
    with storage.cursor() as cur:
        rows = cur.execute("SELECT crc32('hello'), crc32(NULL), crc32('')").fetchall()
    assert rows == [(zlib.crc32(b"hello"), None, 0)]


def test_every_length_around_the_eight_byte_steps():
    # The loop takes eight bytes a step and the rest one at a time: each tail length, and multi-byte
    # characters split across a step, against zlib.
    texts = ["".join(chr(0x41 + (i * 7 + n) % 58) for i in range(n)) for n in range(41)]
    texts += ["ü" * n for n in range(1, 20)] + ["😀" * n for n in range(1, 12)]
    assert crc32.crc32_arrow(pa.array(texts)).to_pylist() == [zlib.crc32(t.encode()) for t in texts]
