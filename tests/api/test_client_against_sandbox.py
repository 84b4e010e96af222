"""The API client against the real sandbox over HTTP: every method, error code and fault mode."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
import requests

from portal.api import (
    DOCUMENTED_MESSAGES,
    ApiRefusal,
    ApiUnavailable,
    CrossExchange,
    ErrorCode,
    Exchange,
    MerchantApiClient,
    Operation,
    Transaction,
    Voucher,
)
from tests.support.sandbox_server import SandboxServer

BTC_ADDRESS = "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"
ETH_ADDRESS = "0x" + "ab" * 20
WALLETS_AT_START = {"BTC": "25", "ETH": "400", "USDT": "1000000"}
SHORT_TIMEOUT = (3.0, 0.5)


def api_client(server: SandboxServer, *, company: bool = True, **options: Any) -> MerchantApiClient:
    """A client of the sandbox environment, as the portal makes one for a merchant."""
    options = {
        "base_url": server.base_url,
        "environment": "sandbox",
        "token": server.token,
        "company_token": server.company_token if company else None,
        **options,
    }
    return MerchantApiClient(**options)


@pytest.fixture
def server(module_sandbox) -> SandboxServer:
    yield module_sandbox
    module_sandbox.reset()
    for currency, balance in WALLETS_AT_START.items():
        module_sandbox.control("POST", "wallets", {"currency": currency, "balance": balance})


@pytest.fixture
def api(server) -> MerchantApiClient:
    with api_client(server) as client:
        yield client


def new_operation(api: MerchantApiClient, order_id: str = "ORDER-1", **options: Any) -> Operation:
    return api.create_operation(Decimal("0.5"), "BTC", order_id, **options)


def arrive(server: SandboxServer, operation_id: str, amount: str, status: str) -> str:
    """A blockchain transaction arrives at the operation's address; returns its id."""
    body = {"amount": amount, "status": status}
    answer = server.control("POST", f"operations/{operation_id}/transactions", body)
    return answer.json()["data"]["id"]


# --- Every method -------------------------------------------------------------------------------


def test_ping_and_both_environment_prefixes(server):
    sandbox_env = api_client(server)
    production_env = api_client(server, environment="production")
    assert sandbox_env.api_url == f"{server.base_url}/sandbox/v1"
    assert production_env.api_url == f"{server.base_url}/v1"
    assert sandbox_env.ping() is None
    assert production_env.ping() is None
    created = new_operation(production_env, "PREFIX-1")
    assert sandbox_env.get_operation(created.id) == created


def test_create_get_list_and_cancel_operation(server, api):
    created = api.create_operation(
        Decimal("12.5"),
        "USD",
        "ORDER-42",
        payment_currency="ETH",
        redirect_url="https://shop.example/return?order=42",
    )
    assert isinstance(created, Operation)
    assert (created.status, created.category, created.order_id) == (
        "new",
        "application",
        "ORDER-42",
    )
    assert (created.amount, created.fee) == (Decimal("12.5"), Decimal("0.125"))
    assert (created.currency, created.currency_paid) == ("USD", "ETH")
    assert created.amount_paid is None and created.transactions == ()
    assert isinstance(created.rate, Decimal) and created.rate > 0
    assert created.redirect_url == "https://shop.example/return?order=42"
    assert created.payment_url and created.address.startswith("0x")
    assert created.created_at.tzinfo is UTC
    assert abs(datetime.now(UTC) - created.created_at).total_seconds() < 60

    assert api.get_operation(created.id) == created
    page = api.list_operations(order_id=["ORDER-42"], currency_paid="ETH", status=[0])
    assert [op.id for op in page.items] == [created.id]
    assert (page.total, page.current_page, page.last_page) == (1, 1, 1)

    assert api.cancel_operation(created.id) is None
    assert api.get_operation(created.id).status == "canceled"
    assert api.list_operations(order_id="ORDER-42", status=4).total == 1


def test_transactions_link_and_reject(server, api):
    operation = new_operation(api, "ORDER-TX")
    first = arrive(server, operation.id, "0.2", "undefined")
    second = arrive(server, operation.id, "0.1", "undefined")

    page = api.list_transactions(operation_id=operation.id, sort="id", sort_type="asc")
    assert [t.id for t in page.items] == [first, second]
    transaction = api.get_transaction(first)
    assert isinstance(transaction, Transaction)
    assert (transaction.operation_id, transaction.status) == (operation.id, "undefined")
    assert (transaction.amount, transaction.linked) == (Decimal("0.2"), False)

    rejected = api.reject_transactions(operation.id, [second], "wrong amount")
    assert rejected.status == "new" and rejected.amount_paid == Decimal(0)
    by_id = {t.id: t for t in rejected.transactions}
    assert (by_id[second].status, by_id[second].reject_reason) == ("rejected", "wrong amount")

    linked = api.link_transactions(operation.id, [first])
    assert (linked.status, linked.amount_paid) == ("confirmed", Decimal("0.2"))
    by_id = {t.id: t for t in linked.transactions}
    assert (by_id[first].status, by_id[first].linked) == ("confirmed", True)
    assert api.list_transactions(operation_id=operation.id, linked=True).total == 1
    assert api.list_transactions(reject_reason="wrong amount", status=[4]).total == 1


