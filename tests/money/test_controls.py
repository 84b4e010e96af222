"""Controls no owner relaxes alone, against a real sandbox and SMTP server: raising a limit,
making someone an owner and shortening the address book's cooling-off wait for another owner's
approval, or 48 hours with a single owner (every owner mailed at once); tightening is at once."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from tests.money.test_approvals import (
    SECOND_OWNER,
    audit_events,
    held,
    second_owner,
    send_approved,
)
from tests.support import factories
from tests.support.money import (
    ETH_ADDRESS,
    apply_due,
    approve_with_a_fresh_code,
    intent_key,
    post,
    priced_portal,
    race_each,
    review_withdrawal,
    submit,
    text,
)
from tests.support.portal_app import MERCHANT, email
from tests.support.smtp import text_of

WITHDRAWAL = {"amount": "0.05", "wallet": "ETH", "address": ETH_ADDRESS}  # 150 USD


@pytest.fixture
def portal(tmp_path, sandbox, mail_server):
    with priced_portal(tmp_path, sandbox, mail_server) as app:
        yield app


@pytest.fixture
def owner(portal):
    from tests.support.forms import signed_in

    client = signed_in(portal, email("owner"))
    assert set_limit(client, "100").status_code == 302  # from none: tighter, at once
    return client


def set_limit(client, per_withdrawal: str):
    form = {"reporting-per_withdrawal": per_withdrawal, "reporting-per_day": ""}
    return post(client, "/withdrawals/limits/reporting", form)


def merchant_value(app, name: str):
    from portal.identity.rules import accounts

    with app.app_context():
        return getattr(accounts.merchant_named(MERCHANT), name)


def test_a_single_owner_raising_the_limit_waits_48_hours_and_every_owner_is_mailed(
    portal, owner, mail_server
):
    from portal.live.rules import mail

    raised = owner.get(set_limit(owner, "1000").headers["Location"])
    assert "you are the only owner, so relaxing a control waits 48 hours" in text(raised)
    assert post(owner, "/withdrawals/new", WITHDRAWAL).status_code == 422, "still 100 USD"
    limits_page = text(owner.get("/withdrawals/new"))
    assert "Waiting to take effect" in limits_page and "Cancel the change" in limits_page
    waiting = text(owner.get("/approvals"))
    assert "Approvals 1" in waiting
    assert "per withdrawal 100.00 USD, per day none" in waiting
    assert "per withdrawal 1,000.00 USD, per day none" in waiting
    with portal.app_context():
        mail.send_due()
    told = [m for m in mail_server.messages if "A control is relaxed" in m["Subject"]]
    assert [m["To"] for m in told] == [email("owner")]
    assert "takes effect on" in text_of(told[0])

    assert apply_due(portal, timedelta(hours=47)) == 0
    assert merchant_value(portal, "limit_per_withdrawal") == 100
    assert apply_due(portal, timedelta(hours=48, minutes=1)) == 1
    assert merchant_value(portal, "limit_per_withdrawal") == 1000
    assert post(owner, "/withdrawals/new", WITHDRAWAL).status_code == 302
    assert apply_due(portal, timedelta(hours=49)) == 0, "applied once"

    assert set_limit(owner, "50").status_code == 302
    assert merchant_value(portal, "limit_per_withdrawal") == 50, "tighter: at once"


def test_a_currencys_own_limit_above_the_merchants_limit_waits_like_raising_it(portal, owner):
    """An own limit takes the place of the merchant's 100 USD for ETH: one worth more at
    today's rates relaxes it, so it waits; one worth less is tighter, at once."""
    from portal.identity.rules import accounts
    from portal.money.rules import controls, limits

    lifted = {"limit-wallet": "ETH", "limit-per_withdrawal": "1000000", "limit-daily_limit": ""}
    waits = owner.get(post(owner, "/withdrawals/limits", lifted).headers["Location"])
    assert "you are the only owner, so relaxing a control waits 48 hours" in text(waits)
    assert post(owner, "/withdrawals/new", WITHDRAWAL).status_code == 422, "still 100 USD"
    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        assert limits.own_limits(merchant, "ETH") is None
        assert [change.currency for change in controls.waiting(merchant)] == ["ETH"]

    tighter = {**lifted, "limit-per_withdrawal": "0.01"}  # 30 USD
    assert post(owner, "/withdrawals/limits", tighter).status_code == 302
    with portal.app_context():
        found = limits.own_limits(accounts.merchant_named(MERCHANT), "ETH")
        assert found is not None and found.per_withdrawal == Decimal("0.01")


