"""Process bookkeeping shared by the devstack launchers: pid files, liveness, free ports.

We stop only processes we started, so every check looks at the pid *and* at the process's
command line: a pid file left behind after a reboot may name somebody else's process.
"""

from __future__ import annotations

import os
import random
import signal
import socket
import time
from pathlib import Path


def read_pid(pid_file: Path) -> int | None:
    try:
        text = Path(pid_file).read_text().strip()
    except (FileNotFoundError, PermissionError):
        return None
    return int(text) if text.isdigit() else None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie has exited; it only waits for its parent to reap it.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return True


def process_mentions(pid: int, needle: str) -> bool:
    """Whether the process's command line contains ``needle`` (our datadir or data dir)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except FileNotFoundError:
        return False
    return needle in cmdline


def wait_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.1)
    return not pid_alive(pid)


def terminate(pid: int, timeout_s: float) -> None:
    """SIGTERM, wait, then SIGKILL if it is still there."""
    os.kill(pid, signal.SIGTERM)
    if not wait_gone(pid, timeout_s):
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid, 10)


# free_port's ports lie at or above this and below the kernel's ephemeral range.
PORT_FLOOR = 20_000


def _ephemeral_low() -> int:
    """The lowest port the kernel gives an outbound connection (Linux's default where it cannot tell)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32_768


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now for a server started next to listen on, chosen below the kernel's ephemeral
    range. A port from ``bind(0)`` lies in that range, where any outbound connection of any process
    may take it as its local port before the server binds it: a busy test run saw a Dagster
    webserver fail with "address already in use" so. Where the range leaves no room below it,
    ``bind(0)`` as before."""
    low = _ephemeral_low()
    for _ in range(100 if low - PORT_FLOOR > 1_000 else 0):
        port = random.randrange(PORT_FLOOR, low)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def two_free_ports(host: str = "127.0.0.1") -> tuple[int, int]:
    """Two distinct free ports (two calls of :func:`free_port` may give the same one), e.g. a
    stand-in's FE and BE."""
    first, second = free_port(host), free_port(host)
    while second == first:
        second = free_port(host)
    return first, second


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False
