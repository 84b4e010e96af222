"""Fault injection for the API paths, as a WSGI middleware so it can also break the connection."""

from __future__ import annotations

import random
import re
import socket
import struct
import threading
import time
from dataclasses import asdict, dataclass

from werkzeug.serving import WSGIRequestHandler

MODES = ("none", "error500", "slow", "malformed", "reset")
# An API path of any version, `/v2/...` or `/sandbox/v2/...`; group 1 is the version number.
VERSIONED_PATH = re.compile(r"^/(?:sandbox/)?v([0-9]+)(?:/|$)")
_ERROR_PAGE = b"<!doctype html><title>500 Internal Server Error</title><h1>Server Error</h1>"


class InjectedReset(ConnectionResetError):
    """Raised to the server so that it drops the connection (see `ResettingRequestHandler`)."""


@dataclass
class Fault:
    mode: str = "none"
    delay_ms: int = 5000
    probability: float = 1.0
    methods: tuple[str, ...] = ()  # empty: every method


class FaultInjector:
    """Breaks `/v1` and `/sandbox/v1` requests the way real outages do (see docs/sandbox.md)."""

    def __init__(self, wsgi_app) -> None:
        self.wsgi_app = wsgi_app
        self.fault = Fault()
        self._lock = threading.Lock()
        self._random = random.Random()

    def configure(self, fault: Fault) -> None:
        with self._lock:
            self.fault = fault

    def describe(self) -> dict:
        return {**asdict(self.fault), "methods": list(self.fault.methods)}

    def _strikes(self, fault: Fault) -> bool:
        with self._lock:
            return self._random.random() < fault.probability

    def __call__(self, environ, start_response):
        fault = self.fault
        if (
            fault.mode == "none"
            or not VERSIONED_PATH.match(environ.get("PATH_INFO", ""))
            or (fault.methods and environ.get("REQUEST_METHOD") not in fault.methods)
            or not self._strikes(fault)
        ):
            return self.wsgi_app(environ, start_response)
        if fault.mode == "error500":
            start_response("500 INTERNAL SERVER ERROR", [("Content-Type", "text/html")])
            return [_ERROR_PAGE]
        if fault.mode == "slow":
            time.sleep(fault.delay_ms / 1000)
            return self.wsgi_app(environ, start_response)
        body = self._handle_silently(environ)
        if fault.mode == "malformed":
            start_response("200 OK", [("Content-Type", "application/json")])
            return [body[: len(body) // 2] if len(body) > 1 else b'{"data": ']
        connection = environ.get("werkzeug.socket")
        if connection is not None:
            # Linger 0 makes the kernel answer with RST instead of an orderly close.
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raise InjectedReset("fault injection: connection reset")

    def _handle_silently(self, environ) -> bytes:
        """Run the request to the end (its effect happens) and keep the body."""
        chunks = self.wsgi_app(environ, lambda status, headers, exc_info=None: None)
        try:
            return b"".join(chunks)
        finally:
            if hasattr(chunks, "close"):
                chunks.close()


class ResettingRequestHandler(WSGIRequestHandler):
    """Werkzeug's handler, closing the socket at once when fault injection asks for a reset.

    With linger 0 set, closing sends RST; the client sees a reset, not an empty answer.
    """

    def connection_dropped(self, error: BaseException, environ=None) -> None:
        if isinstance(error, InjectedReset):
            self.close_connection = True
            self.rfile.close()
            self.connection.close()
