"""The checkout page's pieces: redirect codes, languages, states, limits and its settings page."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from werkzeug.datastructures import LanguageAccept, MultiDict
from werkzeug.http import parse_accept_header

from portal.api import Operation
from portal.payments.pages.checkout.outcomes import (
    AFTER_MONEY,
    CHECKING,
    LATE_ACCEPTED,
    OUTCOMES,
    STATE_OUTCOMES,
    SUCCESS,
    UNKNOWN,
    notice_for,
    outcome_for,
    outcome_key,
)
from portal.payments.pages.checkout.payments import LABELS, Payment, Reading
from portal.payments.rules.operation_money import State, amount_due
from portal.payments.rules.state_words import STATE_WORDS
from portal.web.i18n import preferred_locale
from portal.web_urls import is_web_url
from tests.support.forms import csrf_token, sign_in


@pytest.mark.parametrize(
    ("pairs", "key"),
    [
        ([], SUCCESS),
        ([("other", "1")], SUCCESS),
        *[([(name, "5")], "5") for name in ("status", "code", "status_code")],
        *[([("status", str(code))], str(code)) for code in range(1, 9)],
        ([("status", "")], UNKNOWN),
        ([("status", "0")], UNKNOWN),
        ([("status", "9")], UNKNOWN),
        ([("status", "04")], UNKNOWN),
        ([("status", "٤")], UNKNOWN),
        ([("status", "abc")], UNKNOWN),
        ([("status", "1"), ("status", "1")], "1"),
        ([("status", "1"), ("code", "2")], UNKNOWN),
        ([("status", " 2 ")], "2"),
    ],
)
def test_outcome_key(pairs, key):
    assert outcome_key(MultiDict(pairs)) == key


def test_every_code_has_its_own_words(app):
    with app.test_request_context():
        titles = {str(outcome.title) for outcome in OUTCOMES.values()}
    assert len(titles) == len(OUTCOMES) == 10


@pytest.mark.parametrize(
    ("header", "locale"),
    [
        ("es-ES,es;q=0.9", "es"),
        ("de-CH", "de"),
        ("ru", "ru"),
        ("en-US,ru;q=0.9", "en"),
        ("fr-FR, de;q=0.5", "de"),
        ("ru;q=0.5, de;q=0.8", "de"),
        ("pt-BR", "en"),
        ("", "en"),
        ("*", "en"),
        (";;;,,q=", "en"),
    ],
)
def test_preferred_locale(header, locale):
    assert preferred_locale(parse_accept_header(header, LanguageAccept)) == locale


def _operation(
    status: str, paid: str | None = None, *, currency: str = "BTC", rate: str = "1"
) -> Operation:
    now = datetime.now(UTC)
    return Operation(
        id="1", category="application", amount=Decimal(10), fee=Decimal(0), rate=Decimal(rate),
        currency=currency, currency_paid="BTC", status=status, address="tb1q", created_at=now,
        updated_at=now, amount_paid=Decimal(paid) if paid is not None else None,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("currency", "rate", "due"),
    [
        ("BTC", "1", "10"),
        ("BTC", "0", "10"),  # the same currency needs no rate
        ("USD", "0.0000166666666", "0.00016667"),  # rounded up: never less than the order
        ("USD", "0", None),  # no rate to convert with: unknown, not zero
    ],
)
def test_the_amount_due_in_the_payment_currency(currency, rate, due):
    expected = Decimal(due) if due is not None else None
    assert amount_due(_operation("new", currency=currency, rate=rate)) == expected


LIVE = Reading.LIVE


def test_the_page_says_each_state_in_the_words_of_every_page(app):
    with app.test_request_context():
        assert {state: str(label) for state, label in LABELS.items()} == {
            state: words for state, words in STATE_WORDS.items() if state is not State.SENT
        }


def test_what_is_left_and_what_was_paid_too_much_never_go_below_zero():
    short = Payment(LIVE, State.PARTLY_PAID, difference=Decimal("-0.015"))
    assert (short.left, short.surplus) == (Decimal("0.015"), 0)
    over = Payment(LIVE, State.OVERPAID, difference=Decimal("0.01"))
    assert (over.left, over.surplus) == (0, Decimal("0.01"))
    assert Payment(Reading.UNREACHABLE).left is None


@pytest.mark.parametrize("code", ["", "1", "4", "5", "8", "x"])
def test_the_state_chooses_the_heading_when_the_page_knows_it(code):
    args = MultiDict({"status": code} if code else {})
    for state, outcome in STATE_OUTCOMES.items():
        assert outcome_for(Payment(LIVE, state), args) is outcome
    for status, outcome in AFTER_MONEY.items():
        assert outcome_for(Payment(LIVE, State.PAID_LATE, status), args) is outcome
    assert outcome_for(Payment(LIVE, State.PAID_LATE, "confirmed"), args) is LATE_ACCEPTED
    assert outcome_for(Payment(LIVE, None, "something new"), args) is CHECKING
    mirrored = Payment(Reading.UNREACHABLE, State.PARTLY_PAID, "new", as_of=datetime.now(UTC))
    assert outcome_for(mirrored, args) is STATE_OUTCOMES[State.PARTLY_PAID]


@pytest.mark.parametrize("reading", [Reading.UNREACHABLE, Reading.UNAVAILABLE])
def test_the_code_chooses_the_heading_when_nobody_can_tell_the_state(reading):
    for key, outcome in OUTCOMES.items():
        args = MultiDict() if key == SUCCESS else MultiDict({"status": key})
        assert outcome_for(Payment(reading), args) is outcome
    assert outcome_for(Payment(reading), MultiDict()) is CHECKING, "never thanks unseen"


def test_a_notice_says_why_an_open_payment_came_back():
    six, eight = MultiDict({"status": "6"}), MultiDict({"status": "8"})
    assert notice_for(Payment(LIVE, State.AWAITING_PAYMENT), six) is not None
    assert notice_for(Payment(LIVE, State.PARTLY_PAID), eight) is not None
    assert notice_for(Payment(LIVE, State.AWAITING_PAYMENT), MultiDict({"status": "4"})) is None
    assert notice_for(Payment(LIVE, State.FAILED), eight) is None, "the heading already says it"


def test_only_open_live_payments_are_payable_and_only_unsettled_ones_are_polled():
    url = "https://pay.example/pay/1"
    assert Payment(LIVE, State.AWAITING_PAYMENT, "new", payment_url=url).payable
    assert Payment(LIVE, State.PARTLY_PAID, "new", payment_url=url).payable
    assert not Payment(LIVE, State.AWAITING_PAYMENT, payment_url="javascript:alert(1)").payable
    assert not Payment(LIVE, State.PAID, "confirmed", payment_url=url).payable
    mirrored = Payment(Reading.UNREACHABLE, State.PARTLY_PAID, "new", as_of=datetime.now(UTC))
    assert not mirrored.payable, "the hosted page may have taken the rest meanwhile"
    assert not mirrored.final, "asked again until the API answers"
    assert Payment(LIVE, State.OVERPAID, "confirmed").final
    assert not Payment(LIVE, State.OVERPAID, "new").final
    assert not Payment(LIVE, None, "something new").final
    assert not Payment(Reading.UNREACHABLE).final
    assert Payment(Reading.UNAVAILABLE).final


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://shop.example/", True),
        ("http://shop.example:8080/a?b=c", True),
        ("javascript:alert(1)", False),
        ("//shop.example", False),
        ("/relative", False),
        ("ftp://shop.example", False),
        ("https://", False),
        ("https://shop.example/a b", False),
        ("https://shop.example\\@evil.example", False),
        ("https://shop.example:99999999999/", False),
        ("https://shop.example:port/", False),
        ("", False),
        (None, False),
    ],
)
def test_is_web_url(url, ok):
    assert is_web_url(url) is ok


@pytest.fixture
def limited_config(portal_config):
    portal_config["CHECKOUT_LIMIT_PER_ADDRESS"] = "3 per minute"
    return portal_config


def test_checkout_pages_are_limited_per_address(limited_config, client, accounts):
    for _ in range(3):
        assert client.get("/checkout/unknown").status_code == 404
    response = client.get("/checkout/unknown/pay", headers={"Accept-Language": "de"})
    assert response.status_code == 429
    assert "Zu viele Anfragen" in response.get_data(as_text=True)
    other_address = {"REMOTE_ADDR": "192.0.2.9"}
    assert client.get("/checkout/unknown", environ_base=other_address).status_code == 404
    assert sign_in(client, accounts.owner).status_code == 302, "the portal is not limited"


def test_polling_never_reaches_the_default_limit(client):
    for _ in range(30):  # two and a half minutes of polling, at once
        assert client.get("/checkout/unknown", headers={"HX-Request": "true"}).status_code == 404


def _save(client, **data: str):
    data["csrf_token"] = csrf_token(client, "/settings/checkout")
    return client.post("/settings/checkout", data=data)


def test_owner_sets_the_checkout_page(app, client, accounts):
    from portal.identity.rules.accounts import merchant_named

    sign_in(client, accounts.owner)
    page = client.get("/settings/checkout").get_data(as_text=True)
    assert "Display name" in page
    assert "Shop URL" in page
    response = _save(client, display_name=" Acme Coffee ", shop_url="https://shop.example/")
    assert response.status_code == 302
    with app.app_context():
        merchant = merchant_named("Acme")
        assert merchant.display_name == "Acme Coffee"
        assert merchant.shop_url == "https://shop.example/"

    for bad in ("javascript:alert(1)", "ftp://shop.example", "shop.example", "//shop.example"):
        response = _save(client, display_name="X", shop_url=bad)
        assert response.status_code == 422
        assert "Enter an address starting with http:// or https://." in response.get_data(
            as_text=True
        )
    for bad in (
        "help",
        "help@localhost",
        "a b@shop.example",
        "help@shop.example?cc=x@evil.example",
        '"><script>@shop.example',
    ):
        response = _save(client, support_email=bad)
        assert response.status_code == 422
        assert "Enter one email address, such as support@example.com." in response.get_data(
            as_text=True
        )
    response = _save(client, display_name="Acme Coffee", support_email=" help@shop.example ")
    assert response.status_code == 302
    page = client.get("/settings/checkout").get_data(as_text=True)
    assert "Support email" in page
    assert 'value="help@shop.example"' in page
    assert _save(client, display_name="", shop_url="", support_email="").status_code == 302
    with app.app_context():
        merchant = merchant_named("Acme")
        assert (merchant.display_name, merchant.shop_url, merchant.support_email) == (
            None,
            None,
            None,
        )
