"""Conversions between Python values and the API's wire forms, in both directions.

Money never passes through a float: JSON numbers are read as `Decimal`, amounts are sent as
plain decimal strings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation

# C0 and C1 control characters and DEL; tab, line feed and carriage return are text. NUL among
# them cannot even be stored by PostgreSQL: such text is no answer a page may show or keep.
CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# Nor can a lone surrogate (the JSON escape "\ud800" without its pair): no UTF-8 database
# encodes it, and the insert that tries fails.
UNSTORABLE_CHARACTER = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")


class MalformedAnswer(ValueError):
    """A success answer whose body is not what the contract promises."""


# The most digits an amount or rate may have before and after its point. Real amounts and rates
# need far fewer; the bound keeps a hostile `1E+999999999`, a finite Decimal, from becoming a
# billion digits when a page or an export writes it out.
MAX_DIGITS_EACH_SIDE = 30


def parse_json(content: bytes) -> object:
    """Decode a JSON body with every non-integer number as `Decimal` and no NaN/Infinity."""
    return json.loads(content, parse_float=Decimal, parse_constant=_reject_constant)


def _reject_constant(name: str) -> object:
    raise MalformedAnswer(f"{name} is not a number")


def to_text(value: object) -> str:
    """A string field without control characters or lone surrogates; integer ids are accepted
    too."""
    if isinstance(value, str):
        # Printable ASCII, as most texts are, holds neither: no search needed.
        if not (value.isascii() and value.isprintable()) and UNSTORABLE_CHARACTER.search(value):
            raise MalformedAnswer(f"a control character or lone surrogate in {value!r}")
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise MalformedAnswer(f"expected a string, got {value!r}")


def to_int(value: object) -> int:
    """An integer field (page numbers, counts); digit strings are accepted too."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    raise MalformedAnswer(f"expected an integer, got {value!r}")


def to_bool(value: object) -> bool:
    """A boolean field; 0 and 1 are accepted too."""
    if isinstance(value, bool):
        return value
    if value in (0, 1):
        return bool(value)
    raise MalformedAnswer(f"expected a boolean, got {value!r}")


def to_decimal(value: object) -> Decimal:
    """An amount or rate: a decimal string (the contract) or a JSON number."""
    # A tuple, not `str | int | Decimal`: the union would be built on every call (a page of 100
    # operations reads some 500 amounts).
    if isinstance(value, bool) or not isinstance(value, (str, int, Decimal)):
        raise MalformedAnswer(f"expected a decimal number, got {value!r}")
    try:
        number = Decimal(value.strip() if isinstance(value, str) else value)
    except InvalidOperation:
        raise MalformedAnswer(f"expected a decimal number, got {value!r}") from None
    if not number.is_finite():
        raise MalformedAnswer(f"expected a finite number, got {value!r}")
    if _short_plain_text(value):
        return number  # the usual amount: its few digits are all there is to write
    if not _plainly_writable(number):
        raise MalformedAnswer(
            f"a number with more than {MAX_DIGITS_EACH_SIDE} digits before or after its point"
        )
    return number


def _short_plain_text(value: object) -> bool:
    """A text of at most MAX_DIGITS_EACH_SIDE characters without an exponent: no side of its
    point can have more digits (a page of 50 operations reads some 200 amounts)."""
    return (
        isinstance(value, str)
        and len(value) <= MAX_DIGITS_EACH_SIDE
        and "e" not in value
        and "E" not in value
    )


def _plainly_writable(number: Decimal) -> bool:
    """Written out in plain digits, the number fits MAX_DIGITS_EACH_SIDE on each side of the point.

    Decided from the exponent and digit count alone: writing the number out is the cost avoided.
    """
    _sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # finite numbers only
    whole_digits = len(digits) + exponent
    return whole_digits <= MAX_DIGITS_EACH_SIDE and -exponent <= MAX_DIGITS_EACH_SIDE


def to_datetime(value: object) -> datetime:
    """An ISO 8601 timestamp as an aware UTC datetime; a timestamp without offset is UTC."""
    if not isinstance(value, str):
        raise MalformedAnswer(f"expected a timestamp, got {value!r}")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise MalformedAnswer(f"expected a timestamp, got {value!r}") from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def encode_amount(value: Decimal | int | str) -> str:
    """An amount for a request body: a plain decimal string, never an exponent or a float."""
    if isinstance(value, float | bool):
        raise TypeError(f"amounts are Decimal, not {type(value).__name__}")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"not a decimal amount: {value!r}") from None
    if not number.is_finite():
        raise ValueError(f"not a finite amount: {value!r}")
    return format(number, "f")


def encode_query(filters: Mapping[str, object], allowed: Iterable[str]) -> dict[str, str]:
    """List filters as query parameters; a name the endpoint does not take is a TypeError."""
    unknown = sorted(set(filters) - set(allowed))
    if unknown:
        raise TypeError(f"unknown filter(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    return {name: _query_value(value) for name, value in filters.items() if value is not None}


def _query_value(value: object) -> str:
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        return ",".join(_query_value(item) for item in items)
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, datetime):
        raise TypeError("date filters take a date, not a datetime")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal | int):
        return encode_amount(value)
    if isinstance(value, str):
        return value
    raise TypeError(f"cannot send {type(value).__name__} as a filter value")
