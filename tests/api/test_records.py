"""Answers become typed, immutable records: Decimal money, UTC datetimes, tolerant of drift."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from portal.api import (
    ApiUnavailable,
    CrossExchange,
    Exchange,
    Operation,
    Page,
    Transaction,
    Voucher,
)
from tests.support.fake_api import (
    Answer,
    FakeApi,
    cross_exchange_json,
    operation_json,
    page_json,
    transaction_json,
    voucher_json,
)


@pytest.fixture
def api():
    with FakeApi() as fake:
        yield fake


def test_operation_with_its_transactions(api):
    body = operation_json(
        amount_paid="0.30000000",
        transactions=[transaction_json(), transaction_json(id="8", reject_reason="dust")],
    )
    api.answer("GET", "/v1/operations/42", Answer(200, {"data": body}))
    operation = api.client().get_operation("42")
    assert isinstance(operation, Operation)
    assert operation.amount == Decimal("100.00000000") and isinstance(operation.amount, Decimal)
    assert operation.amount_paid == Decimal("0.3")
    assert operation.rate == Decimal("0.00001538")
    assert operation.created_at == datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert operation.redirect_url is None
    assert [t.id for t in operation.transactions] == ["7", "8"]
    assert isinstance(operation.transactions, tuple)
    assert operation.transactions[1].reject_reason == "dust"
    assert operation.transactions[0].operation_id is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        operation.status = "confirmed"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("2024-05-01T10:00:00+00:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("2024-05-01T12:00:00.5+02:00", datetime(2024, 5, 1, 10, 0, 0, 500000, tzinfo=UTC)),
        ("2024-05-01T10:00:00.123456789Z", datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)),
        ("2024-05-01 10:00:00", datetime(2024, 5, 1, 10, tzinfo=UTC)),
    ],
)
def test_timestamps_are_aware_utc(api, text, expected):
    api.answer(
        "GET", "/v1/transactions/7", Answer(200, {"data": transaction_json(created_at=text)})
    )
    created = api.client().get_transaction("7").created_at
    assert created == expected
    assert created.utcoffset().total_seconds() == 0


def test_unknown_status_extra_fields_and_missing_nullables_are_tolerated(api):
    body = operation_json(status="partially_paid", surprise={"nested": [1]}, fee="1")
    for nullable in ("application_id", "application_name", "order_id", "payment_url"):
        del body[nullable]
    del body["transactions"]
    api.answer("GET", "/v1/operations/42", Answer(200, {"data": body}))
    operation = api.client().get_operation("42")
    assert operation.status == "partially_paid"
    assert operation.order_id is None and operation.application_id is None
    assert operation.transactions == ()
    assert operation.fee == Decimal(1)


def test_numbers_and_integer_ids_are_accepted_where_strings_are_documented(api):
    body = transaction_json(id=7, amount=0.5, linked=1)
    api.answer("GET", "/v1/transactions/7", Answer(200, {"data": body}))
    transaction = api.client().get_transaction("7")
    assert (transaction.id, transaction.amount, transaction.linked) == ("7", Decimal("0.5"), True)


def test_a_record_without_the_data_wrapper_is_accepted(api):
    api.answer("GET", "/v1/vouchers/3", Answer(200, voucher_json()))
    assert api.client().get_voucher("3").id == "3"


def test_voucher_code_stays_out_of_the_repr(api):
    api.answer("GET", "/v1/vouchers/3", Answer(200, {"data": voucher_json()}))
    voucher = api.client().get_voucher("3")
    assert isinstance(voucher, Voucher)
    assert voucher.code == "ABCD-EFGH-IJKL-MNOP"
    assert "ABCD" not in repr(voucher)


RATES = '{"BTC:USD": 65000.12345678, "ETH:BTC": 0.04923077, "USDT:USD": 1, "ETH:USD": "3200.5"}'


@pytest.mark.parametrize("body", [RATES, '{"data": ' + RATES + "}"])
def test_rates_top_level_or_wrapped_and_never_floats(api, body):
    api.answer("GET", "/v1/rates", Answer(200, body, content_type="application/json"))
    api.answer("GET", "/v1/exchange/rates", Answer(200, body, content_type="application/json"))
    client = api.client()
    for rates in (client.get_rates(), client.get_exchange_rates()):
        assert rates == {
            ("BTC", "USD"): Decimal("65000.12345678"),
            ("ETH", "BTC"): Decimal("0.04923077"),
            ("USDT", "USD"): Decimal(1),
            ("ETH", "USD"): Decimal("3200.5"),
        }
        assert all(type(rate) is Decimal for rate in rates.values())


def test_rates_ignore_keys_that_are_not_pairs(api):
    body = {"BTC:USD": 1, "timestamp": "2024-05-01T10:00:00Z", "a:b:c": 2}
    api.answer("GET", "/v1/rates", Answer(200, body))
    assert api.client().get_rates() == {("BTC", "USD"): Decimal(1)}


def test_page_meta(api):
    body = page_json([voucher_json(id="1"), voucher_json(id="2")], page=2, per_page=2, total=5)
    api.answer("GET", "/v1/vouchers", Answer(200, body))
    page = api.client().list_vouchers(page=2, per_page=2)
    assert isinstance(page, Page)
    assert [v.id for v in page.items] == ["1", "2"]
    assert (page.total, page.current_page, page.last_page, page.per_page) == (5, 2, 3, 2)
    assert (page.from_, page.to) == (3, 4)
    assert page.has_previous and page.has_next


def test_page_past_the_end_has_no_positions(api):
    api.answer("GET", "/v1/transactions", Answer(200, page_json([], page=9, per_page=50, total=3)))
    page = api.client().list_transactions(page=9)
    assert page.items == ()
    assert (page.from_, page.to, page.has_next) == (None, None, False)


def test_iterator_reads_every_page_once(api):
    records = [transaction_json(id=str(n), operation_id="1") for n in range(1, 251)]
    pages = [
        Answer(200, page_json(records[i : i + 100], page=i // 100 + 1, per_page=100, total=250))
        for i in range(0, 250, 100)
    ]
    api.answer_pages("GET", "/v1/transactions", *pages)
    ids = [t.id for t in api.client().iter_transactions(linked=False)]
    assert ids == [str(n) for n in range(1, 251)]
    queries = sorted((r.query for r in api.received), key=lambda query: query["page"])
    assert queries == [{"linked": "0", "per_page": "100", "page": str(n)} for n in (1, 2, 3)]


def test_iterator_skips_a_record_seen_on_an_earlier_page(api):
    first = page_json([voucher_json(id="3"), voucher_json(id="2")], page=1, per_page=2, total=4)
    # A new voucher arrived meanwhile: "2" moved to page 2.
    second = page_json([voucher_json(id="2"), voucher_json(id="1")], page=2, per_page=2, total=4)
    api.answer("GET", "/v1/vouchers", Answer(200, first), Answer(200, second))
    assert [v.id for v in api.client().iter_vouchers(per_page=2)] == ["3", "2", "1"]


def test_iterator_stops_on_an_empty_page(api):
    answer = Answer(200, page_json([], page=1, per_page=100, total=7))
    api.answer("GET", "/v1/operations", answer)
    assert list(api.client().iter_operations()) == []
    assert api.count("GET", "/v1/operations") == 1


def test_iterator_refuses_a_page_filter(api):
    with pytest.raises(TypeError, match="page"):
        api.client().iter_operations(page=2)


@pytest.mark.parametrize(
    ("status", "body"), [(204, ""), (200, ""), (200, {"data": operation_json(status="canceled")})]
)
def test_cancel_operation_accepts_204_and_200(api, status, body):
    api.answer("PUT", "/v1/operations/42/cancel", Answer(status, body))
    assert api.client().cancel_operation("42") is None


@pytest.mark.parametrize(
    ("call", "path", "record", "kind"),
    [
        (lambda c: c.cancel_voucher("3"), "/v1/vouchers/3/cancel", voucher_json, Voucher),
        (
            lambda c: c.cancel_cross_exchange("5"),
            "/v1/cross-exchanges/5/cancel",
            cross_exchange_json,
            CrossExchange,
        ),
    ],
)
def test_cancel_answers_the_record_or_nothing(api, call, path, record, kind):
    api.answer("PUT", path, Answer(200, {"data": record(status="cancelled")}), Answer(204, ""))
    client = api.client()
    canceled = call(client)
    assert isinstance(canceled, kind) and canceled.status == "cancelled"
    assert call(client) is None


@pytest.mark.parametrize("status", [200, 201])
def test_create_exchange_accepts_200_and_201_and_sparse_records(api, status):
    api.answer("POST", "/v1/exchange", Answer(status, {"data": {"id": 12, "rate": "20.5"}}))
    exchange = api.client().create_exchange("BTC", "ETH", sell_amount=Decimal("0.1"))
    assert exchange == Exchange(id="12", rate=Decimal("20.5"))


def test_cross_exchange_record(api):
    api.answer("GET", "/v1/cross-exchanges/5", Answer(200, {"data": cross_exchange_json()}))
    cross = api.client().get_cross_exchange("5")
    assert cross.expired_at == datetime(2024, 5, 1, 10, 30, tzinfo=UTC)
    assert cross.buy_amount == Decimal(2) and cross.operation_id == "43"


@pytest.mark.parametrize(
    ("status", "body"), [(200, {"data": {"status": "ok"}}), (200, ""), (204, ""), (202, "pong")]
)
def test_ping_accepts_any_2xx(api, status, body):
    api.answer("GET", "/v1/ping", Answer(status, body))
    assert api.client().ping() is None


def test_transaction_record_type(api):
    body = transaction_json(status="rejected", reject_reason="wrong amount", operation_id="42")
    api.answer("GET", "/v1/transactions/7", Answer(200, {"data": body}))
    transaction = api.client().get_transaction("7")
    assert isinstance(transaction, Transaction)
    assert (transaction.status, transaction.reject_reason) == ("rejected", "wrong amount")


# A finite Decimal that would be a billion digits written out, and the edges of what is kept.
TOO_LONG = ["1E+999999999", "0E-1000000", "1" + "0" * 30, "0." + "0" * 30 + "1"]


@pytest.mark.parametrize("amount", TOO_LONG)
def test_an_amount_too_long_to_write_out_is_a_malformed_answer(api, amount):
    api.answer("GET", "/v1/operations/42", Answer(200, {"data": operation_json(amount=amount)}))
    with pytest.raises(ApiUnavailable, match="digits before or after its point"):
        api.client().get_operation("42")


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        ("operation", operation_json(id="42", fee=""), "fee"),
        ("operation", operation_json(id="42", created_at=""), "created_at"),
        ("transaction", transaction_json(id="42", linked=""), "linked"),
    ],
)
def test_an_empty_text_where_a_number_time_or_yes_no_is_documented_is_malformed(
    api, kind, body, field
):
    """An empty text is no amount, moment or yes/no: taken as one, pages answered 500 and
    webhooks carried `"fee": ""`."""
    api.answer("GET", f"/v1/{kind}s/42", Answer(200, {"data": body}))
    with pytest.raises(ApiUnavailable, match=field):
        getattr(api.client(), f"get_{kind}")("42")


def test_a_rate_too_long_to_write_out_is_a_malformed_answer(api):
    body = '{"BTC:USD": 1E+999999999}'
    api.answer("GET", "/v1/rates", Answer(200, body, content_type="application/json"))
    with pytest.raises(ApiUnavailable, match="digits before or after its point"):
        api.client().get_rates()


def test_amounts_up_to_thirty_digits_each_side_are_kept_exactly(api):
    amount = "9" * 30 + "." + "9" * 30
    api.answer("GET", "/v1/operations/42", Answer(200, {"data": operation_json(amount=amount)}))
    assert api.client().get_operation("42").amount == Decimal(amount)


def test_a_record_read_is_the_record_its_constructor_makes():
    """parse_record fills records without their __init__: the same fields, defaults included,
    equal, hashable and frozen as a record made the ordinary way."""
    from portal.api.records import parse_record

    body = operation_json(transactions=[transaction_json()])
    del body["application_id"], body["payment_url"]  # optional fields the answer left out
    read = parse_record(Operation, body)
    made = Operation(
        **{
            spec.name: getattr(read, spec.name)
            for spec in dataclasses.fields(Operation)
            if spec.name not in ("application_id", "payment_url")
        }
    )
    assert read == made and hash(read) == hash(made) and repr(read) == repr(made)
    assert read.application_id is None and read.payment_url is None
    assert dataclasses.replace(read, status="confirmed").status == "confirmed"
    with pytest.raises(dataclasses.FrozenInstanceError):
        read.amount = Decimal(1)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("order_id", "kept"),
    [
        ("o" * 255, "o" * 255),  # printable ASCII up to its length: taken as it is
        ("Bestellung Nr. 7 für Jürgen", "Bestellung Nr. 7 für Jürgen"),  # other text: checked
        ("line\tand tab", "line\tand tab"),
        (1234, "1234"),  # an integer where text is documented
        ("o" * 256, None),  # one past its length
        ("order\u0000", None),  # a control character
        ("order\ud800", None),  # a lone surrogate
    ],
)
def test_a_text_field_is_kept_within_its_length_and_without_control_characters(order_id, kept):
    from portal.api.records import parse_record
    from portal.api.wire import MalformedAnswer

    body = operation_json(order_id=order_id)
    if kept is None:
        with pytest.raises(MalformedAnswer, match="order_id"):
            parse_record(Operation, body)
    else:
        assert parse_record(Operation, body).order_id == kept


def test_a_record_copied_with_other_fields_is_the_record_replace_makes():
    from portal.api.records import parse_record, with_fields

    read = parse_record(Operation, operation_json(transactions=[transaction_json()]))
    copied = with_fields(read, status="confirmed", transactions=())
    assert copied == dataclasses.replace(read, status="confirmed", transactions=())
    assert (read.status, len(read.transactions)) != ("confirmed", 0)  # the original unchanged
    with pytest.raises(dataclasses.FrozenInstanceError):
        copied.status = "new"  # type: ignore[misc]


def test_every_public_name_of_the_client_imports_with_a_star():
    """`from portal.api import *` gives each name the package lists as public (a name that is
    not one, such as an enum member's, made the import raise)."""
    import portal.api

    namespace: dict = {}
    exec("from portal.api import *", namespace)  # noqa: S102 (a fixed statement)
    assert set(portal.api.__all__) <= namespace.keys()
