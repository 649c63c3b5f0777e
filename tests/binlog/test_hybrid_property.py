"""Property: snapshot chunks + the filtered stream from the minimum high watermark = the tables.

A seeded random loop: random DML runs before, during (between the low watermark and the scan, and
between the scan and the high watermark) and after chunk reads by the snapshot engine's
``SnapshotSplitReader``; chunks are read in random order with random bounds. Then the stream is
read from the minimum high watermark with :class:`BinlogEventFilter`, applied on top of the
chunks' rows — and every table must equal the source table, read whole at the end through the
same conversion.

Every run checks the same seeds (``TIDEMARK_PROPERTY_SEEDS`` of them from
``TIDEMARK_PROPERTY_FIRST_SEED``), whatever the machine's speed: a time budget alone made the
coverage depend on the load, so a failing seed showed up only on a fast machine (a "flaky" test).
``TIDEMARK_PROPERTY_SECONDS`` keeps going with further seeds for longer runs.

The random chunk bounds must partition the key space the way the splitter's do, i.e. in the
server's collation order: string bounds are sorted and de-duplicated by the server itself
(``utf8mb4_general_ci``: 'B' = 'b', 'é' = 'É' = 'e', 'm' < 'Z'). Sorted by code point instead, bounds
like ['B', 'Z', 'm'] make overlapping chunks ([B, Z) and [m, ∞) both hold 'Nn'), which no splitter
produces and no stream can reconcile: a row deleted between the two chunks' reads stays in the
first chunk's copy.

Rows are keyed by the exact stored string, as MySQL logs them: the binlog's images carry the
stored value ('Nn' stays 'Nn' until an UPDATE changes its case, which is logged as before 'Nn',
after 'NN'), so an exact-key model is faithful and stricter than a case-folded one (Doris compares
keys byte-wise).
"""

from __future__ import annotations

import functools
import os
import random
import time

import pymysql
import pytest

from cdc_core.model.events import DataChangeEvent, Op
from cdc_core.model.offsets import BinlogOffset
from cdc_core.model.schema import TableId
from cdc_core.mysql.binlog_reader import BinlogSplitReader
from cdc_core.mysql.collation import CollationWeigher
from cdc_core.mysql.connection import MySqlConnectionSettings
from cdc_core.mysql.discovery import read_table_schema
from cdc_core.mysql.finished_chunk import FinishedChunk
from cdc_core.mysql.hybrid_assigner import BinlogSplit, HybridSplitAssigner
from cdc_core.mysql.snapshot_reader import SnapshotSplitReader
from cdc_core.mysql.splits import SnapshotSplit
from cdc_core.mysql.startup import StartupPlan
from cdc_core.mysql.types import DorisValueConverter
from tests.binlog.conftest import current_offset, next_server_id

SEEDS = int(os.environ.get("TIDEMARK_PROPERTY_SEEDS", "16"))  # every run checks these seeds
TIME_BUDGET_S = float(os.environ.get("TIDEMARK_PROPERTY_SECONDS", "0"))  # longer runs: more seeds until then
FIRST_SEED = int(os.environ.get("TIDEMARK_PROPERTY_FIRST_SEED", "0"))
LETTERS = "aAbBmMnNzZéÉ"
STRING_BOUNDS = ["b", "B", "M", "m", "n", "Z", "z"]
ACCENTED_BOUNDS = ["é", "É", "e", "E"]  # equal to each other under utf8mb4_general_ci
COLLATION = "utf8mb4_general_ci"
SNAPSHOT_PLAN = StartupPlan("initial", snapshot=True, start=None)


