"""Every route x method x role, anonymous included, against an explicit table of who may do what.

The routes come from the application's url_map. Each is expected to open to the roles its
feature serves (the registry, portal/web/features.py) unless EXCEPTIONS says otherwise, so a
route whose view allows other roles fails here until its row is added, and a route of no
registered feature fails too. Every export is opened by the roles of its list page, no more.
"""

from __future__ import annotations

import pytest

from tests.support.forms import sign_in

PUBLIC = "public"
OWNER = frozenset({"owner"})
MOVERS = frozenset({"owner", "operator"})

# The views whose roles differ from the roles their feature serves (`Feature.serves` in the
# feature's package): endpoint -> who may use it (every method of the endpoint). Every other
# view of a registered feature must open to exactly its feature's roles, and a route of no
# registered feature has no expectation at all, so it fails here.
EXCEPTIONS = {
    "dashboard.healthz": PUBLIC,
    "operations.new": MOVERS,
    "operations.cancel": MOVERS,
    "operations.link_transactions": MOVERS,
    "operations.reject_transactions": MOVERS,
    "attention.settle": MOVERS,
    "withdrawals.new": OWNER,
    "withdrawals.show": OWNER,
    "withdrawals.confirm": OWNER,
    "withdrawals.limits": OWNER,
    "withdrawals.reporting_limits": OWNER,
    "address_book.add": OWNER,  # operators read the book; owners change it
    "address_book.remove": OWNER,
    "address_book.approve": OWNER,
    "address_book.cooling_off": OWNER,
    "vouchers.code": OWNER,  # a voucher's code is bearer money
    "vouchers.new": OWNER,
    "vouchers.review": OWNER,
    "vouchers.create": OWNER,
    "vouchers.cancel": MOVERS,
    "vouchers.payoff": MOVERS,
    "exchanges.review": MOVERS,
    "exchanges.create": MOVERS,
    "cross_exchanges.new": MOVERS,
    "cross_exchanges.cancel": MOVERS,
    "balances.opening": OWNER,
    "account.statement_mail_choice": frozenset({"owner", "accountant"}),
}


def expected_access(app) -> dict[str, object]:
    """endpoint -> who may use it: its row of EXCEPTIONS, else the roles its feature serves
    (Flask's `static` is public). A route of no registered feature is left out."""
    from portal.web.features import features_of

    expected: dict[str, object] = {"static": PUBLIC}
    for feature in features_of(app):
        for rule in app.url_map.iter_rules():
            if feature.owns(rule.endpoint):
                expected[rule.endpoint] = EXCEPTIONS.get(rule.endpoint, feature.serves)
    return expected


VISITORS = ("anonymous", "owner", "operator", "accountant")
TARGET = "target@acme.test"


@pytest.fixture
def portal_config(portal_config):
    portal_config["WTF_CSRF_ENABLED"] = False  # this test is about roles; CSRF has its own
    return portal_config


def test_every_route_has_a_row(app):
    expected = expected_access(app)
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    assert endpoints - expected.keys() == set(), "routes of no registered feature"
    assert EXCEPTIONS.keys() - endpoints == set(), "rows of EXCEPTIONS without a route"


def test_an_exception_differs_from_its_feature(app):
    """A row of EXCEPTIONS that says what the feature says would hide the feature's roles."""
    from portal.web.features import feature_of

    same = [
        endpoint
        for endpoint, allowed in EXCEPTIONS.items()
        if (feature := feature_of(app, endpoint)) and allowed == feature.serves
    ]
    assert same == []


def test_each_menu_entry_opens_to_whom_its_feature_serves(app):
    """Who sees an entry is decided by its view's `@roles` (navigation's `may_open`): it must
    be the feature's roles, so the registry never disagrees with the menu."""
    from portal.web.access import access_of
    from portal.web.features import menu_of

    with app.app_context():
        entries = {entry.endpoint: access_of(entry.endpoint) for _, entry in menu_of(app)}
    assert entries == {entry.endpoint: feature.serves for feature, entry in menu_of(app)}


def test_every_export_follows_its_list_page(app):
    """`<list>/export.csv` and `<list>/export.xlsx` hold what `<list>` shows: the same roles may
    open them, as declared on the views and as this table says."""
    from portal.web.access import access_of

    pages = app.url_map.bind("portal.test")
    exports = [
        rule for rule in app.url_map.iter_rules() if rule.rule.endswith(("/export.csv", ".xlsx"))
    ]
    assert len(exports) >= 11, (
        "the operations, transactions, vouchers, withdrawals, cross exchanges and audit exports,"
        " and the workbooks of all but the audit's"
    )
    for export in exports:
        list_path = export.rule.rsplit("/", 1)[0]
        page, _ = pages.match(list_path, method="GET")
        with app.app_context():
            assert access_of(export.endpoint) == access_of(page), f"{export.rule} and its page"
        expected = expected_access(app)
        assert expected[export.endpoint] == expected[page], f"{export.endpoint} and {page}"


def _target_user_id(app) -> int:
    """A user of Acme that the owner may change or remove (made again after a removal)."""
    from portal.identity.models import Role
    from portal.identity.rules import accounts

    with app.app_context():
        user = accounts.find_user(TARGET) or accounts.add_user(
            accounts.merchant_named("Acme"), TARGET, Role.ACCOUNTANT, "target password"
        )
        return user.id


def _url(app, rule) -> str:
    values = {}
    if "filename" in rule.arguments:
        values["filename"] = "portal.css"
    if "user_id" in rule.arguments:
        values["user_id"] = _target_user_id(app)
    for name in (
        "operation_id",
        "transaction_id",
        "voucher_id",
        "cross_exchange_id",
        "delivery_id",
        "passkey_id",
        "refund_id",
        "approval_id",
        "change_id",
        "entry_id",
    ):
        if name in rule.arguments:
            values[name] = "1"
    if "currency" in rule.arguments:
        values["currency"] = "BTC"
    if "token" in rule.arguments:
        values["token"] = "an-unknown-checkout-token"
    if "key" in rule.arguments:
        values["key"] = "an-unknown-withdrawal-intent"
    with app.test_request_context():
        from flask import url_for

        return url_for(rule.endpoint, **values)


def _denied(client, response, visitor: str) -> bool:
    if response.status_code == 403:
        return True
    if visitor == "anonymous" and response.status_code == 302:
        with client.session_transaction() as session:
            flashes = [message for _, message in session.get("_flashes", [])]
        return response.location.startswith("/login") and "Please sign in to continue." in flashes
    return False


@pytest.mark.parametrize("visitor", VISITORS)
def test_access_matrix(app, accounts, visitor):
    """Each request is sent by a client signed in afresh, but after a GET (which changes
    nothing) the same signed-in client goes on; an anonymous one never does, as its flashes are
    read."""
    expected = expected_access(app)
    mistakes = []
    after_a_get = False
    for rule in app.url_map.iter_rules():
        allowed = expected[rule.endpoint]
        expected_allowed = allowed == PUBLIC or visitor in allowed
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            if visitor == "anonymous" or not after_a_get:
                client = app.test_client()
                if visitor != "anonymous":
                    assert sign_in(client, accounts.by_role(visitor)).status_code == 302
            after_a_get = method == "GET"
            url = _url(app, rule)
            response = client.open(url, method=method, data={})
            denied = _denied(client, response, visitor)
            if denied == expected_allowed or response.status_code >= 500:
                mistakes.append(f"{method} {url}: {response.status_code}")
    assert mistakes == [], f"{visitor}: unexpected access results"
