"""Two-factor sign-in: enrolment, the code step of signing in, replays, recovery codes, the
merchant's requirement, throttling and the audit log; the secret under key rotation."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import pyotp
import pytest
from cryptography.fernet import Fernet

from tests.support.forms import PASSWORD, csrf_token, sign_in
from tests.support.two_factor import (
    code_at,
    enable_for,
    enrol,
    freeze,
    sign_in_with_code,
    submit_code,
)

REUSED = "That code was already used."
WRONG = "That code is not right."


@pytest.fixture
def clock(monkeypatch):
    return freeze(monkeypatch)


def _user(app, email: str):
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        user = find_user(email)
        user.recovery_codes  # noqa: B018  (loaded while the session is open)
        return user


def _events(app, action: str) -> list:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        query = db.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        return db.session.scalars(query).all()


def _post(client, path: str, data: dict, form_page: str | None = None):
    token = csrf_token(client, form_page or path)
    return client.post(path, data={**data, "csrf_token": token})


def _session_keys(app) -> set[str]:
    from portal.extensions import db
    from portal.identity.models import UserSession

    with app.app_context():
        return set(db.session.scalars(db.select(UserSession.key_hash)))


# --- Codes -----------------------------------------------------------------------------------


def test_a_code_is_accepted_one_step_either_side_and_no_further():
    from portal.identity.rules.two_factor import accepted_step

    secret = pyotp.random_base32()
    now = 1_800_000_015.0
    step = int(now // 30)
    for offset in (-1, 0, 1):
        assert accepted_step(secret, code_at(secret, now + 30 * offset), now) == step + offset
    for offset in (-2, 2):
        assert accepted_step(secret, code_at(secret, now + 30 * offset), now) is None
    wrong = f"{(int(code_at(secret, now)) + 1) % 1_000_000:06d}"
    assert accepted_step(secret, wrong, now) is None


def test_the_codes_are_those_of_rfc_6238():
    """The SHA-1 test vector of RFC 6238, appendix B (the last 6 of its 8 digits)."""
    from portal.identity.rules.two_factor import accepted_step

    secret = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ"  # base32 of "12345678901234567890"
    assert accepted_step(secret, "287082", 59.0) == 1
    assert accepted_step(secret, "081804", 1111111109.0) == 37037036


# --- Enrolment -------------------------------------------------------------------------------


def test_enrolment_shows_a_qr_code_and_the_key_and_turns_on_only_with_a_code(
    app, client, accounts, clock
):
    from portal import crypto

    sign_in(client, accounts.operator)
    page = client.get("/account/two-factor").get_data(as_text=True)
    assert 'src="data:image/svg+xml' in page, "the QR code is made by the server"
    key = re.search(r'id="setup-key">([A-Z2-7 ]+)<', page).group(1)
    secret = key.replace(" ", "")
    assert key in client.get("/account/two-factor").get_data(as_text=True), "same key on reload"

    response = _post(client, "/account/two-factor", {"password": PASSWORD, "code": "000000"})
    assert response.status_code == 422
    assert not _user(app, accounts.operator).two_factor_enabled

    response = _post(
        client, "/account/two-factor", {"password": PASSWORD, "code": clock.code(secret)}
    )
    assert response.status_code == 200
    assert "Two-factor sign-in is on." in response.get_data(as_text=True)
    user = _user(app, accounts.operator)
    assert user.two_factor_enabled
    assert secret not in user.totp_secret_encrypted
    with app.app_context():
        assert crypto.decrypt(user.totp_secret_encrypted) == secret
    assert [event.outcome for event in _events(app, "two_factor.enable")] == ["success"]
    (failure,) = _events(app, "two_factor.code")
    assert failure.outcome == "refused" and failure.parameters == {"purpose": "enrolment"}


def test_recovery_codes_are_shown_once_and_stored_hashed(app, client, accounts, clock):
    sign_in(client, accounts.owner)
    _, codes = enrol(client, clock.code)
    assert len(set(codes)) == 10
    page = client.get("/account/two-factor").get_data(as_text=True)
    assert "Recovery codes left" in page and ">10<" in page
    assert not any(code in page for code in codes), "a reload does not show them again"
    stored = {record.code_hash for record in _user(app, accounts.owner).recovery_codes}
    assert len(stored) == 10
    assert not any(code.replace(" ", "") in hashed for code in codes for hashed in stored)


def test_everyone_may_enrol(app, accounts, clock):
    for email in (accounts.owner, accounts.operator, accounts.accountant):
        client = app.test_client()
        sign_in(client, email)
        enrol(client, clock.code)
        assert _user(app, email).two_factor_enabled


# --- Signing in ------------------------------------------------------------------------------


def test_sign_in_asks_for_the_code_and_only_then_starts_the_session(app, client, accounts, clock):
    secret = enable_for(app, accounts.owner)
    response = sign_in(client, accounts.owner, next="/settings/users")
    assert response.location == "/login/two-factor"
    assert _session_keys(app) == set(), "the password alone starts no session"
    for path in ("/", "/settings/users", "/account", "/account/two-factor"):
        assert client.get(path).location.startswith("/login"), f"{path} half signed in"
    assert client.get("/login/two-factor").location == "/login", "that ended the half sign-in"

    sign_in(client, accounts.owner, next="/settings/users")
    cookie_before = client.get_cookie("portal_session").value
    response = submit_code(client, clock.code(secret))
    assert response.location == "/settings/users"
    assert client.get_cookie("portal_session").value != cookie_before
    assert len(_session_keys(app)) == 1
    assert client.get("/settings/users").status_code == 200
    (event,) = _events(app, "sign_in")
    assert event.parameters == {"email": accounts.owner, "second_factor": "authenticator"}


def test_a_code_signs_in_once(app, accounts, clock):
    secret = enable_for(app, accounts.owner)
    first, second = app.test_client(), app.test_client()
    assert sign_in_with_code(first, accounts.owner, clock.code(secret)).status_code == 302
    response = sign_in_with_code(second, accounts.owner, clock.code(secret))
    assert response.status_code == 422
    assert REUSED in response.get_data(as_text=True)
    response = submit_code(second, clock.code(secret, -1))
    assert REUSED in response.get_data(as_text=True), "an older code is refused too"
    assert submit_code(second, clock.code(secret, +1)).status_code == 302


def test_a_wrong_code_is_refused_and_recorded(app, client, accounts, clock):
    secret = enable_for(app, accounts.owner)
    response = sign_in_with_code(client, accounts.owner, clock.code(secret, 2))
    assert response.status_code == 422
    assert WRONG in response.get_data(as_text=True)
    assert client.get("/").status_code == 302
    (event,) = _events(app, "two_factor.code")
    assert event.outcome == "refused" and event.parameters == {"purpose": "sign_in"}
    assert event.user_email == accounts.owner


def test_a_recovery_code_signs_in_once(app, accounts, clock):
    client = app.test_client()
    sign_in(client, accounts.owner)
    _, codes = enrol(client, clock.code)
    typed = codes[3].upper().replace(" ", "-")  # as people type them
    response = sign_in_with_code(app.test_client(), accounts.owner, typed)
    assert response.status_code == 302
    (used,) = _events(app, "two_factor.recovery_code_used")
    assert used.parameters == {"purpose": "sign_in"}
    assert _events(app, "sign_in")[-1].parameters["second_factor"] == "recovery code"
    assert len(_user(app, accounts.owner).recovery_codes) == 9
    response = sign_in_with_code(app.test_client(), accounts.owner, codes[3])
    assert response.status_code == 422


@pytest.fixture
def tight_limits(portal_config):
    portal_config["SIGN_IN_LIMIT_PER_ACCOUNT"] = "3 per 15 minutes"
    return portal_config


def test_wrong_codes_are_throttled_like_passwords(tight_limits, app, client, accounts, clock):
    secret = enable_for(app, accounts.owner)
    assert sign_in_with_code(client, accounts.owner, "123456").status_code == 422
    for _ in range(2):
        assert submit_code(client, "123456").status_code == 422
    response = submit_code(client, clock.code(secret))
    assert response.status_code == 429, "even the right code waits now"
    assert "Too many wrong codes" in response.get_data(as_text=True)
    assert len(_events(app, "two_factor.code")) == 3
    other = enable_for(app, accounts.operator)
    assert (
        sign_in_with_code(app.test_client(), accounts.operator, clock.code(other)).status_code
        == 302
    )


def test_an_already_used_code_is_no_wrong_guess(tight_limits, app, accounts, clock):
    """Resubmitting a used code (a double click, a code typed twice) locks nobody out."""
    secret = enable_for(app, accounts.owner)
    assert (
        sign_in_with_code(app.test_client(), accounts.owner, clock.code(secret)).status_code == 302
    )
    client = app.test_client()
    response = sign_in_with_code(client, accounts.owner, clock.code(secret))
    for _ in range(4):  # more than the limit of 3
        assert response.status_code == 422 and REUSED in response.get_data(as_text=True)
        response = submit_code(client, clock.code(secret))
    assert submit_code(client, clock.code(secret, 1)).status_code == 302
    assert len(_events(app, "two_factor.code")) == 5, "each one is still in the audit log"


def test_typed_codes_are_never_written_back_into_the_page(tight_limits, app, accounts, clock):
    secret = enable_for(app, accounts.owner)
    client = app.test_client()
    wrong = [f"{(int(clock.code(secret)) + n) % 1_000_000:06d}" for n in (1, 2, 3)]
    response = sign_in_with_code(client, accounts.owner, wrong[0])
    for typed in wrong[1:]:
        assert response.status_code == 422 and WRONG in response.get_data(as_text=True)
        response = submit_code(client, typed)
    assert wrong[2] not in response.get_data(as_text=True)
    right = clock.code(secret)
    response = submit_code(client, right)
    assert response.status_code == 429
    assert right not in response.get_data(as_text=True), "not even when throttled"

    sign_in(client, accounts.operator)
    operator = enable_for(app, accounts.operator)
    for path, prefix in (
        ("/account/two-factor/recovery-codes", ""),
        ("/account/two-factor/disable", "disable-"),
    ):
        typed = f"{(int(clock.code(operator)) + 7) % 1_000_000:06d}"
        data = {f"{prefix}code": typed, f"{prefix}password": PASSWORD}
        response = _post(client, path, data, "/account/two-factor")
        assert response.status_code == 422 and WRONG in response.get_data(as_text=True)
        assert typed not in response.get_data(as_text=True), path


def test_the_sign_in_pages_are_never_cached(app, client, accounts, clock):
    """The second step is anonymous, yet it carries what was typed: no cache may keep it."""
    assert client.get("/login").headers.get("Cache-Control") == "no-store"
    enable_for(app, accounts.owner)
    sign_in(client, accounts.owner)
    assert client.get("/login/two-factor").headers.get("Cache-Control") == "no-store"
    assert submit_code(client, "000000").headers.get("Cache-Control") == "no-store"


# --- Managing it -----------------------------------------------------------------------------


def test_new_recovery_codes_replace_the_old_ones(app, client, accounts, clock):
    sign_in(client, accounts.accountant)
    secret, old = enrol(client, clock.code)
    path = "/account/two-factor/recovery-codes"
    data = {"password": PASSWORD, "code": clock.code(secret)}
    response = _post(client, path, data, "/account/two-factor")
    assert response.status_code == 422 and REUSED in response.get_data(as_text=True)
    data["code"] = clock.code(secret, 1)
    response = _post(client, path, data, "/account/two-factor")
    assert response.status_code == 200
    new = re.findall(r"<li>([a-z2-9 ]{19})</li>", response.get_data(as_text=True))
    assert len(new) == 10 and not set(new) & set(old)
    assert len(_events(app, "two_factor.recovery_codes")) == 1
    assert sign_in_with_code(app.test_client(), accounts.accountant, old[0]).status_code == 422
    assert sign_in_with_code(app.test_client(), accounts.accountant, new[0]).status_code == 302


def test_new_recovery_codes_need_the_current_password(app, client, accounts, clock):
    """As turning two-factor on or off: a stolen session and one relayed code make no codes
    that sign in for as long as they are unused."""
    sign_in(client, accounts.operator)
    secret, old = enrol(client, clock.code)
    path = "/account/two-factor/recovery-codes"
    for password, why in (
        (None, "Enter your current password."),
        ("not-the-password", "That is not your current password."),
    ):
        clock.advance()
        data = {"code": clock.code(secret)}
        if password is not None:
            data["password"] = password
        response = _post(client, path, data, "/account/two-factor")
        assert response.status_code == 422 and why in response.get_data(as_text=True), password
        assert not re.findall(r"<li>([a-z2-9 ]{19})</li>", response.get_data(as_text=True))
    assert _events(app, "two_factor.recovery_codes") == []
    assert sign_in_with_code(app.test_client(), accounts.operator, old[0]).status_code == 302

    clock.advance()
    data = {"password": PASSWORD, "code": clock.code(secret)}
    response = _post(client, path, data, "/account/two-factor")
    assert response.status_code == 200
    new = re.findall(r"<li>([a-z2-9 ]{19})</li>", response.get_data(as_text=True))
    assert len(new) == 10 and not set(new) & set(old)
    assert sign_in_with_code(app.test_client(), accounts.operator, old[1]).status_code == 422
    assert sign_in_with_code(app.test_client(), accounts.operator, new[0]).status_code == 302


def test_turning_off_needs_a_code(app, client, accounts, clock):
    sign_in(client, accounts.operator)
    secret, _ = enrol(client, clock.code)
    path = "/account/two-factor/disable"
    data = {
        "disable-password": PASSWORD,
        "disable-code": "999999",
        "disable-csrf_token": csrf_token(client, "/account"),
    }
    assert client.post(path, data=data).status_code == 422
    assert _user(app, accounts.operator).two_factor_enabled
    data["disable-code"] = clock.code(secret, 1)
    assert client.post(path, data=data).status_code == 302
    user = _user(app, accounts.operator)
    assert not user.two_factor_enabled
    assert user.totp_secret_encrypted is None and user.recovery_codes == []
    assert len(_events(app, "two_factor.disable")) == 1
    assert sign_in(app.test_client(), accounts.operator).location == "/"


def test_an_owner_turns_off_a_users_two_factor_for_a_lost_phone(app, accounts, clock):
    secret = enable_for(app, accounts.operator)
    operator = app.test_client()
    sign_in_with_code(operator, accounts.operator, clock.code(secret))
    owner = app.test_client()
    sign_in(owner, accounts.owner)
    user_id = _user(app, accounts.operator).id
    path = f"/settings/users/{user_id}"
    assert "Turn off their two-factor sign-in" in owner.get(path).get_data(as_text=True)
    response = _post(owner, path, {"role": "operator", "turn_off_two_factor": "y"})
    assert response.status_code == 302
    assert not _user(app, accounts.operator).two_factor_enabled
    assert operator.get("/").status_code == 302, "their sessions ended"
    (event,) = _events(app, "two_factor.disable")
    assert event.user_email == accounts.owner and event.parameters == {"email": accounts.operator}


def test_turning_it_on_or_off_and_new_recovery_codes_end_the_other_sessions(app, accounts, clock):
    """A session started before the change (a stolen password, a lost phone) does not live on."""
    acting, other = app.test_client(), app.test_client()
    sign_in(acting, accounts.operator)

    def signed_out_elsewhere() -> bool:
        return (
            other.get("/account").status_code == 302 and acting.get("/account").status_code == 200
        )

    sign_in(other, accounts.operator)
    secret, _ = enrol(acting, clock.code)
    assert signed_out_elsewhere(), "turning it on"

    assert sign_in_with_code(other, accounts.operator, clock.code(secret, 1)).status_code == 302
    clock.advance(2)
    path = "/account/two-factor/recovery-codes"
    data = {"password": PASSWORD, "code": clock.code(secret)}
    assert _post(acting, path, data, "/account").status_code == 200
    assert signed_out_elsewhere(), "new recovery codes"

    assert sign_in_with_code(other, accounts.operator, clock.code(secret, 1)).status_code == 302
    clock.advance(2)
    data = {"disable-password": PASSWORD, "disable-code": clock.code(secret)}
    response = _post(acting, "/account/two-factor/disable", data, "/account")
    assert response.status_code == 302
    assert signed_out_elsewhere(), "turning it off"


# --- The merchant's requirement --------------------------------------------------------------


def _require(client, required: bool, code: str | None = None):
    data = {"required": "y"} if required else {}
    if code is not None:
        data["requirement_code"] = code
    return _post(client, "/settings/users/two-factor", data, "/settings/users")


def test_only_an_owner_with_two_factor_may_require_it(app, client, accounts, clock):
    from portal.identity.rules.accounts import merchant_named

    sign_in(client, accounts.owner)
    response = _require(client, True)
    assert response.status_code == 422
    assert "Turn on two-factor sign-in for yourself first" in response.get_data(as_text=True)
    secret, _ = enrol(client, clock.code)
    assert _require(client, True, clock.code(secret, 1)).status_code == 302
    with app.app_context():
        assert merchant_named("Acme").require_two_factor
        assert not merchant_named("Other").require_two_factor
    clock.advance(2)
    assert _require(client, False, clock.code(secret)).status_code == 302
    actions = [event.outcome for event in _events(app, "two_factor.requirement_on")]
    assert actions == ["refused", "success"]
    assert len(_events(app, "two_factor.requirement_off")) == 1


def test_a_required_user_can_reach_nothing_but_enrolment(app, accounts, clock):
    owner = app.test_client()
    sign_in(owner, accounts.owner)
    secret, _ = enrol(owner, clock.code)
    assert _require(owner, True, clock.code(secret, 1)).status_code == 302

    operator = app.test_client()
    assert sign_in(operator, accounts.operator).status_code == 302
    enrolment = "/account/two-factor"
    for path in ("/", "/operations", "/operations/export.csv", "/account", "/settings/api"):
        assert operator.get(path).location == enrolment, path
    response = operator.get("/rates", headers={"HX-Request": "true"})
    assert response.status_code == 403 and response.headers["HX-Redirect"] == enrolment
    token = csrf_token(operator, enrolment)
    response = operator.post("/account", data={"time_zone": "UTC", "csrf_token": token})
    assert response.location == enrolment
    page = operator.get(enrolment).get_data(as_text=True)
    assert "Acme requires two-factor sign-in for every user." in page

    enrol(operator, lambda secret: clock.code(secret, 1))
    assert operator.get("/").status_code == 200
    assert app.test_client().get("/checkout/unknown").status_code != 302, "public stays public"


# --- Changes to users need the owner's code --------------------------------------------------

NEW_PASSWORD = "another long password"


def _user_id(app, email: str) -> int:
    return _user(app, email).id


def _exists(app, email: str) -> bool:
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        return find_user(email) is not None


def _acme_requires(app) -> bool:
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        return merchant_named("Acme").require_two_factor


def _set_acme_requirement(app, required: bool) -> None:
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        merchant_named("Acme").require_two_factor = required
        db.session.commit()


def _refused_codes(clock, secret: str) -> list[tuple[str | None, str]]:
    """What a step-up refuses, and what it says: no code, the code that signed the owner in,
    and a wrong one (last)."""
    wrong = f"{(int(clock.code(secret, 1)) + 1) % 1_000_000:06d}"
    return [
        (None, "Enter the 6-digit code your authenticator app shows."),
        (clock.code(secret), REUSED),
        (wrong, WRONG),
    ]


@dataclass
class UserChange:
    path: str  # "{operator}" stands for the operator's id
    data: dict
    done: Callable  # (app, accounts) -> whether the change was made
    field: str = "code"
    page: str | None = None  # the form's page, when it is not `path`
    required_before: bool = False  # whether Acme requires two-factor before the change


USER_CHANGES = {
    "add a user": UserChange(
        "/settings/users",
        {"email": "thief@acme.test", "role": "owner", "password": NEW_PASSWORD},
        lambda app, a: _exists(app, "thief@acme.test"),
    ),
    "change a role": UserChange(  # to owner would wait for another owner (money/test_controls)
        "/settings/users/{operator}",
        {"role": "accountant"},
        lambda app, a: _user(app, a.operator).role.value == "accountant",
    ),
    "set a password": UserChange(
        "/settings/users/{operator}",
        {"role": "operator", "password": NEW_PASSWORD},
        lambda app, a: _user(app, a.operator).check_password(NEW_PASSWORD),
    ),
    "turn off a user's two-factor": UserChange(
        "/settings/users/{operator}",
        {"role": "operator", "turn_off_two_factor": "y"},
        lambda app, a: not _user(app, a.operator).two_factor_enabled,
    ),
    "remove a user": UserChange(
        "/settings/users/{operator}/remove",
        {},
        lambda app, a: not _exists(app, a.operator),
    ),
    "require two-factor": UserChange(
        "/settings/users/two-factor",
        {"required": "y"},
        lambda app, a: _acme_requires(app),
        field="requirement_code",
        page="/settings/users",
    ),
    "stop requiring two-factor": UserChange(
        "/settings/users/two-factor",
        {},
        lambda app, a: not _acme_requires(app),
        field="requirement_code",
        page="/settings/users",
        required_before=True,
    ),
}


@pytest.mark.parametrize("name", USER_CHANGES)
def test_an_owner_with_two_factor_confirms_changes_to_users_with_a_fresh_code(
    name, app, accounts, clock
):
    """A stolen owner's session cookie alone changes no user and not the requirement."""
    change = USER_CHANGES[name]
    secret = enable_for(app, accounts.owner)
    enable_for(app, accounts.operator)
    _set_acme_requirement(app, change.required_before)
    owner = app.test_client()
    assert sign_in_with_code(owner, accounts.owner, clock.code(secret)).status_code == 302
    path = change.path.format(operator=_user_id(app, accounts.operator))
    page = change.page or path
    assert "Your authenticator code" in owner.get(page).get_data(as_text=True)

    refused = _refused_codes(clock, secret)
    for code, message in refused:
        sent = {**change.data, change.field: code} if code is not None else change.data
        response = _post(owner, path, sent, page)
        assert response.status_code == 422, code
        assert message in response.get_data(as_text=True)
        assert not change.done(app, accounts), f"done with {code!r}"
    wrong = refused[-1][0]
    assert wrong not in response.get_data(as_text=True), "the typed code is not in the page"

    response = _post(owner, path, {**change.data, change.field: clock.code(secret, 1)}, page)
    assert response.status_code == 302, response.get_data(as_text=True)
    assert change.done(app, accounts)
    purposes = [event.parameters["purpose"] for event in _events(app, "two_factor.code")]
    assert purposes == ["users", "users"]


