"""Start-up check of the source server: is it set up for lock-free CDC, and may we read it?

Tidemark needs (as Flink CDC / Debezium do; ``docs/mysql.md`` says why each is needed):

* the binary log on (``log_bin``), ``binlog_format=ROW``, ``binlog_row_image=FULL``;
* ``binlog_row_metadata`` may be ``FULL`` (the binlog names the columns) or ``MINIMAL`` (MySQL
  8.0's default; the names, order, types and charsets then come from the schema history:
  ``cdc_core.mysql.table_map_binding``); MariaDB's ``NO_LOG`` and a server without the
  variable (MySQL 5.7) work as MINIMAL does.
  ``ServerInfo.column_names`` says which, as information, not as a problem;
* for the connecting user: ``REPLICATION SLAVE`` (read the binlog), ``REPLICATION CLIENT``
  (MariaDB ≥ 10.5: ``BINLOG MONITOR``; for ``SHOW MASTER STATUS``) and ``SELECT`` on the
  captured tables (global, per database or per table). No table locks. ``RELOAD`` only for a
  pipeline that heals a purged binlog unattended (``tidemark.binlog.on-purged: resnapshot``,
  ``needs_reload``): its resnapshot rotates the binlog (``FLUSH BINARY LOGS``) so that the re-read
  rows outrank every stale one, and an unattended heal cannot count on other writes to move it
  (``cdc_core/pipeline/resnapshot.py``, ``move_binlog``).

:func:`check_server` collects every problem, then raises one :class:`ServerCheckError` whose
message has a line per problem naming the setting and how to change it. Global values are read
(``@@GLOBAL``): they govern what every session writes to the binlog.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from cdc_core.model.schema import TableId
from cdc_core.mysql.connection import MySqlConnectionSettings, connect
from cdc_core.mysql.discovery import list_captured_tables


class ServerCheckError(RuntimeError):
    """The source server is not ready for CDC; ``problems`` has one line per issue."""

    def __init__(self, problems: list[str], who: str = "the source"):
        self.problems = problems
        super().__init__(f"{who} is not ready for change data capture:\n" + "\n".join(f"- {p}" for p in problems))


class ColumnNames(StrEnum):
    """Where binlog rows get their column names from (``binlog_row_metadata``)."""

    BINLOG = "binlog"  # FULL: every TableMap names its columns
    SCHEMA_HISTORY = "schema history"  # MINIMAL or no such variable: the history built from DDL


@dataclass(frozen=True)
class ServerInfo:
    version: str
    is_mariadb: bool
    variables: dict[str, str]
    privileges: frozenset[str]
    column_names: ColumnNames = ColumnNames.BINLOG

    @property
    def row_metadata_mode(self) -> str:
        """One line for people: the mode and where column names come from."""
        value = self.variables.get("binlog_row_metadata")
        if self.column_names == ColumnNames.BINLOG:
            return f"binlog_row_metadata={value}: column names from the binlog"
        shown = "not supported by this server" if value in (None, "None") else value
        return (f"binlog_row_metadata={shown}: column names, order, types and charsets from the schema history "
                "(the live schema read at start, evolved by every DDL); a DDL the parser cannot follow on a "
                "captured table stops the stream")


_SETTINGS = (
    # variable, wanted, how to fix
    ("binlog_format", "ROW", "SET GLOBAL binlog_format = 'ROW'"),
    ("binlog_row_image", "FULL", "SET GLOBAL binlog_row_image = 'FULL'"),
)


def _global_variable(cur: Any, name: str) -> str | None:
    try:
        cur.execute(f"SELECT @@GLOBAL.{name}")
    except Exception:  # noqa: BLE001 - unknown variable on this server version
        return None
    row = cur.fetchone()
    value = row[0] if row else None
    if isinstance(value, bytes):
        value = value.decode()
    return None if value is None else str(value)


def _grants(cur: Any) -> list[str]:
    cur.execute("SHOW GRANTS FOR CURRENT_USER()")
    return [r[0].decode() if isinstance(r[0], bytes) else str(r[0]) for r in cur.fetchall()]


_GRANT = re.compile(r"^GRANT\s+(?P<privs>.+?)\s+ON\s+(?P<target>\S+)\s+TO\s", re.IGNORECASE)


def _parse_grants(lines: Iterable[str]) -> dict[str, set[str]]:
    """target (``*.*``, ```db`.*``, ```db`.`t```) → privileges, upper-case."""
    out: dict[str, set[str]] = {}
    for line in lines:
        m = _GRANT.match(line.strip())
        if not m:
            continue  # role grants, PROXY ...
        privs = {p.strip().upper() for p in re.split(r",(?![^(]*\))", m.group("privs"))}
        privs = {re.sub(r"\s*\(.*\)$", "", p) for p in privs}  # column-level SELECT (a, b)
        target = m.group("target").replace("`", "").replace('"', "")
        out.setdefault(target.lower(), set()).update(privs)
    return out


def _has(privs: set[str], wanted: str) -> bool:
    return "ALL PRIVILEGES" in privs or "ALL" in privs or wanted in privs


RELOAD_FOR_RESNAPSHOT = (
    "{user} lacks the RELOAD privilege, which tidemark.binlog.on-purged: resnapshot needs (the resnapshot that "
    "heals a purged binlog rotates it with FLUSH BINARY LOGS, so that the rows it reads again outrank every stale "
    "one in Doris): GRANT RELOAD ON *.* TO '<user>'@'<host>'; (or leave tidemark.binlog.on-purged at fail and "
    "heal a purge with `tidemark resnapshot` by hand)"
)


def check_server(conn: Any, tables: Iterable[TableId] = (), *, user: str = "the CDC user",
                 needs_reload: bool = False) -> ServerInfo:
    """Check binlog settings and grants; raise :class:`ServerCheckError` listing every problem.
    ``needs_reload``: the pipeline heals a purged binlog unattended (``RELOAD`` is then required)."""
    problems: list[str] = []
    with conn.cursor() as cur:
        cur.execute("SELECT VERSION()")
        version = str(cur.fetchone()[0])
        is_mariadb = "mariadb" in version.lower()
        variables: dict[str, str] = {}
        log_bin = _global_variable(cur, "log_bin")
        variables["log_bin"] = str(log_bin)
        if log_bin not in ("1", "ON"):
            problems.append(
                "log_bin is OFF: the binary log is disabled. Start the server with log_bin enabled "
                "(my.cnf [mysqld]: log_bin=binlog, server_id=<unique>, binlog_format=ROW); it cannot be "
                "turned on at runtime."
            )
        for name, wanted, fix in _SETTINGS:
            value = _global_variable(cur, name)
            variables[name] = str(value)
            if value is None:
                problems.append(f"{name} cannot be read on this server ({version}); it must be {wanted}.")
            elif value.upper() != wanted:
                problems.append(
                    f"{name} is {value}, CDC needs {wanted}: run `{fix}` as an administrator and set "
                    f"{name}={wanted} in the server's my.cnf ([mysqld]) so it survives a restart "
                    f"(sessions already open keep the old value until they reconnect)."
                )
        metadata = _global_variable(cur, "binlog_row_metadata")
        variables["binlog_row_metadata"] = str(metadata)
        column_names = ColumnNames.BINLOG if (metadata or "").upper() == "FULL" else ColumnNames.SCHEMA_HISTORY
        grants = _parse_grants(_grants(cur))
    global_privs = grants.get("*.*", set())
    if not _has(global_privs, "REPLICATION SLAVE"):
        problems.append(
            f"{user} lacks the REPLICATION SLAVE privilege (needed to read the binlog): "
            f"GRANT REPLICATION SLAVE ON *.* TO '<user>'@'<host>';"
        )
    client_names = ("REPLICATION CLIENT", "BINLOG MONITOR", "SUPER")
    if not any(_has(global_privs, p) for p in client_names):
        spelled = "BINLOG MONITOR" if is_mariadb else "REPLICATION CLIENT"
        problems.append(
            f"{user} lacks the {spelled} privilege (needed for SHOW MASTER STATUS / binlog watermarks): "
            f"GRANT {spelled} ON *.* TO '<user>'@'<host>';"
        )
    if needs_reload and not _has(global_privs, "RELOAD"):
        problems.append(RELOAD_FOR_RESNAPSHOT.format(user=user))
    if not _has(global_privs, "SELECT"):
        missing = []
        for t in tables:
            db_privs = grants.get(f"{t.database.lower()}.*", set())
            tbl_privs = grants.get(f"{t.database.lower()}.{t.table.lower()}", set())
            if not (_has(db_privs, "SELECT") or _has(tbl_privs, "SELECT")):
                missing.append(str(t))
        if missing or not tables:
            what = ", ".join(missing[:10]) + (" …" if len(missing) > 10 else "") if missing else "the captured tables"
            problems.append(
                f"{user} lacks SELECT on {what} (needed for the snapshot): "
                f"GRANT SELECT ON <db>.* TO '<user>'@'<host>'; (or ON *.*)"
            )
    if problems:
        raise ServerCheckError(problems)
    privileges = frozenset(p for privs in grants.values() for p in privs)
    return ServerInfo(version, is_mariadb, variables, privileges, column_names)


def check_source_server(source: Any, *, needs_reload: bool = False) -> ServerInfo:
    """Connect with a pipeline's ``source:`` options and check the server for its captured tables
    (``needs_reload``: see :func:`check_server`)."""
    settings = MySqlConnectionSettings.from_options(source)
    conn = connect(settings)
    try:
        tables = list_captured_tables(conn, source.selector)
        return check_server(conn, tables, user=f"'{settings.user}'", needs_reload=needs_reload)
    finally:
        conn.close()
