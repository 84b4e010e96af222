"""A merchant's day against a real sandbox, whose wallets are the ground truth: the portal makes
some movements (an exchange, a voucher paid off), the API is called directly for the others
(payments in full, in part and over, a link, a reject, a withdrawal, a voucher issued and
cancelled), and after the next sync every balance on /balances is the sandbox's wallet to the
last unit; a full resync changes nothing, and a later entry books the difference."""

from __future__ import annotations

from decimal import Decimal

import pytest

from portal.api import MerchantApiClient
from tests.money.test_balances import movements, wallet
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import (
    BTC_ADDRESS,
    exchange_confirm_form,
    post,
    review_exchange,
    text,
)
from tests.support.portal_app import connected_portal, email

WALLETS = ("BTC", "ETH", "USDT")


@pytest.fixture
def portal(tmp_path, sandbox):
    sandbox.set_prices(BTC="60000", ETH="3000")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        sync_now(app)
        yield app


@pytest.fixture
def api(sandbox):
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


def shown(amount: Decimal, currency: str) -> str:
    """An amount as the pages write it: thousands separated, no trailing zeros."""
    return f"{amount.normalize():,f} {currency}"


def enter_openings(owner, sandbox) -> None:
    """The morning: the owner enters what the wallets hold."""
    for currency in WALLETS:
        opening = {"amount": str(wallet(sandbox, currency))}
        assert post(owner, f"/balances/{currency}/opening", opening).status_code == 302


def a_days_movements(portal, api, sandbox, owner) -> None:
    """Payments in full, in part and over, a link, a reject, a withdrawal, a voucher issued and
    cancelled (direct calls to the API), a voucher paid off and an exchange (through the
    portal), each booked by a sync."""
    full = api.create_operation("0.5", "BTC", "order-full")
    sandbox.receive(full.id, "0.5")
    part = api.create_operation("0.4", "BTC", "order-part")
    sandbox.receive(part.id, "0.1")
    sandbox.receive(part.id, "0.1")
    over = api.create_operation("20", "USDT", "order-over", payment_currency="USDT")
    sandbox.receive(over.id, "30")
    linked = api.create_operation("2", "ETH", "order-linked", payment_currency="ETH")
    arrived = sandbox.receive(linked.id, "1.5", status="undefined")
    api.link_transactions(linked.id, [arrived])  # the merchant accepts less
    stray = api.create_operation("1", "ETH", "order-stray", payment_currency="ETH")
    stray_money = sandbox.receive(stray.id, "0.3", status="undefined")
    api.reject_transactions(stray.id, [stray_money], "not this order")
    sync_now(portal)
    api.withdraw(Decimal("0.05"), "BTC", BTC_ADDRESS)
    cancelled = api.create_voucher(Decimal("10"), "USDT")
    api.cancel_voucher(cancelled.id)
    paid_off = api.create_voucher(Decimal("0.01"), "BTC")
    sync_now(portal)
    assert post(owner, "/vouchers/payoff", {"code": paid_off.code}).status_code == 302
    deal = {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.1", "buy_amount": ""}
    assert owner.post("/exchange", data=exchange_confirm_form(review_exchange(owner, deal)))
    sync_now(portal)


def test_after_a_days_movements_every_balance_is_the_sandboxs_wallet(portal, api, sandbox):
    owner = signed_in(portal, email("owner"))
    enter_openings(owner, sandbox)
    a_days_movements(portal, api, sandbox, owner)

    truth = {currency: wallet(sandbox, currency) for currency in WALLETS}
    listed = text(owner.get("/balances"))
    for currency, balance in truth.items():
        assert shown(balance, currency) in listed, currency
        assert shown(balance, currency) in text(owner.get(f"/balances/{currency}")), currency

    dashboard = text(owner.get("/"))
    assert all(shown(b, c) in dashboard for c, b in truth.items()), "the dashboard's balances"
    operator_dashboard = text(signed_in(portal, email("operator")).get("/"))
    assert "Derived by the portal" not in operator_dashboard, "operators see no balances"

    booked = movements(portal)
    sync_now(portal, full=True)  # everything read again: nothing booked twice
    assert movements(portal) == booked
    assert all(shown(b, c) in text(owner.get("/balances")) for c, b in truth.items())

    # An exchange made outside the portal, which it cannot see: reconciled in the open.
    counted = truth["ETH"] + Decimal("2.5")
    assert post(owner, "/balances/ETH/opening", {"amount": str(counted)}).status_code == 302
    assert movements(portal)[-1] == ("adjustment", "ETH", Decimal("2.5"))
    assert shown(counted, "ETH") in text(owner.get("/balances"))
