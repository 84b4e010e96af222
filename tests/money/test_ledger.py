"""The ledger's payments and fees against a real sandbox: each movement booked once, at the rate
the portal recorded when it saw the money, and kept when the rate moves afterwards."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import ROUND_FLOOR, Decimal

import pytest
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support.mirror import sync_now
from tests.support.money import BTC_ADDRESS, ETH_ADDRESS
from tests.support.portal_app import MERCHANT, connected_portal

EIGHT = Decimal("1e-8")


@pytest.fixture
def portal(tmp_path, sandbox):
    """The portal on an empty sandbox with the market frozen, its first sync done."""
    sandbox.set_prices(BTC="60000", ETH="3000")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        sync_now(app)
        yield app


@pytest.fixture
def api(sandbox):
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


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
    sync_now(portal)
    sandbox.set_prices(BTC="50000")
    sandbox.receive(operation.id, "0.3")
    sync_now(portal)
    sandbox.set_prices(BTC="10000")  # after both payments: changes nothing booked
    sync_now(portal)
    sync_now(portal, full=True)  # read everything again: nothing is booked twice

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
    sync_now(portal)

    ((kind, _, currency, amount, value, _), fee) = entries(portal)
    assert (kind, currency, amount) == ("payment", "BTC", due)
    assert value == (due / operation.rate).quantize(EIGHT)
    assert abs(value - Decimal(100)) < Decimal("0.01")
    fee_paid = (Decimal(1) * operation.rate).quantize(EIGHT, ROUND_FLOOR)  # 1 USD in BTC
    assert fee[3] == -fee_paid and fee[4] == (-fee_paid / operation.rate).quantize(EIGHT)


def test_cross_exchanges_and_undecided_money_move_no_wallet(portal, api, sandbox):
    from portal.identity.rules import accounts
    from portal.money.rules import cross_exchanges

    operation = api.create_operation("0.5", "BTC", "order-part")
    sandbox.receive(operation.id, "0.1", status="undefined")
    exchange = api.create_cross_exchange("BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.1")
    with portal.app_context():  # made through the portal, which keeps its operation
        merchant = accounts.merchant_named(MERCHANT)
        cross_exchanges.remember(merchant, merchant.users[0], exchange)
    sandbox.receive(exchange.operation_id, "0.1")
    sync_now(portal)
    assert entries(portal) == [], "the money of a cross exchange goes past the wallets"


def test_a_withdrawal_takes_its_amount_and_network_fee_an_internal_transfer_no_fee(
    portal, api, sandbox
):
    sent = api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)
    inside = api.create_operation("1", "ETH", "order-to-self")
    internal = api.withdraw(Decimal("0.5"), "ETH", inside.address)
    assert (sent.category, internal.category) == ("transfer", "internal_transfer")
    sync_now(portal)
    sandbox.set_prices(BTC="10000", ETH="10")  # after they were seen: nothing booked changes
    sync_now(portal)
    sync_now(portal, full=True)

    network_fee = Decimal("0.0001")  # the sandbox's BTC network fee
    assert sorted(entries(portal)) == sorted(
        [
            ("withdrawal", sent.id, "BTC", Decimal("-0.1"), Decimal("-6000"), Decimal("60000")),
            ("network_fee", sent.id, "BTC", -network_fee, -network_fee * 60000, Decimal("60000")),
            ("withdrawal", internal.id, "ETH", Decimal("-0.5"), Decimal("-1500"), Decimal("3000")),
        ]
    )


def voucher_entries(app) -> list[tuple[str, str, Decimal, Decimal | None, Decimal | None]]:
    """(kind, currency, amount, value, rate) of the booked movements of vouchers, oldest first."""
    return [
        (kind, currency, amount, value, rate)
        for kind, _, currency, amount, value, rate in entries(app)
        if kind.startswith("voucher")
    ]


def test_a_voucher_takes_its_amount_when_issued_and_gives_it_back_when_cancelled_or_expired(
    portal, api, sandbox
):
    cancelled = api.create_voucher(Decimal("0.01"), "BTC")
    expiring = api.create_voucher(Decimal("2"), "ETH")
    sync_now(portal)
    sandbox.set_prices(BTC="50000", ETH="2000")
    sync_now(portal)  # the new prices are recorded before the vouchers come back
    api.cancel_voucher(cancelled.id)
    sandbox.control("POST", f"vouchers/{expiring.id}/expire")
    sync_now(portal)
    sync_now(portal)
    sync_now(portal, full=True)

    assert sorted(voucher_entries(portal)) == sorted(
        [
            ("voucher", "BTC", Decimal("-0.01"), Decimal("-600"), Decimal("60000")),
            ("voucher", "ETH", Decimal("-2"), Decimal("-6000"), Decimal("3000")),
            ("voucher_returned", "BTC", Decimal("0.01"), Decimal("500"), Decimal("50000")),
            ("voucher_returned", "ETH", Decimal("2"), Decimal("4000"), Decimal("2000")),
        ]
    )
    assert balances(portal) == {"BTC": 0, "ETH": 0}, "given back what was taken"


def test_a_voucher_paid_off_through_the_portal_gives_its_amount(portal, api, sandbox):
    from tests.support.forms import signed_in
    from tests.support.money import post
    from tests.support.portal_app import email

    voucher = api.create_voucher(Decimal("0.02"), "BTC")
    sync_now(portal)
    sandbox.set_prices(BTC="50000")
    sync_now(portal)
    owner = signed_in(portal, email("owner"))
    assert post(owner, "/vouchers/payoff", {"code": voucher.code}).status_code == 302
    sync_now(portal)
    sync_now(portal, full=True)

    assert voucher_entries(portal) == [
        ("voucher", "BTC", Decimal("-0.02"), Decimal("-1200"), Decimal("60000")),
        ("voucher_payoff", "BTC", Decimal("0.02"), Decimal("1000"), Decimal("50000")),
    ]


def test_a_payoff_through_the_portal_leaves_the_voucher_lists_earlier_changes_to_read(portal):
    """An incremental sync reads the voucher list back to the newest movement it booked from
    it: a payoff made through the portal (booked at once) after a voucher was canceled, before
    any sync read the list, would have it pass over that cancel until the next full sync."""
    from portal.api import Voucher
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import ledger

    issued = datetime(2026, 11, 10, 10, tzinfo=UTC)

    def voucher(number: int, status: str, kind: str, changed: datetime) -> Voucher:
        return Voucher(
            id=f"v{number}", amount=Decimal("0.1"), currency="BTC", code=f"CODE-{number}",
            status=status, type=kind, created_at=issued, updated_at=changed,
        )  # fmt: skip

    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        generation = merchant.api_connection.generation
        listed = [
            voucher(1, "successful", "issued", issued),
            voucher(2, "successful", "issued", issued),
        ]
        ledger.book_vouchers(merchant.id, generation, listed, issued)
        paid_off = voucher(2, "successful", "paid off", issued + timedelta(minutes=5))
        ledger.book_payoff(merchant, paid_off, issued + timedelta(minutes=5))
        db.session.commit()

        assert ledger.vouchers_booked_until(merchant.id, generation) == issued


def test_a_voucher_paid_off_by_a_direct_call_to_the_api_gives_nothing_here(portal, api):
    voucher = api.create_voucher(Decimal("0.02"), "BTC")
    api.pay_off_voucher(voucher.code)
    assert api.get_voucher(voucher.id).type == "paid off"
    sync_now(portal)
    sync_now(portal, full=True)
    assert voucher_entries(portal) == [
        ("voucher", "BTC", Decimal("-0.02"), Decimal("-1200"), Decimal("60000")),
    ]


def test_a_refused_voucher_list_stops_neither_the_operations_nor_a_later_sync(portal, api, sandbox):
    from portal import crypto
    from portal.extensions import db
    from portal.identity.rules import accounts

    def company_token(token: str | None) -> None:
        with portal.app_context():
            connection = accounts.merchant_named(MERCHANT).api_connection
            connection.company_token_encrypted = token and crypto.encrypt(token)
            db.session.commit()

    voucher = api.create_voucher(Decimal("0.02"), "BTC")
    operation = api.create_operation("0.5", "BTC", "order-while-refused")
    sandbox.receive(operation.id, "0.5")
    company_token("revoked-company-token")  # the voucher list answers 401
    sync_now(portal)
    assert [kind for kind, *_ in entries(portal)] == ["payment", "fee"]
    company_token(None)
    sync_now(portal)
    assert voucher_entries(portal) == [
        ("voucher", "BTC", -voucher.amount, -voucher.amount * 60000, Decimal("60000")),
    ]


def test_an_exchange_through_the_portal_takes_what_it_sold_and_gives_what_it_bought(
    portal, api, sandbox
):
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import exchanges

    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        made = exchanges.make(api, merchant, merchant.users[0], "BTC", "ETH", Decimal("0.1"), None)
        db.session.commit()
    sync_now(portal, full=True)

    assert made.buy_amount is not None and made.buy_amount > 0
    assert entries(portal) == [
        ("exchange_sold", None, "BTC", Decimal("-0.1"), Decimal("-6000"), Decimal("60000")),
        ("exchange_bought", None, "ETH", made.buy_amount, made.buy_amount * 3000, Decimal(3000)),
    ]


def test_balances_add_up_every_movement_as_of_a_moment(portal, api, sandbox):
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import exchanges

    operation = api.create_operation("0.5", "BTC", "order-balance")
    sandbox.receive(operation.id, "0.5")
    api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)
    api.create_voucher(Decimal("0.01"), "BTC")
    sync_now(portal)
    before_exchange = datetime.now(UTC)
    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        made = exchanges.make(api, merchant, merchant.users[0], "BTC", "ETH", Decimal("0.1"), None)
        db.session.commit()
    sync_now(portal)
    sync_now(portal, full=True)

    fee, network_fee = Decimal("0.005"), Decimal("0.0001")
    synced = Decimal("0.5") - fee - Decimal("0.1") - network_fee - Decimal("0.01")
    assert balances(portal, before_exchange) == {"BTC": synced}
    assert balances(portal) == {"BTC": synced - Decimal("0.1"), "ETH": made.buy_amount}


def balances(app, at: datetime | None = None) -> dict[str, Decimal]:
    """The balance of each currency that moved (no opening entered: from zero)."""
    from portal.identity.rules import accounts
    from portal.money.rules.balances import balances

    with app.app_context():
        found = balances(accounts.merchant_named(MERCHANT), at)
        return {b.currency: b.amount for b in found if b.first_movement_at is not None}


def test_history_read_at_the_first_sync_is_dated_as_the_api_dates_it_and_has_no_rate(
    tmp_path, api, sandbox
):
    """Money that arrived before the portal watched: no rate was recorded at or before it."""
    sandbox.set_prices(BTC="60000")
    operation = api.create_operation("0.5", "BTC", "order-before")
    sandbox.receive(operation.id, "0.5")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        sync_now(app)
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
    sync_now(portal)
    sandbox.set_prices(BTC="90000", ETH="4500")  # later: the old rates stay the ones that count
    sync_now(portal)
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


def test_a_reporting_currency_chosen_during_a_sync_values_what_it_books(
    portal, api, sandbox, monkeypatch
):
    """The sync read the currency as it began; an owner chose ETH while it read the API (the
    change valued the ledger again and committed): the sync's movements are valued in ETH too,
    not in USD for good."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.live.rules import mirror
    from portal.money.rules import reporting
    from tests.support.portal_app import email

    operation = api.create_operation("0.5", "BTC", "order-during")
    sandbox.receive(operation.id, "0.5")
    reading_the_api = mirror._record_rates

    def while_reading_the_api_an_owner_chooses_eth(client, *arguments) -> None:
        reading_the_api(client, *arguments)
        merchant = accounts.merchant_named(MERCHANT)
        owner = accounts.find_user(email("owner"))
        reporting.change_reporting_currency(merchant, "ETH", owner, client.get_rates())
        db.session.commit()

    monkeypatch.setattr(mirror, "_record_rates", while_reading_the_api_an_owner_chooses_eth)
    sync_now(portal)

    values = [(kind, value, rate) for kind, _, _, _, value, rate in entries(portal)]
    assert values == [
        ("payment", Decimal("10"), Decimal("20")),  # 0.5 BTC at 60000 / 3000
        ("fee", Decimal("-0.1"), Decimal("20")),
    ]


