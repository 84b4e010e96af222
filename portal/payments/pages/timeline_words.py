"""The words of an operation's timeline: one plain sentence per event
(`portal.payments.rules.timeline`).

Sentences are plain text, escaped by the template like everything else from the API (a
transaction id or a reject reason may hold anything).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from portal.live.rules.event_words import headline
from portal.live.rules.events import EventType
from portal.payments.rules.state_words import (
    TRANSACTION_EVENT_WORDS,
    event_state_words,
    state_words,
)
from portal.payments.rules.timeline import Entry, Timeline
from portal.web.formatting import money

# What a timeline line adds to a transaction's words, for a reader of the operation's page.
TRANSACTION_DETAILS = {
    EventType.TRANSACTION_NEEDS_REVIEW: ": link or reject it",
    EventType.TRANSACTION_LINKED: " to the operation",
    EventType.TRANSACTION_CONFIRMED: " on the blockchain",
}


@dataclass(frozen=True)
class Line:
    at: datetime
    type: str
    text: str


def lines(timeline: Timeline) -> list[Line]:
    return [Line(entry.at, entry.type, sentence(entry)) for entry in timeline.entries]


def sentence(entry: Entry) -> str:
    """What happened, with the amount where the event has one; an event that announces a
    state begins with the state's words, as its badge and its mail say them."""
    amount = money(entry.amount, entry.currency) if entry.amount is not None else None
    due = money(entry.due, entry.currency) if entry.due is not None else None
    if entry.type in TRANSACTION_EVENT_WORDS:
        type_ = EventType(entry.type)
        told = f"Transaction {entry.transaction_id or ''}".rstrip()
        told += f" of {amount}" if amount else ""
        told += f" {TRANSACTION_EVENT_WORDS[type_]}{TRANSACTION_DETAILS.get(type_, '')}"
        if type_ == EventType.TRANSACTION_REJECTED and entry.reason:
            told += f": “{entry.reason}”"
        return told + "."
    announced = event_state_words(entry.type)
    if announced is not None:
        # The operation's state at the event, when the mirror wrote it: a confirmation of an
        # underpayment reads "Underpaid, confirmed", never "Paid".
        state = state_words(entry.state) if entry.state else announced
        if entry.type == EventType.OPERATION_CONFIRMED and state != announced:
            state += ", confirmed"
        return f"{state}{_payment(entry, amount, due)}."
    if entry.type.startswith("refund."):  # a refund's headline, with its amount
        return f"{headline(entry.type)}: {amount}." if amount else f"{headline(entry.type)}."
    match entry.type:
        case EventType.OPERATION_CREATED:
            return f"Operation created for {amount}." if amount else "Operation created."
        case EventType.OPERATION_STATUS_CHANGED:
            return f"Status changed to {state_words(None, entry.status)}."
    return f"{entry.type}."


def _payment(entry: Entry, amount: str | None, due: str | None) -> str:
    """What was paid, after the state's words: nothing when the record lacks `amount_paid`,
    nor for an operation that ended with nothing paid."""
    if not amount:
        return ""
    match entry.type:
        case EventType.OPERATION_PARTLY_PAID:
            return f": {amount} of {due} due" if due else f": {amount}"
        case EventType.OPERATION_OVERPAID | EventType.OPERATION_UNDERPAID:
            return f": {amount} received, {due} due" if due else f": {amount}"
        case EventType.OPERATION_PAID_LATE:
            return f": {amount} received after the operation ended"
        case EventType.OPERATION_PAID:
            return f": {amount}"
        case EventType.OPERATION_CONFIRMED:
            return f": {amount} paid"
    return f", after {amount} had arrived" if entry.amount else ""
