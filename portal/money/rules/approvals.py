"""Approvals by a second owner: money above the owners' limits waits for an owner other than
the one who asked, and nothing reaches the API before one says yes.

An approval holds one withdrawal intent (or one refund). Deciding moves it from `waiting` with
one conditional UPDATE, so of any number of approvals at once exactly one decides. An approved
withdrawal is then sent by the worker (`send_due`) through the one-time machinery of
`portal.money.rules.idempotency`: its claim of the intent wins once, whatever else runs. A
request nobody decides expires after `EXPIRES_AFTER`; the person who asked may withdraw it.
Every step is in the audit log, naming who asked and who decided, and the owners hear of it
by mail.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute

from portal import shutdown
from portal.api import ApiFailure
from portal.database import utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import Merchant, Role, User
from portal.identity.rules import audit
from portal.live.rules import outbox
from portal.money.models import (
    Approval,
    ApprovalKind,
    ApprovalState,
    BookAddress,
    ControlChange,
    IdempotencyKey,
    IntentKind,
    IntentState,
    Refund,
    WithdrawalIntent,
)
from portal.money.rules import idempotency, limits, refunds, withdrawals
from portal.money.rules.currencies import money
from portal.settings.rules.connection import api_client_for

EXPIRES_AFTER = timedelta(days=7)


def hold_withdrawal(intent: WithdrawalIntent, requester: User, checked: limits.Check) -> Approval:
    """Hold a reviewed withdrawal for another owner (its reason from `checked`), audited and
    mailed to the other owners. A second confirmation of the same intent finds it held."""
    assert checked.reason is not None  # only held money waits
    approval = _new(
        requester.merchant, requester, ApprovalKind.WITHDRAWAL, checked.reason, checked.value
    )
    approval.withdrawal_intent_id = intent.id
    approval.amount, approval.currency = intent.amount, intent.wallet
    approval.address = intent.address
    try:
        _ask(approval, requester)
    except IntegrityError:
        db.session.rollback()  # another confirmation held it first
        found = of_withdrawal(intent)
        assert found is not None
        return found
    return approval


def hold_voucher(
    requester: User, key: str, amount: Decimal, currency: str, checked: limits.Check
) -> Approval:
    """Hold a reviewed voucher for another owner: its form's idempotency key is kept `pending`
    (nothing reaches the API) until the worker creates it once approved. The same form sent
    again finds it held."""
    assert checked.reason is not None  # only held money waits
    parameters = {"amount": format(amount, "f"), "currency": currency}
    intent = idempotency.reserve(requester.merchant, requester, IntentKind.VOUCHER, key, parameters)
    found = of_voucher(intent)
    if found is not None:
        return found
    if intent.state is IntentState.PENDING:  # its first sending never left: held as asked now
        intent.parameters = parameters
    approval = _new(
        requester.merchant, requester, ApprovalKind.VOUCHER, checked.reason, checked.value
    )
    approval.voucher_intent_id = intent.id
    approval.amount, approval.currency = amount, currency
    try:
        _ask(approval, requester)
    except IntegrityError:
        db.session.rollback()  # the same form, sent twice at once, held it first
        found = of_voucher(intent)
        assert found is not None
        return found
    return approval


def of_voucher(intent: IdempotencyKey) -> Approval | None:
    return db.session.scalar(sa.select(Approval).where(Approval.voucher_intent_id == intent.id))


def hold_refund(
    refund: Refund, requester: User | None, reason: limits.Reason | None = None
) -> Approval:
    """Put a refund that awaits an approval on the queue: an operator asked for it (and typed
    its address, or it was claimed on its link), someone since removed asked for it (None: any
    owner may approve) and it was claimed, it is above the owners' limits, or `reason` (the
    caller's) says why. Audited and mailed to the owners who may approve it."""
    merchant = db.session.get(Merchant, refund.merchant_id)
    assert merchant is not None
    if reason is None and (requester is None or requester.role is not Role.OWNER):
        reason = (
            limits.Reason.TYPED_ADDRESS if refund.typed_by_staff else limits.Reason.OPERATORS_CLAIM
        )
    elif reason is None:
        reason = limits.check(merchant, refund.currency, refund.amount).reason
    value = limits.value_now(merchant, refund.currency, refund.amount)
    reason = reason or limits.Reason.PER_WITHDRAWAL
    approval = _new(merchant, requester, ApprovalKind.REFUND, reason, value)
    approval.refund_id = refund.id
    approval.amount, approval.currency = refund.amount, refund.currency
    approval.address = refund.address
    _ask(approval, requester)
    return approval


