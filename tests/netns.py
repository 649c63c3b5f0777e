"""Two "hosts" on one machine that are hosts: network namespaces of the test's own on a bridge.

``tests/orchestration/test_run_guard.py`` runs each host's processes in a network namespace
(``ip netns add``) with a veth pair into a bridge in the test's namespace, as two machines on one
LAN: each host has its own loopback, its own address (``10.x.y.2``, ``10.x.y.3``), its own
hostname (a UTS namespace, and an ``/etc/hosts`` of its own through ``/etc/netns/<name>/``), and
reaches what the machines share — PostgreSQL, MySQL, Doris, the Spark cluster — only at the
bridge's address (``10.x.y.1``), never at ``127.0.0.1``, which inside a namespace is the host's own
loopback with nothing on it.

What runs on the bridge's address: the test starts MariaDB, the Doris stand-in (whose 307 redirects
name the address it binds, so a load's redirect to the BE stays on the LAN) and the Spark master and
worker bound to it. The machine's PostgreSQL listens on ``127.0.0.1`` only, and is the server other
sessions and tests share: rather than change its ``listen_addresses`` (a restart under everyone)
or run a PostgreSQL of the test's own (``initdb`` as a non-root user, another cluster to clean up),
:class:`TcpForwarder` relays the bridge address's port 5432 to it byte for byte. The hosts speak the
PostgreSQL protocol to ``10.x.y.1:5432`` as to a remote server; a killed client's connection closes
through the relay as it would on the wire.

Names are unique per pytest process (its pid in hex, and a counter) and everything is removed on
any exit of the fixture (the ``finally`` of :meth:`Lan.close`, and ``atexit``); what a pytest killed
with ``kill -9`` left is removed by the next :class:`Lan` set up on the machine, which deletes the
namespaces, bridges and ``/etc/netns`` entries whose pytest pid is gone.
"""

from __future__ import annotations

import atexit
import contextlib
import ipaddress
import itertools
import logging
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from devstack.procs import pid_alive

logger = logging.getLogger(__name__)

PREFIX = "tmns"  # namespaces tmns-<pid hex>-<n>-<host>, bridges tmb<pid hex><n>, veths tmv<pid hex><n><i>
ETC_NETNS = Path("/etc/netns")
_counter = itertools.count()
_NAME = re.compile(rf"^{PREFIX}-([0-9a-f]+)-(\d+)-")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30, check=check)


def netns_usable() -> str | None:
    """None when this machine lets the test add a network namespace, else why not (for a failure
    that names it: the two-host test does not skip)."""
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        return "the 'ip' and 'unshare' commands are needed (iproute2, util-linux)"
    probe = f"{PREFIX}-{os.getpid():x}-probe"
    done = _ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"'ip netns add' failed: {done.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _kill_namespace_processes(netns: str) -> None:
    """SIGKILL what still runs in one of our namespaces (only processes the test started live there)."""
    done = _ip("netns", "pids", netns, check=False)
    for pid in (int(p) for p in done.stdout.split() if p.isdigit()):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _remove(netns_names: Sequence[str], links: Sequence[str]) -> None:
    for netns in netns_names:
        _kill_namespace_processes(netns)
        _ip("netns", "del", netns, check=False)
        shutil.rmtree(ETC_NETNS / netns, ignore_errors=True)
    for link in links:
        _ip("link", "del", link, check=False)


