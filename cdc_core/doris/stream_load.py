"""Phase one of exactly-once: a stream load that leaves its rows PRECOMMITTED (invisible).

``StreamLoader.load`` sends one batch to one table under a deterministic label with
``two_phase_commit: true`` and returns a :class:`Committable`. It is safe to call again with
the same label after any failure — a lost response, a crash, a retry by Dagster:

* ``Label Already Exists`` + ``PRECOMMITTED``: our earlier attempt got through; its txn id
  (parsed from ``relate to txn [N]``) is returned as the prepared transaction.
* ``Label Already Exists`` + ``FINISHED``: the batch is already committed; the committable is
  returned all the same (committing it again is a no-op).
* ``Label Already Exists`` + ``RUNNING``: an attempt died mid-stream; it is aborted (which
  frees the label) and the load is sent again.

A snapshot chunk is not the same rows on a retry (it may be read at a later high watermark), so
it loads with ``fresh=True``: an earlier attempt's precommitted load is aborted and the load sent
again, and a label that is already committed is an error (:class:`TransactionCommittedError`).
That costs a round trip only when a label is taken, not one abort per chunk up front.

A load that Doris fails, or that filters rows, raises :class:`StreamLoadError` with Doris's
``Message`` and the text behind ``ErrorURL``; a prepared load with filtered rows is aborted
first, so it cannot be committed by accident.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import requests

from cdc_core.doris.arrow_layout import arrow_ready
from cdc_core.doris.client import DorisHttpClient, DorisResponse, RetryableAnswer
from cdc_core.doris.committable import Committable
from cdc_core.doris.errors import (
    DorisAuthError,
    DorisConnectionError,
    DorisResponseError,
    LabelError,
    StreamLoadError,
    TransactionCommittedError,
)
from cdc_core.doris.labels import validate_label
from cdc_core.doris.payloads import ArrowConformError, Payload, PayloadBuilder, is_arrow
from cdc_core.doris.version import cluster_version

log = logging.getLogger(__name__)

SUCCESS = ("Success", "Publish Timeout")
LABEL_EXISTS = "Label Already Exists"
LABEL_TXN = re.compile(r"Label \[(?P<label>.*?)\] has already been used, relate to txn \[(?P<txn>\d+)\]")
ERROR_LOG_LIMIT = 64 * 1024
# Headers the loader owns; a user's ``sink.properties.*`` must not override them.
RESERVED_HEADERS = frozenset({"label", "two_phase_commit", "expect", "authorization", "hidden_columns"})
# Headers that would change how the body is read, or defeat exactly-once: the loader decides them.
CONFLICTING_HEADERS = {
    "columns": "rows are matched by name (json) or sent in the table's own column order (csv/arrow)",
    "jsonpaths": "rows are sent as flat JSON objects", "json_root": "rows are sent as flat JSON objects",
    "strip_outer_array": "rows are sent one JSON object per line",
    "column_separator": "csv uses \\x01 / \\x02", "line_delimiter": "csv uses \\x01 / \\x02",
    "merge_type": "deletes travel in __DORIS_DELETE_SIGN__", "delete": "deletes travel in __DORIS_DELETE_SIGN__",
    "function_column.sequence_col": "the table's sequence column is set at creation",
    "group_commit": "group commit cannot carry a label, and labels are how retries stay exactly-once",
    "partial_columns": "every load is a full-row upsert",
}


def _txn_from_message(message: str) -> int | None:
    match = LABEL_TXN.search(message or "")
    return int(match.group("txn")) if match else None


class StreamLoader:
    """Precommits batches into Doris tables (see the module docstring)."""

    def __init__(self, client: DorisHttpClient, *, properties: Mapping[str, str] | None = None,
                 fmt: str | None = None, gzip: bool = False, committer: Any = None,
                 max_label_rounds: int = 3, default_format: str | None = None):
        props = {k: str(v) for k, v in (properties or {}).items()}
        for key in list(props):
            if key.lower() in RESERVED_HEADERS:
                raise ValueError(f"sink.properties.{key} is set by Tidemark itself; remove it from the pipeline")
            if key.lower() in CONFLICTING_HEADERS:
                raise ValueError(f"sink.properties.{key} cannot be used with Tidemark: "
                                 f"{CONFLICTING_HEADERS[key.lower()]}; remove it from the pipeline")
        configured = fmt or props.pop("format", None)
        self.explicit_format = configured is not None
        self.format = configured.strip().lower() if configured else "json"
        # the format of typed (Arrow) rows when the pipeline names none: arrow on Doris 2.1 or later,
        # else json; asked of the FE at the first such load (``default_format``), or given (a task's
        # sink gets the driver's: jobs/specs.py:SinkSpec)
        self._default_format = default_format
        props.pop("read_json_by_line", None)
        if props.pop("compress_type", "").lower() in ("gz", "gzip"):
            gzip = True
        self.properties = props
        self.client = client
        self.builder = PayloadBuilder(self.format, gzip=gzip)
        self.committer = committer
        self.max_label_rounds = max_label_rounds

    # -- public --------------------------------------------------------------------------------

    def load(self, database: str, table: str, label: str, rows: Any, *,
             columns: Sequence[str] | None = None, delete_sign: bool = True,
             sequence: int | None = None, fmt: str | None = None, fresh: bool = False,
             arrow_types: Sequence[Any] | None = None) -> Committable:
        """Precommit ``rows`` into ``database.table`` under ``label``; see the module docstring
        (``fresh``: never reuse what an earlier attempt left under the label). ``arrow_types``: the
        Arrow type Doris reads each of ``columns`` as (cdc_core/doris/arrow_layout.py; None for one
        that has none): unless every column has one, Arrow rows go as JSON unless the pipeline asked
        for arrow."""
        validate_label(label)
        fmt = self.format_for(rows, fmt, arrow_ready=arrow_ready(arrow_types))
        payload = self._payload(fmt, rows, columns, delete_sign, sequence, arrow_types)
        try:
            for _round in range(self.max_label_rounds):
                body = self._put(database, table, label, payload)
                result = self._interpret(database, table, label, payload, body, fresh=fresh)
                if result is not None:
                    return result
            raise LabelError(
                f"label {label} of {database}.{table} stayed held by a running load after "
                f"{self.max_label_rounds} aborts; is another writer loading the same batch?"
            )
        finally:
            payload.close()

    def default_format(self) -> str:
        """How typed rows travel: the pipeline's ``sink.properties.format`` when it names one, else
        ``arrow`` when the cluster reads it (Doris 2.1 or later: ``cdc_core/doris/version.py``, asked
        once per process), else ``json``."""
        if self.explicit_format:
            return self.format
        if self._default_format is None:
            version = cluster_version(self.client)
            self._default_format = "arrow" if version is not None and version.reads_arrow else "json"
        return self._default_format

    def format_for(self, rows: Any, fmt: str | None = None, *, arrow_ready: bool = True) -> str:
        """The format of one load of ``rows``: ``fmt`` if given; Arrow rows in :meth:`default_format`,
        but as JSON when it is arrow by default and the table has a column Tidemark does not send as
        Arrow (``arrow_ready`` False: cdc_core/doris/arrow_layout.py); dict rows in the pipeline's
        format, but as JSON where that would be arrow (dicts carry no Arrow types: the callers with a
        schema build Arrow themselves, ``cdc_core/pipeline/changes.py``; the dicts left are rows read
        back from Doris for a repair's or a reload's deletes)."""
        if fmt is not None:
            return fmt
        if is_arrow(rows):
            chosen = self.default_format()
            return "json" if chosen == "arrow" and not arrow_ready and not self.explicit_format else chosen
        return self.format if self.explicit_format and self.format != "arrow" else "json"

    def _payload(self, fmt: str, rows: Any, columns: Sequence[str] | None, delete_sign: bool,
                 sequence: int | None, arrow_types: Sequence[Any] | None) -> Payload:
        """The body; an Arrow load whose values do not fit the table's Arrow types goes as JSON
        (Doris converts JSON text itself, and says which value it refuses)."""
        builder = self.builder if fmt == self.format else PayloadBuilder(fmt, gzip=self.builder.gzip)
        if fmt != "arrow":
            return builder.build(rows, columns=columns, delete_sign=delete_sign, sequence=sequence)
        if is_arrow(rows) and not isinstance(rows, pa.Table | pa.RecordBatch):
            rows = list(rows)  # built again as JSON below should the Arrow types not fit
        try:
            return builder.build(rows, columns=columns, delete_sign=delete_sign, sequence=sequence,
                                 arrow_types=arrow_types)
        except ArrowConformError as exc:
            log.warning("%s; this load goes as JSON lines", exc)
            return PayloadBuilder("json", gzip=self.builder.gzip).build(
                rows, columns=columns, delete_sign=delete_sign, sequence=sequence)

    # -- the request ---------------------------------------------------------------------------

    def headers(self, label: str | None, payload: Payload | None) -> dict[str, str]:
        headers = {"Expect": "100-continue", "two_phase_commit": "true", **self.properties}
        if payload is not None:
            headers.update(payload.headers)
        if label is not None:
            headers["label"] = label
        return headers

    def _put(self, database: str, table: str, label: str, payload: Payload) -> dict[str, Any]:
        path = f"/api/{database}/{table}/_stream_load"
        headers = self.headers(label, payload)

        def attempt(n: int) -> DorisResponse:
            url = self.target_url(database, table, path, n)
            # Normally ``url`` is the BE already; should it redirect again (an https FE, a proxy),
            # the body is produced afresh for the next hop.
            return self.client.send("PUT", url, headers=headers, body=payload.chunks)

        resp = self.client.with_retries(f"stream load of {database}.{table} (label {label})", attempt)
        return self._json(resp, f"stream load of {database}.{table}")

    def target_url(self, database: str, table: str, path: str, attempt: int) -> str:
        """The BE that receives the body: configured, discovered, or the FE's 307 target."""
        client = self.client
        if client.load_route in ("benodes", "backends"):
            if attempt:
                client.forget_backends()
            try:
                return client.url(client.next_backend(), path)
            except (DorisConnectionError, DorisResponseError) as exc:
                if client.load_route == "benodes":
                    raise
                log.warning("cannot list Doris backends (%s); using the FE's redirect instead", exc)
                client.load_route = "redirect"
        return self.resolve_redirect(database, table, path, attempt)

    def resolve_redirect(self, database: str, table: str, path: str, attempt: int) -> str:
        """Ask an FE where to load (an empty-body request without label; FE answers 307).

        Should the node answer the probe itself (it is a BE), it has opened an empty 2PC
        transaction under a generated label; that transaction is aborted at once and the node
        is used directly.
        """
        if attempt == 0:
            reused = self.client.reuse_redirect()  # within DorisHttpClient.reusing_redirects
            if reused is not None:
                return reused + path
        else:
            self.client.forget_redirect()
        order = self.client.fe_order()
        node = order[attempt % len(order)]
        url = self.client.url(node, path)
        headers = self.headers(None, None)
        resp = self.client.send("PUT", url, headers=headers, body=lambda: b"", follow_redirects=False)
        if resp.status_code in (301, 302, 303, 307, 308) and resp.headers.get("Location"):
            from urllib.parse import urljoin

            from cdc_core.doris.client import _strip_userinfo

            target = _strip_userinfo(urljoin(url, resp.headers["Location"]))
            self.client.remember_redirect(target)
            return target
        if resp.status_code >= 500:
            return url  # let the caller's retry handle the failure on the real request
        raw = self.client.json_of(resp, f"stream load of {database}.{table}")
        if isinstance(raw, dict) and raw.get("status") == "FAILED" and "backend" in str(raw.get("msg", "")).lower():
            raise RetryableAnswer(node, str(raw.get("msg")))
        body = self._json(resp, f"stream load of {database}.{table}")
        txn = body.get("TxnId") if isinstance(body, dict) else None
        if isinstance(txn, int) and txn > 0 and self.committer is not None:
            self.committer.abort_txn(database, txn)
        return url

    def _json(self, resp: DorisResponse, what: str) -> dict[str, Any]:
        body = self.client.json_of(resp, what)
        if not isinstance(body, dict):
            raise DorisResponseError(f"{what}: unexpected answer {self.client.redact(str(body))[:300]}")
        if "Status" not in body and body.get("status") in ("FAILED", "Fail"):
            msg = self.client.redact(str(body.get("msg", "")))
            raise StreamLoadError(f"{what} refused by Doris: {msg}", message=msg, response=body)
        return body

    # -- the answer ----------------------------------------------------------------------------

    def _interpret(self, database: str, table: str, label: str, payload: Payload,
                   body: dict[str, Any], *, fresh: bool = False) -> Committable | None:
        status = body.get("Status")
        message = self.client.redact(str(body.get("Message", "")))
        where = f"{database}.{table} (label {label})"
        if status in SUCCESS:
            if str(body.get("TwoPhaseCommit", "")).lower() != "true":
                raise LabelError(
                    f"stream load into {where} was not two-phase (TwoPhaseCommit={body.get('TwoPhaseCommit')!r}); "
                    "this Doris refuses 2PC (old BE with disable_stream_load_2pc?) — its rows may be visible"
                )
            txn = int(body["TxnId"])
            filtered = int(body.get("NumberFilteredRows", 0) or 0)
            if filtered:
                if self.committer is not None:
                    self.committer.abort_txn(database, txn)
                raise self._load_error(where, body, f"{filtered} row(s) filtered (the load was aborted)")
            loaded = int(body.get("NumberLoadedRows", payload.rows) or 0)
            log.info("precommitted %d rows into %s as txn %s", loaded, where, txn)
            return Committable(database, table, label, txn, loaded)
        if status == LABEL_EXISTS:
            existing = body.get("ExistingJobStatus")
            txn = _txn_from_message(message)
            if txn is None and isinstance(body.get("TxnId"), int) and body["TxnId"] > 0:
                txn = body["TxnId"]
            if existing is None and self.committer is not None:
                # Doris 1.x answers without ExistingJobStatus: ask for the label's state instead.
                state = self.committer.states.state(database, label)
                existing = {"PRECOMMITTED": "PRECOMMITTED", "COMMITTED": "FINISHED", "VISIBLE": "FINISHED"}.get(
                    state, "RUNNING")
            if fresh and existing == "FINISHED":
                raise TransactionCommittedError(
                    f"label of {where} is already committed (txn {txn}); a chunk read again needs a new label")
            if fresh and existing == "PRECOMMITTED":
                if self.committer is None:
                    raise LabelError(f"label of {where} holds an earlier attempt's load (txn {txn}), and this "
                                     "loader has no committer to abort it with")
                log.info("label %s holds an earlier attempt's load (txn %s): aborting it and loading again",
                         label, txn)
                self._abort_holder(database, label, txn)
                return None
            if existing == "PRECOMMITTED":
                log.info("label %s already precommitted as txn %s: reusing it", label, txn)
                return Committable(database, table, label, txn, payload.rows)
            if existing == "FINISHED":
                log.info("label %s already committed (txn %s)", label, txn)
                return Committable(database, table, label, txn, payload.rows)
            if existing == "RUNNING" or existing is None:
                if self.committer is None:
                    raise LabelError(f"label of {where} is held by a running load (txn {txn}): {message}")
                log.warning("label %s held by a running load (txn %s): aborting it and loading again", label, txn)
                self._abort_holder(database, label, txn)
                return None
            raise LabelError(f"label of {where} exists with status {existing!r}: {message}")
        if "no valid Basic authorization" in message or "Access denied" in message:
            raise DorisAuthError(
                f"Doris refused user {self.client.username!r} loading {where}: {message}; "
                "check the sink's username and password"
            )
        raise self._load_error(where, body, message or f"status {status!r}")

    def _abort_holder(self, database: str, label: str, txn: int | None) -> None:
        if txn is not None:
            self.committer.abort_txn(database, txn)
        else:
            self.committer.abort_label(database, label)

    def _load_error(self, where: str, body: dict[str, Any], reason: str) -> StreamLoadError:
        url = body.get("ErrorURL")
        error_log = self.fetch_error_log(url) if url else None
        text = f"stream load into {where} failed: {reason}"
        if body.get("Message") and body.get("Message") not in reason:
            text += f"; Doris says: {body['Message']}"
        if error_log:
            text += f"\nrejected rows ({url}):\n{error_log[:4000]}"
        elif url:
            text += f" (details: {url})"
        return StreamLoadError(
            self.client.redact(text), message=self.client.redact(str(body.get("Message", ""))),
            error_url=self.client.redact(url) if url else None,
            error_log=self.client.redact(error_log) if error_log else None, response=body,
        )

    def fetch_error_log(self, url: str) -> str | None:
        """The text behind ``ErrorURL`` (which rows were rejected and why); None if unreachable."""
        try:
            resp = self.client.send("GET", url)
            if resp.status_code != 200:
                return None
            return resp.text[:ERROR_LOG_LIMIT]
        except requests.RequestException as exc:
            log.warning("cannot read Doris error log %s: %s", self.client.redact(url), self.client.redact(str(exc)))
            return None