def test_a_control_tightened_meanwhile_cancels_the_change_that_waits(portal, owner):
    """A waiting change holds both limits as asked then: applied after a tightening, it would
    lift the new daily limit unseen. The tightening cancels it."""
    raised = owner.get(set_limit(owner, "1000").headers["Location"])
    assert "relaxing a control waits 48 hours" in text(raised)
    tighter = {"reporting-per_withdrawal": "100", "reporting-per_day": "500"}
    assert post(owner, "/withdrawals/limits/reporting", tighter).status_code == 302

    assert apply_due(portal, timedelta(hours=49)) == 0
    assert merchant_value(portal, "limit_per_withdrawal") == 100
    assert merchant_value(portal, "limit_per_day") == 500
    assert "Nothing waits for an approval" in text(owner.get("/approvals"))


def test_an_own_daily_limit_in_place_of_the_merchants_always_waits(portal, owner):
    """The merchant's daily limit counts what left every wallet together: a currency with its
    own would leave that count, however small its own limit."""
    from portal.identity.rules import accounts
    from portal.money.rules import limits

    daily = {"reporting-per_withdrawal": "100", "reporting-per_day": "100"}
    assert post(owner, "/withdrawals/limits/reporting", daily).status_code == 302
    own = {"limit-wallet": "ETH", "limit-per_withdrawal": "", "limit-daily_limit": "0.001"}
    waits = owner.get(post(owner, "/withdrawals/limits", own).headers["Location"])
    assert "relaxing a control waits 48 hours" in text(waits)
    with portal.app_context():
        assert limits.own_limits(accounts.merchant_named(MERCHANT), "ETH") is None


def test_the_same_limits_saved_again_cancel_no_change_that_waits(portal, owner):
    raised = owner.get(set_limit(owner, "1000").headers["Location"])
    assert "relaxing a control waits 48 hours" in text(raised)
    assert set_limit(owner, "100").status_code == 302  # as they are
    assert apply_due(portal, timedelta(hours=49)) == 1
    assert merchant_value(portal, "limit_per_withdrawal") == 1000


def test_removing_a_currencys_own_limit_waits_and_any_owner_cancels_it(portal, owner):
    from portal.identity.rules import accounts
    from portal.money.rules import controls, limits

    own = {"limit-wallet": "ETH", "limit-per_withdrawal": "0.01", "limit-daily_limit": ""}
    assert post(owner, "/withdrawals/limits", own).status_code == 302
    cleared = {**own, "limit-per_withdrawal": ""}
    assert post(owner, "/withdrawals/limits", cleared).status_code == 302
    with portal.app_context():
        found = limits.own_limits(accounts.merchant_named(MERCHANT), "ETH")
        assert found is not None and found.per_withdrawal == Decimal("0.01")
        change = controls.waiting(accounts.merchant_named(MERCHANT))[0]
    cancel = post(owner, f"/approvals/changes/{change.id}/cancel")
    assert cancel.status_code == 302
    assert "Nothing waits for an approval" in text(owner.get("/approvals"))
    assert apply_due(portal, timedelta(hours=49)) == 0


def test_with_two_owners_raising_the_limit_waits_for_the_other_owners_approval(
    portal, owner, monkeypatch
):
    second = second_owner(portal, monkeypatch)
    raised = owner.get(set_limit(owner, "1000").headers["Location"])
    assert "once an owner other than you approves it under Approvals" in text(raised)
    assert apply_due(portal, timedelta(days=3)) == 0, "no delay stands in for the other owner"
    page = second.client.get("/approvals").get_data(as_text=True)
    change = page.split('action="/approvals/changes/')[1].split("/")[0]
    approve = f"/approvals/changes/{change}/approve"

    own = post(owner, approve)
    assert own.status_code == 403 and "an owner other than you must approve it" in text(own)
    second.clock.advance()
    assert post(second.client, approve, {"code": second.clock.code(second.secret)}).status_code
    assert merchant_value(portal, "limit_per_withdrawal") == 1000
    approved = audit_events(portal, "control.approve")
    assert approved[-1]["requested_by"] == email("owner")
    assert approved[-1]["decided_by"] == SECOND_OWNER


