"""Dagster's console logger, one line per record: a run's terminal output carries no stack trace.

Dagster's default console logger prints a failed step as its error with the whole stack trace
(Dagster's frames, then ours), so one ``tidemark run --once`` whose server is down filled the
terminal. This logger is Dagster's own colored console logger (same name, format and
``log_level``) with one change: each record is cut to its
first paragraph and joined onto one line — for a failed step, "Execution of step … failed." and
the exception's one line (``orchestration/defs/failures.py``); ``show_failures: false`` drops the
failure events (a step's, the run's, a hook's error, and Dagster's "Not executing." line for every
step after the failed one) for a caller that reports the failure itself (``tidemark run --once``). The stack trace is still in the
run's event log (the UI) and in the ``STEP_FAILURE`` event; only the terminal is spared it.

Dagster uses a job's loggers only for a run whose run config names them (else its default console
logger): ``tidemark run --once`` names it. Runs the UI, a sensor or a schedule launch keep Dagster's
default; under ``tidemark dev`` their stack traces are kept off the terminal by ``tidemark dev``
itself (``orchestration/cli/dev_logs.py``).
"""

from __future__ import annotations

import logging
from typing import Any

from dagster import DagsterEventType, Field, logger
from dagster._utils.log import create_console_logger

_DAGSTER_FAILURE = "dagster._core.definitions.events.Failure: "


def one_line_message(text: str) -> str:
    """The record's text before its stack trace, on one line."""
    head = text.split("\n\nStack Trace:", 1)[0].split("\nStack Trace:", 1)[0]
    head = head.replace(_DAGSTER_FAILURE, "")
    return " ".join(part.strip() for part in head.splitlines() if part.strip())


# What a failure brings with it: the step's and the run's failure, a hook's error (a failed commit
# hook, which `tidemark run --once` resolves and reports itself), and Dagster's own "Dependencies for
# step … failed … Not executing." for each step downstream of the failed one (a plain log record).
_FAILURES = frozenset({DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE, DagsterEventType.HOOK_ERRORED})
_NOT_EXECUTING = "Not executing."
# ``extra`` of a record a step or a hook logs about the failure the run fails with (a commit hook's
# outage line, ``orchestration/defs/hooks.py``): the UI shows it, and a console that shows failures;
# it is dropped with the failure events when the caller reports the failure itself.
FAILURE_EXTRA = {"tidemark_failure_line": True}


class _OneLine(logging.Filter):
    def __init__(self, show_failures: bool = True):
        super().__init__()
        self.show_failures = show_failures

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.show_failures:
            event = (getattr(record, "dagster_meta", None) or {}).get("dagster_event")
            if event is not None and event.event_type in _FAILURES:
                return False
            if getattr(record, "tidemark_failure_line", False):
                return False
            text = record.getMessage()
            if "Dependencies for step " in text and text.rstrip().endswith(_NOT_EXECUTING):
                return False
        record.msg, record.args = one_line_message(record.getMessage()), ()
        record.exc_info = record.exc_text = None
        return True


@logger(
    {
        "log_level": Field(str, is_required=False, default_value="INFO", description="The logger's threshold."),
        "name": Field(str, is_required=False, default_value="dagster", description="The name of the logger."),
        "show_failures": Field(bool, is_required=False, default_value=True,
                               description="Print the step and run failure events (a caller that reports the "
                               "failure itself, `tidemark run --once`, turns them off)."),
    },
    description="Dagster's colored console logger, one line per record (no stack traces on the terminal).",
)
def one_line_console_logger(init_context: Any) -> logging.Logger:
    console = create_console_logger(init_context.logger_config["name"], init_context.logger_config["log_level"])
    console.addFilter(_OneLine(init_context.logger_config["show_failures"]))
    return console


__all__ = ["FAILURE_EXTRA", "one_line_console_logger", "one_line_message"]
