"""The operations export's money and value in the reporting currency, and the per-transaction
export's order numbers and rates, against a real sandbox whose market the tests set."""

from __future__ import annotations

import csv
import io
import re
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from urllib.parse import parse_qs, urlsplit

import pytest

from portal.api import MerchantApiClient
from tests.reports.test_exports_pages import (  # noqa: F401  (soffice: the fixture)
    FODS,
    needs_soffice,
    soffice,
    spreadsheets,
    text_of,
)
from tests.support.forms import sign_in
from tests.support.mirror import sync_now
from tests.support.money import connect
from tests.support.portal_app import MERCHANT

BTC_PRICE = Decimal("60000")
UTC_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


@pytest.fixture
def api(sandbox) -> MerchantApiClient:
    return MerchantApiClient(sandbox.base_url, token=sandbox.token)


@pytest.fixture
def accountant(app, client, accounts, sandbox):
    """Acme's accountant, the market frozen at a BTC price the tests know, and the rates of
    that market recorded by a first sync (money is valued at rates recorded before it came)."""
    sandbox.set_prices(BTC=str(BTC_PRICE))
    connect(app, sandbox)
    sync_now(app)
    sign_in(client, accounts.accountant)
    return client


def underpaid(api, sandbox, due: str, paid: str, currency: str = "BTC"):
    """An operation of `due` (in `currency`, paid in BTC) confirmed by a link of `paid` BTC."""
    made = api.create_operation(due, currency, f"order-{uuid.uuid4().hex[:8]}", "BTC")
    sandbox.receive(made.id, paid, "undefined")
    (transaction,) = api.get_operation(made.id).transactions
    api.link_transactions(made.id, [transaction.id])
    return api.get_operation(made.id)


def exported(client, query: str) -> list[dict[str, str]]:
    response = client.get(f"/operations/export.csv?{query}")
    assert response.status_code == 200
    return list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))


def test_an_underpaid_operation_exports_its_money_and_its_value_in_dollars(
    app, accountant, api, sandbox
):
    operation = underpaid(api, sandbox, "1", "0.4")
    sync_now(app)
    (row,) = exported(accountant, f"order_id={operation.order_id}")
    assert row["state"] == "Underpaid"
    assert Decimal(row["due"]) == Decimal(1)
    assert Decimal(row["received"]) == Decimal("0.4") == operation.amount_paid
    assert Decimal(row["awaiting"]) == 0
    assert Decimal(row["difference"]) == Decimal("-0.6")
    assert operation.fee > 0
    assert Decimal(row["fee_charged"]) == operation.fee
    assert row["fee_currency"] == "BTC"
    assert Decimal(row["net"]) == Decimal("0.4") - operation.fee
    assert Decimal(row["value_usd"]) == Decimal("0.4") * BTC_PRICE


def test_money_the_ledger_has_not_booked_yet_has_no_value(accountant, api, sandbox):
    operation = underpaid(api, sandbox, "1", "0.4")  # no sync since it was paid
    (row,) = exported(accountant, f"order_id={operation.order_id}")
    assert Decimal(row["received"]) == Decimal("0.4")
    assert row["value_usd"] == ""


def test_each_transaction_with_its_order_number_and_the_rate_its_money_is_valued_at(
    app, accountant, api, sandbox
):
    in_bitcoin = underpaid(api, sandbox, "1", "0.4")
    in_dollars = underpaid(api, sandbox, "120", "0.001", currency="USD")
    sync_now(app)
    orders = f"{in_bitcoin.order_id},{in_dollars.order_id}"
    rows = {
        row["order_id"]: row
        for row in exported(accountant, f"detail=transactions&order_id={orders}")
    }
    assert rows.keys() == {in_bitcoin.order_id, in_dollars.order_id}

    market = rows[in_bitcoin.order_id]
    assert market["operation_id"] == in_bitcoin.id
    assert Decimal(market["rate_usd"]) == BTC_PRICE
    assert market["rate_source"] == "market"
    assert UTC_ISO.fullmatch(market["rate_at (UTC)"])
    assert market["rate_at (UTC)"] <= market["created_at (UTC)"]  # read before it came

    priced = rows[in_dollars.order_id]
    assert in_dollars.rate == Decimal("0.00001667")  # 1/60000 to 8 places, as the API fixed it
    assert Decimal(priced["rate_usd"]) == (1 / in_dollars.rate).quantize(Decimal("1e-8"))
    assert priced["rate_source"] == "operation"
    assert UTC_ISO.fullmatch(priced["rate_at (UTC)"])


def test_the_operations_page_offers_the_transactions_export_with_its_filters(accountant):
    page = accountant.get("/operations?status=1&order_id=A-1").get_data(as_text=True)
    links = re.findall(
        r'<a [^>]*href="([^"]+)"[^>]*aria-label="Export transactions \(CSV\), times in UTC"', page
    )
    assert len(links) == 1
    url = urlsplit(links[0].replace("&amp;", "&"))
    assert url.path == "/operations/export.csv"
    assert parse_qs(url.query) == {"detail": ["transactions"], "status": ["1"], "order_id": ["A-1"]}


@needs_soffice
@pytest.mark.slow  # LibreOffice opens the file: seconds
def test_a_spreadsheet_reads_the_money_columns_as_numbers(app, accountant, api, sandbox, tmp_path):
    underpaid(api, sandbox, "1", "0.4")
    sync_now(app)
    (rows,) = spreadsheets(accountant, tmp_path, ",", "/operations/export.csv")
    header = [text_of(cell) for cell in rows[0]]
    office = FODS["office"]
    cells = dict(zip(header, rows[1], strict=False))
    for name, value in (("difference", Decimal("-0.6")), ("value_usd", Decimal("0.4") * BTC_PRICE)):
        assert cells[name].get(f"{{{office}}}value-type") == "float", name
        assert Decimal(cells[name].get(f"{{{office}}}value")) == value
    assert text_of(cells["fee_currency"]) == "BTC"


def test_the_rates_of_far_apart_payments_are_read_without_the_rates_between(app, accounts):
    """A page of an export sorted by amount holds payments of any time: the rates recorded
    between them (a row each sync while the market moves) are never read."""
    from portal.extensions import db
    from portal.identity.rules.accounts import merchant_named
    from portal.money.rules.rate_history import Rate, RateBook, record

    start = datetime(2026, 1, 1, tzinfo=UTC)
    with app.app_context():
        merchant_id = merchant_named(MERCHANT).id
        for hour in range(48):
            rates = {("BTC", "USD"): BTC_PRICE + hour}
            record(merchant_id, 1, rates, start + timedelta(hours=hour))
        db.session.commit()
        early, late = start + timedelta(minutes=5), start + timedelta(hours=47, minutes=10)
        before_any = start - timedelta(minutes=1)
        book = RateBook.in_force_at(merchant_id, 1, [late, early, before_any, early])
        assert len(book.records) == 2
        assert book.rate("BTC", "USD", early) == Rate(BTC_PRICE, start)
        assert book.rate("BTC", "USD", late) == Rate(BTC_PRICE + 47, start + timedelta(hours=47))
        assert book.rate("BTC", "USD", before_any) is None
