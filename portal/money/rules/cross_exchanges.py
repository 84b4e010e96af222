"""The ids of the cross exchanges each merchant created through the portal, the operations
their sold currency is paid to, and the addresses that were entered for them."""

from __future__ import annotations

import sqlalchemy as sa

from portal.api import CrossExchange
from portal.extensions import db
from portal.identity.models import Merchant, User
from portal.money.models import CrossExchangeReference, IdempotencyKey, IntentKind

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


def of(merchant: Merchant) -> sa.Select:
    """The merchant's cross exchanges, newest first."""
    return (
        sa.select(CrossExchangeReference)
        .where(CrossExchangeReference.merchant_id == merchant.id)
        .order_by(CrossExchangeReference.created_at.desc(), CrossExchangeReference.id.desc())
    )


def paying_operations(merchant_id: int, operation_ids: list[str]) -> set[str]:
    """Which of these operations take the sold currency of one of the merchant's cross
    exchanges: their money goes to the exchange's payout address, never to the wallet."""
    found: set[str] = set()
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
