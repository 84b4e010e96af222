"""Invitations and password resets: a one-time link mailed through a real
local SMTP server, over real HTTP. Time moves in the database, never by sleeping."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
import sqlalchemy as sa

from tests.support.forms import CSRF_FIELD, PASSWORD
from tests.support.portal_server import serve_in_thread
from tests.support.smtp import link_in, text_of
from tests.support.visitor import Visitor, signed_in_visitor

NEW_PASSWORD = "a password of my very own"
SENT = "If an account exists for that address, we sent it a link to reset the password."
DEAD = "This link has expired or was already used."


@pytest.fixture
def portal_config(portal_config, mail_server):
    return {**portal_config, "SMTP_URL": mail_server.url, "PUBLIC_URL": "http://portal.test"}


@pytest.fixture
def url(app, accounts):
    with serve_in_thread(app) as served:
        yield served


def mailed_link(app, mail_server, count: int) -> str:
    """The path of the link in the `count`-th message, once the worker's tick sent it."""
    from portal.live.rules import mail

    with app.app_context():
        mail.send_due()
    message = mail_server.wait_for(count)[count - 1]
    return urlsplit(link_in(message)).path


def set_password(visitor: Visitor, path: str, password: str = NEW_PASSWORD):
    data = {"new_password": password, "new_password_again": password}
    return visitor.post(path, data, page="/login")  # any page's token: a dead link has no form


def age_links(app, by: timedelta) -> None:
    """Move every link's times back, as if `by` had passed."""
    from portal.extensions import db
    from portal.identity.models import OneTimeLink

    with app.app_context():
        for link in db.session.scalars(sa.select(OneTimeLink)):
            link.created_at -= by
            link.expires_at -= by
        db.session.commit()


def invite(owner: Visitor, email: str, role: str = "operator"):
    form = {"invite-email": email, "invite-role": role}
    return owner.post("/settings/users/invite", form, page="/settings/users")


def test_an_invited_person_sets_a_password_once_and_signs_in(app, url, accounts, mail_server):
    owner = signed_in_visitor(url, accounts.owner)
    assert invite(owner, "new@acme.test").status_code == 302
    assert "new@acme.test" in owner.get("/settings/users").text

    path = mailed_link(app, mail_server, 1)
    message = mail_server.messages[0]
    assert message["To"] == "new@acme.test"
    assert "Acme" in message["Subject"]
    assert "operator" in text_of(message)
    assert path.startswith("/invite/")

    person = Visitor(url)
    assert "Choose your password" in person.get(path).text
    assert set_password(person, path, "short").status_code == 422
    done = set_password(person, path)
    assert done.status_code == 302
    assert urlsplit(done.headers["Location"]).path == "/"
    assert person.is_signed_in(), "choosing the password signs the person in"
    assert "new@acme.test" in person.get("/account").text
    assert Visitor(url).sign_in("new@acme.test", NEW_PASSWORD).status_code == 302

    again = Visitor(url)
    assert again.get(path).status_code == 410
    assert DEAD in again.get(path).text


def test_an_invitation_expires_after_7_days(app, url, accounts, mail_server):
    owner = signed_in_visitor(url, accounts.owner)
    invite(owner, "late@acme.test")
    path = mailed_link(app, mail_server, 1)
    age_links(app, timedelta(days=7) - timedelta(minutes=1))
    assert "Choose your password" in Visitor(url).get(path).text, "just before 7 days"
    age_links(app, timedelta(minutes=2))
    assert Visitor(url).get(path).status_code == 410, "just after 7 days"


def user_rows(owner: Visitor) -> list[str]:
    """The markup of each row of the users table on /settings/users."""
    return re.findall(r"<tr>.*?</tr>", owner.get("/settings/users").text, re.S)


def invited_row(owner: Visitor, email: str) -> str:
    """The text of the row of `email`, tags and runs of spaces collapsed."""
    row = next(row for row in user_rows(owner) if email in row)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", row)).split())


def user_path(owner: Visitor, email: str, action: str = "") -> str:
    """The path of a user's page (or of `action` on them) from their row's link or button."""
    row = next(row for row in user_rows(owner) if email in row)
    return re.search(rf'/settings/users/\d+{action}(?=")', row).group(0)


