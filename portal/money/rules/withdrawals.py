"""One-time withdrawal intents: however many confirmations arrive, one request goes upstream.

A reviewed form is a `pending` intent; confirming claims and settles it through
`portal.money.rules.idempotency` (a conditional UPDATE that one confirmation wins; never retried,
`unknown` after a lost answer). An intent held for another owner's approval
(`portal.money.rules.approvals`) is claimed by the worker once approved, never by a
confirmation.
"""

from __future__ import annotations

import secrets
from decimal import Decimal

import sqlalchemy as sa

from portal.api import MerchantApiClient
from portal.extensions import db
from portal.identity.models import Merchant, User
from portal.identity.rules import audit
from portal.money.models import (
    Approval,
    ApprovalState,
    BookAddress,
    IntentState,
    WithdrawalIntent,
)
from portal.money.rules import idempotency


def create(merchant: Merchant, user: User, amount: Decimal, wallet: str, address: str) -> str:
    """A pending intent for a reviewed form; returns its unguessable key."""
    intent = WithdrawalIntent(
        key=secrets.token_urlsafe(24),
        merchant_id=merchant.id,
        user_id=user.id,
        amount=amount,
        wallet=wallet,
        address=address,
        state=IntentState.PENDING,
    )
    db.session.add(intent)
    db.session.commit()
    return intent.key


def find(merchant: Merchant, key: str) -> WithdrawalIntent | None:
    return db.session.scalar(
        sa.select(WithdrawalIntent).where(
            WithdrawalIntent.key == key, WithdrawalIntent.merchant_id == merchant.id
        )
    )


def confirmed(merchant: Merchant) -> sa.Select:
    """The merchant's confirmed withdrawals (whatever their outcome), newest first."""
    return (
        sa.select(WithdrawalIntent)
        .where(
            WithdrawalIntent.merchant_id == merchant.id,
            WithdrawalIntent.state != IntentState.PENDING,
        )
        .order_by(WithdrawalIntent.updated_at.desc(), WithdrawalIntent.id.desc())
    )


def claim(intent: WithdrawalIntent, user: User | None, *, approved: bool = False) -> bool:
    """Move the intent from pending to sending; True only for the one caller that did it.

    A confirmation (`approved` False) claims only an intent no approval holds; the worker
    (`approved` True) only one another owner approved, to an address still in the address
    book: the same statement checks it."""
    held = sa.exists().where(Approval.withdrawal_intent_id == WithdrawalIntent.id)
    if approved:
        held = held.where(Approval.state == ApprovalState.APPROVED)
    listed = BookAddress.lists(
        WithdrawalIntent.merchant_id, WithdrawalIntent.wallet, WithdrawalIntent.address
    )
    won = idempotency.take_pending(
        WithdrawalIntent,
        WithdrawalIntent.id == intent.id,
        sa.and_(held, listed) if approved else ~held,
        user_id=user.id if user else None,
    )
    db.session.commit()
    db.session.refresh(intent)
    return won


def send(
    intent: WithdrawalIntent,
    api: MerchantApiClient,
    parameters: dict[str, object] | None = None,
) -> None:
    """Send a claimed intent once and keep the outcome on it (and in the audit log, with
    `parameters` when given: an approved one names both people).

    Re-raises the API's failure for the page to explain. A request that surely never left
    (connection refused) puts the intent back to pending, so the person may confirm again.
    """
    parameters = {
        "amount": intent.amount,
        "wallet": intent.wallet,
        "address": intent.address,
        **(parameters or {}),
    }
    with (
        idempotency.settling(intent),
        audit.recorded("withdrawal.confirm", parameters) as details,
    ):
        operation = api.withdraw(intent.amount, intent.wallet, intent.address)
        details["operation_id"] = operation.id
        intent.operation_id, intent.operation_status = operation.id, operation.status
        intent.fee = operation.fee  # only now known: the API tells no fee before sending
