"""Approvals by a second owner against a real sandbox: money above the owners' limits reaches
the payment service only after an owner other than the one who asked approves it with a fresh
second factor, and then once, sent by the worker's pass."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest

from tests.support import factories
from tests.support.forms import PASSWORD, csrf_token, signed_in
from tests.support.money import (
    ETH_ADDRESS,
    approve_with_a_fresh_code,
    post,
    priced_portal,
    race,
    review_withdrawal,
    text,
)
from tests.support.portal_app import MERCHANT, email
from tests.support.smtp import text_of
from tests.support.two_factor import signed_in_with_two_factor

SECOND_OWNER = "second-owner@acme.test"


@pytest.fixture
def portal(tmp_path, sandbox, mail_server):
    with priced_portal(tmp_path, sandbox, mail_server) as app:
        yield app


@pytest.fixture
def owner(portal):
    client = signed_in(portal, email("owner"))
    limits = {"reporting-per_withdrawal": "100", "reporting-per_day": ""}
    assert post(client, "/withdrawals/limits/reporting", limits).status_code == 302
    return client


def send_approved(app) -> int:
    """The worker's pass over approved withdrawals, as a tick runs it."""
    from portal.money.rules import approvals

    with app.app_context():
        return approvals.send_due()


def second_owner(app, monkeypatch):
    factories.user(app, SECOND_OWNER, "owner")
    return signed_in_with_two_factor(app, SECOND_OWNER, monkeypatch)


def held(owner, amount: str = "0.05") -> tuple[str, str]:
    """A withdrawal of `amount` ETH (0.05 ETH is 150 USD, above the 100 USD limit) reviewed and
    confirmed by the owner: its address and the approval's page."""
    address, review = review_withdrawal(owner, amount)
    confirmed = post(owner, review + "/confirm")
    assert confirmed.status_code == 302, text(confirmed)
    return address, approval_on(owner.get(review))


def approval_on(page) -> str:
    """The approval a held withdrawal's page links to."""
    assert "waits for an owner other than the one who asked" in text(page)
    approval = page.get_data(as_text=True).split('href="/approvals/')[1].split('"')[0]
    return f"/approvals/{approval}"


def test_a_single_owner_is_refused_above_the_limit_with_the_reason(portal, owner, sandbox):
    sent_before = sandbox.requests_received("POST", "/withdraw")
    form = {"amount": "0.05", "wallet": "ETH", "address": ETH_ADDRESS}
    refused = post(owner, "/withdrawals/new", form)
    assert refused.status_code == 422
    assert "0.05 ETH is above the limit per withdrawal" in text(refused)
    assert "you are the only owner, or each other owner made you one" in text(refused)
    assert "so nothing was sent" in text(refused)
    within = post(owner, "/withdrawals/new", {**form, "amount": "0.01"})  # 30 USD
    assert within.status_code == 302
    assert sandbox.requests_received("POST", "/withdraw") == sent_before


def test_a_withdrawal_above_the_limit_sends_nothing_until_another_owner_approves(
    portal, owner, sandbox, mail_server, monkeypatch
):
    from portal.live.rules import mail

    second = second_owner(portal, monkeypatch)
    address, approval = held(owner)
    assert send_approved(portal) == 0
    assert sandbox.operations_to(address) == 0
    assert "Approvals 1" in text(second.client.get("/approvals"))
    with portal.app_context():
        mail.send_due()
    asked = [m for m in mail_server.messages if "Approval needed" in m["Subject"]]
    assert [m["To"] for m in asked] == [SECOND_OWNER] and approval in text_of(asked[0])

    own = post(owner, approval + "/approve")
    assert own.status_code == 403
    assert "an owner other than you must approve it" in text(own)
    used = post(second.client, approval + "/approve", {"code": second.sign_in_code})
    assert used.status_code == 422, "the code that signed in is no fresh second factor"
    assert send_approved(portal) == 0 and sandbox.operations_to(address) == 0

    assert approve_with_a_fresh_code(second, approval).status_code == 302
    assert send_approved(portal) == 1
    assert sandbox.operations_to(address) == 1
    assert send_approved(portal) == 0
    page = text(second.client.get(approval))
    assert "Approved Amount 0.05 ETH Value in USD when asked 150" in page
    assert "The address in the address book Fresh, in the address book since" in page
    assert f"by {SECOND_OWNER}" in page

    confirm = audit_events(portal, "withdrawal.confirm")
    assert confirm[-1]["requested_by"] == email("owner")
    assert confirm[-1]["decided_by"] == SECOND_OWNER
    assert audit_events(portal, "approval.approve")[-1]["requested_by"] == email("owner")


def audit_events(app, action: str) -> list[dict]:
    from portal.extensions import db
    from portal.identity.models import AuditEvent

    with app.app_context():
        query = db.select(AuditEvent).where(AuditEvent.action == action).order_by(AuditEvent.id)
        return [event.parameters for event in db.session.scalars(query)]


