"""The API's failures as exceptions, read from whatever error body the API sends, and its error
codes by name.

The API does not document its error body, so the reader accepts every shape the client
tolerates (docs/sandbox.md) and falls back to the HTTP status. The raw body is kept for the logs
only.
"""

from __future__ import annotations

import json
from enum import IntEnum

from portal.api.wire import CONTROL_CHARACTER


class ErrorCode(IntEnum):
    """The API's documented error codes (docs/sandbox.md): the portal names them here only.

    A code the documentation does not list reads as SOMETHING_WENT_WRONG.
    """

    SOMETHING_WENT_WRONG = 0
    DEPRECATED_ACTION = 1
    UNAUTHENTICATED = 2
    APPLICATION_BANNED = 3
    COMPANY_BANNED = 4
    OPERATION_NOT_FOUND = 5
    TRANSACTION_NOT_FOUND = 6
    OPERATION_NOT_CREATED = 7
    OPERATION_CANCEL_NOT_ALLOWED = 8
    VALIDATION_ERRORS = 9
    UNSUPPORTED_CONTENT_TYPE = 10
    WITHDRAWAL_NOT_ALLOWED = 11
    WITHDRAWAL_LIMIT = 12
    NO_WALLET_FOR_WITHDRAWAL = 13
    VOUCHER_NOT_FOUND = 14
    VOUCHER_NOT_CREATED = 15
    VOUCHER_CANCEL_NOT_ALLOWED = 16
    VOUCHER_NOT_PAID_OFF = 17
    CROSS_EXCHANGE_NOT_FOUND = 18
    CROSS_EXCHANGE_NOT_CREATED = 19
    CROSS_EXCHANGE_CANCEL_NOT_ALLOWED = 20
    EXCHANGE_PAIR_NOT_AVAILABLE = 21
    EXCHANGE_COUNT_EXCEEDED = 22
    EXCHANGE_LIMITED = 23
    NO_WALLET_FOR_EXCHANGE = 24
    EXCHANGE_NOT_CREATED = 25

    @classmethod
    def _missing_(cls, value: object) -> ErrorCode:
        return cls.SOMETHING_WENT_WRONG


# The API's documented message of each code, word for word: for logs and the audit log, not for
# people (the web kit says what a code means to them).
DOCUMENTED_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.SOMETHING_WENT_WRONG: "Something went wrong",
    ErrorCode.DEPRECATED_ACTION: "Deprecated action",
    ErrorCode.UNAUTHENTICATED: "Unauthenticated",
    ErrorCode.APPLICATION_BANNED: "Application banned",
    ErrorCode.COMPANY_BANNED: "Company banned",
    ErrorCode.OPERATION_NOT_FOUND: "Operation not found",
    ErrorCode.TRANSACTION_NOT_FOUND: "Transaction not found",
    ErrorCode.OPERATION_NOT_CREATED: "Operation not created",
    ErrorCode.OPERATION_CANCEL_NOT_ALLOWED: "Cancel not allowed (operation)",
    ErrorCode.VALIDATION_ERRORS: "Validation errors",
    ErrorCode.UNSUPPORTED_CONTENT_TYPE: "Unsupported Content Type",
    ErrorCode.WITHDRAWAL_NOT_ALLOWED: "Withdrawal is not allowed",
    ErrorCode.WITHDRAWAL_LIMIT: "Withdrawal limit",
    ErrorCode.NO_WALLET_FOR_WITHDRAWAL: "Not found available wallets for withdrawal",
    ErrorCode.VOUCHER_NOT_FOUND: "Voucher Not Found",
    ErrorCode.VOUCHER_NOT_CREATED: "Voucher not created",
    ErrorCode.VOUCHER_CANCEL_NOT_ALLOWED: "Cancel not allowed (voucher)",
    ErrorCode.VOUCHER_NOT_PAID_OFF: "Unable to pay off voucher",
    ErrorCode.CROSS_EXCHANGE_NOT_FOUND: "Cross Exchange Not Found",
    ErrorCode.CROSS_EXCHANGE_NOT_CREATED: "Cross Exchange not created",
    ErrorCode.CROSS_EXCHANGE_CANCEL_NOT_ALLOWED: "Cancel of cross exchange not allowed",
    ErrorCode.EXCHANGE_PAIR_NOT_AVAILABLE: "Exchange pair not available",
    ErrorCode.EXCHANGE_COUNT_EXCEEDED: "Exceeded the number of exchange operations",
    ErrorCode.EXCHANGE_LIMITED: "Currency exchange has been limited",
    ErrorCode.NO_WALLET_FOR_EXCHANGE: "Available wallet for exchange was not found",
    ErrorCode.EXCHANGE_NOT_CREATED: "Exchange not created",
}

# Codes implied by an HTTP status when the body carries none; 404 depends on the resource.
_CODE_BY_STATUS = {
    401: ErrorCode.UNAUTHENTICATED,
    410: ErrorCode.DEPRECATED_ACTION,
    415: ErrorCode.UNSUPPORTED_CONTENT_TYPE,
    422: ErrorCode.VALIDATION_ERRORS,
}
_RAW_LIMIT = 10_000


class ApiFailure(Exception):
    """A call to the API that did not succeed: refused (`ApiRefusal`) or without a usable answer
    (`ApiUnavailable`). Code that treats both alike catches this; the two are never confused."""

    def __init__(
        self, message: str, *, http_status: int | None = None, raw: str | None = None
    ) -> None:
        self.message = message
        self.http_status = http_status
        self.raw = raw[:_RAW_LIMIT] if raw is not None else None  # for the logs only
        super().__init__(message)


class ApiRefusal(ApiFailure):
    """The API answered and refused: `code` says why, `errors` which fields (code 9)."""

    def __init__(
        self,
        code: int,
        message: str | None = None,
        *,
        http_status: int | None = None,
        errors: dict[str, list[str]] | None = None,
        raw: str | None = None,
    ) -> None:
        self.code = ErrorCode(code)
        self.errors = errors or {}
        super().__init__(
            message or DOCUMENTED_MESSAGES[self.code], http_status=http_status, raw=raw
        )

    def __str__(self) -> str:
        status = f", HTTP {self.http_status}" if self.http_status is not None else ""
        return f"{self.message} (code {self.code.value}{status})"

    def __repr__(self) -> str:
        return (
            f"ApiRefusal(code={self.code.value}, http_status={self.http_status}, "
            f"message={self.message!r}, errors={self.errors!r})"
        )


class ApiUnavailable(ApiFailure):
    """The API could not be reached, did not answer in time, or answered garbage.

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
        super().__init__(message, http_status=http_status, raw=raw)
        self.timeout = timeout
        self.request_sent = request_sent

    def __repr__(self) -> str:
        return (
            f"ApiUnavailable(message={self.message!r}, http_status={self.http_status}, "
            f"timeout={self.timeout}, request_sent={self.request_sent})"
        )


def error_from_answer(
    http_status: int, raw: str, not_found_code: ErrorCode = ErrorCode.SOMETHING_WENT_WRONG
) -> ApiFailure:
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
    return ApiRefusal(
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
