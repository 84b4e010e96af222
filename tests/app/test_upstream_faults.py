"""Upstream faults through the sandbox's fault injection.

For each fault (500s, answers slower than the portal's read timeout, malformed JSON, a reset
connection, a stopped sandbox) every page that calls the API shows the payment service error
page, or its fragment for htmx, with 502 or 504; the portal keeps serving what needs no API;
a failed change writes nothing half-way; and pages work again once the sandbox recovers.
"""

from __future__ import annotations

import contextlib
import uuid

import pytest

from portal.api import MerchantApiClient
from portal.payments.models import CheckoutLink
from tests.support import sandbox_server
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.mirror import sync_now
from tests.support.money import BTC_ADDRESS, ETH_ADDRESS, submit
from tests.support.portal_app import connected_portal, email, retries_without_pauses
from tests.support.sandbox_server import run_sandbox

# Every page under every fault, some answered only after the read timeout.
pytestmark = pytest.mark.slow

# A slow answer costs each of its tests the read timeout.
READ_TIMEOUT = 0.5
SLOW_MS = 2500
FAULTS = {"error500": 502, "slow": 504, "malformed": 502, "reset": 502}
# Pages read from the mirror while the API does not answer, under a read-only banner.
MIRRORED = (
    "/operations",
    "/operations/{operation}",
    "/transactions",
    "/transactions/{transaction}",
    "/rates",
)
PAGES = (
    "/vouchers",
    "/vouchers/{voucher}",
    "/exchange",
    "/cross-exchanges/{cross_exchange}",
    "/operations/export.csv",
)
# Pages that show what they can without the API, and a banner that says why the rest is not.
DEGRADED = {
    "/": "the latest operations and the rates are not shown",
    "/operations/new": "the currencies below are the ones the portal knows",
}


@pytest.fixture(scope="module", autouse=True)
def _no_pause_between_retries():
    """Resets and a stopped sandbox use up the retries of every GET: none waits for the next."""
    with retries_without_pauses():
        yield


@pytest.fixture(scope="module")
def sandbox(module_servers):
    return module_servers.sandbox(seed=60)


@pytest.fixture(scope="module")
def app(module_servers, sandbox):
    return module_servers.portal(sandbox, WTF_CSRF_ENABLED=False, API_TIMEOUT_READ=READ_TIMEOUT)


@pytest.fixture(scope="module")
def api(sandbox) -> MerchantApiClient:
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


@pytest.fixture(scope="module")
def ids(app, api) -> dict[str, str]:
    """One record of each kind, for the detail pages."""
    operation = api.list_operations(per_page=1).items[0]
    cross = api.create_cross_exchange("BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.01")
    sync_now(app)
    return {
        "operation": operation.id,
        "transaction": api.list_transactions(per_page=1).items[0].id,
        "voucher": api.list_vouchers(per_page=1).items[0].id,
        "cross_exchange": cross.id,
    }


@pytest.fixture(scope="module")
def owner(app):
    return signed_in(app, email("owner"))


@pytest.fixture(autouse=True)
def no_fault_afterwards(sandbox):
    yield
    sandbox.reset()


def set_fault(sandbox, mode: str) -> None:
    sandbox.control("POST", "faults", {"mode": mode, "delay_ms": SLOW_MS, "probability": 1})


def assert_error_page(response, status: int, htmx: bool) -> None:
    html = response.get_data(as_text=True)
    assert response.status_code == status, html[:500]
    assert response.mimetype == "text/html"
    assert "payment service" in html
    assert f"Error {status}" in html
    assert "Traceback" not in html and "Internal Server Error" not in html
    if htmx:
        assert html.lstrip().startswith('<section class="card error-page"'), html[:200]
    else:
        assert "<html" in html and 'id="error"' in html


def assert_portal_still_serves(client) -> None:
    assert client.get("/healthz").get_json() == {"status": "ok", "limit_store": "ok"}
    assert client.get("/account").status_code == 200


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize("mode", FAULTS)
def test_fault_shows_the_error_page_then_recovers(sandbox, owner, ids, mode, path, htmx):
    url = path.format(**ids)
    headers = HTMX if htmx else {}
    assert owner.get(url, headers=headers).status_code == 200, "the page works before"

    set_fault(sandbox, mode)
    assert_error_page(owner.get(url, headers=headers), FAULTS[mode], htmx)
    assert_portal_still_serves(owner)

    set_fault(sandbox, "none")
    assert owner.get(url, headers=headers).status_code == 200, "works again, no restart"


