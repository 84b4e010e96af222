"""Every route x method x role, anonymous included, against an explicit table of who may do what.

The routes come from the application's url_map, so a new route fails here until its row is added;
every export is opened by the roles of its list page, no more.
"""

from __future__ import annotations

import pytest

from tests.support.forms import sign_in

PUBLIC = "public"
ALL_ROLES = frozenset({"owner", "operator", "accountant"})
OWNER = frozenset({"owner"})
MOVERS = frozenset({"owner", "operator"})

# endpoint -> who may use it (every method of the endpoint)
EXPECTED = {
    "static": PUBLIC,
    "auth.login": PUBLIC,
    "auth.logout": PUBLIC,
    "auth.two_factor": PUBLIC,  # only a session whose password was right gets the form
    "auth.forgot_password": PUBLIC,
    "auth.reset_password": PUBLIC,  # only a usable one-time link opens the form
    "auth.accept_invitation": PUBLIC,
    "checkout.show": PUBLIC,
    "checkout.pay": PUBLIC,
    "dashboard.healthz": PUBLIC,
    "dashboard.index": ALL_ROLES,
    "account.index": ALL_ROLES,
    "account.change_password": ALL_ROLES,
    "account.choose_password": ALL_ROLES,
    "account.two_factor": ALL_ROLES,
    "account.recovery_codes": ALL_ROLES,
    "account.disable_two_factor": ALL_ROLES,
    "account.mail_choices": ALL_ROLES,
    "operations.index": ALL_ROLES,
    "operations.detail": ALL_ROLES,
    "operations.new": MOVERS,
    "operations.cancel": MOVERS,
    "operations.link_transactions": MOVERS,
    "operations.reject_transactions": MOVERS,
    "transactions.index": ALL_ROLES,
    "transactions.detail": ALL_ROLES,
    "rates.index": ALL_ROLES,
    "operations.export_csv": ALL_ROLES,
    "transactions.export_csv": ALL_ROLES,
    "vouchers.export_csv": ALL_ROLES,
    "withdrawals.export_csv": frozenset({"owner", "accountant"}),  # as its list
    "cross_exchanges.export_csv": ALL_ROLES,
    "settings.api": OWNER,
    "settings.checkout": OWNER,
    "settings.users": OWNER,
    "settings.edit_user": OWNER,
    "settings.remove_user": OWNER,
    "settings.require_two_factor": OWNER,
    "settings.resync_mirror": OWNER,
    "settings.notifications": OWNER,
    "settings.notifications_rotate": OWNER,
    "settings.notifications_test": OWNER,
    "settings.notifications_resend": OWNER,
    "settings.notifications_secret": OWNER,  # the signing secret lets one forge webhooks
    "settings.invite_user": OWNER,
    "withdrawals.index": frozenset({"owner", "accountant"}),  # accountants read the list
    "withdrawals.new": OWNER,
    "withdrawals.show": OWNER,
    "withdrawals.confirm": OWNER,
    "vouchers.index": ALL_ROLES,
    "vouchers.show": ALL_ROLES,
    "vouchers.code": OWNER,  # a voucher's code is bearer money
    "vouchers.new": OWNER,
    "vouchers.cancel": MOVERS,
    "vouchers.payoff": MOVERS,
    "exchanges.exchange": ALL_ROLES,
    "exchanges.review": MOVERS,
    "exchanges.create": MOVERS,
    "exchanges.made": ALL_ROLES,  # accountants read the exchanges made in the portal
    "cross_exchanges.index": ALL_ROLES,
    "cross_exchanges.new": MOVERS,
    "cross_exchanges.show": ALL_ROLES,
    "cross_exchanges.cancel": MOVERS,
    "audit_log.index": OWNER,
    "audit_log.export": OWNER,
    "attention.index": ALL_ROLES,  # accountants read it; the actions are the operations'
    "search.index": ALL_ROLES,
}
VISITORS = ("anonymous", "owner", "operator", "accountant")
TARGET = "target@acme.test"


@pytest.fixture
def portal_config(portal_config):
    portal_config["WTF_CSRF_ENABLED"] = False  # this test is about roles; CSRF has its own
    return portal_config


def test_every_route_has_a_row(app):
    endpoints = {rule.endpoint for rule in app.url_map.iter_rules()}
    assert endpoints - EXPECTED.keys() == set(), "routes missing from EXPECTED"
    assert EXPECTED.keys() - endpoints == set(), "rows of EXPECTED without a route"


def test_every_export_follows_its_list_page(app):
    """`<list>/export.csv` holds what `<list>` shows: the same roles may open both, as declared
    on the views and as this table says."""
    from portal.web.access import access_of

    pages = app.url_map.bind("portal.test")
    exports = [rule for rule in app.url_map.iter_rules() if rule.rule.endswith("/export.csv")]
    assert len(exports) >= 6, (
        "the operations, transactions, vouchers, withdrawals, cross exchanges and audit exports"
    )
    for export in exports:
        page, _ = pages.match(export.rule.removesuffix("/export.csv"), method="GET")
        with app.app_context():
            assert access_of(export.endpoint) == access_of(page), f"{export.rule} and its page"
        assert EXPECTED[export.endpoint] == EXPECTED[page], f"{export.endpoint} and {page}"


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
    ):
        if name in rule.arguments:
            values[name] = "1"
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
    mistakes = []
    for rule in app.url_map.iter_rules():
        allowed = EXPECTED[rule.endpoint]
        expected_allowed = allowed == PUBLIC or visitor in allowed
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            client = app.test_client()
            if visitor != "anonymous":
                assert sign_in(client, accounts.by_role(visitor)).status_code == 302
            url = _url(app, rule)
            response = client.open(url, method=method, data={})
            denied = _denied(client, response, visitor)
            if denied == expected_allowed or response.status_code >= 500:
                mistakes.append(f"{method} {url}: {response.status_code}")
    assert mistakes == [], f"{visitor}: unexpected access results"