def test_adding_an_owner_needs_another_owners_approval(portal, owner, monkeypatch):
    from portal.identity.models import Role
    from portal.identity.rules import accounts

    second = second_owner(portal, monkeypatch)
    new = {"email": "partner@acme.test", "role": "owner", "password": "a long password 1"}
    added = owner.get(post(owner, "/settings/users", new).headers["Location"])
    assert "partner@acme.test becomes an owner once an owner other than you" in text(added)
    assert "partner@acme.test: accountant → partner@acme.test: owner" in text(added)
    with portal.app_context():
        assert accounts.find_user("partner@acme.test").role is Role.ACCOUNTANT
    waiting = text(second.client.get("/approvals"))
    assert "partner@acme.test: accountant" in waiting and "partner@acme.test: owner" in waiting
    change = second.client.get("/approvals").get_data(as_text=True)
    change_id = change.split('action="/approvals/changes/')[1].split("/")[0]
    second.clock.advance()
    code = {"code": second.clock.code(second.secret)}
    assert post(second.client, f"/approvals/changes/{change_id}/approve", code).status_code == 302
    with portal.app_context():
        made = accounts.find_user("partner@acme.test")
        assert made.role is Role.OWNER and made.owner_since is not None
        assert made.owner_by_id == accounts.find_user(email("owner")).id


def _user_id(app, address: str) -> int:
    from portal.identity.rules import accounts

    with app.app_context():
        return accounts.find_user(address).id


def _role(app, address: str):
    from portal.identity.rules import accounts

    with app.app_context():
        return accounts.find_user(address).role


def test_another_owner_becomes_an_accountant_only_after_the_delay_and_is_never_removed_at_once(
    portal, owner, monkeypatch
):
    """Taking the other owner away would leave this one alone, its relaxed controls answering
    to nobody: with no third owner, the change waits 48 hours (the owner concerned may cancel
    it), and an owner is never removed at once."""
    from portal.identity.models import Role

    second = second_owner(portal, monkeypatch)
    path = f"/users/{_user_id(portal, SECOND_OWNER)}"
    removed = post(owner, f"/settings{path}/remove")
    assert removed.status_code == 422
    assert "An owner is removed in two steps" in text(removed)
    asked = post(owner, f"/settings{path}", {"role": "operator"})
    assert asked.status_code == 302
    assert "becomes an accountant on" in text(owner.get(asked.headers["Location"]))
    assert _role(portal, SECOND_OWNER) is Role.OWNER
    assert f"{SECOND_OWNER}: accountant" in text(second.client.get("/approvals"))

    assert apply_due(portal, timedelta(hours=47)) == 0
    assert _role(portal, SECOND_OWNER) is Role.OWNER
    assert apply_due(portal, timedelta(hours=48, minutes=1)) == 1
    assert _role(portal, SECOND_OWNER) is Role.ACCOUNTANT
    assert post(owner, f"/settings{path}/remove").status_code == 302


def test_the_owner_to_be_demoted_cancels_it(portal, owner, monkeypatch):
    from portal.identity.models import Role

    second = second_owner(portal, monkeypatch)
    asked = post(owner, f"/settings/users/{_user_id(portal, SECOND_OWNER)}", {"role": "operator"})
    assert asked.status_code == 302
    page = second.client.get("/approvals").get_data(as_text=True)
    change_id = page.split('action="/approvals/changes/')[1].split("/")[0]
    assert post(second.client, f"/approvals/changes/{change_id}/cancel").status_code == 302
    assert apply_due(portal, timedelta(hours=49)) == 0
    assert _role(portal, SECOND_OWNER) is Role.OWNER


