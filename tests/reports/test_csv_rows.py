"""CSV cells for accountants: exact decimals, named zones, formulas neutralised."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from portal.api.records import Transaction
from portal.payments.rules.operation_list import StatedOperation
from portal.payments.rules.paid_transactions import operation_transactions
from portal.reports.rules.csv_rows import (
    OPERATION_COLUMNS,
    TRANSACTION_COLUMNS,
    UTC_ZONE,
    VOUCHER_COLUMNS,
    TimeZone,
    _neutralise_pieces,
    header,
    neutralise,
    row_writer,
    utc_text,
)

MOMENT = datetime(2026, 11, 22, 2, 8, 22, 123456, tzinfo=UTC)


def operation(**changes) -> StatedOperation:
    values = {
        "id": "42",
        "category": "application",
        "amount": Decimal("0.10000000"),
        "fee": Decimal("0.00100000"),
        "rate": Decimal("1.00000000"),
        "currency": "BTC",
        "currency_paid": "BTC",
        "status": "new",
        "address": "tb1qexample",
        "created_at": MOMENT,
        "updated_at": MOMENT,
        "order_id": "ORD-1",
        "state": "Awaiting payment",
    }
    return StatedOperation(**{**values, **changes})


def by_header(columns, record, zone) -> dict[str, str]:
    """The CSV row of `record` by header name."""
    return dict(zip(header(columns, zone), row_writer(columns, zone)(record), strict=True))


@pytest.mark.parametrize("trigger", ["=", "+", "-", "@", "\t", "\r", "\n"])
def test_text_starting_with_a_formula_trigger_is_neutralised(trigger):
    assert neutralise(f"{trigger}SUM(A1:A9)") == f"'{trigger}SUM(A1:A9)"


@pytest.mark.parametrize("text", ["ORD-1", "hello=world", "", "42", "Ünïcode", "-4", "a;+5.5"])
def test_ordinary_text_and_plain_numbers_are_unchanged(text):
    assert neutralise(text) == text


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("INV-1;=1+1;@SUM(9*9)", "INV-1;'=1+1;'@SUM(9*9)"),
        ("INV-2,=2+2", "INV-2,'=2+2"),
        ('INV-3;"=3+3', "INV-3;'\"=3+3"),
        ("INV-4; -4+4", "INV-4;' -4+4"),
        ("INV-5\t=5+5", "INV-5\t'=5+5"),
        ("\t=6+6", "'\t'=6+6"),
    ],
)
def test_a_formula_behind_a_list_separator_is_neutralised(text, shown):
    assert neutralise(text) == shown


@given(st.text(alphabet=st.sampled_from("=+-@\t\r\n,; \"'0123456789.aZ\u2060"), max_size=12))
def test_a_cell_without_a_formula_character_is_returned_as_it_is_and_others_checked(text):
    """The shortcut for most cells gives what checking every piece gives."""
    assert neutralise(text) == _neutralise_pieces(text)


@given(st.datetimes(min_value=datetime(2, 1, 1), timezones=st.timezones()))
def test_utc_timestamps_are_written_as_strftime_writes_them(moment):
    assert utc_text(moment) == moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_every_text_column_of_an_operation_is_neutralised():
    hostile = operation(
        order_id='=HYPERLINK("http://evil")', address="+1x", status="@cmd", currency="-X"
    )
    cells = by_header(OPERATION_COLUMNS, hostile, UTC_ZONE)
    assert cells["order_id"] == '\'=HYPERLINK("http://evil")'
    assert cells["address"] == "'+1x"
    assert cells["status"] == "'@cmd"
    assert cells["currency"] == "'-X"


def test_amounts_stay_exact_numbers_even_when_negative():
    cells = row_writer(OPERATION_COLUMNS, UTC_ZONE)(operation(amount=Decimal("-5.50000000")))
    names = header(OPERATION_COLUMNS, UTC_ZONE)
    assert cells[names.index("amount")] == "-5.50000000"
    assert cells[names.index("fee")] == "0.00100000"
    assert cells[names.index("amount_paid")] == ""


def test_timestamps_in_utc_or_the_users_zone_with_the_zone_named():
    utc_cells = by_header(OPERATION_COLUMNS, operation(), UTC_ZONE)
    assert utc_cells["created_at (UTC)"] == "2026-11-22T02:08:22.123456Z"
    berlin = TimeZone(ZoneInfo("Europe/Berlin"), "Europe/Berlin")
    local = by_header(OPERATION_COLUMNS, operation(), berlin)
    assert local["created_at (Europe/Berlin)"] == "2026-11-22T03:08:22.123456+01:00"


def test_an_operations_transactions_carry_its_id():
    tx = Transaction(
        id="7",
        tx_id="ab",
        amount=Decimal("0.05000000"),
        status="confirmed",
        linked=True,
        created_at=MOMENT,
        updated_at=MOMENT,
    )
    (carried,) = operation_transactions(operation(transactions=(tx,)))
    cells = by_header(TRANSACTION_COLUMNS, carried, UTC_ZONE)
    assert cells["operation_id"] == "42"
    assert cells["linked"] == "true"
    assert cells["amount"] == "0.05000000"


def test_a_voucher_export_has_no_code_column():
    names = header(VOUCHER_COLUMNS, UTC_ZONE)
    assert "code" not in names
    assert names[:3] == ["id", "amount", "currency"]


def test_a_transaction_carries_the_currency_its_operation_was_paid_in():
    tx = Transaction(
        id="7",
        tx_id="ab",
        amount=Decimal("0.05000000"),
        status="confirmed",
        linked=False,
        created_at=MOMENT,
        updated_at=MOMENT,
    )
    (carried,) = operation_transactions(operation(currency="USD", transactions=(tx,)))
    assert by_header(TRANSACTION_COLUMNS, carried, UTC_ZONE)["currency"] == "BTC"