def test_ten_parallel_approvals_and_passes_send_once(portal, owner, sandbox, monkeypatch):
    second = second_owner(portal, monkeypatch)
    address, approval = held(owner)
    second.clock.advance()
    code = second.clock.code(second.secret)
    form = {"code": code, "csrf_token": csrf_token(second.client, approval)}
    statuses = race(portal, second.client, approval + "/approve", form, 10)
    assert statuses.count(302) >= 1, statuses

    sent: list[int] = []
    passes = [threading.Thread(target=lambda: sent.append(send_approved(portal))) for _ in range(5)]
    for one in passes:
        one.start()
    for one in passes:
        one.join()
    assert sum(sent) == 1
    assert sandbox.operations_to(address) == 1
    assert len(audit_events(portal, "approval.approve")) == 1


def test_the_requester_withdraws_and_an_undecided_request_expires_with_a_mail(
    portal, owner, sandbox, mail_server, monkeypatch
):
    from portal.database import utcnow
    from portal.live.rules import mail
    from portal.money.rules import approvals

    second = second_owner(portal, monkeypatch)
    first_address, first = held(owner)
    assert post(second.client, first + "/withdraw").status_code == 403
    assert post(owner, first + "/withdraw").status_code == 302
    assert "Withdrawn by who asked" in text(owner.get(first))

    second_address, later = held(owner)
    with portal.app_context():
        assert approvals.expire_due(utcnow() + timedelta(days=6)) == 0
        assert approvals.expire_due(utcnow() + timedelta(days=7, minutes=1)) == 1
        mail.send_due()
    second.clock.advance()
    code = second.clock.code(second.secret)
    assert post(second.client, later + "/approve", {"code": code}).status_code == 302
    assert "Expired: nobody decided in 7 days" in text(owner.get(later))
    assert send_approved(portal) == 0
    assert sandbox.operations_to(first_address) == sandbox.operations_to(second_address) == 0
    expired = [m for m in mail_server.messages if "expired unapproved" in m["Subject"]]
    assert [m["To"] for m in expired] == [email("owner")]


def test_an_amount_without_a_fresh_rate_waits_for_an_approval(portal, owner, monkeypatch):
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import RateRecord
    from portal.money.rules import limits

    with portal.app_context():
        db.session.execute(db.delete(RateRecord))
        db.session.commit()
        checked = limits.check(accounts.merchant_named(MERCHANT), "ETH", 0.01)
    assert checked.reason is limits.Reason.NO_RATE and checked.value is None


def made_owner_by(app, maker: str, monkeypatch):
    """A new owner added through the portal by `maker` a moment ago, signed in with a code."""
    from portal.identity.models import Role
    from portal.identity.rules import accounts

    with app.app_context():
        by = accounts.find_user(maker)
        accounts.add_user(by.merchant, SECOND_OWNER, Role.OWNER, PASSWORD, by=by)
    return signed_in_with_two_factor(app, SECOND_OWNER, monkeypatch)


def test_an_owner_added_a_minute_ago_cannot_approve_until_a_day_passed(
    portal, owner, sandbox, monkeypatch
):
    from portal.database import utcnow
    from portal.money.rules import limits

    factories.user(portal, "boss@acme.test", "owner")  # made by `create-user`: not held
    new = made_owner_by(portal, "boss@acme.test", monkeypatch)
    address, approval = held(owner)
    refused = approve_with_a_fresh_code(new, approval)
    assert refused.status_code == 403
    assert "less than 24 hours ago" in text(refused)

    later = utcnow() + timedelta(hours=24, minutes=1)
    monkeypatch.setattr(limits, "utcnow", lambda: later)
    assert approve_with_a_fresh_code(new, approval).status_code == 302
    assert send_approved(portal) == 1 and sandbox.operations_to(address) == 1


def test_an_owner_the_requester_made_never_approves_their_request(portal, owner, monkeypatch):
    from portal.database import utcnow
    from portal.money.rules import limits

    new = made_owner_by(portal, email("owner"), monkeypatch)
    later = utcnow() + timedelta(days=2)
    monkeypatch.setattr(limits, "utcnow", lambda: later)
    refused = post(
        owner, "/withdrawals/new", {"amount": "0.05", "wallet": "ETH", "address": ETH_ADDRESS}
    )
    assert refused.status_code == 422, "the only owner who could approve is the requester's own"
    factories.user(portal, "boss@acme.test", "owner")
    _address, approval = held(owner)
    assert approve_with_a_fresh_code(new, approval).status_code == 403
    assert send_approved(portal) == 0


def test_an_owner_never_approves_the_requests_of_an_owner_they_made(portal, owner, monkeypatch):
    """Whoever made an owner typed their first password and can sign in as them: the maker
    approves nothing the owner made asks for, and without a third owner the request is refused
    as a lone owner's is."""
    from portal.database import utcnow
    from portal.money.rules import limits

    new = made_owner_by(portal, email("owner"), monkeypatch)
    later = utcnow() + timedelta(days=2)  # past the new owner's first day
    monkeypatch.setattr(limits, "utcnow", lambda: later)
    form = {"amount": "0.05", "wallet": "ETH", "address": ETH_ADDRESS}
    alone = post(new.client, "/withdrawals/new", form)
    assert alone.status_code == 422, "the only other owner made this one"

    factories.user(portal, "boss@acme.test", "owner")
    _address, review = review_withdrawal(new.client, "0.05")
    new.clock.advance()
    confirmed = post(new.client, review + "/confirm", {"code": new.clock.code(new.secret)})
    assert confirmed.status_code == 302
    approval = approval_on(new.client.get(review))
    refused = post(owner, approval + "/approve")
    assert refused.status_code == 403
    assert send_approved(portal) == 0