def _ask_to_demote(client, portal, address: str, signed=None):
    """`client` asks for the owner at `address` to stop being one (with a fresh code for a
    `signed` owner of `two_factor.signed_in_with_two_factor`)."""
    code = {}
    if signed is not None:
        signed.clock.advance()
        code = {"code": signed.clock.code(signed.secret)}
    path = f"/settings/users/{_user_id(portal, address)}"
    asked = post(client, path, {"role": "operator", **code})
    assert asked.status_code == 302, text(asked)


def _owners(app) -> list[str]:
    from portal.extensions import db
    from portal.identity.models import Role, User

    with app.app_context():
        owners = db.select(User.email).where(User.role == Role.OWNER).order_by(User.email)
        return list(db.session.scalars(owners))


def test_two_owners_asking_to_demote_each_other_leave_one_owner(portal, owner, monkeypatch):
    """The first demotion applied withdraws what the demoted owner asked, the demotion of the
    other among it: the merchant keeps an owner."""
    import sqlalchemy as sa

    from portal.extensions import db
    from portal.money.models import ApprovalState, ControlChange

    second = second_owner(portal, monkeypatch)
    _ask_to_demote(owner, portal, SECOND_OWNER)
    _ask_to_demote(second.client, portal, email("owner"), second)

    assert apply_due(portal, timedelta(hours=49)) == 1
    [kept] = _owners(portal)
    demoted = SECOND_OWNER if kept == email("owner") else email("owner")
    assert audit_events(portal, "control.cancel")[-1]["requested_by"] == demoted
    with portal.app_context():  # withdrawn with its requester's role, not refused when due
        states = db.session.scalars(sa.select(ControlChange.state).order_by(ControlChange.id))
        assert sorted(states) == [ApprovalState.APPROVED, ApprovalState.WITHDRAWN]


def test_a_demotion_that_would_leave_no_owner_is_refused_when_due(portal, owner, monkeypatch):
    """However the other owner stopped being one (here the database changed directly), the
    merchant's last owner is never demoted: the change is refused when it comes due."""
    from portal.extensions import db
    from portal.identity.models import Role
    from portal.identity.rules import accounts

    second_owner(portal, monkeypatch)
    _ask_to_demote(owner, portal, SECOND_OWNER)
    with portal.app_context():
        accounts.find_user(email("owner")).role = Role.ACCOUNTANT
        db.session.commit()

    assert apply_due(portal, timedelta(hours=49)) == 0
    assert _owners(portal) == [SECOND_OWNER]
    assert audit_events(portal, "control.cancel")[-1]["after"] == f"{SECOND_OWNER}: accountant"


def test_an_owner_demoted_takes_back_the_money_they_asked_for(portal, owner, sandbox, monkeypatch):
    """An approval judged who asked: once the requester is no longer an owner, their held
    withdrawal is withdrawn, and no owner can approve it any more."""
    from tests.support.two_factor import signed_in_with_two_factor

    second = second_owner(portal, monkeypatch)
    factories.user(portal, "third-owner@acme.test", "owner")
    third = signed_in_with_two_factor(portal, "third-owner@acme.test", monkeypatch)
    address, approval = held(owner)
    _ask_to_demote(second.client, portal, email("owner"), second)
    page = third.client.get("/approvals").get_data(as_text=True)
    change = page.split('action="/approvals/changes/')[1].split("/")[0]
    approved = approve_with_a_fresh_code(third, f"/approvals/changes/{change}")
    assert approved.status_code == 302, text(approved)

    assert email("owner") not in _owners(portal)
    approve_with_a_fresh_code(second, approval)  # too late: it was withdrawn
    assert send_approved(portal) == 0 and sandbox.operations_to(address) == 0
    assert audit_events(portal, "approval.withdraw")[-1]["requested_by"] == email("owner")


def test_a_shorter_cooling_off_waits_a_longer_one_is_at_once(portal, owner):
    longer = post(owner, "/address-book/cooling-off", {"hours": "24"})
    assert longer.status_code == 302
    assert merchant_value(portal, "address_cooling_off_hours") == 24
    assert "may be used 24 hours after it was added" in text(owner.get("/address-book"))
    assert post(owner, "/address-book/cooling-off", {"hours": "0"}).status_code == 302
    assert merchant_value(portal, "address_cooling_off_hours") == 24
    assert "Cooling-off of new addresses: 0 hours" in text(owner.get("/approvals"))
    assert "Cooling-off of new addresses: 0 hours" in text(owner.get("/address-book"))
    assert apply_due(portal, timedelta(hours=48, minutes=1)) == 1
    assert merchant_value(portal, "address_cooling_off_hours") == 0


