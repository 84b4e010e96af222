"""Native `.xlsx` workbooks of export rows (XlsxWriter), for a person who opens them in a
spreadsheet: amounts in numeric cells shown to 8 decimals, timestamps as date cells, text as
text cells (never a formula, whatever it starts with), and a frozen header row.

A spreadsheet's number is a binary floating-point number of 15 significant digits: an amount
with more digits is exact only in the CSV (docs/exports.md). Rows are written as they come and
kept on disk, not in memory (XlsxWriter's `constant_memory`), into a file the caller owns, so
that a view sends the workbook once it is whole and nothing of a failed one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable
from datetime import datetime
from decimal import Decimal
from typing import IO, Any

import xlsxwriter
from xlsxwriter.worksheet import Worksheet

from portal.reports.rules.csv_rows import Column, TimeZone

# Rows of a sheet in Excel (and LibreOffice), the header's included.
ROW_LIMIT = 1_048_576
AMOUNT_FORMAT = "0.00000000"
DATE_FORMAT = "yyyy-mm-dd hh:mm:ss"
MIME_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

CellWriter = Callable[[int, int, Any], object]
# What a sheet's name cannot hold (Excel's rules, which XlsxWriter enforces by raising).
SHEET_NAME_LENGTH = 31  # UTF-16 units
_NOT_IN_SHEET_NAMES = re.compile(r"[\[\]:*?/\\]")


class TooManyRows(Exception):
    """A sheet would pass the rows a spreadsheet opens: the CSV holds them all."""


class Workbook:
    """An `.xlsx` being written to `file`; `close` finishes it."""

    def __init__(self, file: IO[bytes]) -> None:
        self.book = xlsxwriter.Workbook(file, {"constant_memory": True})
        self.amount = self.book.add_format({"num_format": AMOUNT_FORMAT})
        self.date = self.book.add_format({"num_format": DATE_FORMAT})

    def sheet(self, name: str, columns: tuple[Column, ...], zone: TimeZone) -> Sheet:
        """A new sheet (tabs in the order they are made) with its frozen header row, under
        `name` made safe (`sheet_name`): a name may be the API's text, a currency."""
        taken = {sheet.name.lower() for sheet in self.book.worksheets()}
        return Sheet(self, self.book.add_worksheet(sheet_name(name, taken)), columns, zone)

    def close(self) -> None:
        self.book.close()


class Sheet:
    """A sheet's rows, written in order under the header: one record a row."""

    def __init__(
        self, book: Workbook, sheet: Worksheet, columns: tuple[Column, ...], zone: TimeZone
    ) -> None:
        self.name = sheet.name
        sheet.freeze_panes(1, 0)
        for number, column in enumerate(columns):
            sheet.write_string(0, number, column.header(zone))
            sheet.set_column(number, number, 20 if column.kind in {"timestamp", "utc"} else 14)
        self.cells = [(column.read, _cell_writer(sheet, column, zone, book)) for column in columns]
        self.rows = 1

    def add(self, record: object) -> None:
        """One record's row; TooManyRows past the limit of a spreadsheet's sheet."""
        if self.rows >= ROW_LIMIT:
            raise TooManyRows(self.name)
        for number, (read, write) in enumerate(self.cells):
            value = read(record)
            if value is not None:  # an unknown value is an empty cell, never zero
                write(self.rows, number, value)
        self.rows += 1

    def add_all(self, records: Iterable[object]) -> None:
        for record in records:
            self.add(record)


def sheet_name(wanted: str, taken: Collection[str]) -> str:
    """`wanted` as a name a spreadsheet takes: without `[]:*?/\\` and characters that do not
    print, no apostrophe at either end, at most 31 UTF-16 units, and none of the names `taken`
    (in lower case: a spreadsheet tells names apart ignoring case), else numbered (`BTC (2)`);
    "Sheet" when nothing is left."""
    base = _cut(_NOT_IN_SHEET_NAMES.sub("", "".join(c for c in wanted if c.isprintable())))
    base = base or "Sheet"
    name, number = base, 1
    while name.lower() in taken:
        number += 1
        suffix = f" ({number})"
        name = _cut(base, SHEET_NAME_LENGTH - len(suffix)) + suffix
    return name


def _cut(name: str, length: int = SHEET_NAME_LENGTH) -> str:
    """`name` at most `length` UTF-16 units long (a character past U+FFFF takes two), with no
    apostrophe at either end."""
    name = name[:length]  # a character takes one unit or two
    while len(name.encode("utf-16-le")) // 2 > length:
        name = name[:-1]
    return name.strip("'")


def _cell_writer(sheet: Worksheet, column: Column, zone: TimeZone, book: Workbook) -> CellWriter:
    """How a value of `column` becomes a cell, worked out once per sheet."""
    if column.kind == "decimal":
        return lambda row, col, value: sheet.write_number(row, col, _number(value), book.amount)
    if column.kind in {"timestamp", "utc"}:
        local = column.zone(zone).zone
        return lambda row, col, moment: sheet.write_datetime(
            row, col, _wall_clock(moment, local), book.date
        )
    if column.kind == "bool":
        return lambda row, col, value: sheet.write_string(row, col, "true" if value else "false")
    return lambda row, col, value: sheet.write_string(row, col, str(value))


def _number(amount: Decimal) -> float:
    """A spreadsheet's number is a double: the one place an amount becomes a float."""
    return float(amount)


def _wall_clock(moment: datetime, zone: Any) -> datetime:
    """The date and time in `zone`, as a spreadsheet keeps them (with no zone)."""
    return moment.astimezone(zone).replace(tzinfo=None)
