"""HTTP plumbing to a Doris cluster: nodes, Basic auth, redirects, retries, timeouts.

The transport is urllib3: one connection pool per node (``scheme://host:port``), kept for the
client's life, and a request is one ``urlopen`` with urllib3's own retries and redirects off. A
binlog batch over hundreds of tables sends a load and a commit per table every few seconds, so
what a request costs in this process counts: ``requests`` spent about as much again as urllib3
itself on each one (preparing and merging the request, cookies, the environment's proxy settings,
hooks, building its response), none of which a Doris client uses. An answer is a
:class:`DorisResponse` (status, headers, the body read whole, its URL); a failure to reach a node
is raised as the ``requests`` exception it has always been (``requests.ConnectionError``,
``requests.Timeout``, ``requests.exceptions.SSLError``), carrying the node it was sent to.

Why redirects are followed by hand: a Doris FE answers a stream load with a 307 to a BE whose
``Location`` carries ``user:password@``; the body (a stream) must be produced again for the BE
and the credentials sent again, so :meth:`DorisHttpClient.send` follows redirects itself: it strips the user-info from the new URL (never logged), sends our own Basic auth again,
refuses an https→http downgrade, and builds the body afresh for every hop and every retry from a
*body factory* (a callable returning bytes or an iterator of bytes).

Retries: connection errors, timeouts and HTTP 5xx are retried ``max_retries`` times with
exponential backoff, moving to the next node of the list; anything Doris answers with a
well-formed body is returned to the caller, which knows what the body means. When the last failure
is what a restarting node looks like (no live BE, HTTP 503, a refused connection) the error is
:class:`DorisUnavailableError`, whose message says to run again once Doris is back.
"""

from __future__ import annotations

import base64
import itertools
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urljoin, urlsplit, urlunsplit

import requests
import urllib3
from urllib3.exceptions import ConnectTimeoutError, NewConnectionError, ReadTimeoutError
from urllib3.exceptions import HTTPError as Urllib3Error
from urllib3.exceptions import SSLError as Urllib3SSLError
from urllib3.util.ssl_ import create_urllib3_context

from cdc_core.doris.errors import (
    DorisAuthError,
    DorisConnectionError,
    DorisResponseError,
    DorisUnavailableError,
    is_outage,
    outage_advice,
    redact,
)

log = logging.getLogger(__name__)

BodyFactory = Callable[[], bytes | Iterable[bytes] | None]
REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5
# Within ``reusing_redirects``: how many more loads and 2PC operations go to the BE an FE last
# redirected a load to, and for how long, before an FE is asked again.
REDIRECT_REUSES = 16
REDIRECT_REUSE_S = 5.0


def _split_nodes(text: str | Sequence[str] | None) -> tuple[str, ...]:
    """``host:port`` of each node (a leading ``http://`` / ``https://`` is the client's scheme)."""
    if not text:
        return ()
    items = text.split(",") if isinstance(text, str) else list(text)
    nodes = tuple(re.sub(r"(?i)^https?://", "", n.strip()).rstrip("/") for n in items if n and n.strip())
    for node in nodes:
        host, sep, port = node.rpartition(":")
        if not sep or not host or not port.isdigit():
            raise ValueError(f"Doris node {node!r} must be 'host:http_port'")
    return nodes


