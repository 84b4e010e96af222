"""The Merchant API v1 client: one method per endpoint the API documents (docs/sandbox.md)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack
from urllib.parse import quote

import requests
import urllib3.exceptions
from requests.auth import AuthBase

from portal.api.deadline import DeadlinePassed, within
from portal.api.errors import ApiFailure, ApiUnavailable, ErrorCode, error_from_answer
from portal.api.paging import PageReader, read_pages
from portal.api.records import (
    CrossExchange,
    Exchange,
    Identified,
    Operation,
    Page,
    Rates,
    Transaction,
    Voucher,
    parse_page,
    parse_rates,
    parse_record,
)
from portal.api.session import AnswerTooLarge, make_session, read_at_most
from portal.api.wire import encode_amount, encode_query, parse_json

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

log = logging.getLogger(__name__)

T = TypeVar("T", bound="DataclassInstance")
R = TypeVar("R")
Record = TypeVar("Record", bound=Identified)
Amount = Decimal | int | str

ENVIRONMENT_PREFIXES = {"sandbox": "/sandbox/v1", "production": "/v1"}
MAX_PER_PAGE = 100
# The longest answer read: a page of 100 operations with their transactions measured 72 KB
# (docs/operations.md, `PORTAL_API_MAX_ANSWER_BYTES`); parsing JSON takes up to ~30 times its size.
MAX_ANSWER_BYTES = 2 * 1024 * 1024

# Query parameters of the list endpoints (sections 4.4, 4.7 and 4.12).
_COMMON_PARAMS = ("sort", "sort_type", "created_from", "created_to", "page", "per_page")
OPERATION_FILTERS = (
    *_COMMON_PARAMS,
    "id",
    "category",
    "order_id",
    "amount_from",
    "amount_to",
    "fee_from",
    "fee_to",
    "amount_paid_from",
    "amount_paid_to",
    "currency",
    "currency_paid",
    "status",
    "address",
)
TRANSACTION_FILTERS = (
    *_COMMON_PARAMS,
    "id",
    "operation_id",
    "tx_id",
    "amount_from",
    "amount_to",
    "status",
    "linked",
    "reject_reason",
)
VOUCHER_FILTERS = (*_COMMON_PARAMS, "amount_from", "amount_to", "currency", "status")


@dataclass(frozen=True)
class ListEndpoint(Generic[T]):
    """A list of the API: its path, the records it holds, the filters it takes, and whether it
    is read with the company token when there is one."""

    path: str
    kind: type[T]
    filters: tuple[str, ...]
    company: bool = False


OPERATION_LIST = ListEndpoint("/operations", Operation, OPERATION_FILTERS)
TRANSACTION_LIST = ListEndpoint("/transactions", Transaction, TRANSACTION_FILTERS)
VOUCHER_LIST = ListEndpoint("/vouchers", Voucher, VOUCHER_FILTERS, company=True)


def mask_token(token: str | None) -> str | None:
    """A token as people may see it: `••••` and, for a long token, its last 4 characters."""
    if token is None:
        return None
    return "••••" + token[-4:] if len(token) >= 12 else "••••"


class _Options(TypedDict, total=False):
    """What `_call` passes on to `_send`, besides the method and path."""

    params: dict[str, str] | None
    body: dict[str, Any] | None
    not_found: ErrorCode
    company: bool


class _Bearer(AuthBase):
    """`Authorization: Bearer <token>`; passed per request so a shared session holds no token."""

    def __init__(self, token: str) -> None:
        self._token = token

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self._token}"
        return request

    def __repr__(self) -> str:
        return f"_Bearer({mask_token(self._token)!r})"


class MerchantApiClient:
    """Talks to one merchant's API account: environment prefix, tokens, timeouts.

    `timeout` is (connect, read) in seconds, or one number for both: each connection attempt
    and each read waits that long at most, and a whole call (connecting, retries and the whole
    answer) ends after connect + read seconds in all, however slowly the API sends its answer.
    An answer longer than `max_answer_bytes` is not read further.

    Pass a session from `make_session()` to share its connection pool between clients; a client
    without one makes its own. Every failure raises `ApiRefusal`, or `ApiUnavailable` when the
    API could not be reached, did not answer in time, or answered garbage.
    """

    def __init__(
        self,
        base_url: str,
        environment: str = "sandbox",
        token: str = "",
        company_token: str | None = None,
        timeout: float | tuple[float, float] = (3.05, 15.0),
        session: requests.Session | None = None,
        max_answer_bytes: int = MAX_ANSWER_BYTES,
    ) -> None:
        if environment not in ENVIRONMENT_PREFIXES:
            raise ValueError(f"environment must be one of {', '.join(ENVIRONMENT_PREFIXES)}")
        if timeout is None:
            raise ValueError("a timeout is required: a call must never hang")
        if not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL")
        if any(char in (secret or "") for secret in (token, company_token) for char in "\r\n\0"):
            raise ValueError("a token cannot contain a line break")  # nor be quoted in an error
        self.base_url = base_url.rstrip("/")
        self.environment = environment
        self.api_url = self.base_url + ENVIRONMENT_PREFIXES[environment]
        self.timeout = timeout
        self.total_timeout = sum(timeout) if isinstance(timeout, tuple) else 2 * timeout
        self.max_answer_bytes = max_answer_bytes
        self._token = token
        self._company_token = company_token or None
        self._own_session = session is None
        self._session = session if session is not None else make_session()

    def __repr__(self) -> str:
        return (
            f"MerchantApiClient(api_url={self.api_url!r}, token={mask_token(self._token)!r}, "
            f"company_token={mask_token(self._company_token)!r})"
        )

    def close(self) -> None:
        """Close the connection pool when the client made it itself."""
        if self._own_session:
            self._session.close()

    def __enter__(self) -> MerchantApiClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- Ping, rates, withdrawal -------------------------------------------------------------

    def ping(self) -> None:
        """Check the API answers and accepts the token; any 2xx is fine."""
        self._send("GET", "/ping")

    def get_rates(self) -> Rates:
        return self._call("GET", "/rates", parse=parse_rates)

    def withdraw(self, amount: Amount, wallet: str, address: str) -> Operation:
        """Send `amount` from the `wallet` currency's wallet to `address`; never retried."""
        body = {"amount": encode_amount(amount), "wallet": wallet, "address": address}
        return self._call("POST", "/withdraw", body=body, parse=partial(parse_record, Operation))

    # --- Operations ---------------------------------------------------------------------------

    def list_operations(self, **filters: Any) -> Page[Operation]:
        """One page of operations; filters are the API's for that list, as Python values."""
        return self.fetch_page(OPERATION_LIST, **filters)()

    def iter_operations(self, **filters: Any) -> Iterator[Operation]:
        """Every operation matching the filters, page after page."""
        return _every(partial(self.fetch_page, OPERATION_LIST), filters)

    def get_operation(self, operation_id: str) -> Operation:
        return self._call(
            "GET",
            f"/operations/{_segment(operation_id)}",
            parse=partial(parse_record, Operation),
            not_found=ErrorCode.OPERATION_NOT_FOUND,
        )

    def create_operation(
        self,
        amount: Amount,
        currency: str,
        order_id: str,
        payment_currency: str | None = None,
        redirect_url: str | None = None,
    ) -> Operation:
        body = _without_none(
            amount=encode_amount(amount),
            currency=currency,
            order_id=order_id,
            payment_currency=payment_currency,
            redirect_url=redirect_url,
        )
        return self._call("POST", "/operations", body=body, parse=partial(parse_record, Operation))

    def cancel_operation(self, operation_id: str) -> None:
        """Cancel a new operation (204; a 200 with a body is accepted too)."""
        self._send(
            "PUT",
            f"/operations/{_segment(operation_id)}/cancel",
            body=None,
            not_found=ErrorCode.OPERATION_NOT_FOUND,
        )

    def link_transactions(self, operation_id: str, ids: Iterable[str]) -> Operation:
        """Link transactions (by their `id`) to the operation; returns the updated operation."""
        return self._call(
            "PUT",
            f"/operations/{_segment(operation_id)}/link-transactions",
            body={"tx_id": list(ids)},
            parse=partial(parse_record, Operation),
            not_found=ErrorCode.OPERATION_NOT_FOUND,
        )

    def reject_transactions(self, operation_id: str, ids: Iterable[str], reason: str) -> Operation:
        """Reject transactions (by their `id`) with a reason; returns the updated operation."""
        return self._call(
            "PUT",
            f"/operations/{_segment(operation_id)}/reject-transactions",
            body={"tx_id": list(ids), "reason": reason},
            parse=partial(parse_record, Operation),
            not_found=ErrorCode.OPERATION_NOT_FOUND,
        )

    # --- Transactions -------------------------------------------------------------------------

    def list_transactions(self, **filters: Any) -> Page[Transaction]:
        """One page of transactions; filters are the API's for that list, as Python values."""
        return self.fetch_page(TRANSACTION_LIST, **filters)()

    def iter_transactions(self, **filters: Any) -> Iterator[Transaction]:
        return _every(partial(self.fetch_page, TRANSACTION_LIST), filters)

    def get_transaction(self, transaction_id: str) -> Transaction:
        return self._call(
            "GET",
            f"/transactions/{_segment(transaction_id)}",
            parse=partial(parse_record, Transaction),
            not_found=ErrorCode.TRANSACTION_NOT_FOUND,
        )

    # --- Vouchers -----------------------------------------------------------------------------

    def list_vouchers(self, **filters: Any) -> Page[Voucher]:
        """One page of vouchers (with the company token when there is one)."""
        return self.fetch_page(VOUCHER_LIST, **filters)()

    def iter_vouchers(self, **filters: Any) -> Iterator[Voucher]:
        return _every(partial(self.fetch_page, VOUCHER_LIST), filters)

    def get_voucher(self, voucher_id: str) -> Voucher:
        return self._call(
            "GET",
            f"/vouchers/{_segment(voucher_id)}",
            parse=partial(parse_record, Voucher),
            not_found=ErrorCode.VOUCHER_NOT_FOUND,
        )

    def create_voucher(self, amount: Amount, currency: str) -> Voucher:
        body = {"amount": encode_amount(amount), "currency": currency}
        return self._call("POST", "/vouchers", body=body, parse=partial(parse_record, Voucher))

    def cancel_voucher(self, voucher_id: str) -> Voucher | None:
        """Cancel an issued voucher; None when the API answers 204 without the record."""
        return self._call(
            "PUT",
            f"/vouchers/{_segment(voucher_id)}/cancel",
            body=None,
            parse=partial(_optional, Voucher),
            not_found=ErrorCode.VOUCHER_NOT_FOUND,
        )

    def pay_off_voucher(self, code: str) -> Voucher:
        return self._call(
            "POST", "/vouchers/payoff", body={"code": code}, parse=partial(parse_record, Voucher)
        )

    # --- Exchanges and cross exchanges --------------------------------------------------------

    def create_exchange(
        self,
        sell_currency: str,
        buy_currency: str,
        sell_amount: Amount | None = None,
        buy_amount: Amount | None = None,
    ) -> Exchange:
        """Exchange between the merchant's wallets; give one of `sell_amount`, `buy_amount`."""
        body = _exchange_body(sell_currency, buy_currency, sell_amount, buy_amount)
        return self._call("POST", "/exchange", body=body, parse=partial(parse_record, Exchange))

    def get_exchange_rates(self) -> Rates:
        """The pairs available for exchanges and cross exchanges."""
        return self._call("GET", "/exchange/rates", parse=parse_rates)

    def create_cross_exchange(
        self,
        sell_currency: str,
        buy_currency: str,
        sell_address: str,
        buy_address: str,
        sell_amount: Amount | None = None,
        buy_amount: Amount | None = None,
    ) -> CrossExchange:
        """Start a cross exchange (with the company token when there is one)."""
        body = _exchange_body(sell_currency, buy_currency, sell_amount, buy_amount)
        body |= {"sell_address": sell_address, "buy_address": buy_address}
        return self._call(
            "POST",
            "/cross-exchanges",
            body=body,
            parse=partial(parse_record, CrossExchange),
            company=True,
        )

    def get_cross_exchange(self, cross_exchange_id: str) -> CrossExchange:
        return self._call(
            "GET",
            f"/cross-exchanges/{_segment(cross_exchange_id)}",
            parse=partial(parse_record, CrossExchange),
            not_found=ErrorCode.CROSS_EXCHANGE_NOT_FOUND,
        )

    def cancel_cross_exchange(self, cross_exchange_id: str) -> CrossExchange | None:
        """Cancel a cross exchange awaiting payment; None when the API answers 204."""
        return self._call(
            "PUT",
            f"/cross-exchanges/{_segment(cross_exchange_id)}/cancel",
            body=None,
            parse=partial(_optional, CrossExchange),
            not_found=ErrorCode.CROSS_EXCHANGE_NOT_FOUND,
        )

    # --- The HTTP exchange --------------------------------------------------------------------

    def fetch_page(self, endpoint: ListEndpoint[T], **filters: Any) -> PageReader[T]:
        """Ask for one page of a list and wait for the answer; the function returned reads it.

        `list_operations(**filters)` is `fetch_page(OPERATION_LIST, **filters)()`. Apart, the two
        steps let paging wait for answers on worker threads and read them where the pages are
        used (`portal.api.paging`). A refusal raises here, a body that is not a page when read.
        """
        params = encode_query(filters, endpoint.filters)
        parse = partial(parse_page, endpoint.kind)
        return self._fetch("GET", endpoint.path, parse, params=params, company=endpoint.company)

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        body: dict[str, Any] | None = None,
        not_found: ErrorCode = ErrorCode.SOMETHING_WENT_WRONG,
        company: bool = False,
    ) -> _Answer:
        """Send one request and read its answer, within the total timeout; the answer when the
        API answered 2xx, an `ApiRefusal` otherwise.

        A bodiless POST or PUT still carries `Content-Type: application/json`.
        """
        headers = {"Accept": "application/json"}
        if method in ("POST", "PUT"):
            headers["Content-Type"] = "application/json"
        token = self._company_token if company and self._company_token else self._token
        started = time.monotonic()
        try:
            with (
                within(self.total_timeout),
                self._session.request(
                    method,
                    self.api_url + path,
                    params=params,
                    data=None if body is None else json.dumps(body),
                    headers=headers,
                    auth=_Bearer(token),
                    timeout=self.timeout,
                    allow_redirects=False,
                    stream=True,
                ) as response,
            ):
                try:
                    answer = _Answer(
                        response.status_code, read_at_most(response, self.max_answer_bytes)
                    )
                except AnswerTooLarge as exc:
                    raise self._malformed(
                        method, path, response.status_code, str(exc), b""
                    ) from exc
        except (requests.RequestException, urllib3.exceptions.HTTPError, DeadlinePassed) as exc:
            raise self._failed(method, path, exc) from exc
        elapsed_ms = (time.monotonic() - started) * 1000
        log.debug("%s %s -> %s in %.0f ms", method, path, answer.status, elapsed_ms)
        if not 200 <= answer.status < 300:
            error = error_from_answer(
                answer.status, self._mask(answer.text), not_found_code=not_found
            )
            self._log_error(method, path, error)
            raise error
        return answer

    def _call(
        self, method: str, path: str, *, parse: Callable[[object], R], **options: Unpack[_Options]
    ) -> R:
        """Send one request (see `_send`) and return `parse(json body)`."""
        return self._fetch(method, path, parse, **options)()

    def _fetch(
        self, method: str, path: str, parse: Callable[[object], R], **options: Unpack[_Options]
    ) -> Callable[[], R]:
        """Send one request (see `_send`); the function returned reads its answer with `parse`."""
        return partial(self._read, method, path, self._send(method, path, **options), parse)

    def _read(self, method: str, path: str, answer: _Answer, parse: Callable[[object], R]) -> R:
        """`parse(json body)`; a body that is not what the contract promises is ApiUnavailable."""
        try:
            payload = parse_json(answer.body) if answer.body.strip() else None
            return parse(payload)
        except ValueError as exc:  # MalformedAnswer and JSON decoding errors alike
            raise self._malformed(method, path, answer.status, str(exc), answer.body) from exc

    def _malformed(
        self, method: str, path: str, status: int, why: str, body: bytes
    ) -> ApiUnavailable:
        """The exception for an answer that is not what the contract promises."""
        error = ApiUnavailable(
            f"The API answered HTTP {status} with a body that is not the expected JSON: {why}",
            request_sent=True,
            http_status=status,
            raw=self._mask(_text(body)),
        )
        self._log_error(method, path, error)
        return error

    def _failed(self, method: str, path: str, exc: Exception) -> ApiUnavailable:
        """The exception for a request that got no answer: timeout or connection failure."""
        cause = exc.args[0] if exc.args and isinstance(exc.args[0], Exception) else exc
        if isinstance(cause, urllib3.exceptions.MaxRetryError) and cause.reason is not None:
            cause = cause.reason
        # NewConnectionError (refused, DNS failure) is a ConnectTimeoutError too.
        not_connected = isinstance(
            exc, requests.ConnectTimeout | requests.exceptions.InvalidURL
        ) or isinstance(cause, urllib3.exceptions.ConnectTimeoutError)
        timeout = isinstance(exc, requests.Timeout | DeadlinePassed) or (
            isinstance(cause, urllib3.exceptions.TimeoutError)
            and not isinstance(cause, urllib3.exceptions.NewConnectionError)
        )
        what = "did not answer in time" if timeout else "could not be reached"
        error = ApiUnavailable(
            self._mask(f"The API {what}: {type(cause).__name__}: {cause}"),
            timeout=timeout,
            request_sent=not not_connected,
        )
        self._log_error(method, path, error)
        return error

    def _log_error(self, method: str, path: str, error: ApiFailure) -> None:
        level = logging.WARNING if isinstance(error, ApiUnavailable) else logging.INFO
        log.log(level, "%s %s failed: %r; body: %.2000r", method, path, error, error.raw)

    def _mask(self, text: str) -> str:
        """`text` with both tokens replaced, for messages and logged bodies."""
        for token in (self._token, self._company_token):
            if token:
                text = text.replace(token, "••••")
        return text


