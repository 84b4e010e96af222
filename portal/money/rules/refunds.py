"""Refunds: money of one operation sent back to its customer, once, as a withdrawal.

A refund is requested on an operation that received money (owners and operators), never for
more than the money counted less what its other refunds take; an amount typed in another
currency is converted at the operation's rate or at today's recorded rate (`Conversion`). The
customer gives the address on a one-time claim link (looked up by the token's hash; the token
itself is kept encrypted for staff to read only while the link waits); an address a member of
staff typed is sent as it is when an owner typed it within the owners' limits, and waits on the
approvals of `portal.money.rules.approvals` otherwise (`needs_owner_approval`), as does an
operator's refund once claimed (`approvals.claim_refund`). The worker sends
each ready refund through the one-time machinery of `portal.money.rules.idempotency`, off any
request thread, and books it in the ledger as a refund.
"""

from __future__ import annotations

import enum
import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_FLOOR, Decimal
from typing import cast

import sqlalchemy as sa
from sqlalchemy.exc import IntegrityError

from portal import crypto, shutdown
from portal.api import ApiFailure, MerchantApiClient, Operation
from portal.database import decimal_sum, iso_utc, utcnow
from portal.extensions import db, rows_changed
from portal.identity.models import Merchant, Role, User
from portal.identity.rules import audit
from portal.live.models import MailMessage, MailState
from portal.live.rules import events, outbox
from portal.live.rules.events import EventType
from portal.money.models import BookAddress, IntentState, Refund, RefundStage
from portal.money.rules import cross_exchanges, idempotency, ledger, limits, rate_history
from portal.money.rules.currencies import SMALLEST_AMOUNT
from portal.money.rules.currencies import money as money_text
from portal.payments.rules.operation_money import OperationMoney
from portal.settings.rules.connection import api_client_for, generation_now, is_current

TOKEN_BYTES = 32
# Refunds that no longer take any of the operation's money.
RELEASED = sa.or_(
    Refund.stage.in_([RefundStage.CANCELED, RefundStage.EXPIRED]),
    Refund.state == IntentState.REFUSED,
)
MAX_LINK_DAYS = 90
ATTEMPTS = 5  # a request that lost the race for a number reads the refunds again


class RefundRefused(Exception):
    """A refund that cannot be made, in words for the person who asked."""


@dataclass(frozen=True)
class Refundable:
    """What an operation can still give back, in its payment currency."""

    currency: str
    counted: Decimal  # the money the API counts for it
    taken: Decimal  # by its other refunds, sent or on their way
    surplus: Decimal  # what arrived above the due

    @property
    def most(self) -> Decimal:
        return max(self.counted - self.taken, Decimal(0))

    @property
    def surplus_left(self) -> Decimal:
        """The surplus less what refunds already take (a refund gives the surplus back first)."""
        return max(self.surplus - self.taken, Decimal(0))


class Basis(enum.StrEnum):
    """How the amount of a refund is given."""

    SURPLUS = "surplus"  # what arrived above the due, less what refunds already take
    AMOUNT = "amount"  # an amount in the currency paid
    PRICED = "priced"  # an amount in the operation's own currency, at its rate when paid
    NOW = "now"  # an amount in the merchant's reporting currency, at today's recorded rate


@dataclass(frozen=True)
class Conversion:
    """An amount typed in another currency and the rate that made it `amount`, in the currency
    paid. For `Basis.PRICED` `rate` is the operation's (units paid per unit typed, `at` None:
    the moment of payment); for `Basis.NOW` it is the price of one unit paid in `currency`,
    as the portal last recorded it `at`."""

    basis: Basis
    entered: Decimal
    currency: str
    rate: Decimal
    at: datetime | None
    amount: Decimal


def rate_now(merchant: Merchant, currency: str) -> rate_history.Rate | None:
    """Today's price of one `currency` in the reporting currency: the rate the mirror recorded
    last, when it is no older than `rate_history.FRESH_FOR`."""
    connection = merchant.api_connection
    if connection is None:
        return None
    now = utcnow()
    book = rate_history.RateBook(merchant.id, connection.generation, [now])
    return book.rate(currency, merchant.reporting_currency, now)


