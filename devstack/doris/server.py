"""HTTP front: one handler class for both ports, routing to the FE's or the BE's endpoints by role.

The stand-in's admin APIs (``/_standin/faults``; ``/_standin/txns`` and ``/_standin/restart`` in
:mod:`devstack.doris.admin`) answer on either port, also while the FE is unavailable after a restart.
"""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from . import admin
from .be_routes import BackendRoutes
from .fe_routes import FrontendRoutes
from .http_base import DropConnection, PortServer, Replied

if TYPE_CHECKING:
    from .app import StandIn


class Handler(FrontendRoutes, BackendRoutes):
    """Both ports' handler; the server's role (``fe`` or ``be``) picks the routes."""

    # ---- dispatch -----------------------------------------------------------------------------
    def _route(self) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        path = parsed.path.rstrip("/") or "/"
        query = dict(urllib.parse.parse_qsl(parsed.query))
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        try:
            if parts[:2] == ["_standin", "faults"]:
                return self._faults_api(parts)
            if parts[:2] == ["_standin", "txns"]:
                return admin.txns_api(self)
            if parts[:2] == ["_standin", "restart"]:
                return admin.restart_api(self)
            if self.server.role == "fe" and self.server.app.restarts.fe_unavailable():
                self._send(503, b"Service Unavailable: the FE is starting (Doris stand-in FE restart)\n",
                           "text/plain", close=True)
                return self._linger_close()
            if self.server.role == "fe":
                return self._fe_route(parts, query, parsed.query)
            return self._be_route(parts, query)
        except DropConnection:
            self._reset()
        except Replied:
            pass

    def do_GET(self) -> None:  # noqa: N802
        self._route()

    def do_PUT(self) -> None:  # noqa: N802
        self._route()

    def do_POST(self) -> None:  # noqa: N802
        self._route()

    def do_DELETE(self) -> None:  # noqa: N802
        self._route()

    def do_HEAD(self) -> None:  # noqa: N802
        self._route()

    # ---- fault API ----------------------------------------------------------------------------
    def _faults_api(self, parts: list[str]) -> None:
        reg = self.server.app.faults
        if self.command == "GET":
            return self._json({"status": "OK", "faults": reg.list()})
        if self.command == "DELETE":
            fid = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
            return self._json({"status": "OK", "cleared": reg.clear(fid)})
        if self.command == "POST":
            try:
                spec = json.loads(self._read_body() or b"{}")
                specs = spec if isinstance(spec, list) else [spec]
                added = [reg.add(s) for s in specs]
            except (ValueError, TypeError, AttributeError) as e:
                return self._send(400, json.dumps({"status": "FAILED", "msg": str(e)}).encode())
            body: dict[str, Any] = {"status": "OK", "faults": [asdict(f) for f in added]}
            if len(added) == 1:
                body["fault"] = body["faults"][0]
            return self._json(body)
        self._send(405, b"method not allowed", "text/plain")


def make_server(app: StandIn, role: str) -> PortServer:
    """The FE's (``role`` ``fe``) or the BE's listener."""
    port = app.fe_port if role == "fe" else app.be_port
    return PortServer((app.host, port), Handler, app, role)
