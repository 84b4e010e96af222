"""Controls no owner relaxes alone: raising or removing a limit, making someone an owner or
another owner an accountant, and shortening the address book's cooling-off.

Such a change waits for an owner other than the one who asked (on `/approvals`, decided as an
approval is), or, with no such owner, takes effect `DELAY` after it was asked, every owner
mailed at once: a stolen session cannot lift a control and use it before the owners hear of it.
Any owner may cancel a change that waits. Tightening a control takes effect at once and cancels
the changes of that control that wait. Deciding
moves the change from `waiting` with one conditional UPDATE, so it is applied once; the
worker applies the delayed ones when due (`apply_due`) and expires the rest with the approvals.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import sqlalchemy as sa

from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant, Role, User
from portal.identity.rules import accounts, audit
from portal.live.rules import outbox
from portal.money.models import ApprovalState, ControlChange, ControlKind
from portal.money.rules import address_book, approvals, limits
from portal.money.rules.currencies import money

# A relaxed control with no other owner to approve it takes effect this long after it was asked.
DELAY = timedelta(hours=48)


def _looser(before: Decimal | None, after: Decimal | None) -> bool:
    """Whether a limit moving from `before` to `after` (None: none) lets more through."""
    if after is None:
        return before is not None
    return before is not None and after > before


def _own_looser(
    merchant: Merchant,
    currency: str,
    before: Decimal | None,
    after: Decimal | None,
    merchants: Decimal | None,
    *,
    daily: bool = False,
) -> bool:
    """Whether a currency's own limit moving from `before` to `after` lets more through. With
    no own limit, the merchant's limit in the reporting currency (`merchants`) applies: an own
    limit in its place relaxes it unless it is worth no more at today's rates (with no fresh
    rate, it counts as relaxing). An own `daily` limit always relaxes the merchant's: that one
    counts what left every wallet together, and the currency would leave that count."""
    if before is None and after is not None and merchants is not None:
        if daily:
            return True
        value = limits.value_now(merchant, currency, after)
        return value is None or value > merchants
    return _looser(before, after)


def _limits_words(per_withdrawal: Decimal | None, per_day: Decimal | None, currency: str) -> str:
    def shown(limit: Decimal | None) -> str:
        return "none" if limit is None else money(limit, currency)

    return f"per withdrawal {shown(per_withdrawal)}, per day {shown(per_day)}"


def change_limits(
    user: User, per_withdrawal: Decimal | None, per_day: Decimal | None
) -> ControlChange | None:
    """The limits in the reporting currency: set at once when no limit is raised or removed
    (None), else a change that waits."""
    merchant = user.merchant
    before = (merchant.limit_per_withdrawal, merchant.limit_per_day)
    if not (_looser(before[0], per_withdrawal) or _looser(before[1], per_day)):
        if (per_withdrawal, per_day) != before:
            supersede(user, ControlKind.LIMITS)
        limits.set_limits(merchant, per_withdrawal, per_day)
        return None
    currency = merchant.reporting_currency
    change = ControlChange(
        kind=ControlKind.LIMITS,
        per_withdrawal=per_withdrawal,
        per_day=per_day,
        before=f"Limits in {currency}: {_limits_words(*before, currency)}",
        after=f"Limits in {currency}: {_limits_words(per_withdrawal, per_day, currency)}",
    )
    return _ask(user, change)


def change_own_limits(
    user: User, currency: str, per_withdrawal: Decimal | None, per_day: Decimal | None
) -> ControlChange | None:
    """A currency's own limits, as `change_limits`: removing one waits too, whatever the
    merchant's limits that then apply to the currency."""
    merchant = user.merchant
    own = limits.own_limits(merchant, currency)
    before = (own.per_withdrawal, own.daily_limit) if own else (None, None)
    looser = _own_looser(
        merchant, currency, before[0], per_withdrawal, merchant.limit_per_withdrawal
    ) or _own_looser(merchant, currency, before[1], per_day, merchant.limit_per_day, daily=True)
    if not looser:
        if (per_withdrawal, per_day) != before:
            supersede(user, ControlKind.OWN_LIMITS, currency)
        limits.set_own_limits(merchant, currency, per_withdrawal, per_day)
        return None
    change = ControlChange(
        kind=ControlKind.OWN_LIMITS,
        currency=currency,
        per_withdrawal=per_withdrawal,
        per_day=per_day,
        before=f"The {currency} wallet's own limits: {_limits_words(*before, currency)}",
        after=f"The {currency} wallet's own limits: "
        f"{_limits_words(per_withdrawal, per_day, currency)}",
    )
    return _ask(user, change)


def make_owner(user: User, by: User) -> ControlChange:
    """`user` (of `by`'s merchant, not an owner) is to become an owner: always a change that
    waits."""
    return _role_change(user, by, ControlKind.OWNER, Role.OWNER)


