"""Contract of the lists over the seeded sandbox: envelope, pagination, filters, sorts.

Every expectation is computed independently: all records are fetched (per_page=100 across the
pages), then filtered and sorted here with Decimal, and the ids compared.
"""

from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pytest

from tests.sandbox.contract import (
    OPERATION_STATUS,
    PREFIXES,
    TRANSACTION_STATUS,
    Api,
    acceptable_orders,
    assert_error,
    check_operation,
    check_transaction,
    fetch_all,
    ids,
    list_of,
    newest_first,
    query_of,
)

LISTS = ("/operations", "/transactions")


def d(value):
    return None if value is None else Decimal(value)


def day(record) -> str:
    return record["created_at"][:10]


def check_filter(api: Api, path: str, params: dict, predicate) -> list[dict]:
    everything = fetch_all(api, path)
    expected = [record for record in newest_first(everything) if predicate(record)]
    got = fetch_all(api, path, params)
    assert ids(got) == ids(expected), params
    return got


# The seeded data -------------------------------------------------------------------------------


def test_seeded_operations_are_varied_and_well_formed(seeded_api):
    operations = fetch_all(seeded_api, "/operations")
    assert len(operations) == 300
    for op in operations:
        check_operation(op)
    assert len({op["currency"] for op in operations}) >= 3
    assert len({op["currency_paid"] for op in operations}) >= 2
    assert len({op["status"] for op in operations}) >= 3
    assert sum(len(op["transactions"]) for op in operations) > 0
    now = dt.datetime.now(dt.UTC)
    oldest = (now - dt.timedelta(days=91)).strftime("%Y-%m-%dT%H:%M:%S")
    assert all(
        oldest <= op["created_at"] <= now.strftime("%Y-%m-%dT%H:%M:%S.999999Z") for op in operations
    )
    assert len({day(op) for op in operations}) > 30  # spread over the last 90 days


def test_seeded_transactions_are_well_formed_and_match_their_operations(seeded_api):
    transactions = fetch_all(seeded_api, "/transactions")
    operations = {op["id"]: op for op in fetch_all(seeded_api, "/operations")}
    for tx in transactions:
        check_transaction(tx)
        embedded = {item["id"]: item for item in operations[tx["operation_id"]]["transactions"]}
        assert tx["id"] in embedded
        assert {k: v for k, v in tx.items() if k != "operation_id"} == embedded[tx["id"]]
    assert len(transactions) == sum(len(op["transactions"]) for op in operations.values())
    # amount_paid is the sum of the confirmed transactions once there has been a payment.
    for op in operations.values():
        if op["category"] in ("application", "manual") and op["amount_paid"] is not None:
            confirmed = [
                Decimal(tx["amount"]) for tx in op["transactions"] if tx["status"] == "confirmed"
            ]
            assert Decimal(op["amount_paid"]) == sum(confirmed, Decimal(0)), op["id"]


@pytest.mark.parametrize("path", LISTS)
def test_default_order_is_newest_first(seeded_api, path):
    records = fetch_all(seeded_api, path)
    assert ids(records) == ids(newest_first(records))
    assert len(set(ids(records))) == len(records)


# Envelope and pagination ------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("path", LISTS)
def test_first_page_envelope(seeded_sandbox, prefix, path):
    api = Api(seeded_sandbox, prefix)
    body = list_of(api.get(path))
    meta, links = body["meta"], body["links"]
    total = meta["total"]
    assert total > 50
    assert meta["per_page"] == 50
    assert meta["current_page"] == 1
    assert meta["last_page"] == math.ceil(total / 50)
    assert meta["from"] == 1 and meta["to"] == 50
    assert len(body["data"]) == 50
    assert meta["path"] == api.url(path)
    assert links["first"] == f"{api.url(path)}?page=1"
    assert links["last"] == f"{api.url(path)}?page={meta['last_page']}"
    assert links["prev"] is None
    assert links["next"] == f"{api.url(path)}?page=2"
    for name in ("current_page", "from", "to", "last_page", "per_page", "total"):
        assert type(meta[name]) is int, name


