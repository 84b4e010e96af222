"""Which webhook addresses production refuses: private, loopback, link-local and reserved IPv4
space in every spelling, and every IPv6 form that reaches it (NAT64, 6to4, IPv4-compatible,
mapped, SIIT) or is not global unicast (site-local, reserved). Literal addresses only: no DNS."""

from __future__ import annotations

import pytest
from flask import Flask

from portal.live.rules.webhooks import UrlProblem, checked_addresses, url_problem

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
