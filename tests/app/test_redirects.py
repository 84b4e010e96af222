"""No open redirect. Every place that redirects to a target a visitor can influence
keeps the Location (and htmx's HX-Redirect) on the portal, for every hostile target; and every
redirect in the code is either built by url_for, checked by safe_next, or one listed here.
"""

from __future__ import annotations

import ast
from pathlib import Path
from urllib.parse import quote, unquote

import pytest

from tests.support.attack import stays_on_portal
from tests.support.forms import PASSWORD, csrf_token, session_csrf_token

PORTAL_PACKAGE = Path(__file__).resolve().parents[2] / "portal"

HOSTILE_TARGETS = [
    "//evil.test",
    "///evil.test",
    "https://evil.test",
    "http:evil.test",
    "/\\evil.test",
    "\\/\\/evil.test",
    "\\\\evil.test",
    "%2F%2Fevil.test",
    "/%2F/evil.test",
    "/%252F%252Fevil.test",
    "/%5Cevil.test",
    "/%09/evil.test",
    "/\t/evil.test",
    "/\n/evil.test",
    "/\r\n/evil.test",
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    " //evil.test",
    "//evil.test@localhost",
    "/login?next=//evil.test",
    "evil.test",
    "data:text/html,<script>alert(1)</script>",
]


# Headers that send the browser (or htmx) somewhere.
REDIRECTING = ("Location", "HX-Redirect", "HX-Location", "HX-Push-Url", "HX-Replace-Url", "Refresh")


def _locations(response) -> list[str]:
    found = [response.headers.get(name) for name in REDIRECTING]
    return [value.partition("url=")[2] or value for value in found if value]


def _assert_on_portal(response, target: str) -> None:
    assert response.status_code in (200, 302, 303, 308, 401, 422), (target, response.status_code)
    for location in _locations(response):
        assert stays_on_portal(location), f"{target!r} -> {location!r}"


def _sign_in(hostile, client, target: str, **headers: str):
    data = {
        "email": hostile.email("accountant"),
        "password": PASSWORD,
        "next": target,
        "csrf_token": session_csrf_token(client),
    }
    return client.post("/login", data=data, headers=headers)


def test_the_list_has_teeth():
    """The check itself refuses what a browser would follow off the site."""
    leaving = [t for t in HOSTILE_TARGETS if not stays_on_portal(t)]
    assert len(leaving) >= 12
    assert stays_on_portal("/operations?status=1") and stays_on_portal("/login?next=//evil.test")


@pytest.mark.parametrize("htmx", [False, True], ids=["form", "htmx"])
def test_sign_in_next(hostile, htmx):
    headers = {"HX-Request": "true", "HX-Boosted": "true"} if htmx else {}
    for target in HOSTILE_TARGETS:
        client = hostile.app.test_client()
        response = _sign_in(hostile, client, target, **headers)
        assert response.status_code == 302, target
        _assert_on_portal(response, target)


def test_sign_in_page_next_when_already_signed_in(hostile):
    client = hostile.client("accountant")
    for target in HOSTILE_TARGETS:
        for sent in (target, quote(target, safe="")):
            _assert_on_portal(client.get("/login?next=" + quote(sent, safe="")), target)


def test_sign_out_ignores_next(hostile):
    for target in HOSTILE_TARGETS[:6]:
        client = hostile.fresh_client("accountant")
        token = csrf_token(client, "/account")
        response = client.post(
            "/logout?next=" + quote(target, safe=""), data={"csrf_token": token, "next": target}
        )
        assert response.status_code == 302
        _assert_on_portal(response, target)


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_the_way_to_the_sign_in_page_and_back(hostile, htmx):
    """A signed-out visitor sent to /login?next=<the path>: hostile paths stay paths."""
    headers = {"HX-Request": "true"} if htmx else {}
    for target in HOSTILE_TARGETS:
        anonymous = hostile.app.test_client()
        one_segment = quote(quote(target, safe=""), safe="")  # stays one segment once decoded
        for path in ("/operations/" + one_segment, "/rates?x=" + quote(target)):
            first = anonymous.get(path, headers=headers)
            assert first.status_code in (308, 401 if htmx else 302), (path, first.status_code)
            _assert_on_portal(first, target)
            for location in _locations(first):
                back = _sign_in(hostile, anonymous, unquote(location.partition("next=")[2]))
                _assert_on_portal(back, target)
                anonymous = hostile.app.test_client()