def demote_owner(user: User, by: User) -> ControlChange:
    """`user`, an owner of `by`'s merchant, is to stop being one: always a change that waits.
    Taking the other owners away would leave `by` the only one, whose relaxed controls then
    answer to nobody. They become an accountant (who reads and moves no money); any owner may
    then give them another role or remove them. The owner concerned is told with the others,
    and may cancel the change or, consenting, approve it."""
    return _role_change(user, by, ControlKind.NOT_OWNER, Role.ACCOUNTANT)


def _role_change(user: User, by: User, kind: ControlKind, role: Role) -> ControlChange:
    change = ControlChange(
        kind=kind,
        user_id=user.id,
        before=f"{user.email}: {user.role.label.lower()}",
        after=f"{user.email}: {role.label.lower()}",
    )
    return _ask(by, change)


def _hours_words(hours: timedelta) -> str:
    return f"Cooling-off of new addresses: {hours.total_seconds() / 3600:g} hours"


def change_cooling_off(user: User, hours: Decimal) -> ControlChange | None:
    """The address book's cooling-off: set at once when not shorter (None), else a change that
    waits."""
    merchant = user.merchant
    before = address_book.cooling_off(merchant)
    after = timedelta(hours=float(hours))
    if after >= before:
        if after != before:
            supersede(user, ControlKind.COOLING_OFF)
        _set_cooling_off(merchant, hours)
        return None
    change = ControlChange(
        kind=ControlKind.COOLING_OFF,
        hours=hours,
        before=_hours_words(before),
        after=_hours_words(after),
    )
    return _ask(user, change)


def _set_cooling_off(merchant: Merchant, hours: Decimal | None) -> None:
    merchant.address_cooling_off_hours = hours
    audit.record("cooling_off.change", parameters={"hours": hours})


def supersede(user: User, kind: ControlKind, currency: str | None = None) -> None:
    """Cancel the waiting changes of a control `user` tightens at once: each holds every value
    of the control as asked then, and applied later it would undo this change unseen. The
    caller calls it only when a value changes (the same values saved again cancel nothing)."""
    for change in waiting(user.merchant):
        if change.kind is kind and change.currency == currency:
            cancel(change, user)


def _ask(user: User, change: ControlChange) -> ControlChange:
    """Keep `change` waiting: for another owner when there is one, else until `DELAY` passed.
    Audited, counted on the menu, and mailed to every owner."""
    now = utcnow()
    change.merchant_id = user.merchant_id
    change.requested_by_id = user.id
    change.state = ApprovalState.WAITING
    change.created_at = now
    change.expires_at = now + approvals.EXPIRES_AFTER
    # An owner to be demoted is no second owner to wait for: with no other, the delay applies.
    alone = not [o for o in limits.other_owners(user) if o.id != change.user_id]
    if alone:
        change.due_at = now + DELAY
    db.session.add(change)
    db.session.flush()
    approvals.count_waiting(user.merchant_id, 1)
    audit.record("control.request", parameters=_described(change))
    link = outbox.portal_link("/approvals")
    if alone:
        ending = (
            f"You are the only owner, so it takes effect on {change.due_at:%Y-%m-%d %H:%M} "
            f"UTC unless an owner cancels it here:\n{link}\n"
        )
    else:
        ending = (
            "It takes effect once an owner other than the one who asked approves it; "
            f"approve, reject or cancel it here:\n{link}\n"
        )
    outbox.queue_to_owners(
        user.merchant_id,
        f"A control is relaxed: {change.after}",
        f"{user.email} asks to change {change.before} to {change.after}. {ending}",
    )
    db.session.commit()
    return change


def waiting(merchant: Merchant) -> list[ControlChange]:
    return list(
        db.session.scalars(
            sa.select(ControlChange)
            .where(
                ControlChange.merchant_id == merchant.id,
                ControlChange.state == ApprovalState.WAITING,
            )
            .order_by(ControlChange.created_at, ControlChange.id)
        )
    )


def find(merchant: Merchant, change_id: int) -> ControlChange | None:
    return db.session.scalar(
        sa.select(ControlChange).where(
            ControlChange.id == change_id, ControlChange.merchant_id == merchant.id
        )
    )


def approve(change: ControlChange, owner: User) -> bool:
    """`owner` (not the one who asked, nor one made by them, checked by the page) applies it
    now; True only for the one approval that did."""
    assert change.requested_by_id != owner.id
    return _decide(change, owner, ApprovalState.APPROVED, "control.approve")


def cancel(change: ControlChange, owner: User) -> bool:
    """Any owner keeps the control as it is: the one who asked withdraws it, another rejects
    it. True only for the one decision that did."""
    if change.requested_by_id == owner.id:
        return _decide(change, owner, ApprovalState.WITHDRAWN, "control.cancel")
    return _decide(change, owner, ApprovalState.REJECTED, "control.cancel")