def _strip_userinfo(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


class DorisResponse:
    """What a node answered: ``status_code``, ``headers`` (case-insensitive), ``content`` (the body,
    read whole), ``url`` (where the request went) — the parts of a ``requests.Response`` the sink
    reads, without building one."""

    __slots__ = ("status_code", "headers", "content", "url")

    def __init__(self, status_code: int, headers: Mapping[str, str], content: bytes, url: str):
        self.status_code, self.headers, self.content, self.url = status_code, headers, content, url

    @property
    def text(self) -> str:
        """The body as text (the charset the answer names, else UTF-8; undecodable bytes replaced)."""
        charset = re.search(r"charset=([\w.-]+)", self.headers.get("Content-Type", "") or "")
        try:
            return self.content.decode(charset.group(1) if charset else "utf-8", errors="replace")
        except LookupError:  # a charset Python does not know
            return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body as JSON; ``ValueError`` when it is not."""
        return json.loads(self.content)

    def close(self) -> None:
        """Nothing to release: the body was read and the connection went back to its pool."""

    def __repr__(self) -> str:
        return f"<DorisResponse [{self.status_code}]>"


class _BasicAuth:
    """The ``Authorization`` header's value, built once; never shown by ``repr``."""

    __slots__ = ("header",)

    def __init__(self, username: str, password: str):
        userpass = f"{username}:{password}"
        try:  # as requests and curl encode it
            raw = userpass.encode("latin1")
        except UnicodeEncodeError:
            raw = userpass.encode()
        self.header = "Basic " + base64.b64encode(raw).decode("ascii")

    def __repr__(self) -> str:
        return "<Basic auth>"


class _RequestOf:
    """What a ``requests`` exception's ``request`` carries for :func:`_node_of`: the URL it went to."""

    __slots__ = ("url",)

    def __init__(self, url: str):
        self.url = url


_NO_RETRIES = urllib3.Retry(total=False, redirect=False)
# A streamed body (an iterator of chunks) at most this large goes whole, with a Content-Length:
# one write instead of a chunk framing and a terminator each (a binlog batch's loads are small).
WHOLE_BODY_BYTES = 256 * 1024
POOL_SIZE = 32
"""Connections kept per node. At least the requests one client sends at once (a snapshot's 16
commit streams, a batch's 8 loads and 8 commits, the prepare threads): past it urllib3 opens a
connection for the request all the same, then closes it and logs a warning for each."""


class RetryableAnswer(requests.ConnectionError):
    """Doris answered, but with a transient refusal (e.g. ``No backend alive.``): retry like a lost connection.
    ``node``: who answered; ``answer``: what it said."""

    def __init__(self, node: str, answer: str):
        super().__init__(f"FE {node}: {answer}")
        self.node, self.answer = node, answer

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (a Spark task's error) with both fields
        return (RetryableAnswer, (self.node, self.answer))


@dataclass(frozen=True)
class Timeouts:
    """Seconds: ``connect`` to open a socket, ``read`` to wait for an answer (a load can take long)."""

    connect: float = 10.0
    read: float = 600.0

    def as_tuple(self) -> tuple[float, float]:
        return (self.connect, self.read)


_SOCKET_REASON = re.compile(r"\[Errno -?\d+\] [^'\")\]]+|timed out|Name or service not known|"
                            r"Connection refused|Connection reset by peer|Remote end closed connection[^'\")]*")


def connection_reason(exc: BaseException) -> str:
    """What the socket said about a failed request, on one line (``[Errno 111] Connection refused``,
    ``Read timed out``), else the exception's class and first line."""
    text = str(exc)
    found = _SOCKET_REASON.search(text)
    if found:
        return f"{type(exc).__name__} ({found.group(0).strip()})"
    first = text.strip().splitlines()[0] if text.strip() else ""
    return f"{type(exc).__name__}: {first[:200]}"


def _node_of(failed: Any) -> str | None:
    """``host:port`` of the request a failure (its ``request``) or an answer (its ``url``) belongs to."""
    url = failed.url if isinstance(failed, DorisResponse) else getattr(getattr(failed, "request", None), "url", None)
    return urlsplit(url).netloc.rsplit("@", 1)[-1] if isinstance(url, str) and url else None


def _body_of(body: BodyFactory | None) -> bytes | Iterable[bytes] | None:
    """A request's body, made afresh (for every hop and every retry): no body for an empty one
    (a PUT then says ``Content-Length: 0``, as requests sent it), whole bytes for a small stream
    (``WHOLE_BODY_BYTES``), else the stream (sent chunked)."""
    data = body() if body is not None else None
    if data is None or isinstance(data, bytes | bytearray):
        return data or None
    chunks = iter(data)
    head: list[bytes] = []
    size = 0
    for chunk in chunks:
        head.append(chunk)
        size += len(chunk)
        if size > WHOLE_BODY_BYTES:
            return itertools.chain(head, chunks)
    return b"".join(head) or None


def _one_line(text: str) -> str:
    return " ".join(text.split())


class DorisHttpClient:
    """One Doris cluster as seen over HTTP: FE nodes, optional BE nodes, credentials, retry policy.

    ``load_route`` decides where stream loads go:

    * ``"benodes"`` — straight to the configured BEs (round robin, failing over);
    * ``"redirect"`` — to an FE, following its 307 to a BE (the BE is resolved first with a
      body-less request, so the data is streamed once, to the BE);
    * ``"backends"`` — to a BE taken from ``GET /api/backends?is_alive=true`` (what
      flink-doris-connector does by default), falling back to ``"redirect"`` when the FE
      cannot list its BEs.
    """

    def __init__(
        self,
        fenodes: str | Sequence[str],
        username: str,
        password: str = "",
        *,
        benodes: str | Sequence[str] | None = None,
        auto_redirect: bool = True,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 10.0,
        timeouts: Timeouts = Timeouts(),
        scheme: str = "http",
        ca_file: str | None = None,
    ):
        self.fenodes = _split_nodes(fenodes)
        if not self.fenodes:
            raise ValueError("Doris 'fenodes' is empty: give at least one 'host:http_port'")
        self.benodes = _split_nodes(benodes)
        self.username = username
        self._password = password or ""
        self._auth = _BasicAuth(username, self._password)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.timeouts = timeouts
        self.scheme = scheme
        self.ca_file = ca_file
        if self.benodes:
            self.load_route = "benodes"
        else:
            self.load_route = "redirect" if auto_redirect else "backends"
        self._ssl_context: Any = None  # built at the first https pool (the ssl-ca is read then)
        self._pools: dict[str, urllib3.HTTPConnectionPool] = {}
        self._timeout_of: tuple[Timeouts, urllib3.Timeout] | None = None
        self._fe_cycle = itertools.cycle(range(len(self.fenodes)))
        self._be_cycle = itertools.count()
        self._lock = threading.Lock()
        self._discovered: tuple[str, ...] | None = None
        self._reusing = 0
        self._redirect: tuple[str, float, int] | None = None  # BE base URL, until, uses left

    # -- construction ------------------------------------------------------------------------

    @classmethod
    def from_options(cls, options: Any, **overrides: Any) -> DorisHttpClient:
        """From a ``DorisSinkOptions`` (the pipeline's ``sink:`` block).

        Loads go to ``benodes`` when given, else through the FE's 307 (``auto-redirect``): a BE
        address the FE hands out in a redirect is the one it also lists in ``/api/backends``,
        and the redirect keeps the FE's own load balancing.
        """
        kwargs: dict[str, Any] = {
            "benodes": options.benodes,
            "auto_redirect": True,
            "max_retries": options.max_retries,
            "scheme": "https" if getattr(options, "https", False) else "http",
            "ca_file": getattr(options, "ssl_ca", None),
        }
        kwargs.update(overrides)
        return cls(options.fenodes, options.username, options.password.get_secret_value(), **kwargs)

    @property
    def verify(self) -> str | bool:
        """What HTTPS nodes' certificates are verified against: the sink's ssl-ca, else (True) the
        system's CAs (as the MySQL source does: a CA the operator installed on the host is trusted
        by both; :meth:`_tls_context`)."""
        return self.ca_file or True

    # -- secrets -----------------------------------------------------------------------------

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self._password,) if self._password else ()

    def redact(self, text: str) -> str:
        return redact(text, self.secrets)

    # -- nodes -------------------------------------------------------------------------------

    def url(self, node: str, path: str) -> str:
        return f"{self.scheme}://{node}{path}"

    def fe_order(self) -> list[str]:
        """All FEs, starting with the next one in round robin."""
        with self._lock:
            start = next(self._fe_cycle)
        return [self.fenodes[(start + i) % len(self.fenodes)] for i in range(len(self.fenodes))]

    def backend_nodes(self) -> tuple[str, ...]:
        """BEs for direct loads: configured ``benodes``, else the FE's list of live backends."""
        if self.benodes:
            return self.benodes
        if self._discovered is None:
            self._discovered = self.discover_backends()
        return self._discovered

    def discover_backends(self) -> tuple[str, ...]:
        """``GET /api/backends?is_alive=true`` → ``host:http_port`` of every live BE."""
        resp = self.request("GET", "/api/backends", params={"is_alive": "true"})
        body = self.json_of(resp, "list backends")
        data = body.get("data", body) if isinstance(body, dict) else None
        backends = data.get("backends") if isinstance(data, dict) else None
        if not isinstance(backends, list):
            raise DorisResponseError(f"GET /api/backends answered without a backend list: {self.redact(str(body))[:300]}")
        nodes = tuple(f"{b['ip']}:{b['http_port']}" for b in backends if b.get("is_alive", True))
        if not nodes:
            raise DorisConnectionError("Doris reports no live backend (GET /api/backends?is_alive=true)")
        return nodes

    def next_backend(self) -> str:
        nodes = self.backend_nodes()
        with self._lock:
            return nodes[next(self._be_cycle) % len(nodes)]

    def forget_backends(self) -> None:
        """Drop the discovered BE list (a BE failed; ask the FE again next time)."""
        self._discovered = None

    @contextmanager
    def reusing_redirects(self) -> Iterator[None]:
        """While it lasts, a stream load or a 2PC commit/abort the FE would redirect goes straight
        to the BE the FE last redirected a load to, for the next ``REDIRECT_REUSES`` requests within
        ``REDIRECT_REUSE_S``; then an FE is asked again. A binlog batch over hundreds of tables
        makes a load and a commit per table, and each redirect is one more request (a new
        connection: the FE closes it after its 307), as much work on both sides as the load itself;
        asking every few requests still follows the FE's choice of BE. A failed request goes
        through an FE on its retry (the BE may be gone)."""
        with self._lock:
            self._reusing += 1
        try:
            yield
        finally:
            with self._lock:
                self._reusing -= 1
                if not self._reusing:
                    self._redirect = None

    def reuse_redirect(self) -> str | None:
        """``scheme://host:port`` of the BE to send one more load or 2PC operation to, or None."""
        with self._lock:
            known = self._redirect
            if not self._reusing or known is None or known[2] <= 0 or time.monotonic() > known[1]:
                self._redirect = None
                return None
            self._redirect = (known[0], known[1], known[2] - 1)
            return known[0]

    def remember_redirect(self, url: str) -> None:
        """The BE an FE redirected a load to (its 307's URL, user-info stripped)."""
        parts = urlsplit(url)
        with self._lock:
            if self._reusing:
                self._redirect = (f"{parts.scheme}://{parts.netloc}", time.monotonic() + REDIRECT_REUSE_S,
                                  REDIRECT_REUSES)

    def forget_redirect(self) -> None:
        with self._lock:
            self._redirect = None

    # -- sending -----------------------------------------------------------------------------

    def send(self, method: str, url: str, *, headers: dict[str, str] | None = None,
             body: BodyFactory | None = None, params: dict[str, str] | None = None,
             follow_redirects: bool = True) -> DorisResponse:
        """One attempt at ``url``, following redirects by hand (see the module docstring)."""
        from_https = url.startswith("https:")
        if params:
            url = f"{url}{'&' if '?' in url else '?'}{urlencode(params, doseq=True)}"
        headers = {**headers, "Authorization": self._auth.header} if headers else {"Authorization": self._auth.header}
        for _hop in range(MAX_REDIRECTS + 1):
            resp = self._exchange(method, url, headers, _body_of(body))
            if not follow_redirects or resp.status_code not in REDIRECT_CODES:
                return resp
            location = resp.headers.get("Location")
            if not location:
                raise DorisResponseError(f"{method} {self.redact(url)}: HTTP {resp.status_code} without a Location")
            new_url = _strip_userinfo(urljoin(url, location))
            if from_https and urlsplit(new_url).scheme == "http":
                raise DorisConnectionError(f"refusing to follow a redirect from https to http ({self.redact(new_url)})")
            log.debug("Doris redirected %s %s to %s", method, self.redact(url), self.redact(new_url))
            url = new_url  # the Location already carries the query string
        raise DorisResponseError(f"{method} {self.redact(url)}: more than {MAX_REDIRECTS} redirects")

    def _exchange(self, method: str, url: str, headers: dict[str, str],
                  data: bytes | Iterable[bytes] | None) -> DorisResponse:
        """One HTTP request through the node's pool, its answer read whole. A node that cannot be
        reached raises what ``requests`` raised for it (``ConnectionError``, ``Timeout``,
        ``SSLError``), naming the URL (for :func:`_node_of`)."""
        scheme, sep, rest = url.partition("://")
        netloc, _slash, target = rest.partition("/")
        netloc = netloc.rpartition("@")[2]
        pool = self._pools.get(f"{scheme}://{netloc}")
        if pool is None:
            if not sep or scheme not in ("http", "https") or not netloc:
                raise requests.exceptions.InvalidURL(f"not an http(s) URL: {self.redact(url)}")
            pool = self._pool(scheme, netloc)
        timeout = self._timeout_of
        if timeout is None or timeout[0] is not self.timeouts:
            timeout = self._timeout_of = (self.timeouts, urllib3.Timeout(connect=self.timeouts.connect,
                                                                         read=self.timeouts.read))
        try:
            raw = pool.urlopen(method, "/" + target, body=data, headers=headers, retries=_NO_RETRIES,
                               redirect=False, assert_same_host=False, timeout=timeout[1],
                               preload_content=True, decode_content=True)
        except Urllib3SSLError as exc:
            raise requests.exceptions.SSLError(exc, request=_RequestOf(url)) from exc
        except ReadTimeoutError as exc:
            raise requests.exceptions.ReadTimeout(exc, request=_RequestOf(url)) from exc
        except ConnectTimeoutError as exc:
            if isinstance(exc, NewConnectionError):  # refused, unresolvable: not a timeout
                raise requests.ConnectionError(exc, request=_RequestOf(url)) from exc
            raise requests.exceptions.ConnectTimeout(exc, request=_RequestOf(url)) from exc
        except Urllib3Error as exc:  # the connection dropped, a broken answer
            raise requests.ConnectionError(exc, request=_RequestOf(url)) from exc
        return DorisResponse(raw.status, raw.headers, raw.data, url)

    def _pool(self, scheme: str, netloc: str) -> urllib3.HTTPConnectionPool:
        """The connection pool of one node, made at its first request and kept."""
        host, _, port = netloc.rpartition(":")
        if not host or not port.isdigit():
            host, port = netloc, "443" if scheme == "https" else "80"
        host = host.strip("[]")  # an IPv6 literal
        with self._lock:
            pool = self._pools.get(f"{scheme}://{netloc}")
            if pool is not None:
                return pool
            if scheme == "https":
                pool = urllib3.HTTPSConnectionPool(host, int(port), maxsize=POOL_SIZE, block=False,
                                                   ssl_context=self._tls_context())
            else:
                pool = urllib3.HTTPConnectionPool(host, int(port), maxsize=POOL_SIZE, block=False)
            self._pools[f"{scheme}://{netloc}"] = pool
            return pool

    def _tls_context(self) -> Any:
        """The TLS context of every https node: certificates verified (and the host name) against
        the sink's ssl-ca (a file, or a directory of hashed CAs), else the system's CAs."""
        if self._ssl_context is None:
            context = create_urllib3_context()
            where = self.ca_file
            if where is None:
                context.load_default_certs()
                self._ssl_context = context
                return context
            try:
                if os.path.isdir(where):
                    context.load_verify_locations(capath=where)
                else:
                    context.load_verify_locations(cafile=where)
            except OSError as exc:
                raise requests.exceptions.SSLError(
                    f"cannot read the CA certificates at {where}: {exc}") from None
            self._ssl_context = context
        return self._ssl_context

    def with_retries(self, what: str, attempt: Callable[[int], DorisResponse]) -> DorisResponse:
        """Run ``attempt(n)`` until it gives a non-5xx answer; connection failures and 5xx retry.

        When every attempt failed, the :class:`DorisConnectionError` is one line: the node that
        failed last (an FE, a configured BE, or a BE an FE redirected to), what it said, and what to
        check — it is what a failed Dagster run shows (``orchestration/defs/failures.py``)."""
        last: str = ""
        node: str | None = None
        answered = False
        for n in range(self.max_retries + 1):
            if n:
                time.sleep(min(self.max_backoff_s, self.backoff_s * 2 ** (n - 1)))
            try:
                resp = attempt(n)
            except requests.exceptions.SSLError as exc:
                # A certificate that does not verify will not verify on a retry either.
                raise DorisConnectionError(self.redact(
                    f"Doris {what}: the TLS handshake failed ({self._ssl_reason(exc)}); check the sink's ssl-ca "
                    f"({self.ca_file or 'unset: the system CAs'}) is the CA that signed the Doris FE and BE "
                    "certificates, and that fenodes names the host the certificate was issued for"
                )) from None
            except (requests.ConnectionError, requests.Timeout) as exc:
                # The attempt's full text (urllib3's "Max retries exceeded … NewConnectionError(…)")
                # goes to the log file; the error says what the socket said, on one line.
                last, node, answered = connection_reason(exc), _node_of(exc) or node, False
                if isinstance(exc, RetryableAnswer):  # the FE answered, with a refusal worth a retry
                    last, node, answered = exc.answer, exc.node, True
                log.info("Doris %s failed (attempt %d of %d): %s: %s", what, n + 1, self.max_retries + 1,
                         type(exc).__name__, self.redact(str(exc)))
                continue
            if resp.status_code >= 500:
                last, node, answered = f"HTTP {resp.status_code}: {resp.text[:300]}", _node_of(resp) or node, True
                log.info("Doris %s failed (attempt %d of %d): %s", what, n + 1, self.max_retries + 1, self.redact(last))
                continue
            if resp.status_code in (401, 403):
                raise DorisAuthError(
                    f"Doris refused user {self.username!r} for {what} (HTTP {resp.status_code}); "
                    "check the sink's username and password"
                )
            return resp
        advice = outage_advice(last)
        line = self.redact(self._gave_up(what, node, last, answered, advice))
        if advice or is_outage(last):  # a node restarting or down: a re-run once it is back heals it
            raise DorisUnavailableError(line)
        raise DorisConnectionError(line)

    def _gave_up(self, what: str, node: str | None, last: str, answered: bool, advice: str | None = None) -> str:
        """The one line of a request every attempt of which failed (see :meth:`with_retries`)."""
        attempts = f"{self.max_retries + 1} attempt{'s' if self.max_retries else ''}"
        if node in self.fenodes or node is None:
            who = f"the Doris FE at {node or ', '.join(self.fenodes)}"
            fix = "check that the FE is up and that sink.fenodes names its HTTP address (host:8030)"
        elif node in self.benodes:
            who = f"the Doris BE at {node}"
            fix = "check that the BE is up and that sink.benodes names its HTTP address (host:8040)"
        else:
            who = f"the Doris BE at {node} (an FE redirected the request there)"
            fix = "check that the BE is up and that this host reaches the address the FE lists for it"
        if answered:
            # what Doris says while a node restarts (no live BE, HTTP 503) says so, and to run again
            fix = advice or "check the Doris logs (fe.log, be.INFO) and that every BE is alive; a re-run retries"
            return f"{who} answered {_one_line(last)} ({attempts} at {what}); {fix}"
        return f"{who} does not answer ({last}; {attempts} at {what}); {fix}"

    @staticmethod
    def _ssl_reason(exc: BaseException) -> str:
        """The innermost reason of an SSL failure (``certificate verify failed: …``), one line."""
        text = str(exc)
        found = re.search(r"\[SSL[^\]]*\][^'\")]*", text)
        return (found.group(0) if found else text).strip()[:300]

    def request(self, method: str, path: str, *, headers: dict[str, str] | None = None,
                body: BodyFactory | None = None, params: dict[str, str] | None = None,
                json_body: Any = None, first: str | None = None, what: str | None = None) -> DorisResponse:
        """A request to the FEs (trying each in turn on failures, with retries and backoff).

        ``first``: ``scheme://host:port`` of a BE to try before them (:meth:`reuse_redirect`'s);
        its failure forgets it, and the retries go through the FEs (the BE may be gone)."""
        if json_body is not None:
            payload = json.dumps(json_body).encode()
            body = lambda: payload  # noqa: E731 - a body factory
            headers = {"Content-Type": "application/json;charset=UTF-8", **(headers or {})}
        order = self.fe_order()

        def attempt(n: int) -> DorisResponse:
            if first is not None:
                if n == 0:
                    return self.send(method, first + path, headers=headers, body=body, params=params)
                self.forget_redirect()
                n -= 1
            node = order[n % len(order)]
            return self.send(method, self.url(node, path), headers=headers, body=body, params=params)

        return self.with_retries(what or f"{method} {path}", attempt)

    # -- answers -----------------------------------------------------------------------------

    def json_of(self, resp: DorisResponse, what: str) -> Any:
        """The JSON body; FE-style ``{"code":401}`` becomes :class:`DorisAuthError`."""
        try:
            body = resp.json()
        except ValueError:
            raise DorisResponseError(
                f"Doris answered {what} with HTTP {resp.status_code} and no JSON: {self.redact(resp.text[:300])!r}"
            ) from None
        if isinstance(body, dict) and (body.get("code") == 401 or body.get("msg") == "Unauthorized"):
            raise DorisAuthError(
                f"Doris refused user {self.username!r} for {what}: {self.redact(str(body.get('data', '')))[:200]}; "
                "check the sink's username and password"
            )
        return body

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            pool.close()