@dataclass(frozen=True)
class _Answer:
    """An answer read whole: its HTTP status and body."""

    status: int
    body: bytes

    @property
    def text(self) -> str:
        return _text(self.body)


def _text(body: bytes) -> str:
    """A body as text for errors and logs: JSON is UTF-8, and anything else is the API's fault."""
    return body.decode("utf-8", errors="replace")


def _every(
    fetch_page: Callable[..., PageReader[Record]], filters: dict[str, Any]
) -> Iterator[Record]:
    """Every record of a list, at the largest page size, the next pages read ahead.

    A record that moves to a later page while the pages are read (newest first, and new records
    arrive) would come twice: records are yielded once per id.
    """
    if "page" in filters:
        raise TypeError("iterators read every page; `page` is not a filter for them")
    pages = read_pages(partial(fetch_page, **{"per_page": MAX_PER_PAGE, **filters}))

    def records() -> Iterator[Record]:
        seen: set[str] = set()
        for page in pages:
            for record in page.items:
                if record.id not in seen:
                    seen.add(record.id)
                    yield record

    return records()


def _optional(kind: type[T], payload: object) -> T | None:
    """A record, or None for an answer without a body (a 204)."""
    return None if payload is None else parse_record(kind, payload)


def _segment(value: str) -> str:
    """An id as one path segment, so an id can never reach another endpoint."""
    text = str(value)
    if not text:
        raise ValueError("an id must not be empty")
    return quote(text, safe="")


def _exchange_body(
    sell_currency: str, buy_currency: str, sell_amount: Amount | None, buy_amount: Amount | None
) -> dict[str, str]:
    return _without_none(
        sell_currency=sell_currency,
        buy_currency=buy_currency,
        sell_amount=None if sell_amount is None else encode_amount(sell_amount),
        buy_amount=None if buy_amount is None else encode_amount(buy_amount),
    )


def _without_none(**fields: str | None) -> dict[str, str]:
    return {name: value for name, value in fields.items() if value is not None}
