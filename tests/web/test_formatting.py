"""How API values read: exact amounts, times in the user's zone, badges for any status text."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from portal.web.formatting import badge, money, time_zone_names, web_link, when

MOMENT = datetime(2024, 7, 1, 12, 30, 5, 123456, tzinfo=UTC)


def test_money_reads_as_a_person_writes_it_and_is_never_rounded():
    assert money(Decimal("0.10000000"), "BTC") == "0.1 BTC"
    assert money(Decimal("1234567.5"), "USD") == "1,234,567.50 USD"
    assert money(Decimal("12000.00000000"), "USDT") == "12,000 USDT"
    assert money(Decimal("0.005"), "USD") == "0.005 USD", "a digit of a cent is kept"
    assert money(Decimal("0E-8"), "BTC") == "0 BTC" and money(Decimal(0), "USD") == "0.00 USD"
    assert money(Decimal("-1234.56780000"), "ETH") == "-1,234.5678 ETH"
    assert money(Decimal("1E-8")) == "0.00000001"
    assert money(Decimal("1E+3")) == "1,000"
    assert money(None, "BTC") == "—"


def test_pages_show_amounts_grouped_and_exports_keep_them_exact(app):
    from portal.reports.rules.csv_rows import decimal_cell

    with app.test_request_context():
        page = app.jinja_env.from_string("{{ amount | money('BTC') }}").render(
            amount=Decimal("1500.25000000")
        )
    assert page == "1,500.25 BTC"
    assert decimal_cell(Decimal("1500.25000000")) == "1500.25000000"


def test_time_zones_are_places_without_aliases():
    names = time_zone_names()
    assert {"Europe/Berlin", "America/New_York", "Asia/Kolkata", "Europe/Kyiv"} <= set(names)
    assert not {"GB-Eire", "W-SU", "US/Eastern", "Asia/Calcutta", "Etc/GMT+5"} & set(names)
    assert names[0].startswith("Africa/") and names[-1] == "UTC"
    assert list(names[:-1]) == sorted(names[:-1])


def test_times_in_utc_by_default(app):
    with app.test_request_context():
        html = when(MOMENT, full=True)
    assert html == (
        '<time datetime="2024-07-01T12:30:05.123456Z" title="2024-07-01 12:30:05 UTC">'
        "2024-07-01 12:30:05 UTC</time>"
    )


def _full_time_for(app, accounts, zone: str) -> str:
    """`when(MOMENT, full=True)` as the operator sees it with `zone` as their time zone."""
    from flask_login import login_user

    from portal.identity.rules.accounts import find_user

    with app.test_request_context():
        user = find_user(accounts.operator)
        user.time_zone = zone
        login_user(user)
        return when(MOMENT, full=True)


@pytest.mark.parametrize("zone", ["UTC", "Etc/UTC", "Zulu"])
def test_a_user_who_chose_utc_sees_it_once(app, accounts, zone):
    assert _full_time_for(app, accounts, zone).endswith("2024-07-01 12:30:05 UTC</time>")


def test_times_in_the_users_zone_with_utc_beside(app, accounts):
    html = _full_time_for(app, accounts, "Europe/Berlin")
    assert ">2024-07-01 14:30:05 CEST</time>" in html
    assert '<span class="muted">(2024-07-01 12:30:05 UTC)</span>' in html


def test_badges_for_known_and_unknown_statuses():
    known = {0: "new", 1: "confirmed"}
    assert badge("confirmed", known) == '<span class="badge status-confirmed">Confirmed</span>'
    assert badge("<b>held</b>", known) == (
        '<span class="badge status-other">&lt;b&gt;held&lt;/b&gt;</span>'
    )


def test_only_web_addresses_become_links():
    assert web_link("https://pay.example/1") == "https://pay.example/1"
    assert web_link("javascript:alert(1)") is None
    assert web_link(None) is None


def test_templates_print_every_decimal_in_full(app):
    """Not only through `money`: `str` would print a small amount as 4.2E-7."""
    with app.test_request_context():
        page = app.jinja_env.from_string("{{ fee }} / {{ rate }}").render(
            fee=Decimal("0.00000042"), rate=Decimal("1E+3")
        )
    assert page == "0.00000042 / 1000"