def assert_read_only(response, htmx: bool) -> None:
    html = response.get_data(as_text=True)
    assert response.status_code == 200, html[:500]
    assert "Error 50" not in html and "Traceback" not in html
    assert htmx or 'id="read-only-banner"' in html  # the layout's: a fragment may lack it


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
@pytest.mark.parametrize("path", MIRRORED)
@pytest.mark.parametrize("mode", FAULTS)
def test_fault_shows_the_mirror_then_the_api_again(sandbox, owner, ids, mode, path, htmx):
    url = path.format(**ids)
    headers = HTMX if htmx else {}
    set_fault(sandbox, mode)
    assert_read_only(owner.get(url, headers=headers), htmx)
    set_fault(sandbox, "none")  # this portal remembers no down moment (API_DOWN_SECONDS 0)
    again = owner.get(url, headers=headers)
    assert again.status_code == 200
    assert 'id="read-only-banner"' not in again.get_data(as_text=True)


def assert_shown_without_the_api(response, path: str) -> None:
    html = response.get_data(as_text=True)
    assert response.status_code == 200, html[:500]
    assert DEGRADED[path] in " ".join(html.split())
    assert "Error 50" not in html and "Traceback" not in html


@pytest.mark.parametrize("path", DEGRADED)
@pytest.mark.parametrize("mode", FAULTS)
def test_fault_leaves_the_dashboard_and_the_new_operation_form(sandbox, owner, mode, path):
    set_fault(sandbox, mode)
    assert_shown_without_the_api(owner.get(path), path)
    set_fault(sandbox, "none")
    assert DEGRADED[path] not in owner.get(path).get_data(as_text=True), "the banner goes"


@pytest.fixture(scope="module")
def revivable(tmp_path_factory):
    """A portal connected to a sandbox of its own, which the tests stop and start again."""
    folder = tmp_path_factory.mktemp("stopped")
    database = folder / "sandbox.db"
    with contextlib.ExitStack() as stack:
        with run_sandbox(database, seed=20) as server:
            app = stack.enter_context(connected_portal(folder, server, WTF_CSRF_ENABLED=False))
            client = signed_in(app, email("owner"))
            api = MerchantApiClient(server.base_url, token=server.token)
            record = {
                "operation": api.list_operations(per_page=1).items[0].id,
                "transaction": api.list_transactions(per_page=1).items[0].id,
                "voucher": api.list_vouchers(per_page=1).items[0].id,
                "cross_exchange": api.create_cross_exchange(
                    "BTC", "ETH", BTC_ADDRESS, ETH_ADDRESS, sell_amount="0.01"
                ).id,
            }
        yield client, server, record  # the sandbox is stopped from here on


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
@pytest.mark.parametrize("path", PAGES)
def test_stopped_sandbox_shows_the_error_page(revivable, path, htmx):
    client, _server, record = revivable
    assert_error_page(client.get(path.format(**record), headers=HTMX if htmx else {}), 502, htmx)
    assert_portal_still_serves(client)


@pytest.mark.parametrize("path", ["/operations", "/transactions", "/rates"])
def test_stopped_sandbox_shows_the_lists_of_the_mirror(revivable, path):
    client, _server, _record = revivable
    assert_read_only(client.get(path), htmx=False)


@pytest.mark.parametrize("path", DEGRADED)
def test_stopped_sandbox_leaves_the_dashboard_and_the_new_operation_form(revivable, path):
    client, _server, _record = revivable
    assert_shown_without_the_api(client.get(path), path)


def test_pages_work_again_once_the_stopped_sandbox_is_back(revivable, monkeypatch):
    client, stopped, record = revivable
    assert client.get("/vouchers").status_code == 502
    port = int(stopped.base_url.rsplit(":", 1)[1])
    monkeypatch.setattr(sandbox_server, "free_port", lambda: port)  # the address it had
    with sandbox_server.run_sandbox(stopped.database):
        for path in PAGES + MIRRORED:
            response = client.get(path.format(**record))
            assert response.status_code == 200, path


