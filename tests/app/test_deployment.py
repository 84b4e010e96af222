"""The portal as deployed: gunicorn with the project's `gunicorn.conf.py`."""

from __future__ import annotations

import contextlib
import http.client
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from tests.support.polling import wait_for
from tests.support.portal_server import run_portal
from tests.support.sandbox_server import ROOT

# gunicorn started, stopped and restarted.
pytestmark = pytest.mark.slow

TIMEOUT = 2  # gunicorn's timeout for the live test, seconds
RESTARTED_WITHIN = 20  # seconds: generous on a busy machine; about 3 here, never without it


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


def _workers(master: int) -> set[int]:
    """The worker processes of a gunicorn master."""
    return {
        int(child)
        for task in Path(f"/proc/{master}/task").iterdir()
        for child in (task / "children").read_text().split()
    }


def _serving(workers: set[int]) -> bool:
    """Whether these workers loaded the portal (each imports it after it starts; until its
    first heartbeat after that, its master cannot tell that it stopped)."""
    return all("cryptography" in Path(f"/proc/{pid}/maps").read_text() for pid in workers)


def _answers(url: str) -> bool:
    """Whether the portal answers (a worker that has just started may still load it)."""
    return requests.get(f"{url}/healthz", timeout=10).status_code == 200


@pytest.mark.long  # started first: it would otherwise keep one worker busy at the end
def test_gunicorn_restarts_a_stuck_worker_and_lets_requests_finish_on_a_restart(tmp_path, sandbox):
    """The project's settings, as gunicorn resolves them: a worker process per CPU; one that
    stops answering for 30 s is restarted, requests under way get 25 s on a restart. Then the
    same file served with both shortened (GUNICORN_CMD_ARGS, as an operator overrides it): a
    worker stopped dead (SIGSTOP: it no longer tells its master it is alive) is killed and
    replaced while the other answers, and a page waiting on a slow API finishes when gunicorn
    is stopped for a restart."""
    printed = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--print-config", "wsgi:app"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
        env={
            key: value for key, value in os.environ.items()
            if key not in ("GUNICORN_CMD_ARGS", "WEB_CONCURRENCY")
        },
    ).stdout  # fmt: skip
    settings = dict(
        (name.strip(), value.strip())
        for name, _, value in (line.partition("=") for line in printed.splitlines())
    )
    assert settings["worker_class"] == "gthread"
    assert settings["workers"] == str(len(os.sched_getaffinity(0)))  # a process per CPU
    assert settings["timeout"] == "30"
    assert settings["graceful_timeout"] == "25"

    shortened = {"GUNICORN_CMD_ARGS": f"--timeout {TIMEOUT} --graceful-timeout 5"}
    with run_portal(tmp_path, sandbox, gunicorn=True, workers=2, env=shortened) as server:
        master = server.process.pid
        wait_for(lambda: len(workers := _workers(master)) == 2 and _serving(workers), timeout=20)
        time.sleep(0.5)  # their first heartbeats
        stuck, other = sorted(_workers(master))
        os.kill(stuck, signal.SIGSTOP)
        stopped = time.monotonic()
        try:
            while stuck in _workers(master):  # the other worker answers meanwhile
                assert _answers(server.url)
                assert time.monotonic() - stopped < RESTARTED_WITHIN, "not restarted"
                time.sleep(0.1)
            wait_for(lambda: len(_workers(master)) == 2, timeout=10)
            assert len(_workers(master) - {other}) == 1  # the replacement
            os.kill(other, signal.SIGSTOP)  # now only the replacement can answer
            try:
                assert _answers(server.url)
            finally:  # gunicorn may have killed it meanwhile: it stopped telling it is alive
                with contextlib.suppress(ProcessLookupError):
                    os.kill(other, signal.SIGCONT)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(stuck, signal.SIGCONT)

        sandbox.control("POST", "faults", {"mode": "slow", "delay_ms": 2500})
        session = server.signed_in_session("accountant@acme.test")
        with session, ThreadPoolExecutor(1) as pool:
            slow = pool.submit(session.get, f"{server.url}/rates", timeout=15)
            time.sleep(1)  # the page waits on the API
            server.process.terminate()  # a restart stops gunicorn: requests under way finish
            assert slow.result().status_code == 200
        assert server.process.wait(timeout=10) == 0
        sandbox.control("POST", "faults", {"mode": "none"})
