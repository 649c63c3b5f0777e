"""A second private MariaDB replicating from the devstack's primary by GTID, for failover tests.

The replica is a :class:`~devstack.mysql.MariaDBServer` of its own (datadir, port, socket, server id)
started with ``log_slave_updates=ON`` and ROW binlog, so every transaction it applies lands in *its*
binlog under the primary's GTID (``domain-server-seq``) — but in files of its own name
(``replica-bin.000001`` … by default, ``binlog.NNNNNN`` on the primary) and at its own positions,
which is what makes a file/position offset meaningless after a failover. ``min_binlog_index`` rotates
the replica's binlog until its current file is at least that number, and
:meth:`~devstack.mysql.MariaDBServer.flush_binary_logs` on the primary does the same there: so a test
can give the promoted replica lower-numbered files than the old primary's, or higher-numbered ones.

Replication starts from an empty ``gtid_slave_pos`` (``MASTER_USE_GTID=slave_pos``): the replica
replays the primary's binlog from its first transaction, so the primary's binlog must still hold its
whole history (a devstack primary does unless it was purged; :meth:`MariaDBReplica.start` refuses
with a clear error otherwise rather than start a replica with missing rows).

Failover, as an operator does it: :meth:`MariaDBReplica.wait_caught_up`, stop the primary,
:meth:`MariaDBReplica.promote` (``STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = OFF``), point
clients at the replica's port.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from devstack.mysql import CDC_PASSWORD, CDC_USER, MariaDBServer

log = logging.getLogger(__name__)

REPLICA_BINLOG_BASENAME = "replica-bin"
PROMOTED_MARKER = "promoted"


class ReplicationError(RuntimeError):
    """The replica cannot start replicating, or did not catch up in time."""


class MariaDBReplica(MariaDBServer):
    """A MariaDB replica of ``primary`` under ``base_dir``, replicating by GTID."""

    def __init__(self, base_dir: Path, primary: MariaDBServer, port: int = 3308, host: str = "127.0.0.1",
                 server_id: int = 2, binlog_basename: str = REPLICA_BINLOG_BASENAME, min_binlog_index: int = 1):
        if server_id == primary.server_id:
            raise ValueError(f"the replica needs a server id of its own (the primary's is {primary.server_id})")
        super().__init__(
            base_dir, port=port, host=host, server_id=server_id, binlog_basename=binlog_basename,
            extra_args=("--log-slave-updates=ON", "--read-only=ON",
                        f"--relay-log={Path(base_dir).resolve() / 'data' / 'relay-bin'}"),
            log_bootstrap=False,
        )
        self.primary = primary
        self.min_binlog_index = min_binlog_index

    def start(self, timeout_s: float = 60.0):  # type: ignore[override]
        """Start the server and (unless it already replicates) replication; a promoted server
        (:meth:`promote`, before a restart) starts as the primary it became, writable."""
        endpoint = super().start(timeout_s)
        self._rotate_to(self.min_binlog_index)
        if self.promoted():  # a primary now: --read-only=ON is for a replica
            self.root_sql("SET GLOBAL read_only = OFF;")
        elif not self._configured():
            self._check_primary_history()
            self.root_sql(
                f"CHANGE MASTER TO MASTER_HOST='{self.primary.host}', MASTER_PORT={self.primary.port}, "
                f"MASTER_USER='{CDC_USER}', MASTER_PASSWORD='{CDC_PASSWORD}', MASTER_CONNECT_RETRY=1, "
                "MASTER_USE_GTID=slave_pos;\nSTART SLAVE;")
            log.info("replica on port %d replicates from %s:%d by GTID", self.port, self.primary.host,
                     self.primary.port)
        return endpoint

    # -- state ---------------------------------------------------------------------------------

    def slave_status(self) -> dict[str, str]:
        """``SHOW SLAVE STATUS`` as a dict (empty when not a replica: never set up, or promoted)."""
        out = self.root_sql("SHOW SLAVE STATUS", vertical=True)
        status: dict[str, str] = {}
        for line in out.splitlines():
            key, sep, value = line.strip().partition(": ")
            if sep:
                status[key] = value
            elif line.strip().endswith(":"):
                status[line.strip()[:-1]] = ""
        return status

    def replicating(self) -> bool:
        s = self.slave_status()
        return s.get("Slave_IO_Running") == "Yes" and s.get("Slave_SQL_Running") == "Yes"

    def _configured(self) -> bool:
        return bool(self.slave_status().get("Master_Host"))

    def promoted(self) -> bool:
        """Whether :meth:`promote` made this server a primary (a marker in its directory: after a
        restart ``SHOW SLAVE STATUS`` is empty both for a promoted server and for a fresh one, and
        a promoted one must not be pointed back at its old primary)."""
        return (self.base_dir / PROMOTED_MARKER).exists()

    # -- operations ----------------------------------------------------------------------------

    def wait_caught_up(self, timeout_s: float = 60.0) -> str:
        """Wait until the replica has applied everything the primary has binlogged; returns that GTID
        position. Raises :class:`ReplicationError` with the replica's last errors on timeout."""
        target = self.primary.root_sql("SELECT @@gtid_binlog_pos").strip()
        if not target:
            return target
        deadline = time.monotonic() + timeout_s
        while True:
            left = max(1, int(deadline - time.monotonic()))
            waited = self.root_sql(f"SELECT MASTER_GTID_WAIT('{target}', {left})").strip()
            if waited == "0":
                return target
            if time.monotonic() >= deadline:
                s = self.slave_status()
                raise ReplicationError(
                    f"the replica on port {self.port} did not reach the primary's {target} in {timeout_s:.0f} s "
                    f"(at {self.root_sql('SELECT @@gtid_slave_pos').strip()}; IO: {s.get('Slave_IO_Running')} "
                    f"{s.get('Last_IO_Error', '')}; SQL: {s.get('Slave_SQL_Running')} {s.get('Last_SQL_Error', '')})")

    def promote(self) -> None:
        """Make this replica a primary: stop replicating, forget the old primary, accept writes."""
        self.root_sql("STOP SLAVE;\nRESET SLAVE ALL;\nSET GLOBAL read_only = OFF;")
        (self.base_dir / PROMOTED_MARKER).write_text(f"promoted; replicated from port {self.primary.port}\n")
        log.info("replica on port %d promoted", self.port)

    # -- helpers -------------------------------------------------------------------------------

    def _rotate_to(self, index: int) -> None:
        current = _file_index(self.current_binlog())
        if current < index:
            self.flush_binary_logs(index - current)

    def _check_primary_history(self) -> None:
        """An empty gtid_slave_pos replays the primary's binlog from its start: that start must be the
        primary's first transaction (the first file's Gtid_list is empty), else rows would be missing."""
        files = self.primary.binlog_files()
        if not files:
            raise ReplicationError(f"the primary on port {self.primary.port} has no binlog")
        events = self.primary.root_sql(f"SHOW BINLOG EVENTS IN '{files[0]}' LIMIT 3")
        for line in events.splitlines():
            cols = line.split("\t")
            if len(cols) >= 6 and cols[2] == "Gtid_list" and cols[5].strip() not in ("[]", ""):
                raise ReplicationError(
                    f"the primary's oldest binlog {files[0]} starts after GTIDs {cols[5].strip()} (older files "
                    "were purged): a replica replaying it from the start would miss rows. Start the replica "
                    "before purging, or from a fresh primary.")


def _file_index(name: str) -> int:
    return int(name.rsplit(".", 1)[1])
