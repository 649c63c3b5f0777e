"""Dagster's schema revisions read once per process, not once per SQLite file.

Why: each time Dagster's SQLite storage opens a file for the first time in a process — the runs, the
schedules, the event log's index, and the event log file of every run — it asks Alembic whether the
file's schema revision is Dagster's newest (``dagster._core.storage.sql.check_alembic_revision``), and a
file it has just created is stamped with that revision (``stamp_alembic_rev``). Each of those calls
builds a new ``alembic.script.ScriptDirectory``, which loads every one of Dagster's ~90 migration
scripts to find the newest revision: ~35 ms of CPU here, and a ``tidemark run --once`` on a new
pipeline made thirteen of them (three files of the home, checked and stamped, the index checked
again on first use, and the three runs' files, each checked and stamped), ~0.45 s of CPU before any
of its own work (docs/performance.md).

The scripts are files of the installed Dagster, which do not change while a process runs, so
:func:`install` has the two functions use one ``ScriptDirectory`` per Alembic configuration for the
whole process: the revisions are read once, each check still reads the file's own revision, and a
new file is stamped as before (the same revision, written by Alembic's own ``EnvironmentContext``
and Dagster's ``env.py``). Nothing about the files changes; a user's own PostgreSQL storage goes
through the same two functions and gains the same.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_scripts: dict[tuple[tuple[str, str], ...], Any] = {}
_installed = False


def _config_key(config: Any) -> tuple[tuple[str, str], ...]:
    """What ``ScriptDirectory.from_config`` reads: the options of the configuration's main section
    (``script_location`` among them, which Dagster sets in code), their ``%(here)s`` already
    resolved, so that the runs', schedules' and event log's copies of one ``alembic.ini`` share one."""
    section = config.get_section(config.config_ini_section) or {}
    return tuple(sorted((str(k), str(v)) for k, v in section.items() if k != "here"))


def script_directory(config: Any) -> Any:
    """The process's ``ScriptDirectory`` for ``config`` (built on first use, its revisions read once)."""
    from alembic.script import ScriptDirectory

    key = _config_key(config)
    with _lock:
        script = _scripts.get(key)
        if script is None:
            script = _scripts[key] = ScriptDirectory.from_config(config)
        return script


class _CachedScriptDirectory:
    """Stands in for ``ScriptDirectory`` in ``dagster._core.storage.sql``, where only ``from_config``
    is called (by ``check_alembic_revision``)."""

    @staticmethod
    def from_config(config: Any) -> Any:
        return script_directory(config)


def _stamp(config: Any, revision: Any, sql: bool = False, tag: str | None = None, purge: bool = False) -> None:
    """``alembic.command.stamp`` on the process's ``ScriptDirectory`` (its online path, which is
    Dagster's; ``--sql`` output goes to Alembic's own)."""
    from alembic import command, util
    from alembic.runtime.environment import EnvironmentContext

    if sql:
        command.stamp(config, revision, sql=sql, tag=tag, purge=purge)
        return
    script = script_directory(config)
    destination = util.to_tuple(util.to_list(revision))

    def do_stamp(rev: Any, _context: Any) -> Any:
        return script._stamp_revs(destination, rev)  # noqa: SLF001 - as alembic.command.stamp does

    with EnvironmentContext(config, script, fn=do_stamp, as_sql=False, starting_rev=None,
                            destination_rev=destination, tag=tag, purge=purge):
        script.run_env()


def install() -> None:
    """Have Dagster's storages in this process read the revisions once (idempotent). A Dagster
    whose ``sql`` module no longer has these names is left as it is."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    from dagster._core.storage import sql

    if not all(hasattr(sql, name) for name in ("ScriptDirectory", "stamp", "check_alembic_revision",
                                               "stamp_alembic_rev")):
        logger.debug("dagster._core.storage.sql changed; Alembic's revisions are read per file as before")
        return
    sql.ScriptDirectory = _CachedScriptDirectory
    sql.stamp = _stamp
