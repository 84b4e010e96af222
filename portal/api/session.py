"""The HTTP session: pooled connections and retries that can never send money twice."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Self
from urllib.parse import urlsplit

import requests
from requests.adapters import HTTPAdapter
from urllib3 import BaseHTTPResponse
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import MaxRetryError, ReadTimeoutError
from urllib3.util.retry import Retry

if TYPE_CHECKING:  # types of requests' stubs only
    from requests.sessions import _Cert, _Settings, _TextMapping, _Verify

RETRY_STATUSES = (502, 503, 504)


class GetOnlyRetry(Retry):
    """Retry GET requests only, and not after a read timeout.

    urllib3 retries connection errors for every method; a POST or PUT moves money, so any
    error on one ends the attempt. A read timeout means a slow server: waiting again would
    only double the user's wait.
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
        if error is not None and (not retryable or isinstance(error, ReadTimeoutError)):
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
    adapter = HTTPAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=retry)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session
