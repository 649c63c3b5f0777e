"""What the local workers' fork server does once, before its first fork (``jobs/local_workers.py``).

Every worker is a fork of that server, so each starts with this done rather than doing it at its
first chunk, on the path of the run's first loads:

* the chunk path's modules (:mod:`jobs.fused_chunks`: the MySQL reader, the Doris sink, Arrow);
* pandas, which pyarrow imports on a chunk's first ``pa.array`` of Python values (to ask whether
  they are pandas objects): 0.6 s a worker otherwise, in the middle of its first chunk;
* the MySQL client's TLS context for the default ``ssl-mode: preferred``
  (:func:`cdc_core.mysql.connection.preferred_tls_context`): loading the system's CA bundle,
  0.14–0.16 s of each worker's CPU at its first connection otherwise (a 300-table run's profile,
  docs/performance.md). A pipeline with another mode builds its own context, as before.

The fork server has no thread and builds nothing that holds one, so its forks are safe.
"""

from __future__ import annotations

import logging

import pandas  # noqa: F401 - see the module doc

import jobs.fused_chunks  # noqa: F401 - see the module doc
from cdc_core.mysql.connection import preferred_tls_context

logger = logging.getLogger(__name__)

try:
    preferred_tls_context()
except Exception:  # noqa: BLE001 - an exception here would end the fork server; the workers try at their first connection
    logger.warning("could not build the MySQL TLS context ahead; each worker builds it at its first connection",
                   exc_info=True)
