"""The CSV exports through the portal, against the sandbox over real HTTP, as an accountant."""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
import requests

from tests.support.forms import sign_in
from tests.support.money import connect

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
    assert disposition == 'attachment; filename="acme_operations_2000-01-01_to_today.csv"'


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


def test_spreadsheet_options_byte_order_mark_and_time_zone(app, accountant, accounts):
    plain = accountant.get("/operations/export.csv?per_page=10").get_data()
    assert not plain.startswith("\ufeff".encode())
    marked = accountant.get("/operations/export.csv?bom=1").get_data()
    assert marked.startswith("\ufeff".encode())

    from portal.extensions import db
    from portal.services.accounts import find_user

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
    """The exports at `paths`, as LibreOffice reads them with `separator` as its list separator
    (one LibreOffice start converts them all: each start costs most of a second)."""
    exported = []
    for number, path in enumerate(paths):
        response = client.get(path, query_string={"bom": "1"})
        assert response.status_code == 200
        exported.append(tmp_path / f"export-{number}.csv")
        exported[-1].write_bytes(response.get_data())
    subprocess.run(
        ["soffice", f"-env:UserInstallation={(tmp_path / 'profile').as_uri()}", "--headless",
         f"--infilter=CSV:{ord(separator)},34,76,1", "--convert-to", "fods",
         "--outdir", str(tmp_path), *map(str, exported)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    sheets = []
    for file in exported:
        document = ET.parse(file.with_suffix(".fods"))  # noqa: S314  (our own conversion)
        table = document.getroot().find(".//table:table", FODS)
        sheets.append([cells_of(row) for row in table.findall(".//table:table-row", FODS)])
    return sheets


def formulas_in(rows: list[list]) -> list:
    return [cell for row in rows for cell in row if cell.get(f"{{{FODS['table']}}}formula")]


needs_soffice = pytest.mark.skipif(
    not shutil.which("soffice"), reason="LibreOffice (soffice) is not installed"
)


@needs_soffice
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
@pytest.mark.parametrize("separator", [",", ";", "\t"], ids=["comma", "semicolon", "tab"])
def test_no_cell_of_any_export_becomes_a_formula_whichever_separator_splits_it(
    app, client, accounts, sandbox, tmp_path, separator
):
    from portal import audit
    from portal.services.accounts import find_user

    first, *_ = create_operations(sandbox, SEPARATED)
    sandbox.control(
        "POST",
        f"operations/{first}/transactions",
        {"amount": "1", "tx_id": "TX;=6+6", "status": "confirmed"},
    )
    with app.app_context():
        owner = find_user(accounts.owner)
        audit.record("transactions.reject", parameters={"reason": "late;=7+7"}, user=owner)
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
