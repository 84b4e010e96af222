"""The public checkout page against a real sandbox: every redirect code, language, bad reference
and odd query string gets a friendly page; only the payment's own facts are shown."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, ROUND_UP, Decimal

import pytest

from tests.support.checkout import Checkout, new_checkout
from tests.support.htmx import HTMX
from tests.support.money import flags
from tests.support.sandbox_server import free_port

POLLING = 'hx-trigger="every'
CHECKING = "We are checking your payment"
HEADINGS = {
    "": CHECKING,  # the success return, but nobody has seen the payment
    "status=1": "Payment canceled",
    "status=2": "Invoice not found",
    "status=3": "The shop's payment setup was not found",
    "status=4": "The time to pay has run out",
    "status=5": "This invoice is already handled",
    "status=6": "Payments are unavailable for the moment",
    "status=7": "This shop cannot take payments",
    "status=8": "The payment failed",
}
UNKNOWN = "We could not read the result of your payment"
WAITING = "Waiting for your payment"
NOT_FOUND = "Payment page not found"
SATOSHI = Decimal("0.00000001")


@pytest.fixture
def shop(app, module_sandbox):
    """Acme, connected to the sandbox; customers know it as "Acme Coffee"."""
    from portal.identity.rules.accounts import merchant_named
    from portal.settings.models import Environment
    from portal.settings.rules.connection import Credentials, connect

    with app.app_context():
        merchant = merchant_named("Acme", create=True)
        merchant.display_name = "Acme Coffee"
        merchant.shop_url = "https://shop.example/coffee"
        credentials = Credentials(
            module_sandbox.base_url, Environment.SANDBOX, module_sandbox.token
        )
        connect(merchant, credentials)
    return module_sandbox


@pytest.fixture
def checkout(app, shop) -> Checkout:
    return new_checkout(app, "Acme")


def _page(client, checkout: Checkout, query: str = "", **headers: str):
    response = client.get(f"/checkout/{checkout.token}?{query}", headers=headers)
    return response.status_code, response.get_data(as_text=True)


def _pay(sandbox, checkout: Checkout, amount: str) -> None:
    sandbox.control(
        "POST",
        f"operations/{checkout.operation.id}/transactions",
        {"amount": amount, "status": "confirmed"},
    )


def _due(checkout: Checkout, share: int = 1) -> str:
    """The amount due in the payment currency (or a share of it), to 8 decimals."""
    due = checkout.operation.amount * checkout.operation.rate / share
    return str(due.quantize(SATOSHI, rounding=ROUND_UP if share == 1 else ROUND_DOWN))


@pytest.mark.parametrize("query", list(HEADINGS))
def test_a_waiting_payment_is_headed_by_its_state_whatever_the_code(client, checkout, query):
    """With the API answering, the redirect code does not choose the heading."""
    status, body = _page(client, checkout, query)
    assert status == 200
    assert f'<h1 id="outcome-title">{WAITING}</h1>' in body
    assert "Thank you for your payment" not in body
    assert "ORDER-1001" in body
    assert "25.50 USD" in body
    assert '<span class="badge">Awaiting payment</span>' in body
    assert "Acme Coffee" in body


@pytest.mark.parametrize("query", list(HEADINGS))
def test_each_code_has_its_own_page_while_the_api_cannot_be_asked(client, shop, checkout, query):
    """The code decides only when the API refuses to answer for the merchant: codes 3 and 7 (and
    every other) keep the order number and the amount the link was made for."""
    shop.control("POST", "flags", {"company_banned": True})
    try:
        status, body = _page(client, checkout, query)
    finally:
        shop.reset()
    assert status == 200
    assert f'<h1 id="outcome-title">{HEADINGS[query]}</h1>' in body
    assert "ORDER-1001" in body
    assert "25.50 USD" in body
    assert "Acme Coffee" in body


def _linked_after_expiry(app, shop, checkout: Checkout) -> None:
    """The customer paid after the invoice expired (the mirror saw it expire), and the merchant
    linked it by hand."""
    from portal.identity.rules.accounts import merchant_named
    from portal.settings.rules.connection import api_client_for

    shop.control("POST", f"operations/{checkout.operation.id}/expire")
    _sync(app)
    tx = shop.control(
        "POST",
        f"operations/{checkout.operation.id}/transactions",
        {"amount": _due(checkout), "status": "undefined"},
    ).json()["data"]
    with app.app_context():
        api_client_for(merchant_named("Acme")).link_transactions(checkout.operation.id, [tx["id"]])


def _sync(app) -> None:
    """One sync of Acme's mirror, against the sandbox."""
    from portal.identity.rules.accounts import merchant_named
    from portal.live.rules.mirror import sync_merchant

    with app.app_context():
        report = sync_merchant(merchant_named("Acme").id, force=True)
    assert report is not None and report.error is None


