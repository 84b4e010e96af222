"""Markup and formulas stored through the API and the portal's own forms are shown as
text on the pages and fragments that show them, and as text cells in every CSV export. No
answer of any route holds markup that could run (test_every_answer.py).
"""

from __future__ import annotations

import pytest

from tests.support.attack import (
    FORMULAS,
    HOSTILE_EMAIL,
    XSS,
    active_content,
    csv_cells,
    formula_cells,
    shows_escaped,
)
from tests.support.forms import signed_in
from tests.support.htmx import HTMX
from tests.support.money import post, submit


def _page(hostile, url: str, htmx: bool = False, visitor: str = "owner") -> str:
    response = hostile.client(visitor).get(url, headers=HTMX if htmx else {})
    assert response.status_code == 200, f"{url}: {response.status_code}"
    html = response.get_data(as_text=True)
    assert active_content(html) == [], url
    return html


def _op(hostile, payload: str) -> str:
    return hostile.hostile_operations[payload]


CHECKOUT_ORDER = XSS[1] + "-checkout"  # the order number of the hostile portal's checkout link
FRESH = XSS[2] + "-latest"  # made just before the page is read: among its latest
# (url, shown on the page, shown in its htmx fragment); `{op1}`, `{op2}`: hostile operations
SHOWN = [
    ("/", [FRESH], [FRESH]),
    ("/operations?per_page=100", XSS, XSS),
    ("/operations/{operation_id}", [XSS[0], XSS[1] + "-pending", XSS[2]], [XSS[0]]),
    ("/operations/{op1}", [XSS[1]], [XSS[1]]),
    ("/operations/{op2}", [XSS[2]], [XSS[2]]),
    ("/transactions?per_page=100", XSS, XSS),
    ("/transactions/{transaction_id}", [XSS[2] + "-pending"], [XSS[2] + "-pending"]),
    ("/audit", [FRESH, HOSTILE_EMAIL], []),
    ("/settings/users", [HOSTILE_EMAIL], []),
    ("/settings/checkout", [XSS[0]], []),
    ("/checkout/{token}", [XSS[0], CHECKOUT_ORDER], [CHECKOUT_ORDER]),
]


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
@pytest.mark.parametrize(("path", "page", "fragment"), SHOWN, ids=[row[0] for row in SHOWN])
def test_hostile_strings_are_shown_as_text(hostile, path, page, fragment, htmx):
    """The pages do show the hostile strings, escaped: the inert checks are not vacuous."""
    assert hostile.checkout_order == CHECKOUT_ORDER
    if path == "/":
        hostile.api.create_operation("0.5", "BTC", FRESH)
    if path == "/audit":  # events newer than whatever other tests did, on the first page
        owner = hostile.client("owner")
        submit(owner, "/operations/new", {"amount": "1", "currency": "BTC", "order_id": FRESH})
        signed_in(hostile.app, HOSTILE_EMAIL)  # its sign-in is an event of the first page
    url = path.format(**hostile.ids, op1=_op(hostile, XSS[1]), op2=_op(hostile, XSS[2]))
    visitor = "anonymous" if url.startswith("/checkout") else "owner"
    html = _page(hostile, url, htmx, visitor)
    expected = fragment if htmx else page
    missing = [payload for payload in expected if not shows_escaped(html, payload)]
    assert missing == [], f"{url} does not show {missing}"


@pytest.mark.parametrize(
    "query",
    [
        "/operations?order_id={p}",
        "/operations?address={p}",
        "/transactions?reject_reason={p}",
        "/transactions?tx_id={p}",
        "/vouchers?currency={p}",
        "/audit?user={p}",
        "/login?next={p}",
        "/checkout/{token}?status={p}",
        "/cross-exchanges?id={p}",
    ],
)
@pytest.mark.parametrize("payload", XSS)
def test_reflected_query_strings_are_inert(hostile, query, payload):
    """Filters and parameters echoed back into forms and links (page and htmx fragment)."""
    from urllib.parse import quote

    url = query.format(p=quote(payload), token=hostile.ids["token"])
    visitor = "anonymous" if url.startswith(("/checkout", "/login")) else "owner"
    for headers in ({}, HTMX):
        response = hostile.client(visitor).get(url, headers=headers)
        assert response.status_code < 500, url
        assert active_content(response.get_data(as_text=True)) == [], url


def test_the_not_found_page_does_not_echo_the_path(hostile):
    response = hostile.client("owner").get("/<script>alert(1)</script>")
    assert response.status_code == 404
    assert active_content(response.get_data(as_text=True)) == []


# --- CSV exports -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "columns"),
    [
        ("/operations/export.csv", FORMULAS),
        ("/transactions/export.csv", FORMULAS),
        ("/audit/export.csv", None),
    ],
)
def test_exports_neutralise_formulas(hostile, url, columns):
    """No cell starts like a formula; the hostile ones are there, prefixed with an apostrophe."""
    response = hostile.client("owner").get(url)
    assert response.status_code == 200
    text = response.get_data(as_text=True)
    assert formula_cells(text) == []
    cells = csv_cells(text)
    for payload in columns or ():
        # A tab also separates cells: the piece after it is neutralised, and the cell as well.
        shown = "'\t'" + payload[1:] if payload.startswith("\t") else "'" + payload
        assert shown in cells, f"{payload!r} is not in the export as text"


def test_audit_export_neutralises_hostile_input(hostile, unique):
    """Audit cells come from people: an email that is a formula, an order number typed as one.

    The owner adds a user whose email starts with `=`; that user's sign-in is an event whose
    User cell starts with it.
    """
    from tests.support.forms import PASSWORD

    owner = hostile.client("owner")
    formula_email = f"=1+{unique}@evil.test"
    user = {"email": formula_email, "role": "accountant", "password": PASSWORD}
    assert post(owner, "/settings/users", user).status_code == 302
    signed_in(hostile.app, formula_email)
    # Order numbers take no comma (the operations list would split them), formulas aside.
    for formula in [f for f in FORMULAS if "," not in f][:4]:
        made = submit(
            owner,
            "/operations/new",
            {"amount": "1", "currency": "BTC", "order_id": formula + unique},
        )
        assert made.status_code == 302
    text = owner.get("/audit/export.csv").get_data(as_text=True)
    assert formula_cells(text) == []
    assert "'" + formula_email in csv_cells(text)
