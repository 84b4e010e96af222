"""The reporting currency on the checkout settings page: the currencies offered are those the
payment service's rates quote against every wallet, an owner's change values the ledger again
and is in the audit log, and nobody else may change it."""

from __future__ import annotations

import csv
import html
import io
import re
import uuid
from decimal import Decimal

import pytest
import requests
import sqlalchemy as sa

from portal.api import MerchantApiClient
from tests.support import factories
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import post
from tests.support.portal_app import MERCHANT, email, retries_without_pauses
from tests.support.two_factor import signed_in_with_two_factor

# The sandbox's wallets: the crypto currencies, each a wallet of its own (docs/sandbox.md).
WALLETS = ("BTC", "ETH", "USDT")
SELECT = re.compile(r'<select[^>]*name="reporting_currency".*?</select>', re.S)
OPTION = re.compile(r'<option[^>]*value="([^"]+)"')
TAG = re.compile(r"<[^>]+>")
FLASH = re.compile(r"Figures are now in (\w+): ([\d,]+) movements? valued again")


@pytest.fixture(scope="module")
def sandbox(module_servers):
    sandbox = module_servers.sandbox()
    yield sandbox
    sandbox.thaw_prices()


@pytest.fixture(scope="module")
def app(module_servers, sandbox):
    return module_servers.portal(sandbox)


@pytest.fixture(scope="module")
def owner(app):
    return signed_in(app, email("owner"))


def words(response) -> str:
    """The page's text as a person reads it: no tags, entities decoded, one space between
    words."""
    return " ".join(html.unescape(TAG.sub("", response.text)).split())


def offered(client) -> list[str]:
    page = client.get("/settings/checkout")
    assert page.status_code == 200, page.text[:2000]
    return OPTION.findall(SELECT.search(page.text).group(0))


def reporting_currency(app, merchant: str = MERCHANT) -> str:
    from portal.identity.rules import accounts

    with app.app_context():
        return accounts.merchant_named(merchant).reporting_currency


def choose(client, code: str):
    return post(client, "/settings/reporting-currency", {"reporting_currency": code})


def payment_value(app, operation_id: str) -> tuple[Decimal | None, str]:
    """The value the ledger holds for the payment of this operation, and its currency."""
    from portal.extensions import db
    from portal.money.models import LedgerEntry

    with app.app_context():
        entry = db.session.scalars(
            sa.select(LedgerEntry).where(
                LedgerEntry.operation_id == operation_id, LedgerEntry.kind == "payment"
            )
        ).one()
        return entry.value, entry.value_currency


def audited_changes(owner) -> list[dict[str, str]]:
    export = owner.get("/audit/export.csv?action=reporting_currency.change")
    assert export.status_code == 200
    return list(csv.DictReader(io.StringIO(export.text)))


def test_the_currencies_quoted_against_every_wallet_are_offered(owner, sandbox):
    rates = requests.get(f"{sandbox.api_url}/rates", headers=sandbox.headers(), timeout=10).json()
    pairs = {tuple(key.split(":")) for key in rates}
    currencies = {code for pair in pairs for code in pair}
    expected = {
        code
        for code in currencies
        if all(
            wallet == code or (code, wallet) in pairs or (wallet, code) in pairs
            for wallet in WALLETS
        )
    }
    choices = offered(owner)
    assert set(choices) == expected
    assert len(choices) == len(expected) and choices[0] == "USD"


@pytest.mark.parametrize("code", ["EUR", "XYZ", ""])
def test_a_currency_not_quoted_against_every_wallet_is_refused(app, owner, code):
    before, changes = reporting_currency(app), len(audited_changes(owner))
    refused = choose(owner, code)
    assert refused.status_code == 422
    assert (
        "against every wallet currency (BTC, ETH, USDT): choose one of the list."
        in html.unescape(refused.text)
    )
    assert reporting_currency(app) == before
    audited = audited_changes(owner)  # the attempt, refused
    assert len(audited) == changes + 1 and audited[0]["Outcome"] == "Refused"


def test_an_owners_change_values_the_ledger_again_and_is_audited(app, owner, sandbox):
    api = MerchantApiClient(sandbox.base_url, token=sandbox.token)
    btc, eth = Decimal(60000), Decimal(3000)
    sandbox.set_prices(BTC=str(btc), ETH=str(eth))
    chosen = choose(owner, "USD")
    assert chosen.status_code == 302
    owner.get(chosen.location)  # where a browser shows its message
    sync_now(app)  # the rates of the moment the payment arrives
    operation = api.create_operation("0.5", "BTC", f"order-{uuid.uuid4().hex[:8]}")
    sandbox.receive(operation.id, "0.5")
    sync_now(app)
    assert payment_value(app, operation.id) == (Decimal("0.5") * btc, "USD")

    changed = choose(owner, "ETH")
    assert changed.status_code == 302 and changed.location.endswith("/settings/checkout")
    assert reporting_currency(app) == "ETH"
    assert payment_value(app, operation.id) == (Decimal("0.5") * btc / eth, "ETH")
    page = words(owner.get("/settings/checkout"))
    assert FLASH.search(page).group(1) == "ETH"
    assert "Figures are in ETH: every payment and fee is valued in it" in page
    newest = audited_changes(owner)[0]  # the log lists the newest first
    assert newest["Parameters"].startswith("old: USD; new: ETH;"), newest


