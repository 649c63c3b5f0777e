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
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import pymysql
from pymysql.constants import FIELD_TYPE

SESSION_TIME_ZONE = "+00:00"


@dataclass(frozen=True)
class MySqlConnectionSettings:
    """Where and as whom to connect. ``password`` never appears in ``repr`` or errors."""

    host: str
    port: int
    user: str
    password: str = field(default="", repr=False)
    connect_timeout: float = 30.0

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
        return cls(str(host), int(get("port", default=3306)), str(user), str(password),
                   float(get("connect_timeout", default=30.0)))

    def pymysql_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``pymysql.connect`` (and pymysqlreplication's connection settings)."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password,
                "connect_timeout": int(max(1, self.connect_timeout)), "charset": "utf8mb4"}

    @classmethod
    def from_options(cls, options: Any) -> MySqlConnectionSettings:
        """From ``MySqlSourceOptions`` (the pipeline's ``source:`` block)."""
        password = options.password.get_secret_value() if hasattr(options.password, "get_secret_value") \
            else str(options.password)
        return cls(options.hostname, int(options.port), options.username, password,
                   float(getattr(options, "connect_timeout", 30.0)))

    def as_replication_dict(self) -> dict[str, Any]:
        """``connection_settings`` for pymysqlreplication."""
        return {"host": self.host, "port": self.port, "user": self.user, "password": self.password}

    def connectorx_uri(self, database: str | None = None) -> str:
        """connectorx's URL. ``prefer_socket=false``: by default its driver, connected to a
        loopback address, asks for ``@@socket`` and opens a second connection over that Unix
        socket — two handshakes per chunk scan, and a path that may not exist on this host."""
        auth = f"{quote(self.user, safe='')}:{quote(self.password, safe='')}"
        return f"mysql://{auth}@{self.host}:{self.port}/{quote(database or '', safe='')}?prefer_socket=false"

    def describe(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"


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
            streaming: bool = False) -> pymysql.connections.Connection:
    """A pymysql connection with Tidemark's session settings (see the module doc)."""
    kwargs: dict[str, Any] = {}
    if text_values:
        kwargs["conv"] = text_conversions()
    if streaming:
        kwargs["cursorclass"] = pymysql.cursors.SSCursor
    try:
        conn = pymysql.connect(
            host=settings.host, port=settings.port, user=settings.user, password=settings.password,
            database=database, charset="utf8mb4", autocommit=True,
            connect_timeout=max(1, int(settings.connect_timeout)), **kwargs,
        )
    except pymysql.err.OperationalError as exc:
        code = exc.args[0] if exc.args else None
        raise ConnectionError(
            f"cannot connect to MySQL as {settings.describe()}: {exc.args[1] if len(exc.args) > 1 else exc} "
            f"(error {code}); check hostname, port, username and password in the pipeline's source block"
        ) from None
    with conn.cursor() as cur:
        cur.execute(f"SET time_zone = '{SESSION_TIME_ZONE}'")
    return conn


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def quote_table(database: str, table: str) -> str:
    return f"{quote_ident(database)}.{quote_ident(table)}"