def _cancel(app, checkout: Checkout) -> None:
    from portal.identity.rules.accounts import merchant_named
    from portal.settings.rules.connection import api_client_for

    with app.app_context():
        api_client_for(merchant_named("Acme")).cancel_operation(checkout.operation.id)


@pytest.mark.parametrize(
    ("story", "query", "heading", "state", "not_said"),
    [
        ("unpaid", "", WAITING, "Awaiting payment", "Thank you"),
        ("half paid", "", "Part of your payment has arrived", "Partly paid", "Thank you"),
        ("half paid, expired", "status=4", "The time to pay ran out before the full amount "
         "arrived", "Paid late", "expired before a payment arrived"),
        ("half paid, canceled", "status=1", "The invoice was canceled after a payment arrived",
         "Paid late", "nothing was paid"),
        ("confirmed by the merchant after expiry", "status=4", "Thank you for your payment",
         "Paid late", "The time to pay has run out"),
        ("paid in full", "", "Thank you for your payment", "Paid", "Pay"),
        ("overpaid", "", "You paid more than was due", "Overpaid", "Thank you"),
    ],
)  # fmt: skip
def test_the_heading_follows_the_payment(
    app, client, shop, checkout, story, query, heading, state, not_said
):
    if "half paid" in story:
        _pay(shop, checkout, _due(checkout, share=2))
    if story == "paid in full":
        _pay(shop, checkout, _due(checkout))
    if story == "overpaid":
        _pay(shop, checkout, str(Decimal(_due(checkout)) * 2))
    if "expired" in story:
        shop.control("POST", f"operations/{checkout.operation.id}/expire")
    if "canceled" in story:
        _cancel(app, checkout)
    if "confirmed" in story:
        _linked_after_expiry(app, shop, checkout)
    body = _page(client, checkout, query)[1]
    assert f'<h1 id="outcome-title">{heading}</h1>' in body
    assert f'<span class="badge">{state}</span>' in body
    assert not_said not in body


def _shown(amount: Decimal) -> str:
    """An amount as the page writes it in English: its digits, at least two decimals."""
    text = format(amount.normalize(), "f")
    return text if len(text.partition(".")[2]) >= 2 else f"{amount:.2f}"


def test_a_fiat_order_shows_its_crypto_amount_what_was_paid_and_what_is_left(
    client, shop, checkout
):
    """Amount due in the payment currency, amount paid, amount left."""
    due = Decimal(_due(checkout))
    body = _page(client, checkout)[1]
    assert "25.50 USD" in body
    assert f"<dt>Amount due</dt><dd>{_shown(due)} BTC</dd>" in body
    assert "<dt>Paid</dt>" not in body

    half = Decimal(_due(checkout, share=2))
    _pay(shop, checkout, str(half))
    body = _page(client, checkout)[1]
    assert f"{_shown(half)} BTC paid, {_shown(due - half)} BTC left." in body
    assert f"<dt>Paid</dt><dd>{_shown(half)} BTC</dd>" in body
    assert f"<dt>Left to pay</dt><dd>{_shown(due - half)} BTC</dd>" in body

    shop.control("POST", f"operations/{checkout.operation.id}/expire")
    body = _page(client, checkout, "status=4")[1]
    assert f"{_shown(half)} BTC arrived before the invoice expired." in body
    assert "Left to pay" not in body, "nothing can be paid any more"


