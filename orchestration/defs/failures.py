"""Expected failures as one line: a run that failed because a server is down reads as its cause and fix.

A server that does not answer, a refused login, a source not ready for CDC, a ``tables`` pattern
matching nothing, a name Doris refuses: none of these is a bug, and each of their exceptions
already says what is wrong and what to do on one line. Left to Dagster, such an exception becomes
a step failure whose error is Dagster's wrapper with the cause three frames down a stack trace.
:func:`one_line_failures` turns them into a Dagster ``Failure`` whose description is that line and
whose metadata holds the cause and the fix; the stack trace goes to the run's DEBUG log (the UI's
log filter shows it), and ``raise … from None`` keeps it out of the failure itself. Any other
exception is a bug and keeps Dagster's full report.
"""

from __future__ import annotations

import functools
import re
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

from dagster import Failure, MetadataValue

from cdc_core.doris.errors import DorisAuthError, DorisConnectionError
from cdc_core.doris.names import DorisNameError
from cdc_core.mysql.discovery import DiscoveryError
from cdc_core.mysql.server_check import ServerCheckError

# ConnectionError covers the MySQL connection errors (cdc_core/mysql/connection.py), the preflight's
# ConnectionCheckError and status's Unreachable.
EXPECTED_FAILURES: tuple[type[BaseException], ...] = (
    ConnectionError, DorisConnectionError, DorisAuthError, DiscoveryError, ServerCheckError, DorisNameError,
)

# Where a message turns from the cause to the fix ("… does not answer: check sink.fenodes in …").
_FIX = re.compile(r"[:;,]\s+(?=(?:check|fix|run|grant|set|enable|wait|give|add|raise|widen|rename)\b)")

F = TypeVar("F", bound=Callable[..., Any])


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (a ServerCheckError's problems joined with "; ")."""
    if isinstance(exc, ServerCheckError):
        return "the source server is not ready for change data capture: " + "; ".join(exc.problems)
    text = " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    return text or type(exc).__name__


def failure_for(exc: BaseException) -> Failure:
    """The ``Failure`` an expected exception becomes: its line, and the cause and the fix apart."""
    line = one_line(exc)
    found = _FIX.search(line)
    cause, fix = (line[: found.start()], line[found.end():]) if found else (line, None)
    metadata: dict[str, Any] = {"cause": MetadataValue.text(cause), "error": MetadataValue.text(type(exc).__name__)}
    if fix:
        metadata["fix"] = MetadataValue.text(fix)
    return Failure(description=line, metadata=metadata)


def one_line_failures(fn: F) -> F:
    """Wrap an asset's, a check's or an op's body (its first argument is the Dagster context)."""

    @functools.wraps(fn)
    def body(context: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(context, *args, **kwargs)
        except EXPECTED_FAILURES as exc:
            context.log.debug("the failure's stack trace:\n" + "".join(traceback.format_exception(exc)))
            raise failure_for(exc) from None

    return body  # type: ignore[return-value]


__all__ = ["EXPECTED_FAILURES", "failure_for", "one_line", "one_line_failures"]