def claim_refund(refund: Refund, address: str) -> bool:
    """The customer's address for a claim link's refund, once (`refunds.claim`). The claimed
    refund then waits for an owner unless an owner asked for it (whoever asked reads the link
    on the refund's page, `refunds.reads_link`, so an operator, or someone since removed,
    could claim it with an address of their own), or when it was asked through an earlier API
    connection (`hold_earlier_connections`), and for an owner other than the one who asked when
    it is above the owners' limits, valued now."""
    merchant = db.session.get(Merchant, refund.merchant_id)
    assert merchant is not None
    limits.serialize(merchant)  # the limits read below and the claim are one step
    requester = refund.user
    by_staff = requester is None or requester.role is not Role.OWNER
    reason = None
    if refunds.of_earlier_connection(refund):
        reason = limits.Reason.EARLIER_CONNECTION
    elif not by_staff:
        reason = limits.check(merchant, refund.currency, refund.amount).reason
    held = by_staff or reason is not None
    won = refunds.claim(refund, address, held=held)
    if won and held:
        hold_refund(refund, requester, reason)
    return won


def _new(
    merchant: Merchant,
    requester: User | None,
    kind: ApprovalKind,
    reason: limits.Reason,
    value: Decimal | None,
) -> Approval:
    return Approval(
        merchant_id=merchant.id,
        kind=kind,
        value=value,
        value_currency=merchant.reporting_currency,
        reason=reason.value,
        state=ApprovalState.WAITING,
        requested_by_id=requester.id if requester else None,
        expires_at=utcnow() + EXPIRES_AFTER,
    )


def _ask(approval: Approval, requester: User | None) -> None:
    db.session.add(approval)
    db.session.flush()
    count_waiting(approval.merchant_id, 1)
    audit.record("approval.request", parameters=_described(approval, requester))
    _mail_owners(approval, requester)
    db.session.commit()


def of_withdrawal(intent: WithdrawalIntent) -> Approval | None:
    return db.session.scalar(sa.select(Approval).where(Approval.withdrawal_intent_id == intent.id))


def of_refund(refund: Refund) -> Approval | None:
    return db.session.scalar(sa.select(Approval).where(Approval.refund_id == refund.id))


def find(merchant: Merchant, approval_id: int) -> Approval | None:
    return db.session.scalar(
        sa.select(Approval).where(Approval.id == approval_id, Approval.merchant_id == merchant.id)
    )


def waiting(merchant: Merchant) -> list[Approval]:
    """What waits for a decision, oldest first."""
    return list(
        db.session.scalars(
            sa.select(Approval)
            .where(Approval.merchant_id == merchant.id, Approval.state == ApprovalState.WAITING)
            .order_by(Approval.created_at, Approval.id)
        )
    )


def count(merchant: Merchant) -> int:
    """How many wait for a decision (the menu's count): kept on the merchant, which every
    signed-in request has read already."""
    return merchant.approvals_waiting


def count_waiting(merchant_id: int, change: int) -> None:
    """Move the merchant's count of requests waiting on `/approvals` (money here, controls in
    `portal.money.rules.controls`), in the caller's transaction."""
    db.session.execute(
        sa.update(Merchant)
        .where(Merchant.id == merchant_id)
        .values(approvals_waiting=Merchant.approvals_waiting + change)
        .execution_options(synchronize_session=False)
    )


def decided_once(
    request: Approval | ControlChange,
    state: ApprovalState,
    decider: User | None,
    moment: datetime,
    *,
    unless_expired: bool = True,
) -> bool:
    """Move a waiting request to `state` by one conditional update, so that of two decisions at
    the same instant one wins (with `unless_expired`, none once it expired); the count follows,
    in the caller's transaction. Whether this one won."""
    model = type(request)
    still_waiting = [model.id == request.id, model.state == ApprovalState.WAITING]
    if unless_expired:
        still_waiting.append(model.expires_at > moment)
    won = rows_changed(
        sa.update(model)
        .where(*still_waiting)
        .values(state=state, decided_by_id=decider.id if decider else None, decided_at=moment)
        .execution_options(synchronize_session=False)
    )
    if won:
        count_waiting(request.merchant_id, -1)
    return bool(won)


