"""The dashboard's money, end to end against a real sandbox: what arrived is worth, in the
reporting currency, what the prices set when it arrived make of it, whatever the market does
afterwards; an underpaid order counts at what was received; a withdrawal is no sale; an
operation priced in the reporting currency is worth what it received at its own rate.

Every expected figure is worked out here from the prices the test sets and the amounts it pays
(and the fee and rate the sandbox's operation records state), never read from the portal."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from urllib.parse import parse_qs, urlsplit

import pytest

from portal.api import MerchantApiClient
from tests.support.dashboard import amount, element, figure
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import BTC_ADDRESS
from tests.support.portal_app import connected_portal, email

CENTS = Decimal("0.01")


@pytest.fixture
def app(tmp_path, sandbox):
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as application:
        yield application


@pytest.fixture
def api(sandbox):
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


def usd(value: Decimal) -> str:
    """How the page writes an amount of US dollars: to the cent, thousands separated."""
    return f"{value.quantize(CENTS, ROUND_HALF_UP):,} USD"


def order() -> str:
    return f"order-{uuid.uuid4().hex[:8]}"


def test_money_is_worth_the_prices_of_its_arrival_and_sales_stand_apart(app, api, sandbox):
    sandbox.set_prices(BTC="60000")
    sync_now(app)  # the first sync: nothing yet, the rates of its moment recorded
    first = api.create_operation("0.01", "BTC", order())
    # Priced in dollars, paid in bitcoin at the operation's own rate (1/60000, to 8 decimals).
    priced_in_usd = api.create_operation("100", "USD", order(), payment_currency="BTC")
    sandbox.receive(first.id, "0.01")
    sync_now(app)

    sandbox.set_prices(BTC="50000")
    under = api.create_operation("0.02", "BTC", order())
    accepted = sandbox.receive(under.id, "0.015", "undefined")
    api.link_transactions(under.id, [accepted])  # the merchant accepts less: underpaid
    due_in_btc = Decimal("100") * priced_in_usd.rate  # 0.001667 BTC: no rounding left
    sandbox.receive(priced_in_usd.id, str(due_in_btc))
    sync_now(app)
    api.withdraw(Decimal("0.001"), "BTC", BTC_ADDRESS)  # the merchant's own money leaving
    sync_now(app)

    first, under, priced_in_usd = (
        api.get_operation(o.id) for o in (first, under, priced_in_usd)
    )  # the fees and rate the payment service states
    assert priced_in_usd.status == "confirmed" and priced_in_usd.rate == Decimal("0.00001667")
    received = (
        Decimal("0.01") * 60000
        + Decimal("0.015") * 50000  # what was received, not the 0.02 asked
        + due_in_btc / priced_in_usd.rate  # its own rate, not the market's 50000
    )
    fees = first.fee * 60000 + under.fee * 50000 + priced_in_usd.fee  # the last one in USD
    assert received == Decimal("1450") and fees > 0

    owner = signed_in(app, email("owner"))
    page = owner.get("/?period=today").text
    assert amount(page, "figure-received") == usd(received)
    assert amount(page, "figure-fees") == usd(fees)
    assert amount(page, "figure-net") == usd(received - fees)
    assert "Money counted when it arrived" in page
    assert "without a rate" not in page

    sandbox.set_prices(BTC="40000")  # the market moves after the money arrived
    sync_now(app)
    again = owner.get("/?period=today").text
    for figure_id in ("figure-received", "figure-fees", "figure-net"):
        assert amount(again, figure_id) == amount(page, figure_id), figure_id

    assert figure(again, "figure-created") == "3"  # the withdrawal is no sale
    assert figure(again, "figure-paid").startswith("3 · 100.0 % of those created")
    assert figure(again, "figure-underpaid") == "1"
    assert element(again, "not-sales").text.endswith("Withdrawals BTC 1 0.001 BTC")
    wallets = element(again, "received-per-currency").text
    btc_received = Decimal("0.01") + Decimal("0.015") + due_in_btc
    usd_fee_in_btc = (priced_in_usd.fee * priced_in_usd.rate).quantize(
        Decimal("1e-8"), "ROUND_FLOOR"
    )
    btc_fees = first.fee + under.fee + usd_fee_in_btc  # the withdrawal's money is no fee
    row = [
        f"{amount.normalize():f} BTC"
        for amount in (btc_received, btc_fees, btc_received - btc_fees)
    ]
    assert f"BTC {' '.join(row)}" in wallets  # wallet units, not prices asked

    # The count of underpaid operations leads to them, in the period's days.
    link = element(again, "figure-underpaid").links[0]
    query = parse_qs(urlsplit(link).query)
    today = datetime.now(UTC).date().isoformat()
    assert query == {"state": ["underpaid"], "created_from": [today], "created_to": [today]}
    listed = owner.get(link).text
    assert f"/operations/{under.id}" in listed
    assert f"/operations/{first.id}" not in listed


def test_the_previous_period_and_payments_without_a_rate(app, api, sandbox, monkeypatch):
    from portal.database import utcnow
    from portal.live.rules import mirror

    sandbox.set_prices(BTC="60000")
    history = api.create_operation("0.01", "BTC", order())
    sandbox.receive(history.id, "0.01")
    # The first sync reads it as history, dated by the API: before any rate was recorded.
    sync_now(app)

    eight_days_ago = utcnow() - timedelta(days=8)
    earlier = api.create_operation("0.02", "BTC", order())
    sandbox.receive(earlier.id, "0.02")
    with monkeypatch.context() as clock:
        clock.setattr(mirror, "utcnow", lambda: eight_days_ago)
        sync_now(app)  # seen (and priced at 60000) eight days ago

    sandbox.set_prices(BTC="50000")
    latest = api.create_operation("0.03", "BTC", order())
    sandbox.receive(latest.id, "0.03")
    sync_now(app)

    earlier, latest = api.get_operation(earlier.id), api.get_operation(latest.id)
    received, before = Decimal("0.03") * 50000, Decimal("0.02") * 60000
    fees, fees_before = latest.fee * 50000, earlier.fee * 60000
    page = signed_in(app, email("accountant")).get("/?period=7-days").text
    assert figure(page, "figure-received") == (
        f"{usd(received)} · previous 7 days: {usd(before)}, change +{usd(received - before)}"
    )
    assert figure(page, "figure-fees") == (
        f"{usd(fees)} · previous 7 days: {usd(fees_before)}, change +{usd(fees - fees_before)}"
    )
    net, net_before = received - fees, before - fees_before
    assert figure(page, "figure-net") == (
        f"{usd(net)} · previous 7 days: {usd(net_before)}, change +{usd(net - net_before)}"
    )
    assert figure(page, "figure-without-rate").startswith("Excludes 1 payment without a rate")
    # The wallet's own units count it all the same.
    assert "BTC 0.04 BTC" in element(page, "received-per-currency").text


def test_money_a_link_left_out_is_taken_off_what_each_wallet_received(app):
    """A day on which a link left out 0.5 BTC that arrived the day before, and 0.1 BTC
    arrived: the wallet received -0.4 BTC that day, as the statement counts it."""
    from datetime import date

    from portal.identity.rules import accounts
    from portal.payments.rules.dashboard import Period, summarise
    from tests.support.ledger import book

    book(
        app,
        [
            ("payment", "BTC", Decimal("0.5"), datetime(2026, 10, 10, 12, tzinfo=UTC)),
            ("payment", "BTC", Decimal("-0.5"), datetime(2026, 10, 11, 12, tzinfo=UTC)),
            ("payment", "BTC", Decimal("0.1"), datetime(2026, 10, 11, 13, tzinfo=UTC)),
            ("fee", "BTC", Decimal("-0.001"), datetime(2026, 10, 11, 13, tzinfo=UTC)),
        ],
    )
    with app.app_context():
        merchant = accounts.merchant_named("Acme")
        day = Period(date(2026, 10, 11), date(2026, 10, 11), UTC)
        summary = summarise(merchant.id, merchant.api_connection.generation, "USD", day)

    assert [(w.currency, w.received, w.fees) for w in summary.wallets] == [
        ("BTC", Decimal("-0.4"), Decimal("0.001"))
    ]
