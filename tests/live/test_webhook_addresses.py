"""Which webhook addresses production refuses: private, loopback, link-local and reserved IPv4
space in every spelling, and every IPv6 form that reaches it (NAT64, 6to4, IPv4-compatible,
mapped, SIIT) or is not global unicast (site-local, reserved). Literal addresses only: no DNS.

Then host names as the connection spells them: a non-ASCII name is saved, checked and dialled
in its IDNA (`xn--`) form, a `%` escape (which urllib3 decodes) is refused, so the name looked
up is the name dialled and a name that resolves to loopback after the check is not reached."""

from __future__ import annotations

import socket

import pytest
import sqlalchemy as sa
import urllib3
from flask import Flask

from portal.api.session import pinned_to
from portal.extensions import db
from portal.live.models import WebhookEndpoint
from portal.live.rules.webhooks import UrlProblem, checked_addresses, url_problem
from tests.live.test_webhook_transport import PUBLIC, send_one_event
from tests.live.test_webhooks import configure

REFUSED = [
    # IPv4 spellings of loopback and private addresses
    "http://127.0.0.1/hooks",
    "http://2130706433/hooks",  # decimal
    "http://0x7f000001/hooks",  # hex
    "http://0177.0.0.1/hooks",  # octal
    "http://127.1/hooks",
    "http://0/hooks",
    "http://10.0.0.1/hooks",
    "http://169.254.169.254/latest/meta-data",  # cloud metadata
    "http://100.64.0.1/hooks",  # shared address space
    "http://240.0.0.1/hooks",  # reserved
    "http://224.0.0.1/hooks",  # multicast
    # IPv6 forms
    "http://[::1]/hooks",
    "http://[::ffff:127.0.0.1]/hooks",  # IPv4-mapped
    "http://[::ffff:8.8.8.8]/hooks",  # mapped, even to a public address
    "http://[64:ff9b::a9fe:a9fe]/hooks",  # NAT64 of 169.254.169.254
    "http://[64:ff9b::808:808]/hooks",  # NAT64, even of a public address
    "http://[64:ff9b:1::a00:1]/hooks",  # local-use NAT64 of 10.0.0.1
    "http://[::7f00:1]/hooks",  # IPv4-compatible 127.0.0.1
    "http://[::a9fe:a9fe]/hooks",  # IPv4-compatible 169.254.169.254
    "http://[::ffff:0:7f00:1]/hooks",  # SIIT 127.0.0.1
    "http://[2002:7f00:1::]/hooks",  # 6to4 of 127.0.0.1
    "http://[2002:a9fe:a9fe::]/hooks",  # 6to4 of 169.254.169.254
    "http://[2002:808:808::1]/hooks",  # 6to4, even of a public address
    "http://[fec0::1]/hooks",  # site-local
    "http://[5f00::1]/hooks",  # reserved
    "http://[fd00::1]/hooks",  # unique local
    "http://[fe80::1]/hooks",  # link-local
    "http://[ff02::1]/hooks",  # multicast
    "http://[2001:db8::1]/hooks",  # documentation
    "http://[2001::1]/hooks",  # Teredo
]
ACCEPTED = [
    "https://8.8.8.8/hooks",
    "https://93.184.215.14/hooks",
    "https://[2001:4860:4860::8888]/hooks",
    "https://[2a00:1450:4001:82b::200e]/hooks",
]


@pytest.fixture
def production():
    app = Flask(__name__)
    app.config.update(ENV="production", WEBHOOK_ALLOW_PRIVATE=None)
    with app.app_context():
        yield app


@pytest.mark.parametrize("url", REFUSED)
def test_private_and_reserved_addresses_are_refused_in_every_form(production, url):
    assert url_problem(url) == UrlProblem.PRIVATE


@pytest.mark.parametrize("url", ACCEPTED)
def test_public_addresses_are_accepted_and_pinned(production, url):
    problem, addresses = checked_addresses(url)
    assert problem is None
    assert addresses == (url.split("//")[1].split("/")[0].strip("[]"),)


