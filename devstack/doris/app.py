"""Process wiring: command line, the two listeners, the transaction ticker, clean shutdown."""

from __future__ import annotations

import argparse
import gc
import os
import signal
import ssl
import sys
import threading
from pathlib import Path

from .faults import FaultRegistry
from .http_base import PortServer
from .query import QueryExecutor
from .restarts import Node, Restarts
from .server import make_server
from .storage import Storage
from .stream_load_execution import StreamLoader
from .transactions import DEFAULT_MAX_RUNNING_TXN_NUM_PER_DB, Ticker, TxnManager
from .version import DEFAULT_VERSION, VERSION_ENV, StandInVersion

TXN_LIMIT_ENV = "DORIS_STANDIN_MAX_RUNNING_TXN_NUM_PER_DB"


class StandIn:
    """One Doris "cluster": one FE, one BE, one storage file."""

    def __init__(self, host: str, fe_port: int, be_port: int, data_dir: Path, user: str = "root",
                 password: str = "", txn_timeout_s: float = 3600.0, label_keep_s: float = 43200.0,
                 label_num_threshold: int = 2000, verbose: bool = False, tls_cert: Path | None = None,
                 tls_key: Path | None = None,
                 max_running_txn_num_per_db: int = DEFAULT_MAX_RUNNING_TXN_NUM_PER_DB,
                 version: str = DEFAULT_VERSION) -> None:
        self.host = host
        self.version = StandInVersion.parse(version)  # what /api/fe_version_info says (devstack/doris/version.py)
        # HTTPS on both ports when given a certificate and key, as Doris with ``enable_https``: the
        # FE's redirects then name the BE's https address.
        self.ssl_context: ssl.SSLContext | None = None
        if tls_cert is not None:
            self.ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.ssl_context.load_cert_chain(str(tls_cert), str(tls_key) if tls_key is not None else None)
        self.scheme = "https" if self.ssl_context is not None else "http"
        self.fe_port = fe_port
        self.be_port = be_port
        self.user = user
        self.password = password
        self.verbose = verbose
        self.storage = Storage(data_dir)
        self.txns = TxnManager(self.storage, txn_timeout_s, label_keep_s, label_num_threshold,
                               max_running_txn_num_per_db)
        self.loader = StreamLoader(self.storage, self.txns, data_dir / "error_log", arrow=self.version.reads_arrow)
        self.executor = QueryExecutor(self.storage)
        self.faults = FaultRegistry()
        self.ticker = Ticker(self.txns, min(1.0, max(0.05, txn_timeout_s / 10)))
        self.restarts = Restarts(self)
        self.fe = make_server(self, "fe")
        self.be = make_server(self, "be")
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self.ticker.start()
        self._serve(self.be)
        self._serve(self.fe)

    def _serve(self, srv: PortServer) -> None:
        t = threading.Thread(target=srv.serve_forever, name=f"{srv.role}-http", kwargs={"poll_interval": 0.2},
                             daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        self.restarts.close()
        self.ticker.stop_event.set()
        for srv in (self.fe, self.be):
            srv.shutdown()  # returns at once for a listener a restart has already closed
            srv.server_close()
        self.storage.close()

    # ---- node restarts (devstack/doris/restarts.py) ------------------------------------------------
    def server_of(self, node: Node) -> PortServer:
        return self.fe if node is Node.FE else self.be

    def reopen(self, node: Node) -> None:
        """A restarted node listens again on its port."""
        srv = make_server(self, str(node))
        if node is Node.FE:
            self.fe = srv
        else:
            self.be = srv
        self._serve(srv)

    def restart(self, node: Node | str, downtime_s: float, unavailable_s: float = 0.0, *, wait: bool = False) -> None:
        """Restart the FE or the BE in place (see :mod:`devstack.doris.restarts`)."""
        self.restarts.restart(Node(node), downtime_s, unavailable_s, wait=wait)

    def be_down(self) -> bool:
        """The FE's view of its one BE: dead while it restarts or a ``be_down`` fault is active."""
        return self.restarts.be_down() or self.faults.be_down()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m devstack.doris",
        description="Local one-process Apache Doris stand-in speaking Doris' FE/BE HTTP protocol "
                    "(Stream Load, 2PC, query API) on an embedded DuckDB store.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind and to advertise in redirects")
    p.add_argument("--fe-port", type=int, default=8030, help="FE HTTP port (default 8030)")
    p.add_argument("--be-port", type=int, default=8040, help="BE HTTP port (default 8040)")
    p.add_argument("--data-dir", required=True, type=Path, help="directory for the durable state")
    p.add_argument("--user", default="root", help="the one user (default root)")
    p.add_argument("--password", default=None,
                   help="its password (default: $DORIS_STANDIN_PASSWORD, else empty as a fresh Doris); "
                        "prefer the environment variable: a command line is visible to every local user")
    p.add_argument("--tls-cert", type=Path, default=None, help="PEM certificate: serve HTTPS on both ports")
    p.add_argument("--tls-key", type=Path, default=None, help="PEM private key of --tls-cert")
    p.add_argument("--txn-timeout-s", type=float, default=3600.0,
                   help="PRECOMMITTED transactions are aborted after this many seconds "
                        "(Doris stream_load_default_precommit_timeout_second, default 3600)")
    p.add_argument("--label-keep-max-s", type=float, default=43200.0,
                   help="finished labels are forgotten after this many seconds "
                        "(Doris streaming_label_keep_max_second, default 43200)")
    p.add_argument("--label-num-threshold", type=int, default=2000,
                   help="max finished transactions kept per database (Doris label_num_threshold, default 2000)")
    p.add_argument("--max-running-txn-num-per-db", type=int, default=None,
                   help="begun, not yet finished transactions a database may hold; a load beyond it is refused "
                        f"(Doris FE max_running_txn_num_per_db; default ${TXN_LIMIT_ENV}, else "
                        f"{DEFAULT_MAX_RUNNING_TXN_NUM_PER_DB})")
    p.add_argument("--doris-version", default=None,
                   help=f"the Doris release it reports (GET /api/fe_version_info); before 2.1 it refuses format=arrow "
                        f"loads as that Doris does (default ${VERSION_ENV}, else {DEFAULT_VERSION})")
    p.add_argument("--verbose", action="store_true", help="log every HTTP request")
    return p