def test_an_invited_user_reads_invited_with_the_links_expiry_until_choosing_a_password(
    app, url, accounts, mail_server
):
    owner = signed_in_visitor(url, accounts.owner)
    invite(owner, "new@acme.test")
    row = invited_row(owner, "new@acme.test")
    assert "Invited link works until" in row
    assert "Revoke invitation" in row and "Invite again" in row
    age_links(app, timedelta(days=8))
    assert "Invited link expired" in invited_row(owner, "new@acme.test")
    age_links(app, -timedelta(days=8))

    set_password(Visitor(url), mailed_link(app, mail_server, 1))
    row = invited_row(owner, "new@acme.test")
    assert "Invited" not in row and "Revoke invitation" not in row and "Remove" in row


def test_inviting_again_voids_the_link_mailed_before(app, url, accounts, mail_server):
    owner = signed_in_visitor(url, accounts.owner)
    invite(owner, "new@acme.test")
    first = mailed_link(app, mail_server, 1)
    user_id = re.search(r"/settings/users/(\d+)/invite-again", owner.get("/settings/users").text)
    again = owner.post(f"/settings/users/{user_id.group(1)}/invite-again", {}, "/settings/users")
    assert again.status_code == 302
    second = mailed_link(app, mail_server, 2)
    assert second != first
    assert Visitor(url).get(first).status_code == 410
    assert set_password(Visitor(url), second).status_code == 302
    assert "Invitation sent again" in owner.get("/audit").text


def test_an_owner_revokes_an_invitation(app, url, accounts, mail_server):
    owner = signed_in_visitor(url, accounts.owner)
    invite(owner, "new@acme.test")
    path = mailed_link(app, mail_server, 1)
    revoke = user_path(owner, "new@acme.test", "/revoke-invitation")
    for role in ("operator", "accountant"):
        other = signed_in_visitor(url, accounts.by_role(role))
        assert other.post(revoke, {}, "/account").status_code == 403
    assert owner.http.post(f"{url}{revoke}").status_code == 400, "no CSRF token"
    assert any("new@acme.test" in row for row in user_rows(owner))

    assert owner.post(revoke, {}, "/settings/users").status_code == 302
    assert not any("new@acme.test" in row for row in user_rows(owner))
    assert Visitor(url).get(path).status_code == 410
    assert "Invitation revoked" in owner.get("/audit").text


def test_a_user_with_a_password_has_no_invitation_to_revoke(app, url, accounts, mail_server):
    owner = signed_in_visitor(url, accounts.owner)
    invite(owner, "new@acme.test")
    revoke = user_path(owner, "new@acme.test", "/revoke-invitation")
    set_password(Visitor(url), mailed_link(app, mail_server, 1))
    assert owner.post(revoke, {}, "/settings/users").status_code == 303
    assert "new@acme.test" in owner.get("/settings/users").text


def test_a_password_an_owner_sets_voids_the_invitation(app, url, accounts, mail_server):
    owner = signed_in_visitor(url, accounts.owner)
    invite(owner, "new@acme.test")
    path = mailed_link(app, mail_server, 1)
    form = {"role": "operator", "password": "typed by the owner 1"}
    assert owner.post(user_path(owner, "new@acme.test"), form).status_code == 302
    assert "Invited" not in invited_row(owner, "new@acme.test")
    assert Visitor(url).get(path).status_code == 410


def test_only_owners_invite(url, accounts):
    for role in ("operator", "accountant"):
        visitor = signed_in_visitor(url, accounts.by_role(role))
        refused = invite(visitor, "someone@acme.test")
        assert refused.status_code == 403


def test_forgot_password_answers_the_same_for_any_address(url, accounts, app, mail_server):
    answers = []
    for address in (accounts.owner, "nobody@acme.test"):
        visitor = Visitor(url)
        assert 'href="/password/forgot"' in visitor.get("/login").text
        sent = visitor.post("/password/forgot", {"email": address})
        page = visitor.get("/password/forgot").text
        assert SENT in page
        token = CSRF_FIELD.search(page).group(1)
        answers.append((sent.status_code, sent.headers["Location"], page.replace(token, "")))
    assert answers[0] == answers[1]

    mailed_link(app, mail_server, 1)
    assert [message["To"] for message in mail_server.messages] == [accounts.owner]