@pytest.mark.parametrize("path", LISTS)
def test_middle_and_last_pages(seeded_api, path):
    first = list_of(seeded_api.get(path, {"per_page": 40}))
    total, last_page = first["meta"]["total"], first["meta"]["last_page"]
    assert last_page == math.ceil(total / 40)

    middle = list_of(seeded_api.get(path, {"per_page": 40, "page": 2}))
    assert middle["meta"]["from"] == 41 and middle["meta"]["to"] == 80
    assert middle["meta"]["current_page"] == 2
    assert query_of(middle["links"]["prev"]) == (
        seeded_api.url(path),
        [("per_page", "40"), ("page", "1")],
    )
    assert query_of(middle["links"]["next"]) == (
        seeded_api.url(path),
        [("per_page", "40"), ("page", "3")],
    )
    assert query_of(middle["links"]["first"])[1] == [("per_page", "40"), ("page", "1")]
    assert query_of(middle["links"]["last"])[1] == [("per_page", "40"), ("page", str(last_page))]

    last = list_of(seeded_api.get(path, {"per_page": 40, "page": last_page}))
    assert last["links"]["next"] is None
    assert query_of(last["links"]["prev"])[1] == [("per_page", "40"), ("page", str(last_page - 1))]
    assert last["meta"]["to"] == total
    assert last["meta"]["from"] == (last_page - 1) * 40 + 1
    assert len(last["data"]) == total - (last_page - 1) * 40


@pytest.mark.parametrize("path", LISTS)
def test_walking_the_pages_yields_every_record_once(seeded_api, path):
    everything = ids(fetch_all(seeded_api, path))
    walked = []
    page = 1
    while True:
        body = list_of(seeded_api.get(path, {"per_page": 33, "page": page}))
        walked += ids(body["data"])
        if body["links"]["next"] is None:
            break
        page += 1
    assert walked == everything


@pytest.mark.parametrize(
    ("asked", "used"), [("100", 100), ("101", 100), ("1000", 100), ("1", 1), ("7", 7)]
)
def test_per_page_is_clamped_to_100(seeded_api, asked, used):
    body = list_of(seeded_api.get("/operations", {"per_page": asked}))
    assert body["meta"]["per_page"] == used
    assert len(body["data"]) == used
    assert body["meta"]["last_page"] == math.ceil(300 / used)


@pytest.mark.parametrize("path", LISTS)
def test_a_page_past_the_end_is_empty(seeded_api, path):
    body = list_of(seeded_api.get(path, {"page": 999}))
    meta = body["meta"]
    assert body["data"] == []
    assert meta["from"] is None and meta["to"] is None
    assert meta["current_page"] == 999
    assert meta["total"] > 0 and meta["last_page"] == math.ceil(meta["total"] / 50)
    assert body["links"]["next"] is None
    assert body["links"]["prev"] == f"{seeded_api.url(path)}?page=998"
    assert body["links"]["last"] == f"{seeded_api.url(path)}?page={meta['last_page']}"
    huge = list_of(seeded_api.get(path, {"page": 2_147_483_647}))
    assert huge["data"] == [] and huge["links"]["next"] is None


@pytest.mark.parametrize("path", LISTS)
def test_an_empty_result(seeded_api, path):
    body = list_of(seeded_api.get(path, {"id": "999999"}))
    assert body["data"] == []
    assert body["meta"]["total"] == 0
    assert body["meta"]["last_page"] == 1
    assert body["meta"]["current_page"] == 1
    assert body["meta"]["from"] is None and body["meta"]["to"] is None
    assert body["links"]["prev"] is None and body["links"]["next"] is None
    assert query_of(body["links"]["first"]) == (
        seeded_api.url(path),
        [("id", "999999"), ("page", "1")],
    )
    assert query_of(body["links"]["last"]) == (
        seeded_api.url(path),
        [("id", "999999"), ("page", "1")],
    )


