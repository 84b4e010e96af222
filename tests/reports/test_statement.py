"""The statement of a merchant's day against a real sandbox, whose wallets are the ground truth:
its opening and closing are the wallets read at the period's start and end, opening + lines =
closing per currency, and in the reporting currency the revaluation makes the sum hold."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from portal.api import MerchantApiClient
from portal.database import utcnow
from tests.money.test_a_merchants_day import (
    WALLETS,
    a_days_movements,
    enter_openings,
    shown,
)
from tests.money.test_balances import wallet
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import text
from tests.support.portal_app import MERCHANT, connected_portal, email


@pytest.fixture
def portal(tmp_path, sandbox):
    sandbox.set_prices(BTC="60000", ETH="3000")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        sync_now(app)
        yield app


@pytest.fixture
def api(sandbox):
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


@pytest.fixture
def day(portal, api, sandbox):
    """The scripted day: the wallets and the moment after the openings are entered, then after
    the day's movements."""
    owner = signed_in(portal, email("owner"))
    enter_openings(owner, sandbox)
    start = utcnow()
    before = {currency: wallet(sandbox, currency) for currency in WALLETS}
    a_days_movements(portal, api, sandbox, owner)
    end = utcnow()
    after = {currency: wallet(sandbox, currency) for currency in WALLETS}
    return start, before, end, after


def statement_of(app, since: datetime, until: datetime):
    from portal.identity.rules import accounts
    from portal.reports.rules.statement import statement

    with app.app_context():
        return statement(accounts.merchant_named(MERCHANT), since, until)


def added_up(opening: Decimal, lines) -> Decimal:
    """The opening plus every line the balance adds (net is a subtotal)."""
    return opening + sum((line.amount for line in lines if not line.subtotal), Decimal(0))


def figures(lines) -> dict[str, tuple[Decimal, int]]:
    return {line.line.value: (line.amount, line.count) for line in lines}


def row(page: str, row_id: str) -> str:
    """The text of one table row of a page."""
    found = re.search(rf'<tr id="{row_id}"[^>]*>(.*?)</tr>', page, re.S)
    assert found, row_id
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1)))


def test_the_days_statement_opens_and_closes_at_the_sandboxs_wallets(portal, day):
    start, before, end, after = day
    result = statement_of(portal, start, end)

    assert [wallet.currency for wallet in result.currencies][:3] == list(WALLETS)
    for wallet_statement in result.currencies[:3]:
        currency = wallet_statement.currency
        assert wallet_statement.opening == before[currency], currency
        assert wallet_statement.closing == after[currency], currency
        assert added_up(wallet_statement.opening, wallet_statement.lines) == after[currency]
    btc, eth, usdt = (figures(w.lines) for w in result.currencies[:3])
    assert btc["received"] == (Decimal("0.7"), 2)  # one in full, one in two parts seen at once
    assert btc["fees"][0] < 0 and btc["net"][0] == btc["received"][0] + btc["fees"][0]
    assert btc["withdrawals"] == (Decimal("-0.05"), 1)
    assert btc["withdrawal_fees"][1] == 1
    assert btc["exchanges_out"] == (Decimal("-0.1"), 1)
    assert eth["exchanges_in"][1] == 1 and eth["exchanges_in"][0] > 0
    assert btc["vouchers_issued"] == (Decimal("-0.01"), 1)
    assert btc["vouchers_paid_off"] == (Decimal("0.01"), 1)
    assert usdt["vouchers_issued"] == (Decimal("-10"), 1)
    assert usdt["vouchers_returned"] == (Decimal("10"), 1)
    assert usdt["received"] == (Decimal("30"), 1)
    assert all(w["refunds"] == (0, 0) and w["adjustments"] == (0, 0) for w in (btc, eth, usdt))


def test_in_the_reporting_currency_the_revaluation_makes_the_sum_hold(portal, api, day):
    start, before, end, after = day
    valued = statement_of(portal, start, end).reporting
    prices = api.get_rates()

    def worth(wallets: dict[str, Decimal]) -> Decimal:
        return sum(
            (amount * prices[currency, "USD"] for currency, amount in wallets.items() if amount),
            Decimal(0),
        )

    assert valued.currency == "USD"
    assert valued.opening == worth(before) and valued.closing == worth(after)
    assert all(line.without_value == 0 for line in valued.lines), "every movement has a rate"
    assert valued.revaluation is not None
    assert added_up(valued.opening, valued.lines) + valued.revaluation == valued.closing
    received = next(line for line in valued.lines if line.line.value == "received")
    assert received.amount == 60000 * Decimal("0.7") + 3000 * Decimal("1.5") + 30


def test_an_opening_entered_inside_the_period_is_shown_among_the_adjustments(portal, day):
    start, before, end, _after = day
    result = statement_of(portal, start - timedelta(hours=1), end)
    for wallet_statement in result.currencies[:3]:
        adjustments = figures(wallet_statement.lines)["adjustments"]
        assert wallet_statement.opening == 0  # nothing was entered yet
        assert adjustments == (before[wallet_statement.currency], 1)
        assert (
            added_up(wallet_statement.opening, wallet_statement.lines) == wallet_statement.closing
        )
    valued = result.reporting
    assert added_up(valued.opening, valued.lines) + valued.revaluation == valued.closing


def test_accountants_read_the_statement_and_its_closing_is_the_wallet_operators_cannot(portal, day):
    _start, _before, _end, after = day
    accountant = signed_in(portal, email("accountant"))
    today = datetime.now(UTC).date()
    page = accountant.get(f"/reports?from={today}&to={today}")
    assert page.status_code == 200
    html = page.get_data(as_text=True)
    for currency in WALLETS:
        assert shown(after[currency], currency) in row(html, f"{currency}-closing"), currency
        assert f'href="/balances/{currency}"' in html
        assert "Refunds" in row(html, f"{currency}-refunds")
    assert "Revaluation" in row(html, "reporting-revaluation")
    assert "no rate" not in row(html, "reporting-revaluation")
    assert signed_in(portal, email("operator")).get("/reports").status_code == 403
    assert "Statement" in text(accountant.get("/")), "the menu entry"


def test_presets_are_calendar_days_in_the_readers_zone(portal):
    from portal.extensions import db
    from portal.identity.models import User

    zone = "Pacific/Kiritimati"  # 14 hours ahead of UTC: its yesterday is rarely UTC's
    with portal.app_context():
        db.session.execute(
            db.update(User).where(User.email == email("accountant")).values(time_zone=zone)
        )
        db.session.commit()
    accountant = signed_in(portal, email("accountant"))
    today = datetime.now(ZoneInfo(zone)).date()
    yesterday = datetime.combine(today - timedelta(days=1), datetime.min.time(), ZoneInfo(zone))
    page = text(accountant.get("/reports?period=yesterday"))
    assert f"{yesterday.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" in page
    first_of_month = datetime.combine(today.replace(day=1), datetime.min.time(), ZoneInfo(zone))
    page = text(accountant.get("/reports?period=this-month"))
    assert f"{first_of_month.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC" in page


def test_the_presets_days():
    from portal.periods import Preset, preset_days

    today = date(2026, 3, 1)
    assert preset_days(Preset.YESTERDAY, today) == (date(2026, 2, 28), date(2026, 2, 28))
    assert preset_days(Preset.LAST_MONTH, today) == (date(2026, 2, 1), date(2026, 2, 28))
