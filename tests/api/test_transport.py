"""What goes over the wire: paths, headers, tokens, bodies, pooling, timeouts and retries."""

from __future__ import annotations

import socket
import time
from datetime import date, datetime
from decimal import Decimal

import pytest

from portal.api import ApiUnavailable, MerchantApiClient, make_session, mask_token
from tests.support.fake_api import (
    COMPANY_TOKEN,
    TOKEN,
    Answer,
    FakeApi,
    cross_exchange_json,
    operation_json,
    page_json,
    voucher_json,
)

OPERATION = Answer(201, {"data": operation_json()})
EMPTY_PAGE = Answer(200, page_json([], page=1, per_page=50, total=0))


@pytest.fixture
def api():
    with FakeApi() as fake:
        yield fake


def settle() -> None:
    """Leave time for a retry that should not come."""
    time.sleep(0.3)


@pytest.mark.parametrize(
    ("environment", "path"), [("sandbox", "/sandbox/v1/ping"), ("production", "/v1/ping")]
)
def test_environment_prefix(api, environment, path):
    api.answer("GET", path, Answer(200, {"data": {"status": "ok"}}))
    client = api.client(environment=environment, base_url=api.base_url + "/")
    client.ping()
    assert api.last().path == path


def test_unknown_environment_and_bad_base_url_are_refused():
    with pytest.raises(ValueError, match="environment"):
        MerchantApiClient("http://127.0.0.1:1", environment="staging", token=TOKEN)
    with pytest.raises(ValueError, match="base_url"):
        MerchantApiClient("127.0.0.1:8100", token=TOKEN)


def test_a_token_with_a_line_break_is_refused_without_being_quoted():
    """http.client would refuse the header with the whole token in its message."""
    for tokens in ({"token": TOKEN + "\n"}, {"token": TOKEN, "company_token": "a\r\nb"}):
        with pytest.raises(ValueError, match="line break") as refused:
            MerchantApiClient("http://127.0.0.1:1", **tokens)
        assert TOKEN not in str(refused.value)


def test_headers_of_get_post_and_bodiless_put(api):
    api.answer("GET", "/v1/operations/42", Answer(200, {"data": operation_json()}))
    api.answer("POST", "/v1/operations", OPERATION)
    api.answer("PUT", "/v1/operations/42/cancel", Answer(204, ""))
    client = api.client()
    client.get_operation("42")
    client.create_operation(Decimal("10"), "USD", "A-1")
    client.cancel_operation("42")
    get, post, put = api.received
    for request in (get, post, put):
        assert request.headers["Authorization"] == f"Bearer {TOKEN}"
        assert request.headers["Accept"] == "application/json"
    assert "Content-Type" not in get.headers
    assert post.headers["Content-Type"] == "application/json"
    assert put.headers["Content-Type"] == "application/json"
    assert put.body == b""


def test_amounts_are_sent_as_plain_decimal_strings(api):
    api.answer("POST", "/v1/operations", OPERATION)
    api.answer("POST", "/v1/withdraw", Answer(200, {"data": operation_json()}))
    api.answer("POST", "/v1/vouchers", Answer(201, {"data": voucher_json()}))
    client = api.client()
    client.create_operation(
        Decimal("1E+2"), "USD", "A-1", payment_currency="BTC", redirect_url="https://shop/x"
    )
    client.withdraw(Decimal("0.00000001"), "BTC", "tb1qaddress")
    client.create_voucher(Decimal("1.50"), "ETH")
    create, withdraw, voucher = (r.json() for r in api.received)
    assert create == {
        "amount": "100",
        "currency": "USD",
        "order_id": "A-1",
        "payment_currency": "BTC",
        "redirect_url": "https://shop/x",
    }
    assert withdraw == {"amount": "0.00000001", "wallet": "BTC", "address": "tb1qaddress"}
    assert voucher == {"amount": "1.50", "currency": "ETH"}


def test_optional_fields_are_left_out(api):
    api.answer("POST", "/v1/operations", OPERATION)
    api.client().create_operation(5, "BTC", "A-2")
    assert api.last().json() == {"amount": "5", "currency": "BTC", "order_id": "A-2"}


@pytest.mark.parametrize("amount", [0.1, True])
def test_float_amounts_are_refused_before_sending(api, amount):
    with pytest.raises(TypeError):
        api.client().create_voucher(amount, "BTC")
    assert api.received == []


