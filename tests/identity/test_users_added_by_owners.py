"""Users an owner adds or gives a password: the least privileged role first, their own password
at first sign-in, and an audit log that says only what changed."""

from __future__ import annotations

import re

import pytest

from tests.support.forms import csrf_token, sign_in

GIVEN = "a password the owner typed"
OWN = "a password only I know"


@pytest.fixture
def owner(client, accounts):
    sign_in(client, accounts.owner)
    return client


def _post(client, path: str, data: dict, form_path: str | None = None):
    token = csrf_token(client, form_path or path)
    return client.post(path, data={**data, "csrf_token": token})


def _user_id(app, email: str) -> int:
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        return find_user(email).id


def test_add_user_starts_at_the_least_privileged_role(owner) -> None:
    page = owner.get("/settings/users").get_data(as_text=True)
    roles = re.search(r'<select[^>]*name="role".*?</select>', page, re.S)
    assert roles is not None
    selected = re.search(
        r'<option selected value="(\w+)">|<option value="(\w+)" selected>', roles.group()
    )
    assert selected is not None and "accountant" in selected.groups()


def test_a_user_added_by_an_owner_chooses_their_own_password_first(app, owner) -> None:
    added = _post(
        owner, "/settings/users", {"email": "new@acme.test", "role": "operator", "password": GIVEN}
    )
    assert added.status_code == 302

    newcomer = app.test_client()
    signed_in = sign_in(newcomer, "new@acme.test", GIVEN)
    assert signed_in.status_code == 302
    for path in ("/", "/operations", "/account", "/account/two-factor"):
        response = newcomer.get(path)
        assert response.status_code == 302, path
        assert response.location.endswith("/account/choose-password"), path
    assert "Choose your password" in newcomer.get("/account/choose-password").get_data(as_text=True)

    chosen = _post(
        newcomer,
        "/account/choose-password",
        {
            "password-current_password": GIVEN,
            "password-new_password": OWN,
            "password-new_password_again": OWN,
        },
    )
    assert chosen.status_code == 302 and chosen.location.endswith("/")
    assert newcomer.get("/").status_code == 200
    assert newcomer.get("/account/choose-password").status_code == 302  # nothing left to choose
    assert sign_in(app.test_client(), "new@acme.test", GIVEN).status_code == 401
    assert sign_in(app.test_client(), "new@acme.test", OWN).status_code == 302


def test_a_password_an_owner_sets_is_replaced_at_the_next_sign_in(app, owner, accounts) -> None:
    target = _user_id(app, accounts.operator)
    _post(owner, f"/settings/users/{target}", {"role": "operator", "password": GIVEN})
    operator = app.test_client()
    sign_in(operator, accounts.operator, GIVEN)
    assert operator.get("/transactions").location.endswith("/account/choose-password")


def test_a_role_change_logs_no_password(app, owner, accounts) -> None:
    target = _user_id(app, accounts.operator)
    assert _post(owner, f"/settings/users/{target}", {"role": "accountant"}).status_code == 302
    _post(owner, f"/settings/users/{target}", {"role": "operator", "password": GIVEN})

    log = owner.get("/audit").get_data(as_text=True)
    changes = re.findall(r'<td class="code">([^<]*)</td>', log)
    assert f"email: {accounts.operator}; role: accountant" in changes
    assert f"email: {accounts.operator}; role: operator; password: ••••" in changes
