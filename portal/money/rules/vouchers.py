"""Vouchers paid off through the portal."""

from __future__ import annotations

from portal.api import MerchantApiClient, Voucher
from portal.database import utcnow
from portal.identity.models import Merchant
from portal.money.rules import ledger


def pay_off(api: MerchantApiClient, merchant: Merchant, code: str) -> Voucher:
    """Pay off the voucher of `code` and book the amount it gives to its currency's wallet, at
    the moment the API answered, added to the caller's transaction: the mirror cannot tell a
    payoff made here from one made elsewhere, which moves nothing the portal sees."""
    voucher = api.pay_off_voucher(code)
    ledger.book_payoff(merchant, voucher, utcnow())
    return voucher
