"""The figures a person needs where money leaves a wallet, none of which the API tells: what the
wallet holds, the network fee a withdrawal will pay, and what left today against the daily limit
the merchant's owners set themselves.

What a wallet holds is its balance as the portal derives it (`available`: the opening balance
and what the portal saw move since, `portal.money.rules.balances`); the fee is an estimate, the
last one a withdrawal of the currency paid; the day is the UTC day, as the API's own daily
limit counts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa

from portal.database import decimal_sum, utcnow
from portal.extensions import db
from portal.identity.models import Merchant
from portal.money.models import (
    Approval,
    ApprovalState,
    IdempotencyKey,
    IntentKind,
    IntentState,
    LedgerEntry,
    Refund,
    RefundStage,
    WithdrawalIntent,
    WithdrawalLimit,
)
from portal.money.rules import ledger
from portal.money.rules.balances import balance_of
from portal.payments.models import MirroredOperation

ZERO = Decimal(0)
# The category of a withdrawal to an outside address: the only one that pays a network fee.
TRANSFER = "transfer"


@dataclass(frozen=True)
class WalletFigures:
    """One wallet's figures; `available` and `synced_at` are None before the merchant connects,
    `estimated_fee` before any withdrawal with a fee was seen, `daily_limit` when none is set."""

    currency: str
    available: Decimal | None
    synced_at: datetime | None
    estimated_fee: Decimal | None
    withdrawn_today: Decimal
    daily_limit: Decimal | None

    @property
    def left_today(self) -> Decimal | None:
        """What the owner's limit still lets leave today (None: no limit)."""
        if self.daily_limit is None:
            return None
        return max(self.daily_limit - self.withdrawn_today, ZERO)

    @property
    def most(self) -> Decimal | None:
        """The largest amount the wallet can pay out with the estimated fee on top (no less than
        zero); None before the merchant connects."""
        if self.available is None:
            return None
        return max(self.available - (self.estimated_fee or ZERO), ZERO)


def available(merchant: Merchant, currency: str) -> Decimal | None:
    """What the wallet of `currency` holds as far as the portal saw it move (the API tells no
    balance); None without a connection. Every figure of a wallet's balance goes through here."""
    if merchant.api_connection is None:
        return None
    found = balance_of(merchant, currency)
    return found.amount if found is not None else ZERO


def figures(merchant: Merchant, currency: str) -> WalletFigures:
    """Everything the withdrawal form says of the wallet of `currency`."""
    return WalletFigures(
        currency=currency,
        available=available(merchant, currency),
        synced_at=merchant.last_synced_at if merchant.api_connection else None,
        estimated_fee=_last_network_fee(merchant, currency),
        withdrawn_today=withdrawn_today(merchant, currency),
        daily_limit=daily_limit(merchant, currency),
    )


def withdrawn_today(merchant: Merchant, currency: str) -> Decimal:
    """What left the wallet since 00:00 UTC as withdrawals, refunds and vouchers (the owners'
    daily limits count them all): the ledger's (made anywhere, as the mirror saw them), the
    withdrawals and vouchers the portal made that no sync has booked yet (so a second one
    right after a first still counts it), those on their way or whose answer was lost (the
    money may have left), and those approved and the refunds ready to be sent (the worker
    sends them without asking the limits again; a refund is booked as it is sent). Network
    fees and returned vouchers are not in it."""
    midnight = utcnow().replace(hour=0, minute=0, second=0, microsecond=0)
    booked = sa.select(LedgerEntry.operation_id).where(
        *_this_connections(merchant),
        LedgerEntry.kind == ledger.Kind.WITHDRAWAL,
        LedgerEntry.operation_id.is_not(None),
    )
    seen = db.session.scalar(
        sa.select(decimal_sum(LedgerEntry.amount)).where(
            *_this_connections(merchant),
            LedgerEntry.kind.in_(LEAVING),
            LedgerEntry.currency == currency,
            LedgerEntry.occurred_at >= midnight,
        )
    )
    not_booked = db.session.scalar(
        sa.select(decimal_sum(WithdrawalIntent.amount)).where(
            WithdrawalIntent.merchant_id == merchant.id,
            WithdrawalIntent.wallet == currency,
            sa.or_(
                sa.and_(
                    WithdrawalIntent.state.in_(MAY_HAVE_LEFT),
                    WithdrawalIntent.updated_at >= midnight,
                ),
                sa.and_(
                    WithdrawalIntent.state == IntentState.PENDING,
                    _approved(Approval.withdrawal_intent_id == WithdrawalIntent.id),
                ),
            ),
            sa.or_(
                WithdrawalIntent.operation_id.is_(None),
                WithdrawalIntent.operation_id.not_in(booked),
            ),
        )
    )
    return (
        -Decimal(seen or 0)
        + Decimal(not_booked or 0)
        + _vouchers_not_booked(merchant, currency, midnight)
        + _refunds_to_send(merchant, currency, midnight)
    )


