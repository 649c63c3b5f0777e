"""Where the ``tidemark`` command's log records go: a log file, and one-line warnings on the terminal.

Without a logging configuration Python prints every WARNING of every library to stderr (its "last
resort" handler): a Doris that is down read as a flood of urllib3 lines ("Max retries exceeded …
NewConnectionError") before Tidemark's own one line said what to do. So every command starts with
:func:`configure_cli_logging`:

* every record at INFO and above — ours at DEBUG, with tracebacks — goes to the log file
  (``TIDEMARK_LOG_FILE``, default ``.tidemark/logs/tidemark.log`` under the working directory),
  which is where the stack trace of an expected failure (a server down, a refused login) stays;
* the terminal gets only Tidemark's own warnings and errors (``cdc_core``, ``jobs``,
  ``orchestration``, ``devstack``), one line each and never a traceback; a library's records never.

What a command has to say about its outcome it prints itself, one line naming the cause and the fix.
"""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

LOG_FILE_ENV = "TIDEMARK_LOG_FILE"
DEFAULT_LOG_FILE = Path(".tidemark/logs/tidemark.log")
OUR_PACKAGES = ("cdc_core", "jobs", "orchestration", "devstack")
_MARK = "_tidemark_cli"  # set on the handlers installed here, so a second call replaces them


def log_file() -> Path:
    """The file the command's log records go to."""
    return Path(os.environ.get(LOG_FILE_ENV) or DEFAULT_LOG_FILE)


class _OursOnly(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.name.split(".", 1)[0] in OUR_PACKAGES


class _OneLine(logging.Formatter):
    """``tidemark: warning: <first line of the message>``: no traceback, no continuation."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage().strip().splitlines()
        return f"tidemark: {record.levelname.lower()}: {text[0] if text else ''}"


class _Terminal(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (a test's capture, a redirected stream)."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self):  # noqa: ANN201 - logging's attribute
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # noqa: ANN001 - logging sets it in __init__
        pass


def configure_cli_logging() -> Path | None:
    """Install the file and terminal handlers on the root logger (replacing earlier ones of ours);
    returns the log file, or None when it cannot be written (then records of INFO and below are dropped)."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _MARK, False)]:
        root.removeHandler(handler)
        handler.close()
    terminal = _Terminal()
    terminal.setLevel(logging.WARNING)
    terminal.addFilter(_OursOnly())
    terminal.setFormatter(_OneLine())
    setattr(terminal, _MARK, True)
    root.addHandler(terminal)
    path = log_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        to_file = logging.FileHandler(path, encoding="utf-8", delay=True)
    except OSError:
        to_file = None
    if to_file is not None:
        to_file.setLevel(logging.DEBUG)
        to_file.setFormatter(logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"))
        setattr(to_file, _MARK, True)
        root.addHandler(to_file)
    if root.level == logging.NOTSET or root.level > logging.INFO:
        root.setLevel(logging.INFO)
    for package in OUR_PACKAGES:
        logging.getLogger(package).setLevel(logging.DEBUG)
    logging.captureWarnings(True)  # a library's warnings.warn is a log record (py.warnings) too: to the file
    return path if to_file is not None else None


__all__ = ["DEFAULT_LOG_FILE", "LOG_FILE_ENV", "configure_cli_logging", "log_file"]
