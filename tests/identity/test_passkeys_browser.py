"""Passkeys in Chromium, with the DevTools protocol's virtual authenticator: register one, sign
in with it, confirm a withdrawal with it; an answer without user verification, one made for
another withdrawal and a replayed challenge are refused.

The portal is served at `localhost` (PORTAL_PUBLIC_URL): browsers refuse passkeys on an IP
address."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from urllib.parse import parse_qsl

import pytest
from playwright.sync_api import CDPSession, Page, Route, expect

from tests.support import factories
from tests.support.browser import sign_in_as, sign_out_and_in
from tests.support.browser_portal import watched_page
from tests.support.forms import PASSWORD
from tests.support.money import in_book
from tests.support.portal_server import PortalServer, run_portal

SIGN_IN_CHALLENGE = "**/login/two-factor/challenge"
STEP_UP_CHALLENGE = "**/account/passkeys/challenge"


@pytest.fixture(scope="module")
def portal(tmp_path_factory, browser_sandbox) -> Iterator[PortalServer]:
    instance = tmp_path_factory.mktemp("passkey-portal")
    with run_portal(instance, browser_sandbox, public_host="localhost") as server:
        yield server


@pytest.fixture
def page(browser, portal) -> Iterator[Page]:
    yield from watched_page(browser, portal.url)


def authenticator(page: Page) -> tuple[CDPSession, str]:
    """A platform authenticator that verifies its user (a PIN, a fingerprint), in this page."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable", {"enableUI": False})
    options = {
        "protocol": "ctap2",
        "transport": "internal",
        "hasResidentKey": True,
        "hasUserVerification": True,
        "isUserVerified": True,
        "automaticPresenceSimulation": True,
    }
    added = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": options})
    return cdp, added["authenticatorId"]


# A second authenticator, for a second passkey: one authenticator holds one key per site.
PHONE = {
    "protocol": "ctap2",
    "transport": "hybrid",
    "hasResidentKey": True,
    "hasUserVerification": True,
    "isUserVerified": True,
    "automaticPresenceSimulation": True,
}


def owner_with_passkey(page: Page, portal: PortalServer) -> tuple[str, CDPSession, str]:
    """A new owner, signed in, who added the passkey "Laptop" (and saved the recovery codes)."""
    email = portal.add_user(f"passkey-{uuid.uuid4().hex[:8]}@acme.test", "owner")
    cdp, authenticator_id = authenticator(page)
    sign_in_as(page, email)
    page.goto("/account/passkeys")
    page.get_by_label("Name").fill("Laptop")
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_role("button", name="Add a passkey").click()
    expect(page.get_by_role("heading", name="Your recovery codes")).to_be_visible()
    page.get_by_role("link", name="I have saved my recovery codes").click()
    expect(page.get_by_role("cell", name="Laptop", exact=True)).to_be_visible()
    return email, cdp, authenticator_id


def sign_in_to_second_step(page: Page, email: str) -> None:
    sign_out_and_in(page, email)
    expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()


def pending_withdrawal(portal: PortalServer, email: str) -> tuple[str, str]:
    """A withdrawal of ETH to a fresh address of the address book, reviewed by `email`: its key
    and address."""
    key, address = uuid.uuid4().hex, "0x" + uuid.uuid4().hex + uuid.uuid4().hex[:8]
    in_book(portal.app, "ETH", address)
    factories.withdrawal_intent(
        portal.app, email, key, amount="0.01", wallet="ETH", address=address
    )
    return key, address


def held_confirmation(page: Page, url_glob: str) -> dict[str, str]:
    """The form a click on "Confirm with a passkey" sends to `url_glob`, kept from the portal
    (the page gets an empty 204)."""
    page.route(url_glob, lambda route: route.fulfill(status=204, body=""))
    with page.expect_request(url_glob) as sent:
        page.get_by_role("button", name="Confirm with a passkey").click()
    return dict(parse_qsl(sent.value.post_data or ""))


def test_register_sign_in_and_confirm_a_withdrawal(page: Page, portal: PortalServer) -> None:
    email, _, _ = owner_with_passkey(page, portal)
    expect(page.get_by_role("cell", name="Never", exact=True)).to_be_visible()

    sign_in_to_second_step(page, email)
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    page.goto("/account/passkeys")
    expect(page.get_by_role("cell", name="Never", exact=True)).to_have_count(0)  # last used: now

    key, address = pending_withdrawal(portal, email)
    page.goto(f"/withdrawals/{key}")
    expect(page.get_by_label("Authenticator code")).to_have_count(0)  # no app: the passkey only
    page.get_by_role("button", name="Confirm with a passkey").click()
    expect(page.get_by_text("The withdrawal was sent.")).to_be_visible()
    assert portal.sandbox.operations_to(address) == 1


