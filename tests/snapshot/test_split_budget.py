"""The partition cap holds whatever ``TABLE_ROWS`` says, on a billion rows, and the first chunk is
handed out long before the split ends.

No test table can hold a billion rows, so the splitter's queries (``cdc_core/mysql/chunk_splitter.py``:
``KeyQueries``, its seam to the server) are answered by a model of a key distribution: row ``i`` of
``rows`` has the VARCHAR key ``k<i*i+i>`` (zero-padded: sorted as the server would; gaps growing with
``i``, so nothing about it is even). The model answers ``next_chunk_end`` exactly as the server's
``SELECT MAX(k) FROM (SELECT k … WHERE k >= prev ORDER BY k LIMIT n)`` does. The algorithm under test is
the real one; the real-MariaDB side (a run loading the first chunks of a table still being split, a
kill mid-split) is ``tests/orchestration/test_split_interleave.py``.
"""

from __future__ import annotations

import math

import pytest

from cdc_core.model.schema import Column, TableId, TableSchema
from cdc_core.mysql.chunk_splitter import SplitOptions
from cdc_core.mysql.snapshot_assigner import AssignerState, SnapshotSplitAssigner

CAP = 100_000
BILLION = 1_000_000_000
BIG = TableId("shop", "events")
SMALL = TableId("shop", "users")
KEY = Column("k", "varchar(32)", "varchar", False, charset="utf8mb4", char_length=32)
DENSE = Column("id", "bigint(20)", "bigint", False)


def _key(i: int) -> str:
    return f"k{i * i + i:020d}"


def _index_at_or_after(key: str) -> int:
    """The first row whose key is >= ``key`` (keys are k + 20 digits)."""
    value = int(key[1:])
    i = max(0, math.isqrt(value) - 1)
    while i * i + i < value:
        i += 1
    return i


class KeyModel:
    """``KeyQueries`` over modelled tables: {table: (rows, 'varchar' | 'dense')}."""

    def __init__(self, tables: dict[TableId, tuple[int, str]]):
        self.tables = tables
        self.queries = 0

    def bounds(self, table_id: TableId, column: Column):
        rows, kind = self.tables[table_id]
        if not rows:
            return None, None
        return (_key(0), _key(rows - 1)) if kind == "varchar" else (1, rows)

    def approximate_rows(self, table_id: TableId) -> int:
        raise AssertionError("the plan's estimate is used; the server is not asked again")

    def next_chunk_end(self, table_id: TableId, column: Column, previous, top, limit: int):
        self.queries += 1
        rows, _kind = self.tables[table_id]
        last = min(_index_at_or_after(previous) + limit - 1, rows - 1)
        end = _key(last)
        return end, end >= top


def _schema(table_id: TableId, column: Column) -> TableSchema:
    return TableSchema(table_id, (column,), (column.name,))


def _assigner(model: KeyModel, estimates: dict[TableId, int], state: AssignerState | None = None,
              chunk_size: int = 8096) -> SnapshotSplitAssigner:
    options = SplitOptions(chunk_size=chunk_size, split_pause_s=0, max_partitions=CAP,
                           table_rows=tuple((str(t), n) for t, n in estimates.items()))
    columns = {t: KEY if kind == "varchar" else DENSE for t, (_rows, kind) in model.tables.items()}
    return SnapshotSplitAssigner(model, list(estimates), lambda t: _schema(t, columns[t]), options, state=state)


def _check_plan(splits, model: KeyModel) -> dict[TableId, int]:
    """Every table's chunks tile its key space: the first starts at -inf, each starts where the
    previous ended, the last ends at +inf, none is empty."""
    per_table: dict[TableId, list] = {}
    for split in splits:
        per_table.setdefault(split.table_id, []).append(split)
    for table_id, chunks in per_table.items():
        assert [c.index for c in chunks] == list(range(len(chunks)))
        assert chunks[0].start is None and chunks[-1].end is None
        for before, after in zip(chunks, chunks[1:], strict=False):
            assert before.end == after.start and before.end is not None
        rows, kind = model.tables[table_id]
        if kind == "varchar":
            ends = [_index_at_or_after(c.end[0]) for c in chunks[:-1]]
            assert ends == sorted(set(ends)) and all(0 < e < rows for e in ends)
    return {t: len(c) for t, c in per_table.items()}


@pytest.mark.parametrize("estimate", [BILLION // 10, 0, BILLION * 10], ids=["10x-low", "never-analyzed", "10x-high"])
def test_a_billion_rows_stay_within_the_partition_cap_whatever_table_rows_says(estimate):
    model = KeyModel({BIG: (BILLION, "varchar"), SMALL: (50_000, "varchar")})
    assigner = _assigner(model, {BIG: estimate, SMALL: 50_000})
    first = assigner.next_batch()
    # the first chunk is handed out after one query, with the split far from done
    assert [(s.table_id, s.index, s.start) for s in first] == [(BIG, 0, None)]
    assert model.queries == 1 and not assigner.state().finished
    splits = [*first, *assigner]
    counts = _check_plan(splits, model)
    assert sum(counts.values()) <= CAP, counts
    assert counts[SMALL] >= 1
    # the chunks grew as the real count appeared; never smaller than the configured size
    state_sizes = [len(splits)]
    assert state_sizes[0] == sum(counts.values())
    if estimate == BILLION // 10:
        # at 8096 rows a chunk a billion rows needs 123,516 chunks: the sizes grew
        assert counts[BIG] > BILLION // 8096 // 10


def test_a_split_killed_midway_resumes_from_its_cursor_to_the_same_plan():
    model = KeyModel({BIG: (BILLION, "varchar"), SMALL: (50_000, "varchar")})
    estimates = {BIG: BILLION // 10, SMALL: 50_000}
    whole = list(_assigner(model, estimates))
    interrupted = _assigner(model, estimates)
    head = []
    for _ in range(30_000):  # the cursor as the state store holds it after each step
        head += interrupted.next_batch()
    saved = interrupted.state().to_dict()
    resumed = _assigner(model, estimates, state=AssignerState.from_dict(saved))
    assert [*head, *resumed] == whole


def test_an_even_split_of_a_billion_dense_keys_stays_within_the_cap():
    """An integer key split evenly: its count comes from the estimate; a table after a bigger
    uneven one than estimated still fits in what is left."""
    model = KeyModel({BIG: (BILLION, "varchar"), TableId("shop", "ids"): (BILLION, "dense")})
    ids = TableId("shop", "ids")
    splits = list(_assigner(model, {BIG: BILLION // 10, ids: BILLION}))
    counts = _check_plan(splits, model)
    assert sum(counts.values()) <= CAP and counts[ids] >= 1, counts


def test_the_plans_row_estimates_are_a_dictionary_built_once():
    """``approximate_rows`` is asked for every later table at every table of a plan: rebuilding the
    dictionary at each call made 300 tables cost ~0.7 s of planning."""
    options = SplitOptions(table_rows=tuple((f"d.t{i}", i) for i in range(300)),
                           table_chunk_sizes=(("d.t1", 7),))
    assert options.approximate_rows(TableId("d", "t299")) == 299
    assert options.approximate_rows(TableId("d", "x")) is None
    assert options.rows_per_chunk(TableId("d", "t1")) == 7 and options.rows_per_chunk(TableId("d", "t2")) == 8096
    assert options.__dict__["_row_estimates"] is options._row_estimates  # kept, not rebuilt
