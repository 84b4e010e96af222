"""Money that reached a `new` operation: "Partly paid" / "Overpaid" in lists, on the operation's
page and on the dashboard; the filter for them; the cancel warning, which counts money awaiting
a decision too; the parts that update themselves while an operation can still change."""

from __future__ import annotations

import re
import uuid

import pytest

from portal.api import MerchantApiClient
from tests.support.dashboard import figure
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.mirror import mirror_operations
from tests.support.portal_app import email


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox()


@pytest.fixture(scope="module")
def app(module_servers, sandbox):
    return module_servers.portal(sandbox, WTF_CSRF_ENABLED=False)


@pytest.fixture(scope="module")
def api(sandbox) -> MerchantApiClient:
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


@pytest.fixture(scope="module")
def operator(app):
    return signed_in(app, email("operator"))


def operation(api, amount: str = "0.5"):
    return api.create_operation(amount, "BTC", f"order-{uuid.uuid4().hex[:8]}")


def status_cell(html: str, operation_id: str) -> str:
    """The status badge in the row of `operation_id` of a list."""
    row = re.search(rf"<tr>(?:(?!</tr>).)*>{operation_id}</a></td>.*?</tr>", html, re.S).group(0)
    return re.findall(r'<span class="badge[^"]*">([^<]+)</span>', row)[-1]


def test_a_partly_paid_operation_reads_so_everywhere(app, operator, api, sandbox):
    partly, unpaid = operation(api), operation(api)
    sandbox.receive(partly.id, "0.2")
    assert api.get_operation(partly.id).status == "new"  # the API's word for it
    mirror_operations(app, [api.get_operation(partly.id), unpaid])  # as the sync would

    listed = operator.get("/operations?per_page=100").text
    assert status_cell(listed, partly.id) == "Partly paid"
    assert status_cell(listed, unpaid.id) == "Awaiting payment"
    page = operator.get(f"/operations/{partly.id}").text
    assert "Partly paid" in page
    assert "0.2 BTC" in page and "0.3 BTC short of the due (shortfall)" in page
    dashboard = operator.get("/").text
    assert status_cell(dashboard, partly.id) == "Partly paid"
    # Created in the period, and not paid yet: a part is no confirmed sale.
    assert figure(dashboard, "figure-created") == "2"
    assert figure(dashboard, "figure-paid").startswith("0 · 0.0 %")


def test_overpaid_is_told_apart(app):
    """An operation the API still calls `new` that received less than, as much as or more than
    the amount due (10 USD at 0.5: 5 USDT); the sandbox confirms it at once when paid in full,
    the API may not."""
    from portal.api.records import Operation, parse_record
    from portal.payments.pages.state_badges import state_badge
    from portal.payments.rules.operation_money import operation_money

    record = {
        "id": "1", "category": "application", "amount": "10", "fee": "0.1", "rate": "0.5",
        "currency": "USD", "currency_paid": "USDT", "status": "new", "address": "0x0",
        "created_at": "2024-05-01T12:00:00.000000Z", "updated_at": "2024-05-01T12:00:00.000000Z",
    }  # fmt: skip

    def badge(**fields) -> str:
        money = operation_money(parse_record(Operation, {**record, **fields}))
        return str(state_badge(money.state, money.status))

    for paid, words in (("4.99", "Partly paid"), ("5", "Paid, not confirmed"),
                        ("5.01", "Overpaid")):  # fmt: skip
        assert f">{words}</span>" in badge(amount_paid=paid)
    assert ">Awaiting payment</span>" in badge()


def test_the_filter_finds_exactly_the_new_operations_with_money(operator, api, sandbox):
    paid_ones = [operation(api) for _ in range(3)]
    for each in paid_ones:
        sandbox.receive(each.id, "0.1")
    operation(api)  # new, nothing paid
    sandbox.receive(operation(api, "0.1").id, "0.1")  # paid in full: confirmed
    expected = [
        o.id for o in api.iter_operations(status=[0]) if o.amount_paid and o.amount_paid > 0
    ]
    assert {o.id for o in paid_ones} <= set(expected)

    first = operator.get("/operations?received=received&per_page=10")
    assert first.status_code == 200
    assert f"<strong>{len(expected)} operation" in first.text  # the API counts them: honest pages
    shown = re.findall(r'<td[^>]*><a href="/operations/(\w+)">', first.text)
    assert shown == expected[:10]
    assert {status_cell(first.text, each) for each in shown} == {"Partly paid"}

    refused = operator.get("/operations?received=received&status=1")
    assert refused.status_code == 422
    assert "tick New, or no status" in refused.text