def test_link_reject_payoff_and_exchange_bodies(api):
    operation = Answer(200, {"data": operation_json()})
    api.answer("PUT", "/v1/operations/42/link-transactions", operation)
    api.answer("PUT", "/v1/operations/42/reject-transactions", operation)
    api.answer("POST", "/v1/vouchers/payoff", Answer(200, {"data": voucher_json()}))
    api.answer("POST", "/v1/exchange", Answer(201, {"data": {"id": "1"}}))
    api.answer("POST", "/v1/cross-exchanges", Answer(201, {"data": cross_exchange_json()}))
    client = api.client()
    client.link_transactions("42", ["7", "8"])
    client.reject_transactions("42", ("9",), "dust")
    client.pay_off_voucher("ABCD-EFGH-IJKL-MNOP")
    client.create_exchange("BTC", "ETH", buy_amount=Decimal("2.0"))
    client.create_cross_exchange("BTC", "ETH", "tb1qrefund", "0x" + "a" * 40, sell_amount=1)
    assert [r.json() for r in api.received] == [
        {"tx_id": ["7", "8"]},
        {"tx_id": ["9"], "reason": "dust"},
        {"code": "ABCD-EFGH-IJKL-MNOP"},
        {"sell_currency": "BTC", "buy_currency": "ETH", "buy_amount": "2.0"},
        {
            "sell_currency": "BTC",
            "buy_currency": "ETH",
            "sell_amount": "1",
            "sell_address": "tb1qrefund",
            "buy_address": "0x" + "a" * 40,
        },
    ]


def test_filters_are_encoded_from_python_values(api):
    api.answer("GET", "/v1/operations", EMPTY_PAGE)
    api.answer("GET", "/v1/transactions", EMPTY_PAGE)
    client = api.client()
    client.list_operations(
        status=[0, 1],
        currency=("BTC", "ETH"),
        amount_from=Decimal("0.5"),
        amount_to=None,
        created_from=date(2024, 1, 31),
        sort="amount",
        sort_type="desc",
        per_page=10,
    )
    client.list_transactions(linked=True, status=4, id=["1", "2"])
    operations, transactions = (r.query for r in api.received)
    assert operations == {
        "status": "0,1",
        "currency": "BTC,ETH",
        "amount_from": "0.5",
        "created_from": "2024-01-31",
        "sort": "amount",
        "sort_type": "desc",
        "per_page": "10",
    }
    assert transactions == {"linked": "1", "status": "4", "id": "1,2"}


@pytest.mark.parametrize(
    ("filters", "error"),
    [
        ({"statuss": 1}, TypeError),
        ({"created_from": datetime(2024, 1, 1)}, TypeError),
        ({"amount_from": 0.5}, TypeError),
    ],
)
def test_bad_filters_are_refused_before_sending(api, filters, error):
    with pytest.raises(error):
        api.client().list_operations(**filters)
    assert api.received == []


def test_ids_stay_one_path_segment(api):
    api.answer("GET", "/v1/operations/..%2Fping", Answer(200, {"data": operation_json()}))
    api.client().get_operation("../ping")
    assert api.last().path == "/v1/operations/..%2Fping"
    with pytest.raises(ValueError):
        api.client().get_voucher("")


def test_company_token_for_voucher_list_and_create_cross_exchange_only(api):
    api.answer("GET", "/v1/vouchers", EMPTY_PAGE)
    api.answer("POST", "/v1/cross-exchanges", Answer(201, {"data": cross_exchange_json()}))
    api.answer("GET", "/v1/vouchers/3", Answer(200, {"data": voucher_json()}))
    api.answer("POST", "/v1/vouchers", Answer(201, {"data": voucher_json()}))
    for company_token, expected in ((COMPANY_TOKEN, COMPANY_TOKEN), (None, TOKEN)):
        api.received.clear()
        client = api.client(company_token=company_token)
        client.list_vouchers()
        client.create_cross_exchange("BTC", "ETH", "tb1qrefund", "0xabc", buy_amount=1)
        client.get_voucher("3")
        client.create_voucher(1, "BTC")
        tokens = [r.headers["Authorization"].removeprefix("Bearer ") for r in api.received]
        assert tokens == [expected, expected, TOKEN, TOKEN]


def test_repr_masks_both_tokens(api):
    text = repr(api.client(company_token=COMPANY_TOKEN))
    assert TOKEN not in text and COMPANY_TOKEN not in text
    assert "••••mnop" in text and "••••2345" in text
    assert mask_token("short") == "••••"
    assert mask_token(None) is None


def test_connections_are_pooled_and_the_session_can_be_shared(api):
    api.answer("GET", "/v1/ping", Answer(200, ""))
    session = make_session()
    first = api.client(session=session)
    second = api.client(session=session, token="another-token-0000000000")
    for client in (first, second, first):
        client.ping()
    assert len({r.client_port for r in api.received}) == 1
    assert api.received[1].headers["Authorization"] == "Bearer another-token-0000000000"
    assert "Authorization" not in session.headers


@pytest.mark.parametrize(
    "failures",
    [
        [Answer(reset=True), Answer(reset=True)],
        [Answer(503, "busy"), Answer(504, "")],
    ],
    ids=["reset", "5xx"],
)
def test_get_is_retried_with_backoff(api, failures):
    api.answer("GET", "/v1/rates", *failures, Answer(200, {"BTC:USD": 1}))
    started = time.monotonic()
    assert api.client().get_rates() == {("BTC", "USD"): Decimal(1)}
    assert api.count("GET", "/v1/rates") == 3
    assert time.monotonic() - started >= 0.4  # the second retry waits (0.25 s x 2)