def _decide(
    change: ControlChange,
    user: User | None,
    state: ApprovalState,
    action: str,
    now: datetime | None = None,
) -> bool:
    """Decide the change once and, approved, apply it, in one transaction under the merchant's
    lock: a change of reporting currency (which converts the limits and cancels the changes
    asked in the old one) comes wholly before or after, never between the decision and its
    application, where a raise asked in USD would be applied as ETH."""
    db.session.commit()
    accounts.lock_merchant(change.merchant_id)
    if state is ApprovalState.APPROVED and _leaves_no_owner(change):
        state, action = ApprovalState.REJECTED, "control.cancel"
    won = approvals.decided_once(change, state, user, now or utcnow())
    db.session.refresh(change)
    if won:
        audit.record(action, parameters=_described(change, user))
        if state is ApprovalState.APPROVED:
            _apply(change, now or utcnow())
    db.session.commit()
    return bool(won)


def _leaves_no_owner(change: ControlChange) -> bool:
    """Whether applying `change` would take the merchant's last owner away (two owners each
    asking to demote the other): it is then refused, whoever approved it."""
    if change.kind is not ControlKind.NOT_OWNER or change.user is None:
        return False
    others = sa.select(sa.func.count()).where(
        User.merchant_id == change.merchant_id, User.role == Role.OWNER, User.id != change.user_id
    )
    return not db.session.scalar(others)


def _withdraw_requests_of(user: User, moment: datetime) -> None:
    """What `user` asked that still waits is withdrawn as they stop being an owner: their
    control changes (a demotion of the other owner among them) and money held for approval."""
    for change in waiting(user.merchant):
        if change.requested_by_id == user.id and approvals.decided_once(
            change, ApprovalState.WITHDRAWN, None, moment
        ):
            audit.record("control.cancel", parameters=_described(change))
    approvals.withdraw_all_of(user, moment)


def _apply(change: ControlChange, moment: datetime) -> None:
    """Make the change, audited as a change of that control."""
    merchant = db.session.get(Merchant, change.merchant_id)
    assert merchant is not None
    if change.kind is ControlKind.LIMITS:
        limits.set_limits(merchant, change.per_withdrawal, change.per_day)
    elif change.kind is ControlKind.OWN_LIMITS:
        assert change.currency is not None
        limits.set_own_limits(merchant, change.currency, change.per_withdrawal, change.per_day)
    elif change.kind is ControlKind.COOLING_OFF:
        _set_cooling_off(merchant, change.hours)
    elif change.kind is ControlKind.NOT_OWNER:
        user = change.user
        if user is not None and user.role is Role.OWNER:
            user.role = Role.ACCOUNTANT
            audit.record("user.change", parameters={"email": user.email, "role": "accountant"})
            _withdraw_requests_of(user, moment)
    else:
        user = change.user
        if user is not None and user.role is not Role.OWNER:
            user.role = Role.OWNER
            user.owner_since, user.owner_by_id = utcnow(), change.requested_by_id
            audit.record("user.change", parameters={"email": user.email, "role": "owner"})


def apply_due(now: datetime | None = None) -> int:
    """The worker's pass: apply each change whose delay passed, expire each undecided one
    older than `approvals.EXPIRES_AFTER`; how many were applied."""
    moment = now or utcnow()
    applied = 0
    due = db.session.scalars(
        sa.select(ControlChange).where(
            ControlChange.state == ApprovalState.WAITING,
            ControlChange.due_at.is_not(None),
            ControlChange.due_at <= moment,
        )
    ).all()
    for change in due:
        decided = _decide(change, None, ApprovalState.APPROVED, "control.approve", moment)
        applied += decided and change.state is ApprovalState.APPROVED
    stale = db.session.scalars(
        sa.select(ControlChange).where(
            ControlChange.state == ApprovalState.WAITING,
            ControlChange.due_at.is_(None),
            ControlChange.expires_at <= moment,
        )
    ).all()
    for change in stale:
        approvals.decided_once(change, ApprovalState.EXPIRED, None, moment, unless_expired=False)
        db.session.commit()
    return applied


def _described(change: ControlChange, decider: User | None = None) -> dict[str, object]:
    """A change in the audit log: what, from what to what, and both people."""
    described: dict[str, object] = {
        "change": change.id,
        "kind": change.kind.value,
        "before": change.before,
        "after": change.after,
        "requested_by": change.requested_by.email if change.requested_by else None,
    }
    if change.due_at is not None:
        described["due_at"] = change.due_at.isoformat()
    if decider is not None:
        described["decided_by"] = decider.email
    return described
