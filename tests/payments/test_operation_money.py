"""The money model of one operation (design §5a): each state, each figure, first match wins."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from portal.api import Operation, Transaction
from portal.payments.rules.operation_money import State, operation_money

WHEN = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def tx(amount: str, status: str = "confirmed", *, linked: bool = False) -> Transaction:
    return Transaction(
        id=f"t{amount}{status}{linked}",
        tx_id="0xabc",
        amount=Decimal(amount),
        status=status,
        linked=linked,
        created_at=WHEN,
        updated_at=WHEN,
    )


def operation(
    status: str = "new",
    paid: str | None = None,
    *transactions: Transaction,
    amount: str = "20",
    currency: str = "USDT",
    rate: str = "1",
    category: str = "application",
) -> Operation:
    return Operation(
        id="1",
        category=category,
        amount=Decimal(amount),
        fee=Decimal("0.2"),
        rate=Decimal(rate),
        currency=currency,
        currency_paid="USDT",
        status=status,
        address="T" * 34,
        created_at=WHEN,
        updated_at=WHEN,
        amount_paid=None if paid is None else Decimal(paid),
        transactions=transactions,
    )


@pytest.mark.parametrize(
    ("record", "state"),
    [
        (operation("new"), State.AWAITING_PAYMENT),
        (operation("new", None, tx("25", "undefined")), State.AWAITING_DECISION),
        (operation("new", "5", tx("5")), State.PARTLY_PAID),
        (operation("new", "20", tx("20")), State.PAID_UNCONFIRMED),
        (operation("new", "30", tx("30")), State.OVERPAID),
        (operation("confirmed", "20", tx("20")), State.PAID),
        (operation("confirmed", "30", tx("30")), State.OVERPAID),
        (operation("confirmed", "5", tx("5", linked=True)), State.UNDERPAID),
        (operation("expired"), State.EXPIRED),
        (operation("canceled"), State.CANCELED),
        (operation("failed"), State.FAILED),
        (operation("expired", "0", tx("20")), State.PAID_LATE),
        (operation("canceled", None, tx("3", "undefined")), State.PAID_LATE),
        (operation("expired", "5", tx("5")), State.PAID_LATE),
        (operation("processed", category="transfer"), State.SENT),
        (operation("processed"), None),  # a status this portal does not know for a payment
    ],
)
def test_each_operation_has_one_state(record, state):
    assert operation_money(record).state == state


def test_due_received_and_difference_in_the_payment_currency():
    money = operation("confirmed", "0.09060000", currency="USD", amount="30000", rate="0.0000121")
    money = operation_money(money)
    assert money.due == Decimal("0.363")  # 30000 x 0.0000121, in USDT (the payment currency)
    assert money.received == Decimal("0.0906")
    assert money.difference == Decimal("-0.2724")
    assert money.shortfall == Decimal("0.2724") and money.surplus == 0
    assert money.state is State.UNDERPAID


def test_the_due_at_a_rate_is_rounded_up_and_the_fee_down():
    money = operation_money(
        operation("confirmed", "1", currency="USD", amount="1", rate="0.333333333")
    )
    assert money.due == Decimal("0.33333334")
    assert money.fee == Decimal("0.06666666")  # 0.2 x 0.333333333, down
    assert money.net == Decimal("1") - Decimal("0.06666666")


def test_without_a_rate_neither_the_due_nor_the_difference_is_known():
    money = operation_money(operation("new", "5", tx("5"), currency="USD", rate="0"))
    assert money.due is None and money.difference is None
    assert money.state is State.PARTLY_PAID  # money arrived; whether it is all is unknown


def test_awaiting_a_decision_counts_undecided_money_only():
    money = operation_money(
        operation("new", "5", tx("5"), tx("7", "undefined"), tx("9", "rejected"))
    )
    assert (money.received, money.awaiting) == (Decimal(5), Decimal(7))


def test_a_link_leaves_other_confirmed_money_not_counted():
    money = operation_money(operation("confirmed", "20", tx("20", linked=True), tx("4")))
    assert money.not_counted == Decimal(4)
    assert money.state is State.PAID


def test_confirmed_money_reaching_an_ended_operation_awaits_a_decision():
    money = operation_money(operation("expired", "5", tx("5"), tx("15")))
    assert (money.received, money.awaiting) == (Decimal(5), Decimal(15))


def test_a_link_after_the_operation_ended_is_late_not_paid():
    linked_late = operation("confirmed", "20", tx("20", linked=True))
    assert operation_money(linked_late).state is State.PAID
    assert operation_money(linked_late, ended_before=True).state is State.PAID_LATE


@pytest.mark.parametrize(
    ("paid", "tolerance", "state"),
    [
        ("19.9", "0", State.UNDERPAID),
        ("19.9", "0.5", State.PAID),  # 0.1 short of 20 is within 0.5 %
        ("19.8", "0.5", State.UNDERPAID),
        ("20.1", "0.5", State.PAID),
        ("20.2", "0.5", State.OVERPAID),
    ],
)
def test_the_tolerance_treats_a_smaller_difference_as_none(paid, tolerance, state):
    money = operation_money(operation("confirmed", paid, tx(paid, linked=True)), Decimal(tolerance))
    assert money.state is state
    assert (money.difference == 0) is (state is State.PAID)
