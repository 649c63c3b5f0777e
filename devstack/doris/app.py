"""Process wiring: command line, the two listeners, the transaction ticker, clean shutdown."""

from __future__ import annotations

import argparse
import os
import signal
import ssl
import sys
import threading
from pathlib import Path

from .faults import FaultRegistry
from .query import QueryExecutor
from .server import make_servers
from .storage import Storage
from .stream_load_execution import StreamLoader
from .transactions import Ticker, TxnManager


class StandIn:
    """One Doris "cluster": one FE, one BE, one storage file."""

    def __init__(self, host: str, fe_port: int, be_port: int, data_dir: Path, user: str = "root",
                 password: str = "", txn_timeout_s: float = 3600.0, label_keep_s: float = 43200.0,
                 label_num_threshold: int = 2000, verbose: bool = False, tls_cert: Path | None = None,
                 tls_key: Path | None = None) -> None:
        self.host = host
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
        self.txns = TxnManager(self.storage, txn_timeout_s, label_keep_s, label_num_threshold)
        self.loader = StreamLoader(self.storage, self.txns, data_dir / "error_log")
        self.executor = QueryExecutor(self.storage)
        self.faults = FaultRegistry()
        self.ticker = Ticker(self.txns, min(1.0, max(0.05, txn_timeout_s / 10)))
        self.fe, self.be = make_servers(self)
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self.ticker.start()
        for srv, name in ((self.be, "be-http"), (self.fe, "fe-http")):
            t = threading.Thread(target=srv.serve_forever, name=name, kwargs={"poll_interval": 0.2}, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self) -> None:
        self.ticker.stop_event.set()
        for srv in (self.fe, self.be):
            srv.shutdown()
            srv.server_close()
        self.storage.close()


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
    p.add_argument("--verbose", action="store_true", help="log every HTTP request")
    return p


def main(argv: list[str] | None = None) -> int:
    """Run the stand-in in the foreground until SIGTERM/SIGINT."""
    args = _parser().parse_args(argv)
    password = args.password if args.password is not None else os.environ.get("DORIS_STANDIN_PASSWORD", "")
    app = StandIn(args.host, args.fe_port, args.be_port, args.data_dir, args.user, password,
                  args.txn_timeout_s, args.label_keep_max_s, args.label_num_threshold, args.verbose,
                  args.tls_cert, args.tls_key)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        print(f"doris stand-in: signal {signum}, shutting down", flush=True)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    app.start()
    print(f"doris stand-in: FE {app.scheme}://{args.host}:{args.fe_port} BE {app.scheme}://{args.host}:{args.be_port} "
          f"data {args.data_dir}", flush=True)
    while not stop.wait(0.5):
        pass
    app.stop()
    print("doris stand-in: stopped", flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