def test_links_keep_the_other_parameters_and_put_page_last(seeded_api):
    params = {"status": "1,3", "sort": "amount", "sort_type": "desc", "per_page": "10", "page": "2"}
    body = list_of(seeded_api.get("/operations", params))
    others = sorted((k, v) for k, v in params.items() if k != "page")
    for name, page in (("first", 1), ("prev", 1), ("next", 3), ("last", body["meta"]["last_page"])):
        path, query = query_of(body["links"][name])
        assert path == seeded_api.url("/operations")
        assert query[-1] == ("page", str(page)), (name, query)
        assert sorted(query[:-1]) == others, (name, query)


@pytest.mark.parametrize("path", ["/operations", "/transactions", "/vouchers"])
@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("page", "0"),
        ("page", "-1"),
        ("page", "abc"),
        ("page", "1.5"),
        ("page", "2147483648"),
        ("page", "99999999999999999999999"),
        ("per_page", "0"),
        ("per_page", "-5"),
        ("per_page", "ten"),
        ("per_page", "2.0"),
        ("per_page", "1e2"),
    ],
)
def test_bad_page_or_per_page_is_code_9(seeded_api, path, name, value):
    assert_error(seeded_api.get(path, {name: value}), 9, name)


# Operation filters -------------------------------------------------------------------------------


def _some(records, key):
    values = sorted({key(r) for r in records if key(r) is not None})
    assert values, "the seeded data has no value for this filter"
    return values


def fixed(name, params, predicate):
    """A case whose parameters do not depend on the data."""
    return name, lambda records: (params, predicate)


def field_in(field, *values):
    return lambda record: record[field] in values


