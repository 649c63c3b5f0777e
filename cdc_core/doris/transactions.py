"""Phase two of exactly-once: commit or abort precommitted transactions, idempotently.

``PUT /api/{db}/_stream_load_2pc`` with ``txn_id`` (or ``label``) and ``txn_operation``.
Every outcome that already is the goal counts as success, so a commit whose answer was lost can
simply be sent again:

* commit: ``Success``, or ``is already committed / visible`` → done; ``is already aborted`` →
  :class:`TransactionAbortedError` (the rows are gone; the batch must be loaded again);
  ``not found`` → the label's state decides (VISIBLE/COMMITTED → done: the txn was cleaned up
  after Doris's label retention).
* abort: ``Success``, ``is already aborted``, ``not found`` → done; ``is already COMMITTED /
  VISIBLE`` → :class:`TransactionCommittedError` naming the transaction (unlike the Flink
  connector, which swallows it — a committed batch we meant to abort is a fact the caller
  must know about).
"""

from __future__ import annotations

import logging
import re
import time
from typing import Any
from urllib.parse import urlsplit

from cdc_core.doris.client import DorisHttpClient, DorisResponse
from cdc_core.doris.committable import Committable
from cdc_core.doris.errors import (
    DorisError,
    DorisUnavailableError,
    TransactionAbortedError,
    TransactionCommittedError,
    TransactionError,
    TransactionLostError,
    outage_advice,
)

log = logging.getLogger(__name__)

ALREADY_COMMITTED = re.compile(r"is already (committed|visible)\b", re.IGNORECASE)
COMMITTED_NO_ABORT = re.compile(r"is already (COMMITTED|VISIBLE), could not abort", re.IGNORECASE)
ALREADY_ABORTED = re.compile(r"is already aborted", re.IGNORECASE)
NOT_FOUND = re.compile(r"not found", re.IGNORECASE)
STILL_PREPARING = re.compile(r"is prepare, not pre-committed", re.IGNORECASE)
LOAD_STATES = ("UNKNOWN", "PREPARE", "PRECOMMITTED", "COMMITTED", "VISIBLE", "ABORTED")


class LoadStateReader:
    """``GET /api/{db}/get_load_state?label=L`` → one of :data:`LOAD_STATES`."""

    def __init__(self, client: DorisHttpClient):
        self.client = client

    def state(self, database: str, label: str) -> str:
        resp = self.client.request("GET", f"/api/{database}/get_load_state", params={"label": label})
        body = self.client.json_of(resp, f"load state of label {label}")
        if not isinstance(body, dict) or body.get("code") != 0:
            raise TransactionError(
                f"cannot read the state of label {label} in {database}: {self.client.redact(str(body))[:300]}"
            )
        state = str(body.get("data", "")).upper()
        if state not in LOAD_STATES:
            raise TransactionError(f"Doris reported an unknown load state {state!r} for label {label}")
        return state


