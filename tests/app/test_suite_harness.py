"""The suite's own machinery, which the other tests rely on without saying so: the `browser`
marker that `make test-fast` leaves out, the factories of the portal's rows, the URL builders
the applications of one test process share, and the servers it serves from its threads."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
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


LISTEN, ESTABLISHED = "0A", "01"  # TCP states as /proc/net/tcp writes them


def _sockets_of_this_process(url: str, state: str) -> int:
    """How many of this process's open files are TCP sockets on the port of `url` (its own
    end: a server's) in `state`. A connection a server accepted is one of its files."""
    files = set()
    for descriptor in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            files.add(os.readlink(f"/proc/self/fd/{descriptor}"))
    port = f"{urlsplit(url).port:04X}"
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, its_state, inode = (line.split()[i] for i in (1, 3, 9))
        mine = f"socket:[{inode}]" in files
        count += mine and its_state == state and local.endswith(f":{port}")
    return count


def _reset_by_peer(error: BaseException) -> bool:
    """Whether a ConnectionResetError is behind `error` (urllib3 and requests wrap it)."""
    causes = [cause for cause in error.args if isinstance(cause, BaseException)]
    return isinstance(error, ConnectionResetError) or any(map(_reset_by_peer, causes))


def test_the_sandbox_of_a_test_is_served_by_this_process_and_still_resets_connections(sandbox):
    """No process to start for a sandbox: the worker serves it from a thread, with the request
    handler of `python -m sandbox`, which turns the `reset` fault into a reset connection."""
    assert _sockets_of_this_process(sandbox.base_url, LISTEN) == 1
    sandbox.control("POST", "faults", {"mode": "reset"})
    with pytest.raises(requests.ConnectionError) as caught:
        requests.get(f"{sandbox.api_url}/ping", headers=sandbox.headers(), timeout=10)
    assert _reset_by_peer(caught.value), caught.value


def test_a_sandbox_served_by_this_process_ends_its_connections_when_it_stops(tmp_path):
    """As when a sandbox process ends: a request held up by the `slow` fault neither holds up
    the stop nor gets its answer later, and nothing listens any more."""
    with run_sandbox(tmp_path / "sandbox.db") as server:
        ping = f"{server.api_url}/ping"
        server.control("POST", "faults", {"mode": "slow", "delay_ms": 5000})
        with ThreadPoolExecutor(1) as pool:
            held = pool.submit(requests.get, ping, headers=server.headers(), timeout=30)
            wait_for(lambda: _sockets_of_this_process(server.base_url, ESTABLISHED) == 1)
            started = time.monotonic()
            server.stop()
            assert time.monotonic() - started < 1, "the stop waited for the held request"
            assert not server.serving()
            with pytest.raises(requests.ConnectionError):
                held.result()
        assert _sockets_of_this_process(server.base_url, LISTEN) == 0
        with pytest.raises(requests.ConnectionError):
            requests.get(ping, headers=server.headers(), timeout=10)


def test_a_portal_served_by_this_process_leaves_the_task_queue_to_the_tests(tmp_path, sandbox):
    """`create_app` points the process's task queue at the application it makes. The portal
    served from a thread gets its queue where the process had it (its instance folder), and
    the process's queue stays with the tests' applications (TESTING), where their tasks run."""
    from portal.live.worker import queue

    with run_portal(tmp_path, sandbox) as server:
        assert _sockets_of_this_process(server.url, LISTEN) == 1
        assert requests.get(f"{server.url}/healthz", timeout=10).ok
        assert (tmp_path / "queue.sqlite3").exists(), "the served portal's own queue"
        (application,) = queue._application
        assert application.config["TESTING"]
        assert getattr(queue.huey.storage, "filename", "") != str(tmp_path / "queue.sqlite3")
