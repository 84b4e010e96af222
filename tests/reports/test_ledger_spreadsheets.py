"""The ledger of a period as CSV and as a workbook, after a day of payments, a withdrawal and an
exchange against a real sandbox, whose wallets are the ground truth: each currency sheet's net
column adds up to what its wallet gained in the period."""

from __future__ import annotations

import csv
import io
import re
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import NamedTuple
from zoneinfo import ZoneInfo

import pytest
from flask.testing import FlaskClient

from tests.money.test_balances import api, owner, portal, wallet  # noqa: F401  (the day's fixtures)
from tests.reports.test_exports_pages import (  # noqa: F401  (soffice: the fixture)
    FODS,
    cells_of,
    needs_soffice,
    office_tables,
    soffice,
    text_of,
)
from tests.support.mirror import sync_now
from tests.support.money import BTC_ADDRESS, exchange_confirm_form, post, review_exchange, text

WALLETS = ("BTC", "ETH", "USDT")
OFFICE = FODS["office"]


def workbook(response):
    import openpyxl

    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    assert response.mimetype.endswith("spreadsheetml.sheet")
    return openpyxl.load_workbook(io.BytesIO(response.get_data()))


def rows_of(sheet) -> list[tuple]:
    return list(sheet.iter_rows(values_only=True))


class Day(NamedTuple):
    owner: FlaskClient
    opening: dict[str, Decimal]
    closing: dict[str, Decimal]


@pytest.fixture
def day(portal, api, sandbox, owner):  # noqa: F811  (the fixtures imported above)
    """An owner in Berlin enters the openings as of two days ago; then today's payments, a
    withdrawal and an exchange. Each wallet as the day began and as it ended."""
    from portal.extensions import db
    from portal.identity.rules.accounts import find_user
    from tests.support.portal_app import email

    with portal.app_context():
        find_user(email("owner")).time_zone = BERLIN_NAME
        db.session.commit()
    before = (datetime.now(UTC) - timedelta(days=2)).strftime("%Y-%m-%d %H:%M")
    opening = {currency: wallet(sandbox, currency) for currency in WALLETS}
    for currency, amount in opening.items():
        entered = {"amount": str(amount), "as_of": before}
        assert post(owner, f"/balances/{currency}/opening", entered).status_code == 302
    paid = api.create_operation("0.5", "BTC", "000123")
    sandbox.receive(paid.id, "0.5")
    part = api.create_operation("0.4", "BTC", "order-part")
    sandbox.receive(part.id, "0.1")
    sandbox.receive(part.id, "0.1")
    tether = api.create_operation("20", "USDT", "=1+1", payment_currency="USDT")
    sandbox.receive(tether.id, "20")
    sync_now(portal)
    api.withdraw(Decimal("0.05"), "BTC", BTC_ADDRESS)
    deal = {"sell_currency": "BTC", "buy_currency": "ETH", "sell_amount": "0.1", "buy_amount": ""}
    assert owner.post("/exchange", data=exchange_confirm_form(review_exchange(owner, deal)))
    sync_now(portal)
    closing = {currency: wallet(sandbox, currency) for currency in WALLETS}
    return Day(owner, opening, closing)


BERLIN_NAME = "Europe/Berlin"
BERLIN = ZoneInfo(BERLIN_NAME)
TODAY = dict.fromkeys(("from", "to"), datetime.now(BERLIN).date().isoformat())


def test_each_currency_sheet_adds_up_to_what_its_wallet_gained(day):
    client, opening, closing = day
    book = workbook(client.get("/balances/ledger.xlsx", query_string=TODAY))
    assert book.sheetnames == ["Summary", *WALLETS]
    for currency in WALLETS:
        sheet = book[currency]
        assert sheet.freeze_panes == "A2", "the header row stays in view"
        header, *rows = rows_of(sheet)
        net = [row[header.index("net")] for row in rows]
        assert net and all(isinstance(cell, int | float) for cell in net), "numbers, not text"
        assert sheet.cell(2, header.index("net") + 1).number_format == "0.00000000"
        gained = closing[currency] - opening[currency]
        assert round(Decimal(sum(net)), 8) == gained, currency
        assert round(Decimal(rows[-1][header.index("balance_after")]), 8) == closing[currency]
        utc, local = header.index("time (UTC)"), header.index("local_time (Europe/Berlin)")
        for row in rows:
            assert isinstance(row[utc], datetime) and isinstance(row[local], datetime)
            in_berlin = row[utc].replace(tzinfo=UTC).astimezone(BERLIN).replace(tzinfo=None)
            assert row[local] == in_berlin
        assert {row[header.index("currency")] for row in rows} == {currency}

    summary = {row[0]: row for row in rows_of(book["Summary"])[1:]}
    assert rows_of(book["Summary"])[0] == ("currency", "opening", "gross", "fee", "net", "closing")
    for currency in WALLETS:
        _, start, gross, fee, net, end = summary[currency]
        assert round(Decimal(start), 8) == opening[currency]
        assert round(Decimal(end), 8) == closing[currency]
        assert round(Decimal(net), 8) == closing[currency] - opening[currency]
        sheet_header, *rows = rows_of(book[currency])
        for name, total in (("gross", gross), ("fee", fee)):
            cells = [row[sheet_header.index(name)] or 0 for row in rows]
            assert round(Decimal(sum(cells)), 8) == round(Decimal(total), 8), (currency, name)


