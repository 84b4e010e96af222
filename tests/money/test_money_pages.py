"""Withdrawals, vouchers, exchanges and cross exchanges through the portal against the sandbox:
every error code of these endpoints in words, bad input refused before anything is sent, and
each action in the audit log with its secrets masked."""

from __future__ import annotations

import logging
import re

import pytest
import requests

from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.money import (
    BTC_ADDRESS,
    ETH_ADDRESS,
    book_usual_addresses,
    connect,
    flags,
    in_book,
    intent_key,
    post,
    submit,
    text,
    without_wallet,
)
from tests.support.sandbox_server import free_port


@pytest.fixture
def portal_config(portal_config):
    portal_config["API_TIMEOUT_READ"] = "1"  # what a slow answer makes its test wait
    return portal_config


@pytest.fixture
def owner(app, accounts, module_sandbox):
    connect(app, module_sandbox)
    book_usual_addresses(app)
    return signed_in(app, accounts.owner)


def _events(app, action: str) -> list:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        query = db.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        return list(db.session.scalars(query))


def _intents(app) -> list:
    from portal.extensions import db
    from portal.money.models import WithdrawalIntent

    with app.app_context():
        return list(db.session.scalars(db.select(WithdrawalIntent)))


def _review(client, amount: str, wallet: str, address: str) -> str:
    response = post(
        client, "/withdrawals/new", {"amount": amount, "wallet": wallet, "address": address}
    )
    assert response.status_code == 302, text(response)
    return response.location


# --- Withdrawals -----------------------------------------------------------------------------


def test_withdrawal_review_confirm_and_list(app, owner, module_sandbox):
    address = "0x" + "ab" * 20
    in_book(app, "ETH", address)
    review = _review(owner, "0.5", "ETH", address)
    page = text(owner.get(review))
    assert f"You are about to withdraw 0.5 ETH from your ETH wallet to the address {address}" in (
        page
    )
    assert module_sandbox.operations_to(address) == 0, "nothing is sent before confirmation"

    confirmed = post(owner, review + "/confirm")
    assert confirmed.status_code == 302
    page = text(owner.get(review))
    assert "Sent" in page and "Operation " in page

    again = post(owner, review + "/confirm")  # a resend of the same form
    assert again.status_code == 302
    assert "already confirmed" in text(owner.get(review))
    assert module_sandbox.operations_to(address) == 1

    listing = text(owner.get("/withdrawals"))
    assert "1 withdrawal " in listing and address in listing and "Sent (processed)" in listing
    (event,) = _events(app, "withdrawal.confirm")
    assert event.outcome == "success"
    assert event.parameters["amount"] == "0.5" and event.parameters["operation_id"]


@pytest.mark.parametrize(
    ("amount", "wallet", "address", "message"),
    [
        ("-1", "BTC", BTC_ADDRESS, "Enter a positive amount in digits"),
        ("abc", "BTC", BTC_ADDRESS, "Enter a positive amount in digits"),
        ("1e3", "BTC", BTC_ADDRESS, "Enter a positive amount in digits"),
        ("0", "BTC", BTC_ADDRESS, "Enter an amount greater than zero."),
        ("0.123456789", "BTC", BTC_ADDRESS, "Use at most 8 decimal places."),
        ("", "BTC", BTC_ADDRESS, "Enter the amount to withdraw."),
        ("1", "XRP", BTC_ADDRESS, "Choose one of the currencies in the list."),
        ("1", "BTC", ETH_ADDRESS, "Enter a Bitcoin address"),
        ("1", "ETH", BTC_ADDRESS, "Enter an Ethereum address: 0x followed by 40 hexadecimal"),
        ("1", "USDT", "0x123", "Enter an Ethereum address"),
        ("1", "USD", "has spaces in it", "Enter the address without spaces."),
        ("1", "BTC", "", "Enter the destination address."),
    ],
)
def test_bad_withdrawal_input_sends_nothing(app, owner, amount, wallet, address, message):
    response = post(
        owner, "/withdrawals/new", {"amount": amount, "wallet": wallet, "address": address}
    )
    assert response.status_code == 422
    assert message in text(response)
    assert _intents(app) == []


