"""Client of the Merchant API v1: the only code of the portal that speaks HTTP to the API."""

from portal.api.client import ENVIRONMENT_PREFIXES, MerchantApiClient, mask_token
from portal.api.errors import (
    ERROR_MESSAGES,
    NOT_FOUND_CROSS_EXCHANGE,
    NOT_FOUND_OPERATION,
    NOT_FOUND_TRANSACTION,
    NOT_FOUND_VOUCHER,
    VALIDATION_ERROR,
    ApiError,
    ApiUnavailable,
)
from portal.api.records import (
    OPERATION_STATUSES,
    TRANSACTION_STATUSES,
    VOUCHER_STATUSES,
    CrossExchange,
    Exchange,
    Identified,
    Operation,
    Page,
    Rates,
    Transaction,
    Voucher,
)
from portal.api.session import make_session

__all__ = [
    "ENVIRONMENT_PREFIXES",
    "ERROR_MESSAGES",
    "NOT_FOUND_CROSS_EXCHANGE",
    "NOT_FOUND_OPERATION",
    "NOT_FOUND_TRANSACTION",
    "NOT_FOUND_VOUCHER",
    "OPERATION_STATUSES",
    "TRANSACTION_STATUSES",
    "VALIDATION_ERROR",
    "VOUCHER_STATUSES",
    "ApiError",
    "ApiUnavailable",
    "CrossExchange",
    "Exchange",
    "Identified",
    "MerchantApiClient",
    "Operation",
    "Page",
    "Rates",
    "Transaction",
    "Voucher",
    "make_session",
    "mask_token",
]