def test_a_crypto_order_shows_paid_and_left_in_its_currency(app, client, shop):
    checkout = new_checkout(app, "Acme", amount="0.02", currency="BTC", payment_currency="BTC")
    _pay(shop, checkout, "0.005")
    body = _page(client, checkout)[1]
    assert "0.005 BTC paid, 0.015 BTC left." in body
    assert "<dt>Amount</dt><dd>0.02 BTC</dd>" in body
    assert "Amount due" not in body, "the amount is already in the payment currency"


@pytest.fixture
def banned(shop):
    """The API refuses to answer for the merchant: the page has only the redirect code."""
    shop.control("POST", "flags", {"company_banned": True})
    yield
    shop.reset()


@pytest.mark.parametrize("name", ["status", "code", "status_code"])
def test_the_code_is_read_under_each_name(client, checkout, banned, name):
    assert HEADINGS["status=4"] in _page(client, checkout, f"{name}=4")[1]


@pytest.mark.parametrize(
    ("language", "heading", "label"),
    [
        ("en-GB,en;q=0.9", "Payment canceled", "Order number"),
        ("es-ES,es;q=0.9", "Pago cancelado", "Número de pedido"),
        ("de-DE,de;q=0.9,en;q=0.8", "Zahlung storniert", "Bestellnummer"),
        ("ru-RU,ru;q=0.9", "Платёж отменён", "Номер заказа"),
        ("fr-FR,fr;q=0.9", "Payment canceled", "Order number"),
    ],
)
def test_the_page_speaks_the_browser_language(app, client, checkout, language, heading, label):
    _cancel(app, checkout)
    status, body = _page(client, checkout, "status=1", **{"Accept-Language": language})
    assert status == 200
    assert f'<html lang="{language[:2] if language[:2] != "fr" else "en"}">' in body
    assert heading in body
    assert label in body


def test_the_merchant_portal_stays_english(client, checkout, accounts):
    response = client.get("/login", headers={"Accept-Language": "de"})
    assert "Sign in" in response.get_data(as_text=True)


@pytest.mark.parametrize(
    ("query", "heading"),
    [
        ("status=abc", UNKNOWN),
        ("status=99", UNKNOWN),
        ("status=0", UNKNOWN),
        ("status=", UNKNOWN),
        ("status=%D9%A4", UNKNOWN),  # an Arabic-Indic 4: int() would accept it
        ("status=1&status=4", UNKNOWN),
        ("status=4&status=4", HEADINGS["status=4"]),
        ("status=4&code=4", HEADINGS["status=4"]),
        ("status=4&code=1", UNKNOWN),
        ("status=+4+", HEADINGS["status=4"]),
        ("status=" + "9" * 5000, UNKNOWN),
        ("x=" + "y" * 20000, HEADINGS[""]),
        ("статус=✓&status[]=1&;;&&==", HEADINGS[""]),
        ("next=https://evil.example/&return=//evil.example", HEADINGS[""]),
    ],
)
def test_odd_query_strings_get_a_normal_page(client, checkout, banned, query, heading):
    status, body = _page(client, checkout, query)
    assert status == 200
    assert heading in body
    assert 'href="https://evil' not in body
    assert 'href="//evil' not in body
    htmx_status, fragment = _page(client, checkout, query, **HTMX)
    assert htmx_status == 200
    assert 'id="payment"' in fragment