# What the owners' daily limits count as money leaving a wallet.
LEAVING = (ledger.Kind.WITHDRAWAL, ledger.Kind.REFUND, ledger.Kind.VOUCHER)
# The states of a request the portal sent, or began to send, whose money may have left.
MAY_HAVE_LEFT = (IntentState.SENDING, IntentState.SENT, IntentState.UNKNOWN)


def _approved(of_it: sa.ColumnElement[bool]) -> sa.Exists:
    """Whether another owner approved it: the worker sends it next, asking no limit again."""
    return sa.exists().where(of_it, Approval.state == ApprovalState.APPROVED)


def _refunds_to_send(merchant: Merchant, currency: str, since: datetime) -> Decimal:
    """The refunds of `currency` approved and not sent yet, and those sent since `since` whose
    answer is awaited or was lost, until the ledger books the withdrawal the API made (the
    mirror ties a lost answer to it). A lost answer stays lost, so it counts on its own day
    only."""
    booked = sa.select(LedgerEntry.key).where(
        *_this_connections(merchant), LedgerEntry.kind == ledger.Kind.REFUND
    )
    total = db.session.scalar(
        sa.select(decimal_sum(Refund.amount)).where(
            Refund.merchant_id == merchant.id,
            Refund.currency == currency,
            Refund.stage == RefundStage.READY,
            sa.or_(
                Refund.state == IntentState.PENDING,
                sa.and_(
                    Refund.state.in_((IntentState.SENDING, IntentState.UNKNOWN)),
                    Refund.updated_at >= since,
                    sa.or_(
                        Refund.withdrawal_id.is_(None),
                        (f"{ledger.Kind.REFUND.value}:" + Refund.withdrawal_id).not_in(booked),
                    ),
                ),
            ),
        )
    )
    return Decimal(total or 0)


def _vouchers_not_booked(merchant: Merchant, currency: str, since: datetime) -> Decimal:
    """The vouchers the portal made, or began to make, since `since` that no sync booked yet,
    and those approved that the worker makes next (their amounts are in the form's parameters,
    as text)."""
    made = db.session.execute(
        sa.select(IdempotencyKey.record_id, IdempotencyKey.parameters).where(
            IdempotencyKey.merchant_id == merchant.id,
            IdempotencyKey.kind == IntentKind.VOUCHER,
            sa.or_(
                sa.and_(
                    IdempotencyKey.state.in_(MAY_HAVE_LEFT), IdempotencyKey.updated_at >= since
                ),
                sa.and_(
                    IdempotencyKey.state == IntentState.PENDING,
                    _approved(Approval.voucher_intent_id == IdempotencyKey.id),
                ),
            ),
        )
    ).all()
    keys = [f"{ledger.Kind.VOUCHER.value}:{record_id}" for record_id, _asked in made]
    booked = set(
        db.session.scalars(
            sa.select(LedgerEntry.key).where(
                *_this_connections(merchant), LedgerEntry.key.in_(keys)
            )
        )
    )
    return sum(
        (
            Decimal(str(asked["amount"]))
            for key, (_id, asked) in zip(keys, made, strict=True)
            if key not in booked and asked.get("currency") == currency
        ),
        ZERO,
    )


def daily_limit(merchant: Merchant, currency: str) -> Decimal | None:
    """The most the owners let leave the wallet per UTC day; None when they set none."""
    return db.session.scalar(
        sa.select(WithdrawalLimit.daily_limit).where(
            WithdrawalLimit.merchant_id == merchant.id, WithdrawalLimit.currency == currency
        )
    )


def _last_network_fee(merchant: Merchant, currency: str) -> Decimal | None:
    """The network fee of the last withdrawal of `currency` to an outside address the ledger
    booked: the API quotes none before a withdrawal is sent."""
    fee = db.session.scalar(
        sa.select(LedgerEntry.amount)
        .join(
            MirroredOperation,
            sa.and_(
                MirroredOperation.merchant_id == LedgerEntry.merchant_id,
                MirroredOperation.operation_id == LedgerEntry.operation_id,
            ),
        )
        .where(
            *_this_connections(merchant),
            LedgerEntry.kind == ledger.Kind.NETWORK_FEE,
            LedgerEntry.currency == currency,
            MirroredOperation.category == TRANSFER,
        )
        .order_by(LedgerEntry.occurred_at.desc(), LedgerEntry.id.desc())
        .limit(1)
    )
    return None if fee is None else -fee


def _this_connections(merchant: Merchant) -> tuple[sa.ColumnElement[bool], ...]:
    """The ledger's rows of the merchant's connection now. What the portal sent counts until
    a row of this connection books it: after a new connection, its first sync books again what
    the one before had, and until then the money that left today must not drop out."""
    connection = merchant.api_connection  # none: no row matches
    return (
        LedgerEntry.merchant_id == merchant.id,
        LedgerEntry.connection_generation == (connection.generation if connection else None),
    )