# --- Changes -----------------------------------------------------------------------------------


def _rows(app, model) -> int:
    from portal.extensions import db

    with app.app_context():
        return db.session.scalar(db.select(db.func.count()).select_from(model))


def _operation_count(api) -> int:
    return api.list_operations(per_page=1).total


def test_create_operation_during_500s_creates_nothing(app, sandbox, owner, api):
    before = (_operation_count(api), _rows(app, CheckoutLink))
    order = f"fault-{uuid.uuid4().hex[:8]}"
    form = {"amount": "0.5", "currency": "BTC", "order_id": order}
    assert owner.get("/operations/new").status_code == 200

    set_fault(sandbox, "error500")
    response = submit(owner, "/operations/new", form)
    html = " ".join(response.get_data(as_text=True).split())
    assert response.status_code == 502 and "so nothing was sent" in html
    assert DEGRADED["/operations/new"] in html and f'value="{order}"' in html, "the form stays"
    assert_portal_still_serves(owner)

    set_fault(sandbox, "none")
    assert (_operation_count(api), _rows(app, CheckoutLink)) == before
    assert api.list_operations(order_id=order).total == 0
    created = submit(owner, "/operations/new", form)
    assert created.status_code == 302, "the same form works once the service is back"
    assert _operation_count(api) == before[0] + 1


def test_withdrawal_confirm_during_500s_sends_nothing(app, sandbox, owner, api):
    review = owner.post(
        "/withdrawals/new", data={"amount": "0.001", "wallet": "BTC", "address": BTC_ADDRESS}
    )
    assert review.status_code == 302
    before = _operation_count(api)

    set_fault(sandbox, "error500")
    response = owner.post(review.location + "/confirm")
    html = response.get_data(as_text=True)
    assert response.status_code == 502 and "Traceback" not in html
    assert "Outcome unknown" in html

    set_fault(sandbox, "none")
    assert _operation_count(api) == before
    with app.app_context():
        from portal.extensions import db
        from portal.money.models import WithdrawalIntent

        intent = db.session.scalars(
            db.select(WithdrawalIntent).where(
                WithdrawalIntent.key == review.location.rsplit("/", 1)[1]
            )
        ).one()
        assert intent.state.value == "unknown", "kept as unknown, never sent again"
        assert intent.operation_id is None and intent.error_message


def test_create_operation_without_an_answer_is_outcome_unknown(app, sandbox, owner, api):
    """A reset after the sandbox created the operation: the page must not say nothing changed.

    The fault strikes POSTs only, so the form still reads the rates; the creation happens and
    its answer is lost.
    """
    before = _operation_count(api)
    sandbox.control("POST", "faults", {"mode": "reset", "methods": ["POST"]})
    form = {"amount": "0.5", "currency": "BTC", "order_id": "reset-after-create"}
    response = submit(owner, "/operations/new", form)
    sandbox.control("POST", "faults", {"mode": "none"})
    assert _operation_count(api) == before + 1, "the sandbox created the operation"
    html = response.get_data(as_text=True)
    assert response.status_code == 502, html[:500]
    assert "Outcome unknown" in html and "Nothing was shown or changed" not in html
    assert 'href="/operations"' in html, "where to check"
    assert "Traceback" not in html

    # The customer's way back still works: the link finds its operation by order number.
    from portal.extensions import db
    from portal.payments.models import CheckoutLink

    with app.app_context():
        link = db.session.scalars(
            db.select(CheckoutLink).where(CheckoutLink.order_id == "reset-after-create")
        ).one()
        assert link.operation_id is None
        token = link.token
    customer = app.test_client()
    page = customer.get(f"/checkout/{token}")
    assert page.status_code == 200
    assert "reset-after-create" in page.get_data(as_text=True)
    with app.app_context():
        link = db.session.scalars(db.select(CheckoutLink).filter_by(token=token)).one()
        assert link.operation_id is not None