def test_the_ledgers_rows_say_what_moved_once_each(day):
    client = day.owner
    book = workbook(client.get("/balances/ledger.xlsx", query_string=TODAY))
    header, *rows = rows_of(book["BTC"])
    by_type = {}
    for row in rows:
        by_type.setdefault(row[header.index("type")], []).append(
            dict(zip(header, row, strict=True))
        )
    assert set(by_type) == {"Payment", "Fee", "Withdrawal", "Network fee", "Exchange, sold"}
    paid = next(row for row in by_type["Payment"] if row["order_id"] == "000123")
    assert paid["gross"] == 0.5 and paid["fee"] is None and paid["net"] == 0.5
    assert paid["tx_hash"], "one transaction: its hash"
    assert {row["tx_hash"] for row in by_type["Payment"] if row["order_id"] == "order-part"} == {
        None
    }, "two transactions: the mirror cannot tell which one a movement is"
    assert all(row["fee"] > 0 and row["net"] == -row["fee"] for row in by_type["Fee"])
    assert all(row["gross"] is None and row["fee"] is None for row in by_type["Withdrawal"])
    tether = dict(zip(*rows_of(book["USDT"])[:2], strict=True))
    assert tether["order_id"] == "=1+1", "text stays text, never a formula"


def test_the_csv_holds_the_workbooks_rows_exactly(day):
    client, opening, closing = day
    response = client.get("/balances/ledger.csv", query_string=TODAY)
    assert response.status_code == 200
    assert response.is_streamed
    day_name = TODAY["from"]
    assert response.headers["Content-Disposition"] == (
        f'attachment; filename="acme_ledger_{day_name}_to_{day_name}_Europe-Berlin.csv"'
    )
    header, *rows = list(csv.reader(io.StringIO(response.get_data(as_text=True))))
    book = workbook(client.get("/balances/ledger.xlsx", query_string=TODAY))
    sheet_rows = [row for currency in WALLETS for row in rows_of(book[currency])[1:]]
    assert sorted(row[0] for row in rows) == sorted(str(row[0]) for row in sheet_rows)
    assert header == list(rows_of(book["BTC"])[0])
    net, currency = header.index("net"), header.index("currency")
    for code in WALLETS:
        total = sum(Decimal(row[net]) for row in rows if row[currency] == code)
        assert total == closing[code] - opening[code], code  # exact, to the last unit
    by_id = {str(row[0]): row for row in sheet_rows}
    for row in rows:
        for name, written, cell in zip(header, row, by_id[row[0]], strict=True):
            assert same_cell(written, cell), (name, written, cell)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", rows[0][2])


def test_the_ledger_reads_its_rows_in_chunks_and_misses_none(day, monkeypatch):
    from portal.reports.rules import ledger_rows

    whole = day.owner.get("/balances/ledger.csv", query_string=TODAY).get_data()
    monkeypatch.setattr(ledger_rows, "CHUNK", 2)  # the day's rows take several chunks
    assert day.owner.get("/balances/ledger.csv", query_string=TODAY).get_data() == whole
    assert whole.count(b"\r\n") > 2 * 3


def same_cell(text: str, cell: object) -> bool:
    """A CSV cell and the workbook's cell hold the same: the number (to the 15 digits a
    spreadsheet keeps), the moment (to the millisecond a spreadsheet keeps) or the text, which
    the CSV alone shields from running as a formula (a typed text cell never runs)."""
    from portal.reports.rules.csv_rows import neutralise

    if cell is None:
        return text == ""
    if isinstance(cell, datetime):
        moment = datetime.fromisoformat(text).astimezone(UTC if text.endswith("Z") else BERLIN)
        return abs(moment.replace(tzinfo=None) - cell) < timedelta(milliseconds=1)
    if isinstance(cell, int | float):
        return abs(Decimal(text) - Decimal(cell)) <= abs(Decimal(text)) * Decimal("1e-15")
    return text == neutralise(str(cell))


