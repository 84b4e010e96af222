"""The merchant's reporting currency: the one currency every value of the ledger is given in.

Only a currency the payment service's rates quote against every wallet currency may be chosen:
any other would leave the movements of some wallet without a value. A change values the whole
ledger again, each movement at the rate recorded at its own time, so history reads in the new
currency as if it had always been chosen.
"""

from __future__ import annotations

from dataclasses import dataclass

from portal.api import Rates
from portal.identity.models import Merchant, User
from portal.identity.rules import audit
from portal.money.rules.currencies import WITHDRAWAL_WALLETS
from portal.money.rules.ledger import revalue

# The currency a merchant starts with, offered first when the rates quote it.
DEFAULT = "USD"


class NotChoosable(ValueError):
    """The rates do not quote this currency against every wallet currency."""

    def __init__(self, code: str) -> None:
        super().__init__(f"{code} is not quoted against every wallet currency")
        self.code = code


@dataclass(frozen=True)
class Revalued:
    """The reporting currency chosen, how many movements were valued in it, and how many of
    them found no rate recorded at their time."""

    currency: str
    valued: int
    without_rate: int


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
    merchant.reporting_currency = code
    valued = without_rate = 0
    connection = merchant.api_connection
    if connection is not None:
        valued, without_rate = revalue(merchant.id, connection.generation, code)
    audit.record(
        "reporting_currency.change",
        parameters={"old": old, "new": code, "valued": valued, "without_rate": without_rate},
        user=user,
    )
    return Revalued(code, valued, without_rate)
