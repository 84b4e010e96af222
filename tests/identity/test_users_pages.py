"""Owners manage the users of their own merchant, and never see another merchant's."""

from __future__ import annotations

import pytest

from tests.support import factories
from tests.support.forms import csrf_token, sign_in, signed_in
from tests.support.statements import statements_of


@pytest.fixture
def owner(client, accounts):
    sign_in(client, accounts.owner)
    return client


def _user_id(app, email: str) -> int:
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        return find_user(email).id


def _post(client, path: str, data: dict):
    return client.post(path, data={**data, "csrf_token": csrf_token(client, path)})


def test_the_list_shows_only_this_merchants_users(owner, accounts):
    page = owner.get("/settings/users").get_data(as_text=True)
    assert accounts.operator in page
    assert accounts.other_owner not in page


def test_the_list_reads_every_users_passkeys_at_once(app, owner):
    """Whether each user has a second factor comes from one query, not one per user."""
    owner.get("/settings/users")  # the first page after signing in asks for a time zone
    few = statements_of(app, owner, "/settings/users")
    for number in range(5):
        factories.user(app, f"berlin-{number}@acme.test", "accountant")
    assert len(statements_of(app, owner, "/settings/users")) == len(few), few


def test_another_merchants_user_is_not_found(app, owner, accounts):
    other = _user_id(app, accounts.other_owner)
    assert owner.get(f"/settings/users/{other}").status_code == 404
    response = _post(owner, f"/settings/users/{other}/remove", {})
    assert response.status_code == 404


def test_add_change_remove(app, owner):
    response = _post(
        owner,
        "/settings/users",
        {"email": "New@Acme.test", "role": "accountant", "password": "long enough password"},
    )
    assert response.status_code == 302
    new = _user_id(app, "new@acme.test")
    assert _post(owner, f"/settings/users/{new}", {"role": "operator"}).status_code == 302
    assert "Operator" in owner.get("/settings/users").get_data(as_text=True)
    assert _post(owner, f"/settings/users/{new}/remove", {}).status_code == 302
    page = owner.get("/settings/users").get_data(as_text=True)
    assert "new@acme.test was removed" in page
    assert "<td>new@acme.test" not in page


def _add(owner, email: str):
    data = {"email": email, "role": "owner", "password": "long enough password"}
    return _post(owner, "/settings/users", data)


def test_an_address_of_this_merchant_is_said_to_be_a_user_already(owner, accounts):
    response = _add(owner, accounts.operator.upper())
    assert response.status_code == 422
    assert f"{accounts.operator} is already a user of Acme." in response.get_data(as_text=True)


def test_an_address_of_another_merchant_is_not_revealed(app, owner, accounts):
    """Whether, and where, an address is registered elsewhere is not this owner's to learn."""
    from portal.identity.rules.accounts import find_user
    from portal.web.users import CANNOT_ADD

    response = _add(owner, accounts.other_owner)
    assert response.status_code == 422
    page = response.get_data(as_text=True)
    assert CANNOT_ADD in page
    assert "Other" not in page and "already" not in page and "exists" not in page
    with app.app_context():
        assert find_user(accounts.other_owner).merchant.name == "Other"
    assert f"<td>{accounts.other_owner}" not in owner.get("/settings/users").get_data(True)


def test_owners_cannot_demote_or_remove_themselves(app, owner, accounts):
    me = _user_id(app, accounts.owner)
    response = _post(owner, f"/settings/users/{me}", {"role": "accountant"})
    assert response.status_code == 422
    assert "You cannot change your own role" in response.get_data(as_text=True)
    response = _post(owner, f"/settings/users/{me}/remove", {})
    assert response.status_code == 422
    assert "You cannot remove yourself" in response.get_data(as_text=True)


def test_a_new_password_signs_the_user_out(app, owner, accounts):
    operator = app.test_client()
    sign_in(operator, accounts.operator)
    target = _user_id(app, accounts.operator)
    _post(
        owner, f"/settings/users/{target}", {"role": "operator", "password": "a brand new password"}
    )
    assert operator.get("/").status_code == 302
    assert sign_in(app.test_client(), accounts.operator, "a brand new password").status_code == 302


# An owner sets a password or turns off two-factor for staff, never for another owner: with
# either, one owner could sign in as a second and approve their own withdrawal above the limits.
SECOND_OWNER = "second-owner@acme.test"
NEW_PASSWORD = "a password of the first owner's"
REFUSED = "Another owner sets their own password and two-factor"


def test_an_owner_cannot_set_another_owners_password(app, owner):
    second = factories.user(app, SECOND_OWNER, "owner")
    page = owner.get(f"/settings/users/{second.id}").get_data(as_text=True)
    assert 'name="password"' not in page, "not offered: always refused"
    assert "Another owner sets their own password and two-factor sign-in" in page
    second_session = signed_in(app, SECOND_OWNER)
    path = f"/settings/users/{second.id}"
    response = _post(owner, path, {"role": "owner", "password": NEW_PASSWORD})
    assert response.status_code == 422
    assert REFUSED in response.get_data(as_text=True)
    assert second_session.get("/account").status_code == 200, "still signed in"
    assert sign_in(app.test_client(), SECOND_OWNER, NEW_PASSWORD).status_code == 401
    assert sign_in(app.test_client(), SECOND_OWNER).status_code == 302


def test_an_owner_cannot_turn_off_another_owners_two_factor(app, owner):
    second = factories.user(app, SECOND_OWNER, "owner", two_factor=True)
    path = f"/settings/users/{second.id}"
    assert 'name="turn_off_two_factor"' not in owner.get(path).get_data(as_text=True)
    response = _post(owner, path, {"role": "owner", "turn_off_two_factor": "y"})
    assert response.status_code == 422
    assert REFUSED in response.get_data(as_text=True)
    assert sign_in(app.test_client(), SECOND_OWNER).location == "/login/two-factor"


def test_an_owner_still_sets_an_operators_password_and_turns_off_their_two_factor(app, owner):
    operator = factories.user(app, "new-operator@acme.test", "operator", two_factor=True)
    path = f"/settings/users/{operator.id}"
    data = {"role": "operator", "password": NEW_PASSWORD, "turn_off_two_factor": "y"}
    assert _post(owner, path, data).status_code == 302
    signing_in = sign_in(app.test_client(), operator.email, NEW_PASSWORD)
    assert signing_in.status_code == 302 and signing_in.location != "/login/two-factor"
