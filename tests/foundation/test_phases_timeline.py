"""``tidemark run --timings``'s timeline (``cdc_core/instrumentation/phases.py``): phases and spans
placed in seconds since the process started, with their thread, in order of their start; a span
adds no total."""

from __future__ import annotations

import threading
import time

from cdc_core.instrumentation import phases


def test_phases_and_spans_are_placed_in_order_since_the_process_started():
    phases.reset()
    with phases.span("imports"):
        time.sleep(0.02)  # past the 10 ms asserted below by more than the timeline's millisecond rounding
    with phases.phase("read_load"):
        worker = threading.Thread(target=lambda: phases.mark("worker_mark"), name="tidemark-test-worker")
        worker.start()
        worker.join()
    mine = ("imports", "read_load", "worker_mark")  # (another test's leftover thread may add its own)
    timeline = [s for s in phases.timeline() if s["name"] in mine]
    assert [s["name"] for s in timeline] == list(mine)
    imports, read_load, mark = timeline
    assert 0 < imports["start"] < imports["end"] <= read_load["start"] <= mark["start"] <= read_load["end"]
    assert imports["end"] - imports["start"] >= 0.01
    assert imports["thread"] == threading.current_thread().name
    assert mark["thread"] == "tidemark-test-worker" and mark["start"] == mark["end"]
    assert "read_load" in phases.totals()
    assert "imports" not in phases.totals() and "worker_mark" not in phases.totals()  # a span or a mark has no total
    phases.reset()
    assert not [s for s in phases.timeline() if s["name"] in mine] and "read_load" not in phases.totals()