def test_outside_production_nothing_is_resolved_nor_pinned(production):
    production.config["ENV"] = "development"
    assert checked_addresses("http://127.0.0.1:8000/hooks") == (None, ())
    production.config["WEBHOOK_ALLOW_PRIVATE"] = False
    assert url_problem("http://[::7f00:1]/hooks") == UrlProblem.PRIVATE


# --- Host names as the connection spells them -----------------------------------------------


@pytest.mark.parametrize(
    "url", ["http://rebind%69ng.test:8080/webhooks", "http://[fe80::1%25lo]:8080/webhooks"]
)
def test_a_host_with_a_percent_escape_is_refused_when_saved_and_nothing_is_stored(app, owner, url):
    refused = configure(owner, url)
    assert refused.status_code == 422
    assert "letters, digits, dots and hyphens" in refused.get_data(as_text=True)
    with app.app_context():
        assert db.session.scalars(sa.select(WebhookEndpoint)).all() == []


def test_a_non_ascii_host_is_stored_and_checked_in_its_idna_form(app, owner, monkeypatch):
    assert configure(owner, "https://Rebïnding.test:8443/webhooks").status_code == 302
    with app.app_context():
        (endpoint,) = db.session.scalars(sa.select(WebhookEndpoint))
        assert endpoint.url == "https://xn--rebnding-w2a.test:8443/webhooks"

    resolve = socket.getaddrinfo
    lookups = []

    def public(host, *args, **kwargs):
        lookups.append(host)
        return resolve(PUBLIC, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", public)
    app.config["WEBHOOK_ALLOW_PRIVATE"] = False
    with app.app_context():
        assert checked_addresses("https://rebïnding.test/webhooks") == (None, (PUBLIC,))
    assert lookups == ["xn--rebnding-w2a.test"]


@pytest.mark.parametrize("name", ["rebïnding.test", "rebind%69ng.test"])
def test_a_name_spelled_otherwise_that_resolves_to_loopback_after_the_check_is_not_reached(
    app, shop, monkeypatch, name
):
    """DNS rebinding through a spelling requests rewrites (IDNA, a `%` escape): the name
    answers a public address to its first lookup and loopback (where the shop listens) to every
    later one. Saved as it is (not through the form), the POST goes to the checked public
    address or nowhere; the shop gets nothing and no connection looks the name up again."""
    port = int(shop.url.rsplit(":", 1)[1].split("/")[0])
    resolve = socket.getaddrinfo
    lookups = []

    def rebinding(host, *args, **kwargs):
        if not (isinstance(host, str) and host.endswith(".test")):
            return resolve(host, *args, **kwargs)
        lookups.append(host)
        return resolve(PUBLIC if len(lookups) == 1 else "127.0.0.1", *args, **kwargs)

    def dial(address, *args, **kwargs):
        """The public address is refused here, never dialled off the machine."""
        if address[0] == PUBLIC:
            raise ConnectionRefusedError(address)
        return create_connection(address, *args, **kwargs)

    create_connection = urllib3.util.connection.create_connection
    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    monkeypatch.setattr(urllib3.util.connection, "create_connection", dial)
    (attempt,) = send_one_event(app, f"http://{name}:{port}/webhooks", private_allowed=False)
    assert attempt.status is None, attempt.error
    assert shop.requests() == []
    assert len(lookups) <= 1  # the check before the POST at most; never the connection


@pytest.mark.parametrize("host", ["sh%6fp.test", "rebïnding.test"])
def test_a_pin_no_connection_would_match_is_refused(host):
    """A pin on a spelling urllib3 rewrites would never apply: refused, not silently ignored."""
    with pytest.raises(ValueError, match="not a host"), pinned_to(host, [PUBLIC]):
        pytest.fail("pinned")
