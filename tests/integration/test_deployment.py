"""The portal as deployed: gunicorn with the project's `gunicorn.conf.py`."""

from __future__ import annotations

import http.client
import subprocess
import sys
from urllib.parse import urlsplit

from tests.support.portal_server import run_portal
from tests.support.sandbox_server import ROOT


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


def test_gunicorn_restarts_a_stuck_worker_and_lets_requests_finish_on_a_restart():
    """The timeouts gunicorn resolves from the project's file, as an operator would check them."""
    printed = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--print-config", "wsgi:app"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    settings = dict(
        (name.strip(), value.strip())
        for name, _, value in (line.partition("=") for line in printed.splitlines())
    )
    assert settings["worker_class"] == "gthread"
    assert settings["timeout"] == "30"
    assert settings["graceful_timeout"] == "25"