class Workload:
    """Random DML on an int-keyed and a case-insensitive string-keyed table."""

    def __init__(self, conn, db: str, rng: random.Random):
        self.conn, self.db, self.rng = conn, db, rng

    def _int_key(self) -> int:
        return self.rng.randrange(0, 400)

    def _str_key(self) -> str:
        return "".join(self.rng.choice(LETTERS) for _ in range(self.rng.randint(1, 3)))

    def _one(self, cur) -> None:
        r = self.rng.random()
        db = self.db
        amount = f"{self.rng.randrange(0, 100000) / 100:.2f}"
        try:
            if r < 0.30:
                cur.execute(f"INSERT INTO `{db}`.n (id, v, amount) VALUES (%s, %s, %s)",
                            (self._int_key(), self.rng.randrange(1000), amount))
            elif r < 0.45:
                cur.execute(f"UPDATE `{db}`.n SET v = v + 1, amount = %s WHERE id BETWEEN %s AND %s",
                            (amount, k := self._int_key(), k + self.rng.randrange(0, 30)))
            elif r < 0.52:
                cur.execute(f"UPDATE `{db}`.n SET id = %s WHERE id = %s", (self._int_key(), self._int_key()))
            elif r < 0.62:
                cur.execute(f"DELETE FROM `{db}`.n WHERE id BETWEEN %s AND %s",
                            (k := self._int_key(), k + self.rng.randrange(0, 10)))
            elif r < 0.80:
                cur.execute(f"INSERT INTO `{db}`.s (k, v) VALUES (%s, %s)", (self._str_key(), self.rng.randrange(99)))
            elif r < 0.88:
                cur.execute(f"UPDATE `{db}`.s SET k = %s WHERE k = %s", (self._str_key(), self._str_key()))
            elif r < 0.94:
                cur.execute(f"UPDATE `{db}`.s SET v = v + 1 WHERE k >= %s", (self._str_key(),))
            else:
                cur.execute(f"DELETE FROM `{db}`.s WHERE k = %s", (self._str_key(),))
        except pymysql.err.IntegrityError:
            pass  # a duplicate key: the statement changed nothing

    def run(self, statements: int) -> None:
        with self.conn.cursor() as cur:
            for _ in range(statements):
                if self.rng.random() < 0.3:
                    cur.execute("BEGIN")
                    for _ in range(self.rng.randint(2, 5)):
                        self._one(cur)
                    cur.execute("COMMIT")
                else:
                    self._one(cur)


class ServerCollation:
    """Compares strings as the server does under the string key's collation (cached)."""

    def __init__(self, conn, collation: str = COLLATION):
        self.conn, self.collation = conn, collation
        self._cache: dict[tuple[str, str], int] = {}

    def compare(self, a, b) -> int:
        if not isinstance(a, str):
            return (a > b) - (a < b)
        if (a, b) not in self._cache:
            with self.conn.cursor() as cur:
                cur.execute(f"SELECT STRCMP(CONVERT(%s USING utf8mb4) COLLATE {self.collation}, "
                            f"CONVERT(%s USING utf8mb4) COLLATE {self.collation})", (a, b))
                self._cache[(a, b)] = int(cur.fetchone()[0])
        return self._cache[(a, b)]

    def sorted_unique(self, values: list) -> list:
        """Ascending in the server's order, one value per group of equal ones (the first drawn)."""
        out: list = []
        for v in sorted(values, key=functools.cmp_to_key(self.compare)):
            if not out or self.compare(out[-1], v) != 0:
                out.append(v)
        return out


def _random_splits(table_id: TableId, bounds: list, order: ServerCollation) -> list[SnapshotSplit]:
    # chunks must partition the key space in the server's order, as the splitter's do
    bounds = order.sorted_unique(bounds)
    edges = [None, *bounds, None]
    return [SnapshotSplit(table_id, i, None if a is None else (a,), None if b is None else (b,))
            for i, (a, b) in enumerate(zip(edges, edges[1:], strict=False))]


def _apply(sink: dict, key: str, events: list) -> None:
    for e in events:
        if not isinstance(e, DataChangeEvent):
            continue
        if e.op in (Op.DELETE, Op.UPDATE) and e.before is not None:
            sink.pop(e.before[key], None)
        if e.op in (Op.INSERT, Op.UPDATE) and e.after is not None:
            sink[e.after[key]] = e.after


def _rows(result) -> list[dict]:
    return result.table.to_pylist()


def _difference(sink: dict, truth: dict) -> str:
    extra = {k: sink[k] for k in sink.keys() - truth.keys()}
    missing = {k: truth[k] for k in truth.keys() - sink.keys()}
    changed = {k: (sink[k], truth[k]) for k in sink.keys() & truth.keys() if sink[k] != truth[k]}
    return f"only reproduced {extra}, only in MySQL {missing}, different (reproduced, MySQL) {changed}"


