"""Restarts of the stand-in's BE or FE while it keeps running, as a Doris node restart looks to a client.

The stand-in is one process with two listeners; a "restart" closes one listener for ``downtime_s``
(connections are refused), resets the connections it was serving, and reopens it on the same port.
What survives and what does not follows Doris:

* **BE restart** — the loads it was running die: their connections are reset and the FE aborts
  their PREPARE transactions (reason ``coordinate BE restart``, FE
  ``abortTxnWhenCoordinateBeRestart``). PRECOMMITTED transactions keep their staged data (a BE keeps
  its rowsets on disk) and can still be committed or aborted afterwards. While the BE is down the
  FE reports it dead (``/api/health`` ``online_backend_num: 0``, ``/api/backends`` ``is_alive:
  false``) and answers loads and 2PC requests with ``{"status":"FAILED","msg":"No backend alive."}``.
* **FE restart** — the FE port refuses connections for ``downtime_s``, then (with
  ``unavailable_s``) answers every request with HTTP 503 for that long, as an FE still replaying its
  journal behind a proxy does. Transaction state is the FE's persisted journal (every change is
  already written to the storage), so PREPARE and PRECOMMITTED transactions are all still there when
  it returns. Meanwhile the BE cannot reach the FE: a new load, a load that reaches its precommit or
  commit, and a 2PC commit/abort fail with the BE's thrift error (``Couldn't open transport for
  HOST:9020 ...``); the transaction of a load that had begun stays PREPARE (the BE's rollback cannot
  reach the FE either) until its label is aborted or the stand-in process restarts.

Control: ``POST /_standin/restart`` (either port, :mod:`devstack.doris.admin`) or
:meth:`devstack.doris.app.StandIn.restart`; a restart ends on its own after its ``downtime_s`` (and
``unavailable_s``), or at once on ``{"node": ..., "end": true}`` (:meth:`Restarts.end`).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import StandIn

log = logging.getLogger(__name__)

FE_RPC_PORT = 9020  # Doris FE rpc_port (thrift): where a BE's begin/commit RPCs go


class Node(StrEnum):
    FE = "fe"
    BE = "be"


class NodeState(StrEnum):
    UP = "up"
    DOWN = "down"  # listener closed: connections refused
    UNAVAILABLE = "unavailable"  # FE only: listening, every request answered 503


class RestartInProgress(Exception):
    """A restart of the same node is already under way."""


@dataclass(frozen=True)
class RestartRecord:
    """One restart, as ``GET /_standin/restart`` lists it."""

    node: Node
    downtime_s: float
    unavailable_s: float
    started_ms: int
    aborted_txns: tuple[int, ...] = ()
    finished_ms: int | None = None


@dataclass
class _Tracking:
    state: NodeState = NodeState.UP
    history: list[RestartRecord] = field(default_factory=list)
    # Set by :meth:`Restarts.end`: the restart under way ends now (what is left of its downtime and
    # of its unavailable time is skipped).
    ended: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None


class Restarts:
    """The two nodes' states and the restarts under way; thread-safe."""

    def __init__(self, app: StandIn) -> None:
        self.app = app
        self._lock = threading.Lock()
        self._nodes = {Node.FE: _Tracking(), Node.BE: _Tracking()}
        self._closed = False
        self._threads: list[threading.Thread] = []

    # ---- state the routes consult ---------------------------------------------------------------
    def state(self, node: Node) -> NodeState:
        return self._nodes[node].state

    def be_down(self) -> bool:
        return self._nodes[Node.BE].state is not NodeState.UP

    def fe_unavailable(self) -> bool:
        """The FE listens again but is not ready: its requests are answered 503."""
        return self._nodes[Node.FE].state is NodeState.UNAVAILABLE

    def fe_unreachable_message(self) -> str:
        """The BE's thrift client error when the FE is not up (``ThriftClientImpl::open``)."""
        return (f"Couldn't open transport for {self.app.host}:{FE_RPC_PORT} "
                f"(connect() failed: Connection refused)")

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {str(n): {"state": str(t.state), "restarts": [_record_json(r) for r in t.history]}
                    for n, t in self._nodes.items()}

    # ---- control --------------------------------------------------------------------------------
    def check(self, node: Node, downtime_s: float, unavailable_s: float = 0.0) -> None:
        """Raise ValueError / :class:`RestartInProgress` if :meth:`restart` would refuse these."""
        if downtime_s < 0 or unavailable_s < 0:
            raise ValueError("downtime_s and unavailable_s must not be negative")
        if node is Node.BE and unavailable_s:
            raise ValueError("unavailable_s applies to the FE only (a restarted BE answers at once)")
        with self._lock:
            if self._closed:
                raise RestartInProgress("the stand-in is shutting down")
            if self._nodes[node].state is not NodeState.UP:
                raise RestartInProgress(f"the {node.upper()} is already restarting")

    def restart(self, node: Node, downtime_s: float, unavailable_s: float = 0.0, *, wait: bool = False,
                spare: Any = None) -> None:
        """Restart ``node``: down for ``downtime_s`` (refusing connections), then, FE only, answering
        503 for ``unavailable_s``. Returns at once (the restart runs in a thread) unless ``wait``;
        once it returns the node is already down. ``spare``: a connection not to reset (the one
        that asked for the restart and has its answer on the way)."""
        self.check(node, downtime_s, unavailable_s)
        with self._lock:
            tracking = self._nodes[node]
            if tracking.state is not NodeState.UP:
                raise RestartInProgress(f"the {node.upper()} is already restarting")
            tracking.state = NodeState.DOWN
            tracking.ended.clear()
        aborted = self._go_down(node, spare)
        record = RestartRecord(node, downtime_s, unavailable_s, int(time.time() * 1000), tuple(aborted))
        with self._lock:
            tracking.history.append(record)
        log.info("%s restart: down for %.1f s (+%.1f s unavailable); aborted in-flight txns %s",
                 node.upper(), downtime_s, unavailable_s, aborted)
        t = threading.Thread(target=self._come_back, args=(node, record), name=f"restart-{node}", daemon=True)
        tracking.thread = t
        t.start()
        self._threads.append(t)
        if wait:
            t.join()

    def end(self, node: Node, timeout_s: float = 30.0) -> bool:
        """End ``node``'s restart now, as a node that finished starting: it listens and answers
        again when this returns. False when it was not restarting. (A test holds a node down "until
        told" with a long ``downtime_s`` and ends it once the run under test has failed.)"""
        with self._lock:
            tracking = self._nodes[node]
            if tracking.state is NodeState.UP or tracking.thread is None:
                return False
            tracking.ended.set()
            thread = tracking.thread
        thread.join(timeout_s)
        return True

    def wait(self, timeout_s: float | None = None) -> None:
        """Until every restart started so far has finished."""
        for t in list(self._threads):
            t.join(timeout_s)

    def close(self) -> None:
        """The process is stopping: no listener is reopened after this."""
        with self._lock:
            self._closed = True

    # ---- the steps ------------------------------------------------------------------------------
    def _go_down(self, node: Node, spare: Any) -> list[int]:
        srv = self.app.server_of(node)
        srv.shutdown()  # no new connections are accepted
        srv.server_close()
        srv.reset_connections(spare)  # requests in flight see a reset, as when the process dies
        if node is Node.BE:
            return self.app.txns.abort_in_flight()
        self.app.txns.set_fe_unreachable(self.fe_unreachable_message())
        return []

    def _come_back(self, node: Node, record: RestartRecord) -> None:
        tracking = self._nodes[node]
        tracking.ended.wait(record.downtime_s)
        with self._lock:
            if self._closed:
                return
            self.app.reopen(node)
            unavailable = record.unavailable_s > 0 and not tracking.ended.is_set()
            tracking.state = NodeState.UNAVAILABLE if unavailable else NodeState.UP
        if node is Node.FE and unavailable:
            tracking.ended.wait(record.unavailable_s)
            with self._lock:
                tracking.state = NodeState.UP
        if node is Node.FE:
            self.app.txns.set_fe_unreachable(None)
        with self._lock:
            i = tracking.history.index(record)
            tracking.history[i] = RestartRecord(**{**asdict(record), "finished_ms": int(time.time() * 1000)})
        log.info("%s is back", node.upper())


def _record_json(r: RestartRecord) -> dict[str, Any]:
    d = asdict(r)
    d["node"] = str(r.node)
    d["aborted_txns"] = list(r.aborted_txns)
    return d