def test_get_gives_up_after_two_retries(api):
    api.answer("GET", "/v1/rates", Answer(503, "busy"))
    with pytest.raises(ApiUnavailable) as caught:
        api.client().get_rates()
    assert caught.value.http_status == 503
    assert api.count("GET", "/v1/rates") == 3


def test_get_is_not_retried_on_500(api):
    api.answer("GET", "/v1/rates", Answer(500, "<h1>boom</h1>"))
    with pytest.raises(ApiUnavailable):
        api.client().get_rates()
    assert api.count("GET", "/v1/rates") == 1


@pytest.mark.parametrize(
    ("method", "path", "call"),
    [
        ("POST", "/v1/withdraw", lambda c: c.withdraw(Decimal(1), "BTC", "tb1qaddress")),
        ("POST", "/v1/operations", lambda c: c.create_operation(Decimal(1), "BTC", "A-1")),
        ("PUT", "/v1/vouchers/3/cancel", lambda c: c.cancel_voucher("3")),
    ],
)
@pytest.mark.parametrize(
    ("answer", "timeout"),
    [(Answer(reset=True), False), (Answer(delay=1.0), True), (Answer(503, ""), False)],
    ids=["reset", "read-timeout", "503"],
)
def test_post_and_put_are_sent_exactly_once(api, method, path, call, answer, timeout):
    api.answer(method, path, answer, OPERATION)
    with pytest.raises(ApiUnavailable) as caught:
        call(api.client(timeout=(1.0, 0.3)))
    assert (caught.value.timeout, caught.value.request_sent) == (timeout, True)
    settle()
    assert api.count(method, path) == 1


def test_get_read_timeout_is_not_retried(api):
    api.answer("GET", "/v1/operations/42", Answer(200, {"data": operation_json()}, delay=1.0))
    with pytest.raises(ApiUnavailable) as caught:
        api.client(timeout=(1.0, 0.3)).get_operation("42")
    assert (caught.value.timeout, caught.value.request_sent) == (True, True)
    settle()
    assert api.count("GET", "/v1/operations/42") == 1


@pytest.fixture
def refused_url():
    """A loopback URL where the connection is refused: the port is bound but never listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_connection_refused_is_unavailable_and_not_sent(refused_url):
    client = MerchantApiClient(refused_url, token=TOKEN)
    with pytest.raises(ApiUnavailable) as caught:
        client.create_voucher(Decimal(1), "BTC")
    error = caught.value
    assert (error.timeout, error.request_sent, error.http_status) == (False, False, None)
    assert TOKEN not in str(error)


@pytest.mark.parametrize(
    ("call", "retried"),
    [
        (lambda c: c.get_rates(), True),
        (lambda c: c.create_voucher(Decimal(1), "BTC"), False),
        (lambda c: c.cancel_voucher("3"), False),
    ],
)
def test_a_refused_connection_is_retried_for_get_only(refused_url, call, retried):
    """urllib3 alone would retry a refused POST too; the backoff makes a retry measurable."""
    started = time.monotonic()
    with pytest.raises(ApiUnavailable):
        call(MerchantApiClient(refused_url, token=TOKEN))
    assert (time.monotonic() - started >= 0.45) is retried  # retries wait 0 s, then 0.5 s


def test_unresolvable_host_is_unavailable_and_not_sent():
    # A failed lookup answers at once; a deadline well beyond it keeps a loaded machine's slow
    # lookups from reading as a timeout.
    client = MerchantApiClient("http://merchant-api.invalid", token=TOKEN, timeout=(10.0, 10.0))
    with pytest.raises(ApiUnavailable) as caught:
        client.ping()
    assert (caught.value.timeout, caught.value.request_sent) == (False, False)


def test_the_proxy_of_the_environment_is_obeyed_and_read_once(api, monkeypatch):
    """The session caches the environment's proxy settings per host; it still obeys them."""
    api.answer("GET", "/v1/ping", Answer(200, ""))
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("http_proxy", api.base_url)
    monkeypatch.setenv("no_proxy", "bypassed.invalid")
    proxied = MerchantApiClient("http://api.invalid", environment="production", token=TOKEN)
    proxied.ping()
    assert api.last().headers["Host"] == "api.invalid"
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # the process's environment is fixed
    proxied.ping()
    assert api.count("GET", "/v1/ping") == 2
    bypassed = MerchantApiClient("http://bypassed.invalid", environment="production", token=TOKEN)
    with pytest.raises(ApiUnavailable):
        bypassed.ping()
    assert api.count("GET", "/v1/ping") == 2
