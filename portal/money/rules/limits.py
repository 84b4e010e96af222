"""The owners' limits on money leaving the wallets, and whether an amount is above them.

The merchant's limits are in its reporting currency: per withdrawal and per UTC day (the day the
API's own daily limit counts). A currency may have limits of its own, in its units, which take
the place of those for that currency. An amount above a limit, or one the portal cannot value
(no fresh rate while a limit in the reporting currency is set), is held for an owner other than
the one who asked (`portal.money.rules.approvals`). With no limit set, nothing is held.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import sqlalchemy as sa

from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant, Role, User
from portal.identity.rules import accounts, audit
from portal.money.models import WithdrawalLimit
from portal.money.rules import rate_history
from portal.money.rules.currencies import CURRENCY_CODES
from portal.money.rules.withdrawal_figures import withdrawn_today

ZERO = Decimal(0)
# An owner added or promoted through the portal approves nothing for this long.
NEW_OWNER_HOLD = timedelta(hours=24)


class Reason(enum.StrEnum):
    """Why money waits for another owner."""

    PER_WITHDRAWAL = "per_withdrawal"  # above the limit of one withdrawal
    PER_DAY = "per_day"  # with what left today, above the daily limit
    NO_RATE = "no_rate"  # no fresh rate to value it against a limit in the reporting currency
    TYPED_ADDRESS = "typed_address"  # a refund to an address an operator typed
    # a refund an operator (or someone since removed) asked for, claimed on a link they read
    OPERATORS_CLAIM = "operators_claim"
    # a refund asked through an earlier API connection: the one now may be another account
    EARLIER_CONNECTION = "earlier_connection"


@dataclass(frozen=True)
class Check:
    """What the limits say of one amount: `held` for which reason (None: it may go), and its
    value in the reporting currency now (None: no fresh rate)."""

    reason: Reason | None
    value: Decimal | None
    value_currency: str


# Why no owner but the one asking may approve: alone, or the others related (`related`).
NO_OTHER_OWNER = (
    "no other owner may approve it: you are the only owner, or each other owner made you one, "
    "was made one by you, or was made one by the same owner as you (directly or in turn)"
)
WAY_OUT = (
    "Add an owner whom no owner here made (the portal's create-user command makes one), or "
    "change the limits."
)


def other_owners(user: User) -> list[User]:
    """The owners who may approve what `user` asked for: every other owner but those `user`
    made owners through the portal and those who made `user` one (`related`; those added in
    the last day approve once it passed)."""
    return [
        other
        for other in user.merchant.users
        if other.role is Role.OWNER and other.id != user.id and not related(other, user)
    ]


def held_owner(owner: User, requester: User | None) -> bool:
    """Whether `owner` may not approve what `requester` asked for: made an owner through the
    portal in the last `NEW_OWNER_HOLD`, or one of the two made the other an owner
    (`related`). Owners made with `create-user` are not held for a day."""
    if requester is not None and related(owner, requester):
        return True
    return owner.owner_since is not None and utcnow() - owner.owner_since < NEW_OWNER_HOLD


def related(one: User, other: User) -> bool:
    """Whether one of the two made the other an owner through the portal, directly or through
    owners made in turn, or one owner made both: whoever adds an owner typed their first
    password and can sign in as them, so none of them approves what another asks."""
    return bool(({one.id} | _makers(one)) & ({other.id} | _makers(other)))


def _makers(user: User) -> set[int]:
    """The owner who made `user` one, who made that owner one, and so on."""
    found: set[int] = set()
    maker_id = user.owner_by_id
    while maker_id is not None and maker_id not in found:
        found.add(maker_id)
        maker = db.session.get(User, maker_id)
        maker_id = maker.owner_by_id if maker is not None else None
    return found


def own_limits(merchant: Merchant, currency: str) -> WithdrawalLimit | None:
    return db.session.scalar(
        sa.select(WithdrawalLimit).where(
            WithdrawalLimit.merchant_id == merchant.id, WithdrawalLimit.currency == currency
        )
    )


def value_now(merchant: Merchant, currency: str, amount: Decimal) -> Decimal | None:
    """`amount` of `currency` in the reporting currency at the latest rates the portal read,
    if they are fresh (read within `rate_history.FRESH_FOR`); None otherwise."""
    reporting = merchant.reporting_currency
    if currency == reporting:
        return amount
    connection = merchant.api_connection
    record = rate_history.latest(merchant.id, connection.generation) if connection else None
    if record is None or utcnow() - record.last_seen_at > rate_history.FRESH_FOR:
        return None
    price = rate_history.price_of(record.rates, currency, reporting)
    return None if price is None else amount * price


def _today_value(merchant: Merchant) -> Decimal | None:
    """What left every wallet today, in the reporting currency at today's rates: vouchers
    leave fiat wallets too."""
    total = ZERO
    for wallet in CURRENCY_CODES:
        left = withdrawn_today(merchant, wallet)
        if left:
            value = value_now(merchant, wallet, left)
            if value is None:
                return None
            total += value
    return total


def serialize(merchant: Merchant) -> None:
    """Make this transaction the only one deciding whether the merchant's money may leave,
    until it ends: the check of the limits and the claim (or hold) of what it lets through are
    then one step. Apart, two confirmations at the same moment each found the day's limit free
    and both sent. The lock is an update of the merchant's row (on PostgreSQL a row lock, on
    SQLite the database's write lock), the first statement of a new transaction (the pending
    one is committed): SQLite fails, instead of waiting, a write whose transaction read before
    another's commit."""
    db.session.commit()
    accounts.lock_merchant(merchant.id)


