"""What an exchange would give at the current exchange rates, before the payment service's fee.

The API quotes no exchange and reports the fee only in the exchange it made, so a quote is the
pair's rate applied to the one amount given: the other amount is approximate.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_UP, Decimal, localcontext

from portal.api import Rates

PLACES = 8
STEP = Decimal(1).scaleb(-PLACES)


@dataclass(frozen=True)
class Quote:
    sell_currency: str
    buy_currency: str
    sell_amount: Decimal
    buy_amount: Decimal
    rate: Decimal
    sell_fixed: bool  # the sell amount was given (the buy amount is the approximate one)


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
    sell_fixed = sell_amount is not None
    given = sell_amount if sell_fixed else buy_amount
    if given is None:
        return None
    with localcontext() as context:
        # Room for every digit of the other amount to 8 places, however large the amount typed:
        # the default 28 digits would make quantize fail.
        context.prec = max(context.prec, given.adjusted() + abs(rate.adjusted()) + PLACES + 4)
        if sell_fixed:
            sell, buy = given, (given * rate).quantize(STEP, rounding=ROUND_DOWN)
        else:
            sell, buy = (given / rate).quantize(STEP, rounding=ROUND_UP), given
    return Quote(sell_currency, buy_currency, sell, buy, rate, sell_fixed)
