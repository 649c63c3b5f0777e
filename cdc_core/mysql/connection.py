"""Connections to the source MySQL: settings, the two client flavours, and the session set-up.

Every source session runs with ``time_zone = '+00:00'`` so that TIMESTAMP text and chunk
boundaries mean the same thing in every reader (the pipeline's ``server-time-zone`` applies
when values are rendered for Doris, in ``cdc_core.mysql.types``), and with ``utf8mb4``.

Two ways to read:

* pymysql for control queries (MIN/MAX, watermarks, discovery). Chunk boundaries are read
  with :func:`text_conversions`: integers as ``int``, everything else as MySQL's own text, so a
  boundary round-trips exactly (``"123458.1230"`` keeps its scale) and is JSON-able.
* connectorx for chunk scans (:meth:`MySqlConnectionSettings.connectorx_uri`): rows arrive as
  Arrow straight from Rust.

TLS (the source's ``ssl-mode`` and ``ssl-ca``, :class:`MySqlTls`) applies to both, and to the
binlog connections (pymysqlreplication takes :meth:`MySqlConnectionSettings.pymysql_kwargs`), so
every connection Tidemark opens to the server is encrypted and verified alike.
"""

from __future__ import annotations

import functools
import os
import re
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pymysql
from pymysql.constants import CLIENT, FIELD_TYPE

SESSION_TIME_ZONE = "+00:00"

_library_ssl_ctx = pymysql.connections.Connection._create_ssl_ctx
_preferred_ssl_ctx: list[Any] = []


def _create_ssl_ctx(self: Any, sslp: Any) -> Any:
    """pymysql's TLS context, made once per process for its "preferred" mode.

    Without TLS options pymysql tries TLS without verifying anything (``CERT_NONE``, no host
    check), yet it builds a new default context for every connection, loading the system's CA
    bundle each time: ~0.1 s per connection, measured as a stream batch's largest fixed cost (it
    opens several connections). That context is the same every time, so one serves all; any
    other TLS option takes pymysql's own path.
    """
    if isinstance(sslp, dict) and not sslp:
        return preferred_tls_context(self)
    return _library_ssl_ctx(self, sslp)


def preferred_tls_context(connection: Any = None) -> ssl.SSLContext:
    """The "preferred" mode's one TLS context (:func:`_create_ssl_ctx`), built on first use. A
    process that forks workers builds it first, with no connection to hand pymysql's method (which
    reads nothing of it), so that every fork starts with it (``jobs/worker_preload.py``)."""
    if not _preferred_ssl_ctx:
        _preferred_ssl_ctx.append(_library_ssl_ctx(connection, {}))
    return _preferred_ssl_ctx[0]


pymysql.connections.Connection._create_ssl_ctx = _create_ssl_ctx  # type: ignore[method-assign]


@dataclass(frozen=True)
class MySqlTls:
    """TLS to the server, as MySQL's ``--ssl-mode`` means it.

    ``disabled``: plain TCP. ``preferred``: TLS when the server offers it, without checking its
    certificate (MySQL's and Debezium's default). ``required``: TLS or no connection, certificate
    not checked. ``verify-ca``: TLS with a certificate signed by ``ca`` (a PEM file; None: the
    system's CAs). ``verify-identity``: that, and issued for the host connected to.
    """

    mode: str = "preferred"
    ca: str | None = None

    @property
    def verifies(self) -> bool:
        return self.mode in ("verify-ca", "verify-identity")

    def check_files(self) -> None:
        """A missing CA file fails here, naming the option, not deep in a TLS library."""
        if self.ca and not os.path.isfile(self.ca):
            raise ConnectionError(f"the source's ssl-ca {self.ca!r} is not a readable file on this host; "
                                  "fix the path in the pipeline's source block")

    def context(self) -> ssl.SSLContext | None:
        """The client context for ``required`` and the verifying modes; None otherwise."""
        if self.mode not in ("required", "verify-ca", "verify-identity"):
            return None
        self.check_files()
        return _client_context(self.mode, self.ca, self.verifies)

    def pymysql_kwargs(self) -> dict[str, Any]:
        """pymysql's TLS arguments: ``ssl`` (a context) makes TLS required; without it pymysql
        prefers TLS; ``ssl_disabled`` turns it off."""
        if self.mode == "disabled":
            return {"ssl_disabled": True}
        ctx = self.context()
        return {"ssl": ctx} if ctx is not None else {}

    def resolved(self, offered: bool) -> MySqlTls:
        """``preferred`` made definite by whether the server offered TLS (what a pymysql
        connection found): connectorx's ``preferred`` refuses a server without TLS."""
        if self.mode != "preferred":
            return self
        return MySqlTls("required" if offered else "disabled", None)

    def connectorx_params(self) -> str:
        """connectorx's URL parameters (its MySQL driver spells the modes with underscores).
        ``preferred`` adds none (plain TCP): resolve it first (:meth:`resolved`)."""
        if self.mode == "preferred":
            return ""
        params = f"&ssl-mode={self.mode.replace('-', '_')}"
        if self.ca and self.verifies:
            self.check_files()
            params += f"&ssl-ca={quote(self.ca, safe='/')}"
        return params


