"""The query string -> API filters conversion every list (and export) shares, and its helpers."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

import pytest
from werkzeug.datastructures import MultiDict

from portal.api import ApiRefusal
from portal.payments.pages.operations.forms import OperationFilters
from portal.payments.pages.transactions.forms import TransactionFilters
from portal.web.api_errors import handle_api_error
from portal.web.filters import read_filters


def test_every_operation_filter_becomes_its_api_value():
    query = read_filters(
        OperationFilters,
        MultiDict(
            [
                ("id", "1, 2,,3"),
                ("order_id", "A-1,B 2"),
                ("category", "manual"),
                ("status", "0"),
                ("status", "5"),
                ("amount_from", "0.000000001"),
                ("amount_to", "12"),
                ("fee_from", "-1"),
                ("fee_to", "1"),
                ("amount_paid_from", "0"),
                ("amount_paid_to", "100000000000000000000.5"),
                ("currency", "btc, usdt"),
                ("currency_paid", "ETH"),
                ("address", "tb1qxyz"),
                ("created_from", "2024-01-31"),
                ("created_to", "2024-02-29"),
                ("sort", "amount_paid"),
                ("sort_type", "desc"),
                ("per_page", "100"),
                ("page", "7"),
            ]
        ),
    )
    assert query.filters == {
        "id": ["1", "2", "3"],
        "order_id": ["A-1", "B 2"],
        "category": "manual",
        "status": [0, 5],
        "amount_from": Decimal("0.000000001"),
        "amount_to": Decimal("12"),
        "fee_from": Decimal("-1"),
        "fee_to": Decimal("1"),
        "amount_paid_from": Decimal("0"),
        "amount_paid_to": Decimal("100000000000000000000.5"),
        "currency": ["BTC", "USDT"],
        "currency_paid": ["ETH"],
        "address": "tb1qxyz",
        "created_from": date(2024, 1, 31),
        "created_to": date(2024, 2, 29),
        "sort": "amount_paid",
        "sort_type": "desc",
        "per_page": 100,
        "page": 7,
    }
    assert all(not isinstance(v, float) for v in query.filters.values())


def test_an_empty_query_asks_for_the_first_page_of_50():
    assert read_filters(OperationFilters, MultiDict()).filters == {"per_page": 50, "page": 1}


@pytest.mark.parametrize(("linked", "expected"), [("1", True), ("0", False), ("", None)])
def test_linked(linked, expected):
    filters = read_filters(TransactionFilters, MultiDict({"linked": linked})).filters
    assert filters.get("linked") is expected


def test_query_args_keep_what_was_typed_and_drop_defaults_and_empties():
    form = read_filters(
        OperationFilters,
        MultiDict([("id", ""), ("per_page", "50"), ("amount_from", "ten"), ("status", "1")]),
    ).form
    assert form.query_args() == {"amount_from": "ten", "status": ["1"]}
    assert form.query_args(page=2)["page"] == 2


def test_sort_links_turn_the_order_around():
    form = read_filters(OperationFilters, MultiDict({"sort": "fee", "page": "3"})).form
    args, current = form.sort_link("fee")
    assert current == "ascending" and args == {"sort": "fee", "sort_type": "desc"}
    args, current = form.sort_link("amount")
    assert current is None and args == {"sort": "amount", "sort_type": "asc"}


def test_api_validation_errors_go_to_their_fields():
    form = read_filters(OperationFilters, MultiDict()).form
    error = ApiRefusal(9, errors={"currency": ["Unknown currency XYZ."], "other": ["Odd."]})
    refused = handle_api_error(error, form)
    assert form.currency.errors == ["Unknown currency XYZ."]
    assert refused.status == 422
    assert refused.error is not None and refused.error.endswith(" Odd."), "names no field: above"
