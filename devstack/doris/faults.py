"""Fault injection for reliability tests (a stand-in-only admin API; real Doris has nothing like it).

``POST /_standin/faults`` (either port) with a JSON object, or a list of them::

    {"target": "load" | "commit" | "abort" | "query",
     "mode":   "fail" | "delay" | "http_500" | "drop_connection" | "be_down" | "publish_timeout"
               | "be_restart",
     "count":  1,            # how many matching requests it hits; -1 = until cleared (default 1)
     "delay_s": 1.0,         # for "delay" (default 1.0), "publish_timeout" (visible after; default 1.0)
                             # and "be_restart" (the BE's downtime)
     "when":   "before",     # "before" (operation not performed) | "after" (performed, then the reply fails)
     "db": "d", "table": "t", "label_prefix": "tm_"}   # optional filters

Answer: ``{"status": "OK", "fault": {...with "id"...}}``. ``GET /_standin/faults`` lists active faults,
``DELETE /_standin/faults`` clears them all (``DELETE /_standin/faults/<id>`` one).

Modes:

* ``fail`` — a Doris-shaped failure: loads reply ``Status: "Fail"`` with ``Message:
  "[INTERNAL_ERROR]injected fault"`` (their transaction is aborted, so the label is free again);
  2PC replies ``{"status": "INTERNAL_ERROR", "msg": "injected fault"}``; queries ``code: 1``.
  With ``when: after`` the operation is performed first (e.g. the commit is applied) and the failure
  reply is sent anyway — the "did my commit happen?" case.
* ``delay`` — sleep ``delay_s`` then proceed normally (``when`` chooses before/after the operation). A
  ``before`` delay on a load happens after its transaction began, i.e. a slow load whose label is
  held in PREPARE (``Label Already Exists`` / ``ExistingJobStatus: RUNNING`` for a concurrent retry).
* ``http_500`` — reply HTTP 500 ``Internal Server Error`` with a non-JSON body.
* ``drop_connection`` — close the TCP connection without any reply (RST).
* ``be_down`` — the BE is unreachable: requests of that target reaching the BE port are reset
  without a reply, the FE answers stream loads with ``{"status":"FAILED","msg":"No backend alive."}``
  (HTTP 200) instead of a redirect, ``/api/backends`` reports ``is_alive: false`` and ``/api/health``
  ``online_backend_num: 0`` while such a fault is active (it is consumed per refused request).
* ``be_restart`` (target ``load``) — the BE restarts under the load (``devstack/doris/restarts.py``):
  once the load's transaction has begun (PREPARE), the BE goes down for ``delay_s`` seconds, which
  resets the load's connection (no reply) and every other one the BE serves, and aborts the PREPARE
  transactions of the loads in flight (reason ``coordinate BE restart``); PRECOMMITTED ones survive.
  A BE restart at exactly the moment a load is streaming, as a test cannot time it from outside.
* ``publish_timeout`` (target ``load``, non-2PC) — the load commits but reports ``Status: "Publish
  Timeout"`` and its rows become visible ``delay_s`` later (``get_load_state`` says COMMITTED meanwhile).
"""

from __future__ import annotations

import itertools
import threading
from dataclasses import asdict, dataclass
from typing import Any

TARGETS = {"load", "commit", "abort", "query"}
MODES = {"fail", "delay", "http_500", "drop_connection", "be_down", "publish_timeout", "be_restart"}


@dataclass
class Fault:
    id: int
    target: str
    mode: str
    count: int = 1
    delay_s: float = 1.0
    when: str = "before"
    db: str | None = None
    table: str | None = None
    label_prefix: str | None = None

    def matches(self, target: str, db: str | None, table: str | None, label: str | None) -> bool:
        if self.target != target:
            return False
        if self.db is not None and self.db != db:
            return False
        if self.table is not None and self.table != table:
            return False
        return not (self.label_prefix is not None and not (label or "").startswith(self.label_prefix))


class FaultRegistry:
    """Thread-safe set of active faults; :meth:`take` consumes one hit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._ids = itertools.count(1)

    def add(self, spec: dict[str, Any]) -> Fault:
        target = spec.get("target")
        mode = spec.get("mode")
        if target not in TARGETS:
            raise ValueError(f"target must be one of {sorted(TARGETS)}")
        if mode not in MODES:
            raise ValueError(f"mode must be one of {sorted(MODES)}")
        if mode in ("publish_timeout", "be_restart") and target != "load":
            raise ValueError(f"{mode} applies to target 'load' only")
        when = spec.get("when", "before")
        if when not in ("before", "after"):
            raise ValueError("when must be 'before' or 'after'")
        count = int(spec.get("count", 1) if spec.get("count") is not None else 1)
        if count == 0 or count < -1:
            raise ValueError("count must be a positive number or -1")
        unknown = set(spec) - {"target", "mode", "count", "delay_s", "when", "db", "table", "label_prefix"}
        if unknown:
            raise ValueError(f"unknown fields: {sorted(unknown)}")
        f = Fault(id=next(self._ids), target=target, mode=mode, count=count,
                  delay_s=float(spec.get("delay_s", 1.0)), when=when, db=spec.get("db"),
                  table=spec.get("table"), label_prefix=spec.get("label_prefix"))
        with self._lock:
            self._faults.append(f)
        return f

    def take(self, target: str, db: str | None = None, table: str | None = None,
             label: str | None = None, modes: set[str] | None = None) -> Fault | None:
        with self._lock:
            for f in self._faults:
                if f.matches(target, db, table, label) and (modes is None or f.mode in modes):
                    if f.count > 0:
                        f.count -= 1
                        if f.count == 0:
                            self._faults.remove(f)
                    return f
        return None

    def be_down(self) -> bool:
        with self._lock:
            return any(f.mode == "be_down" for f in self._faults)

    def clear(self, fault_id: int | None = None) -> int:
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if fault_id is not None and f.id != fault_id]
            return before - len(self._faults)

    def list(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(f) for f in self._faults]
