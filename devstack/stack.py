"""The local stack: a private MariaDB and the Doris stand-in, under one directory.

``up`` is idempotent and remembers the ports it chose in ``stack.json`` so that ``status``,
``down`` and a second ``up`` find the same processes. ``down`` stops exactly what ``up``
started (by pid, checked against the command line) and keeps the data.

``up(replica=True)`` also starts a MariaDB replica of the primary (GTID replication,
``devstack/mysql_replica.py``) for failover tests; ``status`` then reports both servers' identities
and GTID positions.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from devstack.mysql import MariaDBServer
from devstack.mysql_replica import MariaDBReplica
from devstack.procs import pid_alive, process_mentions, read_pid, terminate
from devstack.tls import TlsFiles

DEFAULT_DIR = Path(".tidemark/devstack")
DORIS_USER = "root"
DORIS_PASSWORD = ""


def doris_available() -> bool:
    """The stand-in is its own package; until it exists the stack runs MariaDB alone."""
    return importlib.util.find_spec("devstack.doris") is not None


@dataclass
class DorisStandIn:
    """The Doris stand-in as a child process (``python -m devstack.doris``)."""

    base_dir: Path
    fe_port: int = 8030
    be_port: int = 8040
    host: str = "127.0.0.1"
    user: str = DORIS_USER
    password: str = DORIS_PASSWORD
    txn_timeout_s: float | None = None  # Doris's precommit timeout; None: the stand-in's default (3600 s)
    # Doris FE max_running_txn_num_per_db; None: the stand-in's default (100, as Doris)
    max_running_txn_num_per_db: int | None = None
    tls: TlsFiles | None = None  # HTTPS on both ports (certificate and key; clients trust tls.ca)
    # the Doris release it reports (devstack/doris/version.py); None: the stand-in's default, a 2.1
    doris_version: str | None = None

    def __post_init__(self) -> None:
        self.base_dir = Path(self.base_dir).resolve()
        self.data_dir = self.base_dir / "data"
        self.pid_file = self.base_dir / "doris.pid"
        self.log_file = self.base_dir / "doris.log"

    @property
    def fe_http(self) -> str:
        return f"{self.host}:{self.fe_port}"

    @property
    def be_http(self) -> str:
        return f"{self.host}:{self.be_port}"

    @property
    def scheme(self) -> str:
        return "https" if self.tls is not None else "http"

    @property
    def fe_url(self) -> str:
        """The FE's base URL (``https://…`` when serving TLS)."""
        return f"{self.scheme}://{self.fe_http}"

    def pid(self) -> int | None:
        pid = read_pid(self.pid_file)
        if pid and pid_alive(pid) and process_mentions(pid, str(self.data_dir)):
            return pid
        return None

    def healthy(self) -> bool:
        try:
            verify = str(self.tls.ca) if self.tls is not None else True
            return requests.get(f"{self.fe_url}/api/health", timeout=2, verify=verify).status_code == 200
        except requests.RequestException:
            return False

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the stand-in (unless it already runs) and wait until its FE answers.

        A child killed by a signal before it answered (nothing in its log: a SIGKILL meant for a
        process group whose number it now holds, the OOM killer) is started once more, and the
        first ending is written to the log; an exit with a status (a port taken, a bad argument)
        is an error at once, with the log's tail.
        """
        for attempt in (1, 2):
            child = self._launch() if self.pid() is None else None
            ended = self._wait_healthy(child, timeout_s)
            if ended is None:
                return
            if attempt == 1 and ended < 0:
                with open(self.log_file, "a") as log:
                    log.write(f"devstack: the stand-in was killed by signal {-ended} before it answered; "
                              "starting it once more\n")
                continue
            break
        tail = self.log_file.read_text(errors="replace")[-2000:] if self.log_file.exists() else ""
        how = f"did not answer within {timeout_s:.0f} s" if ended == 0 else (
            f"was killed by signal {-ended}" if ended < 0 else f"exited with status {ended}")
        raise RuntimeError(f"The Doris stand-in on {self.fe_http} {how}; log tail:\n{tail}")

    def _launch(self) -> subprocess.Popen:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cmd = [
            # faulthandler: a crash of the interpreter or an extension prints its stack to the log
            sys.executable, "-X", "faulthandler", "-m", "devstack.doris",
            "--host", self.host,
            "--fe-port", str(self.fe_port),
            "--be-port", str(self.be_port),
            "--data-dir", str(self.data_dir),
            "--user", self.user,
            *(["--txn-timeout-s", str(self.txn_timeout_s)] if self.txn_timeout_s is not None else []),
            *(["--max-running-txn-num-per-db", str(self.max_running_txn_num_per_db)]
              if self.max_running_txn_num_per_db is not None else []),
            *(["--tls-cert", str(self.tls.cert), "--tls-key", str(self.tls.key)] if self.tls is not None else []),
            *(["--doris-version", self.doris_version] if self.doris_version is not None else []),
        ]
        log = open(self.log_file, "ab")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            # The password by the environment: a command line is visible to every local user.
            env={**os.environ, "PYTHONUNBUFFERED": "1", "DORIS_STANDIN_PASSWORD": self.password},
        )
        log.close()
        self.pid_file.write_text(str(proc.pid))
        return proc

    def _wait_healthy(self, child: subprocess.Popen | None, timeout_s: float) -> int | None:
        """None once the FE answers; else how it ended: the child's return code (negative: the
        signal), or 0 when it still runs but did not answer in time."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.healthy():
                return None
            if child is not None and child.poll() is not None:
                return child.returncode or 1
            if child is None and self.pid() is None:
                return 1
            time.sleep(0.2)
        return 0

    def stop(self, timeout_s: float = 30.0) -> bool:
        pid = self.pid()
        if pid is None:
            return False
        terminate(pid, timeout_s)
        return True

    # ---- the stand-in's admin API (devstack/doris/admin.py) --------------------------------------
    def _admin(self, method: str, path: str, body: dict | None = None, port: int | None = None) -> dict:
        verify = str(self.tls.ca) if self.tls is not None else True
        url = f"{self.scheme}://{self.host}:{port or self.fe_port}/_standin/{path}"
        r = requests.request(method, url, json=body, timeout=10, verify=verify)
        r.raise_for_status()
        return r.json()

    def txn_stats(self) -> dict:
        """Running and peak transaction counts per database, the limit, and the loads begun per
        database and body format (``GET /_standin/txns``)."""
        return self._admin("GET", "txns")

    def reset_txn_peaks(self) -> dict:
        return self._admin("POST", "txns", {"reset_peak": True})

    def set_txn_limit(self, limit: int) -> dict:
        """Change ``max_running_txn_num_per_db`` of the running stand-in (for later begins)."""
        return self._admin("POST", "txns", {"max_running_txn_num_per_db": limit})

    def restart_node(self, node: str, downtime_s: float, unavailable_s: float = 0.0) -> dict:
        """Restart the stand-in's ``fe`` or ``be`` in place; returns once it is down (it comes back
        by itself). Asked on the other node's port, which stays up."""
        port = self.be_port if node == "fe" else self.fe_port
        return self._admin("POST", "restart", {"node": node, "downtime_s": downtime_s,
                                               "unavailable_s": unavailable_s}, port=port)

    def end_restart(self, node: str) -> dict | None:
        """End ``node``'s restart now (what is left of its downtime and 503 time is skipped); returns
        once it is up, with the restart's record (``aborted_txns``: the loads it killed). None when
        the node was not restarting."""
        port = self.be_port if node == "fe" else self.fe_port
        verify = str(self.tls.ca) if self.tls is not None else True
        url = f"{self.scheme}://{self.host}:{port}/_standin/restart"
        ended = requests.post(url, json={"node": node, "end": True}, timeout=60, verify=verify)
        if ended.status_code == 409:
            return None
        ended.raise_for_status()
        return self._admin("GET", "restart", port=port)["nodes"][node]["restarts"][-1]


