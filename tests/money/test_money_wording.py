"""The words and figures people noticed on the money pages: a refused withdrawal says why, a
cross exchange shows the addresses entered and its list a status, amounts read without trailing
zeros. (The operations list's words: tests/payments/test_operations_wording.py.)"""

from __future__ import annotations

import pytest

from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.money import (
    BTC_ADDRESS,
    ETH_ADDRESS,
    book_usual_addresses,
    connect,
    post,
    submit,
    text,
)


@pytest.fixture
def owner(app, accounts, module_sandbox):
    connect(app, module_sandbox)
    book_usual_addresses(app)
    return signed_in(app, accounts.owner)


def _withdraw(owner, amount: str) -> None:
    form = {"amount": amount, "wallet": "BTC", "address": BTC_ADDRESS}
    review = post(owner, "/withdrawals/new", form)
    assert review.status_code == 302
    post(owner, review.location + "/confirm")


def test_a_refused_withdrawal_says_why_in_the_list(owner) -> None:
    _withdraw(owner, "30")  # above the sandbox's daily limit (error 12)
    listing = text(owner.get("/withdrawals"))
    assert "Refused" in listing
    assert "above what the wallet can pay out now" in listing


def test_cross_exchange_shows_the_addresses_entered_and_its_list_a_status(owner) -> None:
    form = {
        "sell_currency": "BTC",
        "buy_currency": "ETH",
        "sell_amount": "0.01000000",
        "sell_address": BTC_ADDRESS,
        "buy_address": ETH_ADDRESS,
    }
    created = submit(owner, "/cross-exchanges/new", form)
    assert created.status_code == 302
    page = text(owner.get(created.location))
    assert f"Refund address {BTC_ADDRESS}" in page
    assert f"Payout address {ETH_ADDRESS}" in page
    assert "Sell 0.01 BTC" in page, "a crypto amount without its trailing zeros"

    listing = owner.get("/cross-exchanges").get_data(as_text=True)
    assert '<th scope="col">Status</th>' in listing
    assert f'hx-get="{created.location}"' in listing, "each row asks for its status"
    status = owner.get(created.location, headers=HTMX).get_data(as_text=True)
    assert '<span class="cross-exchange-status">Awaiting payment</span>' in status