@pytest.mark.parametrize(
    ("case", "status", "code", "words"),
    [
        ("validation", 422, 9, "did not accept these details"),
        ("not allowed", 409, 11, "Withdrawals are switched off for your account"),
        ("limit", 422, 12, "above what the wallet can pay out now"),
        ("no wallet", 422, 13, "There is no wallet in this currency that can pay out"),
    ],
)
def test_withdrawal_refusals_in_words(app, owner, module_sandbox, case, status, code, words):
    amount = {"validation": "2000000000", "limit": "30"}.get(case, "0.01")
    wallet = "ETH" if case == "no wallet" else "BTC"
    address = ETH_ADDRESS if wallet == "ETH" else BTC_ADDRESS
    review = _review(owner, amount, wallet, address)
    with (
        flags(module_sandbox, withdrawals_allowed=case != "not allowed"),
        without_wallet(module_sandbox, "ETH") if case == "no wallet" else _nothing(),
    ):
        response = post(owner, review + "/confirm")
    assert response.status_code == status
    page = text(response)
    assert words in page
    assert 'value="' + amount + '"' in response.get_data(as_text=True), "the form, filled in again"
    (intent,) = _intents(app)
    assert (intent.state.value, intent.error_code) == ("refused", code)
    (event,) = _events(app, "withdrawal.confirm")
    assert (event.outcome, event.error_code) == ("error", code)


def _nothing():
    import contextlib

    return contextlib.nullcontext()


@pytest.mark.slow  # waits out the read timeout
@pytest.mark.parametrize(("fault", "status"), [("slow", 504), ("reset", 502), ("error500", 502)])
def test_no_answer_is_outcome_unknown_and_never_sent_again(
    app, owner, module_sandbox, fault, status
):
    review = _review(owner, "0.001", "BTC", BTC_ADDRESS)
    with flags(module_sandbox, fault={"mode": fault, "delay_ms": 6000}):
        response = post(owner, review + "/confirm")
    assert response.status_code == status
    assert "Outcome unknown" in text(response) and "operations list" in text(response)
    (intent,) = _intents(app)
    assert intent.state.value == "unknown"
    assert post(owner, review + "/confirm").status_code == 302, "not sent again"
    assert _events(app, "withdrawal.confirm")[0].outcome == "unknown"


def test_an_unreachable_service_sends_nothing_and_the_intent_stays(app, owner):
    from portal.extensions import db
    from portal.settings.models import ApiConnection

    review = _review(owner, "0.001", "BTC", BTC_ADDRESS)
    with app.app_context():
        connection = db.session.scalars(db.select(ApiConnection)).one()
        connection.base_url = f"http://127.0.0.1:{free_port()}"
        db.session.commit()
    response = post(owner, review + "/confirm")
    assert response.status_code == 502
    assert "could not be reached, so nothing was sent" in text(response)
    assert 'value="Confirm withdrawal"' in response.get_data(as_text=True), "may confirm again"
    assert _intents(app)[0].state.value == "pending"


# --- Vouchers --------------------------------------------------------------------------------


def _new_voucher(client, amount: str = "1", currency: str = "USDT") -> str:
    response = submit(client, "/vouchers/new", {"amount": amount, "currency": currency})
    assert response.status_code == 302, text(response)
    return response.location


def test_a_voucher_is_reviewed_first_and_its_key_carried_to_the_confirmation(owner, module_sandbox):
    before = module_sandbox.count("vouchers")
    form = owner.get("/vouchers/new").get_data(as_text=True)
    assert 'action="/vouchers/review"' in form and 'name="code"' not in form
    key = intent_key(owner, "/vouchers/new")
    review = owner.get(f"/vouchers/review?amount=2&currency=USDT&intent={key}")
    assert review.status_code == 200 and "Nothing is created until you confirm." in text(review)
    assert module_sandbox.count("vouchers") == before, "the review sends nothing"
    confirm = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', review.text))
    assert confirm["intent"] == key and confirm["amount"] == "2" and confirm["currency"] == "USDT"
    made = owner.post("/vouchers/new", data=confirm)
    again = owner.post("/vouchers/new", data=confirm)  # confirmed twice: sent once
    assert made.status_code == again.status_code == 302 and again.location == made.location
    assert module_sandbox.count("vouchers") == before + 1


def test_vouchers_and_exchanges_offer_the_currencies_the_exchange_rates_name(owner):
    for path in ("/vouchers/new", "/exchange"):
        offered = set(re.findall(r'<option value="([A-Z]+)"', owner.get(path).text))
        assert offered == {"BTC", "ETH", "USDT"}, path