def test_an_address_taken_out_of_the_book_receives_nothing_that_waited(
    portal, owner, sandbox, monkeypatch
):
    """The page says nothing more may go to an address removed from the book: the withdrawal
    waiting for an approval to go there is rejected, and no owner sends it after."""
    from portal.identity.rules import accounts
    from portal.money.rules import address_book

    second = second_owner(portal, monkeypatch)
    address, approval = held(owner)
    with portal.app_context():
        user = accounts.find_user(email("owner"))
        address_book.remove(address_book.place(user.merchant, "ETH", address).entry, user)

    approve_with_a_fresh_code(second, approval)  # too late: rejected with the address
    assert send_approved(portal) == 0 and sandbox.operations_to(address) == 0
    assert "Rejected" in text(owner.get(approval))


def test_two_owners_made_by_one_owner_never_approve_each_others_requests(portal, owner):
    """The owner who made both typed both first passwords: as one they ask, as the other they
    would approve."""
    from portal.identity.models import Role
    from portal.identity.rules import accounts
    from portal.money.rules import limits

    with portal.app_context():
        maker = accounts.find_user(email("owner"))
        for address in ("b@acme.test", "c@acme.test"):
            accounts.add_user(maker.merchant, address, Role.OWNER, PASSWORD, by=maker)
        b, c = accounts.find_user("b@acme.test"), accounts.find_user("c@acme.test")
        assert limits.related(b, c) and limits.held_owner(c, b)
        assert limits.other_owners(b) == []


def test_an_approved_withdrawal_not_sent_yet_goes_nowhere_once_its_address_is_removed(
    portal, owner, sandbox, monkeypatch
):
    from portal.identity.rules import accounts
    from portal.money.rules import address_book

    second = second_owner(portal, monkeypatch)
    address, approval = held(owner)
    assert approve_with_a_fresh_code(second, approval).status_code == 302
    with portal.app_context():
        user = accounts.find_user(email("owner"))
        address_book.remove(address_book.place(user.merchant, "ETH", address).entry, user)

    assert send_approved(portal) == 0 and sandbox.operations_to(address) == 0


def test_the_worker_sends_no_approved_withdrawal_whose_address_left_the_book(
    portal, owner, sandbox, monkeypatch
):
    """The address left the book while the worker held the withdrawal (a sending that never
    left puts it back as pending, still approved): the worker's next pass sends nothing to it,
    and takes the approval back."""
    from portal.extensions import db
    from portal.money.models import BookAddress

    second = second_owner(portal, monkeypatch)
    address, approval = held(owner)
    assert approve_with_a_fresh_code(second, approval).status_code == 302
    with portal.app_context():  # as if removed while the worker's claim held it
        db.session.execute(db.delete(BookAddress).where(BookAddress.address == address))
        db.session.commit()

    assert send_approved(portal) == 0 and sandbox.operations_to(address) == 0
    assert "Rejected" in text(owner.get(approval))


def test_the_claim_of_an_approved_withdrawal_asks_for_its_address_in_the_book(
    portal, owner, sandbox, monkeypatch
):
    """The address leaves the book between the worker's sweep and its claim: the claim's own
    statement finds no entry, and nothing is sent."""
    from portal.extensions import db
    from portal.money.models import BookAddress
    from portal.money.rules import approvals

    second = second_owner(portal, monkeypatch)
    address, approval = held(owner)
    assert approve_with_a_fresh_code(second, approval).status_code == 302
    with portal.app_context():
        db.session.execute(db.delete(BookAddress).where(BookAddress.address == address))
        db.session.commit()
    monkeypatch.setattr(approvals, "_take_back_approvals_to_unlisted", lambda *_: None)

    assert send_approved(portal) == 0 and sandbox.operations_to(address) == 0


def test_a_stopping_worker_sends_no_approved_withdrawal_and_the_next_one_does(
    portal, owner, sandbox, monkeypatch
):
    """What a stopping worker claimed but could not finish would be left `sending`."""
    from portal import shutdown

    second = second_owner(portal, monkeypatch)
    address, approval = held(owner)
    assert approve_with_a_fresh_code(second, approval).status_code == 302
    stopped = threading.Event()
    monkeypatch.setattr(shutdown, "_requested", stopped)
    shutdown.request()

    assert send_approved(portal) == 0
    assert sandbox.operations_to(address) == 0
    stopped.clear()  # the next worker
    assert send_approved(portal) == 1
    assert sandbox.operations_to(address) == 1
