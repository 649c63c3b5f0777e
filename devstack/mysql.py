"""A private MariaDB server with ROW binlog, for laptops and tests.

The server lives entirely under one directory (datadir, socket, pid file, error log) and is
started with ``--no-defaults`` so that nothing in ``/etc/mysql`` leaks in. It is configured the
way a CDC source must be: ROW binlog with full row images and full row metadata (real column
names in the binlog), a server id, and a ``cdc`` user with exactly the grants Tidemark needs.

We track the server by its pid file and stop exactly that process; the data stays.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from devstack.procs import pid_alive, process_mentions, read_pid, terminate
from devstack.tls import TlsFiles

CDC_USER = "cdc"
CDC_PASSWORD = "cdc"

# Unix socket paths are limited to 107 bytes; deep temp dirs can exceed that.
_MAX_SOCKET_PATH = 100


@dataclass(frozen=True)
class MySQLEndpoint:
    """How clients reach the server: TCP for the CDC user, the socket for root."""

    host: str
    port: int
    user: str
    password: str
    root_socket: str

    def as_dict(self) -> dict:
        return {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "root_socket": self.root_socket,
        }


def _binary(name: str, *fallbacks: str) -> str:
    for candidate in (name, *fallbacks):
        found = shutil.which(candidate) or (
            f"/usr/sbin/{candidate}" if Path(f"/usr/sbin/{candidate}").exists() else None
        )
        if found:
            return found
    raise RuntimeError(
        f"{name} is not installed. Run `make setup` (it installs Debian's mariadb-server and "
        "mariadb-client), or install them with `apt-get install -y mariadb-server mariadb-client`."
    )


class MariaDBServer:
    """One private MariaDB server under ``base_dir``.

    ``start`` is idempotent: a server already running from this directory is left alone.
    """

    def __init__(self, base_dir: Path, port: int = 3307, host: str = "127.0.0.1", server_id: int = 1,
                 tls: TlsFiles | None = None, binlog_basename: str = "binlog", extra_args: tuple[str, ...] = (),
                 log_bootstrap: bool = True):
        self.base_dir = Path(base_dir).resolve()
        # With ``tls`` the server offers TLS (``--ssl-ca/--ssl-cert/--ssl-key``); clients choose.
        self.tls = tls
        self.port = port
        self.host = host
        self.server_id = server_id
        # Binlog files are ``<binlog_basename>.000001`` …; a replica uses another name than its primary.
        self.binlog_basename = binlog_basename
        self.extra_args = tuple(extra_args)
        # False: the CDC user is created with sql_log_bin=0 (a replica gets it from its primary, and
        # a transaction of its own would add its server id to its GTID history).
        self.log_bootstrap = log_bootstrap
        self.datadir = self.base_dir / "data"
        self.pid_file = self.base_dir / "mariadb.pid"
        self.error_log = self.base_dir / "mariadb.err"
        # Private temporary files: servers sharing /tmp have been seen to trip over each other's
        # #sql-temptable files (install-db failures, a crash under parallel tests).
        self.tmpdir = self.base_dir / "tmp"
        self.socket = self._socket_path()

    def _socket_path(self) -> Path:
        preferred = self.base_dir / "mariadb.sock"
        if len(str(preferred)) <= _MAX_SOCKET_PATH:
            return preferred
        digest = hashlib.sha1(str(self.base_dir).encode()).hexdigest()[:12]
        return Path(tempfile.gettempdir()) / f"tidemark-{digest}.sock"

    @property
    def endpoint(self) -> MySQLEndpoint:
        return MySQLEndpoint(self.host, self.port, CDC_USER, CDC_PASSWORD, str(self.socket))

    # -- lifecycle ---------------------------------------------------------------------------

    def pid(self) -> int | None:
        pid = read_pid(self.pid_file)
        if pid and pid_alive(pid) and process_mentions(pid, str(self.datadir)):
            return pid
        return None

    def running(self) -> bool:
        return self.pid() is not None and self.ping()

    def start(self, timeout_s: float = 60.0) -> MySQLEndpoint:
        if self.pid() is not None:
            self._wait_ready(timeout_s)
            self._bootstrap()
            return self.endpoint
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        if not (self.datadir / "mysql").is_dir():
            self._install_datadir()
        cmd = [
            _binary("mariadbd", "mysqld"),
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            f"--port={self.port}",
            f"--bind-address={self.host}",
            f"--socket={self.socket}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.tmpdir}",
            f"--log-bin={self.datadir / self.binlog_basename}",
            f"--server-id={self.server_id}",
            "--binlog-format=ROW",
            "--binlog-row-image=FULL",
            "--binlog-row-metadata=FULL",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_general_ci",
            "--default-time-zone=+00:00",
            "--innodb-buffer-pool-size=512M",
            "--max-connections=500",
            "--skip-name-resolve",
            *([f"--ssl-ca={self.tls.ca}", f"--ssl-cert={self.tls.cert}", f"--ssl-key={self.tls.key}"]
              if self.tls is not None else []),
            *self.extra_args,
        ]
        log = open(self.base_dir / "mariadbd.stdout", "ab")  # noqa: SIM115 - handed to the child
        subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()
        self._wait_ready(timeout_s)
        self._bootstrap()
        return self.endpoint

    def stop(self, timeout_s: float = 60.0) -> bool:
        """Stop the server we started (by pid). Returns whether one was running."""
        pid = self.pid()
        if pid is None:
            return False
        terminate(pid, timeout_s)
        return True

    # -- helpers -----------------------------------------------------------------------------

    def _install_datadir(self) -> None:
        self.datadir.mkdir(parents=True, exist_ok=True)
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [
                _binary("mariadb-install-db", "mysql_install_db"),
                "--no-defaults",
                f"--datadir={self.datadir}",
                f"--tmpdir={self.tmpdir}",
                "--auth-root-authentication-method=normal",
                "--user=root",
                "--skip-test-db",
            ],
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"mariadb-install-db failed for {self.datadir}:\n{result.stdout}\n{result.stderr}"
            )

    def ping(self) -> bool:
        result = subprocess.run(
            [_binary("mariadb-admin", "mysqladmin"), "--no-defaults", "-uroot", f"--socket={self.socket}",
             "ping"],
            capture_output=True,
            text=True,
        )
        return result.returncode == 0

    def _wait_ready(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.ping():
                return
            if read_pid(self.pid_file) is None and time.monotonic() > deadline - timeout_s + 5:
                # No pid file after 5 s: the server died at start; its log says why.
                tail = self.error_log.read_text(errors="replace")[-2000:] if self.error_log.exists() else ""
                if "ERROR" in tail:
                    raise RuntimeError(f"MariaDB failed to start (port {self.port}); log tail:\n{tail}")
            time.sleep(0.2)
        tail = self.error_log.read_text(errors="replace")[-2000:] if self.error_log.exists() else ""
        raise RuntimeError(f"MariaDB did not answer within {timeout_s:.0f}s (port {self.port}); log tail:\n{tail}")

    def root_sql(self, sql: str, database: str | None = None, *, vertical: bool = False) -> str:
        """Run SQL as root over the socket with the C client; returns tab-separated output (with
        ``vertical``: ``name: value`` lines, the column names included, as ``\\G`` prints them)."""
        cmd = [_binary("mariadb", "mysql"), "--no-defaults", "-uroot", f"--socket={self.socket}",
               *(["-E"] if vertical else ["-N", "-B"])]
        if database:
            cmd.append(database)
        result = subprocess.run(cmd, input=sql, capture_output=True, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"SQL failed: {result.stderr.strip()}")
        return result.stdout

    def _bootstrap(self) -> None:
        grants = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT, RELOAD"
        statements = [] if self.log_bootstrap else ["SET SESSION sql_log_bin = 0;"]
        for host in ("%", "localhost", "127.0.0.1"):
            statements.append(f"CREATE USER IF NOT EXISTS '{CDC_USER}'@'{host}' IDENTIFIED BY '{CDC_PASSWORD}';")
            statements.append(f"GRANT {grants} ON *.* TO '{CDC_USER}'@'{host}';")
        self.root_sql("\n".join(statements))

    # -- binlog and identity (failover tests read these) -------------------------------------

    def flush_binary_logs(self, times: int = 1) -> str:
        """Rotate the binlog ``times`` times; returns the current file afterwards."""
        self.root_sql("FLUSH BINARY LOGS;\n" * times)
        return self.current_binlog()

    def current_binlog(self) -> str:
        return self.root_sql("SHOW MASTER STATUS").split("\t")[0].strip()

    def binlog_files(self) -> list[str]:
        return [line.split("\t")[0] for line in self.root_sql("SHOW BINARY LOGS").splitlines() if line]

    def purge_binary_logs_to(self, file: str, timeout_s: float = 60.0) -> list[str]:
        """``PURGE BINARY LOGS TO file``, repeated until ``file`` is the oldest log; returns the logs left.

        MariaDB purges up to the first log it still needs, without an error: one whose binlog
        checkpoint InnoDB has not yet written, or one a dump thread still reads (a reader that has
        just disconnected leaves its thread until the server notices). Both pass within seconds, so
        a test that needs the purge done asks again rather than failing on the first answer.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            self.root_sql(f"PURGE BINARY LOGS TO '{file}';")
            left = self.binlog_files()
            if not left or left[0] == file:
                return left
            if time.monotonic() > deadline:
                raise RuntimeError(f"PURGE BINARY LOGS TO '{file}' still left {left} after {timeout_s:.0f} s")
            time.sleep(0.1)

    def identity(self) -> ServerIdentity:
        """Who this server is and where its GTID history stands."""
        row = self.root_sql(
            "SELECT @@server_id, @@gtid_domain_id, @@gtid_binlog_pos, @@gtid_current_pos, @@gtid_slave_pos, "
            "@@read_only, @@log_slave_updates").rstrip("\n").split("\t")
        # MariaDB has no @@server_uuid (MySQL's); the server id and the GTIDs identify it.
        uuid = self.root_sql(
            "SELECT variable_value FROM information_schema.global_variables WHERE variable_name = 'SERVER_UUID'"
        ).strip() or None
        return ServerIdentity(
            port=self.port, server_id=int(row[0]), gtid_domain_id=int(row[1]), gtid_binlog_pos=row[2],
            gtid_current_pos=row[3], gtid_slave_pos=row[4], read_only=row[5] == "1",
            log_slave_updates=row[6] == "1", server_uuid=uuid, binlog_file=self.current_binlog(),
            binlog_files=tuple(self.binlog_files()),
        )


@dataclass(frozen=True)
class ServerIdentity:
    """A server's identity and GTID positions, as failover code and tests compare them."""

    port: int
    server_id: int
    gtid_domain_id: int
    gtid_binlog_pos: str
    gtid_current_pos: str
    gtid_slave_pos: str
    read_only: bool
    log_slave_updates: bool
    server_uuid: str | None  # None on MariaDB (it has no @@server_uuid)
    binlog_file: str
    binlog_files: tuple[str, ...]

    def as_dict(self) -> dict:
        return {
            "port": self.port, "server_id": self.server_id, "server_uuid": self.server_uuid,
            "gtid_domain_id": self.gtid_domain_id, "gtid_binlog_pos": self.gtid_binlog_pos,
            "gtid_current_pos": self.gtid_current_pos, "gtid_slave_pos": self.gtid_slave_pos,
            "read_only": self.read_only, "log_slave_updates": self.log_slave_updates,
            "binlog_file": self.binlog_file, "binlog_files": list(self.binlog_files),
        }