def test_rates_and_exchange_rates(api):
    rates = api.get_rates()
    assert len(rates) == 12
    assert {base for base, _ in rates} == {"BTC", "ETH", "USDT", "USD"}
    assert all(type(rate) is Decimal and rate > 0 for rate in rates.values())
    assert Decimal(60000) < rates["BTC", "USD"] < Decimal(70000)
    exchange_rates = api.get_exchange_rates()
    assert set(exchange_rates) == {
        (sell, buy)
        for sell in ("BTC", "ETH", "USDT")
        for buy in ("BTC", "ETH", "USDT")
        if sell != buy
    }
    assert exchange_rates["BTC", "ETH"] < rates["BTC", "ETH"]  # the 1 % spread


def test_withdrawals(api):
    external = api.withdraw(Decimal("0.5"), "BTC", BTC_ADDRESS)
    assert isinstance(external, Operation)
    assert (external.category, external.status) == ("transfer", "processed")
    assert external.order_id is None and external.application_id is None
    assert external.amount == Decimal("0.5") and external.transactions == ()
    sandbox_address = new_operation(api, "ORDER-W").address
    internal = api.withdraw(Decimal("0.1"), "BTC", sandbox_address)
    assert internal.category == "internal_transfer"


def test_vouchers(sandbox):
    api = api_client(sandbox)
    created = api.create_voucher(Decimal("1.25"), "ETH")
    assert isinstance(created, Voucher)
    assert (created.status, created.type, created.amount) == (
        "successful",
        "issued",
        Decimal("1.25"),
    )
    assert api.get_voucher(created.id) == created
    other = api.create_voucher(Decimal(2), "USDT")

    page = api.list_vouchers(currency=["ETH", "USDT"], sort="amount", sort_type="asc")
    assert [v.id for v in page.items] == [created.id, other.id]
    assert {v.id for v in api.iter_vouchers(per_page=1)} == {created.id, other.id}

    canceled = api.cancel_voucher(created.id)
    assert canceled is not None and canceled.status == "cancelled"
    paid = api.pay_off_voucher(other.code)
    assert (paid.id, paid.type) == (other.id, "paid off")
    assert api.list_vouchers(status=2).total == 1


def test_exchanges(api):
    sold = api.create_exchange("BTC", "ETH", sell_amount=Decimal("0.1"))
    assert isinstance(sold, Exchange)
    assert (sold.sell_currency, sold.buy_currency, sold.status) == ("BTC", "ETH", "successful")
    assert sold.sell_amount == Decimal("0.1") and sold.fee == Decimal("0.0002")
    expected = (sold.sell_amount - sold.fee) * sold.rate
    assert abs(sold.buy_amount - expected) <= Decimal("0.00000001")
    bought = api.create_exchange("ETH", "USDT", buy_amount=Decimal(100))
    assert bought.buy_amount == Decimal(100) and bought.sell_currency == "ETH"


def test_cross_exchanges(api):
    created = api.create_cross_exchange(
        "BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount=Decimal("0.01")
    )
    assert isinstance(created, CrossExchange)
    assert (created.status, created.sell_amount) == ("processed", Decimal("0.01"))
    assert 29 * 60 <= (created.expired_at - created.created_at).total_seconds() <= 31 * 60
    assert api.get_operation(created.operation_id).address == created.invoice_address
    assert api.get_cross_exchange(created.id) == created
    canceled = api.cancel_cross_exchange(created.id)
    assert canceled is not None and canceled.status == "canceled"
    assert api.get_cross_exchange(created.id).status == "canceled"
    by_buy = api.create_cross_exchange("ETH", "BTC", ETH_ADDRESS, BTC_ADDRESS, buy_amount="0.01")
    assert by_buy.buy_amount == Decimal("0.01")