def test_an_answer_without_user_verification_is_refused(page: Page, portal: PortalServer) -> None:
    """The authenticator only sees someone touch it (no PIN, no fingerprint), as a page that
    asked for no verification would have it: the portal refuses the answer anyway."""
    email, cdp, authenticator_id = owner_with_passkey(page, portal)
    sign_in_to_second_step(page, email)
    cdp.send(
        "WebAuthn.setUserVerified", {"authenticatorId": authenticator_id, "isUserVerified": False}
    )

    def unverified(route: Route) -> None:
        options = route.fetch().json()
        route.fulfill(json={**options, "userVerification": "discouraged"})

    page.route(SIGN_IN_CHALLENGE, unverified)
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_text("Your passkey's answer was not accepted")).to_be_visible()
    expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()


def test_a_confirmation_for_one_withdrawal_does_not_confirm_another(
    page: Page, portal: PortalServer
) -> None:
    email, _, _ = owner_with_passkey(page, portal)
    first, first_address = pending_withdrawal(portal, email)
    second, second_address = pending_withdrawal(portal, email)
    page.goto(f"/withdrawals/{first}")
    confirmation = held_confirmation(page, f"**/withdrawals/{first}/confirm")
    assert confirmation["passkey_assertion"]

    answer = page.request.post(f"/withdrawals/{second}/confirm", form=confirmation)
    assert answer.status == 422
    assert "was for another change" in answer.text()
    assert portal.sandbox.operations_to(second_address) == 0
    assert portal.sandbox.operations_to(first_address) == 0


def test_a_replayed_challenge_is_refused(page: Page, portal: PortalServer) -> None:
    """A sign-in's challenge answered again (a new signature, over the challenge already used)
    signs nobody in."""
    email, _, _ = owner_with_passkey(page, portal)
    sign_in_to_second_step(page, email)
    options: list[str] = []

    def kept(route: Route) -> None:
        answer = route.fetch()
        options.append(answer.text())
        route.fulfill(response=answer)

    page.route(SIGN_IN_CHALLENGE, kept)
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()

    page.unroute(SIGN_IN_CHALLENGE)
    sign_in_to_second_step(page, email)
    page.route(SIGN_IN_CHALLENGE, lambda route: route.fulfill(json=json.loads(options[0])))
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_text("was used already")).to_be_visible()
    expect(page.get_by_role("heading", name="Two-factor sign-in")).to_be_visible()


def test_removing_a_passkey_is_confirmed_with_one(page: Page, portal: PortalServer) -> None:
    """The row's password alone removes nothing: the passkey's answer confirms it."""
    owner_with_passkey(page, portal)
    row = page.get_by_role("row").filter(has_text="Laptop")
    row.get_by_label("Current password").fill(PASSWORD)
    row.get_by_role("button", name="Remove Laptop").click()
    expect(row.get_by_text("Confirm with your passkey.")).to_be_visible()

    row.get_by_label("Current password").fill(PASSWORD)
    row.get_by_role("button", name="Confirm with a passkey").click()
    expect(page.get_by_text("The passkey is removed.")).to_be_visible()
    expect(page.get_by_text("You have no passkeys.")).to_be_visible()


def test_an_owner_whose_second_factor_is_a_passkey_adds_another_with_it(
    page: Page, portal: PortalServer
) -> None:
    """Adding a passkey asks for the second factor the user has: here the first passkey's
    answer, then the browser makes the new key."""
    _email, cdp, _first = owner_with_passkey(page, portal)
    phone = cdp.send("WebAuthn.addVirtualAuthenticator", {"options": PHONE})  # the new key's
    add = page.locator("form").filter(has=page.get_by_label("Name"))
    add.get_by_label("Name").fill("Phone")
    add.get_by_label("Current password").fill(PASSWORD)
    add.get_by_role("button", name="Add a passkey").click()
    expect(add.get_by_text("Confirm with your passkey.")).to_be_visible()

    # The page keeps the new key; the laptop's answers (the phone is put away).
    cdp.send("WebAuthn.removeVirtualAuthenticator", {"authenticatorId": phone["authenticatorId"]})
    add.get_by_label("Current password").fill(PASSWORD)
    add.get_by_role("button", name="Confirm with a passkey").click()
    expect(page.get_by_role("cell", name="Phone", exact=True)).to_be_visible()
