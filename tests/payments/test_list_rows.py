"""The rows of the list pages as people see them, whatever text the API sends: every link goes
where `url_for` would send it (built once per page, each id quoted as url_for quotes it) and
every text of the API is escaped."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from flask import url_for
from markupsafe import escape

from tests.support.fake_api import Answer, FakeApi, operation_json, page_json, transaction_json
from tests.support.forms import signed_in
from tests.support.portal_app import connected_portal, email

PING = Answer(200, {"data": {"status": "ok"}})
# Ids and texts that quoting or escaping must change: spaces, non-ASCII, markup, percent signs,
# a slash, a query and a fragment.
HOSTILE_IDS = ["a b", "ü-7", "<b>9</b>", "%2F", "x/y", "q?page=2", "f#top", "'\"&"]
SCRIPT = "<script>alert(1)</script>"


def _href(endpoint: str, **values: str) -> str:
    return f'href="{escape(url_for(endpoint, **values))}"'


@pytest.fixture
def upstream():
    with FakeApi() as fake:
        fake.answer("GET", "/sandbox/v1/ping", PING)
        yield fake


def test_operation_rows_link_each_id_and_escape_the_api_text(tmp_path, upstream):
    operations = [
        operation_json(id=ident, order_id=SCRIPT, category=SCRIPT, status=SCRIPT)
        for ident in HOSTILE_IDS
    ]
    page = page_json(operations, page=1, per_page=50, total=len(operations))
    upstream.answer("GET", "/sandbox/v1/operations", Answer(200, page))
    api = SimpleNamespace(base_url=upstream.base_url, token="list-rows-api-token")
    with connected_portal(tmp_path, api) as app:
        html = signed_in(app, email("owner")).get("/operations").get_data(as_text=True)
        with app.test_request_context():
            links = [_href("operations.detail", operation_id=ident) for ident in HOSTILE_IDS]
    for ident, link in zip(HOSTILE_IDS, links, strict=True):
        assert f"<a {link}>{escape(ident)}</a>" in html
    assert SCRIPT not in html
    assert html.count(str(escape(SCRIPT))) == 3 * len(HOSTILE_IDS)  # order, category, status


def test_transaction_rows_link_each_id_and_its_operation(tmp_path, upstream):
    transactions = [
        transaction_json(id=ident, operation_id=f"op {ident}", reject_reason=SCRIPT)
        for ident in HOSTILE_IDS
    ]
    page = page_json(transactions, page=1, per_page=50, total=len(transactions))
    upstream.answer("GET", "/sandbox/v1/transactions", Answer(200, page))
    upstream.answer(
        "GET", "/sandbox/v1/operations", Answer(200, page_json([], page=1, per_page=50, total=0))
    )
    api = SimpleNamespace(base_url=upstream.base_url, token="list-rows-api-token")
    with connected_portal(tmp_path, api) as app:
        html = signed_in(app, email("owner")).get("/transactions").get_data(as_text=True)
        with app.test_request_context():
            links = [
                (
                    _href("transactions.detail", transaction_id=ident),
                    _href("operations.detail", operation_id=f"op {ident}"),
                )
                for ident in HOSTILE_IDS
            ]
    for ident, (own, operation) in zip(HOSTILE_IDS, links, strict=True):
        assert f"<a {own}>{escape(ident)}</a>" in html
        assert f"<a {operation}>Operation {escape(f'op {ident}')}</a>" in html
    assert SCRIPT not in html
    assert html.count(str(escape(SCRIPT))) == len(HOSTILE_IDS)


def test_currencies_of_the_api_are_escaped_beside_every_amount(tmp_path, upstream):
    """A currency is a text of the API too: beside an operation's amounts, and in the currency
    column of a transaction (its operation's payment currency)."""
    mark, paid_in = "<i>X</i>", "<i>Y</i>"
    operation = operation_json(id="9", currency=mark, currency_paid=paid_in, amount_paid="0.5")
    upstream.answer(
        "GET",
        "/sandbox/v1/operations",
        Answer(200, page_json([operation], page=1, per_page=50, total=1)),
    )
    transactions = [transaction_json(id="1", operation_id="9"), transaction_json(id="2")]
    upstream.answer(
        "GET",
        "/sandbox/v1/transactions",
        Answer(200, page_json(transactions, page=1, per_page=50, total=2)),
    )
    api = SimpleNamespace(base_url=upstream.base_url, token="list-rows-api-token")
    with connected_portal(tmp_path, api) as app:
        owner = signed_in(app, email("owner"))
        operations = owner.get("/operations").get_data(as_text=True)
        paid = owner.get("/transactions").get_data(as_text=True)
    for html in (operations, paid):
        assert mark not in html and paid_in not in html
    assert f'<td class="number" data-label="Amount">100 {escape(mark)}</td>' in operations
    assert f'<td class="number" data-label="Fee">1 {escape(mark)}</td>' in operations
    assert f'<td class="number" data-label="Amount paid">0.5 {escape(paid_in)}</td>' in operations
    assert f'<td data-label="Currency">{escape(paid_in)}</td>' in paid  # of operation 9
    assert '<td data-label="Currency">—</td>' in paid  # the other has no operation, no currency


def test_the_dashboards_latest_operations_are_written_as_the_lists_rows(tmp_path, upstream):
    """The dashboard's table of the latest operations makes its rows as the operations list
    does: the same links, and the API's text escaped."""
    latest = HOSTILE_IDS[:5]  # the dashboard shows the latest five
    operations = [operation_json(id=ident, order_id=SCRIPT, status=SCRIPT) for ident in latest]
    page = page_json(operations, page=1, per_page=5, total=len(operations))
    upstream.answer("GET", "/sandbox/v1/operations", Answer(200, page))
    api = SimpleNamespace(base_url=upstream.base_url, token="list-rows-api-token")
    poll = {"HX-Request": "true", "HX-Trigger": "latest-operations"}
    with connected_portal(tmp_path, api) as app:
        html = signed_in(app, email("owner")).get("/", headers=poll).get_data(as_text=True)
        with app.test_request_context():
            links = [_href("operations.detail", operation_id=ident) for ident in latest]
    for ident, link in zip(latest, links, strict=True):
        assert f"<a {link}>{escape(ident)}</a>" in html
    assert SCRIPT not in html
    assert html.count(str(escape(SCRIPT))) == 2 * len(latest)  # order number, status
