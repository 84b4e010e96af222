"""Exactly one exchange, voucher, cross exchange or operation per form shown.

Each form carries a idempotency key. With the API's answer lost (slower than the portal's read
timeout, or a reset connection) the page says the outcome is unknown, and posting the same form
again sends nothing upstream (the sandbox's records are counted); a fresh form may be sent. Eight
parallel posts of one key make one record, on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import re
import uuid

import pytest

from tests.support.forms import csrf_token, signed_in
from tests.support.money import CROSS_EXCHANGE, connect, intent_key, post, race, submit, text
from tests.support.polling import wait_for
from tests.support.portal_app import email

# A slow answer arrives after the read timeout; its tests wait until the sandbox acts.
READ_TIMEOUT = 0.5
SLOW_MS = 1000
# form -> (its page, a valid form, the sandbox table of what it makes, the fresh form's button)
FORMS = {
    "exchange": (
        "/exchange",
        {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.001"},
        "exchanges",
        "New exchange",
    ),
    "voucher": ("/vouchers/new", {"amount": "0.01", "currency": "BTC"}, "vouchers", "New voucher"),
    "cross_exchange": (
        "/cross-exchanges/new",
        CROSS_EXCHANGE,
        "cross_exchanges",
        "New cross exchange",
    ),
    "operation": (
        "/operations/new",
        {"amount": "1", "currency": "BTC"},
        "operations",
        "New operation",
    ),
}


def _filled(form: str) -> tuple[str, dict[str, str], str, str]:
    path, fields, table, button = FORMS[form]
    if form == "operation":
        fields = {**fields, "order_id": f"once-{uuid.uuid4().hex[:8]}"}
    return path, fields, table, button


@pytest.fixture(autouse=True)
def many_exchanges(module_sandbox):
    module_sandbox.control("POST", "flags", {"exchange_daily_limit": 1000})
    yield
    module_sandbox.reset()


@pytest.fixture(scope="module")
def portal(module_servers, module_sandbox):
    application = module_servers.portal(module_sandbox, API_TIMEOUT_READ=READ_TIMEOUT)
    connect(application, module_sandbox)  # with the company token
    return application


@pytest.fixture(scope="module")
def owner(portal):
    return signed_in(portal, email("owner"))


def _lose_answers(sandbox, mode: str) -> None:
    """Answers of POSTs lost: the sandbox acts, then answers too late or resets the connection."""
    fault = {"mode": mode, "delay_ms": SLOW_MS, "methods": ["POST"]}
    sandbox.control("POST", "faults", fault)


@pytest.mark.slow  # waits out the read timeout
@pytest.mark.parametrize("mode", ["slow", "reset"])
@pytest.mark.parametrize("form", FORMS)
def test_a_lost_answer_is_never_sent_again(owner, module_sandbox, form, mode):
    path, fields, table, button = _filled(form)
    data = {**fields, "intent": intent_key(owner, path)}
    before = module_sandbox.count(table)

    _lose_answers(module_sandbox, mode)
    first = post(owner, path, data)
    assert first.status_code == (504 if mode == "slow" else 502), text(first)[:500]
    assert "Outcome unknown" in text(first) and "It will not be sent again" in text(first)
    assert button in text(first), "a button for a fresh form"
    if form == "cross_exchange":  # the portal lists only those whose answer arrived
        assert "check with the payment service whether it made the cross exchange" in text(first)
    wait_for(lambda: module_sandbox.count(table) == before + 1)
    module_sandbox.control("POST", "faults", {"mode": "none"})

    for _ in range(2):  # a reload, a second click after the error
        again = post(owner, path, data)
        assert again.status_code == 409, text(again)[:500]
        page = text(again)
        assert "This form was already sent" in page and "Outcome unknown" in page
        assert "Traceback" not in page and button in page
    assert module_sandbox.count(table) == before + 1, "nothing sent again"

    fresh = submit(owner, path, fields)
    assert fresh.status_code == 302, text(fresh)[:500]
    assert module_sandbox.count(table) == before + 2, "an honest second one, from a fresh form"


@pytest.mark.parametrize("form", FORMS)
def test_a_sent_form_posted_again_shows_what_it_made(owner, module_sandbox, form):
    path, fields, table, _button = _filled(form)
    data = {**fields, "intent": intent_key(owner, path)}
    before = module_sandbox.count(table)
    made = post(owner, path, data)
    assert made.status_code == 302, text(made)[:500]
    again = post(owner, path, data)
    assert (again.status_code, again.location) == (302, made.location)
    shown = text(owner.get(again.location))
    assert "This form was already sent" in shown
    if form == "exchange":  # no page of its own: its id, in words
        assert re.search(r"already sent and made exchange \S+; nothing was sent again", shown)
    assert module_sandbox.count(table) == before + 1


@pytest.mark.parametrize("form", ["exchange", "voucher"])
def test_a_refused_form_posted_again_is_refused_without_sending(owner, module_sandbox, form):
    path, fields, table, _button = _filled(form)
    refused = {**fields, "sell_amount" if form == "exchange" else "amount": "2000000000"}
    data = {**refused, "intent": intent_key(owner, path)}
    first = post(owner, path, data)
    assert first.status_code in (400, 422)
    key = data["intent"]
    assert key not in first.get_data(as_text=True), "the form comes back with a new key"
    before = module_sandbox.count(table)
    again = post(owner, path, data)
    assert again.status_code in (400, 422)
    assert "did not accept these details" in text(again)
    assert module_sandbox.count(table) == before


@pytest.mark.parametrize(
    "key", [None, "A" * 65, "A" * 64 + "\n", "short"], ids=["none", "long", "newline", "short"]
)
def test_a_form_without_its_key_sends_nothing(owner, module_sandbox, key):
    path, fields, table, _button = _filled("voucher")
    before = module_sandbox.count(table)
    response = post(owner, path, fields if key is None else {**fields, "intent": key})
    assert response.status_code == 422
    assert "This form is out of date, so nothing was sent." in text(response)
    assert module_sandbox.count(table) == before


def test_a_request_that_never_left_may_be_sent_again(portal, owner, module_sandbox):
    """Connection refused: nothing was made, so the same form (its key) may be sent again."""
    from portal.extensions import db
    from portal.settings.models import ApiConnection

    path, fields, table, _button = _filled("voucher")
    data = {**fields, "intent": intent_key(owner, path)}
    before = module_sandbox.count(table)
    with portal.app_context():
        connection = db.session.scalars(db.select(ApiConnection)).one()
        base_url, connection.base_url = connection.base_url, "http://127.0.0.1:9"
        db.session.commit()
    try:
        refused = post(owner, path, data)
    finally:
        with portal.app_context():
            db.session.scalars(db.select(ApiConnection)).one().base_url = base_url
            db.session.commit()
    assert refused.status_code == 502 and "so nothing was sent" in text(refused)
    assert 'name="amount"' in refused.get_data(as_text=True), "the form, to send again"
    assert post(owner, path, data).status_code == 302
    assert module_sandbox.count(table) == before + 1


# --- Parallel posts of one key ---------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
def test_eight_parallel_posts_of_one_form_make_one_record(
    each_database, app, accounts, module_sandbox, form
):
    connect(app, module_sandbox)
    owner = signed_in(app, accounts.owner)
    path, fields, table, _button = _filled(form)
    data = {**fields, "intent": intent_key(owner, path), "csrf_token": csrf_token(owner, path)}
    before = module_sandbox.count(table)

    statuses = race(app, owner, path, data, 8)

    assert sorted(set(statuses)) <= [302, 409], statuses
    assert module_sandbox.count(table) == before + 1


def test_keys_are_the_merchants_own(each_database, app, accounts, module_sandbox):
    """Another merchant's key finds nothing: it is not where that merchant's forms stand."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.money.models import IntentKind
    from portal.money.rules.idempotency import find

    connect(app, module_sandbox)
    owner = signed_in(app, accounts.owner)
    key = intent_key(owner, "/vouchers/new")
    assert post(owner, "/vouchers/new", {**FORMS["voucher"][1], "intent": key}).status_code == 302
    with app.app_context():
        assert find(merchant_named("Acme"), IntentKind.VOUCHER, key) is not None
        assert find(merchant_named("Other"), IntentKind.VOUCHER, key) is None
        assert find(merchant_named("Acme"), IntentKind.EXCHANGE, key) is None
        db.session.rollback()