def above_staffs_reach(approval: Approval, *, locked: bool = False) -> limits.Reason | None:
    """Why a refund staff (or someone since removed) asked for is beyond the owners' limits
    now, as `limits.check` says (None: within them, an owner asked, or it no longer waits and
    already counts against the day): no single owner
    approves it then. `locked`: under the merchant's lock, for the check right before the
    approval (no commit between them), so two approvals at once do not each find the day's
    limit free."""
    if approval.refund is None or approval.state is not ApprovalState.WAITING:
        return None
    requester = approval.requested_by
    if requester is not None and requester.role is Role.OWNER:
        return None
    merchant = db.session.get(Merchant, approval.merchant_id)
    assert merchant is not None
    if locked:
        limits.serialize(merchant)
    return limits.check(merchant, approval.currency, approval.amount).reason


def approve(approval: Approval, owner: User) -> bool:
    """`owner` (not the one who asked, nor one made by them, checked by the page) lets it go:
    True only for the one approval that decided it."""
    return _decide(approval, owner, ApprovalState.APPROVED, "approval.approve")


def reject(approval: Approval, owner: User) -> bool:
    """`owner` refuses it: nothing is sent. True only for the one decision that did."""
    return _decide(approval, owner, ApprovalState.REJECTED, "approval.reject")


def withdraw(approval: Approval, requester: User) -> bool:
    """The person who asked takes the request back: nothing is sent."""
    if approval.requested_by_id != requester.id:
        return False
    return _decide(approval, requester, ApprovalState.WITHDRAWN, "approval.withdraw")


def _decide(approval: Approval, user: User, state: ApprovalState, action: str) -> bool:
    """Decide once; a refund's approval moves the refund in the same transaction, so that
    under the merchant's lock (a staff refund's check) the next check finds it ready."""
    assert state is ApprovalState.WITHDRAWN or approval.requested_by_id != user.id
    won = decided_once(approval, state, user, utcnow())
    if won:
        db.session.refresh(approval)
        _settle_refund(approval, user)
    db.session.commit()
    db.session.refresh(approval)
    if won:
        audit.record(action, parameters=_described(approval, approval.requested_by, user))
    return bool(won)


def withdraw_all_of(user: User, moment: datetime) -> None:
    """Withdraw what `user` asked that still waits, as they stop being an owner: an approval
    judged who asked (no owner they made approves it), and a request of someone no longer an
    owner would otherwise outlive them."""
    asked = [approval for approval in waiting(user.merchant) if approval.requested_by_id == user.id]
    _decide_each(asked, ApprovalState.WITHDRAWN, None, "approval.withdraw", moment)


def reject_sending_to(user: User, currency: str, address: str) -> None:
    """An address taken out of the address book receives nothing more: what waits for an
    approval to go there, or was approved and is not sent yet, is rejected (audited as
    `user`'s), and a refund ready to be sent there is canceled. Committed."""
    going = [
        approval
        for approval in waiting(user.merchant)
        if (approval.currency, approval.address) == (currency, address)
    ]
    _decide_each(going, ApprovalState.REJECTED, user, "approval.reject", utcnow())
    _take_back_approvals_to_unlisted(user.merchant_id, user)
    refunds.cancel_typed_to_unlisted(user.merchant_id)


def _decide_each(
    found: list[Approval],
    state: ApprovalState,
    decider: User | None,
    action: str,
    moment: datetime,
) -> None:
    """Decide each of `found` that still waits, all before any is audited or its refund
    settled (each of which commits)."""
    decided = [approval for approval in found if decided_once(approval, state, decider, moment)]
    for approval in decided:
        db.session.refresh(approval)
        audit.record(action, parameters=_described(approval, approval.requested_by, decider))
        _settle_refund(approval, decider)


