"""Balances against a real sandbox: an owner enters a currency's opening balance, payments and
fees move it as the sandbox moves its wallet, a later entry books the difference as an
adjustment, and the pages say where each figure comes from. Who may read and who may enter,
the fresh code asked of an owner with two-factor on, and bad input that books nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import post, text
from tests.support.portal_app import connected_portal, email
from tests.support.two_factor import signed_in_with_two_factor

FEE_SHARE = Decimal("0.01")  # the sandbox's fee: 1 % of the operation's amount


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


@pytest.fixture
def owner(portal):
    return signed_in(portal, email("owner"))


def wallet(sandbox, currency: str) -> Decimal:
    """The sandbox's own balance of the wallet: the ground truth."""
    wallets = sandbox.control("GET", "wallets").json()["data"]
    return next(Decimal(w["balance"]) for w in wallets if w["currency"] == currency)


def movements(app) -> list[tuple[str, str, Decimal]]:
    """(kind, currency, amount) of every booked movement, oldest first."""
    from portal.extensions import db
    from portal.money.models import LedgerEntry

    with app.app_context():
        return [
            (e.kind, e.currency, e.amount)
            for e in db.session.scalars(sa.select(LedgerEntry).order_by(LedgerEntry.id))
        ]


def audited(app) -> list[tuple[str, dict]]:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        query = sa.select(AuditEvent).where(AuditEvent.action == "balance.enter")
        return [
            (e.outcome, e.parameters) for e in db.session.scalars(query.order_by(AuditEvent.id))
        ]


def pay(api, sandbox, app, amount: str) -> Decimal:
    """A customer pays an operation of `amount` BTC in full, in two parts; the portal syncs
    after each. What the merchant keeps: the amount less the fee."""
    operation = api.create_operation(amount, "BTC", f"order-{amount}")
    half = Decimal(amount) / 2
    sandbox.receive(operation.id, str(half))
    sync_now(app)
    sandbox.receive(operation.id, str(Decimal(amount) - half))
    sync_now(app)
    return Decimal(amount) - Decimal(amount) * FEE_SHARE


def test_the_opening_balance_and_every_payment_after_it_make_the_sandboxs_wallet(
    portal, owner, api, sandbox
):
    opening = wallet(sandbox, "BTC")
    entered = post(owner, "/balances/BTC/opening", {"amount": str(opening)})
    assert entered.status_code == 302 and entered.location == "/balances/BTC"
    assert f"Opening balance of {opening.normalize():f} BTC as of" in text(
        owner.get("/balances/BTC")
    )

    kept = pay(api, sandbox, portal, "0.5") + pay(api, sandbox, portal, "0.2")

    expected = opening + kept
    assert expected == wallet(sandbox, "BTC"), "the sandbox moved its wallet as the test says"
    page = text(owner.get("/balances"))
    assert f"{expected.normalize():f} BTC" in page
    assert f"{expected * 60000:,.2f} USD" in page, "valued at the latest recorded rate"
    assert "the opening balance of" in page
    assert "no opening balance entered" in page, "ETH and USDT have none"
    assert "Negative" not in page
    assert "Last sync:" in page and "UTC" in page
    ((outcome, parameters),) = audited(portal)
    assert (outcome, parameters["currency"], parameters["kind"]) == ("success", "BTC", "opening")


def test_a_later_entry_books_the_difference_from_the_derived_balance(portal, owner, api, sandbox):
    post(owner, "/balances/BTC/opening", {"amount": "25"})
    kept = pay(api, sandbox, portal, "0.5")
    derived = Decimal(25) + kept

    entered = post(owner, "/balances/BTC/opening", {"amount": "25.4"})
    assert entered.status_code == 302
    difference = Decimal("25.4") - derived
    page = text(owner.get("/balances/BTC"))
    assert f"Adjustment of {difference.normalize():f} BTC booked as of" in page
    assert f"the portal had derived {derived.normalize():f} BTC" in page
    assert movements(portal)[-1] == ("adjustment", "BTC", difference)
    assert "25.4 BTC" in text(owner.get("/balances"))
    assert [outcome for outcome, _ in audited(portal)] == ["success", "success"]


def test_history_before_the_opening_is_inside_it(tmp_path, sandbox, api):
    """The first sync books what happened before the portal watched at the API's times: an
    opening entered afterwards already holds it."""
    sandbox.set_prices(BTC="60000")
    operation = api.create_operation("0.5", "BTC", "order-before")
    sandbox.receive(operation.id, "0.5")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        sync_now(app)
        owner = signed_in(app, email("owner"))
        post(owner, "/balances/BTC/opening", {"amount": "3"})
        page = text(owner.get("/balances/BTC"))
        assert "3 BTC" in text(owner.get("/balances"))
        assert page.count("inside the opening balance") == 2, "the payment and its fee"
        assert f"Operation {operation.id}" in page and "Payment" in page and "Fee" in page
        assert "Opening balance" in page