def test_a_query_with_control_characters_is_dropped(client, checkout):
    """Nothing a customer's link needs holds a control character: the page, without the query."""
    response = client.get(f"/checkout/{checkout.token}?%FF%FE=%00%01&status%00=1")
    assert response.status_code == 303
    assert response.location == f"/checkout/{checkout.token}"


def _bad_references(checkout: Checkout) -> list[str]:
    token = checkout.token
    tampered = token[:-1] + ("A" if token[-1] != "A" else "B")
    return [
        tampered,
        token[:-1],
        token + "x",
        token.upper() if token.upper() != token else token.lower(),
        "x" * 65,
        "x" * 5000,
        "%00",
        "%E2%9C%93",
        checkout.operation.id,
        "ORDER-1001",
    ]


def test_tampered_and_unknown_references_show_nothing(client, checkout):
    for reference in _bad_references(checkout):
        for path in (f"/checkout/{reference}?status=1", f"/checkout/{reference}/pay"):
            response = client.get(path)
            body = response.get_data(as_text=True)
            assert response.status_code == 404, path
            assert NOT_FOUND in body, path
            assert "ORDER-1001" not in body
            assert "Acme" not in body


def test_a_link_without_an_operation_is_not_found(app, client, shop):
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.rules.checkout_links import reserve_link

    with app.app_context():
        token = reserve_link(merchant_named("Acme"), "ORDER-NEVER-CREATED").token
        db.session.commit()
    assert client.get(f"/checkout/{token}").status_code == 404


def test_old_links_expire(app, client, checkout):
    from portal.extensions import db
    from portal.payments.rules.checkout_links import find_link

    with app.app_context():
        link = find_link(checkout.token)
        link.created_at -= timedelta(days=app.config["CHECKOUT_LINK_DAYS"], minutes=1)
        db.session.commit()
    response = client.get(f"/checkout/{checkout.token}")
    body = response.get_data(as_text=True)
    assert response.status_code == 404
    assert "This link has expired" in body
    assert "ORDER-1001" not in body


def test_the_customers_browser_keeps_the_pages_stylesheet(client, checkout):
    """The customer's page names its stylesheet by its content (portal/web/static_files.py):
    a customer who comes back to the page does not ask for it again."""
    from portal.web.static_files import KEPT_FOR_A_YEAR

    body = _page(client, checkout)[1]
    (stylesheet,) = re.findall(r'href="(/static/checkout\.css\?v=[0-9a-f]{12})"', body)
    answer = client.get(stylesheet)
    assert answer.status_code == 200
    assert answer.headers["Cache-Control"] == KEPT_FOR_A_YEAR


def test_the_page_shows_only_the_payment(client, checkout):
    body = _page(client, checkout)[1]
    operation = checkout.operation
    for secret in (operation.address, operation.payment_url, f"/pay/{operation.id}", "Acme<"):
        assert secret not in body
    assert checkout.url.endswith(f"/checkout/{checkout.token}")
    assert len(checkout.token) >= 43


def test_the_live_state_is_polled_until_final(client, shop, checkout):
    body = _page(client, checkout)[1]
    assert POLLING in body
    assert f'href="/checkout/{checkout.token}/pay">Pay now' in body

    _pay(shop, checkout, _due(checkout, share=2))
    response = client.get(f"/checkout/{checkout.token}", headers=HTMX)
    fragment = response.get_data(as_text=True)
    assert "Partly paid" in fragment
    assert "Pay the rest" in fragment
    assert POLLING in fragment
    assert "<html" not in fragment
    assert "HX-Request" in response.headers["Vary"]

    _pay(shop, checkout, str(Decimal(_due(checkout)) - Decimal(_due(checkout, share=2))))
    fragment = _page(client, checkout, **HTMX)[1]
    assert '<span class="badge">Paid</span>' in fragment
    assert POLLING not in fragment
    assert "/pay" not in fragment


