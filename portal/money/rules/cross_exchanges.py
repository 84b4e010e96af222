"""The ids of the cross exchanges each merchant created through the portal, the operations
their sold currency is paid to, and the addresses that were entered for them."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import sqlalchemy as sa

from portal.api import CrossExchange, Operation
from portal.extensions import db
from portal.identity.models import Merchant, User
from portal.money.models import CrossExchangeReference, IdempotencyKey, IntentKind, IntentState
from portal.money.rules.idempotency import while_under_way

LOOKUP_CHUNK = 500  # operation ids named in one statement


def remember(merchant: Merchant, user: User, cross_exchange: CrossExchange) -> None:
    db.session.add(
        CrossExchangeReference(
            merchant_id=merchant.id,
            cross_exchange_id=cross_exchange.id,
            operation_id=cross_exchange.operation_id,
            user_id=user.id,
            sell_currency=cross_exchange.sell_currency,
            buy_currency=cross_exchange.buy_currency,
            sell_amount=cross_exchange.sell_amount,
            buy_amount=cross_exchange.buy_amount,
        )
    )
    db.session.commit()


def look_up(merchant: Merchant, user: User, cross_exchange: CrossExchange) -> None:
    """A cross exchange of the merchant's looked up by its id: kept in the portal's list when
    it was not, and the sending whose answer was lost that may have made it (the same sold
    currency and amount, asked as it was made) now knows it did: its operation is then told
    apart from the sales of the same amount made in those minutes."""
    known = db.session.scalar(
        sa.select(CrossExchangeReference.id).where(
            CrossExchangeReference.merchant_id == merchant.id,
            CrossExchangeReference.cross_exchange_id == cross_exchange.id,
        )
    )
    if known is not None:
        return
    for key in _lost_answers(merchant.id):
        asked = key.parameters
        if key.record_id == cross_exchange.id or (
            key.state is not IntentState.SENT
            and asked.get("sell_currency") == cross_exchange.sell_currency
            and asked.get("sell_amount") is not None
            and Decimal(asked["sell_amount"]) == cross_exchange.sell_amount
            and while_under_way(key, cross_exchange.created_at)
        ):
            key.state, key.record_id = IntentState.SENT, cross_exchange.id
            break
    remember(merchant, user, cross_exchange)


def of(merchant: Merchant) -> sa.Select:
    """The merchant's cross exchanges, newest first."""
    return (
        sa.select(CrossExchangeReference)
        .where(CrossExchangeReference.merchant_id == merchant.id)
        .order_by(CrossExchangeReference.created_at.desc(), CrossExchangeReference.id.desc())
    )


def paying_operations(merchant_id: int, operations: Sequence[Operation]) -> set[str]:
    """Which of these operations take (or may take) the sold currency of one of the merchant's
    cross exchanges: their money goes to the exchange's payout address, never to the wallet.
    The API lists no cross exchanges, so the portal knows those whose answer arrived, and of
    those whose answer was lost the currency, the amount and when they were asked."""
    operation_ids = [operation.id for operation in operations]
    found = _lost_answers_operations(merchant_id, operations)
    for start in range(0, len(operation_ids), LOOKUP_CHUNK):
        found.update(
            db.session.scalars(
                sa.select(CrossExchangeReference.operation_id).where(
                    CrossExchangeReference.merchant_id == merchant_id,
                    CrossExchangeReference.operation_id.in_(
                        operation_ids[start : start + LOOKUP_CHUNK]
                    ),
                )
            )
        )
    return found


def entered_addresses(merchant: Merchant, cross_exchange_id: str) -> dict[str, str] | None:
    """The sell and buy addresses entered in the portal's form for this cross exchange (the
    API does not answer them); None for one made elsewhere."""
    parameters = db.session.scalar(
        sa.select(IdempotencyKey.parameters).where(
            IdempotencyKey.merchant_id == merchant.id,
            IdempotencyKey.kind == IntentKind.CROSS_EXCHANGE,
            IdempotencyKey.record_id == cross_exchange_id,
        )
    )
    if not parameters:
        return None
    return {key: parameters[key] for key in ("sell_address", "buy_address") if key in parameters}


def _lost_answers_operations(merchant_id: int, operations: Sequence[Operation]) -> set[str]:
    """The operations that may pay for a cross exchange whose answer was lost: in its sold
    currency and amount, made while its request was under way."""
    lost = _lost_answers(merchant_id)
    return {
        operation.id for operation in operations for key in lost if _may_have_made(key, operation)
    }


def _lost_answers(merchant_id: int) -> list[IdempotencyKey]:
    """The merchant's cross exchanges asked whose answer the portal does not hold: lost, still
    `sending` (its process may have died before the answer), or made but not in the list yet
    (the list is written after the key is settled, in a commit of its own)."""
    listed = sa.select(CrossExchangeReference.cross_exchange_id).where(
        CrossExchangeReference.merchant_id == merchant_id
    )
    return list(
        db.session.scalars(
            sa.select(IdempotencyKey).where(
                IdempotencyKey.merchant_id == merchant_id,
                IdempotencyKey.kind == IntentKind.CROSS_EXCHANGE,
                sa.or_(
                    IdempotencyKey.state.in_((IntentState.UNKNOWN, IntentState.SENDING)),
                    sa.and_(
                        IdempotencyKey.state == IntentState.SENT,
                        IdempotencyKey.record_id.not_in(listed),
                    ),
                ),
            )
        )
    )


def _may_have_made(key: IdempotencyKey, operation: Operation) -> bool:
    """Whether the cross exchange `key` asked for may have made `operation`: in its sold
    currency and amount, made while it was asked. One asked by the amount bought names no
    amount to pay, and would take every sale of the currency in those minutes: it takes none."""
    asked = key.parameters
    amount = asked.get("sell_amount")
    return (
        amount is not None
        and operation.currency == asked.get("sell_currency")
        and Decimal(amount) == operation.amount
        and while_under_way(key, operation.created_at)
    )
