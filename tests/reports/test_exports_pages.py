"""The CSV exports through the portal, against the sandbox over real HTTP, as an accountant."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from datetime import datetime

import pytest
import requests

from tests.support import factories
from tests.support.forms import sign_in
from tests.support.money import connect
from tests.support.required import skip_unless
from tests.support.statements import recorded_statements

FODS = {
    "table": "urn:oasis:names:tc:opendocument:xmlns:table:1.0",
    "office": "urn:oasis:names:tc:opendocument:xmlns:office:1.0",
    "text": "urn:oasis:names:tc:opendocument:xmlns:text:1.0",
}


def text_of(cell) -> str:
    """The text a spreadsheet cell shows (the flat ODF file is indented)."""
    return "".join(cell.itertext()).strip()


def cells_of(row) -> list:
    """A row's cells, with the runs of equal cells that ODF writes once expanded."""
    repeated = f"{{{FODS['table']}}}number-columns-repeated"
    cells = []
    for cell in row.findall("table:table-cell", FODS):
        cells += [cell] * int(cell.get(repeated, "1"))
    return cells


@pytest.fixture
def accountant(app, client, accounts, seeded_sandbox):
    connect(app, seeded_sandbox)
    sign_in(client, accounts.accountant)
    return client


def rows_of(response) -> list[list[str]]:
    return list(csv.reader(io.StringIO(response.get_data(as_text=True))))


def api_total(server, **params) -> int:
    answer = requests.get(
        f"{server.api_url}/operations", params=params, headers=server.headers(), timeout=10
    )
    return answer.json()["meta"]["total"]


def test_an_accountant_exports_every_page_of_the_filtered_list(accountant, seeded_sandbox):
    response = accountant.get("/operations/export.csv?status=1&status=3&created_from=2000-01-01")
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    total = api_total(seeded_sandbox, status="1,3", created_from="2000-01-01")
    assert total > 100
    assert response.headers["X-Export-Total"] == str(total)
    rows = rows_of(response)
    assert len(rows) == total + 1
    assert {row[rows[0].index("status")] for row in rows[1:]} == {"confirmed", "expired"}
    disposition = response.headers["Content-Disposition"]
    assert disposition == 'attachment; filename="acme_operations_2000-01-01_to_today_UTC.csv"'


def test_an_export_of_many_pages_reads_the_merchant_once(app, accountant, seeded_sandbox):
    """Each page of an export is read while the download streams, in a session of its own: the
    merchant's payment tolerance, read once in the request, is not read again for each page."""
    with recorded_statements(app) as statements:
        response = accountant.get("/operations/export.csv?status=1&status=3")
        assert response.mimetype == "text/csv"
        rows = rows_of(response)  # the pages are read as the body is
    pages = [s for s in statements if "FROM ledger_entries" in s]  # a page's values
    assert len(rows) > 201 and len(pages) >= 3  # three pages of 100
    # The merchant came with the session, in the request's one query; no page reads it again.
    assert not [s for s in statements if "FROM merchants" in s]


def test_transactions_export_and_transactions_of_operations(accountant, seeded_sandbox):
    transactions = rows_of(accountant.get("/transactions/export.csv?linked=0"))
    assert "operation_id" in transactions[0]
    assert len(transactions) > 1
    detail = rows_of(accountant.get("/operations/export.csv?detail=transactions&status=1"))
    assert detail[0][:3] == ["id", "tx_id", "operation_id"]
    operations = rows_of(accountant.get("/operations/export.csv?status=1"))
    confirmed_ids = {row[0] for row in operations[1:]}
    assert {row[2] for row in detail[1:]} <= confirmed_ids
    assert len(detail) - 1 >= len(confirmed_ids)  # every confirmed operation has a payment


def test_invalid_filters_give_the_list_pages_messages_and_no_file(accountant):
    response = accountant.get("/operations/export.csv?amount_from=lots")
    assert response.status_code == 422
    assert response.mimetype == "text/html"
    assert "Enter a number such as 10 or 0.5." in response.get_data(as_text=True)


