"""What an event says to a person, in a mail: a headline per type, the record's order number,
amount with its currency and state, and a link to the record on the portal.

An event that announces an operation's state is headed with the state's words, as the badge
and the timeline say them (`portal.payments.rules.state_words`)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

import sqlalchemy as sa

from portal.extensions import db
from portal.live.models import Event
from portal.live.rules.events import EventType
from portal.payments.models import MirroredOperation
from portal.payments.rules.state_words import (
    TRANSACTION_EVENT_WORDS,
    event_state_words,
    state_words,
)

# The headlines of the events that announce no state and are not a transaction's.
OTHER_HEADLINES = {
    EventType.OPERATION_CREATED: "Operation created",
    EventType.OPERATION_STATUS_CHANGED: "Operation status changed",
}


def _headline_of(type_: EventType) -> str:
    if type_ in TRANSACTION_EVENT_WORDS:
        return f"Transaction {TRANSACTION_EVENT_WORDS[type_]}"
    return event_state_words(type_) or OTHER_HEADLINES[type_]


# Keyed by type name (an EventType is its name, a StrEnum), in the order of EventType.
HEADLINES: dict[str, str] = {type_: _headline_of(type_) for type_ in EventType}
SUBJECT_LENGTH = 200


def headline(type_name: str) -> str:
    """The type in words; an unknown type (a newer portal's) as its name."""
    return HEADLINES.get(type_name, type_name)


def describe(event: Event, link: Callable[[str], str]) -> tuple[str, str]:
    """The subject and text of the mail about `event`; `link` makes a portal path absolute."""
    data = event.data or {}
    words = headline(event.type)
    if event.type.startswith("operation."):
        order, currency = data.get("order_id"), data.get("currency") or ""
        lines = [
            ("Order number", order),
            ("Operation", data.get("id") or event.operation_id),
            ("Amount", _money(data.get("amount"), currency)),
            ("Paid", _money(data.get("amount_paid"), data.get("currency_paid") or currency)),
            ("Status", event_state_words(event.type) or _status_words(data.get("status"))),
        ]
        path = "/operations/" + quote(str(data.get("id") or event.operation_id), safe="")
    else:
        operation = _operation(event)
        order = operation.order_id if operation else None
        currency = (operation.currency_paid or operation.currency) if operation else ""
        lines = [
            ("Order number", order),
            ("Operation", data.get("operation_id") or event.operation_id),
            ("Transaction", data.get("id") or event.transaction_id),
            ("Amount", _money(data.get("amount"), currency)),
            ("Hash", data.get("tx_id")),
            ("Status", data.get("status")),
        ]
        path = "/transactions/" + quote(str(data.get("id") or event.transaction_id), safe="")
    amount = next((value for name, value in lines if name == "Amount" and value), None)
    subject = " — ".join(
        part for part in (words, f"order {order}" if order else None, amount) if part
    )
    when = event.occurred_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    body = "\n".join(
        [
            words,
            "",
            *(f"{name}: {value}" for name, value in lines if value),
            f"When: {when}",
            "",
            f"Open it on the portal: {link(path)}",
            "",
            f'You get this mail because "{words}" is ticked under "E-mail me about" on your',
            f"account page: {link('/account')}",
        ]
    )
    return _one_line(subject), body + "\n"


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
    """An amount as the API wrote it (a decimal string, exact), with its currency."""
    return f"{amount} {currency}".strip() if amount not in (None, "") else None


def _one_line(text: str) -> str:
    """A subject on one line (an order number with a line break must not add a header)."""
    return " ".join(text.split())[:SUBJECT_LENGTH]