def _take_back_approvals_to_unlisted(merchant_id: int | None, decider: User | None) -> None:
    """Reject the approved withdrawals not sent yet whose address left the address book (of
    one merchant, or of all for the worker, which also finds those a sending that never left
    put back): the worker's claim asks for their book entry in the same statement, so none
    would be sent; rejected, none is counted against the day either."""
    unsent = sa.exists().where(
        WithdrawalIntent.id == Approval.withdrawal_intent_id,
        WithdrawalIntent.state == IntentState.PENDING,
    )
    mine = [] if merchant_id is None else [Approval.merchant_id == merchant_id]
    rejected = db.session.execute(
        sa.update(Approval)
        .where(
            *mine,
            Approval.kind == ApprovalKind.WITHDRAWAL,
            Approval.state == ApprovalState.APPROVED,
            unsent,
            ~BookAddress.lists(Approval.merchant_id, Approval.currency, Approval.address),
        )
        .values(
            state=ApprovalState.REJECTED,
            decided_by_id=decider.id if decider else None,
            decided_at=utcnow(),
        )
        .returning(Approval.id, Approval.merchant_id)
        .execution_options(synchronize_session=False)
    ).all()
    for approval_id, of_merchant in rejected:  # in the merchant's log, also from the worker
        merchant = db.session.get(Merchant, of_merchant)
        audit.record("approval.reject", parameters={"approval": approval_id}, merchant=merchant)
    db.session.commit()


def _settle_refund(approval: Approval, user: User | None) -> None:
    """A decided refund's approval moves the refund: approved (by `user`), it is ready for the
    worker; otherwise it is canceled, and its money is free again."""
    if approval.refund is None:
        return
    if approval.state is ApprovalState.APPROVED:
        assert user is not None  # an owner approves
        refunds.approve(approval.refund, user)
    else:
        refunds.cancel(approval.refund)


def send_due() -> int:
    """The worker's pass: send each approved withdrawal and create each approved voucher, once;
    how many this pass sent (an approved refund is ready, and `refunds.send_due` sends it).
    First, what a process left `sending` becomes an outcome to check (`idempotency.strand`)."""
    idempotency.strand(WithdrawalIntent)
    idempotency.strand(IdempotencyKey)
    hold_earlier_connections()
    return _send_withdrawals() + _create_vouchers()


def hold_earlier_connections() -> None:
    """Each ready refund asked through an earlier API connection waits for an owner's
    approval: the connection now may be another account, whose wallet would pay it for an
    operation of the first one's (or the same account with a new token: an owner says)."""
    for refund in refunds.of_earlier_connections():
        if refunds.set_aside(refund):
            hold_refund(refund, refund.user, limits.Reason.EARLIER_CONNECTION)


@contextmanager
def _as_decider(approval: Approval) -> Iterator[None]:
    """The audit log's sending in the block is the approver's; the worker's name comes back."""
    worker = audit.current_actor()
    audit.act_as(audit.Actor(approval.decided_by))
    try:
        yield
    finally:
        audit.act_as(worker)


def _approved_unsent(
    model: type[WithdrawalIntent] | type[IdempotencyKey],
    held: InstrumentedAttribute[int | None],
) -> list[int]:
    """The approved approvals whose intent of `model` (by the column `held`) is still pending."""
    return list(
        db.session.scalars(
            sa.select(Approval.id)
            .join(model, model.id == held)
            .where(Approval.state == ApprovalState.APPROVED, model.state == IntentState.PENDING)
        )
    )


def _send_withdrawals() -> int:
    _take_back_approvals_to_unlisted(None, None)
    due = _approved_unsent(WithdrawalIntent, Approval.withdrawal_intent_id)
    sent = 0
    for approval_id in due:
        if shutdown.requested():
            break
        approval = db.session.get(Approval, approval_id)
        assert approval is not None and approval.withdrawal is not None
        intent = approval.withdrawal
        merchant = db.session.get(Merchant, approval.merchant_id)
        assert merchant is not None
        api = api_client_for(merchant)  # before the claim: a failure here leaves it pending
        parameters = _described(approval, approval.requested_by, approval.decided_by)
        if not withdrawals.claim(intent, approval.requested_by, approved=True):
            continue  # another worker took it
        try:
            with _as_decider(approval):
                withdrawals.send(intent, api, parameters=parameters)
        except ApiFailure:
            continue  # kept on the intent: refused, unknown, or pending to try again
        sent += 1
    return sent


