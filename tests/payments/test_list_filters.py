"""Every filter and sort of the operations and transactions lists, through the portal's pages.

Each case is a query string a person could make with the filter form; the portal page must list
exactly what the API lists for the filters the case expects it to send, and those records must
satisfy the filter. Runs against the seeded sandbox of the session (read only).
"""

from __future__ import annotations

import re
from datetime import UTC, timedelta
from decimal import Decimal

import pytest

from portal.api import MerchantApiClient
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.portal_app import email

ROW_LINK = {
    "operations": re.compile(r'<td[^>]*><a href="/operations/([^"/]+)">'),
    "transactions": re.compile(r'<td[^>]*><a href="/transactions/([^"/]+)">'),
}
TOTAL = re.compile(r"<strong>(\d+) (?:operation|transaction)s?</strong>")


@pytest.fixture(scope="module")
def app(module_servers, seeded_sandbox):
    return module_servers.portal(seeded_sandbox, WTF_CSRF_ENABLED=False)


@pytest.fixture(scope="module")
def client(app):
    return signed_in(app, email("accountant"))


@pytest.fixture(scope="module")
def api(seeded_sandbox) -> MerchantApiClient:
    return MerchantApiClient(seeded_sandbox.base_url, token=seeded_sandbox.token)


@pytest.fixture(scope="module")
def sample(api):
    """Values taken from the seeded data, so that every filter finds something."""
    operations = list(api.iter_operations())
    transactions = list(api.iter_transactions())
    paid = [o for o in operations if o.amount_paid]
    rejected = [t for t in transactions if t.reject_reason]
    return {
        "operations": operations,
        "transactions": transactions,
        "order_ids": [o.order_id for o in operations if o.order_id][:2],
        "address": operations[5].address,
        "paid": sorted(o.amount_paid for o in paid),
        "operation_ids": sorted({t.operation_id for t in transactions})[:3],
        "tx_id": transactions[3].tx_id,
        "reject_reason": rejected[0].reject_reason,
        "day": operations[40].created_at.astimezone(UTC).date(),
    }


def listed(client, path: str) -> tuple[int, list[str]]:
    response = client.get(path)
    assert response.status_code == 200, response.get_data(as_text=True)[:2000]
    html = response.get_data(as_text=True)
    kind = path.split("?")[0].strip("/")
    return int(TOTAL.search(html).group(1)), ROW_LINK[kind].findall(html)


def assert_round_trip(client, api, path, expected_filters, check) -> None:
    """The portal lists what the API lists for `expected_filters`, and `check` holds for each."""
    kind = path.split("?")[0].strip("/")
    page = getattr(api, f"list_{kind}")(**expected_filters)
    assert page.total > 0, f"{path}: the case finds nothing in the seeded data"
    total, ids = listed(client, path)
    assert total == page.total
    assert ids == [record.id for record in page.items]
    for record in page.items:
        assert check(record), f"{path}: {record}"


def test_operation_filters(client, api, sample):
    first, second = sample["order_ids"]
    low, high = sample["paid"][10], sample["paid"][-10]
    day = sample["day"]
    cases = [
        ("id=1,%202,3", {"id": ["1", "2", "3"]}, lambda o: o.id in {"1", "2", "3"}),
        (
            "category=application",
            {"category": "application"},
            lambda o: o.category == "application",
        ),
        ("category=transfer", {"category": "transfer"}, lambda o: o.category == "transfer"),
        (
            f"order_id={first},{second}",
            {"order_id": [first, second]},
            lambda o: o.order_id in {first, second},
        ),
        (
            "amount_from=10&amount_to=500",
            {"amount_from": 10, "amount_to": 500},
            lambda o: 10 <= o.amount <= 500,
        ),
        (
            "fee_from=0.5&fee_to=20",
            {"fee_from": Decimal("0.5"), "fee_to": 20},
            lambda o: Decimal("0.5") <= o.fee <= 20,
        ),
        (
            f"amount_paid_from={low}&amount_paid_to={high}",
            {"amount_paid_from": low, "amount_paid_to": high},
            lambda o: low <= o.amount_paid <= high,
        ),
        (
            "currency=btc,%20eth",
            {"currency": ["BTC", "ETH"]},
            lambda o: o.currency in {"BTC", "ETH"},
        ),
        ("currency_paid=USDT", {"currency_paid": ["USDT"]}, lambda o: o.currency_paid == "USDT"),
        ("status=1&status=3", {"status": [1, 3]}, lambda o: o.status in {"confirmed", "expired"}),
        ("status=4", {"status": [4]}, lambda o: o.status == "canceled"),
        (
            f"address={sample['address']}",
            {"address": sample["address"]},
            lambda o: o.address == sample["address"],
        ),
        (
            f"created_from={day}&created_to={day}",
            {"created_from": day, "created_to": day},
            lambda o: o.created_at.astimezone(UTC).date() == day,
        ),
        (
            f"created_from={day - timedelta(days=10)}",
            {"created_from": day - timedelta(days=10)},
            lambda o: o.created_at.astimezone(UTC).date() >= day - timedelta(days=10),
        ),
        ("per_page=10&page=3", {"per_page": 10, "page": 3}, lambda o: True),
        (
            "status=1&currency=BTC&per_page=25&page=2",
            {"status": [1], "currency": ["BTC"], "per_page": 25, "page": 2},
            lambda o: o.status == "confirmed" and o.currency == "BTC",
        ),
    ]
    for query, filters, check in cases:
        assert_round_trip(client, api, f"/operations?{query}", filters, check)


