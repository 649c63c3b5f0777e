"""The BE port: stream loads, ``_stream_load_2pc`` commits and aborts, error logs."""

from __future__ import annotations

from typing import Any

from .http_base import BaseHandler, DropConnection, Replied
from .load_request import LoadContext
from .restarts import Node
from .transactions import FrontendUnreachable, TxnError, fe_error


class BackendRoutes(BaseHandler):
    """The BE's endpoints; replies are the stream-load / 2PC JSON."""

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
        be_epoch = app.txns.be_epoch  # a BE restart from now on kills this load
        headers = {k.lower(): v for k, v in self.headers.items()}
        label = headers.get("label")
        fault = app.faults.take("load", db, table, label)
        if fault and fault.mode == "be_down":
            raise DropConnection()
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
            except Replied:
                return
        if fault and fault.mode == "fail" and fault.when == "before":
            return self._json(_fail_reply(label or "", headers, "[INTERNAL_ERROR]injected fault"), pretty=True)
        ctx = LoadContext(db, table, headers, body, app.host, app.be_port, app.scheme)
        delay_ms = int(fault.delay_s * 1000) if fault and fault.mode == "publish_timeout" else 0
        if fault and fault.mode == "be_restart":
            # The BE dies under this load once its transaction has begun: the restart resets this
            # connection and aborts the transaction; the load then fails its precommit, unheard.
            downtime = fault.delay_s
            app.loader.run(ctx, hold_s=hold, be_epoch=be_epoch,
                           after_begin=lambda: app.restarts.restart(Node.BE, downtime))
            raise DropConnection()
        res = app.loader.run(ctx, publish_delay_ms=delay_ms, hold_s=hold, be_epoch=be_epoch)
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
            raise DropConnection()
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
        except Replied:
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
        except FrontendUnreachable as e:  # the FE restarts: the BE's 2PC RPC to it fails
            reply = {"status": "THRIFT_RPC_ERROR", "msg": str(e)}
        else:
            who = (f"label [{label}] " if label else "") + (f"transaction [{txn_id}] " if txn_id is not None else "")
            reply = {"status": "Success", "msg": f"{who}{op} successfully."}
        if fault is not None and fault.when == "after":
            self._after(fault, lambda: self._json({"status": "INTERNAL_ERROR", "msg": "injected fault"}, pretty=True))
            if fault.mode != "delay":
                return
        self._json(reply, pretty=True)


def _fail_reply(label: str, headers: dict[str, str], msg: str) -> dict[str, Any]:
    return {
        "TxnId": -1, "Label": label, "Comment": "",
        "TwoPhaseCommit": "true" if headers.get("two_phase_commit") == "true" else "false",
        "Status": "Fail", "Message": msg, "NumberTotalRows": 0, "NumberLoadedRows": 0, "NumberFilteredRows": 0,
        "NumberUnselectedRows": 0, "LoadBytes": 0, "LoadTimeMs": 0, "BeginTxnTimeMs": 0, "StreamLoadPutTimeMs": 0,
        "ReadDataTimeMs": 0, "WriteDataTimeMs": 0, "CommitAndPublishTimeMs": 0,
    }