@pytest.mark.parametrize(("action", "state"), [("expire", "Expired"), ("cancel", "Canceled")])
def test_final_states_stop_polling(app, client, shop, checkout, action, state):
    if action == "expire":
        shop.control("POST", f"operations/{checkout.operation.id}/expire")
    else:
        from portal.identity.rules.accounts import merchant_named
        from portal.settings.rules.connection import api_client_for

        with app.app_context():
            api_client_for(merchant_named("Acme")).cancel_operation(checkout.operation.id)
    body = _page(client, checkout)[1]
    assert f'<span class="badge">{state}</span>' in body
    assert POLLING not in body


def test_pay_again_goes_to_the_hosted_page_while_it_can_take_money(client, shop, checkout):
    response = client.get(f"/checkout/{checkout.token}/pay")
    assert response.status_code == 303
    assert response.location == checkout.operation.payment_url
    shop.control("POST", f"operations/{checkout.operation.id}/expire")
    response = client.get(f"/checkout/{checkout.token}/pay")
    assert response.location == f"/checkout/{checkout.token}"


@pytest.mark.parametrize("query", ["status=3", "status=7"])
def test_no_pay_button_when_the_api_refuses(client, checkout, banned, query):
    assert "/pay" not in _page(client, checkout, query)[1]


@pytest.mark.parametrize("query", ["", "status=1", "status=4", "status=8"])
def test_the_pay_button_follows_the_state_not_the_code(app, client, checkout, query):
    assert f'href="/checkout/{checkout.token}/pay">Pay now' in _page(client, checkout, query)[1]
    _cancel(app, checkout)
    assert "/pay" not in _page(client, checkout, query)[1]


def test_return_to_the_shop_goes_only_to_the_configured_url(app, client, checkout):
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    body = _page(client, checkout, "return_to=https://evil.example")[1]
    assert '<a class="button" href="https://shop.example/coffee" rel="noreferrer">' in body
    for stored in ("javascript:alert(1)", "//evil.example", "ftp://shop.example", None):
        with app.app_context():
            merchant_named("Acme").shop_url = stored
            db.session.commit()
        body = _page(client, checkout)[1]
        assert "Return to" not in body


def test_without_a_display_name_the_merchant_name_shows(app, client, checkout):
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        merchant_named("Acme").display_name = None
        db.session.commit()
    assert '<p class="shop-name">Acme</p>' in _page(client, checkout)[1]


def test_an_unreachable_api_gets_a_friendly_page(app, client, checkout):
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        merchant_named("Acme").api_connection.base_url = f"http://127.0.0.1:{free_port()}"
        db.session.commit()
    status, body = _page(client, checkout, "status=4")
    assert status == 200
    assert HEADINGS["status=4"] in body
    assert "We cannot reach the payment service right now" in body
    assert POLLING in body, "it tries again"
    assert "ORDER-1001" in body, "what the link was made for"
    assert "25.50 USD" in body


def test_an_api_refusal_gets_a_friendly_page(client, shop, checkout):
    shop.control("POST", "flags", {"company_banned": True})
    try:
        status, body = _page(client, checkout, "status=7")
    finally:
        shop.reset()
    assert status == 200
    assert HEADINGS["status=7"] in body
    assert "cannot be shown right now" in body
    assert POLLING not in body


def test_the_language_chosen_on_the_page_stays_for_that_link(app, client, checkout):
    body = _page(client, checkout, "status=4&x=1")[1]
    assert '<html lang="en">' in body
    switch = f'href="/checkout/{checkout.token}?status=4&amp;lang=de"'
    assert switch in body, "the switch keeps the code and nothing else of the query"
    assert 'aria-current="true">English</a>' in body

    body = _page(client, checkout, "status=4&lang=de")[1]
    assert '<html lang="de">' in body
    assert 'aria-current="true">Deutsch</a>' in body
    for later in ("", "status=4"):  # the shop's link again, without the choice in it
        assert '<html lang="de">' in _page(client, checkout, later, **{"Accept-Language": "en"})[1]
    assert '<html lang="ru">' in _page(client, checkout, "lang=ru")[1]
    assert '<html lang="ru">' in _page(client, checkout)[1]

    other = new_checkout(app, "Acme", order_id="ORDER-1002")
    assert '<html lang="en">' in _page(client, other)[1], "remembered for that link only"
    assert '<html lang="en">' in _page(client, other, "lang=fr")[1], "not a language of the page"