def _api_connection(app):
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        return merchant_named("Acme").api_connection


def _tolerance(app):
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        return merchant_named("Acme").payment_tolerance_percent


def _shop_url(app) -> str | None:
    from portal.identity.rules.accounts import merchant_named

    with app.app_context():
        return merchant_named("Acme").shop_url


@pytest.mark.parametrize(
    ("path", "purpose"),
    [
        ("/settings/api", "api_settings"),
        ("/settings/checkout", "checkout_settings"),
        ("/settings/checkout/tolerance", "payment_tolerance"),
    ],
)
def test_an_owner_with_two_factor_confirms_settings_changes_with_a_fresh_code(
    app, accounts, clock, request, path, purpose
):
    """A stolen owner's session cookie alone neither points the API connection (and so the
    tokens) elsewhere nor changes the shop link customers follow from the checkout page."""
    if path == "/settings/api":
        sandbox = request.getfixturevalue("sandbox")
        data = {"base_url": sandbox.base_url, "environment": "sandbox", "token": sandbox.token}
        done = lambda: _api_connection(app) is not None  # noqa: E731
    elif path == "/settings/checkout":
        data = {"display_name": "Acme", "shop_url": "https://shop.example"}
        done = lambda: _shop_url(app) == "https://shop.example"  # noqa: E731
    else:  # a tolerance makes an underpayment read as paid
        data = {"payment_tolerance_percent": "5"}
        done = lambda: _tolerance(app) == 5  # noqa: E731
    secret = enable_for(app, accounts.owner)
    owner = app.test_client()
    assert sign_in_with_code(owner, accounts.owner, clock.code(secret)).status_code == 302
    page = owner.get("/settings/checkout" if "tolerance" in path else path)
    assert "Your authenticator code" in page.get_data(as_text=True)
    for code, message in _refused_codes(clock, secret):
        sent = data if code is None else {**data, "code": code}
        response = _post(owner, path, sent)
        assert response.status_code == 422, code
        assert message in response.get_data(as_text=True)
        assert not done(), f"done with {code!r}"
    response = _post(owner, path, {**data, "code": clock.code(secret, 1)})
    assert response.status_code == 302, response.get_data(as_text=True)
    assert done()
    purposes = [event.parameters["purpose"] for event in _events(app, "two_factor.code")]
    assert purposes == [purpose, purpose]


