"""The rates as the pages use them: table rows and the currencies they know."""

from __future__ import annotations

from decimal import Decimal

from portal.api import Rates


def currencies_of(rates: Rates) -> list[str]:
    """Every currency that appears in a pair of the rates, sorted."""
    return sorted({code for pair in rates for code in pair})


def rate_rows(rates: Rates) -> list[tuple[str, str, Decimal]]:
    """(base, quote, rate) sorted by pair, for the rates tables."""
    return [(base, quote, rate) for (base, quote), rate in sorted(rates.items())]
