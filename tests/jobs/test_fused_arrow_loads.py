"""The fused path reads a chunk natively (decimals, dates, datetimes as read) only when every target
loads it as Arrow with every column typed (``jobs.fused_chunks.arrow_loads``)."""

from __future__ import annotations

from types import SimpleNamespace

from cdc_core.doris.table_creation import DorisTable
from jobs.fused_chunks import arrow_loads


def layout(name: str, *types: str, identity: bool = False) -> dict:
    columns = tuple(f"c{i}" for i in range(len(types)))
    return DorisTable("db", name, columns, True, None, row_identity=identity, column_types=types).to_dict()


def sink(*, loads_arrow: bool = True, explicit: bool = False) -> SimpleNamespace:
    return SimpleNamespace(loads_arrow=loads_arrow, loader=SimpleNamespace(explicit_format=explicit))


def spec(**layouts: dict) -> SimpleNamespace:
    return SimpleNamespace(targets=tuple(f"db.{n}" for n in layouts),
                           layouts={f"db.{n}": v for n, v in layouts.items()})


def test_native_reads_only_for_typed_arrow_loads_into_every_target():
    typed = layout("a", "BIGINT", "DECIMALV3(10,2)", "DATETIMEV2", "DATEV2", "VARCHAR(10)")
    assert arrow_loads(sink(), spec(a=typed))
    assert arrow_loads(sink(), spec(a=typed, b=layout("b", "INT", "DATETIMEV2")))
    # a target with a column sent as JSON (JSONB): its loads go as JSON lines, which take text
    assert not arrow_loads(sink(), spec(a=typed, b=layout("b", "INT", "JSONB")))
    # a keyless table's exact form: its rows' identity hashes their values as text
    assert not arrow_loads(sink(), spec(a=layout("a", "VARCHAR(64)", "DATETIMEV2", identity=True)))
    assert not arrow_loads(sink(loads_arrow=False), spec(a=typed))  # Doris before 2.1, or format: json / csv
    assert not arrow_loads(sink(explicit=True), spec(a=typed))  # the user's own format: as before
    assert not arrow_loads(sink(), SimpleNamespace(targets=("db.a",), layouts={}))  # layout unknown
