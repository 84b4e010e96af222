"""Client of the Merchant API v1: the only code of the portal that speaks HTTP to the API."""

from portal.api.client import (
    ENVIRONMENT_PREFIXES,
    OPERATION_LIST,
    TRANSACTION_LIST,
    VOUCHER_LIST,
    ListEndpoint,
    MerchantApiClient,
    mask_token,
)
from portal.api.errors import (
    DOCUMENTED_MESSAGES,
    ApiFailure,
    ApiRefusal,
    ApiUnavailable,
    ErrorCode,
)
from portal.api.paging import PageReader
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
    "DOCUMENTED_MESSAGES",
    "ENVIRONMENT_PREFIXES",
    "OPERATION_LIST",
    "OPERATION_STATUSES",
    "TRANSACTION_LIST",
    "TRANSACTION_STATUSES",
    "VOUCHER_LIST",
    "VOUCHER_STATUSES",
    "ApiFailure",
    "ApiRefusal",
    "ApiUnavailable",
    "CrossExchange",
    "ErrorCode",
    "Exchange",
    "Identified",
    "ListEndpoint",
    "MerchantApiClient",
    "Operation",
    "Page",
    "PageReader",
    "Rates",
    "Transaction",
    "Voucher",
    "make_session",
    "mask_token",
]