def test_the_support_email_shows_on_every_outcome(app, client, shop, checkout):
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    mailto = '<a href="mailto:help@acme.example">Write to help@acme.example</a>'
    assert "mailto:" not in _page(client, checkout)[1], "none saved"
    with app.app_context():
        merchant_named("Acme").support_email = "help@acme.example"
        db.session.commit()
    assert mailto in _page(client, checkout)[1]
    assert mailto in _page(client, checkout, "status=4")[1]
    shop.control("POST", "flags", {"company_banned": True})
    try:
        assert mailto in _page(client, checkout, "status=7")[1]
    finally:
        shop.reset()
    _cancel(app, checkout)
    assert mailto in _page(client, checkout, "status=1")[1]


def test_checkout_headers(client, checkout):
    response = client.get(f"/checkout/{checkout.token}")
    assert response.headers["Cache-Control"] == "no-store"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert "'unsafe-inline'" not in response.headers["Content-Security-Policy"]
    assert "default-src 'self'" in response.headers["Content-Security-Policy"]


def test_a_failure_inside_gets_a_customer_page(app, client, checkout, monkeypatch):
    from portal.payments.pages.checkout import routes

    app.config["PROPAGATE_EXCEPTIONS"] = False

    def broken(_link):
        raise RuntimeError("a bug")

    monkeypatch.setattr(routes, "payment_of", broken)
    response = client.get(f"/checkout/{checkout.token}", headers={"Accept-Language": "es"})
    body = response.get_data(as_text=True)
    assert response.status_code == 500
    assert "Algo ha salido mal" in body
    assert "Traceback" not in body
    assert "RuntimeError" not in body


API_DOWN = {"mode": "error500"}
CHECKING_WORDS = {
    "en": "We are checking your payment",
    "de": "Wir prüfen Ihre Zahlung",
    "es": "Estamos comprobando tu pago",
    "ru": "Мы проверяем ваш платёж",
}
THANKS = {
    "en": "Thank you for your payment",
    "de": "Vielen Dank für Ihre Zahlung",
    "es": "Gracias por tu pago",
    "ru": "Спасибо за оплату",
}


@pytest.mark.parametrize("language", list(CHECKING_WORDS))
def test_with_the_api_down_and_no_code_the_page_checks_instead_of_thanking(
    client, shop, checkout, language
):
    """The hosted page's success return is no proof: nobody has seen the payment."""
    with flags(shop, fault=API_DOWN):
        status, body = _page(client, checkout, **{"Accept-Language": language})
    assert status == 200
    assert f'<h1 id="outcome-title">{CHECKING_WORDS[language]}</h1>' in body
    assert THANKS[language] not in body
    assert POLLING in body, "it asks again until the API answers"


def test_with_the_api_down_a_half_paid_order_says_partly_paid_as_of_the_last_sync(
    app, client, shop, checkout
):
    _pay(shop, checkout, _due(checkout, share=2))
    _sync(app)
    synced = datetime.now(UTC)
    with flags(shop, fault=API_DOWN):
        body = _page(client, checkout)[1]
    assert '<h1 id="outcome-title">Part of your payment has arrived</h1>' in body
    assert '<span class="badge">Partly paid</span>' in body
    times = {(synced - timedelta(minutes=m)).strftime("%H:%M") for m in range(2)}
    assert any(f"as of {time} UTC." in body for time in times), body
    assert "We cannot reach the payment service right now" in body
    assert "Thank you" not in body
    assert "/pay" not in body, "the rest may have been paid meanwhile"


