"""The portal as deployed: gunicorn with the project's `gunicorn.conf.py`."""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

from tests.support.portal_server import run_portal


def test_gunicorn_keeps_the_browsers_connection_open(tmp_path, sandbox):
    """Threaded workers answer many requests on one connection (sync workers close each one)."""
    with run_portal(tmp_path, sandbox, gunicorn=True) as server:
        url = urlsplit(server.url)
        connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
        try:
            sockets = []
            for path in ("/healthz", "/login", "/healthz"):
                connection.request("GET", path)
                answer = connection.getresponse()
                answer.read()
                assert answer.status == 200
                assert not answer.will_close
                sockets.append(connection.sock)
        finally:
            connection.close()
    assert sockets[0] is sockets[1] is sockets[2]
