"""The FE port: health, backends, the 307 redirect of loads to the BE, load state, schema, SQL."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from .http_base import BaseHandler, Replied
from .sql_lexer import SqlError


class FrontendRoutes(BaseHandler):
    """The FE's endpoints; replies use the httpv2 envelope."""

    def _fe_route(self, parts: list[str], query: dict[str, str], raw_query: str) -> None:
        app = self.server.app
        if parts in ([], ["api", "bootstrap"]):
            return self._send(200, b"<html><body>Doris stand-in FE</body></html>", "text/html")
        if parts == ["api", "health"]:
            alive = 0 if app.be_down() else 1
            return self._fe({"online_backend_num": alive, "total_backend_num": 1})
        user, why = self._auth()
        if why:
            if self.command in ("PUT", "POST"):
                self._json({"msg": "Unauthorized", "code": 401, "data": why, "count": 0}, close=True)
                return self._linger_close()
            return self._json({"msg": "Unauthorized", "code": 401, "data": why, "count": 0})
        if parts == ["api", "fe_version_info"]:
            return self._fe(app.version.fe_version_info())
        if parts == ["api", "backends"]:
            alive = not app.be_down()
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
        if target in ("load", "commit", "abort") and (app.restarts.be_down() or app.faults.take(
                target, db, table, self.headers.get("label"), modes={"be_down"})):
            self._json({"status": "FAILED", "msg": "No backend alive."}, close=True)
            return self._linger_close()
        userinfo = ""
        if self.headers.get("Authorization"):
            userinfo = urllib.parse.quote(f"{user}@default_cluster", safe="") + ":" + urllib.parse.quote(
                app.password, safe="") + "@"
        location = f"{app.scheme}://{userinfo}{app.host}:{app.be_port}{urllib.parse.urlsplit(self.path).path}?{raw_query}"
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
        except Replied:
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
