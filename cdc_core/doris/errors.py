"""Errors of the Doris sink, each saying what failed and what to do about it.

Every message goes through :func:`redact` first: a Doris FE puts ``user:password@`` into the
``Location`` of its 307 redirects, and exception text ends up in logs and in the Dagster UI, so
no credential may ever reach an exception's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

_USERINFO = re.compile(r"(?P<scheme>https?://)[^/@\s]+@")
_BASIC = re.compile(r"(?i)(basic\s+)[A-Za-z0-9+/=]+")


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without URL user-info, Basic tokens, or any of ``secrets``."""
    out = _USERINFO.sub(r"\g<scheme>***@", text)
    out = _BASIC.sub(r"\1***", out)
    for secret in secrets:
        if secret and len(secret) >= 1:
            out = out.replace(secret, "***")
    return out


class DorisError(RuntimeError):
    """Base of everything the Doris sink raises."""


class DorisConnectionError(DorisError):
    """No Doris node answered (after retries); the message names the node and the last failure."""


class DorisUnavailableError(DorisConnectionError):
    """Doris answered, or failed to, the way a restarting or down node does (no live BE, an FE
    answering 503 or refusing connections, a BE that cannot reach its FE) after every retry. Nothing
    is lost: a load that failed was not committed, a precommitted one stays precommitted, and a re-run
    once Doris is back finishes the work; the message says so (:func:`outage_advice`). Callers stop
    trying further work on it: Doris will not be back within the next item's retries either."""


# What Doris answers while a node restarts, and what it means for the user.
_OUTAGES = (
    (re.compile(r"No backend alive", re.IGNORECASE), "Doris has no live BE (a BE is restarting or down)"),
    (re.compile(r"HTTP 503\b"), "the Doris FE is not ready (it is starting or restarting)"),
    (re.compile(r"Couldn't open transport|THRIFT_RPC_ERROR"),
     "the Doris BE cannot reach its FE (the FE is restarting or down)"),
)
# A node that does not answer at all: down, or restarting.
_GONE = re.compile(r"Connection refused|Connection reset|Remote end closed connection|RemoteDisconnected")


def outage_advice(reason: str) -> str | None:
    """For an answer Doris gives while a node restarts, what it means and what to do (the error's
    advice after the last retry); None for any other failure."""
    for pattern, meaning in _OUTAGES:
        if pattern.search(reason):
            return f"{meaning}; run again once Doris is back: the next run finishes what this one left"
    return None


def is_outage(reason: str) -> bool:
    """Whether a failure is a Doris node restarting or down (an answer of :func:`outage_advice`'s, or
    none at all): a re-run once it is back heals it."""
    return outage_advice(reason) is not None or bool(_GONE.search(reason))


class DorisAuthError(DorisError):
    """Doris refused the sink's credentials."""


class DorisResponseError(DorisError):
    """Doris answered something that is not the documented protocol (e.g. not JSON)."""


class StreamLoadError(DorisError):
    """A stream load ended in ``Fail`` or filtered rows.

    ``message`` is Doris's ``Message``; ``error_log`` the text behind ``ErrorURL`` (the rejected
    rows and why), fetched when the load failed; ``response`` the whole response JSON.
    """

    def __init__(self, text: str, *, message: str = "", error_url: str | None = None,
                 error_log: str | None = None, response: dict[str, Any] | None = None):
        super().__init__(text)
        self.message = message
        self.error_url = error_url
        self.error_log = error_log
        self.response = response or {}


class LabelError(DorisError):
    """A label is unusable or held by a load in a state we cannot continue from."""


class TransactionError(DorisError):
    """A commit or abort that did not reach its goal; the message names the transaction."""


class TransactionLostError(TransactionError):
    """Commit of a precommitted transaction Doris no longer holds (it aborted it on its own: its
    transaction timeout, an FE restart, a BE lost; or it forgot it): the rows are gone and must be
    loaded again. For the pipeline this is work to redo, not a failure."""


class TransactionAbortedError(TransactionLostError):
    """Commit of a transaction Doris has already aborted: its rows are gone and must be loaded again."""


class TransactionCommittedError(TransactionError):
    """Abort of a transaction Doris has already committed: its rows are visible."""


class QueryError(DorisError):
    """A statement sent through ``/api/query`` failed; carries the statement and Doris's reason."""

    def __init__(self, text: str, *, statement: str = "", reason: str = ""):
        super().__init__(text)
        self.statement = statement
        self.reason = reason


class SchemaChangeError(DorisError):
    """A schema change could not be applied to Doris (light schema change refused, DDL failed...)."""


class TableMismatchError(DorisError):
    """An existing Doris table does not fit the source table it should receive."""