def test_voucher_create_reveal_cancel(app, owner, module_sandbox, caplog):
    caplog.set_level(logging.DEBUG)
    url = _new_voucher(owner)
    voucher_id = url.rsplit("/", 1)[1]
    code = requests.get(
        f"{module_sandbox.api_url}/vouchers/{voucher_id}",
        headers=module_sandbox.headers(),
        timeout=5,
    ).json()["data"]["code"]

    page = owner.get(url)
    assert "Reveal code" in text(page) and code not in page.get_data(as_text=True)
    asking = owner.get(url + "/code", headers=HTMX).get_data(as_text=True)
    assert code not in asking and 'value="Reveal code"' in asking and "<html" not in asking
    revealed = post(owner, url + "/code", **HTMX)
    assert code in revealed.get_data(as_text=True) and "<html" not in revealed.get_data(
        as_text=True
    )
    assert "Copy code" in text(revealed)
    assert code in post(owner, url + "/code").get_data(as_text=True), "works without htmx too"
    reveals = _events(app, "voucher.reveal_code")
    assert [e.parameters for e in reveals] == [{"voucher_id": voucher_id}] * 2

    assert "Cancel voucher" in text(owner.get(url + "/cancel"))
    assert post(owner, url + "/cancel").status_code == 302
    assert "Canceled" in text(owner.get(url))
    again = post(owner, url + "/cancel")
    assert again.status_code == 409, "the voucher's state forbids it"
    assert "can no longer be canceled" in text(again)
    assert [e.outcome for e in _events(app, "voucher.cancel")] == ["success", "error"]
    assert _events(app, "voucher.cancel")[1].error_code == 16
    assert code not in caplog.text


def test_pay_off_by_code_masks_the_code(app, owner, module_sandbox, caplog):
    caplog.set_level(logging.DEBUG)
    url = _new_voucher(owner, "2", "ETH")
    code = requests.get(
        f"{module_sandbox.api_url}/vouchers/{url.rsplit('/', 1)[1]}",
        headers=module_sandbox.headers(),
        timeout=5,
    ).json()["data"]["code"]
    response = post(owner, "/vouchers/payoff", {"code": code})
    assert response.status_code == 302
    assert "is paid off: 2 ETH went to your wallet" in text(owner.get(response.location))
    refused = post(owner, "/vouchers/payoff", {"code": code})
    assert refused.status_code == 422
    assert "No voucher can be paid off with this code" in text(refused)
    events = _events(app, "voucher.pay_off")
    assert [(e.outcome, e.error_code) for e in events] == [("success", None), ("error", 17)]
    assert all(e.parameters["code"] == "••••" for e in events)
    assert all(code not in (e.error_message or "") for e in events)
    assert code not in caplog.text


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"code": ""}, "Enter the voucher code."),
        ({"code": "AB"}, "between 4 and 128 characters"),
        ({"code": "AAAA BBBB;DROP"}, "only letters, digits and dashes"),
    ],
)
def test_bad_voucher_codes_send_nothing(app, owner, form, message):
    response = post(owner, "/vouchers/payoff", form)
    assert response.status_code == 422 and message in text(response)
    assert _events(app, "voucher.pay_off") == []


@pytest.mark.parametrize(
    ("amount", "currency", "code", "words"),
    [
        ("30", "BTC", 15, "does not hold enough funds"),
        ("1", "USD", 15, "does not hold enough funds, or there is no such wallet"),
        ("2000000000", "BTC", 9, "did not accept these details"),
    ],
)
def test_voucher_refusals_in_words(app, owner, amount, currency, code, words):
    response = submit(owner, "/vouchers/new", {"amount": amount, "currency": currency})
    assert response.status_code == 422
    assert words in text(response)
    assert _events(app, "voucher.create")[0].error_code == code


def test_unknown_voucher_is_a_page_of_its_own(owner):
    response = owner.get("/vouchers/987654")
    assert response.status_code == 404 and "There is no voucher with this id." in text(response)


def test_voucher_list_filters_and_sorts(owner):
    _new_voucher(owner, "3", "USDT")
    page = owner.get("/vouchers?status=1&currency=USDT&sort=amount&sort_type=desc&per_page=10")
    assert page.status_code == 200 and re.search(r"\b\d+ vouchers?\b", text(page))
    bad = owner.get("/vouchers?amount_from=abc")
    assert bad.status_code == 422 and "Enter a number such as 10 or 0.5." in text(bad)