def test_an_owner_without_two_factor_is_asked_for_no_code(app, client, accounts):
    sign_in(client, accounts.owner)
    user_id = _user_id(app, accounts.operator)
    for page in (
        "/settings/users",
        f"/settings/users/{user_id}",
        f"/settings/users/{user_id}/remove",
        "/settings/api",
        "/settings/checkout",
    ):
        assert "Your authenticator code" not in client.get(page).get_data(as_text=True), page
    response = _post(client, f"/settings/users/{user_id}", {"role": "accountant"})
    assert response.status_code == 302
    assert _user(app, accounts.operator).role.value == "accountant"


# --- Key rotation ----------------------------------------------------------------------------


def test_rotate_keys_re_encrypts_the_two_factor_secrets(portal_config, app, accounts, clock):
    from cryptography.fernet import InvalidToken, MultiFernet

    from portal import create_app
    from portal.extensions import db

    secret = enable_for(app, accounts.operator)
    old = portal_config["TOKEN_KEYS"]
    new = Fernet.generate_key().decode()
    rotating = create_app({**portal_config, "TOKEN_KEYS": f"{new},{old}"})
    result = rotating.test_cli_runner().invoke(args=["rotate-keys"])
    assert result.exit_code == 0, result.output
    assert "Re-encrypted 1 value(s) of users.totp_secret_encrypted" in result.output
    assert secret not in result.output

    stored = _user(app, accounts.operator).totp_secret_encrypted
    assert MultiFernet([Fernet(new)]).decrypt(stored.encode()).decode() == secret
    with pytest.raises(InvalidToken):
        Fernet(old).decrypt(stored.encode())
    new_only = create_app({**portal_config, "TOKEN_KEYS": new})
    client = new_only.test_client()
    assert sign_in_with_code(client, accounts.operator, clock.code(secret)).status_code == 302
    for application in (rotating, new_only):
        with application.app_context():
            db.engine.dispose()


def test_sign_in_without_two_factor_is_unchanged(client, accounts):
    assert sign_in(client, accounts.owner, PASSWORD).location == "/"
