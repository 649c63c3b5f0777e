"""The soak's plan and write mix, without a server (the soak itself is ``test_soak.py``, slow)."""

from __future__ import annotations

import random

from tests.soak import schedule
from tests.soak.schedule import Event
from tests.soak.workload import (
    CHURN_KEYS,
    FIRST_POOL_KEY,
    HOT_KEYS,
    HOT_REPEATS,
    KEY_SPACE,
    TABLES,
    TICKS_PER_S,
    KeySets,
    apply_plan,
    initial_rows,
    plan_tick,
)


def test_thirty_minutes_hold_every_fault_kill_several_times_and_quiet_points_between():
    plan = schedule.plan(30, seed=7)
    kinds = [p.event for p in plan]
    assert set(schedule.FAULTS) <= set(kinds)
    assert kinds.count(Event.KILL_RUN) >= 3 and kinds.count(Event.FAILOVER) == 1
    assert kinds.count(Event.QUIET_POINT) == 6
    times = [p.at_s for p in plan]
    assert times == sorted(times) and times[0] >= 30 * 60 * schedule.EDGE and times[-1] <= 30 * 60 * (1 - schedule.EDGE)
    assert min(b - a for a, b in zip(times, times[1:], strict=False)) >= schedule.MIN_GAP_S - 0.1
    assert schedule.plan(30, seed=7) == plan and schedule.plan(30, seed=8) != plan


def test_a_short_soak_still_holds_every_kind():
    kinds = {p.event for p in schedule.plan(3, seed=1)}
    assert kinds == set(Event)


def _keys() -> KeySets:
    return KeySets({t: {r[0] for r in initial_rows(i) if r[0] >= FIRST_POOL_KEY} for i, t in enumerate(TABLES)})


def test_the_mix_writes_the_rate_in_thirds_keeps_table_sizes_and_hits_hot_keys_many_times_a_second():
    keys, rng = _keys(), random.Random(3)
    sizes = {t: len(k) for t, k in keys.present.items()}
    rows = hot = 0
    for tick in range(TICKS_PER_S * 5):  # five seconds
        plan = plan_tick(tick, rng, keys, 2000)
        rows += plan.rows
        for op in plan.ops:
            held = keys.present[op.table]
            assert set(op.inserts).isdisjoint(held) and set(op.updates) <= held and set(op.deletes) <= held
            assert set(op.updates).isdisjoint(op.deletes)
            assert all(FIRST_POOL_KEY <= k <= KEY_SPACE for k in (*op.inserts, *op.updates, *op.deletes))
            if op.inserts:
                assert abs(len(op.inserts) - len(op.deletes)) <= 1 and abs(len(op.updates) - len(op.deletes)) <= 1
            hot += op.hot_repeats
            assert op.churn is None or op.churn in CHURN_KEYS
        apply_plan(keys, plan)
    assert abs(rows / 5 - 2000) <= 2000 * 0.02
    assert hot / 5 == HOT_REPEATS * TICKS_PER_S  # each hot key updated 30 times a second
    assert len(HOT_KEYS) == 5
    assert {t: len(k) for t, k in keys.present.items()} == sizes