def test_a_refunds_withdrawal_the_mirror_booked_first_becomes_the_refunds(portal, api, sandbox):
    """The mirror saw the refund's withdrawal while its answer was awaited and booked it as a
    plain withdrawal; the answer was then lost, and a later sync ties the refund to it: the
    same movement becomes the refund's, never a second one."""
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import IntentState, Refund, RefundStage
    from portal.money.rules.withdrawal_figures import withdrawn_today
    from tests.support.money import BTC_ADDRESS

    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        refund = Refund(
            merchant_id=merchant.id, operation_id="sale-1", number=1, currency="BTC",
            amount=Decimal("0.1"), address=BTC_ADDRESS, typed_by_staff=True,
            stage=RefundStage.READY, state=IntentState.SENDING, created_at=utcnow(),
            expires_at=utcnow() + timedelta(days=7),
        )  # fmt: skip
        db.session.add(refund)
        db.session.commit()
        refund_id = refund.id
    sent = api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)  # what the worker's call made
    sync_now(portal)
    with portal.app_context():
        db.session.get(Refund, refund_id).state = IntentState.UNKNOWN  # its answer never came
        db.session.commit()
    sync_now(portal, full=True)

    out = [(kind, operation) for kind, operation, *_ in entries(portal) if kind != "network_fee"]
    assert out == [("refund", "sale-1")]
    with portal.app_context():
        assert db.session.get(Refund, refund_id).withdrawal_id == sent.id
        assert withdrawn_today(accounts.merchant_named(MERCHANT), "BTC") == Decimal("0.1")


def test_every_kind_of_movement_has_words_for_people():
    from portal.money.rules.ledger import KIND_WORDS, Kind

    assert set(KIND_WORDS) == set(Kind)
    assert len(set(KIND_WORDS.values())) == len(Kind)
