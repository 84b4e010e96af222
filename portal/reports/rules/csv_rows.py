"""Records as spreadsheet-safe CSV rows: every field, exact decimals, named time zones.

Text that a spreadsheet would run as a formula (OWASP "CSV injection": a cell starting with
`=`, `+`, `-`, `@`, tab, carriage return or line feed) is prefixed with an apostrophe, which
spreadsheets show as text. A spreadsheet whose list separator is `;` (German Excel, LibreOffice)
or `,` may split a cell where the file did not, so every piece between separators is treated as
a cell of its own. Amounts are never touched: a negative amount stays a number. A person who
opens an export in a spreadsheet takes the workbook (`portal.reports.rules.workbook`), whose
cells are typed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from functools import partial
from operator import attrgetter
from typing import Any

from portal.payments.rules.operation_list import StatedOperation

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
# Where a formula can start: at the start of the cell or of a piece after a list separator,
# behind any spaces or quotes. A `-` inside `ORD-1` or an id is no such place.
_FORMULA_START = re.compile(r'(?:^|[,;\t])[ "]*[' + re.escape("".join(FORMULA_TRIGGERS)) + "]")
# The list separators spreadsheets split a line on (tab too, when they guess it), kept by the
# split.
_SEPARATORS = re.compile(r"([,;\t])")
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def neutralise(text: str) -> str:
    """A text cell a spreadsheet shows as typed instead of evaluating it, however it splits it.

    Each piece between `,`, `;` or a tab that starts like a formula (after any spaces or quotes,
    which a split line may leave in front) gets the apostrophe, and so does a cell that starts
    with a tab or a line break; a piece that is a plain number (`-4`) is left alone, since a
    spreadsheet reads it as that number. Most cells have no piece that starts like a formula,
    and are returned at once (an export writes a dozen text cells a row): a cell that starts
    with a letter or digit and holds no separator has no place where a formula could start,
    which string methods tell in a fraction of the pattern's search through the whole cell.
    """
    if text[:1].isalnum() and "," not in text and ";" not in text and "\t" not in text:
        return text
    return _neutralise_pieces(text) if _FORMULA_START.search(text) else text


def _neutralise_pieces(text: str) -> str:
    pieces = _SEPARATORS.split(text)
    for index in range(0, len(pieces), 2):  # the separators stand at the odd places
        piece = pieces[index]
        start = piece.lstrip(' "')
        if start.startswith(FORMULA_TRIGGERS) and not _NUMBER.fullmatch(piece):
            pieces[index] = "'" + piece
    cell = "".join(pieces)
    return "'" + cell if cell.startswith(("\t", "\r", "\n")) else cell


def decimal_cell(value: Decimal | None) -> str:
    """The decimal exactly as the API wrote it (Decimal keeps every trailing zero)."""
    return "" if value is None else format(value, "f")


@dataclass(frozen=True)
class TimeZone:
    """The zone timestamps are written in, and its name for the header."""

    zone: tzinfo
    name: str

    def writer(self) -> Callable[[datetime | None], str]:
        """How a timestamp is written: ISO 8601 with the zone."""
        if self.zone is UTC:
            return _utc_cell
        return partial(_iso_time, self.zone)


def _iso_time(zone: tzinfo, moment: datetime | None) -> str:
    return "" if moment is None else moment.astimezone(zone).isoformat(timespec="microseconds")


def _utc_cell(moment: datetime | None) -> str:
    return "" if moment is None else utc_text(moment)


def utc_text(moment: datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SS.ffffffZ` in UTC; `isoformat` writes it in a fifth of the time
    `strftime` takes, and alike but for a year before 1000, which strftime does not pad."""
    utc = moment if moment.tzinfo is UTC else moment.astimezone(UTC)
    if utc.year < 1000:
        return utc.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return utc.isoformat(timespec="microseconds")[:-6] + "Z"


UTC_ZONE = TimeZone(UTC, "UTC")


@dataclass(frozen=True)
class Column:
    """One CSV column: its header and how a record becomes the cell."""

    name: str
    kind: str  # "text", "decimal", "timestamp" (in the export's zone), "utc" or "bool"
    read: Callable[[Any], Any]  # records of every type, read field by field

    def header(self, zone: TimeZone) -> str:
        if self.kind == "utc":
            return f"{self.name} (UTC)"
        return f"{self.name} ({zone.name})" if self.kind == "timestamp" else self.name

    def zone(self, export_zone: TimeZone) -> TimeZone:
        """The zone this column's timestamps are written in."""
        return UTC_ZONE if self.kind == "utc" else export_zone


def cell_writer(kind: str, zone: TimeZone) -> Callable[[Any], str]:
    """How a value of a column of `kind` is written, worked out once rather than per cell."""
    if kind == "decimal":
        return decimal_cell
    if kind == "timestamp":
        return zone.writer()
    if kind == "utc":
        return UTC_ZONE.writer()
    if kind == "bool":
        return _bool_cell
    return _text_cell