def _create_vouchers() -> int:
    due = _approved_unsent(IdempotencyKey, Approval.voucher_intent_id)
    made = 0
    for approval_id in due:
        if shutdown.requested():
            break
        approval = db.session.get(Approval, approval_id)
        assert approval is not None and approval.voucher is not None
        intent = approval.voucher
        merchant = db.session.get(Merchant, approval.merchant_id)
        assert merchant is not None
        api = api_client_for(merchant)  # before the claim: a failure here leaves it pending
        parameters = _described(approval, approval.requested_by, approval.decided_by)
        won = idempotency.take_pending(IdempotencyKey, IdempotencyKey.id == intent.id)
        db.session.commit()
        if not won:
            continue  # another worker took it
        db.session.refresh(intent)
        try:
            with (
                _as_decider(approval),
                idempotency.settling(intent),
                audit.recorded("voucher.create", parameters) as details,
            ):
                voucher = api.create_voucher(approval.amount, approval.currency)
                details["voucher_id"] = intent.record_id = voucher.id
        except ApiFailure:
            continue  # kept on the intent: refused, unknown, or pending to try again
        made += 1
    return made


def expire_due(now: datetime | None = None) -> int:
    """Expire what waited longer than `EXPIRES_AFTER`, mailing who asked; how many."""
    moment = now or utcnow()
    expired = 0
    for approval in db.session.scalars(
        sa.select(Approval).where(
            Approval.state == ApprovalState.WAITING, Approval.expires_at <= moment
        )
    ).all():
        if decided_once(approval, ApprovalState.EXPIRED, None, moment, unless_expired=False):
            expired += 1
            db.session.refresh(approval)
            if approval.refund is not None:
                refunds.cancel(approval.refund)
            requester = approval.requested_by
            if requester is not None:
                _mail(
                    requester,
                    f"Your {approval.kind.value} of {_amount(approval)} expired unapproved",
                    f"Nobody approved your {approval.kind.value} of {_amount(approval)} within "
                    f"{EXPIRES_AFTER.days} days, so nothing was sent. Ask again if it is still "
                    "needed.\n",
                )
        db.session.commit()
    return expired


def _amount(approval: Approval) -> str:
    return money(approval.amount, approval.currency)


def _described(
    approval: Approval, requester: User | None, decider: User | None = None
) -> dict[str, object]:
    """An approval in the audit log: what, how much, and both people."""
    described: dict[str, object] = {
        "approval": approval.id,
        "kind": approval.kind.value,
        "amount": approval.amount,
        "currency": approval.currency,
        "address": approval.address,
        "reason": approval.reason,
        "requested_by": requester.email if requester else None,
    }
    if decider is not None:
        described["decided_by"] = decider.email
    return described


def _mail_owners(approval: Approval, requester: User | None) -> None:
    """Every owner who may approve it: all of them when who asked was removed."""
    merchant = db.session.get(Merchant, approval.merchant_id)
    assert merchant is not None
    owners = (
        limits.other_owners(requester)
        if requester
        else [user for user in merchant.users if user.role is Role.OWNER]
    )
    asker = requester.email if requester else "A user since removed"
    for owner in owners:
        _mail(
            owner,
            f"Approval needed: a {approval.kind.value} of {_amount(approval)}",
            f"{asker} asks to send {_amount(approval)} {_to(approval)}. It "
            "waits for the approval of an owner other than the one who asked; nothing is sent "
            f"before. Approve or reject it here:\n"
            f"{outbox.portal_link(f'/approvals/{approval.id}')}\n\n"
            f"Without a decision it expires on {approval.expires_at:%Y-%m-%d %H:%M} UTC.\n",
        )


def _to(approval: Approval) -> str:
    if approval.address is None:
        return "as a voucher, whose code pays out to whoever has it"
    return f"to {approval.address}"


def _mail(user: User, subject: str, body: str) -> None:
    if outbox.enabled():
        outbox.queue(user.email, subject, body, user_id=user.id)