@pytest.mark.parametrize(
    "sort",
    [
        "id",
        "category",
        "order_id",
        "amount",
        "fee",
        "amount_paid",
        "rate",
        "currency",
        "currency_paid",
        "created",
        "updated",
    ],
)
def test_operation_sorts(client, api, sort):
    for direction in ("asc", "desc"):
        assert_round_trip(
            client,
            api,
            f"/operations?sort={sort}&sort_type={direction}&per_page=100",
            {"sort": sort, "sort_type": direction, "per_page": 100},
            lambda o: True,
        )


def test_transaction_filters(client, api, sample):
    operations = sample["operation_ids"]
    reason = sample["reject_reason"]
    day = sample["transactions"][10].created_at.astimezone(UTC).date()
    cases = [
        ("id=1,2,5", {"id": ["1", "2", "5"]}, lambda t: t.id in {"1", "2", "5"}),
        (
            f"operation_id={','.join(operations)}",
            {"operation_id": operations},
            lambda t: t.operation_id in operations,
        ),
        (
            f"tx_id={sample['tx_id']}",
            {"tx_id": sample["tx_id"]},
            lambda t: t.tx_id == sample["tx_id"],
        ),
        (
            "amount_from=0.01&amount_to=2",
            {"amount_from": Decimal("0.01"), "amount_to": 2},
            lambda t: Decimal("0.01") <= t.amount <= 2,
        ),
        ("status=4", {"status": [4]}, lambda t: t.status == "rejected"),
        ("status=1&status=2", {"status": [1, 2]}, lambda t: t.status in {"confirmed", "undefined"}),
        ("linked=1", {"linked": True}, lambda t: t.linked),
        ("linked=0", {"linked": False}, lambda t: not t.linked),
        (f"reject_reason={reason}", {"reject_reason": reason}, lambda t: t.reject_reason == reason),
        (
            f"created_from={day}&created_to={day}",
            {"created_from": day, "created_to": day},
            lambda t: t.created_at.astimezone(UTC).date() == day,
        ),
        ("per_page=10&page=2", {"per_page": 10, "page": 2}, lambda t: True),
    ]
    for query, filters, check in cases:
        assert_round_trip(client, api, f"/transactions?{query}", filters, check)


@pytest.mark.parametrize(
    "sort", ["id", "operation", "amount", "linked", "reject_reason", "created_at", "updated_at"]
)
def test_transaction_sorts(client, api, sort):
    for direction in ("asc", "desc"):
        assert_round_trip(
            client,
            api,
            f"/transactions?sort={sort}&sort_type={direction}&per_page=100",
            {"sort": sort, "sort_type": direction, "per_page": 100},
            lambda t: True,
        )


def test_confirmed_operations_read_as_the_state_of_their_money(client):
    html = client.get("/operations?status=1&per_page=10").get_data(as_text=True)
    badges = re.findall(r'<span class="badge ([^"]+)">([^<]+)</span>', html)
    assert badges
    confirmed_states = {
        ("state-paid", "Paid"),
        ("state-underpaid", "Underpaid"),
        ("state-overpaid", "Overpaid"),
        ("state-paid_late", "Paid late"),
    }
    assert set(badges) <= confirmed_states, badges


def test_empty_result_says_so(client):
    html = client.get("/operations?order_id=no-such-order").get_data(as_text=True)
    assert "<strong>0 operations</strong>" in html
    assert "No operations match these filters." in html


def test_htmx_gets_the_results_the_canonical_url_and_the_field_errors(client):
    response = client.get("/operations?id=&status=1&per_page=50&amount_from=", headers=HTMX)
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert html.lstrip().startswith('<section id="results"')
    assert "<html" not in html
    assert response.headers["HX-Push-Url"] == "/operations?status=1"
    assert "HX-Request" in response.headers["Vary"]
    assert 'id="amount_from-errors" hx-swap-oob="true"' in html


def test_an_api_validation_error_is_shown_against_its_field(client):
    """`XYZ` looks like a currency code, so the portal sends it; the API refuses it (code 9)."""
    response = client.get("/operations?currency=XYZ", headers=HTMX)
    html = response.get_data(as_text=True)
    assert response.status_code == 422
    slot = re.search(r'<div class="errors-slot" id="currency-errors"[^>]*>(.*?)</div>', html, re.S)
    assert slot and "<li>" in slot.group(1)
    assert "operations</strong>" not in html


def test_links_keep_the_filters(client):
    html = client.get("/operations?status=1&per_page=10&sort=amount").get_data(as_text=True)
    assert (
        'rel="next" href="/operations?sort=amount&amp;per_page=10&amp;status=1&amp;page=2"' in html
    )
    assert '<th scope="col" aria-sort="ascending">' in html
    assert 'href="/operations?sort=amount&amp;per_page=10&amp;status=1&amp;sort_type=desc"' in html


def test_transactions_link_to_their_operation(client, sample):
    transaction = sample["transactions"][0]
    html = client.get(f"/transactions?id={transaction.id}").get_data(as_text=True)
    assert f'<a href="/operations/{transaction.operation_id}">' in html
    detail = client.get(f"/transactions/{transaction.id}").get_data(as_text=True)
    assert f'<a href="/operations/{transaction.operation_id}">' in detail
    assert transaction.tx_id in detail


def test_a_page_past_the_end(client):
    html = client.get("/operations?page=999").get_data(as_text=True)
    assert "There are no operations on this page." in html


def test_timestamps_in_the_users_zone(app, seeded_sandbox, sample):
    operation = sample["operations"][0]
    client = signed_in(app, email("operator"))
    assert client.post("/account", data={"time_zone": "Asia/Tokyo"}).status_code == 302
    html = client.get(f"/operations/{operation.id}").get_data(as_text=True)
    assert " JST</time>" in html
    assert operation.created_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") in html
    client.post("/account", data={"time_zone": "UTC"})
