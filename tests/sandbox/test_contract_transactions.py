"""Contract of transactions: arrival (control surface), show, link, reject, concurrency."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest

from tests.sandbox.contract import (
    EIGHT,
    add_transaction,
    assert_error,
    ceil8,
    check_operation,
    check_transaction,
    control,
    data_of,
    fetch_all,
    q8,
)


def by_id(op: dict) -> dict[str, dict]:
    return {tx["id"]: tx for tx in op["transactions"]}


def link(api, operation_id, tx_ids):
    return api.put(f"/operations/{operation_id}/link-transactions", {"tx_id": tx_ids})


def reject(api, operation_id, tx_ids, reason="not ours"):
    return api.put(
        f"/operations/{operation_id}/reject-transactions", {"tx_id": tx_ids, "reason": reason}
    )


def test_a_transaction_arrives_through_the_control_surface(module_api, module_sandbox):
    op = module_api.create_operation(amount="1")
    response = control(
        module_sandbox,
        "POST",
        f"operations/{op['id']}/transactions",
        {"amount": "0.25", "tx_id": "f" * 64, "status": "undefined"},
    )
    tx = data_of(response, 201)
    check_transaction(tx, loose=True)
    assert tx["amount"] == "0.25000000"
    assert tx["tx_id"] == "f" * 64
    assert tx["status"] == "undefined"
    assert tx["linked"] is False
    assert tx["reject_reason"] is None

    shown = module_api.transaction(tx["id"])
    check_transaction(shown)
    assert shown["operation_id"] == op["id"]
    assert {key: shown[key] for key in tx if key != "operation_id"} == {
        key: tx[key] for key in tx if key != "operation_id"
    }

    updated = module_api.operation(op["id"])
    check_operation(updated)
    assert [embedded["id"] for embedded in updated["transactions"]] == [tx["id"]]
    assert "operation_id" not in updated["transactions"][0]
    assert updated["status"] == "new"
    assert updated["amount_paid"] is None  # an undefined transaction is not a payment


def test_control_transaction_without_tx_id_gets_a_fresh_one(module_api, module_sandbox):
    op = module_api.create_operation()
    first = add_transaction(module_sandbox, op["id"], "0.1", "undefined")
    second = add_transaction(module_sandbox, op["id"], "0.1", "undefined")
    assert first["tx_id"] and second["tx_id"] and first["tx_id"] != second["tx_id"]
    assert first["id"] != second["id"]


@pytest.mark.parametrize(
    "body",
    [
        {"amount": "0.1", "status": "rejected"},
        {"amount": "0.1", "status": "paid"},
        {"amount": "-1", "status": "confirmed"},
        {"amount": 0.1, "status": "confirmed"},
        {"status": "confirmed"},
    ],
)
def test_control_transaction_validates_its_body(module_api, module_sandbox, body):
    op = module_api.create_operation()
    assert_error(control(module_sandbox, "POST", f"operations/{op['id']}/transactions", body), 9)
    assert module_api.operation(op["id"])["transactions"] == []


def test_control_transaction_for_an_unknown_operation_is_code_5(module_sandbox):
    response = control(
        module_sandbox,
        "POST",
        "operations/999999/transactions",
        {"amount": "0.1", "status": "confirmed"},
    )
    assert_error(response, 5)


def test_confirmed_payments_add_up_until_the_amount_due(api, sandbox):
    op = api.create_operation(amount="0.5")
    add_transaction(sandbox, op["id"], "0.2", "confirmed")
    partly = api.operation(op["id"])
    assert partly["status"] == "new"
    assert partly["amount_paid"] == "0.20000000"
    assert partly["transactions"][0]["status"] == "confirmed"
    assert partly["transactions"][0]["linked"] is False

    add_transaction(sandbox, op["id"], "0.3", "confirmed")
    paid = api.operation(op["id"])
    assert paid["status"] == "confirmed"
    assert paid["amount_paid"] == "0.50000000"
    assert len(paid["transactions"]) == 2


def test_amount_due_is_amount_times_rate_rounded_up(api, sandbox):
    op = api.create_operation(amount="123.45", currency="USD", payment_currency="BTC")
    due = ceil8(Decimal(op["amount"]) * Decimal(op["rate"]))
    add_transaction(sandbox, op["id"], q8(due - EIGHT), "confirmed")
    assert api.operation(op["id"])["status"] == "new"
    add_transaction(sandbox, op["id"], q8(EIGHT), "confirmed")
    paid = api.operation(op["id"])
    assert paid["status"] == "confirmed"
    assert paid["amount_paid"] == q8(due)


def test_link_confirms_transactions_and_the_operation(api, sandbox):
    op = api.create_operation(amount="1")
    paid = add_transaction(sandbox, op["id"], "0.1", "confirmed")
    first = add_transaction(sandbox, op["id"], "0.2", "undefined")
    second = add_transaction(sandbox, op["id"], "0.05", "undefined")
    waiting = add_transaction(sandbox, op["id"], "0.4", "undefined")

    response = link(api, op["id"], [first["id"], second["id"]])
    result = data_of(response, 200)
    check_operation(result)
    assert result["id"] == op["id"]
    assert result["status"] == "confirmed"  # whatever the sum, as documented
    assert result["amount_paid"] == "0.25000000"  # the linked ones, as documented
    txs = by_id(result)
    for tx_id in (first["id"], second["id"]):
        assert txs[tx_id]["linked"] is True
        assert txs[tx_id]["status"] == "confirmed"
        assert txs[tx_id]["reject_reason"] is None
        assert txs[tx_id]["updated_at"] >= txs[tx_id]["created_at"]
    assert txs[paid["id"]]["linked"] is False and txs[paid["id"]]["status"] == "confirmed"
    assert txs[waiting["id"]]["status"] == "undefined" and txs[waiting["id"]]["linked"] is False

    assert api.operation(op["id"]) == result
    shown = api.transaction(first["id"])
    assert shown["linked"] is True and shown["status"] == "confirmed"


def test_reject_marks_transactions_and_keeps_the_operation_status(api, sandbox):
    op = api.create_operation(amount="1")
    tx = add_transaction(sandbox, op["id"], "0.3", "undefined")
    result = data_of(reject(api, op["id"], [tx["id"]], "sent by mistake"), 200)
    check_operation(result)
    assert result["status"] == "new"
    assert result["amount_paid"] == "0.00000000"
    rejected = by_id(result)[tx["id"]]
    assert rejected["status"] == "rejected"
    assert rejected["linked"] is False
    assert rejected["reject_reason"] == "sent by mistake"
    shown = api.transaction(tx["id"])
    assert shown["status"] == "rejected" and shown["reject_reason"] == "sent by mistake"


def test_reject_recomputes_amount_paid_and_link_undoes_a_reject(api, sandbox):
    op = api.create_operation(amount="1")
    first = add_transaction(sandbox, op["id"], "0.3", "undefined")
    second = add_transaction(sandbox, op["id"], "0.2", "undefined")
    linked = data_of(link(api, op["id"], [first["id"], second["id"]]))
    assert linked["status"] == "confirmed" and linked["amount_paid"] == "0.50000000"

    after_reject = data_of(reject(api, op["id"], [first["id"]], "duplicate"))
    assert after_reject["status"] == "confirmed"  # the operation keeps its status
    assert after_reject["amount_paid"] == "0.20000000"
    undone = by_id(after_reject)[first["id"]]
    assert undone["status"] == "rejected" and undone["linked"] is False
    assert undone["reject_reason"] == "duplicate"

    relinked = data_of(link(api, op["id"], [first["id"]]))
    again = by_id(relinked)[first["id"]]
    assert again["status"] == "confirmed" and again["linked"] is True
    assert again["reject_reason"] is None
    assert relinked["amount_paid"] == "0.50000000"


def test_rejecting_the_only_payment_of_a_paid_operation_makes_it_new_again(api, sandbox):
    op = api.create_operation(amount="0.5")
    tx = add_transaction(sandbox, op["id"], "0.5", "confirmed")
    assert api.operation(op["id"])["status"] == "confirmed"
    result = data_of(reject(api, op["id"], [tx["id"]]))
    assert result["status"] == "new"
    assert result["amount_paid"] == "0.00000000"
    assert api.operation(op["id"]) == result


def test_rejecting_every_linked_transaction_makes_the_operation_new_with_nothing_paid(api, sandbox):
    """A mistake once made: link, then reject the same transactions. As documented, after a
    reject the operation is `new` with `amount_paid` zero, not `confirmed` with nothing paid."""
    op = api.create_operation(amount="1")
    first = add_transaction(sandbox, op["id"], "0.3", "undefined")
    second = add_transaction(sandbox, op["id"], "0.2", "undefined")
    linked = data_of(link(api, op["id"], [first["id"], second["id"]]))
    assert linked["status"] == "confirmed" and linked["amount_paid"] == "0.50000000"

    result = data_of(reject(api, op["id"], [first["id"], second["id"]], "sent twice"))
    assert result["status"] == "new"
    assert result["amount_paid"] == "0.00000000"
    assert {tx["status"] for tx in result["transactions"]} == {"rejected"}
    add_transaction(sandbox, op["id"], "1", "confirmed")
    assert api.operation(op["id"])["status"] == "confirmed"  # it can be paid again


def test_after_a_link_amount_paid_counts_only_the_linked_transactions(api, sandbox):
    op = api.create_operation(amount="1")
    add_transaction(sandbox, op["id"], "0.4", "confirmed")
    assert api.operation(op["id"])["amount_paid"] == "0.40000000"
    stray = add_transaction(sandbox, op["id"], "0.1", "undefined")
    result = data_of(link(api, op["id"], [stray["id"]]))
    assert result["status"] == "confirmed"
    assert result["amount_paid"] == "0.10000000"


def test_link_accepts_the_blockchain_hash(api, sandbox):
    op = api.create_operation()
    tx = add_transaction(sandbox, op["id"], "0.1", "undefined", tx_id="ab" * 32)
    result = data_of(link(api, op["id"], ["ab" * 32]))
    assert by_id(result)[tx["id"]]["linked"] is True
    other = add_transaction(sandbox, op["id"], "0.1", "undefined", tx_id="cd" * 32)
    result = data_of(reject(api, op["id"], ["cd" * 32], "hash"))
    assert by_id(result)[other["id"]]["status"] == "rejected"


def test_link_confirms_an_operation_from_any_state(api, sandbox):
    expired = api.create_operation()
    late = add_transaction(sandbox, expired["id"], "0.5", "undefined")
    data_of(control(sandbox, "POST", f"operations/{expired['id']}/expire"))
    result = data_of(link(api, expired["id"], [late["id"]]))
    assert result["status"] == "confirmed"
    assert result["amount_paid"] == "0.50000000"

    canceled = api.create_operation()
    stray = add_transaction(sandbox, canceled["id"], "0.1", "undefined")
    assert api.put(f"/operations/{canceled['id']}/cancel").status_code == 204
    result = data_of(link(api, canceled["id"], [stray["id"]]))
    assert result["status"] == "confirmed"


def test_transaction_of_another_operation_is_code_6_and_nothing_changes(api, sandbox):
    op = api.create_operation()
    other = api.create_operation(order_id="other")
    mine = add_transaction(sandbox, op["id"], "0.1", "undefined")
    theirs = add_transaction(sandbox, other["id"], "0.1", "undefined")
    before = api.operation(op["id"])

    assert_error(link(api, op["id"], [mine["id"], theirs["id"]]), 6)
    assert_error(reject(api, op["id"], [mine["id"], theirs["id"]]), 6)
    assert_error(link(api, op["id"], [mine["id"], "999999"]), 6)
    assert_error(reject(api, op["id"], ["no-such-hash"]), 6)

    assert api.operation(op["id"]) == before
    assert api.transaction(theirs["id"])["status"] == "undefined"
    assert api.operation(other["id"])["status"] == "new"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "tx_id"),
        ({"tx_id": []}, "tx_id"),
        ({"tx_id": "1"}, "tx_id"),
        ({"tx_id": None}, "tx_id"),
        ({"tx_id": [1]}, "tx_id"),
        ({"tx_id": [["1"]]}, "tx_id"),
        ({"tx_id": {"id": "1"}}, "tx_id"),
        ({"tx_id": ["1"] * 101}, "tx_id"),
    ],
)
def test_link_validates_tx_id(module_api, module_sandbox, body, field):
    op = module_api.create_operation()
    tx = add_transaction(module_sandbox, op["id"], "0.1", "undefined")
    if body.get("tx_id") == ["1"] * 101:
        body = {"tx_id": [tx["id"]] * 101}
    before = module_api.operation(op["id"])
    assert_error(module_api.put(f"/operations/{op['id']}/link-transactions", body), 9, field)
    assert_error(
        module_api.put(f"/operations/{op['id']}/reject-transactions", {**body, "reason": "r"}),
        9,
        field,
    )
    assert module_api.operation(op["id"]) == before


@pytest.mark.parametrize("reason", [None, "", "r" * 256, "r" * 10_000, 42, ["r"]])
def test_reject_validates_reason(module_api, module_sandbox, reason):
    op = module_api.create_operation()
    tx = add_transaction(module_sandbox, op["id"], "0.1", "undefined")
    body = {"tx_id": [tx["id"]]} if reason is None else {"tx_id": [tx["id"]], "reason": reason}
    before = module_api.operation(op["id"])
    assert_error(module_api.put(f"/operations/{op['id']}/reject-transactions", body), 9, "reason")
    assert module_api.operation(op["id"]) == before


def test_reject_reason_limits_and_unicode(module_api, module_sandbox):
    op = module_api.create_operation()
    first = add_transaction(module_sandbox, op["id"], "0.1", "undefined")
    second = add_transaction(module_sandbox, op["id"], "0.1", "undefined")
    result = data_of(reject(module_api, op["id"], [first["id"]], "r" * 255))
    assert by_id(result)[first["id"]]["reject_reason"] == "r" * 255
    result = data_of(reject(module_api, op["id"], [second["id"]], "Überweisung doppelt 🚫"))
    assert by_id(result)[second["id"]]["reject_reason"] == "Überweisung doppelt 🚫"


@pytest.mark.parametrize(
    "transaction_id", ["999999", "abc", "-1", "1.5", "99999999999999999999999999"]
)
def test_unknown_transaction_is_code_6(module_api, transaction_id):
    assert_error(module_api.get(f"/transactions/{transaction_id}"), 6)


def test_transactions_list_holds_every_arrived_transaction(api, sandbox):
    op = api.create_operation()
    other = api.create_operation(order_id="other")
    created = [
        add_transaction(sandbox, op["id"], "0.1", "undefined"),
        add_transaction(sandbox, other["id"], "0.2", "confirmed"),
    ]
    listed = fetch_all(api, "/transactions")
    assert sorted(tx["id"] for tx in listed) == sorted(tx["id"] for tx in created)
    for tx in listed:
        check_transaction(tx)
    owners = {tx["id"]: tx["operation_id"] for tx in listed}
    assert owners == {created[0]["id"]: op["id"], created[1]["id"]: other["id"]}


def _run_together(calls):
    """Run the calls in threads released at the same moment; return their responses."""
    barrier = threading.Barrier(len(calls))
    responses = [None] * len(calls)

    def run(index, call):
        barrier.wait()
        responses[index] = call()

    threads = [threading.Thread(target=run, args=(n, call)) for n, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return responses


def test_concurrent_links_on_one_operation_lose_no_update(api, sandbox):
    op = api.create_operation(amount="100")
    txs = [add_transaction(sandbox, op["id"], f"0.{n + 1}", "undefined") for n in range(8)]
    responses = _run_together([lambda tx=tx: link(api, op["id"], [tx["id"]]) for tx in txs])
    for response in responses:
        data_of(response, 200)
    final = api.operation(op["id"])
    assert all(tx["linked"] and tx["status"] == "confirmed" for tx in final["transactions"])
    assert len(final["transactions"]) == 8
    assert Decimal(final["amount_paid"]) == sum(Decimal(tx["amount"]) for tx in txs)
    assert final["status"] == "confirmed"


def test_concurrent_links_and_rejects_lose_no_update(api, sandbox):
    op = api.create_operation(amount="100")
    txs = [add_transaction(sandbox, op["id"], f"1.{n}", "undefined") for n in range(8)]
    to_link, to_reject = txs[:4], txs[4:]
    calls = [lambda tx=tx: link(api, op["id"], [tx["id"]]) for tx in to_link]
    calls += [lambda tx=tx: reject(api, op["id"], [tx["id"]], f"r{tx['id']}") for tx in to_reject]
    for response in _run_together(calls):
        data_of(response, 200)
    final = by_id(api.operation(op["id"]))
    for tx in to_link:
        assert final[tx["id"]]["linked"] is True and final[tx["id"]]["status"] == "confirmed"
    for tx in to_reject:
        assert final[tx["id"]]["status"] == "rejected"
        assert final[tx["id"]]["reject_reason"] == f"r{tx['id']}"
    paid = api.operation(op["id"])["amount_paid"]
    assert Decimal(paid) == sum(Decimal(tx["amount"]) for tx in to_link)


def test_transaction_filters_on_known_data(api, sandbox):
    """status, linked, reject_reason, tx_id and operation_id on a small known set."""
    op = api.create_operation(amount="5")
    other = api.create_operation(order_id="other")
    paid = add_transaction(sandbox, op["id"], "0.1", "confirmed", tx_id="a1" * 32)
    waiting = add_transaction(sandbox, op["id"], "0.2", "undefined")
    linked = add_transaction(sandbox, op["id"], "0.3", "undefined")
    dup = add_transaction(sandbox, op["id"], "0.4", "undefined")
    late = add_transaction(sandbox, other["id"], "0.5", "undefined")
    data_of(link(api, op["id"], [linked["id"]]))
    data_of(reject(api, op["id"], [dup["id"]], "duplicate"))
    data_of(reject(api, other["id"], [late["id"]], "late"))

    def listed(params):
        return sorted(tx["id"] for tx in fetch_all(api, "/transactions", params))

    assert listed({"linked": "1"}) == [linked["id"]]
    assert listed({"linked": "0"}) == sorted([paid["id"], waiting["id"], dup["id"], late["id"]])
    assert listed({"status": "1"}) == sorted([paid["id"], linked["id"]])
    assert listed({"status": "2"}) == [waiting["id"]]
    assert listed({"status": "4"}) == sorted([dup["id"], late["id"]])
    assert listed({"reject_reason": "duplicate"}) == [dup["id"]]
    assert listed({"reject_reason": "dup"}) == []  # exact match
    assert listed({"tx_id": "a1" * 32}) == [paid["id"]]
    assert listed({"tx_id": "a1"}) == []
    assert listed({"operation_id": other["id"]}) == [late["id"]]
    assert listed({"operation_id": f"{op['id']}, {other['id']}", "status": "4"}) == sorted(
        [dup["id"], late["id"]]
    )
    by_linked = fetch_all(api, "/transactions", {"sort": "linked", "sort_type": "desc"})
    assert by_linked[0]["id"] == linked["id"]
    by_amount = fetch_all(api, "/transactions", {"sort": "amount"})
    assert [tx["amount"] for tx in by_amount] == sorted(
        (tx["amount"] for tx in by_amount), key=Decimal
    )
