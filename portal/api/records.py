"""Typed, immutable records of the API, built from JSON by their field types.

One builder reads every record: a field's type says how to convert it, a field with a default
may be missing or null, extra fields are ignored. Status texts stay plain strings, so a status
the portal does not know yet is shown as it is instead of breaking a page.
"""

from __future__ import annotations

import functools
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, dataclass, field, fields, is_dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Generic, Protocol, TypeVar

from portal.api.wire import MalformedAnswer, to_bool, to_datetime, to_decimal, to_int, to_text

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T")
D = TypeVar("D", bound="DataclassInstance")

# Numeric codes taken by the `status` list filters, with the text the sandbox answers.
OPERATION_STATUSES = {
    0: "new",
    1: "confirmed",
    2: "failed",
    3: "expired",
    4: "canceled",
    5: "processed",
}
TRANSACTION_STATUSES = {1: "confirmed", 2: "undefined", 4: "rejected"}
VOUCHER_STATUSES = {0: "new", 1: "successful", 2: "cancelled", 3: "expired"}


@dataclass(frozen=True)
class MaxLength:
    """The most characters a text field may hold. The API documents no lengths; the portal keeps
    these fields in columns of these sizes (the subsystems' models), so a longer text is a
    malformed answer, handled like any other, and never an insert that fails."""

    characters: int


Id = Annotated[str, MaxLength(64)]  # a record's id, and the ids it names
Word = Annotated[str, MaxLength(32)]  # statuses and categories
Currency = Annotated[str, MaxLength(16)]
Text = Annotated[str, MaxLength(255)]  # order numbers, addresses, transaction hashes

Rates = dict[tuple[str, str], Decimal]
"""Price of one unit of the first currency in the second: `rates["BTC", "USD"]`."""


class Identified(Protocol):
    """A record the API names by its `id` (every record here but a page)."""

    @property
    def id(self) -> str: ...


@dataclass(frozen=True)
class Transaction:
    """A blockchain transaction; `operation_id` only comes with the transaction endpoints."""

    id: Id
    tx_id: Text
    amount: Decimal
    status: Word
    linked: bool
    created_at: datetime
    updated_at: datetime
    reject_reason: str | None = None
    operation_id: Id | None = None


@dataclass(frozen=True)
class Operation:
    """A payment request, or a withdrawal (category `transfer` or `internal_transfer`)."""

    id: Id
    category: Word
    amount: Decimal
    fee: Decimal
    rate: Decimal
    currency: Currency
    currency_paid: Currency
    status: Word
    address: Text
    created_at: datetime
    updated_at: datetime
    application_id: str | None = None
    application_name: str | None = None
    order_id: Text | None = None
    amount_paid: Decimal | None = None
    payment_url: str | None = None
    redirect_url: str | None = None
    transactions: tuple[Transaction, ...] = ()


@dataclass(frozen=True)
class Voucher:
    """A voucher; its `code` is a secret redemption value, kept out of the repr."""

    id: Id
    amount: Decimal
    currency: str
    code: str = field(repr=False)
    status: str
    type: str
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Exchange:
    """An exchange between two wallets; the API documentation does not show its fields."""

    id: Id
    sell_currency: str | None = None
    buy_currency: str | None = None
    sell_amount: Decimal | None = None
    buy_amount: Decimal | None = None
    rate: Decimal | None = None
    fee: Decimal | None = None
    status: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None


@dataclass(frozen=True)
class CrossExchange:
    """A cross exchange: the payer sends `sell_amount` to `invoice_address` before `expired_at`."""

    id: Id
    operation_id: Id
    sell_currency: str
    buy_currency: str
    sell_amount: Decimal
    buy_amount: Decimal
    fee: Decimal
    rate: Decimal
    invoice_address: str
    status: str
    expired_at: datetime
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a list, with the position figures of the API's `meta`."""

    items: tuple[T, ...]
    total: int
    current_page: int
    last_page: int
    per_page: int
    from_: int | None = None
    to: int | None = None

    @property
    def has_previous(self) -> bool:
        return self.current_page > 1

    @property
    def has_next(self) -> bool:
        return self.current_page < self.last_page


_SCALARS: dict[Any, Callable[[object], object]] = {
    str: to_text,
    bool: to_bool,
    Decimal: to_decimal,
    datetime: to_datetime,
}


def unwrap(payload: object) -> object:
    """The record inside `{data: ...}`; a body without the wrapper is taken as it is."""
    if isinstance(payload, dict) and isinstance(payload.get("data"), dict):
        return payload["data"]
    return payload


def parse_record(kind: type[D], payload: object) -> D:
    """A record of `kind` from a JSON object (wrapped in `data` or not)."""
    obj = unwrap(payload)
    if not isinstance(obj, dict):
        raise MalformedAnswer(f"{kind.__name__}: expected an object, got {type(obj).__name__}")
    readers, defaults = _readers(kind)
    values = dict(defaults)
    for name, convert, required, longest in readers:
        raw = obj.get(name)
        if raw is None:
            if required:
                raise MalformedAnswer(f"{kind.__name__}.{name} is missing")
            continue
        # Most fields are text: printable ASCII within its length holds nothing to refuse.
        if raw.__class__ is str and len(raw) <= longest and raw.isascii() and raw.isprintable():
            values[name] = raw
            continue
        try:
            values[name] = convert(raw)
        except MalformedAnswer as exc:
            raise MalformedAnswer(f"{kind.__name__}.{name}: {exc}") from None
    # What the frozen dataclass's __init__ would do, one field at a time through
    # object.__setattr__ (a third of the cost of reading a page): every field, set at once.
    record = object.__new__(kind)
    record.__dict__.update(values)
    return record


