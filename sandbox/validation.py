"""Checks of request bodies: each check records a Laravel-style message per field, then `done()`
raises one code 9 error naming every bad field at once."""

from __future__ import annotations

import json
from decimal import Decimal
from urllib.parse import urlsplit

from flask import request

from . import money
from .currencies import CURRENCIES, is_valid_address
from .errors import ApiError, validation_error

MAX_TEXT = 255
MAX_URL = 2048


def json_body() -> dict:
    """The request's JSON object; an empty body counts as `{}`."""
    raw = request.get_data(cache=True)
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw, parse_float=Decimal)
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise validation_error("body", "The body must be valid JSON.") from error
    if not isinstance(body, dict):
        raise validation_error("body", "The body must be a JSON object.")
    return body


class BodyCheck:
    """Validates the fields of one JSON body."""

    def __init__(self, body: dict) -> None:
        self.body = body
        self.errors: dict[str, list[str]] = {}

    def fail(self, field: str, message: str) -> None:
        self.errors.setdefault(field, []).append(message)

    def _present(self, field: str, required: bool) -> bool:
        value = self.body.get(field)
        if value is None or value == "":
            if required:
                self.fail(field, f"The {field} field is required.")
            return False
        return True

    def text(self, field: str, *, required: bool = True, max_length: int = MAX_TEXT) -> str | None:
        if not self._present(field, required):
            return None
        value = self.body[field]
        if not isinstance(value, str):
            self.fail(field, f"The {field} must be a string.")
            return None
        if not value.strip():
            self.fail(field, f"The {field} field is required.")
            return None
        if len(value) > max_length:
            self.fail(field, f"The {field} may not be greater than {max_length} characters.")
            return None
        return value

    def amount(self, field: str, *, required: bool = True) -> Decimal | None:
        if not self._present(field, required):
            return None
        try:
            return money.parse_amount(self.body[field])
        except ValueError as error:
            self.fail(field, f"The {field} {error}.")
            return None

    def currency(self, field: str, *, required: bool = True) -> str | None:
        value = self.text(field, required=required, max_length=16)
        if value is not None and value not in CURRENCIES:
            self.fail(field, f"The selected {field} is invalid.")
            return None
        return value

    def url(self, field: str) -> str | None:
        value = self.text(field, required=False, max_length=MAX_URL)
        if value is None:
            return None
        try:
            parts = urlsplit(value)
            host = parts.hostname
        except ValueError:
            host = None
        if (
            host is None
            or parts.scheme not in ("http", "https")
            or any(ch.isspace() or not ch.isprintable() for ch in value)
        ):
            self.fail(field, f"The {field} must be a valid URL.")
            return None
        return value

    def address(self, field: str, currency: str | None) -> str | None:
        value = self.text(field, max_length=128)
        if value is None or currency is None or not CURRENCIES[currency].crypto:
            return value
        if not is_valid_address(currency, value):
            self.fail(field, f"The {field} is not a valid {currency} address.")
            return None
        return value

    def id_list(self, field: str, *, max_items: int = 100) -> list[str] | None:
        if not self._present(field, True):
            return None
        value = self.body[field]
        if not isinstance(value, list) or not value:
            self.fail(field, f"The {field} must be a non-empty array.")
            return None
        if len(value) > max_items:
            self.fail(field, f"The {field} may not have more than {max_items} items.")
            return None
        if not all(isinstance(item, str) and item and len(item) <= 128 for item in value):
            self.fail(field, f"Each {field} item must be a non-empty string.")
            return None
        return value

    def one_amount_of(self, first: str, second: str) -> tuple[Decimal | None, Decimal | None]:
        """Exactly one of two amount fields, as exchanges and cross exchanges require."""
        given = [f for f in (first, second) if self.body.get(f) not in (None, "")]
        if len(given) == 2:
            self.fail(second, f"Give either {first} or {second}, not both.")
            return None, None
        if not given:
            self.fail(first, f"The {first} field is required when {second} is not present.")
            return None, None
        return self.amount(first, required=False), self.amount(second, required=False)

    def done(self) -> None:
        if self.errors:
            raise ApiError(9, errors=self.errors)
