"""The ledger's payments and fees against a real sandbox: each movement booked once, at the rate
the portal recorded when it saw the money, and kept when the rate moves afterwards."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import ROUND_FLOOR, Decimal

import pytest
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support.money import BTC_ADDRESS, ETH_ADDRESS
from tests.support.portal_app import MERCHANT, connected_portal

EIGHT = Decimal("1e-8")


@pytest.fixture
def portal(tmp_path, sandbox):
    """The portal on an empty sandbox with the market frozen, its first sync done."""
    sandbox.set_prices(BTC="60000", ETH="3000")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        sync(app)
        yield app


@pytest.fixture
def api(sandbox):
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


def sync(app, *, full: bool = False) -> None:
    from portal.identity.rules import accounts
    from portal.live.rules import mirror

    with app.app_context():
        merchant = accounts.merchant_named(MERCHANT).id
        if full:
            mirror.request_full_resync(merchant)
        report = mirror.sync_merchant(merchant)
        assert report is not None and report.error is None, report


def entries(app) -> list[tuple[str, str, str, Decimal, Decimal | None, Decimal | None]]:
    """(kind, operation, currency, amount, value, rate) of every booked movement, oldest first."""
    from portal.extensions import db
    from portal.money.models import LedgerEntry

    with app.app_context():
        return [
            (e.kind, e.operation_id, e.currency, e.amount, e.value, e.rate)
            for e in db.session.scalars(sa.select(LedgerEntry).order_by(LedgerEntry.id))
        ]


def test_each_payment_is_booked_once_at_the_rate_recorded_when_it_arrived(portal, api, sandbox):
    operation = api.create_operation("0.5", "BTC", "order-1")
    sandbox.receive(operation.id, "0.2")
    sync(portal)
    sandbox.set_prices(BTC="50000")
    sandbox.receive(operation.id, "0.3")
    sync(portal)
    sandbox.set_prices(BTC="10000")  # after both payments: changes nothing booked
    sync(portal)
    sync(portal, full=True)  # read everything again: nothing is booked twice

    fee = Decimal("0.005")  # 1 % of 0.5 BTC, charged at the confirmation
    assert entries(portal) == [
        ("payment", operation.id, "BTC", Decimal("0.2"), Decimal("12000"), Decimal("60000")),
        ("payment", operation.id, "BTC", Decimal("0.3"), Decimal("15000"), Decimal("50000")),
        ("fee", operation.id, "BTC", -fee, -fee * 50000, Decimal("50000")),
    ]


def test_money_of_an_operation_priced_in_the_reporting_currency_is_worth_it_at_its_own_rate(
    portal, api, sandbox
):
    operation = api.create_operation("100", "USD", "order-usd", payment_currency="BTC")
    due = (Decimal(100) * operation.rate).quantize(EIGHT, "ROUND_CEILING")
    sandbox.set_prices(BTC="1")  # the market says nothing of what the customer was asked
    sandbox.receive(operation.id, str(due))
    sync(portal)

    ((kind, _, currency, amount, value, _), fee) = entries(portal)
    assert (kind, currency, amount) == ("payment", "BTC", due)
    assert value == (due / operation.rate).quantize(EIGHT)
    assert abs(value - Decimal(100)) < Decimal("0.01")
    fee_paid = (Decimal(1) * operation.rate).quantize(EIGHT, ROUND_FLOOR)  # 1 USD in BTC
    assert fee[3] == -fee_paid and fee[4] == (-fee_paid / operation.rate).quantize(EIGHT)


def test_withdrawals_cross_exchanges_and_undecided_money_are_no_payment(portal, api, sandbox):
    from portal.identity.rules import accounts
    from portal.money.rules import cross_exchanges

    api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)
    operation = api.create_operation("0.5", "BTC", "order-part")
    sandbox.receive(operation.id, "0.1", status="undefined")
    exchange = api.create_cross_exchange("BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.1")
    with portal.app_context():  # made through the portal, which keeps its operation
        merchant = accounts.merchant_named(MERCHANT)
        cross_exchanges.remember(merchant, merchant.users[0], exchange)
    sandbox.receive(exchange.operation_id, "0.1")
    sync(portal)
    assert entries(portal) == [], "the money of a cross exchange goes past the wallets"


def test_history_read_at_the_first_sync_is_dated_as_the_api_dates_it_and_has_no_rate(
    tmp_path, api, sandbox
):
    """Money that arrived before the portal watched: no rate was recorded at or before it."""
    sandbox.set_prices(BTC="60000")
    operation = api.create_operation("0.5", "BTC", "order-before")
    sandbox.receive(operation.id, "0.5")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        sync(app)
        (payment, fee) = entries(app)
        assert payment[:4] == ("payment", operation.id, "BTC", Decimal("0.5"))
        assert payment[4] is None and fee[4] is None, "no value without a rate"
        assert booked_at(app) == [api.get_operation(operation.id).updated_at] * 2


def booked_at(app) -> list[datetime]:
    from portal.extensions import db
    from portal.money.models import LedgerEntry

    with app.app_context():
        return list(db.session.scalars(sa.select(LedgerEntry.occurred_at).order_by(LedgerEntry.id)))


def test_a_rate_is_the_latest_recorded_at_or_before_a_moment_and_no_older_than_15_minutes(
    portal,
):
    from portal.identity.rules import accounts
    from portal.money.rules import rate_history

    start = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        generation = merchant.api_connection.generation
        for minutes, price in ((0, Decimal(100)), (10, Decimal(110)), (11, Decimal(110))):
            rates = {("BTC", "USD"): price, ("ETH", "USD"): Decimal(5)}
            rate_history.record(merchant.id, generation, rates, start + timedelta(minutes=minutes))
        book = rate_history.RateBook(
            merchant.id, generation, [start, start + timedelta(minutes=40)]
        )

        def rate(minutes: float, base: str = "BTC", quote: str = "USD"):
            found = book.rate(base, quote, start + timedelta(minutes=minutes))
            return found and (found.price, (found.at - start) / timedelta(minutes=1))

        assert rate(-1) is None, "nothing recorded before"
        assert rate(0) == (100, 0) and rate(9.5) == (100, 0), "as last read at or before"
        assert rate(10) == (110, 10)
        assert rate(20) == (110, 11), "read again at 11 minutes: the same row, seen until then"
        assert rate(26) == (110, 11) and rate(26.5) is None, "older than 15 minutes"
        assert rate(5, "USD", "ETH") == (Decimal("0.2"), 0), "one over the reverse pair"
        assert rate(5, "BTC", "EUR") is None


def test_a_new_reporting_currency_values_every_movement_again_at_its_own_time(portal, api, sandbox):
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import ledger

    operation = api.create_operation("0.5", "BTC", "order-eth")
    sandbox.receive(operation.id, "0.5")
    sync(portal)
    sandbox.set_prices(BTC="90000", ETH="4500")  # later: the old rates stay the ones that count
    sync(portal)
    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        merchant.reporting_currency = "ETH"
        db.session.commit()
        assert ledger.revalue(merchant.id, merchant.api_connection.generation, "ETH") == (2, 0)
    values = [(kind, value, rate) for kind, _, _, _, value, rate in entries(portal)]
    assert values == [
        ("payment", Decimal("10"), Decimal("20")),  # 60000 / 3000 when it arrived
        ("fee", Decimal("-0.1"), Decimal("20")),
    ]
