"""The HTTP session: pooled connections and retries that can never send money twice, each
connection watched by the caller's total deadline (`portal.api.deadline`), and answers read
up to a size."""

from __future__ import annotations

import contextlib
import re
import socket
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlsplit, urlunsplit

import idna
import requests
from requests.adapters import HTTPAdapter
from urllib3 import BaseHTTPResponse, HTTPConnectionPool, HTTPSConnectionPool, PoolManager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import ConnectTimeoutError, MaxRetryError, ReadTimeoutError
from urllib3.util.retry import Retry

from portal.api import deadline

if TYPE_CHECKING:  # types of requests' and urllib3's stubs only
    from requests.sessions import _Cert, _Settings, _TextMapping, _Verify
    from urllib3._base_connection import BaseHTTPConnection

RETRY_STATUSES = (502, 503, 504)


class GetOnlyRetry(Retry):
    """Retry GET requests only, not after a read timeout, and not once the caller's deadline
    has passed.

    urllib3 retries connection errors for every method; a POST or PUT moves money, so any
    error on one ends the attempt. A read timeout means a slow server: waiting again would
    only double the user's wait. A connection the deadline shut down before its answer began
    is a connection error to urllib3, but the call is over: a retry would connect again only
    to be shut down at once.
    """

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: ConnectionPool | None = None,
        _stacktrace: TracebackType | None = None,
    ) -> Self:
        retryable = method is not None and method.upper() in (self.allowed_methods or ())
        over = not retryable or isinstance(error, ReadTimeoutError) or deadline.passed()
        if error is not None and over:
            # urllib3 itself passes the pool it got, None included; its annotation omits None.
            raise MaxRetryError(_pool, url, error) from error  # type: ignore[arg-type]
        return super().increment(method, url, response, error, _pool, _stacktrace)


class PortalSession(requests.Session):
    """A session that reads the proxy and CA settings of the environment once per API host.

    requests reads them (all of `os.environ`) again for every request, which costs about as
    much CPU as the request itself; the process's environment does not change.
    """

    def __init__(self) -> None:
        super().__init__()
        self._environment: dict[tuple[str, str], _Settings] = {}

    def merge_environment_settings(
        self,
        url: str | bytes | None,
        proxies: _TextMapping | None,
        stream: bool | None,
        verify: _Verify | None,
        cert: _Cert | None,
    ) -> _Settings:
        if proxies or verify is not None or cert is not None or not isinstance(url, str):
            return super().merge_environment_settings(url, proxies, stream, verify, cert)
        host = urlsplit(url)[:2]
        if host not in self._environment:
            self._environment[host] = super().merge_environment_settings(url, {}, None, None, None)
        return {**self._environment[host], "stream": self.stream if stream is None else stream}


def make_session(retries: int = 2, backoff: float = 0.25, pool_size: int = 10) -> requests.Session:
    """A session to share between clients: one connection pool per API host.

    GET requests are retried on connection errors and on 502, 503 and 504, with exponential
    backoff; a `Retry-After` header is not obeyed, so a page never hangs on it.
    """
    retry = GetOnlyRetry(
        total=retries,
        connect=retries,
        read=retries,
        status=retries,
        backoff_factor=backoff,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET"}),
        raise_on_status=False,
        respect_retry_after_header=False,
    )
    session = PortalSession()
    adapter = WatchedAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


# --- Connections under a deadline, to the addresses a caller checked ----------------------------

_pinned: ContextVar[tuple[str, tuple[str, ...]] | None] = ContextVar("pinned", default=None)
_CHUNK = 64 * 1024
# A host that urllib3 dials as it is spelled (in lower case): letters, digits, hyphens, dots and
# underscores, or an IPv6 address (a URL's `hostname` has it without brackets).
_DIALLED_HOST = re.compile(r"[a-z0-9._-]+|[0-9a-f:.]+")


