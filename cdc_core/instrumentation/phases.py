"""Wall time per phase of the work this process did (planning, Spark start, read + load, commits,
parity...), for ``tidemark run --once --timings`` and the end-to-end benchmark.

A process-wide tally, not a metrics system: the phases of ``tidemark run`` all run in its own
process (Dagster's in-process execution), so summing their durations here is enough to say where
the user's wait went. Nested phases are counted in each (the caller decides what it sums).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_totals: dict[str, float] = {}


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Add the block's wall time to ``name``'s total (also when it raises)."""
    started = time.perf_counter()
    try:
        yield
    finally:
        elapsed = time.perf_counter() - started
        with _lock:
            _totals[name] = _totals.get(name, 0.0) + elapsed


def totals() -> dict[str, float]:
    """Seconds per phase so far, rounded to milliseconds."""
    with _lock:
        return {k: round(v, 3) for k, v in _totals.items()}


def reset() -> None:
    with _lock:
        _totals.clear()