def check(merchant: Merchant, currency: str, amount: Decimal) -> Check:
    """Whether `amount` of `currency` may leave now without another owner's approval."""
    value = value_now(merchant, currency, amount)
    reporting = merchant.reporting_currency
    own = own_limits(merchant, currency)
    each = own.per_withdrawal if own and own.per_withdrawal is not None else None
    daily = own.daily_limit if own and own.daily_limit is not None else None
    if each is not None and amount > each:
        return Check(Reason.PER_WITHDRAWAL, value, reporting)
    if daily is not None and withdrawn_today(merchant, currency) + amount > daily:
        return Check(Reason.PER_DAY, value, reporting)
    each_value = merchant.limit_per_withdrawal if each is None else None
    daily_value = merchant.limit_per_day if daily is None else None
    if each_value is None and daily_value is None:
        return Check(None, value, reporting)
    if value is None:
        return Check(Reason.NO_RATE, value, reporting)
    if each_value is not None and value > each_value:
        return Check(Reason.PER_WITHDRAWAL, value, reporting)
    if daily_value is not None:
        today = _today_value(merchant)
        if today is None:
            return Check(Reason.NO_RATE, value, reporting)
        if today + value > daily_value:
            return Check(Reason.PER_DAY, value, reporting)
    return Check(None, value, reporting)


def set_limits(merchant: Merchant, per_withdrawal: Decimal | None, per_day: Decimal | None) -> None:
    """The merchant's limits in the reporting currency (None: none); audited."""
    merchant.limit_per_withdrawal, merchant.limit_per_day = per_withdrawal, per_day
    audit.record(
        "limits.change",
        parameters={
            "currency": merchant.reporting_currency,
            "per_withdrawal": _shown(per_withdrawal),
            "per_day": _shown(per_day),
        },
    )


def set_own_limits(
    merchant: Merchant, currency: str, per_withdrawal: Decimal | None, per_day: Decimal | None
) -> None:
    """A currency's own limits in its units (both None: the merchant's apply again); audited."""
    found = own_limits(merchant, currency)
    if per_withdrawal is None and per_day is None:
        if found is not None:
            db.session.delete(found)
    elif found is None:
        db.session.add(
            WithdrawalLimit(
                merchant_id=merchant.id,
                currency=currency,
                daily_limit=per_day,
                per_withdrawal=per_withdrawal,
            )
        )
    else:
        found.daily_limit, found.per_withdrawal = per_day, per_withdrawal
    audit.record(
        "withdrawal_limit.change",
        parameters={
            "wallet": currency,
            "daily_limit": _shown(per_day),
            "per_withdrawal": _shown(per_withdrawal),
        },
    )


def _shown(limit: Decimal | None) -> str:
    return "none" if limit is None else format(limit, "f")
