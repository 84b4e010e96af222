"""The exchanges each merchant made through the portal.

The API never shows an exchange again (it has no list and no read endpoint), so what it answered
when the exchange was made is kept: the one place an accountant can read past exchanges.
"""

from __future__ import annotations

from decimal import Decimal

import sqlalchemy as sa

from portal.api import Exchange, MerchantApiClient
from portal.database import utcnow
from portal.extensions import db
from portal.identity.models import Merchant, User
from portal.money.models import ExchangeRecord
from portal.money.rules import ledger


def make(
    api: MerchantApiClient,
    merchant: Merchant,
    user: User,
    sell_currency: str,
    buy_currency: str,
    sell_amount: Decimal | None,
    buy_amount: Decimal | None,
) -> Exchange:
    """Make the exchange, keep the answer and book what it moved in the ledger, added to the
    caller's transaction: sending under its idempotency key (`idempotency.settling`) commits
    them with the key's outcome."""
    made = api.create_exchange(sell_currency, buy_currency, sell_amount, buy_amount)
    answered_at = utcnow()
    record = ExchangeRecord(
        merchant_id=merchant.id,
        exchange_id=made.id,
        user_id=user.id,
        # The documentation shows none of the answer's fields: what was asked fills the gaps.
        sell_currency=made.sell_currency or sell_currency,
        buy_currency=made.buy_currency or buy_currency,
        sell_amount=made.sell_amount if made.sell_amount is not None else sell_amount,
        buy_amount=made.buy_amount if made.buy_amount is not None else buy_amount,
        rate=made.rate,
        fee=made.fee,
        status=made.status,
        created_at=made.created_at or answered_at,
    )
    db.session.add(record)
    ledger.book_exchange(merchant, record, answered_at)
    return made


def made_by(merchant: Merchant) -> sa.Select:
    """The merchant's exchanges made through the portal, newest first."""
    return (
        sa.select(ExchangeRecord)
        .where(ExchangeRecord.merchant_id == merchant.id)
        .order_by(ExchangeRecord.created_at.desc(), ExchangeRecord.id.desc())
    )
