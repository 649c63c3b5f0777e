"""``dagster-daemon`` for ``tidemark dev``, with a backfill daemon that wakes every few seconds.

Dagster's backfill daemon sleeps 30 s between iterations, a constant of Dagster's own
(``dagster._daemon.controller.DEFAULT_DAEMON_INTERVAL_SECONDS``, read by the backfill loop at
each iteration; no instance setting changes it). A snapshot backfill launched from the UI so waited up to 30 s before its
first run was created, and up to 30 s more after its last run before it showed as completed: on
a 5M-row snapshot whose run takes ~22 s, more than the run itself (``bench/snapshot_e2e.py``).

``tidemark dev`` runs this module instead of the ``dagster-daemon`` script: it sets that
interval to :data:`BACKFILL_INTERVAL_S` (or ``$TIDEMARK_BACKFILL_INTERVAL_S``) and then runs
Dagster's daemon CLI unchanged. Each iteration of the backfill daemon reads the instance's
backfills (a few SQLite queries when there are none), so a short interval costs little on one
machine. A Dagster whose backfill loop no longer reads that constant gets a warning and its own
interval (``tests/orchestration/test_dagster_daemon.py`` fails first). A deployment that runs
``dagster-daemon`` itself keeps Dagster's 30 s.
"""

from __future__ import annotations

import inspect
import logging
import os
import sys

logger = logging.getLogger(__name__)

BACKFILL_INTERVAL_S = 2.0
INTERVAL_ENV = "TIDEMARK_BACKFILL_INTERVAL_S"


def backfill_loop_reads_the_interval() -> bool:
    """Whether Dagster's backfill loop still takes its sleep from the controller's constant."""
    from dagster._daemon import backfill, controller

    loop = getattr(backfill, "execute_backfill_iteration_loop", None)
    return (hasattr(controller, "DEFAULT_DAEMON_INTERVAL_SECONDS") and loop is not None
            and "DEFAULT_DAEMON_INTERVAL_SECONDS" in inspect.getsource(loop))


def shorten_backfill_interval(seconds: float) -> bool:
    """Make the backfill daemon wake every ``seconds``; False (and a warning) if Dagster changed."""
    from dagster._daemon import controller

    if not backfill_loop_reads_the_interval():
        logger.warning("this Dagster's backfill daemon no longer reads DEFAULT_DAEMON_INTERVAL_SECONDS; "
                       "backfills start at Dagster's own interval")
        return False
    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = seconds
    return True


def main() -> int:
    from dagster._daemon.cli import main as dagster_daemon_main

    raw = os.environ.get(INTERVAL_ENV, "")
    try:
        seconds = float(raw) if raw else BACKFILL_INTERVAL_S
    except ValueError:
        print(f"{INTERVAL_ENV}={raw!r} is not a number of seconds; using {BACKFILL_INTERVAL_S}", file=sys.stderr)
        seconds = BACKFILL_INTERVAL_S
    shorten_backfill_interval(max(0.5, seconds))
    sys.argv[0] = "dagster-daemon"
    return dagster_daemon_main()


if __name__ == "__main__":
    sys.exit(main())
