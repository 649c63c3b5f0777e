"""Stand-in-only admin endpoints (real Doris has nothing like them): running transactions and restarts.

Both answer on either port (use the BE port while the FE restarts and the FE port while the BE does).

``GET /_standin/txns``::

    {"status": "OK", "max_running_txn_num_per_db": 100,
     "databases": {"d": {"db_id": 10001, "running": 3, "peak_running": 57}},
     "write_lock": {"held_s": 12.345, "holds": 1234}}

``running`` counts the database's transactions begun and not yet VISIBLE or ABORTED (what the FE
checks against ``max_running_txn_num_per_db``); ``peak_running`` is the most it held at once since the
stand-in started or since the last reset. ``write_lock``: the seconds the storage's write lock has
been held for DuckDB transactions since the stand-in started, and how many times (the stand-in's
serial part: every commit, abort and DDL takes it, a load's begin and precommit take the transaction
manager's lock instead; ``bench/standin_estate.py``).
``staged_by``: how many loads' rows were converted by Arrow's kernels (``arrow_kernels``,
devstack/doris/fast_stage.py) and how many by the DuckDB query (``query``). ``group_commits``: how many
DuckDB transactions applied more than one 2PC commit at once, and how many commits they applied
(``TxnManager.commit_2pc``).
``POST /_standin/txns`` with ``{"reset_peak": true}`` starts the peaks afresh, with ``{"max_running_txn_num_per_db": N}`` changes the limit for later begins (as
``ADMIN SET FRONTEND CONFIG`` does on a real FE); both answer as GET does.

``POST /_standin/restart`` with ``{"node": "be" | "fe", "downtime_s": 2.0, "unavailable_s": 0.0}``
restarts that node (:mod:`devstack.doris.restarts`); asked on the other node's port it answers
``{"status": "OK", ...}`` once the node is down (ask the FE port to restart the BE and the BE port to
restart the FE when the caller must know that), asked on the node's own port it answers just before
the node goes down; the node comes back on its own after ``downtime_s`` (+ ``unavailable_s``), or
at once on ``{"node": "be" | "fe", "end": true}`` (it answers once the node is up again, HTTP 409
if it was not restarting; a node that is down answers on neither of its own port's routes, so ask the
other port). ``GET /_standin/restart`` gives each node's state
(``up`` / ``down`` / ``unavailable``) and its restarts so far. A restart of a node that is already
restarting answers HTTP 409.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from .restarts import Node, RestartInProgress

if TYPE_CHECKING:
    from .http_base import BaseHandler


def txn_stats(handler: BaseHandler) -> dict[str, Any]:
    app = handler.server.app
    txns = app.txns
    with app.storage.lock, txns.lock:
        dbs = {db: {"db_id": app.storage.dbs.get(db, -1), "running": len(ids),
                    "peak_running": txns.peak_running.get(db, 0)}
               for db, ids in sorted(txns.running.items())}
        lock = {"held_s": round(app.storage.lock_held_s, 3), "holds": app.storage.lock_holds}
        groups = {"groups": txns.group_commits, "commits": txns.group_committed}
    with app.loader._formats_lock:
        formats = {db: dict(counts) for db, counts in sorted(app.loader.formats.items())}
        staged_by = dict(app.loader.staged_by)
    return {"status": "OK", "max_running_txn_num_per_db": txns.max_running_txn_num_per_db, "databases": dbs,
            "write_lock": lock, "group_commits": groups, "loads_by_format": formats, "staged_by": staged_by}


def _body(handler: BaseHandler) -> dict[str, Any]:
    spec = json.loads(handler._read_body() or b"{}")
    if not isinstance(spec, dict):
        raise ValueError("the body must be a JSON object")
    return spec


def _bad(handler: BaseHandler, msg: str, code: int = 400) -> None:
    handler._send(code, json.dumps({"status": "FAILED", "msg": msg}).encode())


def txns_api(handler: BaseHandler) -> None:
    txns = handler.server.app.txns
    if handler.command == "GET":
        return handler._json(txn_stats(handler))
    if handler.command != "POST":
        return handler._send(405, b"method not allowed", "text/plain")
    try:
        spec = _body(handler)
        unknown = set(spec) - {"reset_peak", "max_running_txn_num_per_db"}
        if unknown:
            raise ValueError(f"unknown fields: {sorted(unknown)}")
        if "max_running_txn_num_per_db" in spec:
            txns.set_limit(spec["max_running_txn_num_per_db"])
    except ValueError as e:
        return _bad(handler, str(e))
    if spec.get("reset_peak"):
        txns.reset_peaks()
    handler._json(txn_stats(handler))


def restart_api(handler: BaseHandler) -> None:
    restarts = handler.server.app.restarts
    if handler.command == "GET":
        return handler._json({"status": "OK", "nodes": restarts.describe()})
    if handler.command != "POST":
        return handler._send(405, b"method not allowed", "text/plain")
    try:
        spec = _body(handler)
        unknown = set(spec) - {"node", "downtime_s", "unavailable_s", "end"}
        if unknown:
            raise ValueError(f"unknown fields: {sorted(unknown)}")
        if spec.get("node") not in ("fe", "be"):
            raise ValueError("node must be 'fe' or 'be'")
        node = Node(spec["node"])
        if spec.get("end"):
            if set(spec) - {"node", "end"}:
                raise ValueError("'end' takes no downtime_s or unavailable_s")
            if not restarts.end(node):
                return _bad(handler, f"the {node.upper()} is not restarting", 409)
            return handler._json({"status": "OK", "node": str(node), "state": str(restarts.state(node))})
        downtime_s = float(spec.get("downtime_s", 2.0))
        unavailable_s = float(spec.get("unavailable_s", 0.0))
        # The reply goes out before the node goes down (a restart of this very port would cut it).
        restarts.check(node, downtime_s, unavailable_s)
    except (ValueError, TypeError) as e:
        return _bad(handler, str(e))
    except RestartInProgress as e:
        return _bad(handler, str(e), 409)
    answer = {"status": "OK", "node": str(node), "downtime_s": downtime_s, "unavailable_s": unavailable_s}
    if handler.server.role != str(node):
        # Asked on the other node's port: the answer comes once the node is down, so a caller (a
        # test's fault point) knows every later request meets the restart.
        with contextlib.suppress(RestartInProgress):  # a concurrent request's restart is under way
            restarts.restart(node, downtime_s, unavailable_s)
        return handler._json(answer)
    # Asked on the restarting node's own port: the reply goes out first (the restart cuts the port).
    handler._json(answer, close=True)
    handler.wfile.flush()
    # Another request may have won the race since the check: its restart is the one under way.
    with contextlib.suppress(RestartInProgress):
        restarts.restart(node, downtime_s, unavailable_s, spare=handler.connection)