def test_an_overpaid_order_says_the_shop_gives_the_surplus_back(client, shop, checkout):
    due = Decimal(_due(checkout))
    _pay(shop, checkout, str(due * 2))
    body = _page(client, checkout, **{"Accept-Language": "de"})[1]
    surplus = f"{_shown(due).replace('.', ',')} BTC"
    assert "Sie haben mehr als fällig bezahlt" in body
    assert f"Acme Coffee meldet sich bei Ihnen, um Ihnen die zu viel bezahlten {surplus}" in body
    body = _page(client, checkout)[1]
    assert f"Acme Coffee will contact you to give back the {_shown(due)} BTC paid too much." in body


def test_a_link_of_an_earlier_connection_shows_nothing_of_the_new_accounts_operation(
    app, client, accounts, sandbox, tmp_path
):
    """Operation ids are the account's own (both sandboxes number from 1). After the merchant
    connects another account, Alice's link of the first one shows only what it kept: never Bob's
    operation of the same id, from the API or from the mirror, nor a Pay button, and `/pay`
    takes her to no payment page."""
    from portal.api import MerchantApiClient
    from tests.support.money import connect
    from tests.support.sandbox_server import run_sandbox

    with run_sandbox(tmp_path / "b.db") as account_b:
        connect(app, account_b)
        connect(app, sandbox)  # account A, the connection's second generation
        alice = new_checkout(app, "Acme", amount="25.5", order_id="ORDER-OF-ALICE")
        assert f'href="/checkout/{alice.token}/pay">Pay now' in _page(client, alice)[1]
        bob = MerchantApiClient(account_b.base_url, token=account_b.token).create_operation(
            "777.77", "USD", "ORDER-OF-BOB", payment_currency="BTC"
        )
        assert bob.id == alice.operation.id  # one id, two accounts' operations
        connect(app, account_b)
        _sync(app)  # the mirror, now B's, holds Bob's operation, synced after Alice's link
        pages = [_page(client, alice, query) for query in ("", "status=4")]
        with flags(account_b, fault=API_DOWN):
            pages.append(_page(client, alice))
        paying = client.get(f"/checkout/{alice.token}/pay")
    for status, body in pages:
        assert status == 200
        assert "ORDER-OF-ALICE" in body and "25.50 USD" in body, "what her link kept"
        assert "ORDER-OF-BOB" not in body
        assert "777.77" not in body
        assert "/pay" not in body
        assert "The state of this payment cannot be shown right now" in body
        assert POLLING not in body, "asking again won't help"
    assert paying.status_code == 303
    assert paying.location == f"/checkout/{alice.token}", "to her own page, never Bob's"


def test_a_link_whose_operation_never_answered_is_not_looked_for_through_another_account(
    app, client, accounts, sandbox, tmp_path
):
    """A link whose create went unanswered is looked for by its order number and token, through
    the connection it was made under only: once another account is connected, that account's
    operation with the same order number and the link's URL is none of the customer's."""
    from portal.api import MerchantApiClient
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.payments.pages.public_urls import checkout_url
    from portal.payments.rules.checkout_links import reserve_link
    from tests.support.money import connect
    from tests.support.sandbox_server import run_sandbox

    with run_sandbox(tmp_path / "b.db") as account_b:
        connect(app, sandbox)
        with app.test_request_context():
            link = reserve_link(merchant_named("Acme"), "ORDER-LOST")
            url, token = checkout_url(link), link.token
            db.session.commit()
        connect(app, account_b)
        MerchantApiClient(account_b.base_url, token=account_b.token).create_operation(
            "777.77", "USD", "ORDER-LOST", payment_currency="BTC", redirect_url=url
        )
        answer = client.get(f"/checkout/{token}")
    body = answer.get_data(as_text=True)
    assert answer.status_code == 404 and NOT_FOUND in body
    assert "777.77" not in body