def with_fields(record: D, **changes: object) -> D:
    """A copy of `record` with `changes`: `dataclasses.replace` without running `__init__` again,
    filled as `parse_record` fills a record (a first sync copies some 20,000 records a page
    of a hundred operations)."""
    copy = object.__new__(type(record))
    copy.__dict__.update(record.__dict__, **changes)
    return copy


def parse_page(kind: type[D], payload: object) -> Page[D]:
    """A list answer: `{data: [...], meta: {...}}`."""
    if not isinstance(payload, dict):
        raise MalformedAnswer("expected a list answer object")
    data, meta = payload.get("data"), payload.get("meta")
    if not isinstance(data, list) or not isinstance(meta, dict):
        raise MalformedAnswer("a list answer needs `data` (array) and `meta` (object)")
    items = tuple(parse_record(kind, item) for item in data)
    try:
        return Page(
            items=items,
            total=to_int(meta.get("total")),
            current_page=to_int(meta.get("current_page")),
            last_page=to_int(meta.get("last_page")),
            per_page=to_int(meta.get("per_page")),
            from_=None if meta.get("from") is None else to_int(meta["from"]),
            to=None if meta.get("to") is None else to_int(meta["to"]),
        )
    except MalformedAnswer as exc:
        raise MalformedAnswer(f"list meta: {exc}") from None


def parse_rates(payload: object) -> Rates:
    """A rates object (`{"BTC:USD": 65000.0, ...}`, wrapped in `data` or not)."""
    obj = unwrap(payload)
    if not isinstance(obj, dict):
        raise MalformedAnswer("expected a rates object")
    rates: Rates = {}
    for key, value in obj.items():
        base, colon, quote = key.partition(":")
        if not (colon and base and quote) or ":" in quote:
            continue
        try:
            rates[base, quote] = to_decimal(value)
        except MalformedAnswer as exc:
            raise MalformedAnswer(f"rate {key}: {exc}") from None
    return rates


@functools.cache
def _readers(
    kind: type[DataclassInstance],
) -> tuple[tuple[tuple[str, Callable[[object], object], bool, int], ...], dict[str, object]]:
    """(field name, converter, required, longest text) of each field, and the defaults of the
    optional ones, worked out once per record type. The longest text is what a text field may
    hold (0 for the other fields): `parse_record` takes such a text as it is.

    `parse_record` fills a record without calling its __init__: a record type has no
    __post_init__ and keeps its fields in its __dict__ (no slots), which is checked here.
    """
    if hasattr(kind, "__post_init__") or hasattr(kind, "__slots__"):
        raise TypeError(f"{kind.__name__}: parse_record cannot fill it without its __init__")
    hints = typing.get_type_hints(kind, include_extras=True)
    specs = fields(kind)
    for spec in specs:
        if spec.default is MISSING and spec.default_factory is not MISSING:
            raise TypeError(f"{kind.__name__}.{spec.name}: a default factory needs __init__")
    readers = tuple(
        (
            spec.name,
            _converter(hints[spec.name]),
            spec.default is MISSING,
            _longest_text(hints[spec.name]),
        )
        for spec in specs
    )
    return readers, {spec.name: spec.default for spec in specs if spec.default is not MISSING}


def _longest_text(hint: Any) -> int:
    """How long a text a field typed `hint` takes (`MaxLength`); -1 when it takes no text, so
    that no text, not even an empty one, skips its conversion."""
    hint = _without_none(hint)
    if typing.get_origin(hint) is typing.Annotated:
        return _max_length(hint) if typing.get_args(hint)[0] is str else -1
    return sys.maxsize if hint is str else -1


def _max_length(annotated: Any) -> int:
    """The characters the `MaxLength` of an `Annotated` hint allows."""
    (limit,) = (mark for mark in typing.get_args(annotated)[1:] if isinstance(mark, MaxLength))
    return limit.characters


def _without_none(hint: Any) -> Any:
    """`X` of an optional field's `X | None`."""
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        (hint,) = (arg for arg in typing.get_args(hint) if arg is not type(None))
    return hint


def _limited_text(convert: Callable[[object], object], characters: int, raw: object) -> object:
    text = convert(raw)
    if isinstance(text, str) and len(text) > characters:
        raise MalformedAnswer(f"longer than {characters} characters")
    return text


def _converter(hint: Any) -> Callable[[object], object]:
    """The function that reads a JSON value of a field typed `hint`."""
    hint = _without_none(hint)
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        text = typing.get_args(hint)[0]
        return functools.partial(_limited_text, _converter(text), _max_length(hint))
    if origin is tuple:
        item = _converter(typing.get_args(hint)[0])

        def array(raw: object) -> tuple[object, ...]:
            if not isinstance(raw, list):
                raise MalformedAnswer(f"expected an array, got {type(raw).__name__}")
            return tuple(item(element) for element in raw)

        return array
    if isinstance(hint, type) and is_dataclass(hint):
        return functools.partial(parse_record, hint)
    return _SCALARS[hint]
