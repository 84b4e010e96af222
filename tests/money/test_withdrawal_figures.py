"""The figures of the withdrawal form against a real sandbox: what the wallet holds as the portal
saw it, Max with the last network fee left aside, and the day's withdrawals against the daily
limit an owner set, which the portal enforces before anything reaches the payment service."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.mirror import sync_now
from tests.support.money import BTC_ADDRESS, apply_due, flags, post, text
from tests.support.portal_app import MERCHANT, connected_portal, email
from tests.support.two_factor import enable_for, freeze, sign_in_with_code

FEE_RATE = Decimal("0.01")  # the sandbox's operation fee: 1 % of what is paid
NETWORK_FEE = Decimal("0.0001")  # the sandbox's BTC network fee to an outside address
AMOUNT_FIELD = re.compile(r'<input[^>]*name="amount"[^>]*value="([^"]*)"')


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
def owner(portal):
    return signed_in(portal, email("owner"))


def paid(api, sandbox, amount: str) -> Decimal:
    """A BTC operation paid in full; what it leaves in the wallet (its fee taken)."""
    operation = api.create_operation(amount, "BTC", f"order-{amount}")
    sandbox.receive(operation.id, amount)
    return Decimal(amount) * (1 - FEE_RATE)


def limit(app) -> Decimal | None:
    from portal.identity.rules import accounts
    from portal.money.rules.withdrawal_figures import daily_limit

    with app.app_context():
        return daily_limit(accounts.merchant_named(MERCHANT), "BTC")


def limit_events(app) -> list[dict]:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        query = db.select(AuditEvent).where(AuditEvent.action == "withdrawal_limit.change")
        return [event.parameters for event in db.session.scalars(query)]


def set_limit(client, amount: str, **more: str):
    return post(
        client, "/withdrawals/limits", {"limit-wallet": "BTC", "limit-daily_limit": amount, **more}
    )


def max_pressed(client):
    """Max of the BTC wallet pressed on a form with an address typed in."""
    return post(client, "/withdrawals/new", {"amount": "", "address": BTC_ADDRESS, "max": "BTC"})


def test_the_form_shows_what_the_portal_saw_and_max_leaves_the_last_network_fee(
    portal, owner, api, sandbox
):
    received = paid(api, sandbox, "0.5")
    api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)
    sync_now(portal)
    available = received - Decimal("0.1") - NETWORK_FEE

    page = text(owner.get("/withdrawals/new"))
    assert (
        f"Available in the BTC wallet, as the portal saw it {available} BTC, as of the last sync"
        in page
    )
    assert "derived by the portal from the movements it has seen" in page
    assert f"Estimated network fee, from the last withdrawal {NETWORK_FEE} BTC" in page
    assert "Withdrawn today (UTC) 0.1 BTC; no limit set" in page

    withdrawals_before = sandbox.requests_received("POST", "/withdraw")
    filled = max_pressed(owner)
    assert filled.status_code == 200
    assert AMOUNT_FIELD.search(filled.get_data(as_text=True)).group(1) == str(
        available - NETWORK_FEE
    )
    assert BTC_ADDRESS in filled.get_data(as_text=True), "what was typed stays"
    assert re.search(
        r'<option selected value="BTC">|<option value="BTC" selected', filled.get_data(as_text=True)
    )
    assert sandbox.requests_received("POST", "/withdraw") == withdrawals_before, "nothing sent"


def test_without_a_previous_withdrawal_max_says_no_fee_is_estimated(portal, owner, api, sandbox):
    received = paid(api, sandbox, "0.2")
    sync_now(portal)

    page = text(owner.get("/withdrawals/new"))
    assert "None known: no BTC withdrawal to an outside address has been seen yet" in page
    assert f"Max: {received} BTC, no fee left aside" in page
    filled = max_pressed(owner)
    assert AMOUNT_FIELD.search(filled.get_data(as_text=True)).group(1) == str(received)


def test_an_owner_sets_a_limit_with_a_fresh_code_and_the_form_counts_today_against_it(
    portal, api, sandbox, monkeypatch
):
    clock = freeze(monkeypatch)
    secret = enable_for(portal, email("owner"))
    owner = portal.test_client()
    assert sign_in_with_code(owner, email("owner"), clock.code(secret)).status_code == 302
    api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)
    sync_now(portal)

    refused = set_limit(owner, "0.25")
    assert refused.status_code == 422 and limit(portal) is None, "no code, no limit"
    assert set_limit(owner, "0.25", **{"limit-code": clock.code(secret, 1)}).status_code == 302
    assert limit(portal) == Decimal("0.25")
    assert limit_events(portal) == [
        {"wallet": "BTC", "daily_limit": "0.25", "per_withdrawal": "none"}
    ]
    page = text(owner.get("/withdrawals/new"))
    assert "Withdrawn today (UTC) 0.1 BTC of the 0.25 BTC limit you set (0.15 BTC left)" in page

    clock.advance(2)
    assert set_limit(owner, "", **{"limit-code": clock.code(secret)}).status_code == 302
    assert limit(portal) == Decimal("0.25"), "removing a limit alone waits 48 hours"
    assert apply_due(portal, timedelta(hours=48, minutes=1)) == 1
    assert limit(portal) is None
    assert "Withdrawn today (UTC) 0.1 BTC; no limit set" in text(owner.get("/withdrawals/new"))


def test_a_withdrawal_over_what_the_limit_leaves_is_refused_before_anything_is_sent(
    portal, owner, api, sandbox
):
    api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)
    sync_now(portal)
    assert set_limit(owner, "0.3").status_code == 302
    sent_before = sandbox.requests_received("POST", "/withdraw")

    form = {"amount": "0.25", "wallet": "BTC", "address": BTC_ADDRESS}
    over = post(owner, "/withdrawals/new", form)
    assert over.status_code == 422
    assert (
        "Not sent: 0.25 BTC is more than the daily limit you set leaves for the BTC wallet today. "
        "Withdrawn today (UTC): 0.1 BTC of the 0.3 BTC limit, so 0.2 BTC is left."
    ) in text(over)

    review = post(owner, "/withdrawals/new", {**form, "amount": "0.15"}).location
    assert set_limit(owner, "0.2").status_code == 302  # lowered after the review
    confirmed = post(owner, review + "/confirm")
    assert confirmed.status_code == 422
    assert "Not sent: 0.15 BTC is more than the daily limit" in text(confirmed)
    assert "0.1 BTC of the 0.2 BTC limit, so 0.1 BTC is left" in text(confirmed)
    assert sandbox.requests_received("POST", "/withdraw") == sent_before

    assert set_limit(owner, "0.3").status_code == 302
    assert apply_due(portal, timedelta(hours=48, minutes=1)) == 1  # raised alone: 48 hours
    assert post(owner, review + "/confirm").status_code == 302  # sent; no sync since
    again = post(owner, "/withdrawals/new", {**form, "amount": "0.1"})
    assert again.status_code == 422, "what the portal sent counts before a sync books it"
    assert "Withdrawn today (UTC): 0.25 BTC of the 0.3 BTC limit, so 0.05 BTC is left" in text(
        again
    )
    assert sandbox.requests_received("POST", "/withdraw") == sent_before + 1


@pytest.mark.parametrize("role", ["operator", "accountant"])
def test_only_owners_set_limits(portal, role):
    client = signed_in(portal, email(role))
    assert set_limit(client, "1").status_code == 403
    assert limit(portal) is None and limit_events(portal) == []


def test_a_refusal_from_the_payment_service_shows_the_figures(portal, owner, api, sandbox):
    received = paid(api, sandbox, "0.5")
    api.withdraw(Decimal("0.1"), "BTC", BTC_ADDRESS)
    sync_now(portal)
    assert set_limit(owner, "1").status_code == 302
    review = post(
        owner, "/withdrawals/new", {"amount": "0.01", "wallet": "BTC", "address": BTC_ADDRESS}
    ).location
    with flags(sandbox, withdrawals_allowed=False):
        refused = post(owner, review + "/confirm")
    assert refused.status_code == 409
    refused_block = re.search(
        r'<dl class="facts" aria-label="The refused withdrawal">.*?</dl>',
        refused.get_data(as_text=True),
        re.S,
    ).group(0)
    figures = " ".join(re.sub(r"<[^>]+>", " ", refused_block).split())
    available = received - Decimal("0.1") - NETWORK_FEE
    assert f"Available in the BTC wallet, as the portal saw it {available} BTC" in figures
    assert f"Estimated network fee, from the last withdrawal {NETWORK_FEE} BTC" in figures
    assert "0.1 BTC of the 1 BTC limit you set (0.9 BTC left)" in figures
