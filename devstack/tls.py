"""Throw-away TLS material for the local stack and the tests: a CA and a server certificate.

``openssl`` makes them (no Python crypto dependency): a self-signed CA, and a server key and
certificate signed by it whose subject alternative names are the addresses the servers listen on
(``127.0.0.1``, ``localhost``), so a client may verify the chain (``verify-ca``) and the name
(``verify-identity``). Each call makes a new CA, so a second call gives a "wrong" CA for tests
that must see verification fail.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class TlsFiles:
    """PEM files: the CA's certificate, and the server's certificate and private key."""

    ca: Path
    cert: Path
    key: Path


def _openssl(*args: str, cwd: Path) -> None:
    exe = shutil.which("openssl")
    if exe is None:
        raise RuntimeError("openssl is not installed; install it with `apt-get install -y openssl`")
    done = subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {args[0]} failed: {done.stderr.strip()[-1000:]}")


def make_certificates(directory: Path, names: tuple[str, ...] = ("127.0.0.1", "localhost"),
                      common_name: str = "tidemark-test") -> TlsFiles:
    """A new CA and a server certificate for ``names`` under ``directory`` (created)."""
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    sans = ",".join(f"IP:{n}" if n.replace(".", "").isdigit() or ":" in n else f"DNS:{n}" for n in names)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-keyout", "ca-key.pem",
             "-out", "ca.pem", "-subj", f"/CN={common_name} CA", cwd=directory)
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server-key.pem", "-out", "server.csr",
             "-subj", f"/CN={common_name}", cwd=directory)
    (directory / "server.ext").write_text(f"subjectAltName={sans}\nbasicConstraints=CA:FALSE\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
             "-days", "30", "-out", "server.pem", "-extfile", "server.ext", cwd=directory)
    return TlsFiles(directory / "ca.pem", directory / "server.pem", directory / "server-key.pem")