class ChunkOracle:
    """Independently of the filter: which chunk's range holds a key, compared by the server itself."""

    def __init__(self, order: ServerCollation, finished: list[FinishedChunk]):
        self.order = order
        self.finished = finished

    def _ge(self, a, b, text: bool) -> bool:
        return a >= b if not text else self.order.compare(a, b) >= 0

    def high_watermark(self, table: TableId, key) -> object:
        text = isinstance(key, str)
        for c in self.finished:
            if c.table_id != table:
                continue
            if (c.start is None or self._ge(key, c.start[0], text)) and (c.end is None or not self._ge(key, c.end[0], text)):
                return c.high_watermark
        return None

    def check_after_snapshot(self, event: DataChangeEvent, key: str) -> None:
        """Exactly once: an emitted change is after the HW of every chunk holding one of its images
        (or after the table's last HW, when the table has become pure binlog)."""
        max_hw = max(c.high_watermark for c in self.finished if c.table_id == event.table_id)
        if event.offset > max_hw:
            return
        for image in (event.before, event.after):
            if image is None:
                continue
            hw = self.high_watermark(event.table_id, image[key])
            assert hw is None or event.offset > hw, (
                f"{event.op} of {image[key]!r} at {event.offset} was already in its chunk (HW {hw})")


def test_chunks_plus_filtered_stream_reproduce_tables(mysql_server, root_conn, fresh_db):
    ep = mysql_server.endpoint
    settings = MySqlConnectionSettings(ep.host, ep.port, ep.user, ep.password)
    with root_conn.cursor() as cur:
        cur.execute(f"CREATE TABLE `{fresh_db}`.n (id bigint PRIMARY KEY, v int, amount decimal(10,2))")
        cur.execute(f"CREATE TABLE `{fresh_db}`.s (k varchar(8) COLLATE utf8mb4_general_ci PRIMARY KEY, v int)")
    tables = {TableId(fresh_db, "n"): "id", TableId(fresh_db, "s"): "k"}
    deadline = time.monotonic() + TIME_BUDGET_S
    rounds = 0
    order = ServerCollation(root_conn)
    weigher = CollationWeigher(lambda: pymysql.connect(host=ep.host, port=ep.port, user=ep.user,
                                                       password=ep.password))
    try:
        for seed in range(FIRST_SEED, FIRST_SEED + 100_000):
            if rounds >= SEEDS and time.monotonic() > deadline:
                break
            rng = random.Random(seed)
            work = Workload(root_conn, fresh_db, rng)
            work.run(rng.randint(20, 80))
            schemas = {t: read_table_schema(root_conn, t) for t in tables}
            splits = _random_splits(TableId(fresh_db, "n"), [rng.randrange(0, 400) for _ in range(rng.randint(0, 6))],
                                    order)
            string_bounds = [rng.choice(STRING_BOUNDS) for _ in range(rng.randint(0, 3))]
            accents = random.Random(f"accents-{seed}")  # its own stream: the seeds' DML stays as it was
            string_bounds += [accents.choice(ACCENTED_BOUNDS) for _ in range(accents.randint(0, 2))]
            splits += _random_splits(TableId(fresh_db, "s"), string_bounds, order)
            rng.shuffle(splits)
            reader = SnapshotSplitReader(
                settings, server_id_range=(30000 + 20 * (seed % 40), 30019 + 20 * (seed % 40)),
                pause_after_low_watermark=lambda _s, w=work, r=rng: w.run(r.randint(0, 6)),
                pause_after_scan=lambda _s, w=work, r=rng: w.run(r.randint(0, 6)),
            )
            sinks: dict[TableId, dict] = {t: {} for t in tables}
            finished = []
            try:
                for split in splits:
                    work.run(rng.randint(0, 5))
                    result = reader.read(split, schemas[split.table_id])
                    for row in _rows(result):
                        sinks[split.table_id][row[tables[split.table_id]]] = row
                    finished.append(FinishedChunk.from_split(split, result.high_watermark))
            finally:
                reader.close()
            work.run(rng.randint(10, 40))
            end = current_offset(root_conn)
            stream = BinlogSplitReader(settings, next_server_id(), schemas.get, DorisValueConverter("UTC"),
                                       is_captured=lambda t: t in tables)
            oracle = ChunkOracle(order, finished)
            committed = None
            assert HybridSplitAssigner.resume_offset(SNAPSHOT_PLAN, finished) == min(c.high_watermark for c in finished)
            pure: set[TableId] = set()
            while True:  # bounded batches, each ending on a transaction boundary, split as production splits them
                split = HybridSplitAssigner.next_split(SNAPSHOT_PLAN, finished, committed=committed, plan_offset=None,
                                                       server_offset=lambda e=end: e)
                if split is None:
                    break
                event_filter = split.event_filter(schemas.get, weigher=weigher)
                batch = stream.read_batch(split.start, split.stop, max_events=rng.randint(5, 200),
                                          event_filter=event_filter)
                for t, key in tables.items():
                    mine = [e for e in batch.events if e.table_id == t]
                    for e in mine:
                        if t not in pure:
                            oracle.check_after_snapshot(e, key)
                        if e.offset > max(c.high_watermark for c in finished if c.table_id == t):
                            pure.add(t)
                    _apply(sinks[t], key, mine)
                committed = batch.end
            assert (committed or HybridSplitAssigner.resume_offset(SNAPSHOT_PLAN, finished)) == end
            whole = SnapshotSplitReader(settings, server_id_range=(31000, 31019))
            try:
                for t, key in tables.items():
                    truth = {row[key]: row for row in _rows(whole.read(SnapshotSplit(t, 0, None, None), schemas[t]))}
                    assert sinks[t] == truth, f"seed {seed}: table {t} differs: {_difference(sinks[t], truth)}"
            finally:
                whole.close()
            rounds += 1
    finally:
        weigher.close()
    print(f"hybrid property: {rounds} rounds (seeds {FIRST_SEED}..{FIRST_SEED + rounds - 1})")
    assert rounds >= SEEDS


