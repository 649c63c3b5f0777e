"""Before a run touches anything: can Tidemark log in to MySQL and to Doris?

A wrong password or a server that is down would otherwise surface deep inside a step (a Dagster
run that failed, a traceback), possibly after the state store was written. ``check_connections``
asks each side one cheap question first — a MySQL login, Doris's ``SHOW DATABASES`` — and
raises :class:`ConnectionCheckError` naming the side, the address, the user and the pipeline keys
to check, never the password. Nothing is written anywhere.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import pymysql

from cdc_core.doris.catalog import DorisCatalog
from cdc_core.doris.client import DorisHttpClient
from cdc_core.doris.errors import DorisAuthError, DorisError
from cdc_core.mysql.connection import (
    NOTHING_ANSWERED,
    MySqlConnectionSettings,
    connection_error,
    is_tls_failure,
)

logger = logging.getLogger(__name__)

_MYSQL_REFUSED_LOGIN = {1045, 1044, 1698, 1862, 1820}


class ConnectionCheckError(ConnectionError):
    """MySQL or Doris cannot be used as configured; ``side`` is ``mysql`` or ``doris``."""

    def __init__(self, side: str, message: str):
        super().__init__(message)
        self.side = side


def check_mysql(definition: Any) -> None:
    """Log in to the source (no statement beyond the login)."""
    source = definition.source
    settings = MySqlConnectionSettings.from_options(source)
    where = f"MySQL at {settings.host}:{settings.port}"
    try:
        conn = pymysql.connect(**{**settings.pymysql_kwargs(),
                                  "connect_timeout": max(1, int(min(settings.connect_timeout, 10)))})
    except pymysql.err.MySQLError as exc:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        text = _redact(str(exc.args[1]) if len(exc.args) > 1 else str(exc), settings.password)
        if is_tls_failure(text):  # the TLS options' own message (connection_error) names ssl-mode / ssl-ca
            raise ConnectionCheckError("mysql", str(connection_error(settings, exc))) from exc
        if code in _MYSQL_REFUSED_LOGIN:
            raise ConnectionCheckError("mysql", (
                f"{where} refused user '{settings.user}' ({text}; error {code}): check source.username and "
                f"source.password in {definition.path} (a ${{VAR}} password comes from the environment)")) from exc
        if code in NOTHING_ANSWERED or code is None:
            raise ConnectionCheckError("mysql", (
                f"{where} does not answer ({text}; error {code}): check source.hostname and source.port in "
                f"{definition.path}, and that the server is up")) from exc
        raise ConnectionCheckError("mysql", f"{where} refused the connection of user '{settings.user}' ({text}; "
                                            f"error {code}): check the source block of {definition.path}") from exc
    conn.close()


def check_doris(definition: Any) -> None:
    """Ask a Doris FE for its databases: the address answers and the user is let in."""
    sink = definition.sink
    client = DorisHttpClient.from_options(sink, max_retries=1)
    try:
        DorisCatalog(client).execute("information_schema", "SHOW DATABASES")
    except DorisAuthError as exc:
        raise ConnectionCheckError("doris", (
            f"Doris (fenodes {sink.fenodes}) refused user '{sink.username}': check sink.username and sink.password "
            f"in {definition.path} (a ${{VAR}} password comes from the environment)")) from exc
    except DorisError as exc:
        raise ConnectionCheckError("doris", (
            f"the Doris FE at {sink.fenodes} does not answer: check sink.fenodes in {definition.path} (the FE's "
            f"HTTP address, host:8030), and that the FE is up ({connection_gist(client.redact(str(exc)))})")) from exc
    finally:
        client.close()


def check_connections(definition: Any) -> None:
    """MySQL, then Doris; the first that cannot be used raises :class:`ConnectionCheckError`."""
    check_mysql(definition)
    check_doris(definition)
    logger.debug("%s: MySQL and Doris answer", definition.name)


def connection_gist(text: str) -> str:
    """The gist of a failed connection or request, for a one-line message: what the socket said
    (not urllib3's "Max retries exceeded … NewConnectionError(…)"), else the text's first line."""
    for gist in ("Connection refused", "Name or service not known", "No route to host", "timed out",
                 "Can't connect", "Lost connection", "Access denied"):
        if gist in text:
            return gist.lower()
    answered = re.search(r"HTTP 5\d\d(?:: [^;()]{0,80})?", text)  # an FE that answers, but with an error
    if answered:
        return answered.group(0).strip()
    first = text.strip().splitlines()[0] if text.strip() else ""
    return first[:200]


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


_STATE_DB_MISSING = ("does not exist", "Unknown database")
_STATE_LOGIN_REFUSED = ("password authentication failed", "no pg_hba.conf entry", "Access denied",
                        "authentication failed")
_STATE_NO_ANSWER = ("Connection refused", "could not translate host name", "timeout expired",
                    "Can't connect", "Name or service not known", "No route to host", "timed out")


def state_location(definition: Any) -> str:
    """Where the pipeline's state lives, for a message: its URL without the password, or its directory."""
    from cdc_core.state.store import StateStore, engine_url

    url, state_dir = StateStore.location(definition)
    if url is None:
        return str(state_dir)
    return engine_url(url).render_as_string(hide_password=True)


def check_state_store(definition: Any) -> None:
    """Log in to ``tidemark.state.url`` (nothing is created or written) and raise
    :class:`ConnectionCheckError` (side ``state``) naming what is wrong on one line: no driver for the
    URL, a database that does not exist, a refused login, a server that does not answer. A state
    directory (SQLite) needs no check: it is created on first use."""
    import sqlalchemy as sa

    from cdc_core.state.store import StateStore, engine_url

    url, _ = StateStore.location(definition)
    if url is None:
        return
    try:
        parsed = engine_url(url)
    except sa.exc.ArgumentError as exc:
        raise ConnectionCheckError("state", (
            f"tidemark.state.url in {definition.path} is not a SQLAlchemy URL "
            "(e.g. postgresql://user:${PASSWORD}@host:5432/db)")) from exc
    shown = parsed.render_as_string(hide_password=True)
    password = parsed.password or ""
    where = f"the state database {shown} (tidemark.state.url in {definition.path})"
    timeouts = {"postgresql": {"connect_timeout": 10}, "mysql": {"connect_timeout": 10}}
    try:
        engine = sa.create_engine(parsed, connect_args=timeouts.get(parsed.get_backend_name(), {}))
    except (ImportError, sa.exc.NoSuchModuleError) as exc:
        raise ConnectionCheckError("state", (
            f"{where}: no driver for '{parsed.drivername}' URLs ({_redact(str(exc), password)}): use "
            "postgresql:// (psycopg2) or mysql:// (PyMySQL), which Tidemark installs")) from exc
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1")
    except sa.exc.DBAPIError as exc:
        text = _redact(str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc), password)
        if any(s in text for s in _STATE_DB_MISSING) and "role" not in text:
            message = f"the database '{parsed.database}' does not exist ({text}): create it, e.g. createdb"
        elif any(s in text for s in _STATE_LOGIN_REFUSED) or "role" in text:
            message = f"the server refused user '{parsed.username}' ({text}): check the URL's user and password"
        elif any(s in text for s in _STATE_NO_ANSWER):
            message = f"the server does not answer ({text}): check the URL's host and port, and that it is up"
        else:
            message = f"cannot be used ({text})"
        raise ConnectionCheckError("state", f"{where}: {message}") from exc
    finally:
        engine.dispose()
    logger.debug("%s: the state database answers", definition.name)