def sweep_stale() -> None:
    """Remove the namespaces and bridges of test processes that are gone (a pytest killed with
    ``kill -9`` ran no clean-up)."""
    listed = _ip("netns", "list", check=False).stdout.split("\n")
    names = [line.split()[0] for line in listed if line.strip()]
    stale = [n for n in names if (m := _NAME.match(n)) and not pid_alive(int(m.group(1), 16))]
    tags = {f"{m.group(1)}{m.group(2)}" for n in stale if (m := _NAME.match(n))}
    links = [f"tmb{tag}" for tag in tags]
    if stale:
        logger.warning("removing network namespaces left by a test process that is gone: %s", stale)
    _remove(stale, links)
    if ETC_NETNS.is_dir():
        for entry in ETC_NETNS.iterdir():
            if (m := _NAME.match(entry.name)) and not pid_alive(int(m.group(1), 16)):
                shutil.rmtree(entry, ignore_errors=True)


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.200-249.x.0 that no interface of this machine is in."""
    used = [ipaddress.ip_interface(a).network for a in re.findall(r"inet (\S+)", _ip("-4", "addr").stdout)]
    for _ in range(200):
        net = ipaddress.ip_network(f"10.{random.randint(200, 249)}.{random.randint(0, 255)}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free 10.x.y.0/24 for the test's bridge")


@dataclass(frozen=True)
class Host:
    """One namespace: its name for ``ip netns exec``, its address on the LAN and its hostname."""

    label: str
    netns: str
    address: str
    hostname: str

    def argv(self, command: Sequence[str], own_pids: bool = False) -> list[str]:
        """``command`` run on this host: in its network namespace, with its hostname (a UTS
        namespace), and with ``own_pids`` in a PID namespace of its own (``unshare --fork``: the
        pid the caller sees is then ``unshare``'s; without it ``ip netns exec``, ``unshare`` and
        ``sh`` each exec the next, so the caller's pid is the command's)."""
        pid_ns = ["--pid", "--fork", "--mount-proc"] if own_pids else []
        return ["ip", "netns", "exec", self.netns, "unshare", "--uts", *pid_ns,
                "sh", "-c", 'hostname "$0" && exec "$@"', self.hostname, *command]


class Lan:
    """A bridge ``tmb…`` at ``10.x.y.1/24`` in the test's namespace and one namespace per host label,
    each joined to the bridge by a veth pair (its end renamed ``eth0`` in the namespace)."""

    def __init__(self, labels: Sequence[str] = ("host_a", "host_b")):
        sweep_stale()
        pid_hex, number = f"{os.getpid():x}", next(_counter)
        self.tag = f"{pid_hex}{number}"
        self.bridge = f"tmb{self.tag}"
        net = _free_subnet()
        addresses = list(net.hosts())
        self.address = str(addresses[0])  # the shared services' address
        self.prefixlen = net.prefixlen
        self.hosts: dict[str, Host] = {}
        self._links = [self.bridge]
        self._closed = False
        atexit.register(self.close)
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            _ip("addr", "add", f"{self.address}/{self.prefixlen}", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            hosts_file = Path("/etc/hosts").read_text() if Path("/etc/hosts").exists() else ""
            for i, label in enumerate(labels):
                host = Host(label, f"{PREFIX}-{pid_hex}-{number}-{label.replace('_', '')}",
                            str(addresses[i + 1]), label.replace("_", "-"))
                self.hosts[label] = host
                self._add_host(host, f"tmv{self.tag}{i}", f"tmp{self.tag}{i}")
            for host in self.hosts.values():
                # the host's name resolves to its address (Java's InetAddress.getLocalHost, Spark)
                (ETC_NETNS / host.netns).mkdir(parents=True, exist_ok=True)
                lines = "".join(f"{h.address} {h.hostname}\n" for h in self.hosts.values())
                (ETC_NETNS / host.netns / "hosts").write_text(f"{hosts_file.rstrip()}\n{lines}")
        except BaseException:
            self.close()
            raise

    def _add_host(self, host: Host, outer: str, inner: str) -> None:
        _ip("netns", "add", host.netns)
        self._links.append(outer)
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", host.netns)
        _ip("link", "set", outer, "master", self.bridge)
        _ip("link", "set", outer, "up")
        _ip("-n", host.netns, "link", "set", inner, "name", "eth0")
        _ip("-n", host.netns, "addr", "add", f"{host.address}/{self.prefixlen}", "dev", "eth0")
        _ip("-n", host.netns, "link", "set", "eth0", "up")
        _ip("-n", host.netns, "link", "set", "lo", "up")

    def close(self) -> None:
        """Kill what still runs in the namespaces, delete them, the veths and the bridge."""
        if self._closed:
            return
        self._closed = True
        _remove([h.netns for h in self.hosts.values()], self._links)


class TcpForwarder:
    """Relays ``listen_host:listen_port`` to ``target`` byte for byte, a thread per direction of each
    connection: the LAN's door to a server that listens on the machine's loopback only."""

    def __init__(self, listen_host: str, listen_port: int, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self._listener = socket.create_server((listen_host, listen_port), reuse_port=False)
        self.address = self._listener.getsockname()
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="tcp-forwarder", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            with self._lock:
                self._sockets.difference_update((src, dst))

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for sock in list(self._sockets):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
