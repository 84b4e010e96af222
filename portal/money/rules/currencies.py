"""The currencies the portal knows, and what it knows of each: crypto or fiat, its decimals,
the shape of its addresses.

Every form, formatting function and rule that needs one of these facts reads it here. The API
names BTC, ETH and USD (section 2.5); USDT is an ERC-20 token on Ethereum. Which of them have
wallets, pairs or limits is the API's to say, in its error codes. The sandbox keeps its own
copy (it never imports the portal); tests/money/test_currency_facts.py holds the two together.
The API names no network (mainnet or testnet), so the portal links hashes and addresses to a
block explorer only where the operator named one for the connection's environment and the
currency (`PORTAL_EXPLORER_URLS`, `explorer_url`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal
from urllib.parse import quote

# The most decimals an amount of the API has, in any currency: amounts are sent with at most
# these, and an amount due in a crypto currency is rounded to them.
AMOUNT_DECIMALS = 8
# The smallest amount the API writes.
SMALLEST_AMOUNT = Decimal(1).scaleb(-AMOUNT_DECIMALS)
# Cents: the decimals every amount of a fiat currency is written with.
FIAT_DECIMALS = 2


@dataclass(frozen=True)
class AddressShape:
    """How an address on one blockchain looks; `described` completes "Enter …" when a typed
    address does not fit."""

    described: str
    patterns: tuple[re.Pattern[str], ...]

    def fits(self, address: str) -> bool:
        return any(pattern.fullmatch(address) for pattern in self.patterns)


BITCOIN_ADDRESS = AddressShape(
    "a Bitcoin address: it starts with 1, 3 or bc1 (2, m, n or tb1 on testnet)",
    (
        re.compile(r"[13mn2][1-9A-HJ-NP-Za-km-z]{25,34}"),  # base58
        re.compile(r"(bc1|tb1|bcrt1)[02-9ac-hj-np-z]{11,71}"),  # bech32, lower case
    ),
)
ETHEREUM_ADDRESS = AddressShape(
    "an Ethereum address: 0x followed by 40 hexadecimal digits",
    (re.compile(r"0x[0-9a-fA-F]{40}"),),
)


@dataclass(frozen=True)
class Currency:
    """A currency the portal knows. A crypto currency lives on a blockchain: it is paid,
    withdrawn and paid out to an address of its `address` shape. A fiat currency is never paid
    on a blockchain: an operation may be priced in it, the customer pays in a crypto one."""

    code: str
    crypto: bool
    address: AddressShape | None = None

    @property
    def decimals(self) -> int:
        """A fiat currency's cents; a crypto currency's amounts go to the API's decimals."""
        return AMOUNT_DECIMALS if self.crypto else FIAT_DECIMALS


# The API's currencies, in the order the forms offer them.
API_CURRENCIES = (
    Currency("BTC", crypto=True, address=BITCOIN_ADDRESS),
    Currency("ETH", crypto=True, address=ETHEREUM_ADDRESS),
    Currency("USDT", crypto=True, address=ETHEREUM_ADDRESS),  # an ERC-20 token
    Currency("USD", crypto=False),
)
# Fiat currencies the rates of a payment service may list besides: never offered in a form, but
# known as fiat, so that nobody is asked to pay in them and their amounts show cents.
OTHER_FIAT_CURRENCIES = (Currency("EUR", crypto=False), Currency("GBP", crypto=False))
KNOWN = {currency.code: currency for currency in (*API_CURRENCIES, *OTHER_FIAT_CURRENCIES)}
CURRENCY_CODES = tuple(currency.code for currency in API_CURRENCIES)
# A withdrawal goes to a blockchain address, so it leaves from a crypto currency's wallet only:
# USD has no address to send to.
WITHDRAWAL_WALLETS = tuple(currency.code for currency in API_CURRENCIES if currency.crypto)


def exchange_currencies(pairs: Iterable[tuple[str, str]]) -> set[str]:
    """The currencies the payment service's exchange rates name (`/v1/exchange/rates`): those it
    exchanges, and so holds wallets of, for exchanges and vouchers alike."""
    return {code for pair in pairs for code in pair}


def is_fiat(code: str | None) -> bool:
    """Whether `code` is a fiat currency the portal knows. An unknown code counts as crypto:
    the payment service adds coins, not fiat money, and it refuses what it cannot be paid in."""
    currency = KNOWN.get(code or "")
    return currency is not None and not currency.crypto


def least_decimals(code: str | None) -> int:
    """The decimals an amount of `code` always shows: a fiat currency's cents; none for a
    crypto currency or an unknown code, whose amounts show the decimals they have."""
    currency = KNOWN.get(code or "")
    return currency.decimals if currency and not currency.crypto else 0


def address_shape(code: str | None) -> AddressShape | None:
    """The shape of an address in `code`; None when the portal knows none (fiat, unknown)."""
    currency = KNOWN.get(code or "")
    return currency.address if currency else None


def money(amount: Decimal | None, currency: str | None = None, *, rounded: bool = False) -> str:
    """An amount for a page or a mail, with its currency: `1,250.00 USD`, `0.1 BTC`, `12,000 USDT`.

    Thousands separators; a fiat currency's cents at least, otherwise the decimals the amount
    has without trailing zeros (`least_decimals`). Never rounded, unless `rounded`: a value
    worked out at a rate (in a reporting currency) has more decimals than anyone paid, and is
    shown to the currency's own (cents for a fiat currency), half up.
    """
    if amount is None:
        return "—"
    known = KNOWN.get(currency or "")
    if rounded and known is not None and amount.is_finite():
        amount = amount.quantize(Decimal(1).scaleb(-known.decimals), ROUND_HALF_UP)
    text = _grouped(amount, least_decimals(currency))
    return f"{text} {currency}" if currency else text


def _grouped(amount: Decimal, least: int) -> str:
    """The amount's digits with thousands separators; its decimals without trailing zeros,
    but at least `least` of them."""
    if not amount.is_finite():
        return str(amount)
    whole, _, decimals = format(amount, ",f").partition(".")
    decimals = decimals.rstrip("0").ljust(least, "0")
    return f"{whole}.{decimals}" if decimals else whole


# What a block explorer shows: a transaction (by its hash) or an address.
ExplorerKind = Literal["tx", "address"]
# `PORTAL_EXPLORER_URLS`: environment, then currency, then kind, to a URL with `{}` where the
# hash or address goes, e.g. {"production": {"BTC": {"tx": "https://mempool.space/tx/{}"}}}.
ExplorerUrls = Mapping[str, Mapping[str, Mapping[str, str]]]


def explorer_url(
    urls: ExplorerUrls, environment: str, currency: str | None, kind: ExplorerKind, value: str
) -> str | None:
    """The block explorer's page of a hash or an address, or None where no template is set:
    the sandbox (its hashes and addresses are on no chain) unless the operator named one, and
    any currency, kind or environment left out. The value is quoted into one path segment."""
    template = urls.get(environment, {}).get(currency or "", {}).get(kind)
    if not template or not value:
        return None
    return template.replace("{}", quote(value, safe=""))