def test_a_reset_link_sets_a_password_once_and_ends_every_other_session(
    app, url, accounts, mail_server
):
    old_session = signed_in_visitor(url, accounts.operator)
    Visitor(url).post("/password/forgot", {"email": accounts.operator})
    earlier = mailed_link(app, mail_server, 1)
    Visitor(url).post("/password/forgot", {"email": accounts.operator})
    path = mailed_link(app, mail_server, 2)
    assert path.startswith("/password/reset/") and path != earlier

    person = Visitor(url)
    assert accounts.operator in person.get(path).text
    assert set_password(person, path).status_code == 302

    assert not old_session.is_signed_in()
    assert Visitor(url).sign_in(accounts.operator, PASSWORD).status_code == 401
    assert signed_in_visitor(url, accounts.operator, NEW_PASSWORD).is_signed_in()
    assert set_password(Visitor(url), path, "yet another password").status_code == 410
    assert set_password(Visitor(url), earlier, "yet another password").status_code == 410
    assert "Ask for a new link" in Visitor(url).get(path).text


def test_a_reset_link_expires_after_an_hour(app, url, accounts, mail_server):
    Visitor(url).post("/password/forgot", {"email": accounts.accountant})
    path = mailed_link(app, mail_server, 1)
    age_links(app, timedelta(minutes=59))
    assert Visitor(url).get(path).status_code == 200
    age_links(app, timedelta(minutes=2))
    assert set_password(Visitor(url), path).status_code == 410
    assert signed_in_visitor(
        url, accounts.accountant
    ).is_signed_in()  # the old password still works


def test_reset_requests_are_limited_per_address(app, url, accounts, mail_server):
    visitor = Visitor(url)
    statuses = [
        visitor.post("/password/forgot", {"email": "nobody@acme.test"}).status_code
        for _ in range(4)
    ]
    assert statuses == [302, 302, 302, 429]  # PORTAL_RESET_LINK_LIMIT_PER_ACCOUNT: 3 per hour
    assert (
        "Too many requests" in visitor.post("/password/forgot", {"email": "nobody@acme.test"}).text
    )


def test_forms_without_their_csrf_token_are_refused(url, accounts):
    visitor = Visitor(url)
    refused = visitor.http.post(f"{url}/password/forgot", data={"email": accounts.owner})
    assert refused.status_code == 400
    owner = signed_in_visitor(url, accounts.owner)
    refused = owner.http.post(f"{url}/account/email", data={"mail-event_types": []})
    assert refused.status_code == 400
    refused = owner.http.post(f"{url}/settings/users/invite", data={"invite-email": "x@acme.test"})
    assert refused.status_code == 400


NOT_ONE_ADDRESS = [
    "x@a.example,other@b.example",
    "x@a.example;other@b.example",
    "x@a.example other@b.example",
    "Someone <x@a.example>",
    "x@a.example (other@b.example)",
    '"x,other"@a.example',
    "x@other@a.example",
    "x@a.example\r\nBcc: other@b.example",
]
WITH_A_CONTROL_CHARACTER = "x\x07@a.example"  # refused before any view; the rules refuse it too
ONE_ADDRESS = "Enter one email address, such as"


def test_every_typed_address_is_one_address_or_refused_with_nothing_changed(
    app, url, accounts, mail_server
):
    """An invitation, a new user, a reset request, the checkout's support address and
    `create-user` each refuse a list of addresses (and other than one address) in words, and
    change nothing: no user, no link, no mail, no reset request, the old support address."""
    from portal.extensions import db
    from portal.identity.models import OneTimeLink, ResetRequest, User
    from portal.identity.rules import accounts as rules
    from portal.live.models import MailMessage
    from portal.live.rules import mail

    def counts() -> tuple[int, ...]:
        with app.app_context():
            tables = (User, OneTimeLink, MailMessage, ResetRequest)
            return tuple(
                db.session.scalar(sa.select(sa.func.count()).select_from(t)) for t in tables
            )

    owner = signed_in_visitor(url, accounts.owner)
    assert (
        owner.post("/settings/checkout", {"support_email": "help@acme.example"}).status_code == 302
    )
    before = counts()
    for typed in NOT_ONE_ADDRESS:
        for path, form, page in (
            ("/settings/users/invite", {"invite-email": typed}, "/settings/users"),
            ("/settings/users", {"email": typed, "password": PASSWORD}, None),
            ("/settings/checkout", {"support_email": typed}, None),
        ):
            refused = owner.post(
                path, {**form, "role": "operator", "invite-role": "operator"}, page=page
            )
            assert (refused.status_code, ONE_ADDRESS in refused.text) == (422, True), (path, typed)
        refused = Visitor(url).post("/password/forgot", {"email": typed})
        assert (refused.status_code, ONE_ADDRESS in refused.text) == (422, True), typed
    for typed in [*NOT_ONE_ADDRESS, WITH_A_CONTROL_CHARACTER]:
        options = ["--merchant", "Acme", "--role", "owner", "--password", PASSWORD]
        created = app.test_cli_runner().invoke(args=["create-user", typed, *options])
        assert created.exit_code == 1 and "is not an email address" in created.output, typed
    assert counts() == before
    with app.app_context():
        assert rules.merchant_named("Acme").support_email == "help@acme.example"
        mail.send_due()
    assert mail_server.messages == []

    assert invite(owner, "x@a.example").status_code == 302, "one address is taken"
    assert mailed_link(app, mail_server, 1).startswith("/invite/")
    assert [message["To"] for message in mail_server.messages] == ["x@a.example"]


