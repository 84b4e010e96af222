"""Who may do what. tests/app/test_access_matrix.py walks every route x method x role
and anonymous; this adds what it leaves out: a signed-in owner of ANOTHER merchant going for
this merchant's objects by id (IDOR) on every route of url_map that takes an object's id, and
on the lists and exports that could show them.

The other merchant is connected to a sandbox of its own (a merchant's API objects are those of
its token), so the ids of this merchant's records are unknown there.
"""

from __future__ import annotations

import pytest

from tests.support.attack import HOSTILE_EMAIL, XSS, snapshot, url_of
from tests.support.forms import csrf_token, sign_in
from tests.support.money import connect
from tests.support.sandbox_server import run_sandbox

# url_map arguments that name one merchant's object (`token` is the public checkout link's key,
# `filename` a static file: neither belongs to a signed-in merchant).
OBJECT_ARGUMENTS = frozenset(
    {"operation_id", "transaction_id", "voucher_id", "cross_exchange_id", "key", "user_id"}
)


def test_the_matrix_walks_every_visitor():
    """The unit matrix runs for anonymous and every role there is (a new role fails here)."""
    from portal.identity.models import Role
    from tests.app import test_access_matrix as matrix

    (mark,) = [m for m in matrix.test_access_matrix.pytestmark if m.name == "parametrize"]
    assert mark.args == ("visitor", matrix.VISITORS)
    assert set(matrix.VISITORS) == {"anonymous"} | {role.value for role in Role}


@pytest.fixture(scope="module")
def intruder(hostile, tmp_path_factory):
    """The Other merchant's owner, connected to an empty sandbox of its own."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.settings.models import ApiConnection

    with run_sandbox(tmp_path_factory.mktemp("other-sandbox") / "sandbox.db") as other_sandbox:
        connect(hostile.app, other_sandbox, merchant="Other")
        yield hostile.fresh_client("other")
        with hostile.app.app_context():
            other = merchant_named("Other")
            db.session.execute(
                db.delete(ApiConnection).where(ApiConnection.merchant_id == other.id)
            )
            db.session.commit()


def _object_rules(app):
    return [rule for rule in app.url_map.iter_rules() if rule.arguments & OBJECT_ARGUMENTS]


def test_the_walk_finds_the_object_routes(hostile):
    endpoints = {rule.endpoint for rule in _object_rules(hostile.app)}
    assert {"operations.detail", "withdrawals.confirm", "settings.remove_user"} <= endpoints


def test_every_object_route_refuses_another_merchants_ids(hostile, intruder):
    """Every method of every route that takes an id, with this merchant's ids: 404 (as if it
    did not exist) or 403, nothing of the object shown, and nothing changed anywhere."""
    acme_strings = [hostile.email("accountant"), hostile.ids["key"], hostile.ids["confirmed_key"]]
    form = {
        "csrf_token": csrf_token(intruder, "/account"),
        "confirm": "1",
        "transaction_id": hostile.ids["transaction_id"],
        "reason": "mine now",
        "role": "owner",
        "password": "taken over 12345",
    }
    before = snapshot(hostile)
    mistakes = []
    for rule in _object_rules(hostile.app):
        url = url_of(hostile.app, rule, hostile.ids)
        for method in sorted(rule.methods - {"HEAD", "OPTIONS"}):
            response = intruder.open(url, method=method, data=form)
            html = response.get_data(as_text=True)
            shown = [s for s in acme_strings if s in html]
            if response.status_code not in (403, 404) or shown:
                mistakes.append(f"{method} {url}: {response.status_code} {shown}")
    assert mistakes == []
    assert snapshot(hostile) == before


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/operations",
        "/transactions",
        "/vouchers",
        "/withdrawals",
        "/cross-exchanges",
        "/settings/users",
        "/settings/checkout",
        "/audit",
        "/audit?user=owner%40acme.test",
        "/audit/export.csv",
        "/operations/export.csv",
        "/transactions/export.csv",
    ],
)
def test_lists_and_exports_show_only_the_merchants_own_records(hostile, intruder, path):
    response = intruder.get(path)
    refused_filter = "user=" in path  # the user filter offers the merchant's own users only
    assert response.status_code == (422 if refused_filter else 200), response.status_code
    text = response.get_data(as_text=True)
    confirmed_key = hostile.ids["confirmed_key"]
    acme = ["acme.test", HOSTILE_EMAIL, XSS[0], hostile.checkout_order, confirmed_key]
    assert [s for s in acme if s in text] == []
    assert f'/cross-exchanges/{hostile.ids["cross_exchange_id"]}"' not in text


def test_the_acme_owner_still_sees_them(hostile):
    """Control: the same records are there for their own merchant."""
    owner = hostile.client("owner")
    assert hostile.ids["confirmed_key"] in owner.get("/withdrawals").get_data(as_text=True)
    assert "owner@acme.test" in owner.get("/audit").get_data(as_text=True)
    assert f'/cross-exchanges/{hostile.ids["cross_exchange_id"]}"' in owner.get(
        "/cross-exchanges"
    ).get_data(as_text=True)


def test_another_merchant_cannot_filter_the_audit_log_by_our_users(hostile, intruder):
    form = intruder.get("/audit").get_data(as_text=True)
    assert "acme.test" not in form


def test_extra_form_fields_do_not_raise_privileges(hostile):
    """Mass assignment: fields a form does not have are ignored, whatever they are named."""
    from tests.support.money import post

    operator = hostile.fresh_client("operator")
    extra = {"role": "owner", "merchant_id": "2", "is_admin": "1", "user_id": "1"}
    response = post(operator, "/account", {"time_zone": "UTC", **extra})
    assert response.status_code == 302
    assert operator.get("/settings/users").status_code == 403, "still an operator"


def test_a_password_change_is_always_ones_own(hostile, unique):
    """Naming another user in the form changes nobody else's password (nor ends their sessions)."""
    from portal.identity.models import Role
    from portal.identity.rules import accounts
    from tests.support.forms import PASSWORD, signed_in
    from tests.support.money import post

    address, new = f"own-{unique}@acme.test", "a new password of mine"
    with hostile.app.app_context():
        accounts.add_user(accounts.merchant_named("Acme"), address, Role.ACCOUNTANT, PASSWORD)
    data = {
        "password-current_password": PASSWORD,
        "password-new_password": new,
        "password-new_password_again": new,
        "email": hostile.email("owner"),
        "user_id": str(hostile.ids["user_id"]),
    }
    assert post(signed_in(hostile.app, address), "/account/password", data).status_code == 302
    assert hostile.client("owner").get("/settings/users").status_code == 200, "still signed in"
    assert sign_in(hostile.app.test_client(), hostile.email("owner")).status_code == 302
    assert sign_in(hostile.app.test_client(), address, new).status_code == 302


@pytest.mark.parametrize(
    "path",
    [
        "/static/../pyproject.toml",
        "/static/..%2fpyproject.toml",
        "/static/%2e%2e/%2e%2e/portal/config.py",
        "/static/..%5c..%5cpyproject.toml",
        "/static/vendor/../../migrations/env.py",
        "/static//etc/passwd",
    ],
)
def test_static_files_stay_in_static(hostile, path):
    response = hostile.client("anonymous").get(path)
    assert response.status_code in (301, 308, 404), (path, response.status_code)
    text = response.get_data(as_text=True)
    assert "[project]" not in text and "def load_config" not in text and "root:" not in text