def converted(
    merchant: Merchant, basis: Basis, entered: Decimal | None, operation: Operation
) -> Conversion | None:
    """The typed amount in the currency paid, for the bases given in another currency; None for
    the others and when that currency is the one paid. Refused without a usable rate."""
    if entered is None or basis not in (Basis.PRICED, Basis.NOW):
        return None
    paid = operation.currency_paid
    if basis is Basis.PRICED:
        if operation.currency == paid:
            return None
        if operation.rate <= 0:
            raise RefundRefused("The operation has no rate: give the amount in the currency paid.")
        amount = _floor(entered * operation.rate)
        return Conversion(basis, entered, operation.currency, operation.rate, None, amount)
    reporting = merchant.reporting_currency
    if reporting == paid:
        return None
    rate = rate_now(merchant, paid)
    if rate is None or rate.price <= 0:
        minutes = int(rate_history.FRESH_FOR.total_seconds() // 60)
        raise RefundRefused(
            f"There is no rate of {paid} in {reporting} from the last {minutes} minutes, so "
            f"the amount cannot be converted: give it in the currency paid, or try again once "
            "the rates were read again."
        )
    return Conversion(basis, entered, reporting, rate.price, rate.at, _floor(entered / rate.price))


def _floor(amount: Decimal) -> Decimal:
    """To the API's smallest amount, never above what was asked for."""
    return amount.quantize(SMALLEST_AMOUNT, ROUND_FLOOR)


def amount_for(
    basis: Basis, entered: Decimal | None, left: Refundable, conversion: Conversion | None
) -> Decimal:
    """The amount in the currency paid that a refund given by `basis` sends."""
    if basis is Basis.SURPLUS:
        if not left.surplus_left:
            raise RefundRefused("This operation has no surplus left to refund.")
        return left.surplus_left
    if entered is None:
        raise RefundRefused("Enter the amount to refund.")
    return conversion.amount if conversion else entered


def taken(merchant: Merchant, operation_id: str) -> Decimal:
    """What the operation's refunds take of its money: every one but the canceled, expired or
    refused ones."""
    total = db.session.scalar(
        sa.select(decimal_sum(Refund.amount)).where(
            Refund.merchant_id == merchant.id, Refund.operation_id == operation_id, ~RELEASED
        )
    )
    return Decimal(total or 0)


def refundable(merchant: Merchant, operation: Operation, money: OperationMoney) -> Refundable:
    return Refundable(money.currency, money.received, taken(merchant, operation.id), money.surplus)


def refusal(merchant: Merchant, operation: Operation, money: OperationMoney) -> str | None:
    """Why this operation's money cannot be refunded at all (None: it can). The money of a
    cross exchange's operation goes to the exchange's payout address and never reaches the
    wallet (design §5a): refunding it would pay the customer twice, out of the merchant's own
    money."""
    if money.state is None or not money.state.refundable:
        return "Only an operation that received money can be refunded."
    if cross_exchanges.paying_operations(merchant.id, [operation]):
        return (
            "This operation pays (or, made while a cross exchange's answer was lost, may pay) "
            "for a cross exchange: its money goes to the exchange's payout address, never to "
            "your wallet, so the portal cannot refund it. If the exchange fails, the payment "
            "service sends the money back to the exchange's refund address."
        )
    return None


def needs_owner_approval(
    user: User, address: str | None, currency: str, amount: Decimal
) -> limits.Reason | None:
    """The one rule of approvals for refunds, and why (None: none needed): an address a member
    of staff typed (not the customer's own) waits for an owner when an operator typed it, or
    for another owner when it is above the owners' limits (`portal.money.rules.limits`).
    Raises RefundRefused above the limits when no other owner could approve."""
    if address is None:
        return None
    if user.role is not Role.OWNER:
        return limits.Reason.TYPED_ADDRESS
    return _within_reach(user, currency, amount)


STAFF_ABOVE_LIMITS = (
    "This refund is above the owners' limits: only an owner may ask for it, and another owner "
    "approves it. Nothing was sent."
)


STAFF_NO_RATE = (
    "No fresh rate values this refund against the owners' limits now: ask again after the next "
    "sync reads the rates. Nothing was sent."
)


def within_staff_reach(merchant: Merchant, currency: str, amount: Decimal) -> None:
    """A refund staff asked for goes within the owners' limits only (RefundRefused above
    them, or with no fresh rate to value it): one owner approving it would let money above the
    limits leave with one owner's consent, and any owner can sign in as staff (an owner sets
    their password)."""
    reason = limits.check(merchant, currency, amount).reason
    if reason is limits.Reason.NO_RATE:
        raise RefundRefused(STAFF_NO_RATE)
    if reason is not None:
        raise RefundRefused(STAFF_ABOVE_LIMITS)


def _within_reach(user: User, currency: str, amount: Decimal) -> limits.Reason | None:
    """Why an owner's refund waits for another owner (None: it does not); RefundRefused when
    it is above the limits and no other owner could approve it."""
    reason = limits.check(user.merchant, currency, amount).reason
    if reason is not None and not limits.other_owners(user):
        raise RefundRefused(
            "This refund is above the owners' limits, so another owner must approve it, and "
            f"{limits.NO_OTHER_OWNER}: nothing was sent. {limits.WAY_OUT}"
        )
    return reason


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def request(
    merchant: Merchant,
    user: User,
    operation: Operation,
    money: OperationMoney,
    basis: Basis,
    entered: Decimal | None,
    *,
    address: str | None = None,
    email: str | None = None,
    link: Callable[[str], str],
) -> Refund:
    """Store a refund (its amount given by `basis`, `entered`) and, without an address, its
    claim link (the page at `link(token)`, mailed to the customer's `email`).

    Raises RefundRefused, storing nothing, for an operation with no money to give back, an
    amount above what is left or one that no rate converts. Two requests racing for the same
    money store one: they race for the same `Refund.number`, and the loser reads the refunds
    again before it tries once more.
    """
    refused = refusal(merchant, operation, money)
    if refused:
        raise RefundRefused(refused)
    if not money.received:
        raise RefundRefused(
            "The payment service counts none of this money yet, so it is not in your wallet: "
            "link the late transactions first (the operation stays paid late), then refund."
        )
    conversion = converted(merchant, basis, entered, operation)
    for _attempt in range(ATTEMPTS):
        limits.serialize(merchant)  # the limits read below and the refund stored are one step
        # The number before the amounts: a refund stored after this read takes this number too,
        # so one of the two inserts fails and its request reads the amounts again.
        number = _next_number(merchant, operation.id)
        left = refundable(merchant, operation, money)
        amount = amount_for(basis, entered, left, conversion)
        if amount <= 0:
            raise RefundRefused("Enter an amount above zero.")
        if amount > left.most:
            raise RefundRefused(
                f"At most {money_text(left.most, left.currency)} of this operation can be "
                "refunded: the money counted less what its other refunds take."
            )
        if user.role is not Role.OWNER:
            within_staff_reach(merchant, money.currency, amount)
        elif address is None:
            _within_reach(user, money.currency, amount)  # a claimed one above them will wait
        refund, token = _new(
            merchant, user, operation, number, money.currency, amount, address, email
        )
        if conversion:
            _keep(refund, conversion)
        try:
            db.session.flush()
        except IntegrityError:
            db.session.rollback()  # another request took this number: read the refunds again
            continue
        _event(refund, EventType.REFUND_REQUESTED)
        if token:
            _mail_link(refund, link(token))
        audit.record(
            "refund.request",
            parameters={"operation_id": operation.id, "amount": format(amount, "f")},
        )
        db.session.commit()
        return refund
    raise RefundRefused("Other refunds of this operation are being made: try again.")


def _new(
    merchant: Merchant,
    user: User,
    operation: Operation,
    number: int,
    currency: str,
    amount: Decimal,
    address: str | None,
    email: str | None,
) -> tuple[Refund, str | None]:
    token = None if address else secrets.token_urlsafe(TOKEN_BYTES)
    now = utcnow()
    stage = RefundStage.REQUESTED
    if address:
        stage = (
            RefundStage.AWAITING_APPROVAL
            if needs_owner_approval(user, address, currency, amount)
            else RefundStage.READY
        )
    assert merchant.api_connection is not None  # the operation was read through it
    refund = Refund(
        merchant_id=merchant.id,
        connection_generation=merchant.api_connection.generation,
        operation_id=operation.id,
        number=number,
        user_id=user.id,
        currency=currency,
        amount=amount,
        token_hash=hash_token(token) if token else None,
        token_encrypted=crypto.encrypt(token) if token else None,
        customer_email=email or None,
        address=address,
        typed_by_staff=address is not None,
        stage=stage,
        state=IntentState.PENDING if stage is RefundStage.READY else None,
        created_at=now,
        expires_at=now + timedelta(days=merchant.refund_link_days),
    )
    db.session.add(refund)
    return refund, token


def _keep(refund: Refund, conversion: Conversion) -> None:
    refund.basis = conversion.basis.value
    refund.entered_amount, refund.entered_currency = conversion.entered, conversion.currency
    refund.rate, refund.rate_at = conversion.rate, conversion.at


def reads_link(refund: Refund, user: User) -> bool:
    """Whether `user` may read (and renew) the refund's claim link: an owner, or who asked for
    it. Whoever reads it could claim it with an address of their own, so a refund claimed on a
    link staff other than an owner could read waits for an owner (`approvals.claim_refund`)."""
    return user.role is Role.OWNER or refund.user_id == user.id


def link_token(refund: Refund) -> str | None:
    """The token of the refund's claim link while it waits for the customer's address; None
    once it no longer does (or for a link made before tokens were kept: sending it again makes
    one that is)."""
    if refund.stage is not RefundStage.REQUESTED or not refund.token_encrypted:
        return None
    return crypto.decrypt(refund.token_encrypted)


def set_link_days(merchant: Merchant, days: int) -> None:
    """How long the merchant's new claim links wait for an address (links made keep theirs)."""
    merchant.refund_link_days = days
    audit.record("refund.link_days.change", parameters={"days": days})


def _next_number(merchant: Merchant, operation_id: str) -> int:
    last = db.session.scalar(
        sa.select(sa.func.max(Refund.number)).where(
            Refund.merchant_id == merchant.id, Refund.operation_id == operation_id
        )
    )
    return (last or 0) + 1


def find(merchant: Merchant, refund_id: int) -> Refund | None:
    return db.session.scalar(
        sa.select(Refund).where(Refund.id == refund_id, Refund.merchant_id == merchant.id)
    )


def of_operation(merchant: Merchant, operation_id: str) -> list[Refund]:
    return list(
        db.session.scalars(
            sa.select(Refund)
            .where(Refund.merchant_id == merchant.id, Refund.operation_id == operation_id)
            .order_by(Refund.number)
        )
    )


def by_token(token: str) -> Refund | None:
    """The refund of a claim link; an expired one is marked so first."""
    refund = db.session.scalar(sa.select(Refund).where(Refund.token_hash == hash_token(token)))
    if refund is not None and _expire(refund):
        db.session.refresh(refund)
    return refund


def _expire(refund: Refund) -> bool:
    token = link_token(refund)
    changed = rows_changed(
        sa.update(Refund)
        .where(
            Refund.id == refund.id,
            Refund.stage == RefundStage.REQUESTED,
            Refund.expires_at <= utcnow(),
        )
        .values(stage=RefundStage.EXPIRED, token_encrypted=None, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if changed:
        db.session.refresh(refund)
        _event(refund, EventType.REFUND_EXPIRED)
        _forget_in_mail(token)
    db.session.commit()
    return bool(changed)


def claim(refund: Refund, address: str, *, held: bool = False) -> bool:
    """Give the refund the customer's address, once: True only for the one claim that did; a
    second claim, a double click or a late one changes nothing. A `held` one (above the
    owners' limits) then awaits an approval instead of being sent."""
    token = link_token(refund)
    won = rows_changed(
        sa.update(Refund)
        .where(
            Refund.id == refund.id,
            Refund.stage == RefundStage.REQUESTED,
            Refund.expires_at > utcnow(),
        )
        .values(
            stage=RefundStage.AWAITING_APPROVAL if held else RefundStage.READY,
            state=None if held else IntentState.PENDING,
            address=address,
            token_encrypted=None,
            claimed_at=utcnow(),
            updated_at=utcnow(),
        )
        .execution_options(synchronize_session=False)
    )
    db.session.refresh(refund)
    if won:
        _event(refund, EventType.REFUND_CLAIMED)
        _forget_in_mail(token)
    db.session.commit()
    return bool(won)


def approve(refund: Refund, owner: User) -> bool:
    """An owner's approval (`portal.money.rules.approvals` decided it) lets the refund be sent;
    True when this approval did."""
    assert owner.role is Role.OWNER  # the page allows owners only
    merchant = db.session.get(Merchant, refund.merchant_id)
    assert merchant is not None and merchant.api_connection is not None
    won = _move(
        refund,
        Refund.stage == RefundStage.AWAITING_APPROVAL,
        stage=RefundStage.READY,
        state=IntentState.PENDING,
        approved_by_id=owner.id,
        # Approved, it goes through the connection now, whichever it was asked through.
        connection_generation=merchant.api_connection.generation,
    )
    if won:
        audit.record("refund.approve", parameters={"refund": refund.id})
    db.session.commit()
    return won


UNSENT_STAGES = (RefundStage.REQUESTED, RefundStage.AWAITING_APPROVAL)


def cancelable(refund: Refund) -> bool:
    """Nothing was sent for it, nor is being sent."""
    return refund.stage in UNSENT_STAGES or (
        refund.stage is RefundStage.READY and refund.state is IntentState.PENDING
    )


def cancel_typed_to_unlisted(merchant_id: int | None) -> None:
    """Cancel the refunds ready to be sent to an address someone typed that has left the
    address book since (of one merchant, or of all for the worker): nothing more goes to it."""
    mine = [] if merchant_id is None else [Refund.merchant_id == merchant_id]
    unlisted = db.session.scalars(
        sa.select(Refund).where(
            *mine,
            Refund.typed_by_staff,
            Refund.stage == RefundStage.READY,
            Refund.state == IntentState.PENDING,
            ~BookAddress.lists(Refund.merchant_id, Refund.currency, Refund.address),
        )
    ).all()
    for refund in unlisted:
        cancel(refund)


def cancel(refund: Refund) -> bool:
    """Cancel a refund that nothing was sent for yet (`cancelable`, checked in the same
    statement that cancels, so a worker sending it wins or loses as a whole); True when this
    request did."""
    unsent = sa.or_(
        Refund.stage.in_(UNSENT_STAGES),
        sa.and_(Refund.stage == RefundStage.READY, Refund.state == IntentState.PENDING),
    )
    token = link_token(refund)
    won = _move(refund, unsent, stage=RefundStage.CANCELED, state=None, token_encrypted=None)
    db.session.refresh(refund)
    if won:
        _event(refund, EventType.REFUND_CANCELED)
        _forget_in_mail(token)
        audit.record("refund.cancel", parameters={"refund": refund.id})
    db.session.commit()
    return won


def new_link(refund: Refund, link: Callable[[str], str]) -> bool:
    """A fresh claim link for an unclaimed refund (the old one stops working), valid for the
    merchant's period again and mailed to the customer when their e-mail is known; False when
    the refund is past its claim."""
    old, token = link_token(refund), secrets.token_urlsafe(TOKEN_BYTES)
    days = refund.expires_at - refund.created_at
    won = _move(
        refund,
        Refund.stage == RefundStage.REQUESTED,
        token_hash=hash_token(token),
        token_encrypted=crypto.encrypt(token),
        expires_at=utcnow() + days,
    )
    db.session.refresh(refund)
    if won:
        _forget_in_mail(old)
        _mail_link(refund, link(token))
    db.session.commit()
    return won


def _mail_link(refund: Refund, url: str) -> None:
    """The claim link to the customer, when the merchant gave their e-mail."""
    if refund.customer_email:
        amount = money_text(refund.amount, refund.currency)
        _mail(
            refund,
            f"Your refund of {amount}",
            f"{_shop(refund)} is refunding {amount} to you.\n\n"
            f"Open this link and enter the address to send it to:\n{url}\n\n"
            f"The link works once, until {refund.expires_at:%Y-%m-%d %H:%M} UTC.\n",
        )


def _mail_sent(refund: Refund) -> None:
    if refund.customer_email and refund.sent_at:
        amount = money_text(refund.amount, refund.currency)
        _mail(
            refund,
            f"Your refund of {amount} was sent",
            f"{_shop(refund)} sent your refund of {amount} on "
            f"{refund.sent_at:%Y-%m-%d %H:%M} UTC to the address {refund.address}.\n",
        )


def _shop(refund: Refund) -> str:
    merchant = db.session.get(Merchant, refund.merchant_id)
    assert merchant is not None  # refunds go with their merchant
    return merchant.display_name or merchant.name


def _mail(refund: Refund, subject: str, body: str) -> None:
    """A message to the customer; none without e-mail (a link queued there would stay in the
    database, never sent)."""
    assert refund.customer_email is not None
    if outbox.enabled():
        outbox.queue(refund.customer_email, subject, body)


def _forget_in_mail(token: str | None) -> None:
    """Drop the mails still queued with a claim link that no longer works (a sent mail's body
    is dropped already): they would bring the customer a dead link, and the database keeps no
    link in clear past its life."""
    if token:
        db.session.execute(
            sa.delete(MailMessage)
            .where(
                MailMessage.state == MailState.QUEUED,
                MailMessage.body.contains(token, autoescape=True),
            )
            .execution_options(synchronize_session=False)
        )


def _move(refund: Refund, condition: sa.ColumnElement[bool], **values: object) -> bool:
    return bool(
        rows_changed(
            sa.update(Refund)
            .where(Refund.id == refund.id, condition)
            .values(updated_at=utcnow(), **values)
            .execution_options(synchronize_session=False)
        )
    )


def send_due() -> int:
    """The worker's pass: send each ready refund once; how many this pass sent. One asked
    through an earlier connection (a new token, or another account) is not sent by itself:
    it waits for an owner (`approvals.hold_earlier_connections`), since sent now it could
    leave another account's wallet, for an operation of the first one's."""
    for stranded in idempotency.strand(Refund):  # its process died between claim and answer
        refund = db.session.get(Refund, stranded)
        assert refund is not None
        _event(refund, EventType.REFUND_UNKNOWN)
    db.session.commit()
    cancel_typed_to_unlisted(None)
    ready = list(
        db.session.scalars(
            sa.select(Refund.id).where(
                Refund.stage == RefundStage.READY,
                Refund.state == IntentState.PENDING,
                Refund.connection_generation == generation_now(Refund.merchant_id),
            )
        )
    )
    sent = 0
    for refund_id in ready:
        if shutdown.requested():
            break
        refund = db.session.get(Refund, refund_id)
        if refund is None:
            continue  # gone with its merchant
        merchant = db.session.get(Merchant, refund.merchant_id)
        assert merchant is not None  # refunds go with their merchant
        api = api_client_for(merchant)  # before the claim: a failure here leaves it pending
        listed = BookAddress.lists(Refund.merchant_id, Refund.currency, Refund.address)
        won = idempotency.take_pending(
            Refund, Refund.id == refund_id, sa.or_(~Refund.typed_by_staff, listed)
        )
        db.session.commit()
        if not won:
            continue  # another worker (or a cancel, or the address's removal) took it
        db.session.refresh(refund)
        sent += _send(refund, merchant, api)
    return sent


def of_earlier_connections() -> list[Refund]:
    """The refunds ready to send that were asked through an earlier API connection."""
    return list(
        db.session.scalars(
            sa.select(Refund).where(
                Refund.stage == RefundStage.READY,
                Refund.state == IntentState.PENDING,
                Refund.connection_generation != generation_now(Refund.merchant_id),
            )
        )
    )


def of_earlier_connection(refund: Refund) -> bool:
    """Whether the refund was asked through another API connection than the merchant's now."""
    merchant = db.session.get(Merchant, refund.merchant_id)
    assert merchant is not None
    return not is_current(merchant, refund.connection_generation)


def set_aside(refund: Refund) -> bool:
    """A ready refund now waits for an owner's approval instead; True when this call did."""
    won = _move(
        refund,
        sa.and_(Refund.stage == RefundStage.READY, Refund.state == IntentState.PENDING),
        stage=RefundStage.AWAITING_APPROVAL,
        state=None,
    )
    db.session.refresh(refund)
    return won


def _send(refund: Refund, merchant: Merchant, api: MerchantApiClient) -> int:
    """Send one claimed refund and book it; a lost answer leaves it `unknown`, never resent."""
    assert refund.address is not None  # ready refunds have one
    try:
        # A ready refund always has a state (its `pending` was just taken).
        with idempotency.settling(cast(idempotency.Settled, refund)):
            withdrawal = api.withdraw(refund.amount, refund.currency, refund.address)
            refund.withdrawal_id, refund.fee = withdrawal.id, withdrawal.fee
            refund.sent_at = utcnow()
            ledger.book_refund(merchant, refund, withdrawal, refund.sent_at)
            _event(refund, EventType.REFUND_SENT)
            _mail_sent(refund)
    except ApiFailure:
        failed = _FAILED.get(refund.state) if refund.state else None
        if failed:
            _event(refund, failed)
            db.session.commit()
        return 0
    return 1


_FAILED = {
    IntentState.REFUSED: EventType.REFUND_REFUSED,
    IntentState.UNKNOWN: EventType.REFUND_UNKNOWN,
}


def _event(refund: Refund, type_: EventType) -> None:
    """A refund's event, on its operation's timeline and to the shop's webhooks."""
    events.record(
        refund.merchant_id,
        type_,
        dedup_key=f"refund:{refund.id}:{type_.value}",
        data=refund_record(refund),
        occurred_at=utcnow(),
        operation_id=refund.operation_id,
    )


def refund_record(refund: Refund) -> dict[str, object]:
    """A refund as events and webhooks carry it: decimal strings, no token, no e-mail. It is
    named by its operation and its `number` among the operation's refunds: the portal's own id
    counts every merchant's refunds, which a shop has no business knowing."""
    return {
        "operation_id": refund.operation_id,
        "number": refund.number,
        "amount": format(refund.amount, "f"),
        "currency": refund.currency,
        "address": refund.address,
        "state": state_of(refund),
        "withdrawal_id": refund.withdrawal_id,
        "sent_at": iso_utc(refund.sent_at) if refund.sent_at else None,
    }


def state_of(refund: Refund) -> str:
    """Where the refund stands, in one word a page, an event and the customer share."""
    if refund.stage is not RefundStage.READY or refund.state is None:
        return refund.stage.value
    return {
        IntentState.PENDING: "claimed",
        IntentState.SENDING: "claimed",
        IntentState.SENT: "sent",
        IntentState.REFUSED: "refused",
        IntentState.UNKNOWN: "outcome_unknown",
    }[refund.state]


def expire_due(now: datetime | None = None) -> None:
    """Mark every unclaimed refund past its link's period expired (the worker's pass)."""
    for refund in db.session.scalars(
        sa.select(Refund).where(
            Refund.stage == RefundStage.REQUESTED, Refund.expires_at <= (now or utcnow())
        )
    ):
        _expire(refund)