def test_cancelling_a_partly_paid_operation_warns_that_money_arrived(operator, api, sandbox):
    partly = operation(api)
    sandbox.receive(partly.id, "0.125")
    asked = operator.post(f"/operations/{partly.id}/cancel", headers=HTMX).text
    warning = re.search(r'<p class="warning" role="alert">(.*?)</p>', asked, re.S).group(1)
    assert "Money has already arrived" in warning
    assert "0.125 BTC received, of 0.5 BTC due" in warning

    unpaid = operation(api)
    asked = operator.post(f"/operations/{unpaid.id}/cancel", headers=HTMX).text
    assert "Money has already arrived" not in asked


def test_money_awaiting_a_decision_shows_on_the_page_and_in_the_cancel_warning(
    operator, api, sandbox
):
    """The whole due arrived `undefined`: the API counts none of it, the page and the cancel
    confirmation say it is there, waiting for a decision."""
    undecided = operation(api)
    sandbox.receive(undecided.id, "0.5", "undefined")
    assert not api.get_operation(undecided.id).amount_paid  # the API does not count it

    page = operator.get(f"/operations/{undecided.id}").text
    summary = re.search(r'<section class="card money-summary".*?</section>', page, re.S).group(0)
    assert ">Awaiting a decision</span>" in summary
    assert re.search(r"<dt>Awaiting a decision</dt><dd>0.5 BTC", summary)
    assert "Not paid yet" not in page

    asked = operator.post(f"/operations/{undecided.id}/cancel", headers=HTMX).text
    warning = re.search(r'<p class="warning" role="alert">(.*?)</p>', asked, re.S).group(1)
    assert "Money has already arrived" in warning
    assert "0 BTC received and 0.5 BTC awaiting a decision, of 0.5 BTC due" in warning


def poller(html: str, element_id: str) -> str | None:
    """The `hx-trigger` of the element `element_id`, or None when it does not poll."""
    tag = re.search(rf'<[^>]*id="{element_id}"[^>]*>', html)
    trigger = re.search(r'hx-trigger="([^"]+)"', tag.group(0)) if tag else None
    return trigger.group(1) if trigger else None


def test_the_operation_page_polls_until_a_final_state(operator, api, sandbox):
    live = operation(api)
    page = operator.get(f"/operations/{live.id}").text
    assert poller(page, "operation-poll") == "every 5s"
    sandbox.receive(live.id, "0.2")
    polled = operator.get(
        f"/operations/{live.id}", headers={**HTMX, "HX-Trigger": "operation-poll"}
    )
    assert "Partly paid" in polled.text and "0.2 BTC" in polled.text
    assert poller(polled.text, "operation-poll") == "every 5s"
    assert 'hx-preserve="true"' in polled.text  # the boxes a person ticked stay ticked

    sandbox.receive(live.id, "0.3")
    final = operator.get(f"/operations/{live.id}", headers={**HTMX, "HX-Trigger": "operation-poll"})
    assert ">Paid</span>" in final.text
    assert 'id="operation-poll"' not in final.text  # the last answer stops the polling
    asked = operator.post(f"/operations/{operation(api).id}/cancel", headers=HTMX).text
    assert 'id="operation-poll"' not in asked  # no polling while a confirmation waits


def test_the_list_and_the_dashboard_poll_while_a_row_can_change(operator, api):
    operation(api)  # a new one: on the first page of the newest
    listed = operator.get("/operations?per_page=10")
    assert poller(listed.text, "results-live") == "every 10s"
    polled = operator.get("/operations?per_page=10", headers={**HTMX, "HX-Trigger": "results-live"})
    assert polled.status_code == 200 and "HX-Push-Url" not in polled.headers
    assert 'id="results-live" hidden hx-swap-oob="true"' in polled.text
    filtered = operator.get("/operations?per_page=10&status=4", headers=HTMX)
    assert "HX-Push-Url" in filtered.headers  # a person's filter still goes to the address bar
    assert poller(filtered.text, "results-live") is None  # nothing canceled can change

    dashboard = operator.get("/").text
    assert poller(dashboard, "latest-operations") == "every 10s"
    latest = operator.get("/", headers={**HTMX, "HX-Trigger": "latest-operations"})
    assert latest.text.lstrip().startswith("<section")
    assert "Last 30 days" not in latest.text  # only the latest operations are read again