@pytest.mark.parametrize("htmx", [False, True], ids=["page", "htmx"])
def test_no_route_sends_anywhere_a_query_says(hostile, htmx):
    """Every GET route of url_map with hostile values in the usual redirect parameters."""
    from tests.support.attack import get_urls

    headers = {"HX-Request": "true"} if htmx else {}
    query = "&".join(
        f"{name}={quote(target, safe='')}"
        for name, target in zip(
            ("next", "url", "redirect", "return_to", "page", "order_id"),
            ("//evil.test", "https://evil.test", "/\\evil.test", "%2F%2Fevil.test", "//e", "/\t/e"),
            strict=True,
        )
    )
    for visitor in ("owner", "anonymous"):
        for _endpoint, url in get_urls(hostile.app, hostile.ids):
            separator = "&" if "?" in url else "?"
            response = hostile.client(visitor).get(f"{url}{separator}{query}", headers=headers)
            for location in _locations(response):
                payment_page = location.startswith(f"{hostile.sandbox.base_url}/pay/")  # the API's
                assert stays_on_portal(location) or payment_page, f"{url}: {location!r}"
            response.close()


def test_cross_exchange_look_up(hostile):
    for target in HOSTILE_TARGETS:
        response = hostile.client("accountant").get("/cross-exchanges?id=" + quote(target, safe=""))
        _assert_on_portal(response, target)


def test_checkout_pay_goes_only_to_the_apis_payment_page(hostile):
    """/checkout/<token>/pay follows the operation's payment_url: the API's, never the query's."""
    client = hostile.app.test_client()
    url = f"/checkout/{hostile.ids['token']}/pay?next=//evil.test&redirect=https://evil.test"
    response = client.get(url)
    assert response.status_code == 303
    assert response.location.startswith((hostile.sandbox.base_url, "/checkout/"))


def test_second_step_of_sign_in_keeps_next_on_the_portal(hostile):
    """With two-factor on, the `next` of the first step is carried to the second."""
    import pyotp

    from portal import crypto
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.models import Role
    from portal.identity.rules import accounts, two_factor

    secret = pyotp.random_base32()
    with hostile.app.app_context():
        user = accounts.add_user(
            accounts.merchant_named("Acme"), "redirect-2fa@acme.test", Role.ACCOUNTANT, PASSWORD
        )
        user.totp_secret_encrypted = crypto.encrypt(secret)
        user.totp_enabled_at = utcnow()
        db.session.commit()
        codes = two_factor.new_recovery_codes(user)
    for target, code in zip(HOSTILE_TARGETS, codes, strict=False):
        client = hostile.app.test_client()
        data = {"email": "redirect-2fa@acme.test", "password": PASSWORD, "next": target}
        first = client.post("/login", data={**data, "csrf_token": csrf_token(client)})
        _assert_on_portal(first, target)
        second = client.post(
            first.location, data={"code": code, "csrf_token": csrf_token(client, first.location)}
        )
        assert second.status_code == 302, second.get_data(as_text=True)[:300]
        _assert_on_portal(second, target)


# --- Every redirect of the code ------------------------------------------------------------

# Redirects whose target is a variable, and where it comes from (each is tested above).
VARIABLE_TARGETS = {
    (
        "identity/pages/auth/routes.py",
        "next_url",
    ): "safe_next(`next`) or the dashboard; test_sign_in_next",
    (
        "payments/pages/checkout/routes.py",
        "target",
    ): "payment_url or url_for; test_checkout_pay_...",
    (
        "identity/pages/account/routes.py",
        "back",
    ): "safe_next(`next`) or the dashboard: where the time zone question was asked",
    ("money/pages/cross_exchanges/routes.py", "url"): "url_for of the cross exchange",
    ("money/pages/vouchers/routes.py", "url"): "url_for of the voucher",
    ("web/access.py", "url"): "redirect_to's parameter: its callers pass url_for",
    (
        "web/idempotent_forms.py",
        "record",
    ): "record_url: url_for of the record made",
}


def _redirect_targets() -> list[tuple[str, ast.expr]]:
    found = []
    for path in PORTAL_PACKAGE.rglob("*.py"):
        if path.parts[-2] == "api":
            continue  # the API client: requests' redirects are off (allow_redirects=False)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) in (
                "redirect",
                "redirect_to",
            ):
                found.append((str(path.relative_to(PORTAL_PACKAGE)), node.args[0]))
    return found


def _is_safe(file: str, target: ast.expr) -> bool:
    def call_to(node: ast.expr, name: str) -> bool:
        return isinstance(node, ast.Call) and getattr(node.func, "id", None) == name

    if call_to(target, "url_for"):
        return True
    if isinstance(target, ast.BoolOp) and isinstance(target.op, ast.Or):
        return call_to(target.values[0], "safe_next") and call_to(target.values[-1], "url_for")
    return isinstance(target, ast.Name) and (file, target.id) in VARIABLE_TARGETS


def test_every_redirect_in_the_code_has_a_safe_target():
    targets = _redirect_targets()
    assert len(targets) > 10
    unsafe = [(file, ast.unparse(t)) for file, t in targets if not _is_safe(file, t)]
    assert unsafe == [], "a redirect to a target that is neither url_for nor safe_next"
