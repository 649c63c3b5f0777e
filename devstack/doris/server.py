"""HTTP front: the FE port (redirects, metadata, SQL) and the BE port (loads, 2PC, error logs).

Both ports are plain ``ThreadingHTTPServer``s (HTTP/1.1, one thread per connection). FE replies use
the httpv2 envelope ``{"msg","code","data","count"}`` at HTTP 200 even for errors, BE replies the
stream-load / 2PC JSON at HTTP 200 — that is what Doris does and what clients key on.
"""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import struct
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from .faults import Fault
from .query import dumps
from .sql import SqlError
from .stream_load import LoadContext
from .transactions import TxnError, fe_error

if TYPE_CHECKING:
    from .app import StandIn


class _DropConnection(Exception):
    """Abort the request by resetting the TCP connection (fault injection)."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr: tuple[str, int], handler: type, app: StandIn, role: str) -> None:
        self.app = app
        self.role = role
        super().__init__(addr, handler)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as two writes; with Nagle on, the body waits for the client's
    # delayed ACK of the headers (~40 ms on Linux) — on every reply, as a real BE never does.
    disable_nagle_algorithm = True
    server: _Server
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
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

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

    # ---- dispatch -----------------------------------------------------------------------------
    def _route(self) -> None:
        parsed = urllib.parse.urlsplit(self.path)
        path = parsed.path.rstrip("/") or "/"
        query = dict(urllib.parse.parse_qsl(parsed.query))
        parts = [urllib.parse.unquote(p) for p in path.split("/") if p]
        try:
            if parts[:2] == ["_standin", "faults"]:
                return self._faults_api(parts)
            if self.server.role == "fe":
                return self._fe_route(parts, query, parsed.query)
            return self._be_route(parts, query)
        except _DropConnection:
            self._reset()
        except _Replied:
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
            from dataclasses import asdict

            body: dict[str, Any] = {"status": "OK", "faults": [asdict(f) for f in added]}
            if len(added) == 1:
                body["fault"] = body["faults"][0]
            return self._json(body)
        self._send(405, b"method not allowed", "text/plain")

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
            raise _Replied()
        raise _DropConnection()

    # ---- FE -----------------------------------------------------------------------------------
    def _fe_route(self, parts: list[str], query: dict[str, str], raw_query: str) -> None:
        app = self.server.app
        if parts in ([], ["api", "bootstrap"]):
            return self._send(200, b"<html><body>Doris stand-in FE</body></html>", "text/html")
        if parts == ["api", "health"]:
            alive = 0 if app.faults.be_down() else 1
            return self._fe({"online_backend_num": alive, "total_backend_num": 1})
        user, why = self._auth()
        if why:
            if self.command in ("PUT", "POST"):
                self._json({"msg": "Unauthorized", "code": 401, "data": why, "count": 0}, close=True)
                return self._linger_close()
            return self._json({"msg": "Unauthorized", "code": 401, "data": why, "count": 0})
        if parts == ["api", "backends"]:
            alive = not app.faults.be_down()
            if query.get("is_alive", "").lower() == "true" and not alive:
                return self._fe({"backends": []})
            return self._fe({"backends": [{"ip": app.host, "http_port": app.be_port, "is_alive": alive}]})
        if len(parts) == 4 and parts[0] == "api" and parts[3] == "_stream_load" and self.command == "PUT":
            return self._fe_redirect(parts[1], parts[2], raw_query, user or "", require_expect=True)
        if parts[0:1] == ["api"] and parts[-1:] == ["_stream_load_2pc"] and len(parts) in (3, 4) and self.command == "PUT":
            return self._fe_redirect(parts[1], parts[2] if len(parts) == 4 else None, raw_query, user or "",
                                     require_expect=False)
        if len(parts) == 3 and parts[0] == "api" and parts[2] == "get_load_state":
            label = query.get("label", "")
            if not label:
                return self._fe("No label selected", code=403, msg="Bad Request")
            if not app.storage.db_exists(parts[1]):
                return self._fe_error(f"errCode = 7, detailMessage = unknown databases, dbName={parts[1]}")
            return self._fe(app.txns.label_state(parts[1], label))
        if len(parts) == 4 and parts[0] == "api" and parts[3] == "_schema":
            return self._schema(parts[1], parts[2])
        if len(parts) == 4 and parts[:2] == ["api", "enable_light_schema_change"]:
            return self._light_schema_change(parts[2], parts[3])
        if len(parts) == 4 and parts[:2] == ["api", "query"] and self.command == "POST":
            return self._query(parts[3])
        self._send(404, json.dumps({"msg": "Not Found", "code": 404, "data": self.path, "count": 0}).encode())

    def _fe_redirect(self, db: str, table: str | None, raw_query: str, user: str, require_expect: bool) -> None:
        app = self.server.app
        if require_expect and "100-continue" not in self.headers.get("Expect", "").lower():
            self._json({"status": "FAILED", "msg": "There is no 100-continue header"}, close=True)
            return self._linger_close()
        if not db:
            self._json({"status": "FAILED", "msg": "No database selected."}, close=True)
            return self._linger_close()
        target = "load" if require_expect else self.headers.get("txn_operation", "").strip().lower()
        if target in ("load", "commit", "abort") and app.faults.take(
                target, db, table, self.headers.get("label"), modes={"be_down"}):
            self._json({"status": "FAILED", "msg": "No backend alive."}, close=True)
            return self._linger_close()
        userinfo = ""
        if self.headers.get("Authorization"):
            userinfo = urllib.parse.quote(f"{user}@default_cluster", safe="") + ":" + urllib.parse.quote(
                app.password, safe="") + "@"
        location = f"http://{userinfo}{app.host}:{app.be_port}{urllib.parse.urlsplit(self.path).path}?{raw_query}"
        self._send(307, b"", "text/html;charset=utf-8", extra={"Location": location}, close=True)
        self._linger_close()

    def _schema(self, db: str, name: str) -> None:
        app = self.server.app
        if not app.storage.db_exists(db):
            return self._fe_error(f"errCode = 7, detailMessage = Unknown database '{db}'")
        t = app.storage.table(db, name)
        if t is None:
            return self._fe_error(f"errCode = 7, detailMessage = Unknown table '{name}' in {db}")
        props = []
        for c in t.columns:
            d = c.dtype
            info: dict[str, Any] = {
                "name": c.name, "type": d.primitive(), "comment": c.comment,
                "aggregation_type": "" if c.is_key or not t.is_unique else "REPLACE",
                "is_nullable": "Yes" if c.nullable else "No", "is_key": "Yes" if c.is_key else "No",
                "column_uid": c.uid,
            }
            if d.name == "DECIMALV3":
                info["precision"] = str(d.precision)
                info["scale"] = str(d.scale)
            props.append(info)
        self._fe({"status": 200, "tableType": "OLAP", "keysType": t.keys_type, "schema_version": t.schema_version,
                  "properties": props, "materialized_indexes": {}})

    def _light_schema_change(self, db: str, name: str) -> None:
        app = self.server.app
        body = self._read_body()
        if not app.storage.db_exists(db):
            return self._fe_error(f"errCode = 7, detailMessage = unknown databases, dbName={db}")
        t = app.storage.table(db, name)
        if t is None:
            return self._fe_error(f"errCode = 7, detailMessage = unknown table, tableName={name}")
        if not t.light_schema_change():
            return self._fe_error(f"table {name} disable light schema change")
        try:
            req = json.loads(body or b"{}")
        except ValueError:
            req = {}
        if req.get("isDropColumn"):
            c = t.column(str(req.get("columnName", "")))
            if c is not None and c.is_key:
                return self._fe_error(f"Column {req.get('columnName')} is primary key in materializedIndex that "
                                      "can't do the light schema change")
        self._fe(None)

    def _query(self, db: str) -> None:
        app = self.server.app
        try:
            req = json.loads(self._read_body() or b"{}")
        except ValueError:
            req = {}
        stmt = req.get("stmt") if isinstance(req, dict) else None
        if not stmt:
            return self._fe("Missing statement request body", code=403, msg="Bad Request")
        fault = app.faults.take("query", db)
        try:
            self._apply_before(fault)
        except _Replied:
            return
        if fault and fault.mode == "fail" and fault.when == "before":
            return self._fe_error("Failed to execute sql: injected fault")
        limit = int(req.get("limit") or 1000)
        try:
            data = app.executor.execute(stmt, db if db.lower() != "information_schema" else "information_schema",
                                        limit)
        except SqlError as e:
            return self._fe_error(f"Failed to execute sql: java.sql.SQLException: errCode = 2, detailMessage = {e}")
        except Exception as e:  # an engine error is still an FE error reply, never a crash
            return self._fe_error(f"Failed to execute sql: java.sql.SQLException: errCode = 2, detailMessage = {e}")
        if fault is not None:
            self._after(fault, lambda: self._fe_error("Failed to execute sql: injected fault"))
            if fault.mode != "delay":
                return
        self._fe(data)

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
            raise _DropConnection()

    # ---- BE -----------------------------------------------------------------------------------
    def _be_route(self, parts: list[str], query: dict[str, str]) -> None:
        app = self.server.app
        if parts == []:
            return self._send(200, b"<html><body>Doris stand-in BE</body></html>", "text/html")
        if parts == ["api", "health"]:
            return self._json({"status": "OK", "msg": "To Be Added"})
        if parts == ["api", "_load_error_log"]:
            text = app.loader.error_log(query.get("file", ""))
            if text is None:
                return self._send(404, b"not found", "text/plain")
            return self._send(200, text.encode(), "text/plain; charset=utf-8")
        if len(parts) == 4 and parts[0] == "api" and parts[3] == "_stream_load" and self.command == "PUT":
            return self._be_stream_load(parts[1], parts[2])
        if parts[0:1] == ["api"] and parts[-1:] == ["_stream_load_2pc"] and len(parts) in (3, 4) and self.command == "PUT":
            return self._be_2pc(parts[1])
        self._send(404, b"Not Found", "text/plain")

    def _be_stream_load(self, db: str, table: str) -> None:
        app = self.server.app
        headers = {k.lower(): v for k, v in self.headers.items()}
        label = headers.get("label")
        fault = app.faults.take("load", db, table, label)
        if fault and fault.mode == "be_down":
            raise _DropConnection()
        user, why = self._auth()
        body = self._read_body()
        if why:
            msg = "no valid Basic authorization" if user is None else \
                f"[ANALYSIS_ERROR]TStatus: errCode = 2, detailMessage = {why}"
            return self._json(_fail_reply(label or "", headers, msg), pretty=True)
        hold = 0.0
        if fault and fault.mode == "delay" and fault.when == "before":
            hold = fault.delay_s  # a slow load: its transaction sits in PREPARE meanwhile
        else:
            try:
                self._apply_before(fault)
            except _Replied:
                return
        if fault and fault.mode == "fail" and fault.when == "before":
            return self._json(_fail_reply(label or "", headers, "[INTERNAL_ERROR]injected fault"), pretty=True)
        ctx = LoadContext(db, table, headers, body, app.host, app.be_port)
        delay_ms = int(fault.delay_s * 1000) if fault and fault.mode == "publish_timeout" else 0
        res = app.loader.run(ctx, publish_delay_ms=delay_ms, hold_s=hold)
        out = res.to_json()
        if fault is not None and fault.when == "after":
            def spoil() -> None:
                out.update({"Status": "Fail", "Message": "[INTERNAL_ERROR]injected fault"})
                self._json(out, pretty=True)
            self._after(fault, spoil)
            if fault.mode != "delay":
                return
        self._json(out, pretty=True)

    def _be_2pc(self, db: str) -> None:
        app = self.server.app
        self._read_body()
        op = self.headers.get("txn_operation", "").strip().lower()
        txn_hdr = self.headers.get("txn_id", "").strip()
        label = self.headers.get("label", "").strip()
        fault = app.faults.take(op if op in ("commit", "abort") else "commit", db, None, label or None)
        if fault and fault.mode == "be_down":
            raise _DropConnection()
        user, why = self._auth()
        if why:
            return self._json({"status": "INTERNAL_ERROR", "msg": "no valid Basic authorization" if user is None else
                               fe_error(why)}, pretty=True)
        if not txn_hdr and not label:
            return self._json({"status": "INTERNAL_ERROR", "msg": "No transaction id or label selected."}, pretty=True)
        if op not in ("commit", "abort"):
            return self._json({"status": "INTERNAL_ERROR", "msg": "transaction operation should be 'commit' or "
                                                                  "'abort'"}, pretty=True)
        txn_id = None
        if txn_hdr:
            try:
                txn_id = int(txn_hdr)
            except ValueError:
                return self._json({"status": "INTERNAL_ERROR", "msg": f"convert txn_id [{txn_hdr}] failed"},
                                  pretty=True)
        try:
            self._apply_before(fault)
        except _Replied:
            return
        if fault and fault.mode == "fail" and fault.when == "before":
            return self._json({"status": "INTERNAL_ERROR", "msg": "injected fault"}, pretty=True)
        if not app.storage.db_exists(db):
            return self._json({"status": "ANALYSIS_ERROR", "msg": fe_error(f"unknown database, database={db}")},
                              pretty=True)
        try:
            if op == "commit":
                app.txns.commit_2pc(db, txn_id, label or None)
            else:
                app.txns.abort_2pc(db, txn_id, label or None)
        except TxnError as e:
            reply = {"status": "ANALYSIS_ERROR", "msg": fe_error(str(e))}
        else:
            who = (f"label [{label}] " if label else "") + (f"transaction [{txn_id}] " if txn_id is not None else "")
            reply = {"status": "Success", "msg": f"{who}{op} successfully."}
        if fault is not None and fault.when == "after":
            self._after(fault, lambda: self._json({"status": "INTERNAL_ERROR", "msg": "injected fault"}, pretty=True))
            if fault.mode != "delay":
                return
        self._json(reply, pretty=True)


class _Replied(Exception):
    """A fault already sent the reply."""


def _fail_reply(label: str, headers: dict[str, str], msg: str) -> dict[str, Any]:
    return {
        "TxnId": -1, "Label": label, "Comment": "",
        "TwoPhaseCommit": "true" if headers.get("two_phase_commit") == "true" else "false",
        "Status": "Fail", "Message": msg, "NumberTotalRows": 0, "NumberLoadedRows": 0, "NumberFilteredRows": 0,
        "NumberUnselectedRows": 0, "LoadBytes": 0, "LoadTimeMs": 0, "BeginTxnTimeMs": 0, "StreamLoadPutTimeMs": 0,
        "ReadDataTimeMs": 0, "WriteDataTimeMs": 0, "CommitAndPublishTimeMs": 0,
    }


def make_servers(app: StandIn) -> tuple[_Server, _Server]:
    fe = _Server((app.host, app.fe_port), Handler, app, "fe")
    be = _Server((app.host, app.be_port), Handler, app, "be")
    return fe, be
