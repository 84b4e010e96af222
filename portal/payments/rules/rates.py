"""The rates as the pages use them: table rows and the currencies they know."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from portal.api import Rates
from portal.live.rules.events import current_generation
from portal.money.rules import rate_history


def currencies_of(rates: Rates) -> list[str]:
    """Every currency that appears in a pair of the rates, sorted."""
    return sorted({code for pair in rates for code in pair})


def rate_rows(rates: Rates) -> list[tuple[str, str, Decimal]]:
    """(base, quote, rate) sorted by pair, for the rates tables."""
    return [(base, quote, rate) for (base, quote), rate in sorted(rates.items())]


@dataclass(frozen=True)
class RatesRead:
    """Rates and the moment they were read (last seen, for rates recorded by the mirror)."""

    rates: Rates
    at: datetime | None


def recorded_rates(merchant_id: int) -> RatesRead:
    """The rates the mirror last recorded for the merchant's connection (none before its first
    sync): what the rates page shows while the API does not answer."""
    record = rate_history.latest(merchant_id, current_generation(merchant_id))
    if record is None:
        return RatesRead({}, None)
    rates: Rates = {}
    for pair, price in record.rates.items():
        base, _, quote = pair.partition(":")
        rates[base, quote] = Decimal(price)
    return RatesRead(rates, record.last_seen_at)
