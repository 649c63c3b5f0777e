"""Wall time per phase of the work this process did (planning, Spark start, read + load, commits,
parity...), for ``tidemark run --once --timings`` and the end-to-end benchmark.

A process-wide tally, not a metrics system: the phases of ``tidemark run`` all run in its own
process (Dagster's in-process execution), so summing their durations here is enough to say where
the user's wait went. Nested phases are counted in each (the caller decides what it sums).

Beside the totals, every phase and every ``span`` (a stretch worth placing in time but not worth a
total of its own: the imports, a Dagster run) is kept as an interval in seconds since the process
was started by the kernel, with the thread that ran it: ``timeline()`` is then where the seconds of
one run went, in order, including the interpreter's start and the imports before any phase began
(docs/performance.md reads its 1M- and 5M-row runs from it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from cdc_core.instrumentation.proc_stat import START_TICKS, stat_fields

_lock = threading.Lock()
_totals: dict[str, float] = {}
_spans: list[tuple[str, float, float, str]] = []
MAX_SPANS = 10_000  # a long `tidemark run` without --once keeps its memory flat


def _process_start_perf() -> float:
    """This process's start on the ``perf_counter`` clock (the kernel's record of it, so the
    interpreter's own start and the imports before this module count too); now when unknown."""
    now = time.perf_counter()
    fields = stat_fields(os.getpid())
    if fields is None:
        return now
    try:
        started = int(fields[START_TICKS]) / os.sysconf("SC_CLK_TCK")
        return now - (time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return now


_origin = _process_start_perf()


def _record(name: str, started: float, ended: float) -> None:
    with _lock:
        if len(_spans) < MAX_SPANS:
            _spans.append((name, started - _origin, ended - _origin, threading.current_thread().name))


@contextmanager
def _timed(name: str, *, total: bool) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        ended = time.perf_counter()
        if total:
            with _lock:
                _totals[name] = _totals.get(name, 0.0) + ended - started
        _record(name, started, ended)


def phase(name: str) -> AbstractContextManager[None]:
    """Add the block's wall time to ``name``'s total (also when it raises), and place it in the timeline."""
    return _timed(name, total=True)


def span(name: str) -> AbstractContextManager[None]:
    """Place the block in the timeline only (no total)."""
    return _timed(name, total=False)


def mark(name: str) -> None:
    """A moment in the timeline (a zero-length span)."""
    now = time.perf_counter()
    _record(name, now, now)


def totals() -> dict[str, float]:
    """Seconds per phase so far, rounded to milliseconds."""
    with _lock:
        return {k: round(v, 3) for k, v in _totals.items()}


def timeline() -> list[dict[str, object]]:
    """Every phase and span so far, by start: name, start and end in seconds since the process
    started (rounded to milliseconds), and the thread's name."""
    with _lock:
        spans = sorted(_spans, key=lambda s: (s[1], s[2]))
    return [{"name": n, "start": round(a, 3), "end": round(b, 3), "thread": t} for n, a, b, t in spans]


def reset() -> None:
    with _lock:
        _totals.clear()
        _spans.clear()