def test_the_daily_limit_counts_the_vouchers_made_today(portal, owner):
    own = {"limit-wallet": "ETH", "limit-per_withdrawal": "", "limit-daily_limit": "0.05"}
    assert post(owner, "/withdrawals/limits", own).status_code == 302
    made = submit(owner, "/vouchers/new", {"amount": "0.03", "currency": "ETH"})
    assert made.status_code == 302, text(made)
    refused = post(owner, "/withdrawals/new", {**WITHDRAWAL, "amount": "0.03"})
    assert refused.status_code == 422, "0.03 ETH left as a voucher today: 0.03 more is over 0.05"
    assert post(owner, "/withdrawals/new", {**WITHDRAWAL, "amount": "0.01"}).status_code == 302


@pytest.fixture(params=["sqlite", "postgresql"])
def portal_on_each_database(request, tmp_path, sandbox, mail_server):
    config = {}
    if request.param == "postgresql":
        config["DATABASE_URL"] = request.getfixturevalue("postgres_url")
    with priced_portal(tmp_path, sandbox, mail_server, **config) as app:
        yield app


def test_confirmations_at_the_same_moment_take_the_days_limit_once(
    portal_on_each_database, sandbox
):
    """Six confirmations of 60 USD at once against a daily limit of 100: the check of the
    limits and the claim are one step, so one is sent and the others find the day taken."""
    from tests.support.forms import session_csrf_token, signed_in

    app = portal_on_each_database
    owner = signed_in(app, email("owner"))
    daily = {"reporting-per_withdrawal": "", "reporting-per_day": "100"}
    assert post(owner, "/withdrawals/limits/reporting", daily).status_code == 302
    reviews = [review_withdrawal(owner, "0.02") for _ in range(6)]  # 60 USD each

    token = {"csrf_token": session_csrf_token(owner)}

    statuses = race_each(app, owner, [(review + "/confirm", token) for _, review in reviews])

    assert sorted(statuses) == [302] + [422] * 5
    assert sum(sandbox.operations_to(address) for address, _ in reviews) == 1


def test_vouchers_made_at_the_same_moment_take_the_days_limit_once(
    portal_on_each_database, sandbox
):
    from tests.support.forms import session_csrf_token, signed_in

    app = portal_on_each_database
    owner = signed_in(app, email("owner"))
    daily = {"reporting-per_withdrawal": "", "reporting-per_day": "100"}
    assert post(owner, "/withdrawals/limits/reporting", daily).status_code == 302
    made_before = sandbox.requests_received("POST", "/vouchers")
    voucher = {"amount": "0.02", "currency": "ETH", "csrf_token": session_csrf_token(owner)}
    forms = [
        ("/vouchers/new", {**voucher, "intent": intent_key(owner, "/vouchers/new")})
        for _ in range(6)
    ]

    statuses = race_each(app, owner, forms)

    assert sorted(statuses) == [302] + [422] * 5
    assert sandbox.requests_received("POST", "/vouchers") == made_before + 1


def test_an_approved_withdrawal_the_worker_has_not_sent_counts_against_the_daily_limit(
    portal, sandbox, monkeypatch
):
    """The worker sends it without asking the limits again: a withdrawal confirmed before it
    goes must find the day's limit taken by it."""
    from tests.support.forms import signed_in

    owner = signed_in(portal, email("owner"))
    daily = {"reporting-per_withdrawal": "", "reporting-per_day": "200"}
    assert post(owner, "/withdrawals/limits/reporting", daily).status_code == 302
    second = second_owner(portal, monkeypatch)
    approval_address, approval = held(owner, "0.1")  # 300 USD: above the day's 200
    assert approve_with_a_fresh_code(second, approval).status_code == 302
    address, review = review_withdrawal(owner, "0.05")  # 150 USD

    confirmed = post(owner, review + "/confirm")

    assert confirmed.status_code == 302
    assert "waits for an owner other than the one who asked" in text(owner.get(review))
    assert sandbox.operations_to(address) == 0
    assert send_approved(portal) == 1 and sandbox.operations_to(approval_address) == 1


