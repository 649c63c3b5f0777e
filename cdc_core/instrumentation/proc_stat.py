"""A process's fields in Linux's ``/proc/<pid>/stat``, read in one place.

Several parts of Tidemark ask the kernel about a process: whether a pid still names the process a
lease or a Dagster run recorded (its start time, so a reused pid is not taken for it; a zombie is
not running) and when this process started (the run's timeline). The line's second field, the
command in parentheses, may itself hold spaces and parentheses, so the fields are those after its
last ``)``: index 0 is the state (``R``, ``S``, ``Z``...), index 19 the start time in clock ticks
since boot.
"""

from __future__ import annotations

from pathlib import Path

STATE = 0
START_TICKS = 19


def stat_fields(pid: int) -> list[str] | None:
    """The fields after the command of ``/proc/<pid>/stat``; None when there is no such process
    (or no ``/proc``)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()