@pytest.mark.parametrize("role", ["operator", "accountant"])
def test_others_see_the_reporting_currency_and_only_an_owner_changes_it(app, role):
    client = signed_in(app, email(role))
    before = reporting_currency(app)
    other = "BTC" if before != "BTC" else "USD"
    account = words(client.get("/account"))
    assert f"Figures are in {before}, your merchant's reporting currency" in account
    assert "An owner of your merchant changes it." in account
    assert choose(client, other).status_code == 403
    assert reporting_currency(app) == before


def test_an_owner_with_two_factor_confirms_the_change_with_a_code(app, monkeypatch):
    """As every change of the settings pages: a stolen session cookie alone changes nothing."""
    address = f"owner-{uuid.uuid4().hex[:8]}@acme.test"
    factories.user(app, address, "owner")
    owner = signed_in_with_two_factor(app, address, monkeypatch)
    before = reporting_currency(app)
    other = "BTC" if before != "BTC" else "USD"
    refused = choose(owner.client, other)
    assert refused.status_code == 422
    assert "Enter the 6-digit code your authenticator app shows." in refused.text
    assert reporting_currency(app) == before
    code = owner.clock.code(owner.secret, 1)
    sent = post(
        owner.client, "/settings/reporting-currency", {"reporting_currency": other, "code": code}
    )
    assert sent.status_code == 302
    assert reporting_currency(app) == other


def test_without_an_answer_from_the_payment_service_the_page_says_so(app):
    """The rest of the checkout settings stays usable; the currency stays as it was."""
    factories.api_connection(app, merchant="Unreachable")
    address = f"owner-{uuid.uuid4().hex[:8]}@unreachable.test"
    factories.user(app, address, "owner", merchant="Unreachable")
    owner = signed_in(app, address)
    unanswered = "The payment service did not answer, so the currencies it quotes are unknown"
    with retries_without_pauses():
        shown = owner.get("/settings/checkout")
        sent = choose(owner, "BTC")
    assert shown.status_code == 200 and unanswered in words(shown)
    assert 'name="display_name"' in shown.text and 'name="reporting_currency"' not in shown.text
    assert sent.status_code == 502 and unanswered in words(sent)
    assert reporting_currency(app, "Unreachable") == "USD"


def test_the_owners_limits_are_converted_worth_no_more_and_waiting_raises_canceled(
    app, owner, sandbox
):
    """Kept in the reporting currency, the limits would otherwise be read in the new one: 100
    USD as 100 ETH, some 300,000 USD, with no other owner involved."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import controls, limits

    sandbox.set_prices(BTC="60000", ETH="3000")
    assert choose(owner, "USD").status_code == 302
    tightened = {"reporting-per_withdrawal": "100", "reporting-per_day": "150"}
    assert post(owner, "/withdrawals/limits/reporting", tightened).status_code == 302
    raised = {"reporting-per_withdrawal": "1000", "reporting-per_day": "1500"}
    assert post(owner, "/withdrawals/limits/reporting", raised).status_code == 302
    try:
        with app.app_context():
            assert [
                c.per_withdrawal for c in controls.waiting(accounts.merchant_named(MERCHANT))
            ] == [Decimal(1000)]

        changed = choose(owner, "ETH")

        assert changed.status_code == 302
        page = words(owner.get(changed.location))
        assert "Your withdrawal limits were converted to ETH at today's rates, rounded down" in page
        with app.app_context():
            merchant = accounts.merchant_named(MERCHANT)
            worth = [
                limit * 3000 for limit in (merchant.limit_per_withdrawal, merchant.limit_per_day)
            ]
            assert Decimal("99.9") < worth[0] <= 100 and Decimal("149.9") < worth[1] <= 150
            assert controls.waiting(merchant) == [], "the raise asked in USD is canceled"
            assert limits.check(merchant, "ETH", Decimal(10)).reason is not None
        assert choose(owner, "USD").status_code == 302
        with app.app_context():
            merchant = accounts.merchant_named(MERCHANT)
            assert Decimal("99.8") < merchant.limit_per_withdrawal <= 100
            assert merchant.limit_per_withdrawal.as_tuple().exponent == -2, "in cents"
    finally:
        with app.app_context():
            limits.set_limits(accounts.merchant_named(MERCHANT), None, None)
            db.session.commit()


def test_limits_with_no_rate_to_convert_them_refuse_the_change_and_change_nothing(app):
    """The payment service no longer quotes the old currency: nothing tells what the limits are
    worth in the new one."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import limits, reporting

    quoted = {(wallet, "ETH"): Decimal(1) for wallet in WALLETS if wallet != "ETH"}
    with app.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        owner = next(user for user in merchant.users if user.email == email("owner"))
        limits.set_limits(merchant, Decimal(100), None)
        db.session.commit()
        try:
            with pytest.raises(reporting.LimitsNotConvertible, match="from USD to ETH"):
                reporting.change_reporting_currency(merchant, "ETH", owner, quoted)
            db.session.rollback()
            merchant = accounts.merchant_named(MERCHANT)
            assert (merchant.reporting_currency, merchant.limit_per_withdrawal) == ("USD", 100)
        finally:
            limits.set_limits(accounts.merchant_named(MERCHANT), None, None)
            db.session.commit()
