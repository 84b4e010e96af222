"""Servers on loopback: a WSGI application served from a thread of this process, or a server
process. Either says whether it still serves and stops."""

from __future__ import annotations

import contextlib
import functools
import socket
import subprocess
import threading
import time

import requests
from werkzeug.serving import ThreadedWSGIServer, WSGIRequestHandler


def free_port() -> int:
    """Ask the kernel for a loopback port nobody listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class _EndingConnectionsServer(ThreadedWSGIServer):
    """werkzeug's threaded server, the one `flask run` and `python -m sandbox` serve with, which
    keeps the connections it holds (requests under way: it closes each after its answer), so
    that stopping it ends them as the end of a process does. A request held up by the
    sandbox's `slow` fault would otherwise still be answered by a server that stopped."""

    def __init__(self, *args, **kwargs) -> None:
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def process_request(self, request, client_address) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def end_connections(self) -> None:
        """End every connection still open: the client reads the end, the thread that serves it
        (perhaps a request held up by the sandbox's `slow` fault) finds it gone."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # its thread closed it meanwhile
                connection.shutdown(socket.SHUT_RDWR)


@functools.cache
def _unlogged(handler: type[WSGIRequestHandler]) -> type[WSGIRequestHandler]:
    """`handler` without the line it logs for each request, as `python -m sandbox --quiet`
    (`flask run` wrote its lines to a file no test reads): in this process the lines would join
    the tests' captured logs, where tests look for secrets. Errors are still logged."""

    class Unlogged(handler):
        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass

    Unlogged.__name__ = f"Unlogged{handler.__name__}"
    return Unlogged


class ServedThread:
    """`app` served on a free loopback port from a thread of this process, by werkzeug's threaded
    server with `handler` (werkzeug's own by default): real HTTP without the start of a Python
    process (a sandbox process cost 0.17 CPU-s, a `flask run` process 1.1 CPU-s of imports).

    It listens as soon as it is made. A request still under way when it stops goes on in its
    (daemon) thread, its connection ended: stopping never waits for it.
    """

    def __init__(
        self, app, handler: type[WSGIRequestHandler] = WSGIRequestHandler, port: int = 0
    ) -> None:
        self._server = _EndingConnectionsServer("127.0.0.1", port, app, _unlogged(handler))
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(
            # The loop sees a stop at its next poll: half a second by default, for each server.
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name=f"server {self.url}",
            daemon=True,
        )
        self._thread.start()

    def serving(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop listening (the port is free again) and end the open connections."""
        if self.serving():
            self._server.shutdown()  # serve_forever closes the listening socket as it returns
            self._thread.join(timeout=10)
        self._server.end_connections()


class ServedProcess:
    """A server in a process of its own, for tests of what only a process does: restarting on
    the same files, gunicorn, the memory it takes."""

    def __init__(self, process: subprocess.Popen, url: str, name: str) -> None:
        self.process = process
        self.url = url
        self.name = name

    def wait_until_answering(self, path: str, timeout: float = 60.0) -> None:
        """Until a GET of `path` succeeds; the process exiting meanwhile fails."""
        url = f"{self.url}{path}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.serving():
                raise RuntimeError(f"{self.name} exited with code {self.process.returncode}")
            with contextlib.suppress(requests.ConnectionError, requests.Timeout):
                if requests.get(url, timeout=5).ok:
                    return
            time.sleep(0.02)  # a sandbox starts in about a tenth of a second
        raise TimeoutError(f"{self.name} did not answer at {url} within {timeout} s")

    def serving(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """SIGTERM; SIGKILL after 10 s (gunicorn still waiting out a slow request)."""
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


Served = ServedThread | ServedProcess