def test_a_voucher_above_the_limit_is_created_once_after_another_owner_approves(
    portal, owner, sandbox, monkeypatch
):
    second = second_owner(portal, monkeypatch)
    made_before = sandbox.requests_received("POST", "/vouchers")
    form = {"amount": "0.05", "currency": "ETH", "intent": intent_key(owner, "/vouchers/new")}
    held = post(owner, "/vouchers/new", form)
    assert held.status_code == 302 and held.location.startswith("/approvals/")
    assert post(owner, "/vouchers/new", form).location == held.location, "the same form"
    assert send_approved(portal) == 0
    assert sandbox.requests_received("POST", "/vouchers") == made_before
    page = text(second.client.get(held.location))
    assert "Amount 0.05 ETH Value in USD when asked 150" in page
    assert post(owner, held.location + "/approve").status_code == 403

    second.clock.advance()
    code = {"code": second.clock.code(second.secret)}
    assert post(second.client, held.location + "/approve", code).status_code == 302
    assert send_approved(portal) == 1
    assert send_approved(portal) == 0
    assert sandbox.requests_received("POST", "/vouchers") == made_before + 1
    assert "Voucher" in text(second.client.get(held.location))
    assert audit_events(portal, "voucher.create")[-1]["decided_by"] == SECOND_OWNER


def test_a_held_vouchers_form_sent_again_with_a_smaller_amount_sends_nothing(
    portal, owner, sandbox, monkeypatch
):
    """The key an approval holds is the worker's to send, with the amount approved: the same
    form posted again within the limit (another amount) leads to the approval, sends nothing,
    and leaves what the day's limit counts as it was."""
    from portal.identity.rules import accounts
    from portal.money.rules import withdrawal_figures

    second_owner(portal, monkeypatch)
    made_before = sandbox.requests_received("POST", "/vouchers")
    form = {"amount": "0.05", "currency": "ETH", "intent": intent_key(owner, "/vouchers/new")}
    held = post(owner, "/vouchers/new", form)
    assert held.status_code == 302 and held.location.startswith("/approvals/")

    again = post(owner, "/vouchers/new", {**form, "amount": "0.01"})  # 30 USD: within 100
    assert again.status_code == 302 and again.location == held.location
    assert sandbox.requests_received("POST", "/vouchers") == made_before
    with portal.app_context():
        today = withdrawal_figures.withdrawn_today(accounts.merchant_named(MERCHANT), "ETH")
    assert today == Decimal("0")  # nothing left the wallet; the held 0.05 waits


def test_a_vouchers_form_sent_again_after_the_service_was_unreachable_counts_what_it_sent(
    portal, owner, sandbox
):
    """A form whose first sending never left (the service unreachable) may be sent again, with
    another amount: the day's limit counts the amount that was sent."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import withdrawal_figures
    from portal.settings.models import ApiConnection
    from tests.support.sandbox_server import free_port

    def point_at(url: str) -> str:
        with portal.app_context():
            connection = db.session.scalars(db.select(ApiConnection)).one()
            before, connection.base_url = connection.base_url, url
            db.session.commit()
        return before

    form = {"amount": "0.001", "currency": "ETH", "intent": intent_key(owner, "/vouchers/new")}
    reachable = point_at(f"http://127.0.0.1:{free_port()}")
    assert post(owner, "/vouchers/new", form).status_code == 502
    point_at(reachable)
    assert post(owner, "/vouchers/new", {**form, "amount": "0.02"}).status_code == 302
    with portal.app_context():
        today = withdrawal_figures.withdrawn_today(accounts.merchant_named(MERCHANT), "ETH")
    assert today == Decimal("0.02")


def test_a_new_api_connection_forgets_nothing_that_left_today(portal, sandbox, tmp_path):
    """The ledger's rows count for the connection that booked them: after the merchant
    connects another account, the withdrawal the portal sent today from the first still counts
    against the owners' daily limit (it counted nothing until the day ended)."""
    from portal.identity.rules import accounts
    from portal.money.rules import limits, withdrawal_figures
    from tests.live.test_mirror_connections import switch_to
    from tests.support.forms import signed_in
    from tests.support.mirror import sync_now
    from tests.support.sandbox_server import run_sandbox

    owner = signed_in(portal, email("owner"))
    own = {"limit-wallet": "ETH", "limit-per_withdrawal": "", "limit-daily_limit": "1"}
    assert post(owner, "/withdrawals/limits", own).status_code == 302
    _address, review = review_withdrawal(owner, "0.9")
    assert post(owner, review + "/confirm").status_code == 302
    sync_now(portal)  # booked under the first connection
    with run_sandbox(tmp_path / "another-account.db") as another:
        switch_to(portal, another)
        sync_now(portal)

        with portal.app_context():
            merchant = accounts.merchant_named(MERCHANT)
            assert withdrawal_figures.withdrawn_today(merchant, "ETH") == Decimal("0.9")
            assert limits.check(merchant, "ETH", Decimal("0.9")).reason is limits.Reason.PER_DAY


