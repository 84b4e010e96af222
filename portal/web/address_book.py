"""Why money may not go to a typed address, in words: the withdrawal and refund pages say it
the same way (the rule, `portal.money.rules.address_book`, decides)."""

from __future__ import annotations

from portal.identity.models import Merchant
from portal.money.rules import address_book


def not_in_book(merchant: Merchant, currency: str, address: str) -> str | None:
    """Why money of `currency` may not go to `address` now (None: it may)."""
    found = address_book.place(merchant, currency, address)
    if found.standing is address_book.Standing.UNKNOWN:
        return (
            f"This {currency} address is not in the address book: an owner adds it under "
            "Address book first, and money may go to it once its cooling-off ends."
        )
    if found.standing is address_book.Standing.COOLING:
        assert found.entry is not None
        return (
            f"This address ({found.entry.name}) is new in the address book: money may go to it "
            f"from {found.entry.usable_from:%Y-%m-%d %H:%M} UTC, or earlier if another owner "
            "approves it."
        )
    return None
