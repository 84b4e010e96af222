"""The exchange page draws its rates with the shared table of the rates page (rates/_table.html),
keeping its own words when the payment service offers no pair."""

from __future__ import annotations

import re

import pytest

from tests.support.forms import signed_in
from tests.support.money import connect, text


@pytest.fixture
def owner(app, accounts, module_sandbox):
    connect(app, module_sandbox)
    return signed_in(app, accounts.owner)


def test_exchange_rates_in_the_shared_table(owner):
    page = owner.get("/exchange")
    html = page.get_data(as_text=True)
    assert page.status_code == 200
    assert '<th scope="row">BTC/ETH</th>' in html
    assert re.search(r"1 BTC = \d+(\.\d+)? ETH", text(page))
    assert "sent no rates" not in html and "offers no exchange pair" not in html


def test_no_exchange_pair_keeps_the_exchange_pages_words(owner, monkeypatch):
    from portal.api.client import MerchantApiClient

    monkeypatch.setattr(MerchantApiClient, "get_exchange_rates", lambda _self: {})
    page = owner.get("/exchange")
    assert page.status_code == 200
    assert "The payment service offers no exchange pair right now." in text(page)
    assert "The payment service sent no rates." not in text(page)


def test_rates_page_keeps_its_own_empty_words(owner, monkeypatch):
    from portal.api.client import MerchantApiClient

    monkeypatch.setattr(MerchantApiClient, "get_rates", lambda _self: {})
    page = owner.get("/rates")
    assert page.status_code == 200
    assert "The payment service sent no rates." in text(page)