def test_vouchers_of_a_fiat_wallet_count_against_the_day(portal):
    """A voucher may be issued in USD (the exchange rates name it, and the payment service may
    hold such a wallet): the day's limit in the reporting currency counts it as it counts the
    crypto wallets."""
    from portal.database import utcnow
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.models import IdempotencyKey, IntentKind, IntentState
    from portal.money.rules import limits

    with portal.app_context():
        merchant = accounts.merchant_named(MERCHANT)
        limits.set_limits(merchant, None, Decimal("100"))
        db.session.add(
            IdempotencyKey(
                merchant_id=merchant.id,
                kind=IntentKind.VOUCHER,
                key="usd-voucher",
                user_id=accounts.find_user(email("owner")).id,
                parameters={"amount": "90", "currency": "USD"},
                state=IntentState.SENT,
                record_id="v-usd",
                created_at=utcnow(),
                updated_at=utcnow(),
            )
        )
        db.session.commit()
        assert limits.check(merchant, "ETH", Decimal("0.01")).reason is limits.Reason.PER_DAY


def test_a_vouchers_form_that_never_left_held_with_another_amount_counts_the_amount_held(
    portal, owner, sandbox, monkeypatch
):
    """Its first sending never left (the service unreachable); sent again above the limit, it
    is held: the day's limit, once it is approved, counts what the approval sends."""
    from portal.extensions import db
    from portal.identity.rules import accounts
    from portal.money.rules import withdrawal_figures
    from portal.settings.models import ApiConnection
    from tests.support.sandbox_server import free_port

    second = second_owner(portal, monkeypatch)
    with portal.app_context():
        connection = db.session.scalars(db.select(ApiConnection)).one()
        reachable, connection.base_url = connection.base_url, f"http://127.0.0.1:{free_port()}"
        db.session.commit()
    form = {"amount": "0.001", "currency": "ETH", "intent": intent_key(owner, "/vouchers/new")}
    assert post(owner, "/vouchers/new", form).status_code == 502
    with portal.app_context():
        db.session.scalars(db.select(ApiConnection)).one().base_url = reachable
        db.session.commit()
    held = post(owner, "/vouchers/new", {**form, "amount": "0.05"})  # 150 USD: held
    assert held.status_code == 302 and held.location.startswith("/approvals/")
    assert approve_with_a_fresh_code(second, held.location).status_code == 302

    with portal.app_context():
        today = withdrawal_figures.withdrawn_today(accounts.merchant_named(MERCHANT), "ETH")
    assert today == Decimal("0.05")


def test_a_single_owner_is_refused_a_voucher_above_the_limit(portal, owner, sandbox):
    made_before = sandbox.requests_received("POST", "/vouchers")
    refused = submit(owner, "/vouchers/new", {"amount": "0.05", "currency": "ETH"})
    assert refused.status_code == 422
    assert "you are the only owner" in text(refused)
    assert sandbox.requests_received("POST", "/vouchers") == made_before