def test_a_negative_derived_balance_is_flagged(portal, owner, api, sandbox):
    """A link accepts a payment smaller than the operation's fee: without an opening the
    wallet is derived from zero and goes below it."""
    operation = api.create_operation("0.5", "BTC", "order-short")
    transaction = sandbox.receive(operation.id, "0.001", status="undefined")
    api.link_transactions(operation.id, [transaction])
    sync_now(portal)

    expected = Decimal("0.001") - Decimal("0.5") * FEE_SHARE
    assert expected < 0
    page = text(owner.get("/balances"))
    assert f"{expected.normalize():f} BTC Negative" in page
    assert "no opening balance entered: from zero since" in page
    detail = text(owner.get("/balances/BTC"))
    assert "Negative" in detail and "an opening balance or an adjustment is missing" in detail
    assert "2 movements" in detail


def test_accountants_read_and_cannot_enter_operators_cannot_read(portal, api, sandbox):
    accountant = signed_in(portal, email("accountant"))
    assert accountant.get("/balances").status_code == 200
    page = accountant.get("/balances/BTC")
    assert page.status_code == 200 and "Enter the balance" not in text(page)
    assert post(accountant, "/balances/BTC/opening", {"amount": "1"}).status_code == 403
    assert movements(portal) == []

    operator = signed_in(portal, email("operator"))
    assert operator.get("/balances").status_code == 403
    assert operator.get("/balances/BTC").status_code == 403
    assert "Balances" not in text(operator.get("/account"))
    assert "Balances" in text(accountant.get("/account"))


def test_an_owner_with_two_factor_enters_a_balance_only_with_a_fresh_code(portal, monkeypatch):
    client, clock, secret, sign_in_code = signed_in_with_two_factor(
        portal, email("owner"), monkeypatch
    )
    for code in ("", sign_in_code):
        refused = post(client, "/balances/BTC/opening", {"amount": "1", "code": code})
        assert refused.status_code == 422
    assert movements(portal) == []
    entered = post(client, "/balances/BTC/opening", {"amount": "1", "code": clock.code(secret, 1)})
    assert entered.status_code == 302 and movements(portal) == [("opening", "BTC", Decimal(1))]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"amount": "abc"}, "Enter an amount in digits"),
        ({"amount": "-1"}, "Enter an amount in digits"),
        ({"amount": ""}, "Enter the wallet's balance."),
        ({"amount": "1.123456789"}, "Use at most 8 decimal places."),
        ({"amount": "1", "as_of": "yesterday"}, "Enter a date and time in UTC"),
        ({"amount": "1", "as_of": "2024-13-40 10:00"}, "Enter a date and time in UTC"),
        ({"amount": "1", "as_of": "2999-01-01 00:00"}, "That moment has not come yet"),
    ],
)
def test_bad_input_is_explained_and_books_nothing(portal, owner, data, message):
    refused = post(owner, "/balances/BTC/opening", data)
    assert refused.status_code == 422 and message in text(refused)
    assert movements(portal) == []


def test_a_balance_as_of_a_moment_before_the_last_one_is_refused(portal, owner):
    assert post(owner, "/balances/BTC/opening", {"amount": "2"}).status_code == 302
    refused = post(owner, "/balances/BTC/opening", {"amount": "1", "as_of": "2020-01-01 00:00"})
    assert refused.status_code == 422
    assert "A balance of BTC was entered as of" in text(refused)
    assert movements(portal) == [("opening", "BTC", Decimal(2))]
    assert [outcome for outcome, _ in audited(portal)] == ["success", "refused"]


def test_an_unknown_currency_has_no_balance(owner):
    assert owner.get("/balances/XYZ").status_code == 404
    assert post(owner, "/balances/XYZ/opening", {"amount": "1"}).status_code == 404


def test_the_demo_opens_each_wallet_at_the_sandboxs_balance(tmp_path, sandbox, api):
    """`make run`: after the first sync, the balances are the sandbox's wallets, history and
    all, and a payment afterwards moves both alike."""
    from portal.demo import open_balances
    from portal.identity.rules import accounts
    from portal.settings.models import Environment
    from portal.settings.rules.connection import Credentials

    sandbox.set_prices(BTC="60000", ETH="3000")
    operation = api.create_operation("0.5", "BTC", "order-history")
    sandbox.receive(operation.id, "0.5")
    with connected_portal(tmp_path, sandbox, SYNC_SECONDS=0) as app:
        with app.app_context():
            owner = accounts.find_user(email("owner"))
            credentials = Credentials(sandbox.base_url, Environment.SANDBOX, sandbox.token)
            open_balances(owner.merchant, owner, credentials)
        pay(api, sandbox, app, "0.2")
        page = text(signed_in(app, email("accountant")).get("/balances"))
        for currency in ("BTC", "ETH", "USDT"):
            assert f"{wallet(sandbox, currency).normalize():,f} {currency}" in page