def test_iterators_cover_every_page(seeded_sandbox):
    api = api_client(seeded_sandbox)
    first_page = api.list_operations()
    assert (first_page.total, first_page.per_page, first_page.last_page) == (300, 50, 6)
    operations = list(api.iter_operations())
    assert len(operations) == len({op.id for op in operations}) == 300
    assert [op.id for op in operations[:50]] == [op.id for op in first_page.items]
    assert len(list(api.iter_operations(per_page=7))) == 300
    confirmed = api.list_operations(status=1, per_page=5)
    assert confirmed.last_page > 1
    assert len(list(api.iter_operations(status=1, per_page=5))) == confirmed.total

    transactions = api.list_transactions(per_page=100)
    assert transactions.last_page > 1
    assert len({t.id for t in api.iter_transactions()}) == transactions.total
    assert api.list_operations(page=1000).items == ()


def test_company_token_for_voucher_list_and_create_cross_exchange(server):
    with_company, without = api_client(server), api_client(server, company=False)
    voucher = with_company.create_voucher(Decimal(1), "ETH")
    server.control("POST", "flags", {"application_banned": True})
    # A banned application's token is refused; the company token is not.
    assert voucher.id in {v.id for v in with_company.iter_vouchers()}
    with_company.create_cross_exchange("BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.01")
    for call in (
        without.list_vouchers,
        lambda: with_company.get_voucher(voucher.id),
        lambda: without.create_cross_exchange(
            "BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.01"
        ),
    ):
        with pytest.raises(ApiRefusal) as caught:
            call()
        assert caught.value.code == 3


# --- Every error code ---------------------------------------------------------------------------


class _WithoutContentType(requests.Session):
    """Drops `Content-Type` as a careless client would: the only way to reach code 10."""

    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any):
        headers = {k: v for k, v in kwargs.pop("headers").items() if k != "Content-Type"}
        return super().request(method, url, *args, headers=headers, **kwargs)


def _flag(server: SandboxServer, **flags: Any) -> None:
    server.control("POST", "flags", flags)


def _wallet(server: SandboxServer, currency: str, balance: str | None) -> None:
    server.control("POST", "wallets", {"currency": currency, "balance": balance})


def _cancel_operation_twice(server: SandboxServer, api: MerchantApiClient) -> None:
    operation = new_operation(api, "TWICE")
    api.cancel_operation(operation.id)
    api.cancel_operation(operation.id)


def _cancel_voucher_twice(server: SandboxServer, api: MerchantApiClient) -> None:
    voucher = api.create_voucher(Decimal(1), "ETH")
    api.cancel_voucher(voucher.id)
    api.cancel_voucher(voucher.id)


def _cancel_cross_exchange_twice(server: SandboxServer, api: MerchantApiClient) -> None:
    cross = api.create_cross_exchange("BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.01")
    api.cancel_cross_exchange(cross.id)
    api.cancel_cross_exchange(cross.id)


def _link_a_foreign_transaction(server: SandboxServer, api: MerchantApiClient) -> None:
    mine, other = new_operation(api, "MINE"), new_operation(api, "OTHER")
    api.link_transactions(mine.id, [arrive(server, other.id, "0.1", "undefined")])


Trigger = Callable[[SandboxServer, MerchantApiClient], Any]
TRIGGERS: dict[int, Trigger] = {
    # A client configured with a base URL that is not the API's root: an unknown path under /v1.
    0: lambda s, a: MerchantApiClient(f"{s.base_url}/v1/unknown", "production", s.token).ping(),
    # The client always speaks v1: a base URL under a removed version reaches code 1.
    1: lambda s, a: MerchantApiClient(f"{s.base_url}/v0", "production", s.token).ping(),
    2: lambda s, a: api_client(s, token="not-the-token").get_rates(),
    3: lambda s, a: (_flag(s, application_banned=True), a.get_rates()),
    4: lambda s, a: (_flag(s, company_banned=True), a.list_vouchers()),
    5: lambda s, a: a.get_operation("987654"),
    6: _link_a_foreign_transaction,
    7: lambda s, a: a.create_operation(Decimal(10), "USD", "ORDER-7", payment_currency="USD"),
    8: _cancel_operation_twice,
    9: lambda s, a: a.create_operation(Decimal("-1"), "BTC", "ORDER-9"),
    10: lambda s, a: api_client(s, session=_WithoutContentType()).cancel_operation("1"),
    11: lambda s, a: (_flag(s, withdrawals_allowed=False), a.withdraw(1, "BTC", BTC_ADDRESS)),
    12: lambda s, a: a.withdraw(Decimal(30), "BTC", BTC_ADDRESS),
    13: lambda s, a: (_wallet(s, "BTC", None), a.withdraw(1, "BTC", BTC_ADDRESS)),
    14: lambda s, a: a.get_voucher("987654"),
    15: lambda s, a: a.create_voucher(Decimal(26), "BTC"),
    16: _cancel_voucher_twice,
    17: lambda s, a: a.pay_off_voucher("AAAA-BBBB-CCCC-DDDD"),
    18: lambda s, a: a.get_cross_exchange("987654"),
    19: lambda s, a: a.create_cross_exchange(
        "BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount=Decimal("0.00001")
    ),
    20: _cancel_cross_exchange_twice,
    21: lambda s, a: a.create_exchange("BTC", "USD", sell_amount=Decimal(1)),
    22: lambda s, a: (_flag(s, exchange_daily_limit=0), a.create_exchange("BTC", "ETH", 1)),
    23: lambda s, a: a.create_exchange("BTC", "ETH", sell_amount=Decimal(6)),
    24: lambda s, a: (_wallet(s, "ETH", None), a.create_exchange("BTC", "ETH", 1)),
    25: lambda s, a: a.create_exchange("BTC", "ETH", sell_amount=Decimal("0.00001")),
}

