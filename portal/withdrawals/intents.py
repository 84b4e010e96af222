"""One-time withdrawal intents: however many confirmations arrive, one request goes upstream.

The guarantee lives in the database, so it holds across threads and gunicorn workers: `claim`
moves a `pending` intent to `sending` with a conditional UPDATE, and only the request whose
UPDATE changed the row sends it. The request is never retried: an answer that never came leaves
the intent `unknown`, to be checked in the operations list.
"""

from __future__ import annotations

import secrets
from decimal import Decimal

import sqlalchemy as sa

from portal import audit
from portal.api import ApiError, ApiUnavailable, MerchantApiClient
from portal.explain import explain
from portal.extensions import db
from portal.models import IntentState, Merchant, User, WithdrawalIntent, utcnow


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


def claim(intent: WithdrawalIntent, user: User) -> bool:
    """Move the intent from pending to sending; True only for the one caller that did it."""
    result = db.session.execute(
        sa.update(WithdrawalIntent)
        .where(WithdrawalIntent.id == intent.id, WithdrawalIntent.state == IntentState.PENDING)
        .values(state=IntentState.SENDING, user_id=user.id, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    db.session.commit()
    db.session.refresh(intent)
    return result.rowcount == 1


def send(intent: WithdrawalIntent, api: MerchantApiClient) -> None:
    """Send a claimed intent once and keep the outcome on it (and in the audit log).

    Re-raises the API's failure for the page to explain. A request that surely never left
    (connection refused) puts the intent back to pending, so the person may confirm again.
    """
    parameters = {"amount": intent.amount, "wallet": intent.wallet, "address": intent.address}
    try:
        with audit.recorded("withdrawal.confirm", parameters) as details:
            operation = api.withdraw(intent.amount, intent.wallet, intent.address)
            details["operation_id"] = operation.id
    except ApiUnavailable as error:
        intent.state = IntentState.UNKNOWN if error.request_sent else IntentState.PENDING
        intent.error_message = error.describe()
        raise
    except ApiError as error:
        intent.state = IntentState.REFUSED
        intent.error_code, intent.error_message = error.code, explain(error)
        raise
    else:
        intent.state = IntentState.SENT
        intent.operation_id, intent.operation_status = operation.id, operation.status
        intent.error_code = intent.error_message = None
    finally:
        db.session.commit()
