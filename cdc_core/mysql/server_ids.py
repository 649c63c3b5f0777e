"""Server ids: every replication client needs one no other client uses at the same time.

The binlog stream takes the first id of the ``server-id`` range. A chunk backfill is a replication
client too: :func:`acquire_server_id` takes one of the others with a MySQL named lock held on the
reader's control connection (``GET_LOCK``), so parallel readers on any number of hosts never
collide.
"""

from __future__ import annotations

import time
from typing import Any

SERVER_ID_LOCK_PREFIX = "tidemark.server-id."


def stream_server_id(source: Any) -> int:
    """The binlog stream's server id: the first of the ``server-id`` range."""
    lo, _hi = source.server_id_range()
    return lo


def acquire_server_id(conn: Any, server_id_range: tuple[int, int], *, reserve_first_for_stream: bool = True,
                      wait_s: float = 0.0) -> int:
    """Take a server id from the range for as long as ``conn`` lives (a ``GET_LOCK`` per id).

    ``wait_s``: how long to keep trying when all ids are taken (a reader that just ended frees its
    id when the server notices its disconnect).
    """
    lo, hi = server_id_range
    first = lo + 1 if reserve_first_for_stream and hi > lo else lo
    deadline = time.monotonic() + wait_s
    while True:
        with conn.cursor() as cur:
            for candidate in range(first, hi + 1):
                cur.execute("SELECT GET_LOCK(%s, 0)", (f"{SERVER_ID_LOCK_PREFIX}{candidate}",))
                (got,) = cur.fetchone()
                if got is not None and int(got) == 1:
                    return candidate
        if time.monotonic() >= deadline:
            break
        time.sleep(0.1)
    raise RuntimeError(
        f"every server id in the 'server-id' range {lo}-{hi} is in use by another Tidemark reader; "
        f"widen the range in the source block (e.g. '{lo}-{lo + 64}') to at least the snapshot "
        f"parallelism + 1 (the first id is the binlog stream's)"
    )