@dataclass(frozen=True)
class MySqlConnectionSettings:
    """Where and as whom to connect. ``password`` never appears in ``repr`` or errors."""

    host: str
    port: int
    user: str
    password: str = field(default="", repr=False)
    connect_timeout: float = 30.0
    tls: MySqlTls = MySqlTls()

    @classmethod
    def of(cls, settings: Any) -> MySqlConnectionSettings:
        """From any object or dict with host/port/user/password (``hostname``/``username``,
        ``passwd`` and pydantic ``SecretStr`` passwords are accepted too)."""
        if isinstance(settings, MySqlConnectionSettings):
            return settings

        def get(*names: str, default: Any = None) -> Any:
            for name in names:
                if isinstance(settings, dict):
                    if settings.get(name) is not None:
                        return settings[name]
                elif getattr(settings, name, None) is not None:
                    return getattr(settings, name)
            return default

        password = get("password", "passwd", default="")
        if hasattr(password, "get_secret_value"):
            password = password.get_secret_value()
        host = get("host", "hostname")
        user = get("user", "username")
        if not host or not user:
            raise ValueError("MySQL connection settings need a host and a user (host/hostname, user/username)")
        tls = get("tls")
        if not isinstance(tls, MySqlTls):
            tls = MySqlTls(str(get("ssl_mode", default="preferred")), get("ssl_ca"))
        return cls(str(host), int(get("port", default=3306)), str(user), str(password),
                   float(get("connect_timeout", default=30.0)), tls)

    def pymysql_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect`` (and pymysqlreplication's connection settings)."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                "connect_timeout": int(max(1, self.connect_timeout)), "charset": "utf8mb4",
                **self.tls.pymysql_kwargs()}

    @classmethod
    def from_options(cls, options: Any) -> MySqlConnectionSettings:
        """From ``MySqlSourceOptions`` (the pipeline's ``source:`` block)."""
        password = options.password.get_secret_value() if hasattr(options.password, "get_secret_value") \
            else str(options.password)
        return cls(options.hostname, int(options.port), options.username, password,
                   float(getattr(options, "connect_timeout", 30.0)),
                   MySqlTls(getattr(options, "ssl_mode", "preferred"), getattr(options, "ssl_ca", None)))

    def as_replication_dict(self) -> dict[str, Any]:
        """``connection_settings`` for pymysqlreplication."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                **self.tls.pymysql_kwargs()}

    def connectorx_uri(self, database: str | None = None, tls: MySqlTls | None = None) -> str:
        """connectorx's URL. ``prefer_socket=false``: by default its driver, connected to a
        loopback address, asks for ``@@socket`` and opens a second connection over that Unix
        socket — two handshakes per chunk scan, and a path that may not exist on this host."""
        auth = f"{quote(self.user, safe='')}:{quote(self.password, safe='')}"
        return (f"mysql://{auth}@{self.host}:{self.port}/{quote(database or '', safe='')}?prefer_socket=false"
                f"{(tls or self.tls).connectorx_params()}")

    def describe(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


@functools.lru_cache(maxsize=16)
def _client_context(mode: str, ca: str | None, verifies: bool) -> ssl.SSLContext:
    """One TLS client context per (mode, CA) and process: building one loads the CA bundle (~0.1 s),
    and every connection of a batch would pay it again; a context serves any number of sockets."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = mode == "verify-identity"
    ctx.verify_mode = ssl.CERT_REQUIRED if verifies else ssl.CERT_NONE
    return ctx


def text_conversions() -> dict[int, Any]:
    """pymysql converters: integers → int, all else left as the server's text (or bytes).

    pymysql keeps encoders (keyed by Python type) in the same dict; those stay as they are.
    """
    encoders = {k: v for k, v in pymysql.converters.conversions.items() if not isinstance(k, int)}
    return encoders | {
        FIELD_TYPE.TINY: int,
        FIELD_TYPE.SHORT: int,
        FIELD_TYPE.LONG: int,
        FIELD_TYPE.INT24: int,
        FIELD_TYPE.LONGLONG: int,
        FIELD_TYPE.YEAR: int,
    }