# --- Exchange --------------------------------------------------------------------------------


def test_exchange_with_a_live_quote(app, owner):
    page = owner.get("/exchange")
    assert "BTC/ETH" in text(page) and "Sell amount" in text(page)
    quote = owner.get(
        "/exchange?sell_currency=BTC&buy_currency=ETH&sell_amount=0.01&buy_amount=", headers=HTMX
    )
    assert "<html" not in quote.get_data(as_text=True)
    assert "Quote: 0.01 BTC for about" in text(quote)
    response = submit(
        owner, "/exchange", {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.01"}
    )
    assert response.status_code == 302
    result = text(owner.get("/exchange"))
    assert "Sold 0.01 BTC" in result and "The exchange is done." in result
    assert _events(app, "exchange.create")[0].outcome == "success"


@pytest.mark.parametrize(
    ("form", "message"),
    [
        ({"sell_currency": "BTC", "buy_currency": "ETH"}, "Enter the sell amount or the buy"),
        (
            {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "1", "buy_amount": "1"},
            "Enter only one of the two amounts",
        ),
        ({"sell_currency": "BTC", "buy_currency": "BTC", "sell_amount": "1"}, "other than"),
        ({"sell_currency": "DOGE", "buy_currency": "BTC", "sell_amount": "1"}, "in the list"),
        ({"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "x"}, "positive amount"),
    ],
)
def test_bad_exchange_input_sends_nothing(app, owner, form, message):
    response = submit(owner, "/exchange", form)
    assert response.status_code == 422 and message in text(response)
    assert _events(app, "exchange.create") == []


EXCHANGE_REFUSALS = [
    ("pair", 21, "This pair of currencies cannot be exchanged"),
    ("count", 22, "today's number of exchanges"),
    ("limit", 23, "above what can be exchanged in one go"),
    ("wallet", 24, "There is no wallet for one of these currencies"),
    ("minimum", 25, "below the minimum, or above what the wallet holds"),
    ("validation", 9, "did not accept these details"),
]


def _refused_deal(case: str) -> dict[str, str]:
    sell, buy = ("USD", "BTC") if case == "pair" else ("BTC", "ETH")
    amount = {"limit": "6", "minimum": "0.00001", "validation": "2000000000"}.get(case, "0.01")
    return {"sell_currency": sell, "buy_currency": buy, "sell_amount": amount}


@pytest.mark.parametrize(("case", "code", "words"), EXCHANGE_REFUSALS)
def test_exchange_refusals_in_words(app, owner, module_sandbox, case, code, words):
    with (
        flags(module_sandbox, exchange_daily_limit=0 if case == "count" else 20),
        without_wallet(module_sandbox, "ETH") if case == "wallet" else _nothing(),
    ):
        response = submit(owner, "/exchange", _refused_deal(case))
    assert response.status_code == (409 if code == 22 else 422), "409: today's count is used up"
    assert words in text(response)
    assert "Exchange rates" in text(response), "the page stays usable"
    assert _events(app, "exchange.create")[0].error_code == code


# --- Cross exchanges -------------------------------------------------------------------------


def _cross(sell_amount: str = "0.01", **changes: str) -> dict[str, str]:
    form = {
        "sell_currency": "BTC",
        "buy_currency": "ETH",
        "sell_amount": sell_amount,
        "sell_address": BTC_ADDRESS,
        "buy_address": ETH_ADDRESS,
    }
    return {**form, **changes}


def test_cross_exchange_create_follow_cancel(app, owner):
    response = submit(owner, "/cross-exchanges/new", _cross())
    assert response.status_code == 302
    url = response.location
    identifier = url.rsplit("/", 1)[1]
    page = owner.get(url)
    assert "Awaiting payment" in text(page) and "data-countdown=" in page.get_data(as_text=True)
    status = owner.get(url, headers=HTMX)
    assert "<html" not in status.get_data(as_text=True) and "Expires" in text(status)
    assert f"Cross exchange {identifier}" in text(owner.get("/cross-exchanges"))
    assert owner.get(f"/cross-exchanges?id={identifier}").location == url

    assert post(owner, url + "/cancel").status_code == 302
    assert "Canceled" in text(owner.get(url))
    again = post(owner, url + "/cancel")
    assert again.status_code == 409 and "can no longer be canceled" in text(again)
    assert [e.error_code for e in _events(app, "cross_exchange.cancel")] == [None, 20]


def test_unknown_cross_exchange_is_a_page_of_its_own(owner):
    response = owner.get("/cross-exchanges/987654")
    assert response.status_code == 404 and "There is no cross exchange with this id." in (
        text(response)
    )
    lookup = owner.get("/cross-exchanges?id=not/an id")
    assert lookup.status_code == 422 and "An id has only letters" in text(lookup)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sell_amount": ""}, "Enter the sell amount or the buy amount."),
        ({"buy_amount": "1"}, "Enter only one of the two amounts"),
        ({"sell_address": ETH_ADDRESS}, "Enter a Bitcoin address"),
        ({"buy_address": BTC_ADDRESS}, "Enter an Ethereum address"),
        ({"buy_address": ""}, "Enter the address the bought currency is paid out to."),
        ({"sell_amount": "-2"}, "Enter a positive amount"),
    ],
)
def test_bad_cross_exchange_input_sends_nothing(app, owner, changes, message):
    response = submit(owner, "/cross-exchanges/new", _cross(**changes))
    assert response.status_code == 422 and message in text(response)
    assert _events(app, "cross_exchange.create") == []


@pytest.mark.parametrize(
    ("case", "code", "words"),
    [
        ("minimum", 19, "below the minimum for this currency"),
        ("count", 22, "today's number of exchanges"),
        ("limit", 23, "above what can be exchanged in one go"),
        ("wallet", 24, "There is no wallet for one of these currencies"),
        ("validation", 9, "did not accept these details"),
    ],
)
def test_cross_exchange_refusals_in_words(app, owner, module_sandbox, case, code, words):
    amount = {"minimum": "0.00001", "limit": "6", "validation": "2000000000"}.get(case, "0.01")
    with (
        flags(module_sandbox, exchange_daily_limit=0 if case == "count" else 20),
        without_wallet(module_sandbox, "ETH") if case == "wallet" else _nothing(),
    ):
        response = submit(owner, "/cross-exchanges/new", _cross(amount))
    assert response.status_code == (409 if code == 22 else 422), "409: today's count is used up"
    assert words in text(response)
    assert _events(app, "cross_exchange.create")[0].error_code == code


# --- Roles -----------------------------------------------------------------------------------


def test_accountants_see_records_but_no_actions(app, accounts, owner):
    voucher = _new_voucher(owner)
    cross = submit(owner, "/cross-exchanges/new", _cross()).location
    accountant = signed_in(app, accounts.accountant)
    page = text(accountant.get(voucher))
    assert "Voucher " in page and "Reveal code" not in page and "Cancel voucher" not in page
    assert accountant.get(voucher + "/code").status_code == 403
    assert post(accountant, voucher + "/cancel").status_code == 403
    assert (
        submit(accountant, "/vouchers/new", {"amount": "1", "currency": "BTC"}).status_code == 403
    )
    exchange = text(accountant.get("/exchange"))
    assert "Exchange rates" in exchange and "Sell amount" not in exchange
    assert submit(accountant, "/exchange", _refused_deal("minimum")).status_code == 403
    assert "Cancel cross exchange" not in text(accountant.get(cross))
    assert post(accountant, cross + "/cancel").status_code == 403
    assert accountant.get("/withdrawals").status_code == 200, "the list only"
    assert accountant.get("/withdrawals/new").status_code == 403
    operator = signed_in(app, accounts.operator)
    assert operator.get("/withdrawals/new").status_code == 403
    page = text(operator.get(voucher))
    assert "Reveal code" not in page and "Cancel voucher" in page, "operators cancel, not reveal"
    assert operator.get(voucher + "/code").status_code == 403
    assert post(operator, voucher + "/code").status_code == 403
    assert operator.get("/vouchers/new").status_code == 403
    assert "New voucher" not in text(operator.get("/vouchers"))


def test_a_cross_exchange_pair_the_service_does_not_offer_is_refused_in_words(app, owner):
    deal = _cross(sell_currency="USD", sell_address="refund-account-0001", sell_amount="50")
    response = submit(owner, "/cross-exchanges/new", deal)
    assert response.status_code == 422
    assert "This pair of currencies cannot be exchanged" in text(response)
    assert _events(app, "cross_exchange.create")[0].error_code == 21
