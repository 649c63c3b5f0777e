"""The HTTP plumbing both ports share: the server, request bodies, replies, auth, fault replies.

Both ports are plain ``ThreadingHTTPServer``s (HTTP/1.1, one thread per connection). FE replies use
the httpv2 envelope ``{"msg","code","data","count"}`` at HTTP 200 even for errors, BE replies the
stream-load / 2PC JSON at HTTP 200 — that is what Doris does and what clients key on.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from .faults import Fault
from .query import dumps

if TYPE_CHECKING:
    from .app import StandIn


class DropConnection(Exception):
    """Abort the request by resetting the TCP connection (fault injection)."""


class Replied(Exception):
    """A fault already sent the reply."""


class PortServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], handler: type, app: StandIn, role: str) -> None:
        self.app = app
        self.role = role
        # Connections being served, so that a node restart can reset them (devstack/doris/restarts.py).
        self._active: set[Any] = set()
        self._active_lock = threading.Lock()
        super().__init__(addr, handler)
        if app.ssl_context is not None:
            # The handshake runs in the connection's thread (finish_request), not in accept().
            self.socket = app.ssl_context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            try:
                request.settimeout(30)
                request.do_handshake()
                request.settimeout(None)
            except (ssl.SSLError, OSError):
                return  # the client refused our certificate (or went away): nothing to answer
        super().finish_request(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._active_lock:
            self._active.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._active_lock:
            self._active.discard(request)
        super().shutdown_request(request)

    def reset_connections(self, spare: Any = None) -> int:
        """Reset every connection being served but ``spare`` (no reply): the node died under them."""
        with self._active_lock:
            conns = [c for c in self._active if c is not spare]
        for sock in conns:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                # socket.socket's own shutdown: SSLSocket.shutdown would drop the TLS state that the
                # connection's thread is still using.
                socket.socket.shutdown(sock, socket.SHUT_RDWR)
        return len(conns)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A connection reset by the client or by a node restart is not the server's error.
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class BaseHandler(BaseHTTPRequestHandler):
    """Request plumbing; :mod:`fe_routes` and :mod:`be_routes` add the two ports' endpoints."""

    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle on, the body waits for the client's
    # delayed ACK of the headers (~40 ms on Linux) — on every reply, as a real BE never does.
    disable_nagle_algorithm = True
    server: PortServer
    server_version = "Doris-StandIn"

    # ---- low level ----------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        if self.server.app.verbose:
            super().log_message(format, *args)

    def handle_expect_100(self) -> bool:
        # FE answers 307 before the body is sent; only the BE asks for the body.
        if self.server.role == "be":
            return super().handle_expect_100()
        return True

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                line = self.rfile.readline(65537)
                size = int(line.split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                parts.append(self.rfile.read(size))
                self.rfile.readline(3)
            return b"".join(parts)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    def _send(self, code: int, body: bytes, ctype: str = "application/json", extra: dict[str, str] | None = None,
              close: bool = False) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        if self.command != "HEAD":
            # The body goes out with the headers, one send: two would cost a system call more, and
            # the thread gives up and retakes the GIL around each.
            self._headers_buffer.extend((b"\r\n", body))
            self.flush_headers()
        else:
            self.end_headers()

    def _json(self, obj: Any, pretty: bool = False, close: bool = False) -> None:
        text = json.dumps(obj, indent=4) + "\n" if pretty else dumps(obj)
        self._send(200, text.encode(), close=close)

    def _fe(self, data: Any = None, code: int = 0, msg: str = "success") -> None:
        self._json({"msg": msg, "code": code, "data": data, "count": 0})

    def _fe_error(self, data: str) -> None:
        self._fe(data, code=1, msg="Error")

    def _linger_close(self) -> None:
        """Discard an unread request body so the client can read our early reply, then close."""
        self.wfile.flush()
        self.close_connection = True
        sock = self.connection
        try:
            sock.settimeout(2.0)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and sock.recv(1 << 20):
                pass
        except OSError:
            pass

    def _reset(self) -> None:
        """Close the connection with RST and no reply."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()

    def _auth(self) -> tuple[str | None, str | None]:
        """(user, None) when the Basic credentials are valid, else (user-or-None, reason)."""
        app = self.server.app
        header = self.headers.get("Authorization", "")
        if not header.lower().startswith("basic "):
            return None, "Need auth information."
        try:
            user, _, pwd = base64.b64decode(header[6:].strip()).decode().partition(":")
        except (ValueError, UnicodeDecodeError):
            return None, "Need auth information."
        bare = user.split("@", 1)[0]
        if bare == app.user and pwd == app.password:
            return bare, None
        ip = self.client_address[0]
        return bare, f"Access denied for user '{bare}@{ip}' (using password: {'YES' if pwd else 'NO'})"

    # ---- faults -------------------------------------------------------------------------------
    def _apply_before(self, fault: Fault | None) -> None:
        """Faults that act before the operation; returns normally when the operation should run."""
        if fault is None:
            return
        if fault.mode == "delay" and fault.when == "before":
            time.sleep(fault.delay_s)
        elif fault.when == "before" and fault.mode in ("http_500", "drop_connection", "be_down"):
            self._fault_reply(fault)

    def _fault_reply(self, fault: Fault) -> None:
        if fault.mode == "http_500":
            self._send(500, b"Internal Server Error (injected by the Doris stand-in)\n", "text/plain", close=True)
            raise Replied()
        raise DropConnection()

    def _after(self, fault: Fault, fail_reply: Any) -> None:
        """Faults with ``when: after``: the operation ran; now spoil (or delay) the reply."""
        if fault.when != "after":
            return
        if fault.mode == "delay":
            time.sleep(fault.delay_s)
        elif fault.mode == "fail":
            fail_reply()
        elif fault.mode == "http_500":
            self._send(500, b"Internal Server Error (injected by the Doris stand-in)\n", "text/plain", close=True)
        else:
            raise DropConnection()
