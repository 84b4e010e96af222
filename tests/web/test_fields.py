"""The operation and settings forms and `web_link` use the shared checks of `portal.web.fields` and
`portal.payments.rules.shops`: the same amounts as before, and addresses refused as `is_web_url`
does."""

from __future__ import annotations

from decimal import Decimal

import pytest

from portal.money.rules.idempotency import new_key
from portal.payments.pages.operations.forms import (
    AMOUNT_NOT_POSITIVE,
    AMOUNT_SHAPE,
    NewOperationForm,
)
from portal.web.formatting import web_link

# Addresses the old checks let through: a link or redirect a browser would mangle.
NOT_WEB_ADDRESSES = [
    "https://",
    "https://shop.example/a\tb",
    "https://shop.example/\x01",
    "https://shop.example\\@evil.example",
    "https://shop.example:port/",
    "https://shop.example/a b",
]


def _new_operation(app, **fields: str) -> NewOperationForm:
    data = {"amount": "1", "currency": "BTC", "order_id": "A-1", "intent": new_key(), **fields}
    with app.test_request_context("/operations/new", method="POST", data=data):
        form = NewOperationForm(meta={"csrf": False})
        form.offer(["BTC", "ETH"])
        form.validate()
    return form


@pytest.mark.parametrize("url", NOT_WEB_ADDRESSES)
def test_web_link_only_for_web_addresses(url):
    assert web_link(url) is None


@pytest.mark.parametrize("url", ["https://pay.example/1", "HTTP://pay.example:8080/a?b=c"])
def test_web_link_keeps_web_addresses(url):
    assert web_link(url) == url


@pytest.mark.parametrize("url", NOT_WEB_ADDRESSES)
def test_redirect_url_refused_as_is_web_url_refuses_it(app, url):
    form = _new_operation(app, redirect_url=url)
    assert form.redirect_url.errors == ["Enter an address starting with http:// or https://."]


def test_redirect_url_taken_without_its_surrounding_spaces(app):
    form = _new_operation(app, redirect_url="  https://shop.example/thanks ")
    assert not form.errors and form.redirect_url.data == "https://shop.example/thanks"


@pytest.mark.parametrize(
    ("typed", "amount"),
    [
        ("1", Decimal("1")),
        (" 25.50 ", Decimal("25.50")),
        ("0.00000001", Decimal("0.00000001")),
        ("999999999999.99999999", Decimal("999999999999.99999999")),
    ],
)
def test_amounts_the_form_takes_as_decimals(app, typed, amount):
    form = _new_operation(app, amount=typed)
    assert not form.errors and form.amount.data == amount
    assert isinstance(form.amount.data, Decimal)


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("0", AMOUNT_NOT_POSITIVE),
        ("0.00", AMOUNT_NOT_POSITIVE),
        ("-3", AMOUNT_SHAPE),
        ("1e5", AMOUNT_SHAPE),
        ("1.123456789", AMOUNT_SHAPE),
        (".5", AMOUNT_SHAPE),  # a digit before the point, as before
        ("1000000000000", AMOUNT_SHAPE),  # at most 12 digits before the point
        ("NaN", AMOUNT_SHAPE),
        ("1,5", AMOUNT_SHAPE),
        (" ", "Enter the amount."),
        ("", "Enter the amount."),
    ],
)
def test_amounts_the_form_refuses_in_its_own_words(app, typed, message):
    form = _new_operation(app, amount=typed)
    assert form.amount.errors == [message]
    assert form.amount.data is None


def test_settings_fields_stripped_with_the_shared_filter(app):
    from portal.settings.pages.forms import CheckoutSettingsForm

    data = {"display_name": "  Acme shop ", "shop_url": " https://shop.example/ "}
    with app.test_request_context("/settings", method="POST", data=data):
        form = CheckoutSettingsForm(meta={"csrf": False})
        assert form.validate(), form.errors
    assert form.display_name.data == "Acme shop"
    assert form.shop_url.data == "https://shop.example/"


def test_a_long_list_reads_as_wtforms_writes_it_with_the_chosen_option_selected(app):
    """The time zones' options are made once per process: a page still selects the user's zone,
    escapes labels and carries the select's own attributes."""
    from wtforms.widgets import Select

    from portal.identity.pages.account.forms import TimeZoneForm

    with app.test_request_context():
        for zone in ("Europe/Berlin", "America/Argentina/Buenos_Aires", "UTC"):
            form = TimeZoneForm(time_zone=zone)
            cached = form.time_zone(data_browser_zone="")
            assert f'<option selected value="{zone}">' in cached
            assert cached.count("<option selected") == 1
            form.time_zone.widget = Select()
            assert cached == form.time_zone(data_browser_zone="")
