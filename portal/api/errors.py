"""The API's failures as exceptions, read from whatever error body the API sends.

The contract does not show the error body, so the reader accepts every shape listed in
design.md section 5 and falls back to the HTTP status. The raw body is kept for the logs only.
"""

from __future__ import annotations

import json

from portal.api.wire import CONTROL_CHARACTER

# Section 7 of the API documentation, word for word.
# The codes the portal acts on by name (the whole table is ERROR_MESSAGES).
NOT_FOUND_OPERATION = 5
NOT_FOUND_TRANSACTION = 6
VALIDATION_ERROR = 9
NOT_FOUND_VOUCHER = 14
NOT_FOUND_CROSS_EXCHANGE = 18

ERROR_MESSAGES: dict[int, str] = {
    0: "Something went wrong",
    1: "Deprecated action",
    2: "Unauthenticated",
    3: "Application banned",
    4: "Company banned",
    5: "Operation not found",
    6: "Transaction not found",
    7: "Operation not created",
    8: "Cancel not allowed (operation)",
    9: "Validation errors",
    10: "Unsupported Content Type",
    11: "Withdrawal is not allowed",
    12: "Withdrawal limit",
    13: "Not found available wallets for withdrawal",
    14: "Voucher Not Found",
    15: "Voucher not created",
    16: "Cancel not allowed (voucher)",
    17: "Unable to pay off voucher",
    18: "Cross Exchange Not Found",
    19: "Cross Exchange not created",
    20: "Cancel of cross exchange not allowed",
    21: "Exchange pair not available",
    22: "Exceeded the number of exchange operations",
    23: "Currency exchange has been limited",
    24: "Available wallet for exchange was not found",
    25: "Exchange not created",
}

# Codes implied by an HTTP status when the body carries none; 404 depends on the resource.
_CODE_BY_STATUS = {401: 2, 410: 1, 415: 10, 422: 9}
_RAW_LIMIT = 10_000


class ApiError(Exception):
    """The API refused a request: `code` is the API's error code (0-25)."""

    def __init__(
        self,
        code: int,
        message: str | None = None,
        *,
        http_status: int | None = None,
        errors: dict[str, list[str]] | None = None,
        raw: str | None = None,
    ) -> None:
        self.code = code
        self.message = message or ERROR_MESSAGES.get(code, ERROR_MESSAGES[0])
        self.http_status = http_status
        self.errors = errors or {}
        self.raw = raw[:_RAW_LIMIT] if raw is not None else None
        super().__init__(self.message)

    def describe(self) -> str:
        """A sentence for the user: the documented message of the code, never the raw body."""
        if self.code == 1:
            return "This action is no longer supported"
        return ERROR_MESSAGES.get(self.code, ERROR_MESSAGES[0])

    def __str__(self) -> str:
        status = f", HTTP {self.http_status}" if self.http_status is not None else ""
        return f"{self.message} (code {self.code}{status})"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code}, http_status={self.http_status}, "
            f"message={self.message!r}, errors={self.errors!r})"
        )


class ApiUnavailable(ApiError):
    """The API could not be reached or answered garbage; the portal answers 504 or 502.

    `request_sent` is True when the request may have reached the server: the outcome of a
    POST or PUT is then unknown and must be checked before trying again.
    """

    def __init__(
        self,
        message: str,
        *,
        timeout: bool = False,
        request_sent: bool = False,
        http_status: int | None = None,
        raw: str | None = None,
    ) -> None:
        super().__init__(0, message, http_status=http_status, raw=raw)
        self.timeout = timeout
        self.request_sent = request_sent

    def describe(self) -> str:
        if self.timeout:
            return "The payment service did not answer in time. Try again in a moment."
        return "The payment service is unavailable. Try again in a moment."

    def __repr__(self) -> str:
        return (
            f"ApiUnavailable(message={self.message!r}, http_status={self.http_status}, "
            f"timeout={self.timeout}, request_sent={self.request_sent})"
        )


def error_from_answer(http_status: int, raw: str, not_found_code: int = 0) -> ApiError:
    """The exception for a non-2xx answer; `not_found_code` is the code a bare 404 means."""
    if not 400 <= http_status < 500:
        return ApiUnavailable(
            f"The API answered HTTP {http_status}",
            timeout=http_status == 504,
            request_sent=True,
            http_status=http_status,
            raw=raw,
        )
    body = _error_body(raw)
    code = _code(body.get("code"))
    if code is None:
        code = not_found_code if http_status == 404 else _CODE_BY_STATUS.get(http_status, 0)
    message = body.get("message")
    message = _printable(message) if isinstance(message, str) else ""
    return ApiError(
        code,
        message if message.strip() else None,
        http_status=http_status,
        errors=_field_errors(body.get("errors")),
        raw=raw,
    )


def _error_body(raw: str) -> dict[str, object]:
    """The error object: top level or nested under `error`; {} for a body that is not one."""
    try:
        body = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(body, dict):
        return {}
    nested = body.get("error")
    return nested if isinstance(nested, dict) else body


def _code(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _field_errors(value: object) -> dict[str, list[str]]:
    """`{"field": ["message", ...]}`; a single message per field is accepted too."""
    if not isinstance(value, dict):
        return {}
    return {
        _printable(name): [
            _printable(m) for m in (messages if isinstance(messages, list) else [messages])
        ]
        for name, messages in value.items()
    }


def _printable(value: object) -> str:
    """The API's words without control characters: they are shown, audited and stored."""
    return CONTROL_CHARACTER.sub("", str(value))