# -- where production's batches start and stop (no server needed) ------------------------------


def _off(position: int) -> BinlogOffset:
    return BinlogOffset("binlog.000001", position)


def _chunk(index: int, high: int) -> FinishedChunk:
    return FinishedChunk(TableId("db", "t"), index, None if index == 0 else (index * 10,), None, _off(high))


def _never() -> BinlogOffset:
    raise AssertionError("the server's position is not asked for here")


def test_a_startup_without_snapshot_starts_at_the_plans_offset():
    plan = StartupPlan("latest-offset", snapshot=False, start=_off(500))
    split = HybridSplitAssigner.next_split(plan, [], committed=None, plan_offset=_off(100),
                                           server_offset=lambda: _off(900))
    assert split == BinlogSplit(_off(500), _off(900))
    assert HybridSplitAssigner.next_split(plan, [], committed=None, plan_offset=None,
                                          server_offset=lambda: _off(500)) is None  # nothing new yet


def test_a_snapshot_of_no_tables_starts_at_the_plan_offset():
    split = HybridSplitAssigner.next_split(SNAPSHOT_PLAN, [], committed=None, plan_offset=_off(300),
                                           server_offset=lambda: _off(800))
    assert split is not None and (split.start, split.stop) == (_off(300), _off(800))
    assert HybridSplitAssigner.resume_offset(SNAPSHOT_PLAN, []) is None  # not planned yet


def test_the_committed_offset_wins_once_there_is_one():
    chunks = [_chunk(0, 200), _chunk(1, 150)]
    assert HybridSplitAssigner.resume_offset(SNAPSHOT_PLAN, chunks) == _off(150)  # the minimum high watermark
    split = HybridSplitAssigner.next_split(SNAPSHOT_PLAN, chunks, committed=_off(600), plan_offset=_off(100),
                                           server_offset=lambda: _off(700))
    assert split is not None and split.start == _off(600) and split.finished_chunks == tuple(chunks)
    assert HybridSplitAssigner.next_split(SNAPSHOT_PLAN, chunks, committed=_off(600), plan_offset=None,
                                          server_offset=_never, stop=_off(650)).stop == _off(650)


def test_snapshot_mode_stops_at_the_maximum_high_watermark():
    plan = StartupPlan("snapshot", snapshot=True, start=None, stop_at_max_high_watermark=True)
    chunks = [_chunk(0, 200), _chunk(1, 150), _chunk(2, 400)]
    split = HybridSplitAssigner.next_split(plan, chunks, committed=None, plan_offset=None, server_offset=_never)
    assert split is not None and (split.start, split.stop) == (_off(150), _off(400))
    assert HybridSplitAssigner.next_split(plan, chunks, committed=_off(400), plan_offset=None,
                                          server_offset=_never) is None  # done: the pipeline ends there


if __name__ == "__main__":  # pragma: no cover - run the property longer by hand
    pytest.main([__file__, "-q"])
