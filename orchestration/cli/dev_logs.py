"""What ``tidemark dev`` shows of Dagster's output: warnings and errors; the rest goes to log files.

The daemon logs an INFO line per sensor every few seconds ("Checking for new runs for sensor…",
"…skipped…"), which buries anything that matters. Dagster's ``--log-level`` would drop those lines
altogether, and they are what one reads when a sensor does not do what one expects; so instead
``tidemark dev`` reads each process's output itself: every line goes to ``<name>.log`` in the
instance's ``dev_logs/`` directory (``orchestration/cli/dev.py``), and only lines at WARNING or above
(or every line, with ``--verbose``) also go to the terminal.

A line's level is the ``- LEVEL -`` field of Dagster's log format (``asctime - logger - LEVEL -
message``) or uvicorn's ``LEVEL:`` prefix; a line without one (a traceback's lines, a message's
continuation) has the level of the last line that had one. A traceback does not reach the terminal
(a failed sensor tick during a one-minute outage printed ~590 lines): its frames, its source lines,
its "Traceback (most recent call last):" / "Stack Trace:" headers and the sentences chaining its
exceptions stay in the log file, its exception lines (``ConnectionError: cannot connect …``) show,
and the first hidden line is replaced by one pointing at the log file. ``--verbose`` shows it all.
Output that never named a level is shown: hiding what we cannot classify could hide a crash.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from pathlib import Path
from typing import IO, TextIO

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_LEVEL_NAMES = "DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL"
_DAGSTER_LEVEL = re.compile(rf" - ({_LEVEL_NAMES}) - ")
_PREFIX_LEVEL = re.compile(rf"^({_LEVEL_NAMES}):\s")

logger = logging.getLogger(__name__)


def line_level(line: str) -> int | None:
    """The logging level a line of Dagster's output states, or None when it states none."""
    text = _ANSI.sub("", line)
    match = _DAGSTER_LEVEL.search(text) or _PREFIX_LEVEL.match(text)
    if match is None:
        return None
    name = match.group(1)
    return {"WARN": logging.WARNING, "FATAL": logging.CRITICAL}.get(name) or logging.getLevelName(name)


_TRACE_HEADERS = ("Traceback (most recent call last):", "Stack Trace:", "The above exception",
                  "During handling of the above exception")


def is_trace_line(line: str) -> bool:
    """A traceback's frame, source line, header or chaining sentence, or a blank line inside one."""
    text = _ANSI.sub("", line).rstrip("\r\n")
    return not text.strip() or text[:1].isspace() or text.lstrip().startswith(_TRACE_HEADERS)


class LevelFilter:
    """Decides line by line what reaches the terminal (``show``); one per output stream, since
    a line without a level inherits the level of the stream's previous one. With ``tracebacks``
    off (the default but for ``--verbose``), a shown record's traceback lines are not shown, and
    ``pointer_due`` says once per record that something was hidden."""

    def __init__(self, threshold: int = logging.WARNING, tracebacks: bool | None = None):
        self.threshold = threshold
        self.tracebacks = threshold <= logging.NOTSET if tracebacks is None else tracebacks
        self._current: int | None = None
        self._hidden = self._pointed = False

    def show(self, line: str) -> bool:
        level = line_level(line)
        if level is not None:
            self._current = level
            self._hidden = self._pointed = False
        shown = self._current is None or self._current >= self.threshold
        if shown and level is None and self._current is not None and not self.tracebacks and is_trace_line(line):
            self._hidden = True
            return False
        return shown

    def pointer_due(self) -> bool:
        """True once per record, right after its first hidden traceback line."""
        if self._hidden and not self._pointed:
            self._pointed = True
            return True
        return False


class LogRelay(threading.Thread):
    """Copies one child's output to its log file, and what the filter lets through to ``terminal``."""

    def __init__(self, name: str, source: IO[bytes], log_file: Path, terminal: TextIO | None = None,
                 verbose: bool = False):
        super().__init__(name=f"tidemark-dev-{name}-log", daemon=True)
        self.source = source
        self.log_file = log_file
        self.terminal = terminal
        self.filter = LevelFilter(logging.NOTSET if verbose else logging.WARNING)

    def run(self) -> None:
        terminal: TextIO | None = self.terminal or sys.stderr
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            for raw in iter(self.source.readline, b""):
                log.write(raw)
                log.flush()
                line = raw.decode("utf-8", errors="replace")
                if terminal is None:
                    continue
                shown = self.filter.show(line)
                text = line if shown else (f"  (the rest is in {self.log_file})\n"
                                           if self.filter.pointer_due() else None)
                if text is not None:
                    try:
                        terminal.write(text)
                        terminal.flush()
                    except (OSError, ValueError):  # the terminal is gone: the log file goes on
                        terminal = None
        self.source.close()


__all__ = ["LevelFilter", "LogRelay", "is_trace_line", "line_level"]