def op_cases():
    """(name, builder) where builder(all operations) -> (params, predicate)."""

    def by_ids(ops):
        chosen = [ops[3]["id"], ops[40]["id"], ops[200]["id"]]
        return {"id": f" {chosen[0]} ,{chosen[1]}, {chosen[2]}"}, lambda o: o["id"] in chosen

    def one_id(ops):
        return {"id": ops[7]["id"]}, lambda o: o["id"] == ops[7]["id"]

    def order_ids(ops):
        chosen = [ops[5]["order_id"], ops[50]["order_id"]]
        return {"order_id": ",".join(chosen)}, lambda o: o["order_id"] in chosen

    def amount_bound(ops, name, field, cmp):
        values = _some(ops, lambda o: d(o[field]))
        middle = values[len(values) // 2]
        return {
            name: f"{middle:f}"
        }, lambda o: o[field] is not None and cmp(Decimal(o[field]), middle)

    def amount_exact_more_decimals(ops):
        values = _some(ops, lambda o: d(o["amount"]))
        middle = values[len(values) // 3]
        bound = f"{middle:f}" + ("" if "." in f"{middle:f}" else ".") + "000000001"
        return {"amount_from": bound}, lambda o: Decimal(o["amount"]) > middle

    def amount_range(ops):
        values = _some(ops, lambda o: d(o["amount"]))
        low, high = values[len(values) // 4], values[3 * len(values) // 4]
        return (
            {"amount_from": f"{low:f}", "amount_to": f"{high:f}"},
            lambda o: low <= Decimal(o["amount"]) <= high,
        )

    def address(ops):
        return {"address": ops[11]["address"]}, lambda o: o["address"] == ops[11]["address"]

    def address_prefix(ops):
        return {
            "address": ops[11]["address"][:-1]
        }, lambda o: o["address"] == ops[11]["address"][:-1]

    def created(ops, which):
        days = _some(ops, day)
        chosen = days[len(days) // 2]
        if which == "both":
            return {"created_from": chosen, "created_to": chosen}, lambda o: day(o) == chosen
        if which == "from":
            return {"created_from": chosen}, lambda o: day(o) >= chosen
        return {"created_to": chosen}, lambda o: day(o) <= chosen

    def combined(ops):
        days = _some(ops, day)
        start = days[len(days) // 3]
        amounts = _some(ops, lambda o: d(o["amount"]))
        low = amounts[len(amounts) // 5]
        return (
            {
                "currency": "BTC,USD",
                "status": "0,1,3",
                "amount_from": f"{low:f}",
                "created_from": start,
            },
            lambda o: (
                o["currency"] in ("BTC", "USD")
                and o["status"] in ("new", "confirmed", "expired")
                and Decimal(o["amount"]) >= low
                and day(o) >= start
            ),
        )

    def bound(name, field, cmp):
        return lambda ops: amount_bound(ops, name, field, cmp)

    ge, le = (lambda a, b: a >= b), (lambda a, b: a <= b)
    cases = [
        ("id list with spaces", by_ids),
        ("one id", one_id),
        ("order_id list", order_ids),
        *[
            fixed(f"category {name}", {"category": name}, field_in("category", name))
            for name in ("application", "manual", "transfer", "internal_transfer")
        ],
        ("amount_from", bound("amount_from", "amount", ge)),
        ("amount_to", bound("amount_to", "amount", le)),
        ("amount range", amount_range),
        ("amount_from with 9 decimals", amount_exact_more_decimals),
        fixed("amount_from negative", {"amount_from": "-10"}, lambda o: True),
        fixed("amount_to negative", {"amount_to": "-0.5"}, lambda o: False),
        ("fee_from", bound("fee_from", "fee", ge)),
        ("fee_to", bound("fee_to", "fee", le)),
        ("amount_paid_from", bound("amount_paid_from", "amount_paid", ge)),
        ("amount_paid_to", bound("amount_paid_to", "amount_paid", le)),
        fixed(
            "amount_paid_from zero",
            {"amount_paid_from": "0"},
            lambda o: o["amount_paid"] is not None,
        ),
        fixed("currency", {"currency": "ETH"}, field_in("currency", "ETH")),
        fixed("currency list", {"currency": "USD , USDT"}, field_in("currency", "USD", "USDT")),
        fixed("currency_paid", {"currency_paid": "BTC"}, field_in("currency_paid", "BTC")),
        fixed(
            "currency_paid list",
            {"currency_paid": "ETH,USDT"},
            field_in("currency_paid", "ETH", "USDT"),
        ),
        *[
            fixed(f"status {code}", {"status": str(code)}, field_in("status", text))
            for code, text in OPERATION_STATUS.items()
        ],
        fixed("status list", {"status": " 1, 4 "}, field_in("status", "confirmed", "canceled")),
        ("address", address),
        ("address is exact", address_prefix),
        ("created on one day", lambda ops: created(ops, "both")),
        ("created_from", lambda ops: created(ops, "from")),
        ("created_to", lambda ops: created(ops, "to")),
        ("combined", combined),
    ]
    return cases


OP_CASES = op_cases()


@pytest.mark.parametrize(
    "builder", [case[1] for case in OP_CASES], ids=[case[0] for case in OP_CASES]
)
def test_operation_filters(seeded_api, builder):
    params, predicate = builder(fetch_all(seeded_api, "/operations"))
    check_filter(seeded_api, "/operations", params, predicate)


def test_status_filters_cover_every_operation(seeded_api):
    everything = fetch_all(seeded_api, "/operations")
    by_status = {
        code: fetch_all(seeded_api, "/operations", {"status": str(code)})
        for code in OPERATION_STATUS
    }
    assert sum(len(records) for records in by_status.values()) == len(everything)
    assert sum(bool(records) for records in by_status.values()) >= 3


def test_bounds_are_inclusive(seeded_api):
    op = fetch_all(seeded_api, "/operations")[17]
    exact = {"amount_from": op["amount"], "amount_to": op["amount"]}
    assert op["id"] in ids(fetch_all(seeded_api, "/operations", exact))
    fees = {"fee_from": op["fee"], "fee_to": op["fee"]}
    assert op["id"] in ids(fetch_all(seeded_api, "/operations", fees))
    # The same bound without trailing zeros compares equal.
    plain = f"{Decimal(op['amount']).normalize():f}"
    assert op["id"] in ids(
        fetch_all(seeded_api, "/operations", {"amount_from": plain, "amount_to": plain})
    )


# Transaction filters -----------------------------------------------------------------------------


def tx_cases():
    def by_ids(txs):
        chosen = [txs[0]["id"], txs[9]["id"]]
        return {"id": f"{chosen[0]} , {chosen[1]}"}, lambda t: t["id"] in chosen

    def by_operation(txs):
        chosen = sorted({t["operation_id"] for t in txs})[:3]
        return {"operation_id": ",".join(chosen)}, lambda t: t["operation_id"] in chosen

    def by_tx_id(txs):
        return {"tx_id": txs[4]["tx_id"]}, lambda t: t["tx_id"] == txs[4]["tx_id"]

    def amount(txs, name, cmp):
        values = _some(txs, lambda t: d(t["amount"]))
        middle = values[len(values) // 2]
        return {name: f"{middle:f}"}, lambda t: cmp(Decimal(t["amount"]), middle)

    def reason(txs):
        reasons = sorted({t["reject_reason"] for t in txs if t["reject_reason"]}) or ["no such"]
        return {"reject_reason": reasons[0]}, lambda t: t["reject_reason"] == reasons[0]

    def created(txs, which):
        days = _some(txs, day)
        chosen = days[len(days) // 2]
        if which == "both":
            return {"created_from": chosen, "created_to": chosen}, lambda t: day(t) == chosen
        if which == "from":
            return {"created_from": chosen}, lambda t: day(t) >= chosen
        return {"created_to": chosen}, lambda t: day(t) <= chosen

    def combined(txs):
        values = _some(txs, lambda t: d(t["amount"]))
        low = values[len(values) // 4]
        return (
            {"status": "1,2", "linked": "0", "amount_from": f"{low:f}"},
            lambda t: (
                t["status"] in ("confirmed", "undefined")
                and not t["linked"]
                and Decimal(t["amount"]) >= low
            ),
        )

    return [
        ("id list", by_ids),
        ("operation_id list", by_operation),
        ("tx_id", by_tx_id),
        ("amount_from", lambda txs: amount(txs, "amount_from", lambda a, b: a >= b)),
        ("amount_to", lambda txs: amount(txs, "amount_to", lambda a, b: a <= b)),
        *[
            fixed(f"status {code}", {"status": str(code)}, field_in("status", text))
            for code, text in TRANSACTION_STATUS.items()
        ],
        fixed("status list", {"status": "2, 4"}, field_in("status", "undefined", "rejected")),
        fixed("linked 1", {"linked": "1"}, field_in("linked", True)),
        fixed("linked 0", {"linked": "0"}, field_in("linked", False)),
        ("reject_reason", reason),
        ("created on one day", lambda txs: created(txs, "both")),
        ("created_from", lambda txs: created(txs, "from")),
        ("created_to", lambda txs: created(txs, "to")),
        ("combined", combined),
    ]


TX_CASES = tx_cases()


@pytest.mark.parametrize(
    "builder", [case[1] for case in TX_CASES], ids=[case[0] for case in TX_CASES]
)
def test_transaction_filters(seeded_api, builder):
    params, predicate = builder(fetch_all(seeded_api, "/transactions"))
    check_filter(seeded_api, "/transactions", params, predicate)


# Sorts -------------------------------------------------------------------------------------------

OP_SORTS = {
    "id": lambda o: int(o["id"]),
    "category": lambda o: o["category"],
    "order_id": lambda o: o["order_id"],
    "amount": lambda o: Decimal(o["amount"]),
    "fee": lambda o: Decimal(o["fee"]),
    "amount_paid": lambda o: d(o["amount_paid"]),
    "rate": lambda o: Decimal(o["rate"]),
    "currency": lambda o: o["currency"],
    "currency_paid": lambda o: o["currency_paid"],
    "created": lambda o: o["created_at"],
    "updated": lambda o: o["updated_at"],
}
TX_SORTS = {
    "id": lambda t: int(t["id"]),
    "operation": lambda t: int(t["operation_id"]),
    "amount": lambda t: Decimal(t["amount"]),
    "linked": lambda t: t["linked"],
    "reject_reason": lambda t: t["reject_reason"],
    "created_at": lambda t: t["created_at"],
    "updated_at": lambda t: t["updated_at"],
}


@pytest.mark.parametrize("sort_type", [None, "asc", "desc"])
@pytest.mark.parametrize("sort", list(OP_SORTS))
def test_operation_sorts(seeded_api, sort, sort_type):
    params = {"sort": sort} if sort_type is None else {"sort": sort, "sort_type": sort_type}
    everything = fetch_all(seeded_api, "/operations")
    got = ids(fetch_all(seeded_api, "/operations", params))
    assert got in acceptable_orders(everything, OP_SORTS[sort], sort_type == "desc"), params


@pytest.mark.parametrize("sort_type", [None, "asc", "desc"])
@pytest.mark.parametrize("sort", list(TX_SORTS))
def test_transaction_sorts(seeded_api, sort, sort_type):
    params = {"sort": sort} if sort_type is None else {"sort": sort, "sort_type": sort_type}
    everything = fetch_all(seeded_api, "/transactions")
    got = ids(fetch_all(seeded_api, "/transactions", params))
    assert got in acceptable_orders(everything, TX_SORTS[sort], sort_type == "desc"), params


def test_sort_combines_with_filters_and_pages(seeded_api):
    params = {"currency": "BTC", "sort": "amount", "sort_type": "desc"}
    everything = [o for o in fetch_all(seeded_api, "/operations") if o["currency"] == "BTC"]
    expected = acceptable_orders(everything, OP_SORTS["amount"], True)[0]
    first = list_of(seeded_api.get("/operations", {**params, "per_page": 5}))
    second = list_of(seeded_api.get("/operations", {**params, "per_page": 5, "page": 2}))
    assert ids(first["data"]) + ids(second["data"]) == expected[:10]


# Malformed parameters ----------------------------------------------------------------------------

BAD_DATES = [
    "2024-02-30",
    "2023-02-29",
    "2024-13-01",
    "20240101",
    "2024-1-1",
    "yesterday",
    "2024-01-01T00:00:00",
]
BAD_DECIMALS = ["abc", "1.2.3", "1,5", "0x10", "--1", "١٢"]


def _bad(name, values):
    return [(name, value) for value in values]


OP_BAD = [
    ("sort", "bogus"),
    ("sort", "address"),
    ("sort_type", "up"),
    ("sort_type", "DESCENDING"),
    ("id", "abc"),
    ("id", "1,x"),
    ("id", "1.5"),
    ("category", "other"),
    ("category", "Application"),
    ("status", "6"),
    ("status", "-1"),
    ("status", "new"),
    ("status", "1,9"),
    ("currency", "XYZ"),
    ("currency", "BTC,XYZ"),
    ("currency_paid", "DOGE"),
    *_bad("amount_from", BAD_DECIMALS),
    *_bad("amount_to", BAD_DECIMALS[:2]),
    *_bad("fee_from", BAD_DECIMALS[:2]),
    *_bad("fee_to", BAD_DECIMALS[:2]),
    *_bad("amount_paid_from", BAD_DECIMALS[:2]),
    *_bad("amount_paid_to", BAD_DECIMALS[:2]),
    *_bad("created_from", BAD_DATES),
    *_bad("created_to", BAD_DATES[:3]),
]
TX_BAD = [
    ("sort", "bogus"),
    ("sort", "tx_id"),
    ("sort_type", "sideways"),
    ("id", "x"),
    ("operation_id", "1,two"),
    ("status", "0"),
    ("status", "3"),
    ("status", "5"),
    ("status", "confirmed"),
    ("linked", "2"),
    ("linked", "true"),
    ("linked", "yes"),
    ("linked", "-1"),
    *_bad("amount_from", BAD_DECIMALS[:3]),
    *_bad("amount_to", BAD_DECIMALS[:3]),
    *_bad("created_from", BAD_DATES[:4]),
    *_bad("created_to", BAD_DATES[:4]),
]


@pytest.mark.parametrize(("name", "value"), OP_BAD)
def test_malformed_operation_filters_are_code_9(seeded_api, name, value):
    assert_error(seeded_api.get("/operations", {name: value}), 9, name)


@pytest.mark.parametrize(("name", "value"), TX_BAD)
def test_malformed_transaction_filters_are_code_9(seeded_api, name, value):
    assert_error(seeded_api.get("/transactions", {name: value}), 9, name)


def test_several_malformed_parameters_are_all_named(seeded_api):
    response = seeded_api.get("/operations", {"status": "9", "currency": "XYZ", "per_page": "0"})
    assert_error(response, 9, "status", "currency", "per_page")
