"""The currencies the sandbox knows, their wallets' limits, market rates and address shapes."""

from __future__ import annotations

import math
import re
import secrets
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from . import db


@dataclass(frozen=True)
class Currency:
    code: str
    crypto: bool
    usd_price: Decimal
    opening_balance: Decimal = Decimal(0)
    network_fee: Decimal = Decimal(0)
    withdrawal_daily_limit: Decimal = Decimal(0)
    exchange_limit: Decimal = Decimal(0)
    exchange_minimum: Decimal = Decimal(0)


CURRENCIES: dict[str, Currency] = {
    c.code: c
    for c in (
        Currency(
            "BTC",
            True,
            Decimal(65000),
            Decimal(25),
            Decimal("0.0001"),
            Decimal(10),
            Decimal(5),
            Decimal("0.0001"),
        ),
        Currency(
            "ETH",
            True,
            Decimal(3200),
            Decimal(400),
            Decimal("0.001"),
            Decimal(200),
            Decimal(100),
            Decimal("0.001"),
        ),
        Currency(
            "USDT",
            True,
            Decimal(1),
            Decimal(1_000_000),
            Decimal(1),
            Decimal(500_000),
            Decimal(250_000),
            Decimal(1),
        ),
        Currency("USD", False, Decimal(1)),
    )
}
CRYPTO = tuple(code for code, c in CURRENCIES.items() if c.crypto)
EXCHANGE_SPREAD = Decimal("0.01")
DRIFT = Decimal("0.005")

_BASE58 = re.compile(r"[13mn2][1-9A-HJ-NP-Za-km-z]{25,34}")
_BECH32 = re.compile(r"(bc1|tb1)[02-9ac-hj-np-z]{11,71}")
_HEX_ADDRESS = re.compile(r"0x[0-9a-fA-F]{40}")
_BECH32_CHARSET = "023456789acdefghjklmnpqrstuvwxyz"


def is_valid_address(currency: str, address: str) -> bool:
    """Shape check per chain: BTC base58 or bech32, ETH and ERC-20 tokens 0x + 40 hex."""
    if currency == "BTC":
        return bool(_BASE58.fullmatch(address) or _BECH32.fullmatch(address))
    if currency in ("ETH", "USDT"):
        return bool(_HEX_ADDRESS.fullmatch(address))
    return False


def new_address(currency: str, chooser=secrets.choice) -> str:
    """A fresh testnet-looking address for a payment in `currency`."""
    if currency == "BTC":
        return "tb1q" + "".join(chooser(_BECH32_CHARSET) for _ in range(38))
    return "0x" + "".join(chooser("0123456789abcdef") for _ in range(40))


def _drift_factor(code: str, now: float) -> Decimal:
    """A deterministic drift of at most ±0.5 %, changing once a minute, out of step per currency."""
    minute = int(now // 60)
    phase = list(CURRENCIES).index(code)
    return 1 + DRIFT * Decimal(str(round(math.sin(minute / 7 + phase), 6)))


def drifting_prices(now: float) -> dict[str, Decimal]:
    """The USD price of every currency at `now` on the drifting market (USD and USDT stay put)."""
    return {
        code: currency.usd_price
        if code in ("USD", "USDT")
        else currency.usd_price * _drift_factor(code, now)
        for code, currency in CURRENCIES.items()
    }


def market_prices(connection: sqlite3.Connection | None = None) -> dict[str, Decimal]:
    """The USD price of every currency now: the prices a tester froze, else the drifting market."""
    return db.frozen_prices(connection) or drifting_prices(time.time())


def market_rate(base: str, quote: str, prices: Mapping[str, Decimal] | None = None) -> Decimal:
    """Price of one unit of `base` in `quote`, to 8 decimal places, from `prices` (one reading
    of the market, so that many rates agree) or the market now."""
    if base == quote:
        return Decimal(1)
    if prices is None:
        prices = market_prices()
    return (prices[base] / prices[quote]).quantize(Decimal("1e-8"))


def exchange_rate(sell: str, buy: str, prices: Mapping[str, Decimal] | None = None) -> Decimal:
    """What one unit of `sell` buys in an exchange: the market rate less the spread."""
    return (market_rate(sell, buy, prices) * (1 - EXCHANGE_SPREAD)).quantize(Decimal("1e-8"))


def market_pairs() -> list[tuple[str, str]]:
    return [(b, q) for b in CURRENCIES for q in CURRENCIES if b != q]


def exchange_pairs() -> list[tuple[str, str]]:
    return [(b, q) for b in CRYPTO for q in CRYPTO if b != q]