class DevStack:
    """MariaDB plus the Doris stand-in, with the ports remembered in ``stack.json``.

    Ports not given explicitly come from ``stack.json`` (the ports this directory used last),
    else the defaults. Asking a running stack for other ports is an error, not a second stack.
    """

    def __init__(
        self,
        base_dir: Path = DEFAULT_DIR,
        mysql_port: int | None = None,
        doris_port: int | None = None,
        doris_be_port: int | None = None,
        host: str = "127.0.0.1",
        replica_port: int | None = None,
        doris_max_running_txn_num_per_db: int | None = None,
    ) -> None:
        self.base_dir = Path(base_dir).resolve()
        self.host = host
        saved = self._load_ports()
        given = {"mysql_port": mysql_port, "doris_port": doris_port, "doris_be_port": doris_be_port,
                 "replica_port": replica_port}
        defaults = {"mysql_port": 3307, "doris_port": 8030, "doris_be_port": 8040, "replica_port": 3308}
        ports = {k: given[k] if given[k] is not None else saved.get(k, defaults[k]) for k in defaults}
        self.mysql_port, self.doris_port, self.doris_be_port, self.replica_port = (
            ports["mysql_port"], ports["doris_port"], ports["doris_be_port"], ports["replica_port"]
        )
        # Whether `up` started a replica here (kept in stack.json so that status and down see it).
        self.with_replica = bool(saved.get("replica", False))
        self.mysql = MariaDBServer(self.base_dir / "mysql", port=self.mysql_port, host=host)
        self.replica = MariaDBReplica(self.base_dir / "mysql-replica", self.mysql, port=self.replica_port, host=host)
        self.doris = DorisStandIn(self.base_dir / "doris", self.doris_port, self.doris_be_port, host,
                                  max_running_txn_num_per_db=doris_max_running_txn_num_per_db)
        if saved and (self.mysql.pid() or self.doris.pid() or self.replica.pid()):
            clash = [k for k, v in given.items() if v is not None and v != saved.get(k)]
            if clash:
                raise RuntimeError(
                    f"The stack in {self.base_dir} is already running on other ports "
                    f"({', '.join(f'{k}={saved.get(k)}' for k in clash)}); run `tidemark devstack down "
                    f"--dir {base_dir}` first, or drop the port options."
                )

    def _ports_file(self) -> Path:
        return self.base_dir / "stack.json"

    def _load_ports(self) -> dict:
        try:
            return json.loads(self._ports_file().read_text())
        except (FileNotFoundError, ValueError):
            return {}

    def _save_ports(self) -> None:
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self._ports_file().write_text(
            json.dumps(
                {"mysql_port": self.mysql_port, "doris_port": self.doris_port, "doris_be_port": self.doris_be_port,
                 "replica_port": self.replica_port, "replica": self.with_replica}
            )
        )

    def up(self, replica: bool = False) -> dict:
        """Start what is not running; with ``replica`` (or when an earlier ``up`` started one) also the
        MariaDB replica, replicating from the primary by GTID."""
        self.with_replica = self.with_replica or replica
        self._save_ports()
        self.mysql.start()
        if self.with_replica:
            self.replica.start()
        if doris_available():
            self.doris.start()
            if self.doris.max_running_txn_num_per_db is not None:  # also when it was already running
                self.doris.set_txn_limit(self.doris.max_running_txn_num_per_db)
        return self.endpoints()

    def down(self) -> list[str]:
        stopped = []
        if self.doris.stop():
            stopped.append("doris")
        if self.replica.stop():
            stopped.append("mysql-replica")
        if self.mysql.stop():
            stopped.append("mysql")
        return stopped

    # ---- failover (devstack/mysql_replica.py) --------------------------------------------------
    def wait_replica_caught_up(self, timeout_s: float = 60.0) -> str:
        """Until the replica has applied all the primary binlogged; returns that GTID position."""
        return self.replica.wait_caught_up(timeout_s)

    def fail_over(self, timeout_s: float = 60.0) -> dict:
        """Wait for the replica to catch up, stop the primary, promote the replica; returns the
        promoted server's endpoint (clients point their host/port at it)."""
        self.wait_replica_caught_up(timeout_s)
        self.mysql.stop()
        self.replica.promote()
        return self.replica.endpoint.as_dict()

    def endpoints(self) -> dict:
        doris = None
        if doris_available():
            doris = {
                "fe_http": self.doris.fe_http,
                "be_http": self.doris.be_http,
                "user": DORIS_USER,
                "password": DORIS_PASSWORD,
            }
        out = {"mysql": self.mysql.endpoint.as_dict(), "doris": doris}
        if self.with_replica:
            out["mysql_replica"] = self.replica.endpoint.as_dict()
        return out

    def status(self) -> dict:
        out = {
            "mysql": {"running": self.mysql.running(), "pid": self.mysql.pid(), **self.mysql.endpoint.as_dict(),
                      **_identity(self.mysql)},
            "doris": {
                "available": doris_available(),
                "running": self.doris.pid() is not None and self.doris.healthy(),
                "pid": self.doris.pid(),
                "fe_http": self.doris.fe_http,
                "be_http": self.doris.be_http,
            },
        }
        if self.with_replica:
            running = self.replica.running()
            repl = self.replica.slave_status() if running else {}
            out["mysql_replica"] = {
                "running": running, "pid": self.replica.pid(), **self.replica.endpoint.as_dict(),
                **_identity(self.replica),
                "replicating": repl.get("Slave_IO_Running") == "Yes" and repl.get("Slave_SQL_Running") == "Yes",
                "primary": f"{repl['Master_Host']}:{repl['Master_Port']}" if repl.get("Master_Host") else None,
                "last_error": repl.get("Last_IO_Error") or repl.get("Last_SQL_Error") or None,
            }
        return out


def _identity(server: MariaDBServer) -> dict:
    """server_id, GTID positions, binlog file of a running server (nothing when it is stopped)."""
    if not server.running():
        return {}
    try:
        return server.identity().as_dict()
    except RuntimeError as e:  # answered ping, refused SQL (starting up / shutting down)
        return {"identity_error": str(e)}