class TwoPhaseCommitter:
    """Commits and aborts Doris transactions (see the module docstring)."""

    def __init__(self, client: DorisHttpClient, *, max_attempts: int | None = None, backoff_s: float = 0.5):
        self.client = client
        self.states = LoadStateReader(client)
        self.max_attempts = max_attempts if max_attempts is not None else client.max_retries + 1
        self.backoff_s = backoff_s

    # -- commit ---------------------------------------------------------------------------------

    def commit(self, committable: Committable) -> None:
        """Make a precommitted load visible; success if it already is."""
        what = committable.describe()
        for n in range(self.max_attempts):
            if n:
                time.sleep(self.backoff_s * 2 ** (n - 1))
            ok, msg = self._operate(committable.database, committable.txn_id, committable.label, "commit")
            if ok or ALREADY_COMMITTED.search(msg):
                if not ok:
                    log.info("%s was already committed", what)
                return
            if ALREADY_ABORTED.search(msg):
                raise TransactionAbortedError(
                    f"cannot commit {what}: Doris has already aborted it ({msg}); its rows must be loaded again"
                )
            if NOT_FOUND.search(msg):
                state = self.states.state(committable.database, committable.label)
                if state in ("COMMITTED", "VISIBLE"):
                    log.info("%s not found by id but its label is %s: already committed", what, state)
                    return
                if state == "PRECOMMITTED" and committable.txn_id is not None:
                    committable = Committable(committable.database, committable.table, committable.label,
                                              None, committable.rows)
                    continue
                raise TransactionLostError(
                    f"cannot commit {what}: Doris does not know it ({msg}; label state {state}). "
                    "It expired (streaming_label_keep_max_second) or was never precommitted; load the batch again"
                )
            if STILL_PREPARING.search(msg):
                log.warning("%s is still loading; retrying the commit", what)
                continue
            # each attempt to the log file; the error after the last one says it on the terminal
            log.info("commit of %s failed (attempt %d): %s", what, n + 1, msg)
        text = f"cannot commit {what} after {self.max_attempts} attempts: {msg}"
        advice = outage_advice(msg)
        if advice:  # a node restarting: the transaction stays precommitted for the next run to commit
            raise DorisUnavailableError(f"{text} — {advice}")
        raise TransactionError(text)

    # -- abort ----------------------------------------------------------------------------------

    def abort(self, committable: Committable) -> None:
        """Discard a precommitted load; success if it is already gone."""
        if committable.txn_id is not None:
            self.abort_txn(committable.database, committable.txn_id, label=committable.label)
        else:
            self.abort_label(committable.database, committable.label)

    def abort_txn(self, database: str, txn_id: int, *, label: str | None = None) -> None:
        what = f"txn {txn_id}" + (f" (label {label})" if label else "") + f" in {database}"
        msg = ""
        for n in range(self.max_attempts):
            if n:
                time.sleep(self.backoff_s * 2 ** (n - 1))
            ok, msg = self._operate(database, txn_id, None, "abort")
            if ok or ALREADY_ABORTED.search(msg) or (NOT_FOUND.search(msg) and not COMMITTED_NO_ABORT.search(msg)):
                return
            if COMMITTED_NO_ABORT.search(msg):
                raise TransactionCommittedError(f"cannot abort {what}: it is already committed ({msg})")
            log.info("abort of %s failed (attempt %d): %s", what, n + 1, msg)
        raise TransactionError(f"cannot abort {what} after {self.max_attempts} attempts: {msg}")

    def abort_label(self, database: str, label: str) -> None:
        what = f"label {label} in {database}"
        msg = ""
        for n in range(self.max_attempts):
            if n:
                time.sleep(self.backoff_s * 2 ** (n - 1))
            ok, msg = self._operate(database, None, label, "abort")
            if ok or ALREADY_ABORTED.search(msg):
                return
            if COMMITTED_NO_ABORT.search(msg):
                raise TransactionCommittedError(f"cannot abort {what}: it is already committed ({msg})")
            if NOT_FOUND.search(msg):
                state = self.states.state(database, label)
                if state in ("COMMITTED", "VISIBLE"):
                    raise TransactionCommittedError(f"cannot abort {what}: it is already {state} ({msg})")
                return
            log.info("abort of %s failed (attempt %d): %s", what, n + 1, msg)
        raise TransactionError(f"cannot abort {what} after {self.max_attempts} attempts: {msg}")

    # -- the request ----------------------------------------------------------------------------

    def _operate(self, database: str, txn_id: int | None, label: str | None, op: str) -> tuple[bool, str]:
        headers = {"Expect": "100-continue", "txn_operation": op}
        if txn_id is not None:
            headers["txn_id"] = str(txn_id)
        elif label:
            headers["label"] = label
        else:
            raise ValueError("a transaction id or a label is needed to commit or abort")
        path = f"/api/{database}/_stream_load_2pc"
        client = self.client
        if client.load_route == "benodes":
            nodes = client.benodes

            def attempt(n: int) -> DorisResponse:
                return client.send("PUT", client.url(nodes[n % len(nodes)], path), headers=headers, body=lambda: b"")

            resp = client.with_retries(f"{op} of txn {txn_id or label}", attempt)
        elif (reused := client.reuse_redirect()) is not None:  # within DorisHttpClient.reusing_redirects
            resp = client.request("PUT", path, headers=headers, body=lambda: b"", first=reused,
                                  what=f"{op} of txn {txn_id or label}")
        else:
            resp = client.request("PUT", path, headers=headers, body=lambda: b"")
            if urlsplit(resp.url or "").netloc not in client.fenodes:  # the BE an FE redirected it to
                client.remember_redirect(resp.url)
        body: Any = client.json_of(resp, f"{op} of transaction {txn_id or label}")
        if not isinstance(body, dict):
            raise DorisError(f"{op} of transaction {txn_id or label}: unexpected answer {client.redact(str(body))[:300]}")
        status = str(body.get("status", body.get("Status", "")))
        msg = client.redact(str(body.get("msg", body.get("Message", ""))))
        return status == "Success", msg
