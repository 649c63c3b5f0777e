"""The guard that stops ``tidemark dev``'s Dagster processes when ``tidemark dev`` itself dies.

``tidemark dev`` starts the webserver and the daemon each in a process group of its own (so that a
stop reaches their code servers too) and stops those groups on Ctrl-C, on SIGTERM and when its
own parent goes away. None of that runs when it is killed outright (``kill -9``, the OOM killer):
the groups would live on as orphans, and the daemon would keep launching runs against a stack that
may be gone. So ``tidemark dev`` also starts this small process, in a session of its own. It
watches its parent: once its parent has changed (``tidemark dev`` is gone, however it died), it
sends SIGTERM to every group it guards, waits, and kills what is left. When the groups end first
(a normal stop), it exits too.

Run as ``python -m orchestration.cli.dev_watchdog PARENT_PID TIMEOUT_S PGID...``; it imports nothing
of Tidemark's so it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

POLL_S = 0.5


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def stop_groups(pgids: list[int], timeout_s: float) -> None:
    """SIGTERM each group, wait up to ``timeout_s`` for them to end, then SIGKILL what is left."""
    for pgid in pgids:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(group_alive(g) for g in pgids):
        time.sleep(0.2)
    for pgid in pgids:
        # Only a group still there: an ended group's number may already belong to someone else.
        if group_alive(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)


def watch(parent: int, timeout_s: float, pgids: list[int]) -> int:
    while os.getppid() == parent:
        if not any(group_alive(g) for g in pgids):
            return 0  # stopped by tidemark dev itself
        time.sleep(POLL_S)
    print(f"tidemark dev (pid {parent}) is gone; stopping its Dagster processes (groups "
          f"{', '.join(map(str, pgids))})", file=sys.stderr, flush=True)
    stop_groups(pgids, timeout_s)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: python -m orchestration.cli.dev_watchdog PARENT_PID TIMEOUT_S PGID...", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is tidemark dev's to handle
    return watch(int(argv[0]), float(argv[1]), [int(g) for g in argv[2:]])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
