"""How a webhook POST reaches a shop: the address is checked again before each POST, the POST
goes to the address that was checked (a name cannot resolve to loopback in between), TLS is
still verified against the host name, no redirect is followed, and a shop's answer is never
read whole. Real servers on loopback; `webhooks.deliver_due` is what each worker tick calls."""

from __future__ import annotations

import datetime as dt
import http.server
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import requests
import urllib3

from portal.api.session import PortalSession, WatchedAdapter, pinned_to
from tests.support.dripping import flooding, run_dripping
from tests.support.mirror_rows import operation_record
from tests.support.shop import run_shop
from tests.support.tls import server_context

TIMEOUT = 1.0
PUBLIC = "93.184.215.14"  # a global address, never dialled: the test refuses it in place


@pytest.fixture
def portal_config(portal_config):
    return portal_config | {"WEBHOOK_TIMEOUT_SECONDS": TIMEOUT, "WEBHOOK_ALLOW_PRIVATE": True}


def send_one_event(app, url: str, *, private_allowed: bool = True) -> list:
    """Save `url` as Acme's endpoint (private addresses allowed, as outside production), write
    an event, then deliver with `private_allowed` as it is by then; the attempts made."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.models import WebhookAttempt
    from portal.live.rules import events, webhooks

    with app.app_context():
        acme = accounts.merchant_named("Acme", create=True)
        webhooks.save_endpoint(acme, url, ["operation.confirmed"])
        events.record(
            acme.id,
            events.EventType.OPERATION_CONFIRMED,
            dedup_key=f"transport:{url}",
            data=events.with_money(operation_record(id="op-1"), None),
            occurred_at=dt.datetime.now(dt.UTC),
            operation_id="op-1",
            notify=True,
        )
        db.session.commit()
    app.config["WEBHOOK_ALLOW_PRIVATE"] = private_allowed
    with app.app_context():
        webhooks.deliver_due(budget_seconds=10)
        return list(db.session.scalars(db.select(WebhookAttempt).order_by(WebhookAttempt.id)))


def test_the_address_is_checked_again_before_each_post(app, shop):
    """Saved while it was allowed (or resolved elsewhere), refused at the POST: nothing sent."""
    (attempt,) = send_one_event(app, shop.url, private_allowed=False)
    assert attempt.error == "Not sent: a private, loopback or reserved address"
    assert shop.requests() == []


def test_a_redirect_is_an_answer_and_is_not_followed(app, shop):
    with run_shop() as elsewhere:
        shop.status, shop.headers = 307, {"Location": elsewhere.url}
        (attempt,) = send_one_event(app, shop.url)
        assert attempt.status == 307
        assert len(shop.requests()) == 1
        assert elsewhere.requests() == []


def test_a_name_that_resolves_elsewhere_after_the_check_reaches_only_the_checked_address(
    app, shop, monkeypatch
):
    """DNS rebinding: the name answers a public address to the check and loopback (where the
    shop listens) to every later lookup; the POST goes to the checked address, never looked up
    again, and the shop gets nothing."""
    name = "rebinding.test"
    port = int(shop.url.rsplit(":", 1)[1].split("/")[0])
    resolve = socket.getaddrinfo
    lookups = []

    def rebinding(host, *args, **kwargs):
        if host != name:
            return resolve(host, *args, **kwargs)
        lookups.append(host)
        return resolve(PUBLIC if len(lookups) == 1 else "127.0.0.1", *args, **kwargs)

    def dial(address, *args, **kwargs):
        """urllib3's dialling: the public address is refused here, never dialled off the
        machine; any other goes through."""
        dialled.append(address)
        if address[0] == PUBLIC:
            raise ConnectionRefusedError(address)
        return create_connection(address, *args, **kwargs)

    dialled: list[tuple[str, int]] = []
    create_connection = urllib3.util.connection.create_connection
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    monkeypatch.setattr(urllib3.util.connection, "create_connection", dial)
    (attempt,) = send_one_event(app, f"http://{name}:{port}/webhooks", private_allowed=False)
    assert attempt.status is None, attempt.error  # the public address did not answer
    assert dialled == [(PUBLIC, port)]
    assert shop.requests() == []
    assert lookups == [name]  # the check before the POST; never the connection


# --- The pin itself, and TLS against the host name ---------------------------------------------


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = self.headers["Host"].encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@contextmanager
def _tls_shop(folder: Path, name: str) -> Iterator[int]:
    """An HTTPS server on loopback with a certificate for `name`; yields its port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    server.socket = server_context(folder, name).wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_pinned_connection_goes_to_the_address_and_verifies_tls_against_the_name(tmp_path):
    """Names that resolve nowhere (`.invalid`) reach the pinned loopback address; the request
    names the host, and TLS accepts only the certificate of that name."""
    session = requests.Session()
    session.mount("https://", WatchedAdapter(max_retries=0))
    with _tls_shop(tmp_path, "shop.invalid") as port:
        ca = str(tmp_path / "shop.invalid.pem")
        with pinned_to("shop.invalid", ["127.0.0.1"]):
            answer = session.post(f"https://shop.invalid:{port}/hooks", verify=ca, timeout=5)
        assert answer.text == f"shop.invalid:{port}"  # the Host header the shop received
        with (
            pinned_to("other.invalid", ["127.0.0.1"]),
            pytest.raises(requests.exceptions.SSLError, match=r"match|shop\.invalid"),
        ):
            session.post(f"https://other.invalid:{port}/hooks", verify=ca, timeout=5)


def test_a_proxy_from_the_environment_is_dialled_as_itself_not_at_the_pinned_address(
    monkeypatch,
):
    """The pin is the shop's: a proxy set in the environment (which resolves the shop's name
    itself) is reached at its own address, not at the shop's checked one."""
    with run_shop(webhooks=False) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.delenv(name, raising=False)
        session = PortalSession()
        session.mount("http://", WatchedAdapter(max_retries=0))
        with pinned_to("shop.invalid", ["127.0.0.2"]):  # where nothing listens on its port
            answer = session.post("http://shop.invalid:8080/hooks", data=b"{}", timeout=5)
    assert answer.status_code == 200
    assert len(proxy.requests()) == 1  # the proxy got the POST, to forward to the shop


def test_an_endless_answer_is_not_read_whole(app):
    """A shop that answers 200 and then streams its body forever: the status counts, the body
    is read up to 64 KiB and the connection dropped, long before the timeout."""
    with run_dripping(flooding(b"text/plain", b"", b"x" * 65536)) as endless:
        (attempt,) = send_one_event(app, endless.url + "/hooks")
    assert (attempt.status, attempt.error) == (200, None)
    assert attempt.duration_ms < TIMEOUT * 1000 * 0.9  # ended by the cap, not the deadline