def test_the_outbox_queues_a_message_for_one_address_only(app, caplog):
    """Defence in depth: an address stored before addresses were checked, holding a list, gets
    no message (and no link); one address does."""
    from portal.extensions import db
    from portal.live.models import MailMessage
    from portal.live.rules import outbox

    with app.app_context():
        for to in [*NOT_ONE_ADDRESS, WITH_A_CONTROL_CHARACTER]:
            assert not outbox.queue(to, "A link", "https://portal.test/invite/secret")
        assert outbox.queue("x@a.example", "A link", "https://portal.test/invite/secret")
        db.session.commit()
        assert db.session.scalars(sa.select(MailMessage.to_address)).all() == ["x@a.example"]
    assert "not one email address" in caplog.text


def test_every_email_field_of_the_portal_s_forms_takes_one_address(app):
    """A form added later with an email field uses the one-address field too. Signing in only
    looks an address up (a list finds no user), so its field may stay the plain one."""
    from flask_wtf import FlaskForm
    from wtforms import EmailField
    from wtforms.fields.core import UnboundField

    from portal.web.fields import EmailAddressField

    def subclasses(cls: type) -> list[type]:
        return [sub for child in cls.__subclasses__() for sub in (child, *subclasses(child))]

    email_fields = {
        (form.__name__, name): field.field_class
        for form in subclasses(FlaskForm)
        if form.__module__.startswith("portal.")
        for name, field in vars(form).items()
        if isinstance(field, UnboundField) and issubclass(field.field_class, EmailField)
    }
    assert ("InviteForm", "email") in email_fields, "the walk finds the portal's forms"
    plain = {place for place, kind in email_fields.items() if kind is not EmailAddressField}
    assert plain == {("SignInForm", "email")}


def test_the_demo_mails_links_to_the_address_it_serves(app, accounts, mail_server):
    """`flask demo --port 5123` without PORTAL_PUBLIC_URL: an invitation's link is on 5123,
    and a PORTAL_PUBLIC_URL that is set stays what mails use."""
    from portal.demo import public_url
    from portal.identity.models import Role
    from portal.identity.rules import accounts as rules
    from portal.identity.rules import one_time_links
    from portal.live.rules import mail

    app.config["PUBLIC_URL"] = None
    assert public_url(app, "0.0.0.0", 5123) == "http://localhost:5123"  # noqa: S104
    with app.app_context():
        owner = rules.find_user(accounts.owner)
        one_time_links.invite(owner.merchant, "demo@acme.test", Role.OPERATOR, by=owner)
        mail.send_due()
    assert link_in(mail_server.wait_for(1)[0]).startswith("http://localhost:5123/invite/")

    app.config["PUBLIC_URL"] = "https://portal.example.com"
    assert public_url(app, "127.0.0.1", 5123) == "https://portal.example.com"


def test_an_invitation_of_someone_who_became_an_owner_is_not_revoked(
    app, url, accounts, mail_server
):
    """Invited as an owner, an accountant until that took effect, then an owner: an owner is
    never removed at once, so the revocation says why and changes nothing (no error page)."""
    from tests.support.money import apply_due

    owner = signed_in_visitor(url, accounts.owner)
    assert invite(owner, "partner@acme.test", "owner").status_code == 302
    assert apply_due(app, timedelta(hours=48, minutes=1)) == 1
    revoke = user_path(owner, "partner@acme.test", "/revoke-invitation")

    assert owner.post(revoke, {}, "/settings/users").status_code == 303
    assert "An owner is removed in two steps" in owner.get("/settings/users").text
    assert any("partner@acme.test" in row for row in user_rows(owner))