# The cyclic garbage collector's first-generation threshold in the stand-in's process (CPython's
# default is 700): a request allocates a few hundred containers (headers, JSON, Arrow wrappers) that
# reference counting frees, yet each 700 allocations started a collection.
GC_GEN0_THRESHOLD = 20_000


def _tune_gc() -> None:
    """Once started: the objects start-up made (modules, DuckDB's and pyarrow's wrappers, sqlglot's
    tables) are moved out of the collector's sight (``gc.freeze``), and young collections run less
    often. py-spy and perf put ~4-5 % of the stand-in's CPU over 300 small tables in the collector."""
    gc.collect()
    gc.freeze()
    _gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GC_GEN0_THRESHOLD, gen1, gen2)


def main(argv: list[str] | None = None) -> int:
    """Run the stand-in in the foreground until SIGTERM/SIGINT."""
    args = _parser().parse_args(argv)
    password = args.password if args.password is not None else os.environ.get("DORIS_STANDIN_PASSWORD", "")
    limit = args.max_running_txn_num_per_db
    if limit is None:
        limit = int(os.environ.get(TXN_LIMIT_ENV) or DEFAULT_MAX_RUNNING_TXN_NUM_PER_DB)
    app = StandIn(args.host, args.fe_port, args.be_port, args.data_dir, args.user, password,
                  args.txn_timeout_s, args.label_keep_max_s, args.label_num_threshold, args.verbose,
                  args.tls_cert, args.tls_key, limit,
                  args.doris_version or os.environ.get(VERSION_ENV) or DEFAULT_VERSION)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        print(f"doris stand-in: signal {signum}, shutting down", flush=True)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    app.start()
    _tune_gc()
    print(f"doris stand-in: FE {app.scheme}://{args.host}:{args.fe_port} BE {app.scheme}://{args.host}:{args.be_port} "
          f"data {args.data_dir}", flush=True)
    while not stop.wait(0.5):
        pass
    app.stop()
    print("doris stand-in: stopped", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
