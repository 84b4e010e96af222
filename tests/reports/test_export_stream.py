"""The streamed CSV export against the sandbox over real HTTP: every page, exact, failing loudly."""

from __future__ import annotations

import csv
import io
from functools import partial

import pytest
import requests

from portal.api import OPERATION_LIST, MerchantApiClient
from portal.payments.rules.paid_transactions import operation_transactions
from portal.reports.rules.csv_rows import OPERATION_COLUMNS, TRANSACTION_COLUMNS, UTC_ZONE
from portal.reports.rules.csv_stream import INCOMPLETE_MARK, Export, start
from tests.support.sandbox_server import run_sandbox

# The columns an API record fills (the state is the portal's: `stated_operation_pages`).
API_COLUMNS = tuple(column for column in OPERATION_COLUMNS if column.name != "state")


def client_for(server) -> MerchantApiClient:
    return MerchantApiClient(server.base_url, "sandbox", server.token)


def operations(client: MerchantApiClient):
    """What the operations export asks the client for a page with."""
    return partial(client.fetch_page, OPERATION_LIST)


def export_rows(export: Export) -> list[list[str]]:
    _, text = start(export)
    return list(csv.reader(io.StringIO("".join(text))))


def raw_operations(server, **params) -> list[dict]:
    """Every operation as the API wrote it, straight from the JSON."""
    records, page = [], 1
    while True:
        answer = requests.get(
            f"{server.api_url}/operations",
            params={**params, "page": page, "per_page": 100},
            headers=server.headers(),
            timeout=10,
        ).json()
        records += answer["data"]
        if page >= answer["meta"]["last_page"]:
            return records
        page += 1


@pytest.mark.parametrize("filters", [{}, {"status": [1]}, {"currency": ["BTC", "ETH"]}])
def test_the_export_covers_every_page_of_the_filtered_list(seeded_sandbox, filters):
    client = client_for(seeded_sandbox)
    total = client.list_operations(per_page=1, **filters).total
    rows = export_rows(Export(operations(client), filters, API_COLUMNS, UTC_ZONE))
    assert total > 100  # more than one page of 100
    assert len(rows) == total + 1  # the header, then one row per operation
    assert len({row[0] for row in rows[1:]}) == total


def test_decimals_are_written_exactly_as_the_api_gave_them(seeded_sandbox):
    client = client_for(seeded_sandbox)
    rows = export_rows(Export(operations(client), {}, API_COLUMNS, UTC_ZONE))
    names = rows[0]
    written = {row[0]: dict(zip(names, row, strict=True)) for row in rows[1:]}
    for record in raw_operations(seeded_sandbox):
        cells = written[record["id"]]
        for field in ("amount", "fee", "rate"):
            assert cells[field] == record[field]
        assert cells["amount_paid"] == (record["amount_paid"] or "")
        assert cells["created_at (UTC)"] == record["created_at"]


def transactions_of(operations) -> list:
    return [tx for operation in operations for tx in operation_transactions(operation)]


def test_transactions_of_operations_one_row_each_with_the_operation_id(seeded_sandbox):
    client = client_for(seeded_sandbox)
    export = Export(operations(client), {}, TRANSACTION_COLUMNS, UTC_ZONE, transactions_of)
    rows = export_rows(export)
    expected = client.list_transactions(per_page=1).total
    assert len(rows) - 1 == expected
    operation_ids = {record["id"] for record in raw_operations(seeded_sandbox)}
    assert {row[2] for row in rows[1:]} <= operation_ids


def test_no_matching_rows_gives_just_the_header(seeded_sandbox):
    client = client_for(seeded_sandbox)
    rows = export_rows(
        Export(operations(client), {"order_id": ["no-such-order"]}, API_COLUMNS, UTC_ZONE)
    )
    assert rows == [[column.header(UTC_ZONE) for column in API_COLUMNS]]


def test_a_failure_after_the_first_page_ends_the_file_with_an_error_row(tmp_path):
    with run_sandbox(tmp_path / "sandbox.db", seed=350) as server:
        client = client_for(server)
        first, text = start(Export(operations(client), {}, API_COLUMNS, UTC_ZONE))
        header = next(text)
        server.control("POST", "faults", {"mode": "error500"})
        rows = list(csv.reader(io.StringIO(header + "".join(text))))
    assert first.total == 350
    assert rows[-1][0] == INCOMPLETE_MARK
    assert "not complete" in rows[-1][1]
    assert len(rows) - 2 < first.total


def test_an_exports_memory_does_not_grow_with_its_rows():
    """The ids kept to write a record pushed on to the next page once are the last pages'
    only: all of them took 90 MB for a million rows."""
    import tracemalloc
    from types import SimpleNamespace

    from portal.api import Page
    from portal.reports.rules import csv_stream

    def peak_of(total: int) -> int:
        per_page, last = 100, total // 100

        def fetch(page: int, per_page: int = per_page, **_filters):
            first = 10_000_000 + (page - 1) * per_page
            items = tuple(SimpleNamespace(id=str(first + n)) for n in range(per_page))
            return lambda: Page(items, total, page, last, per_page)

        export = Export(fetch, {}, (), UTC_ZONE)
        tracemalloc.start()
        rows = sum(len(page) for page in csv_stream.export_rows(export, fetch(1)()))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert rows == total
        return peak

    assert peak_of(50_000) < 1.5 * peak_of(5_000)


# An answer of a hostile API with no comma or quote, so the CSV writes it unquoted: a
# spreadsheet that splits on `;` or a tab would run its pieces as formulas.
HOSTILE_WORDS = "x;=cmd|' /C calc'!A0;y\t=1+1"


def test_the_apis_words_in_the_incomplete_row_and_the_header_are_never_a_formula():
    """The error's message the `EXPORT INCOMPLETE` row quotes, and a header naming the
    reporting currency, are neutralised as every data cell is."""
    from portal.reports.rules.csv_rows import operation_columns
    from portal.reports.rules.csv_stream import local_text
    from tests.support.attack import formula_cells
    from tests.support.fake_api import Answer, FakeApi, operation_json, page_json

    records = [operation_json(id=str(n)) for n in range(1, 101)]
    with FakeApi() as fake:
        fake.answer_pages(
            "GET",
            "/v1/operations",
            Answer(200, page_json(records, page=1, per_page=100, total=150)),
            Answer(422, {"code": 9, "message": HOSTILE_WORDS}),
        )
        _, text = start(Export(operations(fake.client()), {}, API_COLUMNS, UTC_ZONE))
        written = "".join(text)
    *_, last = csv.reader(io.StringIO(written))
    assert last[0] == INCOMPLETE_MARK and "x;'=cmd|' /C calc'!A0;y\t'=1+1" in last[1]
    assert formula_cells(written) == []

    header = "".join(local_text([], operation_columns(HOSTILE_WORDS), UTC_ZONE))
    assert "value_x;'=cmd|' /c calc'!a0;y\t'=1+1" in header
    assert formula_cells(header) == []