HTTP_STATUS_OF_CODE = {1: 410, 2: 401, 3: 403, 4: 403, 9: 422, 10: 415}
HTTP_STATUS_OF_CODE |= {code: 404 for code in (5, 6, 14, 18)}


def test_triggers_cover_the_26_codes():
    assert sorted(TRIGGERS) == sorted(DOCUMENTED_MESSAGES)


@pytest.mark.parametrize("code", sorted(TRIGGERS))
def test_every_error_code(server, api, code):
    with pytest.raises(ApiRefusal) as caught:
        TRIGGERS[code](server, api)
    error = caught.value
    assert type(error) is ApiRefusal
    assert (error.code, error.http_status) == (code, HTTP_STATUS_OF_CODE.get(code, 400)), error.raw
    assert error.message and error.code is ErrorCode(code)
    assert server.token not in repr(error) + str(error) + (error.raw or "")
    if code == 9:
        assert "amount" in error.errors


def test_the_bodiless_put_carries_its_content_type(api):
    operation = new_operation(api, "PUT-CT")
    api.cancel_operation(operation.id)  # code 10 without the header, see above
    assert api.get_operation(operation.id).status == "canceled"


# --- The API unavailable ------------------------------------------------------------------------


def _fault(server: SandboxServer, mode: str, delay_ms: int = 5000) -> None:
    server.control("POST", "faults", {"mode": mode, "delay_ms": delay_ms})


@pytest.mark.parametrize(
    ("mode", "http_status"), [("error500", 500), ("malformed", 200), ("reset", None)]
)
def test_faults_make_reads_unavailable(server, api, mode, http_status):
    _fault(server, mode)
    with pytest.raises(ApiUnavailable) as caught:
        api.get_rates()
    error = caught.value
    assert (error.http_status, error.timeout, error.request_sent) == (http_status, False, True)
    _fault(server, "none")
    assert api.get_rates()


def test_slow_answer_is_a_timeout(server):
    _fault(server, "slow", delay_ms=1500)
    started = time.monotonic()
    with pytest.raises(ApiUnavailable) as caught:
        api_client(server, timeout=SHORT_TIMEOUT).list_operations()
    assert time.monotonic() - started < 1.4  # a read timeout is not retried
    assert (caught.value.timeout, caught.value.request_sent) == (True, True)


@pytest.mark.parametrize(
    ("mode", "timeout"), [("reset", False), ("slow", True), ("malformed", False)]
)
@pytest.mark.slow  # waits out the read timeout
def test_a_post_whose_answer_is_lost_is_sent_exactly_once(server, mode, timeout):
    """The sandbox carries the request out, then the answer is lost: the client must not retry."""
    order_id = f"ONCE-{mode}"
    _fault(server, mode, delay_ms=1500)
    with pytest.raises(ApiUnavailable) as caught:
        api_client(server, timeout=SHORT_TIMEOUT).create_operation(Decimal(1), "BTC", order_id)
    assert (caught.value.timeout, caught.value.request_sent) == (timeout, True)
    if mode == "slow":
        time.sleep(1.5)  # the request is carried out once the delay is over
    _fault(server, "none")
    assert api_client(server).list_operations(order_id=order_id).total == 1


def test_a_stopped_server_is_unavailable_and_nothing_was_sent(sandbox):
    api = api_client(sandbox)
    api.ping()
    sandbox.process.terminate()
    sandbox.process.wait(timeout=10)
    for call in (api.ping, lambda: api.create_voucher(Decimal(1), "BTC")):
        with pytest.raises(ApiUnavailable) as caught:
            call()
        assert (caught.value.timeout, caught.value.request_sent) == (False, False)
