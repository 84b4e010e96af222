"""What an exchange would give at the current exchange rates, before any fee."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_UP, Decimal

from portal.api import Rates

STEP = Decimal("0.00000001")


@dataclass(frozen=True)
class Quote:
    sell_currency: str
    buy_currency: str
    sell_amount: Decimal
    buy_amount: Decimal
    rate: Decimal


def quote(
    rates: Rates,
    sell_currency: str,
    buy_currency: str,
    sell_amount: Decimal | None = None,
    buy_amount: Decimal | None = None,
) -> Quote | None:
    """The other amount at the pair's rate, rounded in the service's favour; None without a rate."""
    rate = rates.get((sell_currency, buy_currency))
    if not rate:
        return None
    if sell_amount is not None:
        buy_amount = (sell_amount * rate).quantize(STEP, rounding=ROUND_DOWN)
    elif buy_amount is not None:
        sell_amount = (buy_amount / rate).quantize(STEP, rounding=ROUND_UP)
    else:
        return None
    return Quote(sell_currency, buy_currency, sell_amount, buy_amount, rate)
