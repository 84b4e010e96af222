"""What an event says to a person, in a mail: a headline per type, the record's order number,
an operation's state with what was due against what was received (`portal` of the event), a
transaction's amount, and a link to the record on the portal. Each line of the record's
values is one line of the mail, whatever line breaks the API's values hold.

An operation's mail names in its subject the operation's state at that event (`portal.state`)
in the words of its badge (`portal.payments.rules.state_words`); its first line is the event's
headline, the name of its box under "E-mail me about"."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import sqlalchemy as sa

from portal.extensions import db
from portal.live.models import Event
from portal.live.rules import events
from portal.live.rules.events import EventType
from portal.money.rules.currencies import money
from portal.payments.models import MirroredOperation
from portal.payments.rules.operation_money import WITHDRAWAL_CATEGORIES
from portal.payments.rules.state_words import (
    TRANSACTION_EVENT_WORDS,
    event_state_words,
    state_words,
)
from portal.payments.rules.timeline import record_amount

# The headlines of the events that announce no state and are not a transaction's. A confirmation
# announces none: the payment service confirms an underpaid or overpaid operation too (the mail
# says its state, `portal.state`).
OTHER_HEADLINES = {
    EventType.OPERATION_CREATED: "Operation created",
    EventType.OPERATION_CONFIRMED: "Operation confirmed",
    EventType.OPERATION_STATUS_CHANGED: "Operation status changed",
    EventType.REFUND_REQUESTED: "Refund requested",
    EventType.REFUND_CLAIMED: "Refund claimed by the customer",
    EventType.REFUND_SENT: "Refund sent",
    EventType.REFUND_REFUSED: "Refund refused by the payment service",
    EventType.REFUND_UNKNOWN: "Refund outcome unknown",
    EventType.REFUND_CANCELED: "Refund canceled",
    EventType.REFUND_EXPIRED: "Refund link expired",
}


def _headline_of(type_: EventType) -> str:
    if type_ in TRANSACTION_EVENT_WORDS:
        return f"Transaction {TRANSACTION_EVENT_WORDS[type_]}"
    return OTHER_HEADLINES.get(type_) or event_state_words(type_) or type_.value


# Keyed by type name (an EventType is its name, a StrEnum), in the order of EventType.
HEADLINES: dict[str, str] = {type_: _headline_of(type_) for type_ in EventType}
SUBJECT_LENGTH = 200


def headline(type_name: str) -> str:
    """The type in words; an unknown type (a newer portal's) as its name."""
    return HEADLINES.get(type_name, type_name)


def describe(event: Event, link: Callable[[str], str]) -> tuple[str, str]:
    """The subject and text of the mail about `event`; `link` makes a portal path absolute.

    An operation's mail is headed with its state at that event (`portal.state`, as its badge
    says it) and says what arrived against what was due; amounts read as on the pages."""
    words = headline(event.type)
    if event.type.startswith("operation."):
        record, figures = events.split_money(event.data)
        data = record if isinstance(record, dict) else {}
        state, lines, summary = _operation_lines(event, data, figures)
        order = data.get("order_id")
        path = "/operations/" + quote(str(data.get("id") or event.operation_id), safe="")
    else:
        data = event.data or {}
        operation = _operation(event)
        order = operation.order_id if operation else None
        currency = (operation.currency_paid or operation.currency) if operation else ""
        state, summary = words, _money(data.get("amount"), currency)
        lines = [
            ("Order number", order),
            ("Operation", data.get("operation_id") or event.operation_id),
            ("Transaction", data.get("id") or event.transaction_id),
            ("Amount", summary),
            ("Hash", data.get("tx_id")),
            ("Status", data.get("status")),
        ]
        path = "/transactions/" + quote(str(data.get("id") or event.transaction_id), safe="")
    subject = " — ".join(
        part for part in (state, f"order {order}" if order else None, summary) if part
    )
    when = event.occurred_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    body = "\n".join(
        [
            words,
            "",
            *(f"{name}: {flat}" for name, value in lines if value and (flat := one_line(value))),
            f"When: {when}",
            "",
            f"Open it on the portal: {link(path)}",
            "",
            f'You get this mail because "{words}" is ticked under "E-mail me about" on your',
            f"account page: {link('/account')}",
        ]
    )
    return _subject(subject), body + "\n"


def _operation_lines(
    event: Event, data: dict[str, Any], figures: dict[str, Any]
) -> tuple[str | None, list[tuple[str, str | None]], str | None]:
    """An operation's state in words, its lines (Due, Received, Difference, ...) and the
    subject's summary of them: "received 0.09 BTC of 0.36 BTC". An event written before
    events carried the portal's figures (`events.split_money`) reads the record alone."""
    issued = data.get("currency") or ""
    paid_in = data.get("currency_paid") or issued
    state = (
        state_words(figures["state"])
        if figures["state"]
        else event_state_words(event.type) or _status_words(data.get("status"))
    )
    if data.get("category") in WITHDRAWAL_CATEGORIES:  # money sent: nothing was due
        amount = _money(data.get("amount"), issued)
        return (
            state,
            [
                ("Operation", data.get("id") or event.operation_id),
                ("State", state),
                ("Amount", amount),
            ],
            amount,
        )
    due = record_amount(figures["due"])
    received = record_amount(figures["received"] or data.get("amount_paid"))
    awaiting = record_amount(figures["awaiting"])
    difference = record_amount(figures["difference"])
    lines = [
        ("Order number", data.get("order_id")),
        ("Operation", data.get("id") or event.operation_id),
        ("State", state),
        # The order's amount, when it was issued in another currency than it is paid in.
        ("Amount", _money(data.get("amount"), issued) if issued != paid_in else None),
        ("Due", _money(due, paid_in)),
        ("Received", _money(received, paid_in)),
        ("Difference", _signed(difference, paid_in)),
        ("Awaiting a decision", _money(awaiting, paid_in) if awaiting else None),
    ]
    summary = None
    if received is not None:
        summary = f"received {money(received, paid_in)}"
        if due is not None:
            summary += f" of {money(due, paid_in)}"
    return state, lines, summary


def _operation(event: Event) -> MirroredOperation | None:
    """The mirrored operation of a transaction's event: its order number and currency (a
    transaction's record has neither)."""
    operation_id = event.operation_id or (event.data or {}).get("operation_id")
    if not operation_id:
        return None
    return db.session.scalar(
        sa.select(MirroredOperation).where(
            MirroredOperation.merchant_id == event.merchant_id,
            MirroredOperation.operation_id == operation_id,
        )
    )


def _status_words(status: str | None) -> str | None:
    """The record's status in the words of its badge; None for a record without one."""
    return state_words(status) if status else None


def _money(amount: object, currency: str) -> str | None:
    """An amount (a decimal string of the API's, or a Decimal) with its currency, as the pages
    write it; None when there is none."""
    value = record_amount(amount)
    return money(value, currency or None) if value is not None else None


def _signed(amount: Decimal | None, currency: str) -> str | None:
    """A difference with its sign: `+0.1 BTC` more than due, `-0.3 BTC` less."""
    if amount is None:
        return None
    return ("+" if amount > 0 else "") + money(amount, currency or None)


def one_line(value: object) -> str:
    """A value of the API's (an order number, a hash, a status, a currency) on one line: a line
    break in it would forge lines of a mail from the portal's own sender, or its headers."""
    return " ".join(str(value).split())


def _subject(text: str) -> str:
    """A subject of at most `SUBJECT_LENGTH` characters, counted once on one line."""
    return one_line(text)[:SUBJECT_LENGTH]
