"""The suite's own machinery, which the other tests rely on without saying so: the `browser`
marker that `make test-fast` leaves out, the factories of the portal's rows, the URL builders
the applications of one test process share, and the servers it serves from its threads."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from flask import url_for

from tests.support import factories
from tests.support.forms import sign_in
from tests.support.polling import wait_for
from tests.support.portal_server import run_portal
from tests.support.sandbox_server import ROOT, run_sandbox


@pytest.mark.slow  # a pytest process of its own
def test_a_test_that_drives_chromium_is_marked_browser_wherever_it_lives():
    """`-m "not browser"` (make test-fast) collects none of the tests that ask for Chromium,
    though nothing in their modules marks them."""
    modules = ["tests/identity/test_sign_in_browser.py", "tests/money/test_money_pages_browser.py"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-p", "no:xdist",
         "-p", "no:cacheprovider", "-m", "not browser", *modules],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    deselected = re.search(r"no tests collected \((\d+) deselected\)", collected)
    assert deselected is not None and int(deselected.group(1)) > 5, collected


def test_a_user_from_the_factory_signs_in_with_the_test_password_and_a_code(app):
    made = factories.user(app, "ops@acme.test", "operator", two_factor=True)
    answer = sign_in(app.test_client(), "ops@acme.test")
    assert answer.status_code == 302
    assert answer.location.endswith("/login/two-factor"), "asked for a code next"
    assert made.email == "ops@acme.test" and made.totp_secret


def test_an_unchecked_address_is_stored_as_it_is(app):
    """As a user stored before addresses were checked: no form takes this address today."""
    from portal.identity.rules.accounts import find_user

    factories.user(app, "x@a.example,other@b.example", "owner", checked=False)
    with app.app_context():
        assert find_user("x@a.example,other@b.example") is not None


def test_applications_of_one_process_share_their_url_builders_and_build_their_own_urls(
    app, portal_config, tmp_path
):
    from portal import create_app

    other = create_app({**portal_config, "DATABASE_URL": f"sqlite:///{tmp_path / 'other.db'}"})
    rules = {rule.endpoint: rule for rule in other.url_map.iter_rules()}
    for rule in app.url_map.iter_rules():
        twin = rules[rule.endpoint]
        assert rule._build.__func__ is twin._build.__func__, rule.rule
    with app.test_request_context():
        assert url_for("withdrawals.show", key="a b") == "/withdrawals/a%20b"


def _ports_this_process_listens_on() -> set[int]:
    """The TCP ports of the listening sockets among this process's open files."""
    sockets = set()
    for descriptor in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            sockets.add(os.readlink(f"/proc/self/fd/{descriptor}"))
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, state, inode = (line.split()[i] for i in (1, 3, 9))
        if state == "0A" and f"socket:[{inode}]" in sockets:  # 0A: LISTEN
            ports.add(int(local.rsplit(":", 1)[1], 16))
    return ports


def _reset_by_peer(error: BaseException) -> bool:
    """Whether a ConnectionResetError is behind `error` (urllib3 and requests wrap it)."""
    causes = [cause for cause in error.args if isinstance(cause, BaseException)]
    return isinstance(error, ConnectionResetError) or any(map(_reset_by_peer, causes))


def test_the_sandbox_of_a_test_is_served_by_this_process_and_still_resets_connections(sandbox):
    """No process to start for a sandbox: the worker serves it from a thread, with the request
    handler of `python -m sandbox`, which turns the `reset` fault into a reset connection."""
    assert urlsplit(sandbox.base_url).port in _ports_this_process_listens_on()
    sandbox.control("POST", "faults", {"mode": "reset"})
    with pytest.raises(requests.ConnectionError) as caught:
        requests.get(f"{sandbox.api_url}/ping", headers=sandbox.headers(), timeout=10)
    assert _reset_by_peer(caught.value), caught.value


def _request_threads() -> int:
    return sum("process_request_thread" in thread.name for thread in threading.enumerate())


def test_a_sandbox_served_by_this_process_ends_its_connections_when_it_stops(tmp_path):
    """As when a sandbox process ends: a kept-alive connection gets no more answers, and a
    request held up by the `slow` fault neither holds up the stop nor gets an answer."""
    with run_sandbox(tmp_path / "sandbox.db") as server:
        ping = f"{server.api_url}/ping"
        kept_alive = requests.Session()
        kept_alive.get(ping, headers=server.headers(), timeout=10).raise_for_status()
        server.control("POST", "faults", {"mode": "slow", "delay_ms": 5000})
        connections = _request_threads()
        with ThreadPoolExecutor(1) as pool:
            held = pool.submit(requests.get, ping, headers=server.headers(), timeout=30)
            wait_for(lambda: _request_threads() > connections)
            started = time.monotonic()
            server.stop()
            assert time.monotonic() - started < 1, "the stop waited for the held request"
            assert not server.serving()
            with pytest.raises(requests.ConnectionError):
                held.result()
        with pytest.raises(requests.ConnectionError):
            kept_alive.get(ping, headers=server.headers(), timeout=10)


def test_a_portal_served_by_this_process_leaves_the_task_queue_to_the_tests(tmp_path, sandbox):
    """`create_app` points the process's task queue at the application it makes: the portal
    served from a thread must not take it from the tests' applications (nor their tasks), here
    the application `run_portal` made last to add users and connections."""
    from portal.live.worker import queue

    with run_portal(tmp_path, sandbox) as server:
        assert urlsplit(server.url).port in _ports_this_process_listens_on()
        assert requests.get(f"{server.url}/healthz", timeout=10).ok
        assert queue._application == [server.app]
        assert getattr(queue.huey.storage, "filename", "") != str(tmp_path / "queue.sqlite3")