def connect(settings: MySqlConnectionSettings, *, text_values: bool = False, database: str | None = None,
            streaming: bool = False, multi_statements: bool = False) -> pymysql.connections.Connection:
    """A pymysql connection with Tidemark's session settings (see the module doc).
    ``multi_statements``: a query may hold several statements (only for statements Tidemark
    writes itself, e.g. ``binlog_status.CurrentOffsetReader``'s)."""
    kwargs: dict[str, Any] = {}
    if text_values:
        kwargs["conv"] = text_conversions()
    if streaming:
        kwargs["cursorclass"] = pymysql.cursors.SSCursor
    if multi_statements:
        kwargs["client_flag"] = CLIENT.MULTI_STATEMENTS
    try:
        conn = pymysql.connect(
            host=settings.host, port=settings.port, user=settings.user, password=settings.password,
            database=database, charset="utf8mb4", autocommit=True,
            connect_timeout=max(1, int(settings.connect_timeout)), **kwargs, **settings.tls.pymysql_kwargs(),
        )
    except pymysql.err.OperationalError as exc:
        raise connection_error(settings, exc) from exc
    with conn.cursor() as cur:
        cur.execute(f"SET time_zone = '{SESSION_TIME_ZONE}'")
    return conn


def is_tls_failure(reason: str) -> bool:
    """Whether a client error's text is about TLS (a handshake, a certificate, TLS required or not offered)."""
    lowered = reason.lower()
    return any(k in lowered for k in ("certificate", "[ssl", "ssl is required", "tls: ", "handshake", "ssl routines",
                                      "secure connection"))


def connection_error(settings: MySqlConnectionSettings, exc: BaseException) -> ConnectionError:
    """One line naming the server, the reason and the options to check (TLS ones for TLS failures,
    the server's state when nothing answers); never the password. Raise it ``from`` pymysql's error:
    that carries no secret, and its traceback is the cause an operator may need."""
    args = getattr(exc, "args", ())
    code = args[0] if args and isinstance(args[0], int) else None
    reason = str(args[1]) if len(args) > 1 else str(exc)
    if settings.password:
        reason = reason.replace(settings.password, "***")
    text = f"{reason} (error {code})" if code is not None else reason
    tls = settings.tls
    lowered = reason.lower()
    if is_tls_failure(reason):
        if any(k in lowered for k in ("doesn't support", "not support", "not have this capability")):
            hint = (f"the source has ssl-mode: {tls.mode}, and the server does not offer TLS; enable TLS "
                    "on the server (ssl_cert, ssl_key) or lower ssl-mode in the pipeline's source block")
        else:
            hint = (f"the TLS handshake failed under ssl-mode: {tls.mode}; check the source's ssl-ca "
                    f"({tls.ca or 'unset: the system CAs'}) is the CA that signed the server's certificate"
                    + (" and that hostname is a name the certificate was issued for"
                       if tls.mode == "verify-identity" else ""))
        return ConnectionError(f"cannot connect to MySQL as {settings.describe()}: {text}; {hint}")
    if code == 1045 and tls.mode in ("disabled", "preferred"):
        return ConnectionError(
            f"cannot connect to MySQL as {settings.describe()}: {text}; check username and password in the "
            f"pipeline's source block. If that user must connect over TLS (created REQUIRE SSL), also set "
            f"ssl-mode: required (or verify-ca) there; the source's ssl-mode is now {tls.mode}")
    if code in NOTHING_ANSWERED:
        return ConnectionError(
            f"cannot connect to MySQL as {settings.describe()}: {text}; the server does not answer there: "
            "if it is restarting, the next run goes on once it is up; otherwise check hostname and port in the "
            "pipeline's source block")
    return ConnectionError(
        f"cannot connect to MySQL as {settings.describe()}: {text}; check hostname, port, username and "
        "password in the pipeline's source block")


# Client errors for "nothing answered at that address": can't connect (local socket / TCP), unknown
# host, server gone away, lost connection during the handshake.
NOTHING_ANSWERED = frozenset({2002, 2003, 2005, 2006, 2013})


def scan_error(settings: MySqlConnectionSettings, exc: BaseException) -> ConnectionError | None:
    """connectorx's connection failure (``timed out waiting for connection: TlsError {…}`` /
    ``MySqlError {…}``) as :func:`connection_error` words it; None for any other error."""
    text = str(exc)
    if "waiting for connection" not in text and "TlsError" not in text and "ssl-mode" not in text:
        return None
    inner = re.search(r"(TlsError|MySqlError|DriverError|IoError) \{(.*)\}", text, re.S)
    reason = inner.group(2).strip() if inner else text.splitlines()[0]
    if inner and inner.group(1) == "TlsError":
        reason = "TLS: " + reason
    code = re.search(r"ERROR (\d+)", reason)
    return connection_error(settings, _Failure(int(code.group(1)) if code else None, reason[:400]))


class _Failure(Exception):
    """A driver failure in pymysql's shape: ``args == (code, reason)``."""


def session_uses_tls(conn: Any) -> bool:
    """Whether a connection is encrypted (``Ssl_version`` is empty on a plain one)."""
    with conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_version'")
        row = cur.fetchone()
    return bool(row and row[1])


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_table(database: str, table: str) -> str:
    return f"{quote_ident(database)}.{quote_ident(table)}"
