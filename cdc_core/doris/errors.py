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
