"""What each of the API's error codes means to a person, and what to do about it: the one table
every page and command uses (the API's own words are for the logs, `DOCUMENTED_MESSAGES`)."""

from __future__ import annotations

from portal.api import ErrorCode

# What each code means to the person who sees it, and what to do about it.
ERROR_MESSAGES: dict[ErrorCode, str] = {
    ErrorCode.SOMETHING_WENT_WRONG: "The payment service failed to do this. Try again in a moment.",
    ErrorCode.DEPRECATED_ACTION: "The payment service no longer supports this action or this "
    "version of its API (error 1).",
    ErrorCode.UNAUTHENTICATED: "The payment service rejected the application token (error 2, "
    "unauthenticated). Check the token.",
    ErrorCode.APPLICATION_BANNED: "The payment service says the application is banned (error 3).",
    ErrorCode.COMPANY_BANNED: "The payment service says the company is banned (error 4).",
    ErrorCode.OPERATION_NOT_FOUND: "The payment service has no operation with this id for your "
    "merchant.",
    ErrorCode.TRANSACTION_NOT_FOUND: "The payment service has no transaction with this id for "
    "your merchant.",
    ErrorCode.OPERATION_NOT_CREATED: "The payment service did not create the operation. Check the "
    "details and try again.",
    ErrorCode.OPERATION_CANCEL_NOT_ALLOWED: "The payment service did not allow the cancellation "
    "(error 8, cancel not allowed): only a new operation, before it is paid, expires or is "
    "canceled, can be canceled.",
    ErrorCode.VALIDATION_ERRORS: "The payment service did not accept these details. Check them "
    "and try again.",
    ErrorCode.UNSUPPORTED_CONTENT_TYPE: "The payment service did not understand the request "
    "(error 10). Nothing was done.",
    ErrorCode.WITHDRAWAL_NOT_ALLOWED: "Withdrawals are switched off for your account at the "
    "payment service. Contact the payment service to have them allowed.",
    ErrorCode.WITHDRAWAL_LIMIT: "This withdrawal is above what the wallet can pay out now: the "
    "balance (including the network fee) or today's withdrawal limit would be exceeded. Try a "
    "smaller amount, or try again tomorrow.",
    ErrorCode.NO_WALLET_FOR_WITHDRAWAL: "There is no wallet in this currency that can pay out. "
    "Choose another wallet.",
    ErrorCode.VOUCHER_NOT_FOUND: "There is no voucher with this id.",
    ErrorCode.VOUCHER_NOT_CREATED: "The voucher could not be created: the wallet of this currency "
    "does not hold enough funds, or there is no such wallet.",
    ErrorCode.VOUCHER_CANCEL_NOT_ALLOWED: "This voucher can no longer be canceled: it has been "
    "paid off, canceled or has expired.",
    ErrorCode.VOUCHER_NOT_PAID_OFF: "No voucher can be paid off with this code: it does not "
    "exist, was canceled, has expired or was already paid off.",
    ErrorCode.CROSS_EXCHANGE_NOT_FOUND: "There is no cross exchange with this id.",
    ErrorCode.CROSS_EXCHANGE_NOT_CREATED: "The cross exchange could not be created: the amount "
    "is below the minimum for this currency. Try a larger amount.",
    ErrorCode.CROSS_EXCHANGE_CANCEL_NOT_ALLOWED: "This cross exchange can no longer be canceled: "
    "it has been paid, canceled or has expired.",
    ErrorCode.EXCHANGE_PAIR_NOT_AVAILABLE: "This pair of currencies cannot be exchanged. Choose "
    "another pair.",
    ErrorCode.EXCHANGE_COUNT_EXCEEDED: "You have reached today's number of exchanges. Try again "
    "tomorrow.",
    ErrorCode.EXCHANGE_LIMITED: "This amount is above what can be exchanged in one go for this "
    "currency. Try a smaller amount.",
    ErrorCode.NO_WALLET_FOR_EXCHANGE: "There is no wallet for one of these currencies. Choose "
    "currencies you hold.",
    ErrorCode.EXCHANGE_NOT_CREATED: "The exchange could not be made: the amount is below the "
    "minimum, or above what the wallet holds.",
}


def error_message(code: int) -> str:
    """What the error code means to a person (codes the API does not document read as 0)."""
    return ERROR_MESSAGES[ErrorCode(code)]
