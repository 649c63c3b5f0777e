"""CPython's cyclic garbage collector in a long-lived Tidemark process: what start-up made out of its sight.

A ``tidemark run`` imports Dagster, SQLAlchemy, pyarrow and the rest (~250,000 objects that live as
long as the process), then allocates per table and per chunk. Each collection of the oldest
generation walks every object it holds: 100-150 ms of the driver's CPU each over a 300-table
snapshot, and the per-table allocations start one more of them; young collections, every 700
allocations by default, added ~0.15 CPU-s (docs/performance.md). ``freeze_start_up`` moves what
exists once start-up is over into the collector's permanent generation (``gc.freeze``: it is
never walked again, nor freed, which it would not be anyway) and makes young collections less
frequent — what the Doris stand-in does for its own process (``devstack/doris/app.py``). The
``tidemark`` command makes them less frequent from its first line (``fewer_young_collections``):
at CPython's 700 its imports alone set off three collections of the oldest generation, ~0.2 of
their ~1.2 CPU-s, on the path of every command (docs/performance.md). Nothing
is collected first: a cycle that is garbage at that moment stays allocated, which costs memory
only, once. Reference counting frees everything else as before; cycles made later are collected
as before.
"""

from __future__ import annotations

import gc

GEN0_THRESHOLD = 20_000
"""Allocations (less deallocations) of containers between young collections; CPython's default is 700."""


def fewer_young_collections() -> None:
    """Young collections every :data:`GEN0_THRESHOLD` allocations (or the process's own, if larger)."""
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(GEN0_THRESHOLD, gen0), gen1, gen2)


def freeze_start_up() -> None:
    """Call once start-up (imports, definitions) is over; again later moves what exists then too."""
    gc.freeze()
    fewer_young_collections()
