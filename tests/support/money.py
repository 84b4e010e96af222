"""Helpers for the tests of the pages that move money: a connected merchant, forms posted."""

from __future__ import annotations

import contextlib
import html
import re
import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta
from urllib.parse import urlencode

from tests.support import factories
from tests.support.forms import session_csrf_token
from tests.support.sandbox_server import SandboxServer

INTENT_FIELD = re.compile(r'name="intent"[^>]*?value="([^"]+)"')
BTC_ADDRESS = "tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx"
ETH_ADDRESS = "0x52908400098527886E0F7030069857D2E4169EE7"
# A valid cross exchange form: 0.01 BTC for ETH.
CROSS_EXCHANGE = {
    "sell_currency": "BTC",
    "buy_currency": "ETH",
    "sell_amount": "0.01",
    "sell_address": BTC_ADDRESS,
    "buy_address": ETH_ADDRESS,
}


def connect(app, sandbox: SandboxServer, merchant: str = "Acme") -> None:
    """Connect the merchant to the sandbox, with the company token."""
    from portal.identity.rules import accounts
    from portal.settings.models import Environment
    from portal.settings.rules.connection import Credentials
    from portal.settings.rules.connection import connect as save

    with app.app_context():
        credentials = Credentials(
            sandbox.base_url, Environment.SANDBOX, sandbox.token, sandbox.company_token
        )
        save(accounts.merchant_named(merchant), credentials)


@contextlib.contextmanager
def priced_portal(folder, sandbox: SandboxServer, mail_server, **config: object) -> Iterator:
    """A connected portal (`config` added to its own) that mails through `mail_server`, its
    mirror synced, with BTC at 60,000 and ETH at 3,000 USD: what the limits and approvals are
    valued against."""
    from tests.support.mirror import sync_now
    from tests.support.portal_app import connected_portal

    sandbox.set_prices(BTC="60000", ETH="3000")
    settings = {"SYNC_SECONDS": 0, "SMTP_URL": mail_server.url, **config}
    with connected_portal(folder, sandbox, **settings) as app:
        sync_now(app)
        yield app


def post(client, path: str, data: dict | None = None, **headers: str):
    """POST a form as the browser would, with the session's CSRF token (the one every page of
    the session carries, made without rendering one)."""
    token = session_csrf_token(client)
    return client.post(path, data={**(data or {}), "csrf_token": token}, headers=headers)


def approve_with_a_fresh_code(owner, approval: str):
    """`owner` (`two_factor.signed_in_with_two_factor`) presses Approve on the approval's page
    with a code of the next period, fresh as an approval needs it."""
    owner.clock.advance()
    return post(owner.client, approval + "/approve", {"code": owner.clock.code(owner.secret)})


def intent_key(client, path: str) -> str:
    """The idempotency key of the form on `path`, as the browser gets it ("" when there is none)."""
    match = INTENT_FIELD.search(client.get(path).get_data(as_text=True))
    return match.group(1) if match else ""


def submit(client, path: str, data: dict | None = None, **headers: str):
    """Open the form on `path` and send it as a person does: with its CSRF token and its key."""
    return post(client, path, {"intent": intent_key(client, path), **(data or {})}, **headers)


def race(app, client, url: str, data: dict, times: int) -> list[int]:
    """POST the same form `times` at once, each on a client of its own in `client`'s session
    (with its own database connection, as gunicorn workers would); the statuses."""
    return race_each(app, client, [(url, data)] * times)


def race_each(app, client, forms: list[tuple[str, dict]]) -> list[int]:
    """POST each form (its URL and data) at once, as `race` does; the statuses."""
    cookie_name = app.config["SESSION_COOKIE_NAME"]
    cookie = client.get_cookie(cookie_name).value
    clients = []
    for _ in forms:
        clients.append(app.test_client())
        clients[-1].set_cookie(cookie_name, cookie)
    start = threading.Barrier(len(forms))
    statuses: list[int] = []

    def send(one, form: tuple[str, dict]) -> None:
        start.wait()
        statuses.append(one.post(form[0], data=form[1]).status_code)

    threads = [
        threading.Thread(target=send, args=pair) for pair in zip(clients, forms, strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return statuses


def in_book(app, currency: str, address: str, merchant: str = "Acme") -> None:
    """`address` in the merchant's address book, usable at once."""
    factories.book_address(app, currency, address, merchant=merchant)


def book_usual_addresses(app, merchant: str = "Acme") -> None:
    """The addresses the tests send money to, in the merchant's address book."""
    in_book(app, "BTC", BTC_ADDRESS, merchant)
    in_book(app, "ETH", ETH_ADDRESS, merchant)


def review_withdrawal(client, amount: str = "0.01") -> tuple[str, str]:
    """Fill in a withdrawal of ETH to a fresh address, added to the address book first; its
    address and its review page's URL."""
    address = "0x" + uuid.uuid4().hex + uuid.uuid4().hex[:8]
    book = {"currency": "ETH", "address": address, "name": "Fresh"}
    assert post(client, "/address-book", book).status_code == 302
    review = post(
        client, "/withdrawals/new", {"amount": amount, "wallet": "ETH", "address": address}
    )
    assert review.status_code == 302, review.status_code
    return address, review.location


def review_exchange(client, deal: dict[str, str]):
    """The review page of the deal, opened from the exchange form as the browser does."""
    key = intent_key(client, "/exchange")
    return client.get("/exchange/review?" + urlencode({**deal, "intent": key}))


def exchange_confirm_form(review) -> dict[str, str]:
    """The hidden fields of **Confirm exchange** on the review page (CSRF token included)."""
    page = review.get_data(as_text=True)
    form = re.search(r'<form method="post" action="/exchange">(.*?)</form>', page, re.S).group(1)
    return dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form))


def text(response) -> str:
    """The page's text with tags and runs of white space collapsed, for `in` checks."""
    page = re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))
    return re.sub(r"\s+", " ", html.unescape(page))


@contextlib.contextmanager
def without_wallet(sandbox: SandboxServer, currency: str) -> Iterator[None]:
    """The currency's wallet removed for the block, then put back with its balance."""
    wallets = sandbox.control("GET", "wallets").json()["data"]
    balance = next(w["balance"] for w in wallets if w["currency"] == currency)
    sandbox.control("POST", "wallets", {"currency": currency, "balance": None})
    try:
        yield
    finally:
        sandbox.control("POST", "wallets", {"currency": currency, "balance": balance})


@contextlib.contextmanager
def flags(sandbox: SandboxServer, **values: object) -> Iterator[None]:
    """Sandbox flags or a fault for the block; everything back to defaults afterwards."""
    fault = values.pop("fault", None)
    try:
        if values:
            sandbox.control("POST", "flags", values)
        if fault:
            sandbox.control("POST", "faults", fault)
        yield
    finally:
        sandbox.reset()


def apply_due(app, after: timedelta) -> int:
    """The worker's pass over relaxed controls (limits raised, new owners, a shorter
    cooling-off), as it runs `after` from now."""
    from portal.database import utcnow
    from portal.money.rules import controls

    with app.app_context():
        return controls.apply_due(utcnow() + after)
