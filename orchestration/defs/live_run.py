"""What ``tidemark run`` (the continuous form) shares with the binlog asset it executes in-process.

``tidemark run PIPELINE.yaml`` executes the same Dagster jobs as the sensor, in its own process
(``orchestration/cli/run_loop.py``). Two things cross from the command into a running asset, and
nothing else does:

* a stop request (Ctrl-C or SIGTERM): the binlog asset's stream loop finishes the batch it is
  reading, ends the run with it (the commit hook commits it, as for any run's last batch) and
  starts no other; a caught-up stream waiting for more binlog stops waiting;
* progress: each batch the loop commits is reported to the listeners, so the command's live line
  counts rows while a long run (``tidemark.binlog.run-seconds``) is still going.

In a code server (``tidemark dev``) nobody requests a stop and nobody listens: the asset behaves
as before. Process-local state is the point here: the command and the asset share one process.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from cdc_core.pipeline.results import BatchResult

logger = logging.getLogger(__name__)

_stop = threading.Event()
_listeners: list[Callable[[BatchResult], None]] = []


def request_stop() -> None:
    """Ask the running binlog stream to end with the batch in flight (signal-handler safe)."""
    _stop.set()


def stop_requested() -> bool:
    return _stop.is_set()


def wait_unless_stopped(seconds: float) -> bool:
    """Sleep up to ``seconds``; True when a stop was requested meanwhile (the sleep ends at once)."""
    return _stop.wait(max(0.0, seconds))


def reset() -> None:
    """Forget an earlier stop request and every listener (a new command, or a test)."""
    _stop.clear()
    _listeners.clear()


def add_listener(listener: Callable[[BatchResult], None]) -> None:
    _listeners.append(listener)


def batch_committed(batch: BatchResult) -> None:
    """Tell the listeners about a batch the stream loop committed (a listener's error is logged, never
    raised into the stream)."""
    for listener in list(_listeners):
        try:
            listener(batch)
        except Exception:  # noqa: BLE001 - progress display must never fail a batch
            logger.exception("a live-run listener failed")