def _bool_cell(value: bool | None) -> str:
    return "" if value is None else ("true" if value else "false")


def _text_cell(value: object) -> str:
    return "" if value is None else neutralise(str(value))


def _field(name: str, kind: str = "text") -> Column:
    return Column(name, kind, attrgetter(name))


OPERATION_COLUMNS = (
    _field("id"),
    _field("application_id"),
    _field("application_name"),
    _field("category"),
    _field("order_id"),
    _field("amount", "decimal"),
    _field("fee", "decimal"),
    _field("amount_paid", "decimal"),
    _field("rate", "decimal"),
    _field("currency"),
    _field("currency_paid"),
    _field("status"),
    _field("state"),  # the state's words (`portal.payments.rules.operation_list`)
    _field("address"),
    _field("created_at", "timestamp"),
    _field("updated_at", "timestamp"),
    _field("payment_url"),
    _field("redirect_url"),
    Column("transactions", "text", lambda operation: len(operation.transactions)),
)


def _money_field(name: str) -> Column:
    return Column(name, "decimal", lambda operation: getattr(operation.money, name))


def _fee_currency(operation: StatedOperation) -> str | None:
    assert operation.money is not None  # every exported operation has its money
    return operation.money.currency if operation.money.fee is not None else None


def operation_columns(reporting: str) -> tuple[Column, ...]:
    """The operations export's columns: the API's fields and the state, then the operation's
    money in its payment currency (`portal.payments.rules.operation_money`), then what it
    received is worth in the `reporting` currency, which the header names (`value_usd`)."""
    return (
        *OPERATION_COLUMNS,
        _money_field("due"),
        _money_field("received"),
        _money_field("awaiting"),
        _money_field("difference"),
        Column("fee_charged", "decimal", lambda operation: operation.money.fee),
        Column("fee_currency", "text", _fee_currency),
        _money_field("net"),
        Column(f"value_{reporting.lower()}", "decimal", attrgetter("value")),
    )


def _paid_field(name: str, kind: str = "text") -> Column:
    return Column(name, kind, lambda paid: getattr(paid.transaction, name))


TRANSACTION_COLUMNS = (
    _paid_field("id"),
    _paid_field("tx_id"),
    _paid_field("operation_id"),
    _paid_field("amount", "decimal"),
    Column("currency", "text", lambda paid: paid.currency),
    _paid_field("status"),
    _paid_field("linked", "bool"),
    _paid_field("reject_reason"),
    _paid_field("created_at", "timestamp"),
    _paid_field("updated_at", "timestamp"),
)
"""Columns of `PaidTransaction`s: the transactions list, or an operation's transactions."""


def rated_transaction_columns(reporting: str) -> tuple[Column, ...]:
    """The per-transaction export of operations: each transaction's columns, its operation's
    order number, and the rate of one unit of its currency in the `reporting` currency (which
    the header names, `rate_usd`), when that rate was read, and where it came from."""
    return (
        *TRANSACTION_COLUMNS,
        _field("order_id"),
        Column(f"rate_{reporting.lower()}", "decimal", lambda rated: rated.rating.rate),
        Column("rate_at", "timestamp", lambda rated: rated.rating.rate_at),
        Column("rate_source", "text", lambda rated: rated.rating.source),
    )


VOUCHER_COLUMNS = (
    _field("id"),
    _field("amount", "decimal"),
    _field("currency"),
    _field("status"),
    _field("type"),
    _field("created_at", "timestamp"),
    _field("updated_at", "timestamp"),
)
"""A voucher's fields but its code: the code is bearer money, and only owners reveal it."""


def _email_of_user(record: object) -> str | None:
    user = getattr(record, "user", None)
    return user.email if user else None


# The portal's own tables (`portal.web.exports.local_list_download`).
WITHDRAWAL_COLUMNS = (
    Column("reviewed_at", "timestamp", lambda intent: intent.created_at),
    Column("confirmed_at", "timestamp", lambda intent: intent.updated_at),
    _field("amount", "decimal"),
    _field("wallet"),
    _field("address"),
    _field("state"),
    _field("operation_id"),
    _field("operation_status"),
    _field("error_code"),
    _field("error_message"),
    Column("user", "text", _email_of_user),
)
CROSS_EXCHANGE_COLUMNS = (
    _field("cross_exchange_id"),
    _field("sell_amount", "decimal"),
    _field("sell_currency"),
    _field("buy_amount", "decimal"),
    _field("buy_currency"),
    _field("created_at", "timestamp"),
    Column("user", "text", _email_of_user),
)


def header(columns: tuple[Column, ...], zone: TimeZone) -> list[str]:
    return [column.header(zone) for column in columns]


def row_writer(columns: tuple[Column, ...], zone: TimeZone) -> Callable[[object], list[str]]:
    """The cells of a record's row, each column's way of writing them worked out once for a
    whole export."""
    cells = [(column.read, cell_writer(column.kind, zone)) for column in columns]
    return lambda record: [write(read(record)) for read, write in cells]