def test_no_matching_rows_gives_just_the_header(accountant):
    rows = rows_of(accountant.get("/operations/export.csv?order_id=no-such-order"))
    assert len(rows) == 1
    assert rows[0][0] == "id"


def test_an_old_link_to_the_csv_for_excel_opens_the_workbook_and_the_csv_stays_plain(
    app, accountant, accounts
):
    plain = accountant.get("/operations/export.csv?per_page=10").get_data()
    assert not plain.startswith("\ufeff".encode())
    old = accountant.get("/operations/export.csv?status=1&bom=1&tz=local")
    assert old.status_code == 301
    assert old.location == "/operations/export.xlsx?status=1&tz=local"

    from portal.extensions import db
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        find_user(accounts.accountant).time_zone = "Europe/Berlin"
        db.session.commit()
    local = rows_of(accountant.get("/operations/export.csv?tz=local"))
    assert "created_at (Europe/Berlin)" in local[0]
    stamp = local[1][local[0].index("created_at (Europe/Berlin)")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+0[12]:00", stamp)

    with app.app_context():  # a zone this host does not know: UTC, as on the pages
        find_user(accounts.accountant).time_zone = "Mars/Olympus_Mons"
        db.session.commit()
    response = accountant.get("/operations/export.csv?tz=local")
    assert response.status_code == 200
    assert "created_at (UTC)" in rows_of(response)[0]


def create_operations(sandbox, order_ids) -> list[str]:
    """Operations made straight through the API, with these order numbers; their ids."""
    made = []
    for order_id in order_ids:
        created = requests.post(
            f"{sandbox.api_url}/operations",
            json={"amount": "12.5", "currency": "USDT", "order_id": order_id},
            headers=sandbox.headers(),
            timeout=10,
        )
        assert created.status_code == 201
        made.append(created.json()["data"]["id"])
    return made


def spreadsheets(client, tmp_path, separator: str, *paths: str) -> list[list[list]]:
    """The CSV exports at `paths`, as LibreOffice reads them with `separator` as its list
    separator (one LibreOffice start converts them all: each start costs most of a second)."""
    exported = []
    for number, path in enumerate(paths):
        response = client.get(path)
        assert response.status_code == 200
        exported.append(tmp_path / f"export-{number}.csv")
        exported[-1].write_bytes(response.get_data())
    tables = office_tables(tmp_path, exported, infilter=f"CSV:{ord(separator)},34,76,1")
    return [
        [cells_of(row) for row in sheets[0].findall(".//table:table-row", FODS)]
        for sheets in tables
    ]


GERMAN = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry">
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooSetupSystemLocale" oor:op="fuse">
<value>de-DE</value></prop></item>
<item oor:path="/org.openoffice.Setup/L10N"><prop oor:name="ooLocale" oor:op="fuse">
<value>de-DE</value></prop></item>
</oor:items>
"""


def office_tables(tmp_path, files, *, infilter: str | None = None, german: bool = False) -> list:
    """The tables (sheets) of each file as headless LibreOffice reads them, converted to flat
    ODF; `german`: with LibreOffice's locale set to German (a decimal comma)."""
    profile = tmp_path / ("profile-de" if german else "profile")
    if german:
        (profile / "user").mkdir(parents=True, exist_ok=True)
        (profile / "user" / "registrymodifications.xcu").write_text(GERMAN)
    options = [f"--infilter={infilter}"] if infilter else []
    subprocess.run(
        ["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", *options,
         "--convert-to", "fods", "--outdir", str(tmp_path), *map(str, files)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return [
        ET.parse(file.with_suffix(".fods")).getroot().findall(".//table:table", FODS)  # noqa: S314  (our own conversion)
        for file in files
    ]


def formulas_in(rows: list[list]) -> list:
    return [cell for row in rows for cell in row if cell.get(f"{{{FODS['table']}}}formula")]


@pytest.fixture
def soffice() -> None:
    skip_unless(shutil.which("soffice") is not None, "soffice", "LibreOffice (soffice) is missing")


needs_soffice = pytest.mark.usefixtures("soffice")


@needs_soffice
@pytest.mark.slow  # LibreOffice opens the file: seconds each
def test_a_spreadsheet_evaluates_no_formula_and_keeps_amounts_numbers(
    app, client, accounts, sandbox, tmp_path
):
    hostile = ["=1+2", "+A3", "-4+5", "@SUM(1,2)", "\t=9", '=HYPERLINK("http://x")']
    create_operations(sandbox, hostile)
    connect(app, sandbox)
    sign_in(client, accounts.accountant)
    (rows,) = spreadsheets(client, tmp_path, ",", "/operations/export.csv")
    header = [text_of(cell) for cell in rows[0]]
    assert formulas_in(rows) == []
    amount = header.index("amount")
    for row in rows[1 : 1 + len(hostile)]:
        assert row[amount].get(f"{{{FODS['office']}}}value-type") == "float"
        assert row[amount].get(f"{{{FODS['office']}}}value") == "12.5"
    order_ids = {text_of(row[header.index("order_id")]) for row in rows[1:]}
    # A tab is an element of its own; a cell that starts with one is neutralised as a whole too.
    assert order_ids == {"''=9" if text == "\t=9" else "'" + text for text in hostile}


# Cells that hide a formula behind a list separator: one cell in the file, several in a
# spreadsheet that splits on `;` (German Excel, LibreOffice) or on `,`.
SEPARATED = [
    "INV-1;=1+1;@SUM(9*9)",
    "INV-2,=2+2",
    'INV-3;"=3+3',
    "INV-4; +4+4",
    "INV-5;-5",
    "INV-6\t=8+8",
]


@needs_soffice
@pytest.mark.slow  # LibreOffice opens the file: seconds each
@pytest.mark.parametrize("separator", [",", ";", "\t"], ids=["comma", "semicolon", "tab"])
def test_no_cell_of_any_export_becomes_a_formula_whichever_separator_splits_it(
    app, client, accounts, sandbox, tmp_path, separator
):
    first, *_ = create_operations(sandbox, SEPARATED)
    sandbox.control(
        "POST",
        f"operations/{first}/transactions",
        {"amount": "1", "tx_id": "TX;=6+6", "status": "confirmed"},
    )
    factories.audit_event(
        app, "transactions.reject", email=accounts.owner, parameters={"reason": "late;=7+7"}
    )
    connect(app, sandbox)
    sign_in(client, accounts.owner)
    hidden = {
        "/operations/export.csv": ("'=1+1", "'@SUM(9*9)", "'=2+2", "'=8+8"),
        "/transactions/export.csv": ("'=6+6",),
        "/audit/export.csv": ("'=7+7",),
    }
    sheets = spreadsheets(client, tmp_path, separator, *hidden)
    for (path, neutralised), rows in zip(hidden.items(), sheets, strict=True):
        assert formulas_in(rows) == [], path
        texts = [text_of(cell) for row in rows for cell in row]
        for piece in neutralised:
            assert any(piece in text for text in texts), (path, piece, texts)
        assert not [text for text in texts if re.match(r"[ \"]*[=+@]", text)], path


# --- Vouchers, withdrawals, cross exchanges; the transactions' currency ------------------------


def api_records(server, path: str) -> list[dict]:
    """Every record of an API list, straight from the JSON (the company token for vouchers)."""
    records, page = [], 1
    token = server.company_token if path == "vouchers" else server.token
    while True:
        answer = requests.get(
            f"{server.api_url}/{path}",
            params={"page": page, "per_page": 100},
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            timeout=10,
        ).json()
        records += answer["data"]
        if page >= answer["meta"]["last_page"]:
            return records
        page += 1


def test_vouchers_export_every_voucher_exactly_and_never_a_code(accountant, seeded_sandbox):
    response = accountant.get("/vouchers/export.csv")
    assert response.status_code == 200
    vouchers = api_records(seeded_sandbox, "vouchers")
    assert vouchers
    rows = rows_of(response)
    assert rows[0] == [
        "id", "amount", "currency", "status", "type", "created_at (UTC)", "updated_at (UTC)",
    ]  # fmt: skip
    written = {row[0]: row for row in rows[1:]}
    assert written.keys() == {voucher["id"] for voucher in vouchers}
    for voucher in vouchers:
        assert written[voucher["id"]][1] == voucher["amount"]
    text = response.get_data(as_text=True)
    assert not [voucher for voucher in vouchers if voucher["code"] in text]
    filtered = rows_of(accountant.get("/vouchers/export.csv?status=2"))
    assert {row[3] for row in filtered[1:]} <= {"cancelled"}


def test_the_transactions_export_and_page_name_each_transactions_currency(
    accountant, seeded_sandbox
):
    paid_in = {op["id"]: op["currency_paid"] for op in api_records(seeded_sandbox, "operations")}
    rows = rows_of(accountant.get("/transactions/export.csv"))
    names = rows[0]
    assert names[3:5] == ["amount", "currency"]
    assert len(rows) > 100  # more than one page: every page has its currencies
    for row in rows[1:]:
        assert row[names.index("currency")] == paid_in[row[names.index("operation_id")]]
    detail = rows_of(accountant.get("/operations/export.csv?detail=transactions"))
    assert detail[0][: len(names)] == names  # then the order number and the rate
    assert {row[4] for row in detail[1:]} <= set(paid_in.values())

    first = rows[1]
    page = accountant.get(f"/transactions?id={first[0]}").get_data(as_text=True)
    assert '<th scope="col">Currency</th>' in page
    assert f'<td data-label="Currency">{first[4]}</td>' in page


@pytest.fixture
def portal_lists(app, accounts):
    """A withdrawal of each outcome and a cross exchange, as the portal recorded them."""
    from datetime import UTC, datetime
    from decimal import Decimal

    from portal.extensions import db
    from portal.identity.rules.accounts import find_user
    from portal.money.models import CrossExchangeReference

    moment = datetime(2026, 11, 22, 2, 8, 22, tzinfo=UTC)
    factories.withdrawal_intent(
        app, accounts.owner, "sent", amount="0.10000000", address="tb1qsent", state="sent",
        operation_id="000123", operation_status="processed", at=moment,
    )  # fmt: skip
    factories.withdrawal_intent(
        app, accounts.owner, "refused", amount="-0.5", address="=HYPERLINK(1)",
        state="refused", error_code=12, error_message="Withdrawal limit;=1+1", at=moment,
    )  # fmt: skip
    factories.withdrawal_intent(app, accounts.owner, "pending", amount="1", address="tb1qpending")
    with app.app_context():
        owner = find_user(accounts.owner)
        db.session.add(
            CrossExchangeReference(
                merchant_id=owner.merchant_id, cross_exchange_id="000777", user_id=owner.id,
                sell_currency="BTC", buy_currency="ETH", sell_amount=Decimal("0.00100000"),
                buy_amount=Decimal("0.01500000"), created_at=moment,
            )
        )  # fmt: skip
        db.session.commit()
    return moment


def test_an_accountant_exports_the_withdrawals_exactly_and_safely(accountant, portal_lists):
    response = accountant.get("/withdrawals/export.csv")
    assert response.status_code == 200
    assert response.mimetype == "text/csv"
    assert response.headers["X-Export-Total"] == "2"  # confirmed ones; not the pending review
    rows = rows_of(response)
    assert rows[0] == [
        "reviewed_at (UTC)", "confirmed_at (UTC)", "amount", "wallet", "address", "state",
        "operation_id", "operation_status", "error_code", "error_message", "user",
    ]  # fmt: skip
    by_state = {row[5]: dict(zip(rows[0], row, strict=True)) for row in rows[1:]}
    assert by_state.keys() == {"sent", "refused"}
    sent, refused = by_state["sent"], by_state["refused"]
    assert sent["amount"] == "0.10000000"
    assert sent["operation_id"] == "000123"
    assert sent["confirmed_at (UTC)"] == "2026-11-22T02:08:22.000000Z"
    assert sent["user"] == "owner@acme.test"
    assert refused["amount"] == "-0.5"  # an amount stays a number
    assert refused["address"] == "'=HYPERLINK(1)"
    assert refused["error_message"] == "Withdrawal limit;'=1+1"
    assert response.headers["Content-Disposition"] == (
        'attachment; filename="acme_withdrawals_all-dates_UTC.csv"'
    )


def test_an_accountant_exports_the_cross_exchanges(accountant, portal_lists):
    rows = rows_of(accountant.get("/cross-exchanges/export.csv"))
    assert rows == [
        ["cross_exchange_id", "sell_amount", "sell_currency", "buy_amount", "buy_currency",
         "created_at (UTC)", "user"],
        ["000777", "0.00100000", "BTC", "0.01500000", "ETH", "2026-11-22T02:08:22.000000Z",
         "owner@acme.test"],
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "title"),
    [
        ("/operations/export.csv", "operations"),
        ("/vouchers/export.csv", "vouchers"),
        ("/withdrawals/export.csv", "withdrawals"),
        ("/cross-exchanges/export.csv", "cross-exchanges"),
    ],
)
def test_each_export_in_utc_or_the_users_zone_and_as_a_workbook_each_under_its_own_name(
    app, accountant, accounts, portal_lists, path, title
):
    from portal.extensions import db
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        find_user(accounts.accountant).time_zone = "Europe/Berlin"
        db.session.commit()
    names = {}
    for query in ("", "?tz=local"):
        response = accountant.get(path + query)
        assert response.status_code == 200
        names[query] = response.headers["Content-Disposition"]
        header = rows_of(response)[0]
        zone = "Europe/Berlin" if "local" in query else "UTC"
        stamps = [name for name in header if name.endswith(")")]
        assert stamps and all(name.endswith(f" ({zone})") for name in stamps)
        book = accountant.get(path.replace(".csv", ".xlsx") + query)
        assert book.status_code == 200
        names[f"xlsx{query}"] = book.headers["Content-Disposition"]
        assert next(workbook_rows(book)) == tuple(header), "the CSV's columns"
    assert names == {
        "": f'attachment; filename="acme_{title}_all-dates_UTC.csv"',
        "?tz=local": f'attachment; filename="acme_{title}_all-dates_Europe-Berlin.csv"',
        "xlsx": f"attachment; filename=acme_{title}_all-dates_UTC.xlsx",
        "xlsx?tz=local": f"attachment; filename=acme_{title}_all-dates_Europe-Berlin.xlsx",
    }


def workbook_rows(response):
    """The rows of a downloaded workbook's one sheet, as openpyxl reads them."""
    import openpyxl

    assert response.mimetype.endswith("spreadsheetml.sheet")
    book = openpyxl.load_workbook(io.BytesIO(response.get_data()))
    (sheet,) = book.worksheets
    assert sheet.freeze_panes == "A2"
    return sheet.iter_rows(values_only=True)


@pytest.mark.parametrize(
    "path",
    ["/operations", "/transactions", "/vouchers", "/withdrawals", "/cross-exchanges"],
)
def test_every_list_offers_its_export_in_utc_and_in_the_users_zone(
    app, client, accounts, seeded_sandbox, portal_lists, path
):
    from portal.extensions import db
    from portal.identity.rules.accounts import find_user

    with app.app_context():
        find_user(accounts.owner).time_zone = "America/New_York"
        db.session.commit()
    connect(app, seeded_sandbox)
    sign_in(client, accounts.owner)  # the one role that reads every list today
    page = client.get(path).get_data(as_text=True)
    for query in ("", "?tz=local"):
        assert f'href="{path}/export.csv{query}"' in page, query
        assert f'href="{path}/export.xlsx{query}"' in page, query
    assert "bom=1" not in page
    assert 'aria-label="Export CSV, times in America/New_York"' in page
    assert 'aria-label="Export Excel workbook, times in UTC"' in page


@needs_soffice
@pytest.mark.slow  # LibreOffice opens the file: seconds each
def test_the_workbook_opens_with_real_dates_amounts_as_numbers_and_order_numbers_as_text(
    app, client, accounts, sandbox, portal_lists, tmp_path
):
    create_operations(sandbox, ["000123", "1e5", "2026-01-02", "4711", "=1+1"])
    connect(app, sandbox)
    sign_in(client, accounts.accountant)
    office = FODS["office"]

    def typed(cell) -> tuple[str | None, str]:
        return cell.get(f"{{{office}}}value-type"), text_of(cell)

    files = []
    for name in ("operations", "withdrawals"):
        files.append(tmp_path / f"{name}.xlsx")
        files[-1].write_bytes(client.get(f"/{name}/export.xlsx").get_data())
    (operations,), (withdrawals,) = office_tables(tmp_path, files)
    rows = [cells_of(row) for row in operations.findall(".//table:table-row", FODS)]
    rows = [row for row in rows if text_of(row[0])]  # not the empty rows after them
    header = [text_of(cell) for cell in rows[0]]
    order_ids = {typed(row[header.index("order_id")]) for row in rows[1:]}
    assert order_ids == {
        ("string", "000123"),
        ("string", "1e5"),
        ("string", "2026-01-02"),
        ("string", "4711"),  # text stays text, a number or not
        ("string", "=1+1"),  # and never a formula
    }
    created = rows[1][header.index("created_at (UTC)")]
    assert created.get(f"{{{office}}}value-type") == "date"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d.*", created.get(f"{{{office}}}date-value"))
    amount = rows[1][header.index("amount")]
    assert typed(amount) == ("float", "12.50000000")
    assert amount.get(f"{{{office}}}value") == "12.5"
    assert formulas_in(rows) == []

    rows = [cells_of(row) for row in withdrawals.findall(".//table:table-row", FODS)]
    header = [text_of(cell) for cell in rows[0]]
    sent = next(row for row in rows[1:] if text_of(row[header.index("state")]) == "sent")
    assert typed(sent[header.index("operation_id")]) == ("string", "000123")
    confirmed = sent[header.index("confirmed_at (UTC)")]
    assert confirmed.get(f"{{{office}}}date-value") == "2026-11-22T02:08:22"
    assert formulas_in(rows) == []  # the hostile address stays text


def test_a_list_workbook_holds_the_csvs_rows_with_amounts_as_numbers(
    app, client, accounts, sandbox, tmp_path
):
    create_operations(sandbox, ["000123", "4711"])
    connect(app, sandbox)
    sign_in(client, accounts.accountant)
    csv_rows = rows_of(client.get("/operations/export.csv"))
    header, *rows = workbook_rows(client.get("/operations/export.xlsx"))
    assert list(header) == csv_rows[0]
    assert len(rows) == len(csv_rows) - 1
    cells = [dict(zip(header, row, strict=True)) for row in rows]
    assert {row["order_id"] for row in cells} == {"000123", "4711"}, "order numbers stay text"
    assert all(row["amount"] == 12.5 and isinstance(row["amount"], float) for row in cells)
    assert all(isinstance(row["created_at (UTC)"], datetime) for row in cells)


@pytest.mark.parametrize("query", ["", "?state=awaiting_payment"])
def test_a_download_left_unread_leaves_no_request_behind(app, accountant, query):
    """A browser that drops a download midway closes it while the server handles another
    request: ending the stream must not end that other request's context."""
    import flask

    response = accountant.get(f"/operations/export.csv{query}")  # streamed, not read
    assert response.status_code == 200
    with app.test_request_context("/another-request"):
        response.close()
        assert flask.request.path == "/another-request"
