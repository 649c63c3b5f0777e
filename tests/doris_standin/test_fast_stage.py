"""The staged rows by Arrow's kernels (devstack/doris/fast_stage.py) are exactly the DuckDB query's.

Each case runs both over the same parsed load: where the fast path applies, the tables (schema,
values, ``__ord``, ``__sign``, ``__seq``) must be equal; where the query filters a row or converts a
value the fast path cannot, the fast path must decline (return None) so the query answers.
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from devstack.doris import loads
from devstack.doris.catalog import DELETE_SIGN, Column, Table
from devstack.doris.fast_stage import fast_staged_rows
from devstack.doris.storage import Storage
from devstack.doris.stream_load_execution import StreamLoader

ALL_TYPES = [
    Column("id", "BIGINT", nullable=False, is_key=True),
    Column("b", "BOOLEAN"), Column("t", "TINYINT"), Column("s", "SMALLINT"), Column("i", "INT"),
    Column("f", "FLOAT"), Column("d", "DOUBLE"), Column("dec", "DECIMALV3(10,2)"),
    Column("dec30", "DECIMALV3(30,6)"), Column("dt", "DATEV2"), Column("ts0", "DATETIMEV2(0)"),
    Column("ts3", "DATETIMEV2(3)"), Column("ts6", "DATETIMEV2(6)"), Column("c", "CHAR(4)"),
    Column("v", "VARCHAR(6)"), Column("str", "STRING"), Column("seq", "BIGINT"),
]
ARROW_TYPES = {
    "id": pa.int64(), "b": pa.bool_(), "t": pa.int8(), "s": pa.int16(), "i": pa.int32(), "f": pa.float32(),
    "d": pa.float64(), "dec": pa.decimal128(10, 2), "dec30": pa.decimal128(30, 6), "dt": pa.date32(),
    "ts0": pa.timestamp("us"), "ts3": pa.timestamp("ms", tz="UTC"), "ts6": pa.timestamp("ns"), "c": pa.utf8(),
    "v": pa.large_utf8(), "str": pa.utf8(), "seq": pa.int64(),
}
_T = dt.datetime(2024, 5, 6, 7, 8, 9, 123456)
ROWS = [
    {"id": 1, "b": True, "t": -128, "s": 32767, "i": -2**31, "f": 1.5, "d": -0.0, "dec": Decimal("12345678.91"),
     "dec30": Decimal("123456789012345678901234.123456"), "dt": dt.date(1, 1, 1), "ts0": _T, "ts3": _T, "ts6": _T,
     "c": "abcd", "v": "ééé", "str": "x" * 1000, "seq": 5},
    {k: None for k in ARROW_TYPES} | {"id": 2},
    {"id": 3, "b": False, "t": 0, "s": 0, "i": 0, "f": float("inf"), "d": float("nan"), "dec": Decimal("0.01"),
     "dec30": Decimal("-1"), "dt": dt.date(9999, 12, 31), "ts0": dt.datetime(1970, 1, 1), "ts3": _T, "ts6": _T,
     "c": "", "v": "", "str": "", "seq": -1},
]


def _table(model: str, columns: list[Column], **props: str) -> Table:
    return Table("d", "t", model, columns, ["id"], properties=dict(props))


def _arrow_body(rows: list[dict], types: dict[str, pa.DataType], sign: list[int | None] | None = None) -> bytes:
    data = {k: pa.array([r.get(k) for r in rows], t) for k, t in types.items()}
    if sign is not None:
        data[DELETE_SIGN] = pa.array(sign, pa.int8())
    sink = pa.BufferOutputStream()
    tbl = pa.table(data)
    with ipc.new_stream(sink, tbl.schema) as w:
        w.write_table(tbl)
    return sink.getvalue().to_pybytes()


def _parse_arrow(table: Table, body: bytes) -> loads.Parsed:
    parsed = loads.parse_arrow(body)
    for field in parsed.table.schema:
        c = table.column(field.name)
        assert c is None or loads.arrow_type_error(field.name, c.dtype, field.type) is None
    return loads.arrow_datetimes(parsed, {c.name.lower() for c in table.columns if c.dtype.name == "DATETIMEV2"})


def _parse_json(table: Table, lines: list[dict], hidden: list[str]) -> loads.Parsed:
    names = table.column_names() + ([DELETE_SIGN] if table.is_unique and DELETE_SIGN in hidden else [])
    hints = {c.name: c.dtype.arrow_hint() for c in table.columns}
    body = "".join(json.dumps(x) + "\n" for x in lines).encode()
    return loads.parse_json(body, names, hints, True, False)


@pytest.fixture
def loader(tmp_path: Path):
    storage = Storage(tmp_path / "data")
    try:
        yield StreamLoader(storage, None, tmp_path / "errors")  # type: ignore[arg-type]  # no transaction is begun
    finally:
        storage.close()


def _both(loader: StreamLoader, table: Table, parsed: loads.Parsed, fmt: str, headers: dict[str, str] | None = None,
          hidden: list[str] | None = None) -> tuple[pa.Table | None, pa.Table]:
    h = {"format": fmt, **(headers or {})}
    hidden = hidden or []
    fast = fast_staged_rows(table, parsed, h, fmt, None, hidden, "APPEND")
    slow = loader._query_rows(table, 1, parsed, None, hidden, None, "APPEND", h)
    return fast, slow


def _assert_same(fast: pa.Table | None, slow: pa.Table) -> None:
    assert slow.column("__err").null_count == len(slow)  # the query filters nothing here
    slow = slow.drop_columns(["__err", "__unsel"])
    assert fast is not None
    assert fast.schema == slow.schema, (fast.schema, slow.schema)
    for name in slow.column_names:  # value by value, by repr: NaN equals NaN, -0.0 differs from 0.0
        assert [repr(x) for x in fast.column(name).to_pylist()] == [repr(x) for x in slow.column(name).to_pylist()], name


@pytest.mark.parametrize("model", ["UNIQUE_KEYS", "DUP_KEYS", "AGG_KEYS"])
@pytest.mark.parametrize("strict", ["true", "false"])
def test_arrow_loads_of_every_type_stage_the_same_rows(loader: StreamLoader, model: str, strict: str) -> None:
    table = _table(model, ALL_TYPES)
    fast, slow = _both(loader, table, _parse_arrow(table, _arrow_body(ROWS, ARROW_TYPES)), "arrow",
                       {"strict_mode": strict})
    _assert_same(fast, slow)


@pytest.mark.parametrize("sign", [[0, 1, None], [1, 2, -1]])
def test_the_delete_sign_and_the_sequence_column_stage_the_same(loader: StreamLoader, sign: list) -> None:
    table = _table("UNIQUE_KEYS", ALL_TYPES, **{"function_column.sequence_col": "seq"})
    parsed = _parse_arrow(table, _arrow_body(ROWS, ARROW_TYPES, sign))
    for hidden in ([DELETE_SIGN], []):  # without the header the sign column is not read: nothing deletes
        fast, slow = _both(loader, table, parsed, "arrow", hidden=hidden)
        _assert_same(fast, slow)


def test_columns_the_load_leaves_out_are_null_and_a_partial_load_stages_the_same(loader: StreamLoader) -> None:
    table = _table("DUP_KEYS", ALL_TYPES)
    types = {k: ARROW_TYPES[k] for k in ("id", "v", "ts3")}
    fast, slow = _both(loader, table, _parse_arrow(table, _arrow_body(ROWS, types)), "arrow")
    _assert_same(fast, slow)


@pytest.mark.parametrize("signs", [["0", "1", "0"], None])
def test_typed_json_loads_stage_the_same(loader: StreamLoader, signs: list[str] | None) -> None:
    cols = [Column("id", "BIGINT", nullable=False, is_key=True), Column("n", "INT"), Column("t", "TINYINT"),
            Column("d", "DOUBLE"), Column("b", "BOOLEAN"), Column("v", "VARCHAR(8)"), Column("s", "STRING"),
            Column("seq", "BIGINT")]
    table = _table("UNIQUE_KEYS", cols, **{"function_column.sequence_col": "seq"})
    lines = [{"id": 1, "n": 7, "t": -3, "d": 1.25, "b": True, "v": "abc", "s": "long text", "seq": 9},
             {"id": 2, "n": None, "t": None, "d": None, "b": None, "v": None, "s": None, "seq": None},
             {"id": 3, "n": -2**31, "t": 127, "d": -1.0, "b": False, "v": "ü" * 4, "s": "", "seq": 1}]
    hidden = [DELETE_SIGN] if signs else []
    if signs:
        lines = [x | {DELETE_SIGN: s} for x, s in zip(lines, signs, strict=True)]
    fast, slow = _both(loader, table, _parse_json(table, lines, hidden), "json", hidden=hidden)
    _assert_same(fast, slow)


@pytest.mark.parametrize("case", ["null_not_null", "too_long_bytes", "too_long_char", "int_overflow", "sign_text",
                                  "default", "jsonb", "largeint", "hidden_sequence", "extra_column"])
def test_what_the_query_filters_or_converts_is_left_to_it(loader: StreamLoader, case: str) -> None:
    """Each of these loads the fast path declines; the query then stages or filters it."""
    cols = [Column("id", "BIGINT", nullable=False, is_key=True), Column("n", "INT"), Column("v", "VARCHAR(4)")]
    props: dict[str, str] = {}
    lines = [{"id": 1, "n": 1, "v": "ab"}]
    hidden: list[str] = []
    fmt = "json"
    if case == "null_not_null":
        lines.append({"id": None, "n": 1, "v": "x"})
    elif case == "too_long_bytes":
        lines.append({"id": 2, "n": 1, "v": "ééé"})  # 3 characters, 6 bytes
    elif case == "too_long_char":
        cols[2] = Column("v", "CHAR(1)")
    elif case == "int_overflow":
        lines.append({"id": 2, "n": 2**40, "v": "x"})
    elif case == "sign_text":
        hidden = [DELETE_SIGN]
        lines = [x | {DELETE_SIGN: "true"} for x in lines]
    elif case == "default":  # a column the (arrow) body leaves out takes its default: the query's literal
        cols.append(Column("z", "INT", default="5"))
        fmt = "arrow"
    elif case == "jsonb":
        cols.append(Column("j", "JSONB"))
        lines = [x | {"j": "{}"} for x in lines]
    elif case == "largeint":
        cols.append(Column("l", "LARGEINT"))
        lines = [x | {"l": "1"} for x in lines]
    elif case == "hidden_sequence":
        props["function_column.sequence_type"] = "BIGINT"
        lines = [x | {"__DORIS_SEQUENCE_COL__": 1} for x in lines]
    elif case == "extra_column":
        fmt = "arrow"
    table = _table("UNIQUE_KEYS", cols, **props)
    if fmt == "arrow":
        types = {"id": pa.int64(), "n": pa.int32(), "v": pa.utf8()} | ({"other": pa.int64()} if case == "extra_column" else {})
        body = _arrow_body([{"id": 1, "n": 1, "v": "a", "other": 1}], types)
        parsed = loads.parse_arrow(body)
    else:
        parsed = _parse_json(table, lines, hidden)
    assert fast_staged_rows(table, parsed, {"format": fmt}, fmt, None, hidden, "APPEND") is None


def test_headers_the_fast_path_does_not_read_are_left_to_the_query(loader: StreamLoader) -> None:
    table = _table("UNIQUE_KEYS", ALL_TYPES)
    parsed = _parse_arrow(table, _arrow_body(ROWS, ARROW_TYPES))
    assert fast_staged_rows(table, parsed, {"where": "id > 1"}, "arrow", None, [], "APPEND") is None
    assert fast_staged_rows(table, parsed, {}, "arrow", [("id", None)], [], "APPEND") is None
    assert fast_staged_rows(table, parsed, {}, "arrow", None, [], "DELETE") is None
    assert fast_staged_rows(table, parsed, {}, "arrow", None, [], "APPEND") is not None