def test_a_period_it_cannot_read_is_the_balances_page_with_the_reason(day):
    client = day.owner
    response = client.get("/balances/ledger.xlsx", query_string={"from": "2026-12-01", "to": "x"})
    assert response.status_code == 422
    assert "Enter both dates as YYYY-MM-DD" in text(response)
    page = client.get("/balances").get_data(as_text=True)
    assert 'action="/balances/ledger.csv"' in page
    assert 'formaction="/balances/ledger.xlsx"' in page


def test_more_rows_than_a_sheet_holds_points_to_the_csv(day, monkeypatch):
    client = day.owner
    from portal.reports.rules import workbook as spreadsheet

    monkeypatch.setattr(spreadsheet, "ROW_LIMIT", 3)  # a million rows would take minutes
    response = client.get("/balances/ledger.xlsx", query_string=TODAY)
    assert response.status_code == 422
    assert response.mimetype == "text/html"
    assert "Download the CSV" in text(response)
    assert f'href="/balances/ledger.csv?from={TODAY["from"]}&amp;to={TODAY["to"]}"' in (
        response.get_data(as_text=True)
    )


@needs_soffice
@pytest.mark.slow  # LibreOffice opens the file: seconds
def test_the_workbook_opens_in_a_german_libreoffice_with_numbers_in_numeric_cells(day, tmp_path):
    client = day.owner
    path = tmp_path / "ledger.xlsx"
    path.write_bytes(client.get("/balances/ledger.xlsx", query_string=TODAY).get_data())
    (tables,) = office_tables(tmp_path, [path], german=True)
    sheets = {table.get(f"{{{FODS['table']}}}name"): table for table in tables}
    assert list(sheets) == ["Summary", *WALLETS]
    rows = [cells_of(row) for row in sheets["BTC"].findall(".//table:table-row", FODS)]
    header = [text_of(cell) for cell in rows[0]]
    movements = [row for row in rows[1:] if text_of(row[0])]  # not the empty rows after them
    assert movements
    for row in movements:
        net = row[header.index("net")]
        assert net.get(f"{{{OFFICE}}}value-type") == "float"
        assert "," in text_of(net), "shown with the German decimal comma"
        assert row[header.index("time (UTC)")].get(f"{{{OFFICE}}}value-type") == "date"


# Currencies of a hostile API that no sheet may be named: the summary's name in other case,
# characters a sheet's name cannot hold, apostrophes at its ends, and more than 31 characters
# (twice, alike in their first 31 but for case).
NO_SHEET_NAMES = ("summary", "US[D]", "'BTC'", "usd", "A" * 31 + "x" * 9, "a" * 31 + "y" * 9)


def test_a_currency_no_sheet_may_be_named_gets_a_sheet_of_a_safe_name(app, accounts):
    """The workbook is made all the same (it was a 500, and the statement mails failed): each
    currency its own sheet, named as a spreadsheet allows, the currency itself in its cells."""
    import openpyxl

    from tests.support import factories
    from tests.support.forms import signed_in
    from tests.support.ledger import book

    factories.api_connection(app)
    moment = datetime(2026, 11, 10, 12, tzinfo=UTC)
    book(app, [("payment", currency, Decimal("1.5"), moment) for currency in NO_SHEET_NAMES])
    november = {"from": "2026-11-01", "to": "2026-11-30"}
    response = signed_in(app, accounts.owner).get("/balances/ledger.xlsx", query_string=november)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    opened = openpyxl.load_workbook(io.BytesIO(response.get_data()))

    summary, *sheets = opened.worksheets
    assert summary.title == "Summary"
    currencies = [row[0] for row in rows_of(summary)[1:]]  # the wallets', then these, sorted
    sheet_of = dict(zip(currencies, sheets, strict=True))
    assert {currency: sheet_of[currency].title for currency in NO_SHEET_NAMES} == {
        "summary": "summary (2)",
        "US[D]": "USD",
        "'BTC'": "BTC (2)",  # BTC, a wallet's, has its sheet
        "usd": "usd (2)",  # after US[D]'s
        "A" * 31 + "x" * 9: "A" * 31,
        "a" * 31 + "y" * 9: "a" * 27 + " (2)",
    }
    assert len({name.lower() for name in opened.sheetnames}) == len(opened.sheetnames)
    for currency in NO_SHEET_NAMES:
        header, *rows = rows_of(sheet_of[currency])
        assert [row[header.index("currency")] for row in rows] == [currency]
        assert [row[header.index("net")] for row in rows] == [1.5]
