"""When the soak's faults and quiet points happen: a seeded plan on the write clock.

Times are seconds of *writing* (the clock stops while the writer is paused for a quiet point or a
failover), so a 30-minute soak is 30 minutes of writes however long its pauses take. Every kind
of fault happens at least once; a kill -9 of a run several times (one per ~8 minutes); the quiet
points are spread through the soak between the faults, and a last one ends it. Events are at least
``MIN_GAP_S`` of writing apart (an event's action — a restart of ``tidemark dev``, a failover —
takes its own time besides) and none falls in the first or the last ``EDGE`` of the soak.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum


class Event(StrEnum):
    KILL_RUN = "kill -9 of a run"
    DORIS_BE_RESTART = "Doris BE restart"
    DORIS_FE_RESTART = "Doris FE restart"
    MARIADB_RESTART = "MariaDB restart"
    DDL = "DDL"
    PURGE = "binlog purge, healed by resnapshot"
    FAILOVER = "failover to the replica"
    QUIET_POINT = "quiet point"


FAULTS = tuple(e for e in Event if e is not Event.QUIET_POINT)
MIN_GAP_S = 20.0
EDGE = 0.06


@dataclass(frozen=True)
class Planned:
    at_s: float  # seconds of writing since the soak began
    event: Event


def counts(minutes: float) -> dict[Event, int]:
    """How many of each event a soak of ``minutes`` holds (the final quiet point not included)."""
    return {
        Event.KILL_RUN: max(2, round(minutes / 8)),
        Event.DORIS_BE_RESTART: 1, Event.DORIS_FE_RESTART: 1, Event.MARIADB_RESTART: 1,
        Event.DDL: max(1, round(minutes / 15)), Event.PURGE: 1, Event.FAILOVER: 1,
        Event.QUIET_POINT: max(2, round(minutes / 5)),
    }


def plan(minutes: float, seed: int) -> list[Planned]:
    """The soak's events in time order (deterministic for a seed)."""
    rng = random.Random(seed)
    total = minutes * 60.0
    wanted = [e for e, n in counts(minutes).items() for _ in range(n)]
    rng.shuffle(wanted)
    lo, hi = total * EDGE, total * (1 - EDGE)
    gap = min(MIN_GAP_S, (hi - lo) / (len(wanted) + 1))
    # len(wanted) points at least ``gap`` apart: random slack spread over the gaps
    slack = (hi - lo) - gap * (len(wanted) - 1)
    cuts = sorted(rng.uniform(0, slack) for _ in wanted)
    times = [lo + c + i * gap for i, c in enumerate(cuts)]
    return [Planned(round(t, 1), e) for t, e in zip(times, wanted, strict=True)]
