"""Records as spreadsheet-safe CSV rows: every field, exact decimals, named time zones.

Text that a spreadsheet would run as a formula (OWASP "CSV injection": a cell starting with
`=`, `+`, `-`, `@`, tab, carriage return or line feed) is prefixed with an apostrophe, which
spreadsheets show as text. A spreadsheet whose list separator is `;` (German Excel, LibreOffice)
or `,` may split a cell where the file did not, so every piece between separators is treated as
a cell of its own. Amounts are never touched: a negative amount stays a number.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, tzinfo
from decimal import Decimal
from typing import Any

from portal.api.records import Operation, Transaction

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r", "\n")
# The list separators spreadsheets split a line on (tab too, when they guess it), kept by the
# split.
_SEPARATORS = re.compile(r"([,;\t])")
_NUMBER = re.compile(r"[+-]?\d+(\.\d+)?")


def neutralise(text: str) -> str:
    """A text cell a spreadsheet shows as typed instead of evaluating it, however it splits it.

    Each piece between `,`, `;` or a tab that starts like a formula (after any spaces or quotes,
    which a split line may leave in front) gets the apostrophe, and so does a cell that starts
    with a tab or a line break; a piece that is a plain number (`-4`) is left alone, since a
    spreadsheet reads it as that number.
    """
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

    def cell(self, moment: datetime | None) -> str:
        if moment is None:
            return ""
        if self.zone is UTC:
            return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        return moment.astimezone(self.zone).isoformat(timespec="microseconds")


UTC_ZONE = TimeZone(UTC, "UTC")


@dataclass(frozen=True)
class Column:
    """One CSV column: its header and how a record becomes the cell."""

    name: str
    kind: str  # "text", "decimal", "timestamp" or "bool"
    read: Callable[[Any], Any]  # records of every type, read field by field

    def header(self, zone: TimeZone) -> str:
        return f"{self.name} ({zone.name})" if self.kind == "timestamp" else self.name

    def cell(self, record: object, zone: TimeZone) -> str:
        value = self.read(record)
        if self.kind == "decimal":
            return decimal_cell(value)
        if self.kind == "timestamp":
            return zone.cell(value)
        if self.kind == "bool":
            return "" if value is None else ("true" if value else "false")
        return "" if value is None else neutralise(str(value))


def _field(name: str, kind: str = "text") -> Column:
    return Column(name, kind, lambda record: getattr(record, name))


_TRANSACTION_FIELDS = (
    _field("id"),
    _field("tx_id"),
    _field("amount", "decimal"),
    _field("status"),
    _field("linked", "bool"),
    _field("reject_reason"),
    _field("created_at", "timestamp"),
    _field("updated_at", "timestamp"),
)

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
    _field("address"),
    _field("created_at", "timestamp"),
    _field("updated_at", "timestamp"),
    _field("payment_url"),
    _field("redirect_url"),
    Column("transactions", "text", lambda operation: len(operation.transactions)),
)
TRANSACTION_COLUMNS = (*_TRANSACTION_FIELDS[:2], _field("operation_id"), *_TRANSACTION_FIELDS[2:])


def header(columns: tuple[Column, ...], zone: TimeZone) -> list[str]:
    return [column.header(zone) for column in columns]


def row(columns: tuple[Column, ...], record: object, zone: TimeZone) -> list[str]:
    return [column.cell(record, zone) for column in columns]


def operation_transactions(operation: Operation) -> list[Transaction]:
    """The operation's embedded transactions, each carrying the operation's id."""
    return [replace(tx, operation_id=operation.id) for tx in operation.transactions]
