"""Expected failures as one line: a run that failed because a server is down reads as its cause and fix.

A server that does not answer, a refused login, a source not ready for CDC, a ``tables`` pattern
matching nothing, a name Doris refuses: none of these is a bug, and each of their exceptions
already says what is wrong and what to do on one line. Left to Dagster, such an exception becomes
a step failure whose error is Dagster's wrapper with the cause three frames down a stack trace.
:func:`one_line_failures` turns them into a Dagster ``Failure`` whose description is that line and
whose metadata holds the cause and the fix; the stack trace goes to the run's DEBUG log (the UI's
log filter shows it). Any other exception is a bug and keeps Dagster's full report.

Why :class:`OneLineFailure` and not a plain ``Failure``: Dagster serializes a raised ``Failure``
as an error whose stack is every frame from its executor down to the ``raise`` (Dagster's frames,
then ours), and the run page prints that stack under the failure ("Stack Trace: File …") — the
stack trace the user should not have to read for a server that is down. Dagster takes the
serialized error of an exception that carries one already (``DagsterUserCodeProcessError``, how a
code server's error crosses a process boundary: ``dagster/_utils/error.py``,
``serializable_error_info_from_exc_info``) as it is; a ``OneLineFailure`` carries its line with
no stack, so the run page and the run's failure event show the line and the metadata, nothing
else. A Failure a body raises itself (a paused binlog, a snapshot not finished) is passed on as a
``OneLineFailure`` too: it says what to do; where it was raised is no news to the user.
"""

from __future__ import annotations

import functools
import inspect
import re
import traceback
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from dagster import Failure, MetadataValue
from dagster._core.errors import DagsterUserCodeProcessError
from dagster._utils.error import SerializableErrorInfo

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
_FIX = re.compile(r"[:;,]\s+(?=(?:check|fix|run|grant|set|enable|wait|give|add|raise|widen|rename|launch|"
                  r"materialize|re-execute|if it is)\b)")

F = TypeVar("F", bound=Callable[..., Any])


def one_line(exc: BaseException) -> str:
    """The exception's message on one line (a ServerCheckError's problems joined with "; ")."""
    if isinstance(exc, ServerCheckError):
        return "the source server is not ready for change data capture: " + "; ".join(exc.problems)
    text = " ".join(line.strip() for line in str(exc).strip().splitlines() if line.strip())
    return text or type(exc).__name__


class _SerializedAlready(DagsterUserCodeProcessError):
    """The part of ``DagsterUserCodeProcessError`` Dagster reads: ``user_code_process_error_infos``
    (set by :class:`OneLineFailure`), without its constructor's keyword."""

    def __init__(self, *args: Any):
        Exception.__init__(self, *args)


class OneLineFailure(Failure, _SerializedAlready):
    """A ``Failure`` whose serialized error is its description alone: no stack, no chained cause
    (see the module docstring). ``raise_on_error`` callers and hooks still get a ``Failure``."""

    def __init__(self, description: str, metadata: dict[str, Any] | None = None, error: str = "Failure"):
        self.error = error
        self.user_code_process_error_infos = [SerializableErrorInfo(message=description, stack=[], cls_name=error)]
        super().__init__(description=description, metadata=metadata)

    def __reduce__(self) -> tuple[Any, ...]:  # the constructor's arguments are not ``args``
        return (type(self), (self.description, dict(self.metadata), self.error))


def cause_and_fix(line: str) -> tuple[str, str | None]:
    """A one-line message cut where the fix begins ("…: check sink.fenodes …"); no fix: None."""
    found = _FIX.search(line)
    return (line[: found.start()], line[found.end():]) if found else (line, None)


def line_metadata(line: str, error: str) -> dict[str, Any]:
    """A failure's metadata: ``cause``, ``fix`` (when the line names one) and ``error`` (the class)."""
    cause, fix = cause_and_fix(line)
    metadata: dict[str, Any] = {"cause": MetadataValue.text(cause), "error": MetadataValue.text(error)}
    if fix:
        metadata["fix"] = MetadataValue.text(fix)
    return metadata


def failure_for(exc: BaseException) -> OneLineFailure:
    """The ``Failure`` an expected exception becomes: its line, and the cause and the fix apart."""
    line = one_line(exc)
    return OneLineFailure(line, line_metadata(line, type(exc).__name__), error=type(exc).__name__)


def one_line_failures(fn: F) -> F:
    """Wrap an asset's, a check's or an op's body (its first argument is the Dagster context); a
    body that yields is wrapped as it is iterated."""

    @functools.wraps(fn)
    def body(context: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            result = fn(context, *args, **kwargs)
        except Exception as exc:
            failure = _one_line(context, exc)
            if failure is None:
                raise
            raise failure from None
        return _iterated(context, result) if inspect.isgenerator(result) else result

    return body  # type: ignore[return-value]


def _iterated(context: Any, events: Generator[Any, None, None]) -> Generator[Any, None, None]:
    try:
        yield from events
    except Exception as exc:
        failure = _one_line(context, exc)
        if failure is None:
            raise
        raise failure from None


def expected_line(context: Any, exc: BaseException) -> str | None:
    """For a hook, which cannot fail its run: an expected failure's one line (its stack trace in the
    run's DEBUG log), or None for anything else (a bug: let it raise, Dagster reports it whole)."""
    if not isinstance(exc, EXPECTED_FAILURES):
        return None
    context.log.debug("the failure's stack trace:\n" + "".join(traceback.format_exception(exc)))
    return one_line(exc)


def _one_line(context: Any, exc: Exception) -> OneLineFailure | None:
    """The :class:`OneLineFailure` the step raises for an expected failure or for the body's own
    ``Failure`` (the stack trace goes to the run's DEBUG log); None: ``exc`` goes on as it is (a bug,
    or a ``OneLineFailure`` already)."""
    if isinstance(exc, OneLineFailure) or not isinstance(exc, (Failure, *EXPECTED_FAILURES)):
        return None
    context.log.debug("the failure's stack trace:\n" + "".join(traceback.format_exception(exc)))
    if isinstance(exc, Failure):  # the body's own: the line it says, without where it was raised
        line = " ".join((exc.description or "the step failed").split())
        return OneLineFailure(line, {**line_metadata(line, "Failure"), **exc.metadata})
    return failure_for(exc)


__all__ = ["EXPECTED_FAILURES", "OneLineFailure", "cause_and_fix", "expected_line", "failure_for", "line_metadata", "one_line",
           "one_line_failures"]
