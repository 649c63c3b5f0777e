"""HTTP plumbing to a Doris cluster: nodes, Basic auth, redirects, retries, timeouts.

Why redirects are followed by hand: a Doris FE answers a stream load with a 307 to a BE whose
``Location`` carries ``user:password@``. ``requests`` drops ``Authorization`` when the host
changes and cannot re-send a streamed body, so :meth:`DorisHttpClient.send` follows redirects
itself: it strips the user-info from the new URL (never logged), sends our own Basic auth again,
refuses an https→http downgrade, and builds the body afresh for every hop and every retry from a
*body factory* (a callable returning bytes or an iterator of bytes).

Retries: connection errors, timeouts and HTTP 5xx are retried ``max_retries`` times with
exponential backoff, moving to the next node of the list; anything Doris answers with a
well-formed body is returned to the caller, which knows what the body means. When the last failure
is what a restarting node looks like (no live BE, HTTP 503, a refused connection) the error is
:class:`DorisUnavailableError`, whose message says to run again once Doris is back.
"""

from __future__ import annotations

import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

import requests
from requests.auth import HTTPBasicAuth

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
    """``host:port`` of the request a failure or an answer belongs to, when requests kept it."""
    request = getattr(failed, "request", None)
    url = getattr(request, "url", None)
    return urlsplit(url).netloc.rsplit("@", 1)[-1] if isinstance(url, str) and url else None


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
        session: requests.Session | None = None,
    ):
        self.fenodes = _split_nodes(fenodes)
        if not self.fenodes:
            raise ValueError("Doris 'fenodes' is empty: give at least one 'host:http_port'")
        self.benodes = _split_nodes(benodes)
        self.username = username
        self._password = password or ""
        self._auth = HTTPBasicAuth(username, self._password)
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
        self._session = session or requests.Session()
        # We follow redirects ourselves, but never let requests strip auth behind our back either.
        self._session.should_strip_auth = lambda old, new: False  # type: ignore[method-assign]
        self._session.trust_env = False
        # HTTPS: verify the nodes' certificates against the sink's ssl-ca, else the system's CAs.
        self._session.verify = ca_file or True
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
             follow_redirects: bool = True) -> requests.Response:
        """One attempt at ``url``, following redirects by hand (see the module docstring)."""
        original_scheme = urlsplit(url).scheme
        for _hop in range(MAX_REDIRECTS + 1):
            data = body() if body is not None else None
            resp = self._session.request(
                method, url, headers=headers, data=data, params=params, auth=self._auth,
                allow_redirects=False, timeout=self.timeouts.as_tuple(),
            )
            if not follow_redirects or resp.status_code not in REDIRECT_CODES:
                return resp
            location = resp.headers.get("Location")
            resp.close()
            if not location:
                raise DorisResponseError(f"{method} {self.redact(url)}: HTTP {resp.status_code} without a Location")
            new_url = _strip_userinfo(urljoin(url, location))
            if original_scheme == "https" and urlsplit(new_url).scheme == "http":
                raise DorisConnectionError(f"refusing to follow a redirect from https to http ({self.redact(new_url)})")
            log.debug("Doris redirected %s %s to %s", method, self.redact(url), self.redact(new_url))
            url, params = new_url, None  # the Location already carries the query string
        raise DorisResponseError(f"{method} {self.redact(url)}: more than {MAX_REDIRECTS} redirects")

    def with_retries(self, what: str, attempt: Callable[[int], requests.Response]) -> requests.Response:
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
                json_body: Any = None, first: str | None = None, what: str | None = None) -> requests.Response:
        """A request to the FEs (trying each in turn on failures, with retries and backoff).

        ``first``: ``scheme://host:port`` of a BE to try before them (:meth:`reuse_redirect`'s);
        its failure forgets it, and the retries go through the FEs (the BE may be gone)."""
        if json_body is not None:
            import json as _json

            payload = _json.dumps(json_body).encode()
            body = lambda: payload  # noqa: E731 - a body factory
            headers = {"Content-Type": "application/json;charset=UTF-8", **(headers or {})}
        order = self.fe_order()

        def attempt(n: int) -> requests.Response:
            if first is not None:
                if n == 0:
                    return self.send(method, first + path, headers=headers, body=body, params=params)
                self.forget_redirect()
                n -= 1
            node = order[n % len(order)]
            return self.send(method, self.url(node, path), headers=headers, body=body, params=params)

        return self.with_retries(what or f"{method} {path}", attempt)

    # -- answers -----------------------------------------------------------------------------

    def json_of(self, resp: requests.Response, what: str) -> Any:
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
        self._session.close()
