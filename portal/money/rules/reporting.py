"""The merchant's reporting currency: the one currency every value of the ledger is given in.

Only a currency the payment service's rates quote against every wallet currency may be chosen:
any other would leave the movements of some wallet without a value. A change values the whole
ledger again, each movement at the rate recorded at its own time, so history reads in the new
currency as if it had always been chosen. The owners' withdrawal limits, kept in the reporting
currency, are converted at the rates of the moment, rounded down: the same number in another
currency would raise them (100 USD read as 100 ETH) with no other owner involved.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

from portal.api import Rates
from portal.extensions import db
from portal.identity.models import Merchant, User
from portal.identity.rules import accounts, audit
from portal.money.models import ControlKind
from portal.money.rules import controls, limits
from portal.money.rules.currencies import (
    AMOUNT_DECIMALS,
    FIAT_DECIMALS,
    WITHDRAWAL_WALLETS,
    is_fiat,
)
from portal.money.rules.ledger import revalue

# The currency a merchant starts with, offered first when the rates quote it.
DEFAULT = "USD"


class NotChoosable(ValueError):
    """The rates do not quote this currency against every wallet currency."""

    def __init__(self, code: str) -> None:
        super().__init__(f"{code} is not quoted against every wallet currency")
        self.code = code


class LimitsNotConvertible(ValueError):
    """No rate converts the owners' limits from the reporting currency to the one chosen."""

    def __init__(self, old: str, new: str) -> None:
        super().__init__(
            f"No rate converts your withdrawal limits from {old} to {new}: remove them, "
            f"change the reporting currency, then set them again in {new}."
        )


@dataclass(frozen=True)
class Revalued:
    """The reporting currency chosen, how many movements were valued in it, and how many of
    them found no rate recorded at their time."""

    currency: str
    valued: int
    without_rate: int
    limits_converted: bool = False


def choosable(rates: Rates) -> list[str]:
    """The currencies `rates` quote against every wallet currency (a pair either way; a wallet
    is quoted against itself): the default first, then by code."""
    quoted: dict[str, set[str]] = {}
    for base, quote in rates:
        quoted.setdefault(base, {base}).add(quote)
        quoted.setdefault(quote, {quote}).add(base)
    return sorted(
        (code for code, against in quoted.items() if against.issuperset(WITHDRAWAL_WALLETS)),
        key=lambda code: (code != DEFAULT, code),
    )


def change_reporting_currency(merchant: Merchant, code: str, user: User, rates: Rates) -> Revalued:
    """Make `code` the merchant's reporting currency and value its ledger again (the movements
    of its current connection); NotChoosable, with nothing changed, when `rates` (the payment
    service's, read just before) do not allow it. The change is in the audit log."""
    if code not in choosable(rates):
        raise NotChoosable(code)
    old = merchant.reporting_currency
    _converted_limits(merchant, old, code, rates)  # LimitsNotConvertible before any change
    if old != code:
        controls.supersede(user, ControlKind.LIMITS)
    db.session.commit()
    accounts.lock_merchant(merchant.id)  # the limits converted are those in force from now on
    converted = _converted_limits(merchant, old, code, rates)
    merchant.reporting_currency = code
    if converted is not None:
        limits.set_limits(merchant, *converted)
    valued = without_rate = 0
    connection = merchant.api_connection
    if connection is not None:
        valued, without_rate = revalue(merchant.id, connection.generation, code)
    audit.record(
        "reporting_currency.change",
        parameters={"old": old, "new": code, "valued": valued, "without_rate": without_rate},
        user=user,
    )
    return Revalued(code, valued, without_rate, converted is not None)


def _converted_limits(
    merchant: Merchant, old: str, new: str, rates: Rates
) -> tuple[Decimal | None, Decimal | None] | None:
    """The merchant's limits in `old` as worth no more in `new`; None when there are none to
    convert. Those still waiting, asked in `old`, are canceled by the caller."""
    before = (merchant.limit_per_withdrawal, merchant.limit_per_day)
    if old == new or before == (None, None):
        return None
    price = _price(rates, old, new)
    if price is None:
        raise LimitsNotConvertible(old, new)
    smallest = Decimal(1).scaleb(-(FIAT_DECIMALS if is_fiat(new) else AMOUNT_DECIMALS))
    per_withdrawal, per_day = (
        None if limit is None else (limit * price).quantize(smallest, ROUND_FLOOR)
        for limit in before
    )
    return per_withdrawal, per_day


def _price(rates: Rates, base: str, quote: str) -> Decimal | None:
    """One `base` in `quote`: the pair, one over the reverse pair, or else the lowest through
    a wallet currency quoted against both (a limit converted with it is worth the least)."""
    direct = _direct(rates, base, quote)
    if direct is not None:
        return direct
    through = [
        price_in_quote / price_in_base
        for wallet in WITHDRAWAL_WALLETS
        if (price_in_base := _direct(rates, wallet, base))
        and (price_in_quote := _direct(rates, wallet, quote)) is not None
    ]
    return min(through, default=None)


def _direct(rates: Rates, base: str, quote: str) -> Decimal | None:
    if (base, quote) in rates:
        return rates[base, quote]
    return 1 / rates[quote, base] if rates.get((quote, base)) else None