def dialled_url(url: str) -> str | None:
    """`url` with its host as the connection dials it: a non-ASCII name in its IDNA (`xn--`)
    form, converted here as requests would. None for a host of other characters, such as a
    `%` escape that urllib3 decodes into another name: a caller checks, pins and requests this
    URL, so the name it looked up is the name dialled."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port
        if not host.isascii():
            host = idna.encode(host, uts46=True).decode()
            user, at, _ = parts.netloc.rpartition("@")
            netloc = f"{user}{at}{host}" if port is None else f"{user}{at}{host}:{port}"
            url = urlunsplit(parts._replace(netloc=netloc))
    except ValueError:  # a port that is not a number, a name IDNA refuses (IDNAError)
        return None
    return url if _DIALLED_HOST.fullmatch(host) else None


@contextlib.contextmanager
def pinned_to(host: str, addresses: Sequence[str]) -> Iterator[None]:
    """New connections to `host` opened in the block go to these IP addresses (in order, the
    next one when one cannot be reached), whatever the name resolves to by then: the addresses
    a caller checked are the ones it reaches (no DNS rebinding between the check and the
    connection). The request, its Host header and TLS still name the host. A connection to
    another host, such as a proxy set in the environment (which resolves the name itself), is
    not pinned. No addresses: no pin. A host no connection is made to as it is spelled (see
    `dialled_url`) raises ValueError: its pin would never apply."""
    key = host.rstrip(".").lower()
    if addresses and not _DIALLED_HOST.fullmatch(key):
        raise ValueError(f"{host!r} is not a host as a connection dials it")
    token = _pinned.set((key, tuple(addresses)) if addresses else None)
    try:
        yield
    finally:
        _pinned.reset(token)


class WatchedHTTPConnection(HTTPConnection):
    """urllib3's connection with its socket under the caller's deadline: watched when opened
    (before a TLS handshake) and each time a pooled connection is used again, released when it
    goes back to its pool."""

    def _new_conn(self) -> socket.socket:
        self.timeout = deadline.connect_timeout(self.timeout)
        addresses = self._pinned_addresses()
        sock = self._connect_pinned(addresses) if addresses else super()._new_conn()
        deadline.watch(sock)
        return sock

    def _pinned_addresses(self) -> tuple[str, ...]:
        """The addresses this connection's host is pinned to; none for any other host."""
        pin = _pinned.get()
        if pin is None or self.host.lower() != pin[0]:
            return ()
        return pin[1]

    def _connect_pinned(self, addresses: tuple[str, ...]) -> socket.socket:
        """`_new_conn` to each pinned address in turn; urllib3 dials `_dns_host` (the host name
        with its trailing dot), so it stands for the address only while the socket is made."""
        name = self._dns_host
        try:
            for address in addresses[:-1]:
                self._dns_host = address
                with contextlib.suppress(ConnectTimeoutError):  # refused or timed out
                    return super()._new_conn()
            self._dns_host = addresses[-1]
            return super()._new_conn()
        finally:
            self._dns_host = name

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.sock is not None:
            deadline.watch(self.sock)
        super().request(*args, **kwargs)


class WatchedHTTPSConnection(WatchedHTTPConnection, HTTPSConnection):
    """The same for https: TLS is set up on the watched socket, against the host name."""


class _ReleasingPool(HTTPConnectionPool):
    """A pool whose connections leave the caller's deadline as they come back: another call
    may take one before that deadline ends, and must not have it shut down under it."""

    def _put_conn(self, conn: BaseHTTPConnection | None) -> None:
        sock = getattr(conn, "sock", None)  # None once closed
        if sock is not None:
            deadline.release(sock)
        super()._put_conn(conn)


class _WatchedHTTPPool(_ReleasingPool):
    ConnectionCls = WatchedHTTPConnection


class _WatchedHTTPSPool(_ReleasingPool, HTTPSConnectionPool):
    ConnectionCls = WatchedHTTPSConnection


_WATCHED_POOLS = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}


class WatchedAdapter(HTTPAdapter):
    """requests' adapter with watched connections (directly or through an HTTP proxy)."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _WATCHED_POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> PoolManager:
        manager: PoolManager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if not proxy.lower().startswith("socks"):  # SOCKS brings connection classes of its own
            manager.pool_classes_by_scheme = _WATCHED_POOLS
        return manager


class AnswerTooLarge(Exception):
    """An answer's body is longer than the caller takes; it was not read further."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the answer is longer than {limit} bytes")
        self.limit = limit


def read_at_most(response: requests.Response, limit: int) -> bytes:
    """The body of a streamed answer (`stream=True`), decoded, read in chunks; AnswerTooLarge
    once it passes `limit` bytes, or at once when its Content-Length says it will, so a huge
    answer never sits in memory. The caller closes the response (its connection is not used
    again after an answer left unread)."""
    length = response.headers.get("Content-Length", "")
    if length.strip().isdigit() and int(length) > limit:
        raise AnswerTooLarge(limit)
    body = bytearray()
    for chunk in response.iter_content(_CHUNK):
        body += chunk
        if len(body) > limit:
            raise AnswerTooLarge(limit)
    return bytes(body)
