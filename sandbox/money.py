"""Exact decimal amounts: parsed from strings, stored as integer units, printed with 8 places.

The sandbox keeps every amount, fee and rate as an integer count of 10^-8 so that SQLite sorts and
compares them exactly; nothing ever passes through a float.
"""

from __future__ import annotations

import re
from decimal import (
    ROUND_CEILING,
    ROUND_FLOOR,
    ROUND_HALF_UP,
    Decimal,
    InvalidOperation,
    localcontext,
)

PLACES = 8
SCALE = 10**PLACES
QUANTUM = Decimal(1).scaleb(-PLACES)
MAX_AMOUNT = Decimal(1_000_000_000)
# SQLite integers are 64-bit: a bound beyond every storable amount is clamped, which keeps
# the comparison exact because no stored amount comes near.
SQLITE_MIN, SQLITE_MAX = -(2**63), 2**63 - 1
MAX_NUMBER_LENGTH = 100

_AMOUNT = re.compile(r"[0-9]+(\.[0-9]{1,8})?")
_BOUND = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def parse_amount(value: object, *, allow_zero: bool = False) -> Decimal:
    """A request amount: a string holding a positive plain decimal with at most 8 places."""
    if not isinstance(value, str):
        raise ValueError("must be a string holding a decimal number")
    if len(value) > MAX_NUMBER_LENGTH or not _AMOUNT.fullmatch(value):
        raise ValueError("must be a decimal number with at most 8 decimal places")
    amount = Decimal(value)
    if amount < 0 or (amount == 0 and not allow_zero):
        raise ValueError("must be greater than 0")
    if amount > MAX_AMOUNT:
        raise ValueError(f"may not be greater than {MAX_AMOUNT}")
    return amount


def parse_bound(value: str) -> Decimal:
    """A list filter bound: any plain decimal, signs and long fractions allowed."""
    if len(value) > MAX_NUMBER_LENGTH or not _BOUND.fullmatch(value):
        raise ValueError("must be a number")
    return Decimal(value)


def to_units(amount: Decimal, rounding: str = ROUND_HALF_UP) -> int:
    """Integer count of 10^-8, rounded as asked; exact for any number of digits we accept."""
    with localcontext() as context:
        context.prec = 2 * MAX_NUMBER_LENGTH
        return int((amount * SCALE).to_integral_value(rounding=rounding))


def _storable(units: int) -> int:
    return min(max(units, SQLITE_MIN), SQLITE_MAX)


def lower_bound_units(bound: Decimal) -> int:
    """Smallest unit count that is >= bound."""
    return _storable(to_units(bound, ROUND_CEILING))


def upper_bound_units(bound: Decimal) -> int:
    """Largest unit count that is <= bound."""
    return _storable(to_units(bound, ROUND_FLOOR))


def from_units(units: int) -> Decimal:
    return Decimal(units).scaleb(-PLACES)


def format_units(units: int | None) -> str | None:
    """The wire form: a string with exactly 8 decimal places, or None."""
    if units is None:
        return None
    return format(from_units(units).quantize(QUANTUM), "f")


def quantize(amount: Decimal, rounding: str = ROUND_HALF_UP) -> Decimal:
    try:
        return amount.quantize(QUANTUM, rounding=rounding)
    except InvalidOperation as error:  # pragma: no cover - guarded by MAX_AMOUNT
        raise ValueError("amount out of range") from error
