"""The API's error codes (the table of docs/sandbox.md) and the sandbox's error body."""

from __future__ import annotations

from flask import Response, jsonify

ERRORS: dict[int, tuple[int, str]] = {
    0: (400, "Something went wrong"),
    1: (410, "Deprecated action"),
    2: (401, "Unauthenticated"),
    3: (403, "Application banned"),
    4: (403, "Company banned"),
    5: (404, "Operation not found"),
    6: (404, "Transaction not found"),
    7: (400, "Operation not created"),
    8: (400, "Cancel not allowed (operation)"),
    9: (422, "Validation errors"),
    10: (415, "Unsupported Content Type"),
    11: (400, "Withdrawal is not allowed"),
    12: (400, "Withdrawal limit"),
    13: (400, "Not found available wallets for withdrawal"),
    14: (404, "Voucher Not Found"),
    15: (400, "Voucher not created"),
    16: (400, "Cancel not allowed (voucher)"),
    17: (400, "Unable to pay off voucher"),
    18: (404, "Cross Exchange Not Found"),
    19: (400, "Cross Exchange not created"),
    20: (400, "Cancel of cross exchange not allowed"),
    21: (400, "Exchange pair not available"),
    22: (400, "Exceeded the number of exchange operations"),
    23: (400, "Currency exchange has been limited"),
    24: (400, "Available wallet for exchange was not found"),
    25: (400, "Exchange not created"),
}

OPERATION_NOT_FOUND = 5
TRANSACTION_NOT_FOUND = 6
VOUCHER_NOT_FOUND = 14
CROSS_EXCHANGE_NOT_FOUND = 18


class ApiError(Exception):
    """An error answer: raised anywhere in a request, rendered by the app's error handler."""

    def __init__(
        self,
        code: int,
        *,
        errors: dict[str, list[str]] | None = None,
        message: str | None = None,
    ) -> None:
        default_status, default_message = ERRORS[code]
        super().__init__(message or default_message)
        self.code = code
        self.http_status = default_status
        self.message = message or default_message
        self.errors = errors

    def response(self) -> Response:
        body: dict = {"code": self.code, "message": self.message}
        if self.code == 9:
            body["errors"] = self.errors or {}
        response = jsonify(body)
        response.status_code = self.http_status
        return response


def validation_error(field: str, message: str) -> ApiError:
    return ApiError(9, errors={field: [message]})
