"""The exchange is reviewed before it is sent: the review shows the quote and
sends nothing, **Confirm exchange** sends once however often it is pressed, the quote hint says
what is missing, and the exchanges made in the portal are listed for every role."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest

from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.money import (
    connect,
    exchange_confirm_form,
    intent_key,
    post,
    review_exchange,
    text,
)

DEAL = {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.01", "buy_amount": ""}


@pytest.fixture
def owner(app, accounts, sandbox):
    connect(app, sandbox)
    return signed_in(app, accounts.owner)


def test_the_review_shows_the_quote_and_sends_nothing(owner, sandbox):
    before = sandbox.count("exchanges")
    review = review_exchange(owner, DEAL)
    assert review.status_code == 200
    page = text(review)
    assert "Review the exchange" in page
    assert "Sell 0.01 BTC" in page
    assert re.search(r"Buy about [\d.]+ ETH, less the fee", page)
    assert re.search(r"Rate [\d.]+ ETH per BTC", page)
    assert "Fee In BTC, the currency you sell" in page
    assert "Confirm exchange" in page
    assert sandbox.count("exchanges") == before, "a review sends nothing"


def test_a_buy_amount_is_reviewed_with_the_sell_amount_it_would_take(owner):
    page = text(review_exchange(owner, {**DEAL, "sell_amount": "", "buy_amount": "0.3"}))
    assert re.search(r"Sell about [\d.]+ BTC, plus the fee", page)
    assert "Buy 0.3 ETH" in page


def test_confirm_exchange_sends_once_however_often_it_is_pressed(owner, sandbox):
    before = sandbox.count("exchanges")
    review = review_exchange(owner, DEAL)
    confirm = exchange_confirm_form(review)
    assert confirm["intent"] and confirm["sell_amount"] == "0.01"
    first = owner.post("/exchange", data=confirm)
    assert (first.status_code, first.location) == (302, "/exchange")
    result = text(owner.get("/exchange"))
    assert "The exchange is done." in result and "Sold 0.01 BTC" in result
    assert re.search(r"Fee [\d.]+ BTC", result), "the fee with its currency"
    again = owner.post("/exchange", data=confirm)  # a second click, a resend
    assert again.status_code == 302
    assert "nothing was sent again" in text(owner.get(again.location))
    assert sandbox.count("exchanges") == before + 1


def test_bad_input_goes_back_to_the_form_from_thereview_exchange(owner, sandbox):
    review = review_exchange(owner, {**DEAL, "buy_amount": "1"})
    assert review.status_code == 422
    assert "Enter only one of the two amounts" in text(review)
    assert "Confirm exchange" not in text(review)


@pytest.mark.parametrize(
    ("query", "hint"),
    [
        (
            {**DEAL, "buy_amount": "0.3"},
            "Enter only one of the two amounts: the other one follows from the rate.",
        ),
        (
            {**DEAL, "buy_currency": "BTC"},
            "A currency cannot be exchanged for itself: choose two different currencies",
        ),
        ({**DEAL, "sell_amount": ""}, "Choose both currencies and enter one amount"),
        ({**DEAL, "buy_currency": "USD"}, "There is no exchange rate for BTC to USD"),
    ],
    ids=["both amounts", "same currency", "no amount", "no rate"],
)
def test_the_quote_hint_says_what_is_missing(owner, query, hint):
    key = intent_key(owner, "/exchange")
    fragment = owner.get("/exchange?" + urlencode({**query, "intent": key}), headers=HTMX)
    assert hint in text(fragment)
    assert "Quote:" not in text(fragment)


def test_exchanges_made_are_listed_for_every_role(app, accounts, owner, sandbox):
    assert "No exchange has been made through the portal yet." in text(owner.get("/exchange/made"))
    confirm = exchange_confirm_form(review_exchange(owner, DEAL))
    assert owner.post("/exchange", data=confirm).status_code == 302

    for role in ("owner", "operator", "accountant"):
        client = owner if role == "owner" else signed_in(app, accounts.by_role(role))
        listing = client.get("/exchange/made")
        assert listing.status_code == 200, role
        page = text(listing)
        assert "1 exchange made in the portal" in page
        assert "0.01 BTC" in page and re.search(r"[\d.]+ ETH per BTC", page)
        assert re.search(r"\b0\.00002(0+)? BTC\b", page), "the fee (0.2 % of the sale), in BTC"
        assert accounts.owner in page, "who made it"

    accountant = signed_in(app, accounts.accountant)
    assert accountant.get("/exchange/review?" + urlencode(DEAL)).status_code == 403
    assert post(accountant, "/exchange", DEAL).status_code == 403
